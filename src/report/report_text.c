/* report_text: findings in the layout sanitizer users know (AddressSanitizer's): a rule,
 * an `ERROR: tlsan: KIND ...` headline, the details, and one `SUMMARY:` line per input. */
#include "report/report.h"

#include "report/finding_text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define RULE        "================================================================="
#define COLOR_ERROR "\033[1m\033[31m"
#define COLOR_WARN  "\033[1m\033[35m"
#define MAX_LABELS  8
#define COLOR_RESET "\033[0m"

/* Where the text goes: a stream (tlsan check, tlsan replay), or a sink (the shim's reports,
 * finding_text.h). Every piece of text goes through put(). */
typedef struct text_out {
    FILE *out; /* NULL: the sink */
    report_text_sink sink;
    void *sink_ctx;
    const char *pid_prefix; /* "" when none */
    bool color;
} text_out;

static void put(text_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (o->out) {
        vfprintf(o->out, fmt, ap);
        va_end(ap);
        return;
    }
    /* Most pieces fit the stack buffer; a longer one (a long name) is formatted again into
     * the heap, which the checker, run just before, uses anyway. */
    char small[512];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof small) {
        o->sink(o->sink_ctx, small, (size_t)n);
    } else if (n >= 0) {
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            o->sink(o->sink_ctx, big, (size_t)n);
            free(big);
        }
    }
    va_end(again);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Where a finding is: "plan 'NAME'", "plans[I]" (unnamed cache entry) or the file label. */
static void put_where(text_out *o, const tlsan_report *r, size_t plan_index, const char *label)
{
    char buf[48];
    const char *name = plan_index < r->n_plans ? tlsan_plan_name(r->plans[plan_index]) : NULL;
    if (name)
        put(o, "plan '%s'", name);
    else if (r->is_cache)
        put(o, "%s of %s", report_plan_label(r, plan_index, buf, sizeof buf), label);
    else
        put(o, "%s", label);
}

static void put_headline(text_out *o, const tlsan_report *r, const tlsan_finding *f,
                         const char *label)
{
    size_t pi = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    /* The severity comes from the one table of kinds, as JSON's and SARIF's do. */
    bool warn = tlsan_kind_severity(f->kind) == TLSAN_SEVERITY_WARNING;
    put(o, "%s\n%s%s%s: tlsan: %s", RULE, o->pid_prefix,
        o->color ? (warn ? COLOR_WARN : COLOR_ERROR) : "", warn ? "WARNING" : "ERROR",
        tlsan_kind_name(f->kind));
    if (f->kind == TLSAN_KIND_CACHE_KEY_COLLISION && f->other_plan_index >= 0 &&
        (uint64_t)f->other_plan_index < r->n_plans) {
        char b0[48], b1[48];
        const char *l0 = report_plan_label(r, pi, b0, sizeof b0);
        const char *l1 = report_plan_label(r, (size_t)f->other_plan_index, b1, sizeof b1);
        put(o, " between plans '%s' and '%s' in %s", l0 ? l0 : "?", l1 ? l1 : "?", label);
    } else {
        if (f->n_tensors == 2)
            put(o, " between '%s' and '%s'", f->tensors[0], f->tensors[1]);
        for (size_t i = 0; f->n_tensors != 2 && i < f->n_tensors; i++)
            put(o, "%s'%s'", i == 0 ? " on " : ", ", f->tensors[i]);
        put(o, " in ");
        put_where(o, r, pi, label);
    }
    put(o, "%s\n", o->color ? COLOR_RESET : "");
}

static const char *arena_name(const tlsan_plan *p, const tensor_rec *t)
{
    return plan_name(p, p->arenas[p->tensors[t->root].arena].name);
}

