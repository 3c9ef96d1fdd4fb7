/* finding.c - the run-time findings: their constructors and their reports. */
#include "engine/finding.h"

#include "engine/handle.h"
#include "out.h"
#include "runtime_report.h"

#include <string.h>

typedef unsigned long long ull; /* out.h formats %llu / %llx */

/* ---- constructors ---- */

struct use_after_release *finding_use_after_release(struct finding *f, struct finding_tensor root,
                                                    const char *arena, uint32_t release_stack,
                                                    enum finding_moment moment,
                                                    struct finding_call op)
{
    f->variant = FINDING_USE_AFTER_RELEASE;
    struct use_after_release *v = &f->use_after_release;
    *v = (struct use_after_release){
        .root = root, .arena = arena, .release_stack = release_stack, .moment = moment, .op = op};
    return v;
}

struct live_corruption *finding_live_corruption(struct finding *f, enum corruption_cause cause,
                                                struct finding_tensor victim, const char *arena,
                                                enum finding_moment moment, struct finding_call by)
{
    f->variant = FINDING_LIVE_CORRUPTION;
    struct live_corruption *v = &f->live_corruption;
    memset(v, 0, sizeof *v);
    v->cause = cause;
    v->victim = victim;
    v->arena = arena;
    v->moment = moment;
    v->by = by;
    v->graph.last_write.node = -1;
    return v;
}

struct stale_write *finding_stale_write(struct finding *f, struct finding_tensor new_tenant,
                                        const char *arena, const struct finding_bytes *bytes)
{
    f->variant = FINDING_STALE_WRITE;
    struct stale_write *v = &f->stale_write;
    memset(v, 0, sizeof *v);
    v->new_tenant = new_tenant;
    v->arena = arena;
    v->bytes = *bytes;
    return v;
}

struct slot_overflow *finding_slot_overflow(struct finding *f, struct finding_tensor tensor,
                                            const char *arena, struct finding_call writer,
                                            const struct finding_bytes *bytes)
{
    f->variant = FINDING_SLOT_OVERFLOW;
    struct slot_overflow *v = &f->slot_overflow;
    *v = (struct slot_overflow){.tensor = tensor, .arena = arena, .writer = writer};
    v->bytes = *bytes;
    return v;
}

struct read_before_write *finding_read_before_write(struct finding *f, struct finding_tensor root,
                                                    const char *arena, struct finding_call op)
{
    f->variant = FINDING_READ_BEFORE_WRITE;
    struct read_before_write *v = &f->read_before_write;
    *v = (struct read_before_write){
        .root = root, .arena = arena, .lo = root.lo, .hi = root.hi, .op = op};
    return v;
}

struct unordered_reuse *finding_unordered_reuse(struct finding *f, struct finding_tensor old_tenant,
                                                struct finding_tensor new_tenant, const char *arena,
                                                enum finding_moment moment, struct finding_call op,
                                                int stream)
{
    f->variant = FINDING_UNORDERED_REUSE;
    struct unordered_reuse *v = &f->unordered_reuse;
    *v = (struct unordered_reuse){.old_tenant = old_tenant,
                                  .new_tenant = new_tenant,
                                  .arena = arena,
                                  .moment = moment,
                                  .op = op,
                                  .stream = stream};
    return v;
}

/* ---- reports ---- */

static const char *moment_verb(enum finding_moment moment)
{
    switch (moment) {
    case MOMENT_READ:
        return "reads";
    case MOMENT_WRITE:
        return "writes";
    case MOMENT_RELEASE:
        return "released";
    case MOMENT_OP_END:
        return "ended";
    default:
        return "arena destroyed";
    }
}

static void hex(char *buf, size_t cap, const unsigned char *b, size_t n)
{
    struct outbuf o = {buf, 0, cap - 1};
    for (size_t i = 0; i < n; i++)
        out_appendf(&o, "%s%02x", i ? " " : "", b[i]);
    buf[o.len] = 0;
}

/* "'OP'" for a stack title, with the op's source location when it was declared with one:
 * "'OP' (FILE:LINE in FUNC)". */
