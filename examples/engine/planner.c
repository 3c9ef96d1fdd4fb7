/* planner.c - see planner.h. The event order is computed once with vector clocks over the
 * executor's walk (the loop unrolled), so "happens before" between two op instances is one
 * comparison. */
#include "planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INST = MAX_OPS * (LOOP_ITERS + 1), NSTREAMS = 2, ALIGN = 64 };

static struct {
    int n;
    int step[MAX_INST], iter[MAX_INST];
    int stream[MAX_INST];
    int vc[MAX_INST][NSTREAMS];
    int first_inst[MAX_OPS], last_inst[MAX_OPS];
} walk;

static void compute_clocks(const struct graph *g)
{
    int cur[NSTREAMS][NSTREAMS] = {{0}};
    int ev[8][NSTREAMS] = {{0}};
    walk.n = graph_walk(g, walk.step, walk.iter, MAX_INST);
    for (int s = 0; s < g->nops; s++)
        walk.first_inst[s] = walk.last_inst[s] = -1;
    for (int i = 0; i < walk.n; i++) {
        const struct op *o = &g->ops[walk.step[i]];
        int s = o->stream;
        if (walk.first_inst[walk.step[i]] < 0)
            walk.first_inst[walk.step[i]] = i;
        walk.last_inst[walk.step[i]] = i;
        if (o->kind == K_SYNC_ALL) {
            /* Joins every stream: all continue from the maximum. */
            for (int k = 0; k < NSTREAMS; k++)
                for (int j = 1; j < NSTREAMS; j++)
                    cur[0][k] = cur[j][k] > cur[0][k] ? cur[j][k] : cur[0][k];
            cur[0][0]++;
            for (int j = 1; j < NSTREAMS; j++)
                memcpy(cur[j], cur[0], sizeof(cur[0]));
            s = 0;
        } else {
            if (o->kind == K_SYNC_WAIT)
                for (int k = 0; k < NSTREAMS; k++)
                    cur[s][k] = ev[o->event][k] > cur[s][k] ? ev[o->event][k] : cur[s][k];
            cur[s][s]++;
            if (o->kind == K_SYNC_RECORD)
                memcpy(ev[o->event], cur[s], sizeof(cur[s]));
        }
        walk.stream[i] = s;
        memcpy(walk.vc[i], cur[s], sizeof(cur[s]));
    }
}

int planner_hb_inst(int a, int b)
{
    if (a == b)
        return 1;
    if (a > b)
        return 0;
    int s = walk.stream[a];
    return walk.vc[a][s] <= walk.vc[b][s];
}

/* Instance of step `s` in iteration `it` (steps outside the loop have one). */
static int inst_of(const struct graph *g, int s, int it)
{
    if (!graph_in_loop(g, s))
        return walk.first_inst[s];
    return walk.first_inst[s] + it * (g->loop_end - g->loop_begin + 1);
}

/* The accesses the planner sees: (step, is_write) of root r, in list order. */
struct access {
    int step, write;
};

static int collect_accesses(const struct graph *g, int r, struct access *acc)
{
    int n = 0, reads_seen = 0;
    int victim = graph_find(g, "hm");
    for (int s = 0; s < g->nops; s++) {
        const struct op *o = &g->ops[s];
        /* branch-one-arm: lifetimes come from the "bias" arm only. */
        if (g->bug == BUG_BRANCH_ONE_ARM && o->arm == ARM_PROJ)
            continue;
        for (int rw = 0; rw < 2; rw++) {
            const int *ids = rw ? o->writes : o->reads;
            int cnt = rw ? o->n_writes : o->n_reads;
            for (int i = 0; i < cnt; i++) {
                if (graph_root(g, ids[i]) != r)
                    continue;
                /* view-untracked: an access through a view is not one of the root. */
                if (g->bug == BUG_VIEW_UNTRACKED && ids[i] != r)
                    continue;
                /* lifetime-short: only the first consumer of hm counts. */
                if (g->bug == BUG_LIFETIME_SHORT && r == victim && !rw && reads_seen++)
                    continue;
                if (n && acc[n - 1].step == s) {
                    acc[n - 1].write |= rw;
                    continue;
                }
                acc[n].step = s;
                acc[n].write = rw;
                n++;
            }
        }
    }
    return n;
}

/* All accesses (every instance before `t_inst`) happen before instance t_inst. */
static int all_before(const struct graph *g, const struct access *acc, int n, int t_inst,
                      int per_iter)
{
    for (int i = 0; i < n; i++) {
        int iters = graph_in_loop(g, acc[i].step) ? LOOP_ITERS : 1;
        for (int it = 0; it < iters; it++) {
            int a = inst_of(g, acc[i].step, it);
            if (per_iter && it != walk.iter[t_inst])
                continue;
            if (a > t_inst)
                continue;
            if (!planner_hb_inst(a, t_inst))
                return 0;
        }
    }
    return 1;
}