/* " (the graph-output step: ...)" for the labels of tensor i at `step`, each once. */
static void put_labels(text_out *o, const tlsan_plan *p, const tlsan_finding *f,
                       const step_label *labels, size_t n, size_t i, int64_t step, bool with_step)
{
    for (size_t k = 0; k < n; k++) {
        if (labels[k].tensor != i || labels[k].step != step)
            continue;
        char text[600];
        report_step_text(p, f->tensors[i], &labels[k], text, sizeof text);
        if (with_step)
            put(o, " (%" PRId64 ": %s)", step, text);
        else
            put(o, " (%s)", text);
    }
}

/* Where tensor t's object begins in the plan file, " (FILE:LINE:COLUMN)", when known. */
static void put_source(text_out *o, const tlsan_plan *p, uint32_t t, const char *label)
{
    int line, column;
    if (label && tlsan_plan_tensor_source(p, t, &line, &column))
        put(o, " at %s:%d:%d", label, line, column);
}

/* "  tensor 'x': arena 'a0', bytes [s, e) (N bytes), lifetime [a, b]" and its stack. */
static void put_tensor(text_out *o, const tlsan_plan *p, uint32_t t, const tlsan_finding *f,
                       size_t i, const step_label *labels, size_t n_labels, const char *label)
{
    const tensor_rec *tr = &p->tensors[t];
    put(o, "  tensor '%s'", strtab_str(&p->strings, tr->name));
    put_source(o, p, t, label);
    put(o, ": ");
    if (tr->view_of != NO_INDEX)
        put(o, "view of '%s' at +%" PRIu64 ", ", plan_str(p, p->tensors[tr->view_of].name),
            tr->offset_bytes);
    put(o, "arena '%s', bytes [%" PRIu64 ", %" PRIu64 ") (%" PRIu64 " %s)", arena_name(p, tr),
        tr->abs_offset_bytes, sat_add(tr->abs_offset_bytes, tr->bytes), tr->bytes,
        plural(tr->bytes, "byte", "bytes"));
    if (f && f->has_lifetimes && i < 2) {
        put(o, ", lifetime [%" PRId64 ", %" PRId64 "]", f->lifetimes[i][0], f->lifetimes[i][1]);
        put_labels(o, p, f, labels, n_labels, i, f->lifetimes[i][0], true);
        if (f->lifetimes[i][1] != f->lifetimes[i][0])
            put_labels(o, p, f, labels, n_labels, i, f->lifetimes[i][1], true);
    }
    put(o, "\n");
    const tensor_extra *tx = tensor_x(p, tr);
    if (tx->n_stack == 0)
        put(o, "    (no stack recorded)\n");
    for (uint32_t k = 0; k < tx->n_stack; k++)
        put(o, "    #%" PRIu32 " %s\n", k, plan_name(p, p->id_pool.v[tx->stack_start + k]));
}

static void put_access(text_out *o, const tlsan_plan *p, const char *verb, uint32_t via, uint32_t t,
                       bool *first)
{
    put(o, "%s%s '%s'", *first ? " " : ", ", verb, plan_str(p, p->tensors[t].name));
    if (via != t)
        put(o, " (through view '%s')", plan_str(p, p->tensors[via].name));
    *first = false;
}

/* "  step S: op 'NAME' writes 'c', reads 'a'" for one colliding step; the input and output
 * steps, and a step a tensor is live at only by the loop rule, say so and name the flag or
 * loop behind it. */
