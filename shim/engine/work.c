/* work.c - findings collected under the lock and reported after it; hash jobs computed outside it.
 */
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

/* A zeroed finding on w's list, for a constructor of engine/finding.h. */
struct finding *finding_alloc(struct work *w)
{
    struct finding *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    *w->tail = f;
    w->tail = &f->next;
    return f;
}

/* Root t as a report names it, with its bind stack. */
struct finding_tensor tensor_as_bound(const struct tensor *t)
{
    return (struct finding_tensor){t->name, t->bind_stack, t->off, t->off + t->size};
}

const char *arena_name_of(const struct tensor *t)
{
    return t->arena ? t->arena->name : "?";
}

/* The one constructor of a live-corruption finding in the engine: root t's bytes were found
 * changed at `moment` (by: the op that read it, or the release / destroy call; via: the view
 * it was read through). Its cause is t's clobber mark (another root's write over it, or an
 * in-place consumer), else a checksum that went from `expect` to `got`. */
void live_corruption_new(struct work *w, const struct tensor *t, enum finding_moment moment,
                         struct finding_call by, const char *via, uint64_t expect, uint64_t got)
{
    struct finding *f = finding_alloc(w);
    if (!f)
        return;
    enum corruption_cause cause = t->clobber == CLOBBER_INPLACE ? CORRUPTION_CONSUMED_IN_PLACE
                                  : t->clobber == CLOBBER_WRITE ? CORRUPTION_OVERWRITTEN
                                                                : CORRUPTION_CHECKSUM;
    struct live_corruption *v =
        finding_live_corruption(f, cause, tensor_as_bound(t), arena_name_of(t), moment, by);
    v->via = via;
    v->last_writer = (struct finding_call){t->last_op, t->last_op_stack};
    if (cause == CORRUPTION_CHECKSUM) {
        v->checksum_before = expect;
        v->checksum_after = got;
    } else {
        v->overwriter = (struct finding_tensor){t->clobber_by, t->clobber_by_bind_stack,
                                                t->clobber_lo, t->clobber_hi};
        v->overwriting_op = (struct finding_call){t->clobber_op, t->clobber_op_stack};
    }
    /* The other live roots sharing t's bytes. */
    struct arena *a = t->arena;
    for (size_t i = 0; a && i < a->n_live && v->n_sharers < FINDING_MAX_TENSORS; i++) {
        const struct tensor *o = a->live[i];
        if (o != t && ranges_overlap(o->off, o->off + o->size, t->off, t->off + t->size))
            v->sharers[v->n_sharers++] = tensor_as_bound(o);
    }
}

/* The sentinel bytes from arena offset `at` on (at most `avail`) as found and as expected. */
void capture_bytes(struct finding_bytes *b, const struct arena *a, uint64_t at, uint64_t avail)
{
    b->arena_base = a->base;
    b->offset = at;
    uint64_t n_show = avail < FINDING_SHOWN_BYTES ? avail : FINDING_SHOWN_BYTES;
    const unsigned char *q = (const unsigned char *)(a->base + at);
    for (uint64_t k = 0; k < n_show; k++) {
        b->found[k] = q[k];
        b->expected[k] = sentinel_byte((uintptr_t)(q + k));
    }
    b->n_shown = n_show;
}

static uint64_t mix(uint64_t h, const char *s, uint64_t v)
{
    h = (h ^ (s ? hash_str(s) : 0x9e3779b97f4a7c15ull)) * 0x100000001b3ull;
    return (h ^ v) * 0xff51afd7ed558ccdull;
}

/* What makes two findings the same: an engine that runs its graph again, or a loop that
 * runs an op again, repeats the bug with the same names. */
static uint64_t finding_key(const struct finding *f)
{
    uint64_t h = (uint64_t)f->variant + 1;
    switch (f->variant) {
    case FINDING_USE_AFTER_RELEASE: {
        const struct use_after_release *v = &f->use_after_release;
        h = mix(h, v->root.name, (uint64_t)v->moment);
        h = mix(h, v->view, 0);
        h = mix(h, v->op.op, (uint64_t)v->in_flight);
        break;
    }
    case FINDING_LIVE_CORRUPTION: {
        const struct live_corruption *v = &f->live_corruption;
        h = mix(h, v->victim.name, (uint64_t)v->cause);
        h = mix(h, v->via, (uint64_t)v->moment);
        h = mix(h, v->by.op, 0);
        if (v->cause == CORRUPTION_CHECKSUM) {
            h = mix(h, v->last_writer.op, 0);
        } else {
            h = mix(h, v->overwriter.name, 0);
            h = mix(h, v->overwriting_op.op, 0);
        }
        break;
    }
    case FINDING_STALE_WRITE: {
        const struct stale_write *v = &f->stale_write;
        h = mix(h, v->new_tenant.name, 0);
        h = mix(h, v->arena, v->bytes.offset);
        h = mix(h, v->n_previous ? v->previous[0].name : NULL, 0);
        break;
    }
    case FINDING_SLOT_OVERFLOW:
        h = mix(h, f->slot_overflow.tensor.name, 0);
        h = mix(h, f->slot_overflow.writer.op, 0);
        break;
    case FINDING_READ_BEFORE_WRITE:
        h = mix(h, f->read_before_write.root.name, 0);
        h = mix(h, f->read_before_write.view, 0);
        h = mix(h, f->read_before_write.op.op, 0);
        break;
    case FINDING_UNORDERED_REUSE: {
        const struct unordered_reuse *v = &f->unordered_reuse;
        h = mix(h, v->old_tenant.name, (uint64_t)v->moment);
        h = mix(h, v->new_tenant.name, 0);
        h = mix(h, v->op.op, 0);
        break;
    }
    }
    return h ? h : 1;
}

