/* op.c - ops: tlsan_op_begin/end resolve their tensors, check reads of released or clobbered
 * tensors and of bytes not written since their bind, mark clobbers and check the bytes past
 * each written root (declared in engine.h). */
#include "engine/op.h"

#include "engine/arena.h"
#include "engine/sentinel_ranges.h"
#include "engine/state.h"
#include "engine/work.h"

#include "checker_report.h"
#include "checksum.h"
#include "depot.h"
#include "heap/heap.h"
#include "modules.h"
#include "out.h"
#include "check/plan_query.h" /* the checker's interface to the shim */
#include "runtime_report.h"
#include "shim.h"
#include "trace.h"
#include "tlsan/check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int resolve(const char *nm, struct access *x)
{
    memset(x, 0, sizeof *x);
    x->name = nm;
    struct name *n = nm ? engine_name(nm, false) : NULL;
    struct tensor *t = n ? n->tensor : NULL;
    if (!t || (!t->is_view && !t->arena))
        return x->status = RESOLVE_UNKNOWN;
    x->named = t;
    if (t->is_view) {
        struct tensor *r = t->root;
        x->root = r;
        if (r->gen != t->root_gen)
            return x->status = RESOLVE_STALE_VIEW;
        if (!r->bound)
            return x->status = RESOLVE_RELEASED;
        uint64_t lo = r->off + (t->view_offset < r->size ? t->view_offset : r->size);
        uint64_t end = r->off + r->size;
        x->lo = lo;
        x->hi = t->size < end - lo ? lo + t->size : end;
    } else {
        x->root = t;
        if (!t->bound)
            return x->status = RESOLVE_RELEASED;
        x->lo = t->off;
        x->hi = t->off + t->size;
    }
    x->gen = x->root->gen;
    x->arena = x->root->arena;
    x->bind_stack = x->root->bind_stack;
    return x->status = RESOLVE_OK;
}

/* Op `op` accessed x, whose storage root was released (or, through a view, released and
 * bound again). */
static void use_after_release_found(struct work *w, const struct access *x, struct op *op,
                                    enum finding_moment moment)
{
    /* Once per tenant and op: a loop running the op again says nothing new. */
    if (x->root->released_reader_op == op->name)
        return;
    x->root->released_reader_op = op->name;
    struct finding *f = finding_alloc(w);
    if (!f)
        return;
    const struct tensor *root = x->root;
    struct use_after_release *v = finding_use_after_release(
        f, tensor_as_bound(root), arena_name_of(root), root->release_stack, moment,
        (struct finding_call){op->name, op->stack});
    v->view = x->named != x->root ? x->name : NULL;
    v->root_rebound = x->status == RESOLVE_STALE_VIEW;
}

/* Op `op` reads x, bytes of which no op wrote since its root's bind. Once per tenant: the
 * first reader is the one to name, the others read the same unwritten bytes. */
static void read_before_write_found(struct work *w, const struct access *x, const struct op *op)
{
    x->root->read_before_write_reported = true;
    struct finding *f = finding_alloc(w);
    if (!f)
        return;
    struct read_before_write *v =
        finding_read_before_write(f, tensor_as_bound(x->root), arena_name_of(x->root),
                                  (struct finding_call){op->name, op->stack});
    v->view = x->named != x->root ? x->name : NULL;
    v->lo = x->lo;
    v->hi = x->hi;
}

static bool op_writes(const struct op *op, const struct tensor *root)
{
    for (size_t i = 0; i < op->n_writes; i++)
        if (op->writes[i].status == RESOLVE_OK && op->writes[i].root == root)
            return true;
    return false;
}

static bool op_inplace_in(const struct op *op, const struct tensor *root)
{
    for (size_t i = 0; i < op->n_inplace; i++)
        if (op->inplace_inputs[i] == root)
            return true;
    return false;
}

/* checksum=all: a write beginning over bytes that other live roots share moves their epoch
 * too, so that a verify computed outside the lock meanwhile is dropped (op_end's verify of
 * every live root would otherwise see an in-place output's bytes change under its input). */
static void sharers_move(const struct access *x)
{
    struct arena *a = x->arena;
    for (size_t i = 0; i < a->n_live; i++) {
        struct tensor *o = a->live[i];
        if (o != x->root && ranges_overlap(o->off, o->off + o->size, x->lo, x->hi))
            o->epoch++;
    }
}