static void put_step(text_out *o, const tlsan_report *r, const tlsan_finding *f, int64_t step,
                     const step_label *labels, size_t n_labels)
{
    const tlsan_plan *p = report_plan_of(r, f);
    uint32_t ts[2] = {NO_INDEX, NO_INDEX};
    size_t nt = f->n_tensors < 2 ? f->n_tensors : 2;
    for (size_t i = 0; i < nt; i++)
        ts[i] = report_tensor_of(r, f, i, p);
    bool first = true;
    if (step < 0 || (uint64_t)step >= p->n_ops) {
        bool in = step < 0;
        put(o, "  step %" PRId64 " (the graph-%s step, %s", step, in ? "input" : "output",
            in ? "before the first op" : "after the last op");
        for (size_t k = 0; k < n_labels; k++) {
            if (labels[k].step != step)
                continue;
            put(o, "%s'%s' is %s %s", first ? ": " : ", ", labels[k].bearer,
                strcmp(labels[k].flag, "constant") == 0 ? "a" : "an", labels[k].flag);
            if (strcmp(labels[k].bearer, f->tensors[labels[k].tensor]) != 0)
                put(o, " (the flag of '%s')", f->tensors[labels[k].tensor]);
            first = false;
        }
        put(o, ")\n");
        return;
    }
    const op_rec *op = &p->ops[step];
    put(o, "  step %" PRId64 ": op '%s'", step, plan_str(p, op->name));
    for (size_t i = 0; i < nt; i++) {
        if (ts[i] == NO_INDEX)
            continue;
        uint32_t w = report_op_touches(p, op->writes_start, op->n_writes, ts[i]);
        uint32_t rd = report_op_touches(p, op->reads_start, op->n_reads, ts[i]);
        if (w != NO_INDEX)
            put_access(o, p, "writes", w, ts[i], &first);
        if (rd != NO_INDEX)
            put_access(o, p, "reads", rd, ts[i], &first);
    }
    for (size_t k = 0; k < n_labels; k++) {
        if (labels[k].step != step || labels[k].kind != STEP_LOOP)
            continue;
        char text[600];
        report_step_text(p, f->tensors[labels[k].tensor], &labels[k], text, sizeof text);
        put(o, "; %s", text);
    }
    put(o, "\n");
}

static void put_op_ref(text_out *o, const tlsan_plan *p, int64_t op)
{
    put(o, "op '%s' (step %" PRId64, plan_str(p, p->ops[op].name), op);
    if (p->schedule == TLSAN_SCHEDULE_SEQUENTIAL && p->n_streams > 1)
        put(o, ", stream '%s'", plan_str(p, plan_op_stream_name(p, op)));
    put(o, ")");
}

static bool valid_op(const tlsan_plan *p, int64_t op)
{
    return op >= 0 && (uint64_t)op < p->n_ops;
}