static void append_op(struct outbuf *b, const char *op)
{
    char where[256];
    out_appendf(b, "'%s'", op);
    if (engine_op_location(op, where, sizeof where))
        out_appendf(b, " (%s)", where);
}

/* "'NAME' (bytes [LO, HI)) WHAT at:" and its stack; names the tensor in the trace. */
static void report_tensor_at(struct report *r, const struct finding_tensor *t, const char *what)
{
    char title[REPORT_TITLE_BYTES];
    struct outbuf b = {title, 0, sizeof title - 1};
    out_appendf(&b, "'%s' (bytes [%llu, %llu)) %s at", t->name, (ull)t->lo, (ull)t->hi, what);
    title[b.len] = 0;
    report_stack(r, title, t->stack);
    report_tensor(r, t->name);
}

/* "expected the sentinel .." / "found .." */
static void report_bytes(struct report *r, const struct finding_bytes *b)
{
    char expected[64], found[64];
    hex(expected, sizeof expected, b->expected, b->n_shown);
    hex(found, sizeof found, b->found, b->n_shown);
    report_line(r, "  expected the sentinel %s", expected);
    report_line(r, "  found                 %s", found);
}

/* Reports name an access by what the op did: "written" or "read". */
static const char *access_done(enum finding_moment moment)
{
    return moment == MOMENT_WRITE ? "written" : "read";
}

/* "read by op 'X' (in flight) at:" and the op's stack. */
static void report_op_access(struct report *r, enum finding_moment moment, struct finding_call op,
                             bool in_flight)
{
    char title[REPORT_TITLE_BYTES];
    struct outbuf o = {title, 0, sizeof title - 1};
    out_appendf(&o, "%s by op ", access_done(moment));
    append_op(&o, op.op);
    out_appendf(&o, "%s at", in_flight ? " (in flight)" : "");
    title[o.len] = 0;
    report_stack(r, title, op.stack);
}

/* An op still in flight when its tensor was released. */
static void report_released_in_flight(const struct use_after_release *v)
{
    const char *shown = v->view ? v->view : v->root.name;
    struct report *r = report_begin(TLSAN_KIND_USE_AFTER_RELEASE, 1, "on tensor '%s'", shown);
    if (!r)
        return;
    if (v->view)
        report_line(r,
                    "  op '%s' (stream %d) %s view '%s' of '%s' ('%s': arena '%s', bytes [%llu, "
                    "%llu)) and was still in flight when '%s' was released",
                    v->op.op, v->stream, moment_verb(v->moment), v->view, v->root.name,
                    v->root.name, v->arena, (ull)v->root.lo, (ull)v->root.hi, v->root.name);
    else
        report_line(r,
                    "  op '%s' (stream %d) %s '%s' (arena '%s', bytes [%llu, %llu)) and was still "
                    "in flight when it was released",
                    v->op.op, v->stream, moment_verb(v->moment), v->root.name, v->arena,
                    (ull)v->root.lo, (ull)v->root.hi);
    report_line(r, "  no event or sync orders the op's end before the release");
    report_op_access(r, v->moment, v->op, true);
    report_stack(r, "released at", v->release_stack);
    report_stack(r, "bound at", v->root.stack);
    report_tensor(r, v->root.name);
    if (v->view)
        report_tensor(r, v->view);
    report_end(r, "%s (released while op '%s' on stream %d %s it)", shown, v->op.op, v->stream,
               moment_verb(v->moment));
}