uint64_t tlsan_rt_op_begin(const tlsan_op_info *info)
{
    if (!engine_active() || !info)
        return 0;
    uint32_t stack = depot_capture(1);
    size_t nr = info->reads ? info->n_reads : 0, nw = info->writes ? info->n_writes : 0;
    size_t nip = info->inplace ? info->n_inplace : 0;
    struct work w = WORK_INIT(w);

    engine_lock();
    struct op *op = g_engine.free_ops;
    if (op)
        g_engine.free_ops = op->next;
    else
        op = calloc(1, sizeof *op);
    if (!op ||
        !engine_grow((void **)&op->accesses, &op->cap_accesses, nr + nw + 1,
                     sizeof *op->accesses) ||
        !engine_grow((void **)&op->inplace_inputs, &op->cap_inplace, nip + 1,
                     sizeof *op->inplace_inputs)) {
        if (op) {
            op->next = g_engine.free_ops;
            g_engine.free_ops = op;
        }
        engine_unlock();
        return 0;
    }
    op->reads = op->accesses;
    op->writes = op->accesses + nr;
    op->n_reads = op->n_writes = op->n_inplace = 0;
    op->stack = stack;
    op->stream = info->stream;
    op->thread = pthread_self();
    op->id = ++g_engine.next_op;
    op->name = engine_intern(info->name);
    trace_op(op->id, op->name, info->stream, info->reads, nr, info->writes, nw, info->inplace, nip,
             stack);
    for (size_t i = 0; i < nip; i++) {
        struct access x;
        if (info->inplace[2 * i + 1] && resolve(info->inplace[2 * i + 1], &x) == RESOLVE_OK)
            op->inplace_inputs[op->n_inplace++] = x.root;
    }
    for (size_t i = 0; i < nw; i++) {
        struct access *x = &op->writes[op->n_writes];
        if (!info->writes[i])
            continue;
        int st = resolve(info->writes[i], x);
        op->n_writes++;
        if (st == RESOLVE_UNKNOWN)
            usage_warning("op '%s' writes '%s', which was never bound; ignored", op->name,
                          info->writes[i]);
        else if (st != RESOLVE_OK)
            use_after_release_found(&w, x, op, MOMENT_WRITE);
    }
    for (size_t i = 0; i < nr; i++) {
        struct access *x = &op->reads[op->n_reads];
        if (!info->reads[i])
            continue;
        int st = resolve(info->reads[i], x);
        op->n_reads++;
        if (st == RESOLVE_UNKNOWN) {
            usage_warning("op '%s' reads '%s', which was never bound; ignored", op->name,
                          info->reads[i]);
            continue;
        }
        if (st != RESOLVE_OK) {
            use_after_release_found(&w, x, op, MOMENT_READ);
            continue;
        }
        struct tensor *t = x->root;
        if (t->clobber != CLOBBER_NONE) {
            if (!t->clobber_reported) {
                t->clobber_reported = true;
                live_corruption_new(&w, t, MOMENT_READ, (struct finding_call){op->name, stack},
                                    x->named != t ? x->name : NULL, 0, 0);
            }
            continue;
        }
        if (!t->read_before_write_reported && tensor_has_unwritten(t, x->lo, x->hi))
            read_before_write_found(&w, x, op);
        bool dup = false;
        for (size_t k = 0; k + 1 < op->n_reads; k++)
            dup |= op->reads[k].status == RESOLVE_OK && op->reads[k].root == t;
        if (!dup && t->writers == 0 && hash_wanted(t))
            job_add(&w, t, t->has_hash, MOMENT_READ, op->name, stack,
                    x->named != t ? x->name : NULL);
    }
    /* Its writes start now: other threads' hashes of these roots are void from here on. */
    for (size_t i = 0; i < op->n_writes; i++) {
        struct access *x = &op->writes[i];
        if (x->status != RESOLVE_OK)
            continue;
        struct tensor *t = x->root;
        t->writers++;
        t->epoch++;
        t->has_hash = false;
        if (shim_opts()->checksum == SHIM_CHECKSUM_ALL)
            sharers_move(x);
        tensor_written(t, x->lo, x->hi); /* after the reads: an op reads before it writes */
        if (x->lo == t->off && x->hi == t->off + t->size) {
            t->clobber = CLOBBER_NONE; /* rewritten whole: its old value no longer matters */
            t->clobber_reported = false;
        }
    }
    op->next = g_engine.ops;
    g_engine.ops = op;
    jobs_seal(&w);
    engine_unlock();

    if (w.n_jobs) {
        jobs_run(&w);
        engine_lock();
        /* This op's own writes moved the epoch of what it also writes; it has not run yet. */
        for (size_t i = 0; i < w.n_jobs; i++) {
            struct job *j = &w.jobs[i];
            if (j->tensor->gen == j->gen && op_writes(op, j->tensor) &&
                j->tensor->epoch == j->epoch) {
                if (j->verify && j->got != j->expect && j->tensor->clobber == CLOBBER_NONE)
                    live_corruption_new(&w, j->tensor, MOMENT_READ,
                                        (struct finding_call){op->name, stack}, NULL, j->expect,
                                        j->got);
                j->gen = 0; /* handled */
            }
        }
        jobs_apply(&w);
        engine_unlock();
    }
    uint64_t id = op->id;
    work_done(&w);
    return id;
}