/* Lines only single-tensor kinds have: what rule the layout breaks, with the numbers. */
static void put_layout_details(text_out *o, const tlsan_plan *p, const tlsan_finding *f, uint32_t t)
{
    const tensor_rec *tr = &p->tensors[t];
    const arena_rec *ar = &p->arenas[p->tensors[tr->root].arena];
    const char *arena = plan_str(p, ar->name);
    switch (f->kind) {
    case TLSAN_KIND_OUT_OF_BOUNDS:
        if (tr->view_of == NO_INDEX) {
            uint64_t end = sat_add(tr->offset_bytes, tr->bytes);
            put(o,
                "  arena '%s' has %" PRIu64 " bytes; the tensor ends at %" PRIu64 ", %" PRIu64
                " bytes past its end\n",
                arena, ar->bytes, end, end > ar->bytes ? end - ar->bytes : 0);
        } else {
            const tensor_rec *b = &p->tensors[tr->view_of];
            uint64_t end = sat_add(tr->offset_bytes, tr->bytes);
            put(o,
                "  base '%s' has %" PRIu64 " bytes; the view covers [%" PRIu64 ", %" PRIu64
                ") of it, %" PRIu64 " bytes past its end\n",
                plan_str(p, b->name), b->bytes, tr->offset_bytes, end,
                end > b->bytes ? end - b->bytes : 0);
        }
        break;
    case TLSAN_KIND_MISALIGNED: {
        uint64_t off = tr->abs_offset_bytes;
        bool said = false;
        if (tr->view_of == NO_INDEX && off % ar->alignment_bytes) {
            put(o,
                "  offset %" PRIu64 " in arena '%s' is not a multiple of the arena's "
                "alignment %" PRIu64 " (remainder %" PRIu64 ")\n",
                off, arena, ar->alignment_bytes, off % ar->alignment_bytes);
            said = true;
        }
        if (tensor_x(p, tr)->alignment_bytes > 1 && off % tensor_x(p, tr)->alignment_bytes) {
            put(o,
                "  offset %" PRIu64 " in arena '%s' is not a multiple of the tensor's "
                "alignment %" PRIu64 " (remainder %" PRIu64 ")\n",
                off, arena, tensor_x(p, tr)->alignment_bytes,
                off % tensor_x(p, tr)->alignment_bytes);
            said = true;
        }
        if (!said)
            put(o,
                "  offset %" PRIu64 " in arena '%s'; arena alignment %" PRIu64
                ", tensor alignment %" PRIu64 "\n",
                off, arena, ar->alignment_bytes,
                tensor_x(p, tr)->alignment_bytes ? tensor_x(p, tr)->alignment_bytes : 1);
        break;
    }
    case TLSAN_KIND_MEMORY_KIND_MISMATCH:
        put(o, "  the tensor needs memory '%s'; arena '%s' is '%s'\n",
            tensor_x(p, tr)->memory == STRTAB_NONE ? "?" : plan_str(p, tensor_x(p, tr)->memory),
            arena, plan_str(p, ar->memory));
        break;
    case TLSAN_KIND_SIZE_MISMATCH: {
        uint64_t need = plan_needed_bytes(p, tr);
        put(o, "  dtype %s, shape [", tlsan_dtype_name((tlsan_dtype)tr->dtype));
        for (uint32_t k = 0; k < plan_shape_rank(p, tr); k++)
            put(o, "%s%" PRIu64, k ? ", " : "", plan_shape_dim(p, tr, k));
        put(o, "]: needs %" PRIu64 " bytes, has %" PRIu64 " (%" PRIu64 " short)\n", need, tr->bytes,
            need > tr->bytes ? need - tr->bytes : 0);
        break;
    }
    case TLSAN_KIND_LIFETIME_TOO_SHORT:
        put(o, "  declared lifetime [%" PRId64 ", %" PRId64 "]", tensor_x(p, tr)->lifetime[0],
            tensor_x(p, tr)->lifetime[1]);
        if (f->has_lifetimes)
            put(o, ", derived from the ops [%" PRId64 ", %" PRId64 "]", f->lifetimes[0][0],
                f->lifetimes[0][1]);
        put(o, "\n");
        break;
    default:
        break;
    }
}

/* cache-key-collision: each differing tensor's layout in both plans. */
static void put_collision(text_out *o, const tlsan_report *r, const tlsan_finding *f)
{
    const tlsan_plan *pl[2] = {report_plan_of(r, f), NULL};
    if (f->other_plan_index < 0 || (uint64_t)f->other_plan_index >= r->n_plans)
        return;
    pl[1] = r->plans[f->other_plan_index];
    const int64_t idx[2] = {f->plan_index < 0 ? 0 : f->plan_index, f->other_plan_index};
    for (size_t i = 0; i < f->n_tensors; i++) {
        put(o, "  tensor '%s':", f->tensors[i]);
        for (int k = 0; k < 2; k++) {
            char buf[48];
            const char *label = report_plan_label(r, (size_t)idx[k], buf, sizeof buf);
            uint32_t t = report_tensor_of(r, f, i, pl[k]);
            put(o, "%s in '%s' ", k ? ";" : "", label ? label : "?");
            if (t == NO_INDEX) {
                put(o, "absent");
                continue;
            }
            const tensor_rec *tr = &pl[k]->tensors[t];
            if (tr->view_of != NO_INDEX)
                put(o, "view of '%s' at +%" PRIu64 ", ",
                    plan_str(pl[k], pl[k]->tensors[tr->view_of].name), tr->offset_bytes);
            put(o, "arena '%s' bytes [%" PRIu64 ", %" PRIu64 ")", arena_name(pl[k], tr),
                tr->abs_offset_bytes, sat_add(tr->abs_offset_bytes, tr->bytes));
        }
        put(o, "\n");
    }
}