static void report_use_after_release(const struct use_after_release *v)
{
    if (v->in_flight) {
        report_released_in_flight(v);
        return;
    }
    const char *shown = v->view ? v->view : v->root.name;
    struct report *r = report_begin(TLSAN_KIND_USE_AFTER_RELEASE, 1, "on tensor '%s'", shown);
    if (!r)
        return;
    if (v->view)
        report_line(r, "  op '%s' %s view '%s' of '%s', %s", v->op.op, moment_verb(v->moment),
                    v->view, v->root.name,
                    v->root_rebound ? "whose storage root was released and bound again since "
                                      "the view was declared"
                                    : "after the release of its storage root");
    else
        report_line(r, "  op '%s' %s '%s' (arena '%s', bytes [%llu, %llu)) after its release",
                    v->op.op, moment_verb(v->moment), v->root.name, v->arena, (ull)v->root.lo,
                    (ull)v->root.hi);
    report_op_access(r, v->moment, v->op, false);
    report_stack(r, v->root_rebound ? "storage root bound again at" : "released at",
                 v->root_rebound ? v->root.stack : v->release_stack);
    if (!v->root_rebound)
        report_stack(r, "bound at", v->root.stack);
    report_tensor(r, v->root.name);
    if (v->view)
        report_tensor(r, v->view);
    report_end(r, "%s (released, %s by op '%s')", shown, access_done(v->moment), v->op.op);
}

static void report_stale_write(const struct stale_write *v)
{
    const struct finding_bytes *b = &v->bytes;
    struct report *r =
        report_begin(TLSAN_KIND_STALE_WRITE, 1, "at arena '%s' offset %llu (address %p)", v->arena,
                     (ull)b->offset, (void *)(b->arena_base + b->offset));
    if (!r)
        return;
    report_line(
        r, "  released bytes changed before their next tenant '%s' was bound:", v->new_tenant.name);
    report_bytes(r, b);
    for (size_t i = 0; i < v->n_previous; i++) {
        if (v->previous[i].name)
            report_tensor_at(r, &v->previous[i], "previous tenant, released");
        else
            report_line(r, "  bytes [%llu, %llu) had no tenant since the arena was created",
                        (ull)v->previous[i].lo, (ull)v->previous[i].hi);
    }
    report_tensor_at(r, &v->new_tenant, "new tenant, bound");
    report_end(r, "at %s+%llu (released by '%s', rebound as '%s')", v->arena, (ull)b->offset,
               v->n_previous && v->previous[0].name ? v->previous[0].name : "(never bound)",
               v->new_tenant.name);
}

static void report_slot_overflow(const struct slot_overflow *v)
{
    const struct finding_tensor *t = &v->tensor;
    const struct finding_bytes *b = &v->bytes;
    struct report *r = report_begin(TLSAN_KIND_SLOT_OVERFLOW, 1, "on tensor '%s' in arena '%s'",
                                    t->name, v->arena);
    if (!r)
        return;
    report_line(r,
                "  op '%s' wrote past the end of '%s' (bytes [%llu, %llu), %llu bytes planned): "
                "byte %llu (address %p) is %llu bytes past its end",
                v->writer.op, t->name, (ull)t->lo, (ull)t->hi, (ull)(t->hi - t->lo), (ull)b->offset,
                (void *)(b->arena_base + b->offset), (ull)(b->offset - t->hi + 1));
    report_bytes(r, b);
    char title[REPORT_TITLE_BYTES];
    struct outbuf o = {title, 0, sizeof title - 1};
    out_appendf(&o, "written by op ");
    append_op(&o, v->writer.op);
    out_appendf(&o, " at");
    title[o.len] = 0;
    report_stack(r, title, v->writer.stack);
    report_stack(r, "bound at", t->stack);
    report_tensor(r, t->name);
    report_end(r, "%s (%llu bytes planned, written by op '%s')", t->name, (ull)(t->hi - t->lo),
               v->writer.op);
}