static void derive_interval(struct graph *g, int r)
{
    struct tensor *t = &g->t[r];
    struct access acc[MAX_OPS];
    const int n = g->nops, s = g->loop_begin, e = g->loop_end;
    int na = collect_accesses(g, r, acc);
    int first = na ? acc[0].step : n, last = na ? acc[na - 1].step : -1;
    if (t->flags & TF_INPUT)
        first = -1;
    int keep_output = !(g->bug == BUG_OUTPUT_REUSED && strcmp(t->name, "y") == 0);
    if ((t->flags & TF_OUTPUT) && keep_output)
        last = n;
    if (first > last) /* never accessed (only possible under a bug) */
        first = last = na ? acc[0].step : 0;

    /* The loop: a value accessed before the body, or first read in it, is carried into the
     * next iteration and lives over the whole body; so (conservatively) does one used after
     * the loop. */
    int in_body = 0, first_body_read = 0;
    for (int i = 0; i < na; i++)
        if (graph_in_loop(g, acc[i].step)) {
            if (!in_body)
                first_body_read = 1; /* a read unless it is a write only */
            if (!in_body && acc[i].write) {
                /* an op that reads and writes it at its first access reads first */
                const struct op *o = &g->ops[acc[i].step];
                int reads = 0;
                for (int k = 0; k < o->n_reads; k++)
                    reads |= graph_root(g, o->reads[k]) == r;
                first_body_read = reads;
            }
            in_body = 1;
        }
    int carried = first < s || first_body_read;
    /* loop-carried: the planner forgets that carried values outlive one iteration. */
    if (g->bug == BUG_LOOP_CARRIED)
        carried = 0;
    if (in_body && (carried || last > e)) {
        first = first < s ? first : s;
        last = last > e ? last : e;
    }
    t->first = first;
    t->last = last;

    /* The release: the first step at or after the last access that every access happens
     * before (on a stream other than the last access's, that is a wait after an event). */
    if (last >= n) {
        t->free_step = n;
    } else if (g->bug == BUG_STALE_ASYNC_WRITE && t->workspace) {
        /* stale-async-write: workspaces are freed by the host right after the launch of
         * their kernel, whatever stream still has to run it. */
        t->free_step = last;
    } else {
        t->free_step = n;
        for (int c = last; c < n; c++) {
            int per_iter = first >= s && c <= e;
            int it = per_iter ? 0 : LOOP_ITERS - 1;
            if (all_before(g, acc, na, inst_of(g, c, it), per_iter)) {
                t->free_step = c;
                break;
            }
        }
    }
    t->per_iter = t->first >= s && t->free_step <= e;
    /* loop-carried: a carried value released inside the body is, to this planner, a value
     * of one iteration: released (and its bytes reused) in every iteration. */
    if (g->bug == BUG_LOOP_CARRIED && in_body && t->free_step >= s && t->free_step <= e)
        t->per_iter = 1;
}

/* In-place: op k may write `out` over `in` when `in` is released at k (k is its last
 * access) and `out` starts at k, with the same bytes. */
static void merge_inplace(struct graph *g, int *taken)
{
    for (int k = 0; k < g->nops; k++) {
        const struct op *o = &g->ops[k];
        for (int p = 0; p < o->n_inplace; p++) {
            int ro = graph_root(g, o->inplace[p][0]), ri = graph_root(g, o->inplace[p][1]);
            struct tensor *to = &g->t[ro], *ti = &g->t[ri];
            if (ro == ri || to->inplace_of >= 0 || taken[ri] || to->arena != ti->arena ||
                to->bytes != ti->bytes || (ti->flags & (TF_INPUT | TF_OUTPUT)) ||
                (to->flags & TF_INPUT) || to->first != k || to->per_iter != ti->per_iter)
                continue;
            /* inplace-still-read: the planner does not check that the input is dead. */
            if (ti->free_step != k && g->bug != BUG_INPLACE_STILL_READ)
                continue;
            to->inplace_of = ri;
            to->inplace_op = k;
            taken[ri] = 1;
        }
    }
}

/* A block: roots sharing bytes through in-place handovers, placed as one. */
struct block {
    int leader, first, free_step, per_iter, workspace;
    size_t bytes, offset;
    int arena, placed;
};

/* Step a's release happens before step b's first access. */
static int ordered(const struct graph *g, int a, int b, int both_per_iter)
{
    if (a < 0 || b >= g->nops)
        return 1;
    int ia =
        graph_in_loop(g, a) && !both_per_iter ? inst_of(g, a, LOOP_ITERS - 1) : inst_of(g, a, 0);
    int ib = inst_of(g, b, 0);
    return planner_hb_inst(ia, ib);
}

