/* order: on-demand happens-before queries. */
#include "order.h"

#include <stdlib.h>
#include <string.h>

void order_free(order_ctx *oc)
{
    free(oc->prev_same_stream);
    free(oc->prev_record);
    free(oc->last_record_before);
    free(oc->prev_sync);
    free(oc->visited);
    free(oc->stack);
    free(oc->vc);
    free(oc->seq);
    memset(oc, 0, sizeof *oc);
}

static int build_clocks(order_ctx *oc);

int order_init(order_ctx *oc, const tlsan_plan *p, const access_index *ix)
{
    memset(oc, 0, sizeof *oc);
    oc->plan = p;
    oc->ix = ix;
    oc->total = p->schedule == TLSAN_SCHEDULE_SEQUENTIAL && p->n_streams <= 1;
    if (oc->total)
        return 0;
    size_t n = p->n_ops ? p->n_ops : 1;
    size_t n_str = p->strings.n ? p->strings.n : 1;
    uint32_t *last_of_stream = malloc(n * sizeof *last_of_stream);
    uint32_t *last_record_of_event = malloc(n_str * sizeof *last_record_of_event);
    oc->prev_same_stream = malloc(n * sizeof(uint32_t));
    oc->prev_record = malloc(n * sizeof(uint32_t));
    oc->last_record_before = malloc(n * sizeof(uint32_t));
    oc->prev_sync = malloc(n * sizeof(uint32_t));
    oc->visited = calloc(n, sizeof(uint32_t));
    oc->stack = malloc(n * sizeof(uint32_t));
    if (!last_of_stream || !last_record_of_event || !oc->prev_same_stream || !oc->prev_record ||
        !oc->last_record_before || !oc->prev_sync || !oc->visited || !oc->stack) {
        free(last_of_stream);
        free(last_record_of_event);
        order_free(oc);
        return -1;
    }
    for (size_t s = 0; s < n; s++)
        last_of_stream[s] = NO_INDEX;
    for (size_t s = 0; s < n_str; s++)
        last_record_of_event[s] = NO_INDEX;
    uint32_t last_sync = NO_INDEX;
    for (uint32_t o = 0; o < p->n_ops; o++) {
        const op_rec *r = &p->ops[o];
        uint32_t s = p->op_stream[o];
        oc->prev_same_stream[o] = last_of_stream[s];
        last_of_stream[s] = o;
        oc->prev_sync[o] = last_sync;
        oc->prev_record[o] = oc->last_record_before[o] = NO_INDEX;
        if (r->sync == TLSAN_SYNC_RECORD) {
            oc->prev_record[o] = last_record_of_event[r->event];
            last_record_of_event[r->event] = o;
        } else if (r->sync == TLSAN_SYNC_WAIT) {
            oc->last_record_before[o] = last_record_of_event[r->event];
        } else if (r->sync == TLSAN_SYNC_ALL) {
            last_sync = o;
        }
    }
    free(last_of_stream);
    free(last_record_of_event);
    oc->gen = 1;
    return build_clocks(oc) == 0 ? 0 : (order_free(oc), -1);
}

#define MAX_CLOCK_COUNTERS (1u << 24)

static void join(uint32_t *dst, const uint32_t *src, uint32_t n)
{
    for (uint32_t s = 0; s < n; s++)
        if (src[s] > dst[s])
            dst[s] = src[s];
}

/* Vector clocks for a sequential plan where every op runs (see order.h). Leaves oc->vc NULL
 * when they do not apply, so queries walk the graph instead. */