/* "op 'a' (step 3), op 'b' (step 5) and 2 more" */
static void put_unordered(text_out *o, const tlsan_plan *p, const tlsan_finding *f)
{
    for (size_t i = 0; i < f->n_unordered_ops; i++) {
        put(o, "%s",
            i == 0                                                                      ? ""
            : i + 1 == f->n_unordered_ops && f->n_unordered_total == f->n_unordered_ops ? " and "
                                                                                        : ", ");
        put_op_ref(o, p, f->unordered_ops[i]);
    }
    if (f->n_unordered_total > f->n_unordered_ops)
        put(o, " and %zu more", f->n_unordered_total - f->n_unordered_ops);
}

/* The cause's lines: what follows from it, and the suggestion. */
static void put_cause_lines(text_out *o, const tlsan_report *r, const tlsan_finding *f)
{
    size_t idx = (size_t)(f - r->findings);
    size_t n = report_count_effects(r, idx);
    if (n) {
        put(o, "  leads to %zu more %s, grouped below:", n, plural(n, "finding", "findings"));
        bool first = true;
        for (size_t i = 0; i < r->n_findings; i++) {
            const tlsan_finding *g = &r->findings[i];
            if (g->cause != (int64_t)idx)
                continue;
            put(o, "%s%s between '%s' and '%s'", first ? " " : ", ", tlsan_kind_name(g->kind),
                g->tensors[0], g->tensors[1]);
            first = false;
        }
        put(o, "\n");
    }
    char hint[1200];
    report_suggestion(r, f, hint, sizeof hint);
    if (hint[0])
        put(o, "  suggestion: %s\n", hint);
}

/* The lines of a finding grouped under an access the planner missed: the group's first
 * finding names the access, the others and the suggestion; the others point back to it. */
static void put_access_cause_lines(text_out *o, const tlsan_report *r, const tlsan_finding *f)
{
    size_t idx = (size_t)(f - r->findings);
    const access_cause *c = report_access_cause_of(r, idx);
    if (!c)
        return;
    const tlsan_plan *p = report_plan_of(r, f);
    const char *name = plan_str(p, p->tensors[c->tensor].name);
    char acc[600];
    report_access_text(r, c, acc, sizeof acc);
    if (c->first_finding != idx) {
        const tlsan_finding *first = &r->findings[c->first_finding];
        put(o,
            "  follows from: %s, its last access (the cause given above with the %s between "
            "'%s' and '%s')\n",
            acc, tlsan_kind_name(first->kind), first->tensors[0], first->tensors[1]);
        return;
    }
    put(o,
        "  cause: %s, its last access; without it '%s' is last accessed at step %" PRId64
        ", before each of the %zu findings grouped here begins:",
        acc, name, c->previous_step, c->n_findings);
    bool first = true;
    for (size_t i = 0; i < r->n_findings; i++) {
        if (report_access_cause_of(r, i) != c)
            continue;
        const tlsan_finding *g = &r->findings[i];
        put(o, "%s%s between '%s' and '%s'", first ? " " : ", ", tlsan_kind_name(g->kind),
            g->tensors[0], g->tensors[1]);
        first = false;
    }
    put(o, "\n");
    char hint[1200];
    report_access_suggestion(r, c, hint, sizeof hint);
    put(o, "  suggestion: %s\n", hint);
}
static void put_body(text_out *o, const tlsan_report *r, const tlsan_finding *f, const char *label);

static void put_finding(text_out *o, const tlsan_report *r, const tlsan_finding *f,
                        const char *label)
{
    put_headline(o, r, f, label);
    put_body(o, r, f, label);
}

/* Everything under the headline: the one rendering of a finding's details, shared with the
 * shim (report_finding_text_body). */