/* The i-th of the op's accesses, its writes first (a finding then names the write of an op
 * that reads and writes a tensor), for i below n_writes + n_reads. */
static struct access *op_access(struct op *op, size_t i, bool *is_write)
{
    *is_write = i < op->n_writes;
    return *is_write ? &op->writes[i] : &op->reads[i - op->n_writes];
}

static bool accesses_tenant(const struct access *x, const struct tensor *t)
{
    return x->status == RESOLVE_OK && x->root == t && x->gen == t->gen;
}

size_t ops_in_flight_release(struct work *w, const struct tensor *t)
{
    pthread_t self = pthread_self();
    size_t n_reported = 0;
    for (struct op *op = g_engine.ops; op; op = op->next) {
        struct access *first = NULL;
        bool first_writes = false;
        /* The op's own thread releasing it is the op's program order, not a race. */
        bool race = !pthread_equal(op->thread, self);
        for (size_t i = 0; i < op->n_writes + op->n_reads; i++) {
            bool is_write;
            struct access *x = op_access(op, i, &is_write);
            if (!accesses_tenant(x, t))
                continue;
            x->release_stack = t->release_stack; /* for a bind over its bytes later */
            x->in_flight_reported |= race;
            if (!first) {
                first = x;
                first_writes = is_write;
            }
        }
        if (!first || !race)
            continue;
        n_reported++;
        struct finding *f = finding_alloc(w);
        if (!f)
            continue;
        struct use_after_release *v = finding_use_after_release(
            f, tensor_as_bound(t), arena_name_of(t), t->release_stack,
            first_writes ? MOMENT_WRITE : MOMENT_READ, (struct finding_call){op->name, op->stack});
        v->view = first->named != t ? first->name : NULL;
        v->in_flight = true;
        v->stream = op->stream;
    }
    return n_reported;
}

void ops_in_flight_bind(struct work *w, const struct tensor *u)
{
    pthread_t self = pthread_self();
    uint64_t lo = u->off, hi = u->off + u->size;
    for (struct op *op = g_engine.ops; op; op = op->next) {
        if (pthread_equal(op->thread, self))
            continue;
        for (size_t i = 0; i < op->n_writes + op->n_reads; i++) {
            bool is_write;
            struct access *x = op_access(op, i, &is_write);
            const struct tensor *old = x->root;
            /* A tenant still live is not reused (sharing its bytes is the clobber check's). */
            if (x->status != RESOLVE_OK || x->in_flight_reported || x->arena != u->arena ||
                (old->bound && old->gen == x->gen) || !ranges_overlap(x->lo, x->hi, lo, hi))
                continue;
            x->in_flight_reported = true;
            struct finding *f = finding_alloc(w);
            if (!f)
                continue;
            struct unordered_reuse *v = finding_unordered_reuse(
                f, (struct finding_tensor){old->name, x->bind_stack, x->lo, x->hi},
                tensor_as_bound(u), x->arena->name, is_write ? MOMENT_WRITE : MOMENT_READ,
                (struct finding_call){op->name, op->stack}, op->stream);
            v->old_release_stack = x->release_stack;
            v->view = x->named != old ? x->name : NULL;
        }
    }
}

/* op_end for one written root: clobber marks, the bytes past its end, the hash job. */
static void end_write(struct work *w, struct op *op, struct access *x, bool first)
{
    struct tensor *t = x->root;
    struct arena *a = t->arena;
    if (t->writers > 0)
        t->writers--;
    t->last_op = op->name;
    t->last_op_stack = op->stack;
    for (size_t i = 0; i < a->n_live; i++) {
        struct tensor *o = a->live[i];
        if (o == t || !ranges_overlap(o->off, o->off + o->size, x->lo, x->hi) || op_writes(op, o))
            continue;
        int kind = op_inplace_in(op, o) ? CLOBBER_INPLACE : CLOBBER_WRITE;
        if (o->clobber != CLOBBER_NONE && !o->clobber_reported)
            continue; /* keep the first clobber until it is reported */
        o->clobber = kind;
        o->clobber_reported = false;
        o->clobber_by = t->name;
        o->clobber_op = op->name;
        o->clobber_op_stack = op->stack;
        o->clobber_by_bind_stack = t->bind_stack;
        o->clobber_lo = x->lo;
        o->clobber_hi = x->hi;
        o->has_hash = false;
        o->epoch++;
    }
    if (!first)
        return;
    /* The bytes just past the root that hold a known sentinel. */
    uint64_t end = t->off + t->size;
    uint64_t stop = a->size - end < OVERFLOW_CHECK ? a->size : end + OVERFLOW_CHECK;
    bool broken = false;
    for (size_t i = sentinel_ranges_find(a, end);
         !broken && i < a->n_sentinel && a->sentinel[i].lo < stop; i++) {
        uint64_t s = a->sentinel[i].lo > end ? a->sentinel[i].lo : end;
        uint64_t e = a->sentinel[i].hi < stop ? a->sentinel[i].hi : stop;
        size_t at = sentinel_find_change((const void *)(a->base + s), e - s);
        if (at == e - s)
            continue;
        broken = true;
        struct finding *f = finding_alloc(w);
        if (!f)
            break;
        struct finding_bytes bytes;
        capture_bytes(&bytes, a, s + at, e - (s + at));
        finding_slot_overflow(f, tensor_as_bound(t), a->name,
                              (struct finding_call){op->name, op->stack}, &bytes);
    }
    if (broken)
        sentinel_ranges_cut(a, end,
                            stop); /* reported once: not a stale-write again at the next bind */
}