static int build_clocks(order_ctx *oc)
{
    const tlsan_plan *p = oc->plan;
    uint32_t ns = p->n_streams, n = (uint32_t)p->n_ops;
    if (p->schedule != TLSAN_SCHEDULE_SEQUENTIAL || p->n_ifs > 0 || n == 0 ||
        (uint64_t)n * ns > MAX_CLOCK_COUNTERS)
        return 0;
    oc->vc = calloc((size_t)n * ns, sizeof *oc->vc);
    oc->seq = malloc((size_t)n * sizeof *oc->seq);
    uint32_t *all = calloc(ns, sizeof *all); /* join of every op so far, for sync */
    uint32_t *count = calloc(ns, sizeof *count);
    if (!oc->vc || !oc->seq || !all || !count) {
        free(all);
        free(count);
        return -1;
    }
    for (uint32_t o = 0; o < n; o++) {
        const op_rec *r = &p->ops[o];
        uint32_t *v = oc->vc + (size_t)o * ns;
        uint32_t s = p->op_stream[o];
        if (oc->prev_same_stream[o] != NO_INDEX)
            join(v, oc->vc + (size_t)oc->prev_same_stream[o] * ns, ns);
        if (oc->prev_sync[o] != NO_INDEX)
            join(v, oc->vc + (size_t)oc->prev_sync[o] * ns, ns);
        if (r->sync == TLSAN_SYNC_WAIT && oc->last_record_before[o] != NO_INDEX)
            join(v, oc->vc + (size_t)oc->last_record_before[o] * ns, ns);
        if (r->sync == TLSAN_SYNC_ALL)
            join(v, all, ns);
        for (uint32_t k = 0; k < r->n_after; k++)
            join(v, oc->vc + (size_t)p->id_pool.v[r->after_start + k] * ns, ns);
        oc->seq[o] = v[s] = ++count[s];
        join(all, v, ns);
    }
    free(all);
    free(count);
    return 0;
}

typedef struct walk {
    order_ctx *oc;
    const path_state *ps; /* the path judged; NULL when judging every path at once */
    uint32_t lo;
    size_t top;
} walk;

/* Whether op y may serve as a link of a happens-before path: on one path, when it runs;
 * for every path at once (ps NULL), only when it has no branch condition. */
static bool expands(const walk *w, uint32_t y)
{
    return w->ps ? op_runs(w->ps, y) : w->oc->plan->ops[y].n_cond == 0;
}

/* Records that y happens before an op already reached. On one path y must run; for every
 * path at once, a conditional y is only marked (the edge holds whenever y runs, which is
 * all an access of the earlier tenant needs) and not walked through. */
static void reach(walk *w, uint32_t y)
{
    if (y == NO_INDEX || y < w->lo || w->oc->visited[y] == w->oc->gen)
        return;
    bool through = expands(w, y);
    if (!through && w->ps)
        return;
    w->oc->visited[y] = w->oc->gen;
    if (through)
        w->oc->stack[w->top++] = y;
}

/* Follows a "previous" chain (program order, syncs) to its first op that links on the
 * path, marking the conditional ones passed on the way when judging every path. */
static uint32_t first_running(walk *w, const uint32_t *prev, uint32_t y)
{
    while (y != NO_INDEX && y >= w->lo && !expands(w, y)) {
        if (!w->ps)
            reach(w, y);
        y = prev[y];
    }
    return y;
}