static void put_body(text_out *o, const tlsan_report *r, const tlsan_finding *f, const char *label)
{
    const tlsan_plan *p = report_plan_of(r, f);
    step_label labels[MAX_LABELS];
    size_t n_labels = report_step_labels(r, f, labels, MAX_LABELS);
    put(o, "%s\n", f->message);
    if (f->repeats > 1)
        put(o,
            "  repeated: %zu findings of this kind on tenants of the same names (NAME#k: the "
            "k-th bind), from run %" PRId64 " to run %" PRId64 "; the first is shown\n",
            f->repeats, f->first_run, f->last_run);
    if (f->cause >= 0 && (size_t)f->cause < r->n_findings) {
        const tlsan_finding *c = &r->findings[f->cause];
        put(o, "  follows from: %s on '%s' (above): ", tlsan_kind_name(c->kind), c->tensors[0]);
        put(o,
            "'%s' is declared live over [%" PRId64 ", %" PRId64
            "] only, which misses '%s' (live %" PRId64 "..%" PRId64 ")\n",
            c->tensors[0], c->steps[0], c->steps[1],
            strcmp(f->tensors[0], c->tensors[0]) == 0 ? f->tensors[1] : f->tensors[0],
            f->lifetimes[strcmp(f->tensors[0], c->tensors[0]) == 0 ? 1 : 0][0],
            f->lifetimes[strcmp(f->tensors[0], c->tensors[0]) == 0 ? 1 : 0][1]);
    }

    if (f->kind == TLSAN_KIND_CACHE_KEY_COLLISION) {
        put_collision(o, r, f);
        return;
    }
    /* Bytes and steps of a pair are where the two collide; a single tensor's are its own
     * range and the kind's own interval, which its detail lines below already give. */
    bool pair = f->n_tensors == 2;
    if (pair && f->has_bytes)
        put(o, "  shared bytes: [%" PRIu64 ", %" PRIu64 ") (%" PRIu64 " %s)\n", f->bytes[0],
            f->bytes[1], f->bytes[1] - f->bytes[0],
            plural(f->bytes[1] - f->bytes[0], "byte", "bytes"));
    if (pair && f->has_steps) {
        put_step(o, r, f, f->steps[0], labels, n_labels);
        if (f->steps[1] != f->steps[0])
            put_step(o, r, f, f->steps[1], labels, n_labels);
    }
    if (f->kind == TLSAN_KIND_BAD_INPLACE && valid_op(p, f->op_index)) {
        put(o, "  ");
        put_op_ref(o, p, f->op_index);
        put(o, " declares them an in-place pair\n");
    } else if (f->kind == TLSAN_KIND_UNORDERED_REUSE && valid_op(p, f->op_index)) {
        put(o, "  ");
        if (valid_op(p, f->op_index2)) {
            put_op_ref(o, p, f->op_index2);
            put(o, " is not ordered before ");
        } else {
            put(o, "the earlier tenant is not ordered before ");
        }
        put_op_ref(o, p, f->op_index);
        put(o, ", the later tenant's first access\n");
        if (f->n_unordered_total > 1) {
            put(o, "  every access of '%s' not ordered before it: ", f->tensors[0]);
            put_unordered(o, p, f);
            put(o, "\n");
        }
    }
    if (f->n_path) {
        put(o, "  path:");
        for (size_t i = 0; i < f->n_path; i++)
            put(o, "%s%s=%s", i ? ", " : " ", f->path[i].if_name, f->path[i].arm);
        put(o, "\n");
    }
    for (size_t i = 0; i < f->n_tensors; i++) {
        uint32_t t = report_tensor_of(r, f, i, p);
        if (t == NO_INDEX) {
            put(o, "  tensor '%s'\n", f->tensors[i]);
            continue;
        }
        put_tensor(o, p, t, f, i, labels, n_labels, label);
        if (f->n_tensors == 1)
            put_layout_details(o, p, f, t);
    }
    put_cause_lines(o, r, f);
    put_access_cause_lines(o, r, f);
    if (f->approximate)
        put(o, "  note: too many branch paths to enumerate; judged on the union of all "
               "paths (conservative)\n");
}