/* Whether an op in flight writes bytes of root t (through another root sharing them, such
 * as an in-place output over its input): they may change until that op ends. Lock held. */
static bool written_in_flight(const struct tensor *t)
{
    for (const struct op *o = g_engine.ops; o; o = o->next)
        for (size_t i = 0; i < o->n_writes; i++) {
            const struct access *x = &o->writes[i];
            if (x->status == RESOLVE_OK && x->arena == t->arena &&
                ranges_overlap(x->lo, x->hi, t->off, t->off + t->size))
                return true;
        }
    return false;
}

/* checksum=all: queues a verify of every live root of every arena that holds a hash and that
 * no op in flight writes (the op's own writes are hashed anew), so that bytes changed by no
 * declared write are found at the end of the op that ran when they changed. */
static void verify_live_at_end(struct work *w, const struct op *op)
{
    for (struct arena *a = g_engine.arenas; a; a = a->next) {
        for (size_t i = 0; !a->dead && i < a->n_live; i++) {
            struct tensor *t = a->live[i];
            if (t->has_hash && t->writers == 0 && t->clobber == CLOBBER_NONE && !op_writes(op, t) &&
                !written_in_flight(t))
                job_add(w, t, true, MOMENT_OP_END, op->name, op->stack, NULL);
        }
    }
}

/* The findings of op_end's verify: the ended op's stream and the ops still in flight, which
 * ran with it. Lock held. */
static void name_ops_in_flight(struct work *w, int stream)
{
    for (struct finding *f = w->findings; f; f = f->next) {
        struct live_corruption *v = &f->live_corruption;
        if (f->variant != FINDING_LIVE_CORRUPTION || v->moment != MOMENT_OP_END)
            continue;
        v->by_stream = stream;
        for (const struct op *o = g_engine.ops; o && v->n_in_flight < FINDING_MAX_TENSORS;
             o = o->next)
            v->in_flight[v->n_in_flight++] = (struct finding_op){{o->name, o->stack}, o->stream};
    }
}

void tlsan_rt_op_end(uint64_t op_token)
{
    if (!engine_active() || !op_token)
        return;
    struct work w = WORK_INIT(w);
    engine_lock();
    struct op **pp = &g_engine.ops;
    while (*pp && (*pp)->id != op_token)
        pp = &(*pp)->next;
    struct op *op = *pp;
    if (!op) {
        engine_unlock();
        usage_warning("tlsan_op_end: token %llu is not an op in flight; ignored", (ull)op_token);
        return;
    }
    *pp = op->next;
    trace_op_end(op->id);
    for (size_t i = 0; i < op->n_writes; i++) {
        struct access *x = &op->writes[i];
        if (x->status != RESOLVE_OK || x->root->gen != x->gen || !x->root->bound)
            continue;
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= !(op->writes[k].status == RESOLVE_OK && op->writes[k].root == x->root);
        end_write(&w, op, x, first);
    }
    for (size_t i = 0; i < op->n_writes; i++) {
        struct access *x = &op->writes[i];
        struct tensor *t = x->root;
        if (x->status != RESOLVE_OK || t->gen != x->gen || !t->bound || t->writers != 0)
            continue;
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= !(op->writes[k].status == RESOLVE_OK && op->writes[k].root == t);
        if (first && hash_wanted(t))
            job_add(&w, t, false, MOMENT_WRITE, op->name, op->stack, NULL);
    }
    if (shim_opts()->checksum == SHIM_CHECKSUM_ALL)
        verify_live_at_end(&w, op);
    jobs_seal(&w);
    int stream = op->stream;
    op->next = g_engine.free_ops; /* nothing below needs it: names are interned */
    g_engine.free_ops = op;
    engine_unlock();
    if (w.n_jobs) {
        jobs_run(&w);
        engine_lock();
        jobs_apply(&w);
        name_ops_in_flight(&w, stream);
        engine_unlock();
    }
    work_done(&w);
}