/* Position of op x in a root's access list (x is known to access the root). */
static uint32_t find_access(const access_index *ix, uint32_t root, uint32_t x)
{
    uint32_t lo = ix->start[root], hi = ix->start[root + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->op[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void dataflow_preds(walk *w, uint32_t x)
{
    const tlsan_plan *p = w->oc->plan;
    const access_index *ix = w->oc->ix;
    const op_rec *o = &p->ops[x];
    for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
        uint32_t t = k < o->n_reads ? p->id_pool.v[o->reads_start + k]
                                    : p->id_pool.v[o->writes_start + k - o->n_reads];
        uint32_t root = p->tensors[t].root;
        uint32_t pos = find_access(ix, root, x);
        bool writes = (ix->rw[pos] & ACC_WRITE) != 0;
        /* write -> later read/write, read -> later write: a write waits for the latest write
         * and the reads since; a read waits for the latest write. Earlier ones follow by
         * transitivity. */
        for (uint32_t a = pos; a-- > ix->start[root];) {
            uint32_t y = ix->op[a];
            if (y < w->lo)
                break;
            if ((ix->rw[a] & ACC_COND) && !expands(w, y)) {
                /* every path at once: a conditional access links when it runs, but it
                 * may not run, so keep looking for an unconditional write */
                if (!w->ps && (writes || (ix->rw[a] & ACC_WRITE)))
                    reach(w, y);
                continue;
            }
            if (ix->rw[a] & ACC_WRITE) {
                reach(w, y);
                break;
            }
            if (writes)
                reach(w, y);
        }
    }
}

static void sequential_preds(walk *w, uint32_t x)
{
    const order_ctx *oc = w->oc;
    const op_rec *o = &oc->plan->ops[x];
    reach(w, first_running(w, oc->prev_same_stream, oc->prev_same_stream[x]));
    if (o->sync != TLSAN_SYNC_WAIT)
        return;
    if (w->ps) {
        reach(w, first_running(w, oc->prev_record, oc->last_record_before[x]));
    } else {
        /* Every path at once: only the latest record is sure to be the one paired with
         * this wait whenever it runs; an earlier one may be displaced by it. */
        reach(w, oc->last_record_before[x]);
    }
}

static bool walk_back(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                      uint32_t *bad_op);

bool order_forces(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                  uint32_t *bad_op)
{
    const tlsan_plan *p = oc->plan;
    const access_index *ix = oc->ix;
    uint32_t a0 = ix->start[early], a1 = ix->start[early + 1];
    if (oc->total || a0 == a1)
        return true;
    if (oc->vc) {
        const uint32_t *v = oc->vc + (size_t)late_first * p->n_streams;
        for (uint32_t a = a0; a < a1 && ix->op[a] < late_first; a++) {
            uint32_t y = ix->op[a];
            if (v[p->op_stream[y]] < oc->seq[y]) {
                *bad_op = y;
                return false;
            }
        }
        return true;
    }
    return walk_back(oc, ps, early, late_first, bad_op);
}

/* The on-demand walk behind order_forces() and order_forces_all_paths(). */
static bool walk_back(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                      uint32_t *bad_op)
{
    const tlsan_plan *p = oc->plan;
    const access_index *ix = oc->ix;
    uint32_t a0 = ix->start[early], a1 = ix->start[early + 1];
    if (++oc->gen == 0) {
        memset(oc->visited, 0, (p->n_ops ? p->n_ops : 1) * sizeof *oc->visited);
        oc->gen = 1;
    }
    walk w = {oc, ps, ix->op[a0], 0};
    oc->visited[late_first] = oc->gen;
    oc->stack[w.top++] = late_first;
    while (w.top > 0) {
        uint32_t x = oc->stack[--w.top];
        const op_rec *o = &p->ops[x];
        if (p->schedule == TLSAN_SCHEDULE_DATAFLOW)
            dataflow_preds(&w, x);
        else
            sequential_preds(&w, x);
        for (uint32_t k = 0; k < o->n_after; k++)
            reach(&w, p->id_pool.v[o->after_start + k]);
        /* sync joins everything: the latest sync before x precedes it, and a sync is
         * preceded by every op since the sync before it. */
        uint32_t s = first_running(&w, oc->prev_sync, oc->prev_sync[x]);
        reach(&w, s);
        if (o->sync == TLSAN_SYNC_ALL) {
            uint32_t from = s == NO_INDEX || s < w.lo ? w.lo : s;
            for (uint32_t y = x; y-- > from;)
                reach(&w, y);
        }
    }
    for (uint32_t a = a0; a < a1; a++) {
        uint32_t y = ix->op[a];
        if (y >= late_first)
            break;
        if (ps && (ix->rw[a] & ACC_COND) && !op_runs(ps, y))
            continue;
        if (oc->visited[y] != oc->gen) {
            *bad_op = y;
            return false;
        }
    }
    return true;
}

bool order_forces_all_paths(order_ctx *oc, uint32_t early, uint32_t late_first, uint32_t *bad_op)
{
    if (oc->total || oc->ix->start[early] == oc->ix->start[early + 1])
        return true;
    return walk_back(oc, NULL, early, late_first, bad_op);
}