static void put_summary(text_out *o, const tlsan_report *r, const char *label)
{
    size_t total = report_total_count(r);
    if (total == 0) {
        put(o, "SUMMARY: tlsan: no findings in %s\n", label);
        return;
    }
    put(o, "SUMMARY: tlsan: %zu %s (", total, plural(total, "finding", "findings"));
    bool first = true;
    for (int k = 0; k < TLSAN_KIND_COUNT_; k++) {
        size_t n = tlsan_report_count_kind(r, (tlsan_kind)k);
        if (n == 0)
            continue;
        put(o, "%s%s x%zu", first ? "" : ", ", tlsan_kind_name((tlsan_kind)k), n);
        first = false;
    }
    /* Run-time kinds in the order first reported, each once. */
    for (size_t i = 0; i < r->n_runtime; i++) {
        const char *kind = r->runtime[i].kind;
        size_t n = 0, k = 0;
        while (k < i && strcmp(r->runtime[k].kind, kind) != 0)
            k++;
        if (k < i)
            continue;
        for (k = i; k < r->n_runtime; k++)
            n += strcmp(r->runtime[k].kind, kind) == 0;
        put(o, "%s%s x%zu at run time", first ? "" : ", ", kind, n);
        first = false;
    }
    put(o, ") in %s\n", label);
}

/* One note per report when any plan was judged on the union of paths somewhere. */
static void put_paths_note(text_out *o, const tlsan_report *r, const char *label)
{
    bool first = true;
    for (size_t i = 0; i < r->n_plans; i++) {
        if (!r->stats[i].paths_approximate)
            continue;
        if (first)
            put(o, "%sNOTE: tlsan: too many branch paths in ", o->pid_prefix);
        else
            put(o, ", ");
        put_where(o, r, i, label);
        first = false;
    }
    if (!first)
        put(o, ": some pairs were judged on the union of all paths (conservative: "
               "findings there may not occur on any single path)\n");
}

/* The order the findings are printed in: each finding without a cause, then those that follow
 * from it. Writes at most cap indices into order; returns how many. */
static size_t text_order(const tlsan_report *r, size_t *order, size_t cap)
{
    size_t n = 0;
    bool any_cause = false;
    for (size_t i = 0; i < r->n_findings; i++)
        any_cause |= r->findings[i].cause >= 0;
    for (size_t i = 0; i < r->n_findings && n < cap; i++) {
        const access_cause *c = report_access_cause_of(r, i);
        if (r->findings[i].cause >= 0 || (c && c->first_finding != i))
            continue;
        order[n++] = i;
        bool has_effects = any_cause && report_count_effects(r, i) > 0;
        for (size_t k = 0; has_effects && k < r->n_findings && n < cap; k++)
            if (r->findings[k].cause == (int64_t)i)
                order[n++] = k;
        /* those grouped under one missed access right after the group's first */
        for (size_t k = i + 1; c && k < r->n_findings && n < cap; k++)
            if (report_access_cause_of(r, k) == c)
                order[n++] = k;
    }
    return n;
}

int report_write_text(const tlsan_report *r, const char *label, const report_text_options *opt,
                      FILE *out)
{
    if (!r || !out)
        return -1;
    text_out o = {.out = out, .pid_prefix = ""};
    if (opt) {
        o.pid_prefix = opt->pid_prefix ? opt->pid_prefix : "";
        o.color = opt->color;
    }
    if (!label)
        label = "<plan>";
    size_t *order = r->n_findings ? malloc(r->n_findings * sizeof *order) : NULL;
    if (r->n_findings && !order)
        return -1;
    size_t n_order = text_order(r, order, r->n_findings);
    for (size_t i = 0; i < n_order; i++)
        put_finding(&o, r, &r->findings[order[i]], label);
    free(order);
    report_text_runtime(r, label, RULE, out);
    if (report_total_count(r))
        fputc('\n', out);
    put_paths_note(&o, r, label);
    put_summary(&o, r, label);
    return ferror(out) ? -1 : 0;
}

void report_finding_text_body(const tlsan_report *r, const tlsan_finding *f, const char *label,
                              report_text_sink sink, void *sink_ctx)
{
    if (!r || !f || !sink)
        return;
    text_out o = {.sink = sink, .sink_ctx = sink_ctx, .pid_prefix = ""};
    put_body(&o, r, f, label ? label : "<plan>");
}
