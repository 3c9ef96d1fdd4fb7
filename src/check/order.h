/* order: the executor's happens-before relation (plan-format.md, "Order").
 *
 * Under "sequential" with one stream every op is ordered by the list. Otherwise an order
 * query asks whether every access of an earlier tenant of some bytes happens before the
 * first access of the later tenant on the current branch path. Instead of a full N x N
 * closure, each query walks the happens-before edges backwards from the later tenant's first
 * access, on demand, visiting only ops at or after the earlier tenant's first access
 * (edges always point forward in the list, so nothing earlier can lie on a path). The
 * edges are generated lazily from the plan: per-stream program order, record->wait,
 * sync and `after` for sequential schedules; per-root write->read/write and read->write,
 * sync and `after` for dataflow. Cost per query: O(ops and edges in that step range).
 *
 * Plans without branches get vector clocks instead (Mattern, "Virtual time and global
 * states of distributed systems", 1989; Fidge 1988) over a decomposition of the ops into
 * chains, each totally ordered by happens-before: the streams of a sequential plan, or for
 * dataflow chains built greedily (an op extends the chain of a direct predecessor that ends
 * that chain). One pass computes a clock of one counter per chain for every op; each query
 * then costs O(accesses of the earlier tenant). Used while n_ops x chains stays under 2^24
 * counters. In plans with branches they still answer a query when no conditional op in its
 * step range synchronises (record, wait, sync, `after`; under dataflow any conditional
 * op): skipping an op that only lies on its stream's program order leaves the order of the
 * others unchanged. */
#ifndef TLSAN_ORDER_H
#define TLSAN_ORDER_H

#include "check/lifetime.h"

typedef struct order_ctx {
    const tlsan_plan *plan;
    const access_index *ix;
    bool total; /* sequential with at most one stream: list order is the order */
    /* The graph's edges and the walks' state, per op. Only kept when some question may walk
     * the graph (no clocks, or a conditional op that breaks them): else they are freed once
     * the clocks are built, which leaves 4 bytes per op and chain. */
    uint32_t *prev_same_stream; /* previous op on its stream, NO_INDEX if none */
    uint32_t *event_link;       /* a record: the previous record of its event; a wait: the latest
                                   record of its event listed before it; else NO_INDEX */
    uint32_t *prev_sync;        /* latest sync op listed before it; NULL when the plan has none */
    uint32_t *visited;          /* stamp of the query that reached it */
    /* The last walk, kept while no other walk overwrites its stamps: a later query with the
     * same target and a start at or after memo_lo reuses it (the tenants of one segment
     * are asked about one later tenant in a row). Only for answers that do not depend on
     * the path. */
    uint32_t memo_target, memo_lo, memo_gen;
    bool memo_ok;
    /* Vector clocks (sequential schedule, no conditional op, few streams): vc[op * n_streams
     * + s] is the number of ops of stream s that happen before or at op, so op's own position
     * in its chain is vc[op][chain(op)]. Then a happens before b iff vc[b][chain(a)] >=
     * vc[a][chain(a)]. */
    uint32_t *vc;
    const uint32_t *chain; /* per op: its chain (the plan's op_stream, or chain_own) */
    uint32_t *chain_own;   /* dataflow: the greedy chains */
    /* n_ops + 1: how many conditional ops before each step can change the order of the ops
     * that run (see clocks_answer() in order.c); NULL when none can */
    uint32_t *breaks_prefix;
    uint32_t width;       /* counters per clock */
    uint32_t *prev_write; /* dataflow: per access, the latest write of its root at or before it */
    uint32_t gen;
    uint32_t *stack;
} order_ctx;

/* 0 on success, -1 when out of memory. */
int order_init(order_ctx *oc, const tlsan_plan *p, const access_index *ix);
void order_free(order_ctx *oc);

/* True when, on the path of `ps`, every access of root `early` that runs happens before op
 * `late_first` (the later root's first access). When false, *bad_op is an access of `early`
 * not ordered before it. Only ops in steps lo..late_first are visited, where lo is the first
 * access of `early`; every if of a conditional op in that range must be fixed in `ps`. */
bool order_forces(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                  uint32_t *bad_op);

/* Whether the clocks answer every order question between ops of steps lo..hi on every
 * path (no conditional op there can change the order of the ops that run). */
bool order_clocks_cover(const order_ctx *oc, uint32_t lo, uint32_t hi);

/* True when op y happens before op x on the path of ps (on every path where both run when
 * ps is NULL, as order_forces_all_paths() judges; y must have no condition then). Both must
 * run on the path; every if of a conditional op in steps y..x must be fixed in ps. */
bool order_op_before(order_ctx *oc, const path_state *ps, uint32_t y, uint32_t x);

/* Like order_forces() for every path at once, without enumerating them: only edges that
 * exist on every path where their ends run are followed, and only through ops without
 * branch conditions, so `true` is a proof for all paths (`false` may be a false alarm,
 * reported as approximate). Used when a pair has too many paths to enumerate. */
bool order_forces_all_paths(order_ctx *oc, uint32_t early, uint32_t late_first, uint32_t *bad_op);

/* Whether the clocks exist and hold for every path (no conditional op breaks them):
 * then order_done() and order_clock() decide every query. */
bool order_clocks_total(const order_ctx *oc);
/* The position in chain `chain` of the latest access of `root` on that chain (0 when none):
 * every access of root happens before op x iff for each chain order_done(root) <=
 * order_clock(x). */
uint32_t order_done(const order_ctx *oc, uint32_t root, uint32_t chain);
/* order_done() of `root` for every chain at once, into done[0 .. width-1]. */
void order_done_all(const order_ctx *oc, uint32_t root, uint32_t *done);
/* How many ops of chain `chain` happen before or at op x. */
static inline uint32_t order_clock(const order_ctx *oc, uint32_t x, uint32_t chain)
{
    return oc->vc[(size_t)x * oc->width + chain];
}

/* Every access of root `early` (op indices, ascending, on the path of `ps`; every path when
 * ps is NULL, as order_forces_all_paths() judges) that is not ordered before op
 * `late_first`: writes the first `max` into ops and returns how many there are in all. */
size_t order_unordered(order_ctx *oc, const path_state *ps, uint32_t early, uint32_t late_first,
                       uint32_t *ops, size_t max);

#endif