static void report_read_before_write(const struct read_before_write *v)
{
    const char *shown = v->view ? v->view : v->root.name;
    struct report *r = report_begin(TLSAN_KIND_READ_BEFORE_WRITE, 1, "on tensor '%s'", shown);
    if (!r)
        return;
    if (v->view)
        report_line(r,
                    "  op '%s' reads view '%s' of '%s' (arena '%s', bytes [%llu, %llu)), which "
                    "no op wrote since '%s' was bound and which is not an input",
                    v->op.op, v->view, v->root.name, v->arena, (ull)v->lo, (ull)v->hi,
                    v->root.name);
    else
        report_line(r,
                    "  op '%s' reads '%s' (arena '%s', bytes [%llu, %llu)), which no op wrote "
                    "since its bind and which is not an input",
                    v->op.op, v->root.name, v->arena, (ull)v->lo, (ull)v->hi);
    report_line(r, "  its bytes still hold the previous tenant's data or the sentinel");
    report_op_access(r, MOMENT_READ, v->op, false);
    report_stack(r, "bound at", v->root.stack);
    report_tensor(r, v->root.name);
    if (v->view)
        report_tensor(r, v->view);
    if (v->view)
        report_end(r, "%s (not written since '%s' was bound, read by op '%s')", shown, v->root.name,
                   v->op.op);
    else
        report_end(r, "%s (not written since its bind, read by op '%s')", shown, v->op.op);
}

static void report_unordered_reuse(const struct unordered_reuse *v)
{
    const struct finding_tensor *old = &v->old_tenant, *new_tenant = &v->new_tenant;
    struct report *r =
        report_begin(TLSAN_KIND_UNORDERED_REUSE, 1, "between '%s' and '%s' in arena '%s'",
                     old->name, new_tenant->name, v->arena);
    if (!r)
        return;
    char what[160];
    struct outbuf o = {what, 0, sizeof what - 1};
    if (v->view)
        out_appendf(&o, "view '%s' of '%s'", v->view, old->name);
    else
        out_appendf(&o, "'%s'", old->name);
    what[o.len] = 0;
    report_line(r,
                "  '%s' (bytes [%llu, %llu)) was bound over bytes of released '%s' while op '%s' "
                "(stream %d), which %s %s (bytes [%llu, %llu)), was still in flight",
                new_tenant->name, (ull)new_tenant->lo, (ull)new_tenant->hi, old->name, v->op.op,
                v->stream, moment_verb(v->moment), what, (ull)old->lo, (ull)old->hi);
    report_line(r, "  no event or sync orders the op's end before the reuse");
    report_op_access(r, v->moment, v->op, true);
    report_tensor_at(r, new_tenant, "new tenant, bound");
    report_stack(r, "previous tenant released at", v->old_release_stack);
    report_tensor_at(r, old, "previous tenant, bound");
    if (v->view)
        report_tensor(r, v->view);
    report_end(
        r, "'%s' and '%s' in arena '%s' ('%s' bound over '%s' while op '%s' on stream %d %s it)",
        old->name, new_tenant->name, v->arena, new_tenant->name, old->name, v->op.op, v->stream,
        moment_verb(v->moment));
}

/* The one headline of live-corruption; " in GRAPH" for a ggml graph. */
static struct report *live_corruption_begin(const struct live_corruption *v)
{
    const char *graph = v->cause == CORRUPTION_GRAPH_CHECKSUM ? v->graph.name : NULL;
    return report_begin(TLSAN_KIND_LIVE_CORRUPTION, 1,
                        "on tensor '%s' in arena '%s' bytes [%llu, %llu)%s%s", v->victim.name,
                        v->arena, (ull)v->victim.lo, (ull)v->victim.hi, graph ? " in " : "",
                        graph ? graph : "");
}

/* "  node N: OP writing 'T'" with a prefix. */
static void report_node_line(struct report *r, const struct finding_node_write *w, const char *what)
{
    report_line(r, "  %snode %d: %s writing '%s'", what, w->node, w->op_desc, w->tensor);
}

/* A ggml graph computed node by node: the nodes that wrote over the tensor's bytes since its
 * checksum was taken. */
