/* order: on-demand happens-before queries. */
#include "check/order.h"

#include <stdlib.h>
#include <string.h>

static void free_walk_tables(order_ctx *oc)
{
    free(oc->prev_same_stream);
    free(oc->event_link);
    free(oc->prev_sync);
    free(oc->visited);
    free(oc->stack);
    free(oc->prev_write);
    oc->prev_same_stream = oc->event_link = oc->prev_sync = oc->visited = oc->stack = NULL;
    oc->prev_write = NULL;
}

void order_free(order_ctx *oc)
{
    free_walk_tables(oc);
    free(oc->vc);
    free(oc->chain_own);
    free(oc->breaks_prefix);
    memset(oc, 0, sizeof *oc);
}

/* Position of op x in its chain (counting from 1). */
static inline uint32_t seq_of(const order_ctx *oc, uint32_t x)
{
    return oc->vc[(size_t)x * oc->width + oc->chain[x]];
}

static inline uint32_t prev_sync_of(const order_ctx *oc, uint32_t x)
{
    return oc->prev_sync ? oc->prev_sync[x] : NO_INDEX;
}

static int build_clocks(order_ctx *oc);

/* Which conditional ops can change the happens-before relation among the ops that run when
 * they do not run. Under "sequential", a conditional op that synchronises nothing (no
 * record, wait or sync), has no `after` and is no op's `after` target only lies on its
 * stream's program order, which stays transitive without it: on every path the order among
 * the ops that run is the order where every op runs, restricted to them. Any other
 * conditional op, and under "dataflow" every one (a skipped write hands its readers to an
 * older write), breaks that. */
static int build_breaks(order_ctx *oc)
{
    const tlsan_plan *p = oc->plan;
    size_t n = p->n_ops;
    if (p->n_ifs == 0)
        return 0; /* no conditional op */
    uint8_t *target = calloc(n ? n : 1, 1);
    oc->breaks_prefix = malloc((n + 1) * sizeof *oc->breaks_prefix);
    if (!target || !oc->breaks_prefix) {
        free(target);
        return -1;
    }
    for (size_t o = 0; o < n; o++)
        for (uint32_t k = 0; k < op_x(p, &p->ops[o])->n_after; k++)
            target[p->id_pool.v[op_x(p, &p->ops[o])->after_start + k]] = 1;
    oc->breaks_prefix[0] = 0;
    for (size_t o = 0; o < n; o++) {
        const op_rec *r = &p->ops[o];
        const op_extra *x = op_x(p, r);
        bool neutral = p->schedule == TLSAN_SCHEDULE_SEQUENTIAL && r->sync == TLSAN_SYNC_NONE &&
                       x->n_after == 0 && !target[o];
        oc->breaks_prefix[o + 1] = oc->breaks_prefix[o] + (x->n_cond && !neutral ? 1 : 0);
    }
    free(target);
    if (oc->breaks_prefix[n] == 0) {
        free(oc->breaks_prefix);
        oc->breaks_prefix = NULL;
    }
    return 0;
}

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
    bool any_sync = false;
    for (uint32_t o = 0; o < p->n_ops && !any_sync; o++)
        any_sync = p->ops[o].sync == TLSAN_SYNC_ALL;
    oc->prev_same_stream = malloc(n * sizeof(uint32_t));
    oc->event_link = malloc(n * sizeof(uint32_t));
    oc->prev_sync = any_sync ? malloc(n * sizeof(uint32_t)) : NULL;
    if (!last_of_stream || !last_record_of_event || !oc->prev_same_stream || !oc->event_link ||
        (any_sync && !oc->prev_sync)) {
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
        if (oc->prev_sync)
            oc->prev_sync[o] = last_sync;
        oc->event_link[o] = NO_INDEX;
        if (r->sync == TLSAN_SYNC_RECORD) {
            oc->event_link[o] = last_record_of_event[r->event];
            last_record_of_event[r->event] = o;
        } else if (r->sync == TLSAN_SYNC_WAIT) {
            oc->event_link[o] = last_record_of_event[r->event];
        } else if (r->sync == TLSAN_SYNC_ALL) {
            last_sync = o;
        }
    }
    free(last_of_stream);
    free(last_record_of_event);
    oc->gen = 1;
    if (build_breaks(oc) != 0 || build_clocks(oc) != 0)
        goto nomem;
    if (oc->vc && !oc->breaks_prefix) {
        /* the clocks answer every question: no walk will need the edges */
        free_walk_tables(oc);
        return 0;
    }
    oc->visited = calloc(n, sizeof(uint32_t));
    oc->stack = malloc(n * sizeof(uint32_t));
    if (!oc->visited || !oc->stack)
        goto nomem;
    return 0;