/* True the first time a key is seen. Lock held. A set of 64-bit keys: open addressing. */
static bool first_time(uint64_t key)
{
    if ((g_engine.seen_n + 1) * 2 > g_engine.seen_cap) {
        size_t cap = g_engine.seen_cap ? g_engine.seen_cap * 2 : 256;
        uint64_t *n = calloc(cap, sizeof *n);
        if (!n)
            return true;
        for (size_t i = 0; i < g_engine.seen_cap; i++) {
            if (!g_engine.seen[i])
                continue;
            size_t j = g_engine.seen[i] & (cap - 1);
            while (n[j])
                j = (j + 1) & (cap - 1);
            n[j] = g_engine.seen[i];
        }
        free(g_engine.seen);
        g_engine.seen = n;
        g_engine.seen_cap = cap;
    }
    size_t j = key & (g_engine.seen_cap - 1);
    for (; g_engine.seen[j]; j = (j + 1) & (g_engine.seen_cap - 1))
        if (g_engine.seen[j] == key)
            return false;
    g_engine.seen[j] = key;
    g_engine.seen_n++;
    return true;
}

/* Reports the findings (each distinct one once per process), frees the scratch. No lock
 * held: a report symbolizes, and may exit under halt_on_error. */
void work_done(struct work *w)
{
    if (w->findings) {
        engine_lock();
        for (struct finding *f = w->findings; f; f = f->next)
            f->repeated = !first_time(finding_key(f));
        engine_unlock();
    }
    for (struct finding *f = w->findings, *next; f; f = next) {
        next = f->next;
        if (!f->repeated)
            finding_report(f);
        free(f);
    }
    if (w->jobs != w->jobs_in)
        free(w->jobs);
    if (w->ranges != w->ranges_inline)
        free(w->ranges);
}

void job_add(struct work *w, struct tensor *t, bool verify, enum finding_moment moment,
             const char *op, uint32_t op_stack, const char *via)
{
    uintptr_t p = t->arena->base + t->off;
    WORK_PUSH(w, jobs, n_jobs, cap_jobs, jobs_in,
              (struct job){t, t->gen, 0, (const unsigned char *)p, t->size, verify, t->hash, 0,
                           moment, op, via, op_stack});
}

/* Takes each job's epoch: call last, under the lock, after every state change. */
void jobs_seal(struct work *w)
{
    for (size_t i = 0; i < w->n_jobs; i++)
        w->jobs[i].epoch = w->jobs[i].tensor->epoch;
}

void jobs_run(struct work *w)
{
    for (size_t i = 0; i < w->n_jobs; i++)
        w->jobs[i].got = checksum_bytes(w->jobs[i].bytes, w->jobs[i].n_bytes);
}

/* Applies the hashes whose tensors did not move meanwhile. Lock held. */
void jobs_apply(struct work *w)
{
    for (size_t i = 0; i < w->n_jobs; i++) {
        struct job *j = &w->jobs[i];
        struct tensor *t = j->tensor;
        if (t->gen != j->gen || t->epoch != j->epoch)
            continue;
        bool store = t->bound && t->writers == 0;
        if (j->verify && j->got != j->expect && t->clobber == CLOBBER_NONE) {
            bool ended = j->moment == MOMENT_RELEASE || j->moment == MOMENT_ARENA_DESTROY;
            struct finding_call by = {j->op, ended ? t->release_stack : j->op_stack};
            live_corruption_new(w, t, j->moment, by, j->via, j->expect, j->got);
        }
        if (store) {
            t->hash = j->got;
            t->has_hash = true;
        }
    }
}

/* A clobbered root that no op reads again was dead, unless it is a graph output: the host
 * reads those after the run. Lock held; t->release_stack set. */
void clobbered_output(struct work *w, struct tensor *t, enum finding_moment moment)
{
    if (!(t->flags & TLSAN_BIND_OUTPUT) || t->clobber == CLOBBER_NONE || t->clobber_reported)
        return;
    t->clobber_reported = true;
    live_corruption_new(w, t, moment, (struct finding_call){NULL, t->release_stack}, NULL, 0, 0);
}