static void report_graph_corruption(const struct live_corruption *v)
{
    struct report *r = live_corruption_begin(v);
    if (!r)
        return;
    char when[64];
    if (v->graph.reader_node < v->graph.n_nodes)
        snprintf(when, sizeof when, "before node %d reads it", v->graph.reader_node);
    else
        snprintf(when, sizeof when, "after the graph (it is an output)");
    report_line(r,
                "  its bytes changed with no write of its own: checksum %016llx after %s, "
                "%016llx %s",
                (ull)v->checksum_before,
                v->graph.hashed_at_inputs ? "the graph's inputs were set" : "its last write",
                (ull)v->checksum_after, when);
    if (v->graph.last_write.node >= 0)
        report_node_line(r, &v->graph.last_write, "last written by ");
    for (size_t i = 0; i < v->graph.n_overwrites; i++) {
        const struct finding_node_write *w = &v->graph.overwrites[i];
        report_line(r, "  overwritten by node %d (%s) writing '%s' over bytes [%llu, %llu)",
                    w->node, w->op_desc, w->tensor, (ull)w->lo, (ull)w->hi);
    }
    if (v->graph.n_overwrites_total > v->graph.n_overwrites)
        report_line(r, "  and %zu more nodes wrote over its bytes",
                    v->graph.n_overwrites_total - v->graph.n_overwrites);
    if (!v->graph.n_overwrites)
        report_line(r, "  no node of the graph wrote over its bytes meanwhile: a write outside "
                       "the graph's tensors");
    report_stack(r, "graph computed at", v->by.stack);
    const char *culprit = v->graph.n_overwrites ? v->graph.overwrites[0].tensor : NULL;
    report_tensor(r, v->victim.name);
    if (culprit)
        report_tensor(r, culprit);
    report_end(r, "'%s' in %s%s%s%s", v->victim.name, v->graph.name,
               culprit ? " (overwritten by '" : "", culprit ? culprit : "", culprit ? "')" : "");
}