nomem:
    order_free(oc);
    return -1;
}

#define MAX_CLOCK_COUNTERS (1u << 24)

static void join(uint32_t *dst, const uint32_t *src, uint32_t n)
{
    for (uint32_t s = 0; s < n; s++)
        if (src[s] > dst[s])
            dst[s] = src[s];
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

/* Dataflow: for each access, the index of the latest write of the same root at or before
 * it, so that a reader finds the write it waits for without scanning the reads between. */
static int build_prev_write(order_ctx *oc)
{
    const tlsan_plan *p = oc->plan;
    const access_index *ix = oc->ix;
    size_t total = ix->start[p->n_tensors];
    oc->prev_write = malloc((total ? total : 1) * sizeof *oc->prev_write);
    if (!oc->prev_write)
        return -1;
    for (size_t t = 0; t < p->n_tensors; t++) {
        uint32_t w = NO_INDEX;
        for (uint32_t a = ix->start[t]; a < ix->start[t + 1]; a++) {
            if (ix->rw[a] & ACC_WRITE)
                w = a;
            oc->prev_write[a] = w;
        }
    }
    return 0;
}

typedef void (*pred_fn)(order_ctx *oc, uint32_t x, uint32_t pred, void *ctx);

/* Calls fn for each direct happens-before predecessor of op x in a plan where every op
 * runs. Transitive ones may be left out. */
static void direct_preds(order_ctx *oc, uint32_t x, pred_fn fn, void *ctx)
{
    const tlsan_plan *p = oc->plan;
    const access_index *ix = oc->ix;
    const op_rec *o = &p->ops[x];
    if (p->schedule == TLSAN_SCHEDULE_SEQUENTIAL) {
        if (oc->prev_same_stream[x] != NO_INDEX)
            fn(oc, x, oc->prev_same_stream[x], ctx);
        if (o->sync == TLSAN_SYNC_WAIT && oc->event_link[x] != NO_INDEX)
            fn(oc, x, oc->event_link[x], ctx);
    } else {
        for (uint32_t k = 0; k < o->n_reads + o->n_writes; k++) {
            uint32_t t = k < o->n_reads ? p->id_pool.v[o->reads_start + k]
                                        : p->id_pool.v[o->writes_start + k - o->n_reads];
            uint32_t root = p->tensors[t].root, a0 = ix->start[root];
            uint32_t pos = find_access(ix, root, x);
            uint32_t w = pos > a0 ? oc->prev_write[pos - 1] : NO_INDEX;
            if (w != NO_INDEX)
                fn(oc, x, ix->op[w], ctx);
            if (ix->rw[pos] & ACC_WRITE) /* a write also waits for the reads since */
                for (uint32_t a = (w == NO_INDEX ? a0 : w + 1); a < pos; a++)
                    fn(oc, x, ix->op[a], ctx);
        }
    }
    const op_extra *ox = op_x(p, o);
    for (uint32_t k = 0; k < ox->n_after; k++)
        fn(oc, x, p->id_pool.v[ox->after_start + k], ctx);
    uint32_t s = prev_sync_of(oc, x);
    if (s != NO_INDEX)
        fn(oc, x, s, ctx);
    if (o->sync == TLSAN_SYNC_ALL)
        for (uint32_t y = s == NO_INDEX ? 0 : s + 1; y < x; y++)
            fn(oc, x, y, ctx);
}

/* Greedy chains: x extends the chain of a predecessor that is that chain's last op. */
static void extend_chain(order_ctx *oc, uint32_t x, uint32_t pred, void *ctx)
{
    uint32_t *tail = ctx;
    uint32_t c = oc->chain_own[pred];
    if (oc->chain_own[x] == NO_INDEX && tail[c] == pred) {
        oc->chain_own[x] = c;
        tail[c] = x;
    }
}

static void join_pred(order_ctx *oc, uint32_t x, uint32_t pred, void *ctx)
{
    (void)ctx;
    join(oc->vc + (size_t)x * oc->width, oc->vc + (size_t)pred * oc->width, oc->width);
}

/* Vector clocks for a plan where every op runs (see order.h). Leaves oc->vc NULL when they
 * do not apply, so queries walk the graph instead. */
static int build_clocks(order_ctx *oc)
{
    const tlsan_plan *p = oc->plan;
    uint32_t n = (uint32_t)p->n_ops;
    if (p->schedule == TLSAN_SCHEDULE_DATAFLOW && build_prev_write(oc) != 0)
        return -1;
    if (n == 0)
        return 0;
    uint32_t *len = NULL;
    if (p->schedule == TLSAN_SCHEDULE_SEQUENTIAL) {
        oc->chain = p->op_stream;
        oc->width = p->n_streams;
    } else {
        oc->chain_own = malloc((size_t)n * sizeof *oc->chain_own);
        uint32_t *tail = malloc((size_t)n * sizeof *tail); /* per chain: its last op */
        if (!oc->chain_own || !tail) {
            free(tail);
            goto nomem;
        }
        oc->width = 0;
        for (uint32_t x = 0; x < n; x++) {
            oc->chain_own[x] = NO_INDEX;
            direct_preds(oc, x, extend_chain, tail);
            if (oc->chain_own[x] == NO_INDEX) {
                oc->chain_own[x] = oc->width;
                tail[oc->width++] = x;
            }
        }
        free(tail);
        oc->chain = oc->chain_own;
    }
    if ((uint64_t)n * oc->width > MAX_CLOCK_COUNTERS) {
        free(oc->chain_own);
        oc->chain_own = NULL;
        oc->chain = NULL;
        return 0;
    }
    oc->vc = calloc((size_t)n * oc->width, sizeof *oc->vc);
    len = calloc(oc->width, sizeof *len);
    if (!oc->vc || !len)
        goto nomem;
    for (uint32_t x = 0; x < n; x++) {
        direct_preds(oc, x, join_pred, NULL);
        oc->vc[(size_t)x * oc->width + oc->chain[x]] = ++len[oc->chain[x]];
    }
    free(len);
    return 0;
nomem:
    free(len);
    return -1;
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
    return w->ps ? op_runs(w->ps, y) : op_x(w->oc->plan, &w->oc->plan->ops[y])->n_cond == 0;
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
        uint32_t a0 = ix->start[root];
        /* write -> later read/write, read -> later write: a write waits for the latest write
         * and the reads since; a read waits for the latest write. Earlier ones follow by
         * transitivity. A read jumps from write to write instead of passing every read. */
        if (!writes) {
            uint32_t a = pos > a0 ? w->oc->prev_write[pos - 1] : NO_INDEX;
            while (a != NO_INDEX && ix->op[a] >= w->lo) {
                uint32_t y = ix->op[a];
                if (!(ix->rw[a] & ACC_COND) || expands(w, y)) {
                    reach(w, y);
                    break;
                }
                if (!w->ps)
                    reach(w, y); /* links whenever it runs; look further for a sure one */
                a = a > a0 ? w->oc->prev_write[a - 1] : NO_INDEX;
            }
            continue;
        }
        for (uint32_t a = pos; a-- > a0;) {
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
        reach(w, first_running(w, oc->event_link, oc->event_link[x]));
    } else {
        /* Every path at once: only the latest record is sure to be the one paired with
         * this wait whenever it runs; an earlier one may be displaced by it. */
        reach(w, oc->event_link[x]);
    }
}

static bool walk_back(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                      uint32_t *bad_op);

/* The clocks describe the graph where every op runs. A happens-before path between two ops
 * never leaves the steps between them (an edge from before lo cannot lead back to an op at
 * or after lo), so when steps lo..late_first hold no conditional op that breaks the order
 * (build_breaks()), the order among the ops of that range that run on a path is the clocks'
 * order restricted to them, on every path. */
static bool clocks_answer(const order_ctx *oc, uint32_t lo, uint32_t late_first)
{
    return oc->vc &&
           (!oc->breaks_prefix || oc->breaks_prefix[late_first + 1] == oc->breaks_prefix[lo]);
}

/* The clock query: every access of `early` before late_first that runs on the path of ps
 * (every one when ps is NULL: it must be ordered whenever it runs) happens before it. */
static bool clocks_order(const order_ctx *oc, const path_state *ps, uint32_t early,
                         uint32_t late_first, uint32_t *bad_op)
{
    const access_index *ix = oc->ix;
    const uint32_t *v = oc->vc + (size_t)late_first * oc->width;
    for (uint32_t a = ix->start[early]; a < ix->start[early + 1] && ix->op[a] < late_first; a++) {
        uint32_t y = ix->op[a];
        if (ps && (ix->rw[a] & ACC_COND) && !op_runs(ps, y))
            continue;
        if (v[oc->chain[y]] < seq_of(oc, y)) {
            *bad_op = y;
            return false;
        }
    }
    return true;
}

bool order_forces(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                  uint32_t *bad_op)
{
    const access_index *ix = oc->ix;
    uint32_t a0 = ix->start[early], a1 = ix->start[early + 1];
    if (oc->total || a0 == a1)
        return true;
    if (clocks_answer(oc, ix->op[a0], late_first))
        return clocks_order(oc, ps, early, late_first, bad_op);
    return walk_back(oc, ps, early, late_first, bad_op);
}

/* Stamps (oc->memo_gen) every op at or after step lo that happens before op late_first on
 * the path of ps (on every path when ps is NULL), walking the edges backwards. */
static void walk_from(order_ctx *oc, const path_state *ps, uint32_t lo, uint32_t late_first)
{
    const tlsan_plan *p = oc->plan;
    bool path_free = !ps || p->n_ifs == 0;
    if (path_free && oc->memo_ok && oc->memo_target == late_first && oc->memo_lo <= lo)
        return; /* the last walk already covers every op this question can use */
    if (++oc->gen == 0) {
        memset(oc->visited, 0, (p->n_ops ? p->n_ops : 1) * sizeof *oc->visited);
        oc->gen = 1;
    }
    oc->memo_ok = path_free;
    oc->memo_target = late_first;
    oc->memo_lo = lo;
    oc->memo_gen = oc->gen;
    walk w = {oc, ps, lo, 0};
    oc->visited[late_first] = oc->gen;
    oc->stack[w.top++] = late_first;
    while (w.top > 0) {
        uint32_t x = oc->stack[--w.top];
        const op_rec *o = &p->ops[x];
        if (p->schedule == TLSAN_SCHEDULE_DATAFLOW)
            dataflow_preds(&w, x);
        else
            sequential_preds(&w, x);
        const op_extra *ox = op_x(p, o);
        for (uint32_t k = 0; k < ox->n_after; k++)
            reach(&w, p->id_pool.v[ox->after_start + k]);
        /* sync joins everything: the latest sync before x precedes it, and a sync is
         * preceded by every op since the sync before it. */
        uint32_t s = first_running(&w, oc->prev_sync, prev_sync_of(oc, x));
        reach(&w, s);
        if (o->sync == TLSAN_SYNC_ALL) {
            uint32_t from = s == NO_INDEX || s < w.lo ? w.lo : s;
            for (uint32_t y = x; y-- > from;)
                reach(&w, y);
        }
    }
}

/* The on-demand walk behind order_forces() and order_forces_all_paths(). */
static bool walk_back(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                      uint32_t *bad_op)
{
    const access_index *ix = oc->ix;
    uint32_t a0 = ix->start[early], a1 = ix->start[early + 1];
    walk_from(oc, ps, ix->op[a0], late_first);
    for (uint32_t a = a0; a < a1; a++) {
        uint32_t y = ix->op[a];
        if (y >= late_first)
            break;
        if (ps && (ix->rw[a] & ACC_COND) && !op_runs(ps, y))
            continue;
        if (oc->visited[y] != oc->memo_gen) {
            *bad_op = y;
            return false;
        }
    }
    return true;
}

bool order_clocks_cover(const order_ctx *oc, uint32_t lo, uint32_t hi)
{
    return clocks_answer(oc, lo, hi);
}

bool order_op_before(order_ctx *oc, const path_state *ps, uint32_t y, uint32_t x)
{
    if (oc->total)
        return y < x;
    if (y >= x)
        return false;
    if (clocks_answer(oc, y, x))
        return oc->vc[(size_t)x * oc->width + oc->chain[y]] >= seq_of(oc, y);
    walk_from(oc, ps, y, x);
    return oc->visited[y] == oc->memo_gen;
}

bool order_forces_all_paths(order_ctx *oc, uint32_t early, uint32_t late_first, uint32_t *bad_op)
{
    const access_index *ix = oc->ix;
    if (oc->total || ix->start[early] == ix->start[early + 1])
        return true;
    if (clocks_answer(oc, ix->op[ix->start[early]], late_first))
        return clocks_order(oc, NULL, early, late_first, bad_op);
    return walk_back(oc, NULL, early, late_first, bad_op);
}

bool order_clocks_total(const order_ctx *oc)
{
    return !oc->total && oc->vc && !oc->breaks_prefix;
}

uint32_t order_done(const order_ctx *oc, uint32_t root, uint32_t chain)
{
    const access_index *ix = oc->ix;
    uint32_t d = 0;
    for (uint32_t a = ix->start[root]; a < ix->start[root + 1]; a++) {
        uint32_t y = ix->op[a];
        if (oc->chain[y] == chain && seq_of(oc, y) > d)
            d = seq_of(oc, y);
    }
    return d;
}

void order_done_all(const order_ctx *oc, uint32_t root, uint32_t *done)
{
    const access_index *ix = oc->ix;
    memset(done, 0, oc->width * sizeof *done);
    for (uint32_t a = ix->start[root]; a < ix->start[root + 1]; a++) {
        uint32_t y = ix->op[a], s = seq_of(oc, y);
        if (s > done[oc->chain[y]])
            done[oc->chain[y]] = s;
    }
}

size_t order_unordered(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                       uint32_t *ops, size_t max)
{
    const access_index *ix = oc->ix;
    uint32_t a0 = ix->start[early], a1 = ix->start[early + 1], bad;
    if (oc->total || a0 == a1)
        return 0;
    /* The same judgement as order_forces(), carried on past the first unordered access. */
    bool clocks = clocks_answer(oc, ix->op[a0], late_first);
    if (!clocks)
        walk_back(oc, ps, early, late_first, &bad); /* leaves the ops it reached stamped */
    const uint32_t *v = clocks ? oc->vc + (size_t)late_first * oc->width : NULL;
    size_t n = 0;
    for (uint32_t a = a0; a < a1 && ix->op[a] < late_first; a++) {
        uint32_t y = ix->op[a];
        if (!clocks && ps && (ix->rw[a] & ACC_COND) && !op_runs(ps, y))
            continue;
        bool before = clocks ? v[oc->chain[y]] >= seq_of(oc, y) : oc->visited[y] == oc->memo_gen;
        if (before)
            continue;
        if (n < max)
            ops[n] = y;
        n++;
    }
    return n;
}