static int may_share(const struct graph *g, const struct block *a, const struct block *b)
{
    if (a->first <= b->free_step && b->first <= a->free_step)
        return 0; /* live at the same time */
    /* stale-async-write: the planner orders workspaces by list position only. */
    if (g->bug == BUG_STALE_ASYNC_WRITE && (a->workspace || b->workspace))
        return 1;
    const struct block *early = a->free_step < b->first ? a : b;
    const struct block *late = early == a ? b : a;
    int both = early->per_iter && late->per_iter;
    if (!ordered(g, early->free_step, late->first, both))
        return 0;
    /* Within the loop the early block's next iteration follows the late one's release. */
    if (both && early->first >= g->loop_begin &&
        !planner_hb_inst(inst_of(g, late->free_step, 0), inst_of(g, early->first, 1)))
        return 0;
    return 1;
}

static int cmp_block(const void *pa, const void *pb)
{
    const struct block *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return a->leader - b->leader;
}

static int cmp_offset(const void *pa, const void *pb)
{
    const struct block *a = *(const struct block *const *)pa;
    const struct block *b = *(const struct block *const *)pb;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return 0;
}

static size_t align_up(size_t v)
{
    return (v + ALIGN - 1) / ALIGN * ALIGN;
}

static void place(struct graph *g, struct block *blocks, int nb, int arena)
{
    struct block *conf[MAX_TENSORS];
    size_t end = 0;
    for (int i = 0; i < nb; i++) {
        struct block *b = &blocks[i];
        if (b->arena != arena)
            continue;
        int nc = 0;
        for (int j = 0; j < i; j++)
            if (blocks[j].arena == arena && blocks[j].placed && !may_share(g, b, &blocks[j]))
                conf[nc++] = &blocks[j];
        qsort(conf, (size_t)nc, sizeof(conf[0]), cmp_offset);
        /* First fit: the lowest gap between conflicting blocks that holds it. */
        size_t cursor = 0;
        for (int c = 0; c < nc; c++) {
            if (conf[c]->offset >= cursor + b->bytes)
                break;
            size_t cend = align_up(conf[c]->offset + conf[c]->bytes);
            cursor = cend > cursor ? cend : cursor;
        }
        b->offset = cursor;
        b->placed = 1;
        if (align_up(b->offset + b->bytes) > end)
            end = align_up(b->offset + b->bytes);
    }
    g->arena_bytes[arena] = end ? end : ALIGN;
}

void planner_run(struct graph *g)
{
    compute_clocks(g);
    int taken[MAX_TENSORS] = {0};
    for (int r = 0; r < g->nt; r++)
        if (g->t[r].view_of < 0 && g->t[r].arena != ARENA_WEIGHTS)
            derive_interval(g, r);
    merge_inplace(g, taken);

    /* Constants: one after the other, live throughout. */
    size_t woff = 0;
    for (int r = 0; r < g->nt; r++) {
        struct tensor *t = &g->t[r];
        if (t->view_of >= 0 || t->arena != ARENA_WEIGHTS)
            continue;
        t->offset = woff;
        t->first = -1;
        t->last = t->free_step = g->nops;
        woff = align_up(woff + t->bytes);
    }
    g->arena_bytes[ARENA_WEIGHTS] = woff;

    /* Blocks: each root joins the block of the root it takes over in place. */
    struct block blocks[MAX_TENSORS];
    int block_of[MAX_TENSORS], nb = 0;
    for (int r = 0; r < g->nt; r++) {
        struct tensor *t = &g->t[r];
        block_of[r] = -1;
        if (t->view_of >= 0 || t->arena == ARENA_WEIGHTS)
            continue;
        if (t->inplace_of >= 0 && block_of[t->inplace_of] >= 0) {
            struct block *b = &blocks[block_of[t->inplace_of]];
            block_of[r] = block_of[t->inplace_of];
            b->first = t->first < b->first ? t->first : b->first;
            b->free_step = t->free_step > b->free_step ? t->free_step : b->free_step;
            b->per_iter &= t->per_iter;
            continue;
        }
        struct block *b = &blocks[nb];
        memset(b, 0, sizeof(*b));
        b->leader = r;
        b->first = t->first;
        b->free_step = t->free_step;
        b->per_iter = t->per_iter;
        b->workspace = t->workspace;
        b->bytes = t->bytes;
        b->arena = t->arena;
        block_of[r] = nb++;
    }
    /* In-place outputs are declared after their inputs here, so one pass suffices. */
    qsort(blocks, (size_t)nb, sizeof(blocks[0]), cmp_block);
    place(g, blocks, nb, ARENA_ACT);
    place(g, blocks, nb, ARENA_WS);
    for (int i = 0; i < nb; i++) {
        for (int r = 0; r < g->nt; r++) {
            const struct tensor *t = &g->t[r];
            if (t->view_of >= 0 || t->arena == ARENA_WEIGHTS)
                continue;
            int lead = r;
            while (g->t[lead].inplace_of >= 0)
                lead = g->t[lead].inplace_of;
            if (lead == blocks[i].leader)
                g->t[r].offset = blocks[i].offset;
        }
    }
}