static void report_live_corruption(const struct live_corruption *v)
{
    if (v->cause == CORRUPTION_GRAPH_CHECKSUM) {
        report_graph_corruption(v);
        return;
    }
    bool overwritten = v->cause == CORRUPTION_OVERWRITTEN;
    bool in_place = v->cause == CORRUPTION_CONSUMED_IN_PLACE;
    const char *name = v->victim.name;
    struct report *r = live_corruption_begin(v);
    if (!r)
        return;
    char title[REPORT_TITLE_BYTES], then[300];
    struct outbuf b = {title, 0, sizeof title - 1};
    struct outbuf tb = {then, 0, sizeof then - 1};
    if (v->by.op)
        out_appendf(&tb, "op '%s' %s it afterwards%s%s%s", v->by.op, moment_verb(v->moment),
                    v->via ? " (through view '" : "", v->via ? v->via : "", v->via ? "')" : "");
    else
        out_appendf(&tb, "it is a graph output, which the host reads after the run");
    then[tb.len] = 0;
    if (overwritten) {
        report_line(r,
                    "  op '%s' wrote '%s' (bytes [%llu, %llu)) over '%s' while '%s' was still "
                    "live; %s",
                    v->overwriting_op.op, v->overwriter.name, (ull)v->overwriter.lo,
                    (ull)v->overwriter.hi, name, name, then);
    } else if (in_place) {
        report_line(r, "  op '%s' consumed '%s' in place (its output '%s' took over the bytes); %s",
                    v->overwriting_op.op, name, v->overwriter.name, then);
    } else {
        char when[320];
        struct outbuf wb = {when, 0, sizeof when - 1};
        if (v->moment == MOMENT_OP_END)
            out_appendf(&wb, "at the end of op '%s'", v->by.op);
        else
            out_appendf(&wb, "when %s",
                        v->moment == MOMENT_READ      ? "an op read it"
                        : v->moment == MOMENT_RELEASE ? "it was released"
                                                      : "its arena was destroyed");
        when[wb.len] = 0;
        report_line(r,
                    "  its bytes changed with no write of its own: checksum %016llx after its "
                    "last write, %016llx %s",
                    (ull)v->checksum_before, (ull)v->checksum_after, when);
        if (v->moment == MOMENT_OP_END) {
            report_line(r,
                        "  they changed while op '%s' (stream %d) ran, or before it began and "
                        "after they were last verified (every op's end verifies the live tensors)",
                        v->by.op, v->by_stream);
            if (v->n_in_flight)
                report_line(r, "  %zu other op%s in flight then, which may have written them too",
                            v->n_in_flight, v->n_in_flight == 1 ? " was" : "s were");
        }
        if (v->n_sharers == 0)
            report_line(r, "  no other live tensor shares its bytes: a write outside any declared "
                           "tensor, or by an op that did not declare it");
    }
    if (v->last_writer.op) {
        out_appendf(&b, "last written by op ");
        append_op(&b, v->last_writer.op);
        out_appendf(&b, " at");
        title[b.len] = 0;
        report_stack(r, title, v->last_writer.stack);
    } else {
        report_line(r, "  not written by any op since its bind (an input, or written by the host)");
    }
    b.len = 0;
    if (v->moment == MOMENT_OP_END) {
        out_appendf(&b, "changed while op ");
        append_op(&b, v->by.op);
        out_appendf(&b, " ran, begun at");
    } else if (v->by.op) {
        out_appendf(&b, "%s by op ", access_done(v->moment));
        append_op(&b, v->by.op);
        out_appendf(&b, " at");
    } else
        out_appendf(&b, "%s at", v->moment == MOMENT_RELEASE ? "released" : "arena destroyed");
    title[b.len] = 0;
    report_stack(r, title, v->by.stack);
    for (size_t i = 0; i < v->n_in_flight; i++) {
        b.len = 0;
        out_appendf(&b, "op ");
        append_op(&b, v->in_flight[i].call.op);
        out_appendf(&b, " (stream %d, in flight) begun at", v->in_flight[i].stream);
        title[b.len] = 0;
        report_stack(r, title, v->in_flight[i].call.stack);
    }
    if (overwritten || in_place) {
        b.len = 0;
        out_appendf(&b, "overwritten by op ");
        append_op(&b, v->overwriting_op.op);
        out_appendf(&b, " (writing '%s') at", v->overwriter.name);
        title[b.len] = 0;
        report_stack(r, title, v->overwriting_op.stack);
        report_tensor_at(r, &v->overwriter, "bound");
    }
    for (size_t i = 0; i < v->n_sharers; i++)
        if (!v->overwriter.name || strcmp(v->sharers[i].name, v->overwriter.name) != 0)
            report_tensor_at(r, &v->sharers[i], "(live, shares its bytes) bound");
    report_tensor_at(r, &v->victim, "bound");

    const char *over = v->overwriter.name ? v->overwriter.name
                       : v->n_sharers     ? v->sharers[0].name
                                          : NULL;
    char tail[300];
    struct outbuf t = {tail, 0, sizeof tail - 1};
    if (v->last_writer.op)
        out_appendf(&t, "last written by op '%s', ", v->last_writer.op);
    else
        out_appendf(&t, "not written by an op, ");
    if (v->moment == MOMENT_OP_END)
        out_appendf(&t, "changed while '%s' ran", v->by.op);
    else if (v->by.op)
        out_appendf(&t, "%s by '%s'", access_done(v->moment), v->by.op);
    else
        out_appendf(&t, "%s%s", v->moment == MOMENT_RELEASE ? "at its release" : "at arena destroy",
                    v->cause == CORRUPTION_CHECKSUM ? "" : " (an output)");
    if (over)
        out_appendf(&t, ", overlapped by '%s'", over);
    tail[t.len] = 0;
    report_end(r, "%s (%s)", name, tail);
}

void finding_report(const struct finding *f)
{
    switch (f->variant) {
    case FINDING_USE_AFTER_RELEASE:
        report_use_after_release(&f->use_after_release);
        break;
    case FINDING_LIVE_CORRUPTION:
        report_live_corruption(&f->live_corruption);
        break;
    case FINDING_STALE_WRITE:
        report_stale_write(&f->stale_write);
        break;
    case FINDING_SLOT_OVERFLOW:
        report_slot_overflow(&f->slot_overflow);
        break;
    case FINDING_READ_BEFORE_WRITE:
        report_read_before_write(&f->read_before_write);
        break;
    case FINDING_UNORDERED_REUSE:
        report_unordered_reuse(&f->unordered_reuse);
        break;
    }
}
