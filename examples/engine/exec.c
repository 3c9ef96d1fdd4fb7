/* exec.c - see exec.h.
 *
 * Binds and releases are stream-ordered: a root is bound on the stream of the op that first
 * writes it, just before that op, and released on the stream of its release step, just after
 * it (the planner picked that step so every access happens before it).
 *
 * The annotations use tlsan.h's handles (version 2): each bind returns the tenant's handle,
 * which the ops, the release and the views name; a view is declared once, at its root's
 * first bind, and follows the root's later binds; an in-place output the planner merged is
 * bound with tlsan_bind_inplace over its input, which makes it the op's in-place pair and
 * the input's release a handover; each op carries the line of the model (graph.c) that
 * declares it, since every op runs through the same executor line. Releases stay the
 * version-1 call (release_root says why).
 *
 * Two bugs need a definite interleaving of the streams to show what they do every time; it
 * is forced with hidden gates (condition variables the annotations do not mention), the way
 * a slow device would order things:
 *  - missing-event: s1 runs b.kvsave only after main has written the first tensor placed on
 *    the bytes of qkv (which the dropped event would have protected); main then waits for
 *    b.kvsave before going on, so the rest of the run is ordered as before.
 *  - stale-async-write: the host binds and releases workspaces itself when it launches their
 *    kernel; the kernel runs only after that release, and the host binds the next tenant of
 *    those bytes only after the late write is done.
 * A planner bug under the pool executor runs the streams in list order (each op instance
 * waits for the previous one), so what it corrupts is the same every time. */
#include "exec.h"

#include "kernels.h"
#include "planner.h"

#include <tlsan/tlsan.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INST = MAX_OPS * (LOOP_ITERS + 1), NSTREAMS = 2 };

struct queue {
    int items[MAX_INST];
    int head, tail;
};

struct runtime {
    struct graph *g;
    unsigned char *arena[ARENA_COUNT];
    float *addr[MAX_TENSORS];
    int bound[MAX_TENSORS];
    /* Roots: the current tenant's handle; views: the handle of their one declaration. */
    tlsan_tensor handle[MAX_TENSORS];
    int declared[MAX_TENSORS]; /* views declared (once, at the root's first bind) */
    /* The walk. */
    int n_inst;
    int step[MAX_INST], iter[MAX_INST];
    /* Pool state, guarded by lock. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct queue q[NSTREAMS];
    int stop;
    int ev_pushed[8], ev_done[8];
    int wait_target[MAX_INST];
    int ran[MAX_INST];
    /* Hidden gates (-1: none). */
    int hold_before[MAX_INST]; /* run only after this instance ran */
    int wait_after[MAX_INST];  /* after running, wait until this instance ran */
    int host_released[MAX_INST];
    int host_ws;                    /* stale-async-write: the host manages the workspaces */
    float *input_data[MAX_TENSORS]; /* the inputs' contents, loaded again by every run */
};

static uint64_t lcg_state;

static float lcg_uniform(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(lcg_state >> 40) / 16777216.0f - 0.5f; /* [-0.5, 0.5) */
}

static void fill_tensor(const struct tensor *t, float *p)
{
    size_t n = graph_elems(t);
    int is_gain = strstr(t->name, ".g") != NULL, is_bias = strstr(t->name, ".b") != NULL;
    float scale = t->ndim == 2 && !strcmp(t->name, "pos") ? 0.2f
                  : t->ndim == 2 && t->name[0] == 'w'     ? 2.0f / (float)t->shape[0]
                                                          : 1.0f;
    for (size_t i = 0; i < n; i++) {
        float u = lcg_uniform();
        p[i] = is_gain ? 1.0f + 0.1f * u : is_bias ? 0.1f * u : scale * u;
    }
}

static int skipped(const struct graph *g, const struct op *o)
{
    return o->arm != ARM_NONE && o->arm != (g->use_bias ? ARM_BIAS : ARM_PROJ);
}

/* ---- binds and releases ---- */

/* The views of `root` not declared yet, each after its base (a view's base comes before it
 * in the graph). Declared once: tlsan declares them again on each later bind of the root. */
static void declare_views(struct runtime *rt, int root)
{
    const struct graph *g = rt->g;
    for (int v = 0; v < g->nt; v++)
        if (g->t[v].view_of >= 0 && !rt->declared[v] && graph_root(g, v) == root) {
            rt->handle[v] = tlsan_view(g->t[v].name, rt->handle[g->t[v].view_of],
                                       g->t[v].view_offset, g->t[v].bytes);
            rt->declared[v] = 1;
        }
}

static void bind_root(struct runtime *rt, int r, int step)
{
    const struct tensor *t = &rt->g->t[r];
    unsigned flags = 0;
    /* An input holds data before the first op; bound again later (a carried value the
     * planner released), it is a new tenant an op writes. */
    if ((t->flags & TF_INPUT) && step < 0)
        flags |= TLSAN_BIND_INPUT;
    if (t->flags & TF_OUTPUT)
        flags |= TLSAN_BIND_OUTPUT;
    /* The planner merged it over its input at this op (same bytes): one declaration. */
    if (t->inplace_of >= 0 && t->inplace_op == step && rt->bound[t->inplace_of]) {
        rt->handle[r] = tlsan_bind_inplace(t->name, rt->handle[t->inplace_of], flags);
    } else {
        rt->handle[r] = tlsan_bind(rt->arena[t->arena], t->name, rt->addr[r], t->bytes, flags);
    }
    rt->bound[r] = 1;
    declare_views(rt, r);
}

static void release_root(struct runtime *rt, int r)
{
    const struct graph *g = rt->g;
    unsigned flags = 0;
    /* The bytes live on in an in-place output that is bound now. */
    for (int s = 0; s < g->nt; s++)
        if (g->t[s].inplace_of == r && rt->bound[s])
            flags |= TLSAN_RELEASE_HANDOVER;
    /* The version-1 release, by arena, name and address, not tlsan_release(handle): under
     * Valgrind without the shim only it tells memcheck the bytes are free (a handle is 0
     * there), and without that each later bind of those bytes is a chunk overlapping one
     * still allocated. The handle is stale after it all the same. */
    tlsan_tensor_release(rt->arena[g->t[r].arena], g->t[r].name, rt->addr[r], flags);
    rt->bound[r] = 0;
}

static int host_managed(const struct runtime *rt, int r)
{
    return rt->host_ws && rt->g->t[r].workspace;
}

/* Before op `step`: bind every root it writes that is not live yet. */
static void pre_op(struct runtime *rt, int step)
{
    const struct op *o = &rt->g->ops[step];
    pthread_mutex_lock(&rt->lock);
    for (int i = 0; i < o->n_writes; i++) {
        int r = graph_root(rt->g, o->writes[i]);
        if (!rt->bound[r] && !host_managed(rt, r))
            bind_root(rt, r, step);
    }
    pthread_mutex_unlock(&rt->lock);
}

/* After step `step` of iteration `iter`: release the roots the planner frees there. A root
 * living within one iteration is released in each; one that spans the loop only in the
 * last. */
static void post_step(struct runtime *rt, int step, int iter)
{
    struct graph *g = rt->g;
    pthread_mutex_lock(&rt->lock);
    for (int r = 0; r < g->nt; r++) {
        const struct tensor *t = &g->t[r];
        /* Outputs are handed to the caller: they stay bound until the run ends, whatever
         * the planner assumed about their bytes. */
        if (t->view_of >= 0 || t->arena == ARENA_WEIGHTS || t->free_step != step || !rt->bound[r] ||
            host_managed(rt, r) || (t->flags & TF_OUTPUT))
            continue;
        if (graph_in_loop(g, step) && !t->per_iter && iter != LOOP_ITERS - 1)
            continue;
        release_root(rt, r);
    }
    pthread_mutex_unlock(&rt->lock);
}

static void run_kernel(struct runtime *rt, int step)
{
    const struct graph *g = rt->g;
    const struct op *o = &g->ops[step];
    tlsan_tensor reads[MAX_IO], writes[MAX_IO];
    /* The handles of the tenants live now (another stream may have bound them). */
    pthread_mutex_lock(&rt->lock);
    for (int i = 0; i < o->n_reads; i++)
        reads[i] = rt->handle[o->reads[i]];
    for (int i = 0; i < o->n_writes; i++)
        writes[i] = rt->handle[o->writes[i]];
    pthread_mutex_unlock(&rt->lock);
    tlsan_op_decl decl = {o->name,
                          o->stream,
                          reads,
                          (size_t)o->n_reads,
                          writes,
                          (size_t)o->n_writes,
                          {o->file, o->line, o->func}};
    TLSAN_OP_SCOPE_DESC(&decl)
    {
        kernel_run(g, o, rt->addr);
    }
}

/* ---- hidden gates ---- */

static void wait_ran(struct runtime *rt, int inst)
{
    pthread_mutex_lock(&rt->lock);
    while (!rt->ran[inst])
        pthread_cond_wait(&rt->cond, &rt->lock);
    pthread_mutex_unlock(&rt->lock);
}

/* The instance of step s in iteration it. */
static int inst_of(const struct runtime *rt, int s, int it)
{
    for (int i = 0; i < rt->n_inst; i++)
        if (rt->step[i] == s && rt->iter[i] == it)
            return i;
    return -1;
}

static int overlap(const struct tensor *a, const struct tensor *b)
{
    return a->arena == b->arena && a->offset < b->offset + b->bytes &&
           b->offset < a->offset + a->bytes;
}

/* Tensor t's bytes within its root's arena: [*lo, *hi). */
static void arena_range(const struct graph *g, int t, size_t *lo, size_t *hi)
{
    size_t off = 0;
    int r = t;
    for (; g->t[r].view_of >= 0; r = g->t[r].view_of)
        off += g->t[r].view_offset;
    *lo = g->t[r].offset + off;
    *hi = *lo + g->t[t].bytes;
}

/* missing-event: hold b.kvsave until main wrote the first tensor placed on the bytes of qkv
 * that b.kvsave reads (the K and V slices). */
static void setup_missing_event(struct runtime *rt)
{
    struct graph *g = rt->g;
    int kv = -1, qkv = graph_find(g, "qkv");
    for (int s = 0; s < g->nops; s++)
        if (!strcmp(g->ops[s].name, "b.kvsave"))
            kv = s;
    for (int it = 0; it < LOOP_ITERS; it++) {
        int victim_user = -1;
        for (int s = kv + 1; s <= g->loop_end && victim_user < 0; s++) {
            const struct op *o = &g->ops[s];
            if (o->stream != 0 || graph_is_sync(o))
                continue;
            for (int i = 0; i < o->n_writes; i++) {
                int r = graph_root(g, o->writes[i]);
                if (r == qkv || g->t[r].first != s || g->t[r].arena != g->t[qkv].arena)
                    continue;
                for (int k = 0; k < g->ops[kv].n_reads; k++) {
                    size_t lo, hi;
                    arena_range(g, g->ops[kv].reads[k], &lo, &hi);
                    if (g->t[r].offset < hi && lo < g->t[r].offset + g->t[r].bytes)
                        victim_user = s;
                }
            }
        }
        if (victim_user < 0) {
            fprintf(stderr, "engine: missing-event: no tensor reuses qkv's bytes; "
                            "the run shows no effect\n");
            return;
        }
        int a = inst_of(rt, kv, it), b = inst_of(rt, victim_user, it);
        rt->hold_before[a] = b;
        rt->wait_after[b] = a;
    }
}

/* ---- running one instance ---- */

static void run_inst(struct runtime *rt, int inst)
{
    struct graph *g = rt->g;
    int step = rt->step[inst];
    const struct op *o = &g->ops[step];
    if (rt->hold_before[inst] >= 0)
        wait_ran(rt, rt->hold_before[inst]);
    if (rt->host_ws) {
        pthread_mutex_lock(&rt->lock);
        while (!rt->host_released[inst])
            pthread_cond_wait(&rt->cond, &rt->lock);
        pthread_mutex_unlock(&rt->lock);
    }
    if (!o->dropped && !skipped(g, o)) {
        switch (o->kind) {
        case K_SYNC_RECORD:
            tlsan_event_record(o->event, o->stream);
            pthread_mutex_lock(&rt->lock);
            rt->ev_done[o->event]++;
            pthread_cond_broadcast(&rt->cond);
            pthread_mutex_unlock(&rt->lock);
            break;
        case K_SYNC_WAIT:
            pthread_mutex_lock(&rt->lock);
            while (rt->ev_done[o->event] < rt->wait_target[inst])
                pthread_cond_wait(&rt->cond, &rt->lock);
            pthread_mutex_unlock(&rt->lock);
            tlsan_event_wait(o->stream, o->event);
            break;
        case K_SYNC_ALL:
            break; /* the host joins the streams (exec_pool) */
        default:
            pre_op(rt, step);
            run_kernel(rt, step);
            break;
        }
    }
    post_step(rt, step, rt->iter[inst]);
    pthread_mutex_lock(&rt->lock);
    rt->ran[inst] = 1;
    pthread_cond_broadcast(&rt->cond);
    pthread_mutex_unlock(&rt->lock);
    if (rt->wait_after[inst] >= 0)
        wait_ran(rt, rt->wait_after[inst]);
}

static int exec_seq(struct runtime *rt)
{
    for (int i = 0; i < rt->n_inst; i++) {
        rt->host_released[i] = 1;
        run_inst(rt, i);
    }
    return 0;
}

struct worker_arg {
    struct runtime *rt;
    int stream;
};

static void *worker(void *p)
{
    struct worker_arg *wa = p;
    struct runtime *rt = wa->rt;
    struct queue *q = &rt->q[wa->stream];
    for (;;) {
        pthread_mutex_lock(&rt->lock);
        while (q->head == q->tail && !rt->stop)
            pthread_cond_wait(&rt->cond, &rt->lock);
        if (q->head == q->tail) {
            pthread_mutex_unlock(&rt->lock);
            return NULL;
        }
        int inst = q->items[q->head];
        pthread_mutex_unlock(&rt->lock);
        run_inst(rt, inst);
        pthread_mutex_lock(&rt->lock);
        q->head++;
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
    }
}

/* stale-async-write, on the host at launch: wait until the last kernel that used these
 * workspace bytes has run (its late write done), then bind. */
static void host_bind_ws(struct runtime *rt, int inst)
{
    struct graph *g = rt->g;
    const struct op *o = &g->ops[rt->step[inst]];
    for (int i = 0; i < o->n_writes; i++) {
        int r = graph_root(g, o->writes[i]);
        if (!host_managed(rt, r))
            continue;
        for (int j = inst - 1; j >= 0; j--) {
            const struct op *p = &g->ops[rt->step[j]];
            int hit = 0;
            for (int k = 0; k < p->n_writes; k++) {
                int pr = graph_root(g, p->writes[k]);
                hit |= host_managed(rt, pr) && overlap(&g->t[pr], &g->t[r]);
            }
            if (hit && !skipped(g, p)) {
                wait_ran(rt, j);
                break;
            }
        }
        pthread_mutex_lock(&rt->lock);
        bind_root(rt, r, rt->step[inst]);
        pthread_mutex_unlock(&rt->lock);
    }
}

static void host_release_ws(struct runtime *rt, int inst)
{
    struct graph *g = rt->g;
    const struct op *o = &g->ops[rt->step[inst]];
    pthread_mutex_lock(&rt->lock);
    for (int i = 0; i < o->n_writes; i++) {
        int r = graph_root(g, o->writes[i]);
        if (host_managed(rt, r) && rt->bound[r])
            release_root(rt, r);
    }
    rt->host_released[inst] = 1;
    pthread_cond_broadcast(&rt->cond);
    pthread_mutex_unlock(&rt->lock);
}

static void drain(struct runtime *rt)
{
    pthread_mutex_lock(&rt->lock);
    while (rt->q[0].head != rt->q[0].tail || rt->q[1].head != rt->q[1].tail)
        pthread_cond_wait(&rt->cond, &rt->lock);
    pthread_mutex_unlock(&rt->lock);
}

static int exec_pool(struct runtime *rt)
{
    struct graph *g = rt->g;
    pthread_t th[NSTREAMS];
    struct worker_arg wa[NSTREAMS];
    int started = 0, rc = 0;
    if (g->bug == BUG_MISSING_EVENT)
        setup_missing_event(rt);
    else if (g->bug != BUG_NONE && g->bug != BUG_STALE_ASYNC_WRITE)
        /* A planner bug makes tensors of both streams collide; the streams then run in list
         * order so the corrupted values do not depend on timing (the same as seq's). */
        for (int i = 1; i < rt->n_inst; i++)
            rt->hold_before[i] = i - 1;
    for (; started < NSTREAMS; started++) {
        wa[started].rt = rt;
        wa[started].stream = started;
        if (pthread_create(&th[started], NULL, worker, &wa[started])) {
            rc = -1;
            goto out;
        }
    }
    for (int i = 0; i < rt->n_inst; i++) {
        const struct op *o = &g->ops[rt->step[i]];
        if (o->kind == K_SYNC_ALL && !skipped(g, o)) {
            drain(rt);
            tlsan_host_sync();
            rt->host_released[i] = 1;
            run_inst(rt, i); /* its releases, on the host */
            continue;
        }
        int run = !o->dropped && !skipped(g, o);
        if (run && rt->host_ws && !graph_is_sync(o))
            host_bind_ws(rt, i);
        pthread_mutex_lock(&rt->lock);
        if (run && o->kind == K_SYNC_RECORD)
            rt->ev_pushed[o->event]++;
        if (run && o->kind == K_SYNC_WAIT)
            rt->wait_target[i] = rt->ev_pushed[o->event];
        if (!rt->host_ws)
            rt->host_released[i] = 1;
        struct queue *q = &rt->q[o->stream];
        q->items[q->tail++] = i;
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
        if (rt->host_ws) {
            /* The bug: freed at launch, not when the stream is done with it. */
            if (run && !graph_is_sync(o))
                host_release_ws(rt, i);
            else {
                pthread_mutex_lock(&rt->lock);
                rt->host_released[i] = 1;
                pthread_cond_broadcast(&rt->cond);
                pthread_mutex_unlock(&rt->lock);
            }
        }
    }
    drain(rt);
out:
    pthread_mutex_lock(&rt->lock);
    rt->stop = 1;
    pthread_cond_broadcast(&rt->cond);
    pthread_mutex_unlock(&rt->lock);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return rc;
}

/* ---- setup ---- */

struct runtime *exec_setup(struct graph *g, const char *plan, size_t plan_len)
{
    struct runtime *rt = calloc(1, sizeof(*rt));
    if (!rt)
        return NULL;
    rt->g = g;
    pthread_mutex_init(&rt->lock, NULL);
    pthread_cond_init(&rt->cond, NULL);
    rt->n_inst = graph_walk(g, rt->step, rt->iter, MAX_INST);
    rt->host_ws = g->bug == BUG_STALE_ASYNC_WRITE && g->mode == EXEC_POOL;
    for (int a = 0; a < ARENA_COUNT; a++) {
        /* Zeroed, so that even a buggy run reads the same bytes every time. */
        rt->arena[a] = aligned_alloc(64, g->arena_bytes[a]);
        if (!rt->arena[a])
            goto fail;
        memset(rt->arena[a], 0, g->arena_bytes[a]);
        tlsan_arena_create(arena_names[a], rt->arena[a], g->arena_bytes[a]);
    }
    for (int t = 0; t < g->nt; t++) {
        const struct tensor *ts = &g->t[t];
        if (ts->view_of < 0)
            rt->addr[t] = (float *)(void *)(rt->arena[ts->arena] + ts->offset);
    }
    for (int t = 0; t < g->nt; t++) /* views after their bases: declared later */
        if (g->t[t].view_of >= 0)
            rt->addr[t] =
                (float *)(void *)((char *)rt->addr[g->t[t].view_of] + g->t[t].view_offset);
    if (plan)
        tlsan_plan_load(plan, plan_len);
    /* Constants: bound live for the whole program, then loaded. Inputs: generated here,
     * loaded by every run. */
    lcg_state = 0x7115a9ull;
    for (int t = 0; t < g->nt; t++) {
        const struct tensor *ts = &g->t[t];
        if (ts->view_of >= 0 || !(ts->flags & TF_INPUT))
            continue;
        if ((ts->flags & TF_CONST) == TF_CONST) {
            bind_root(rt, t, -1);
            fill_tensor(ts, rt->addr[t]);
            continue;
        }
        rt->input_data[t] = malloc(ts->bytes);
        if (!rt->input_data[t])
            goto fail;
        fill_tensor(ts, rt->input_data[t]);
    }
    return rt;
fail:
    for (int a = 0; a < ARENA_COUNT; a++)
        free(rt->arena[a]);
    for (int t = 0; t < MAX_TENSORS; t++)
        free(rt->input_data[t]);
    free(rt);
    return NULL;
}

int exec_run(struct runtime *rt)
{
    struct graph *g = rt->g;
    memset(rt->q, 0, sizeof(rt->q));
    memset(rt->ev_pushed, 0, sizeof(rt->ev_pushed));
    memset(rt->ev_done, 0, sizeof(rt->ev_done));
    memset(rt->ran, 0, sizeof(rt->ran));
    memset(rt->host_released, 0, sizeof(rt->host_released));
    rt->stop = 0;
    for (int i = 0; i < rt->n_inst; i++)
        rt->hold_before[i] = rt->wait_after[i] = -1;
    /* The inputs: bound live before the first op, then loaded. */
    for (int t = 0; t < g->nt; t++) {
        if (!rt->input_data[t])
            continue;
        bind_root(rt, t, -1);
        memcpy(rt->addr[t], rt->input_data[t], g->t[t].bytes);
    }
    return g->mode == EXEC_POOL ? exec_pool(rt) : exec_seq(rt);
}

void exec_end_run(struct runtime *rt)
{
    /* The caller is done with the outputs; anything else a buggy plan left bound ends too,
     * so the next run binds every name afresh. */
    for (int r = 0; r < rt->g->nt; r++) {
        const struct tensor *t = &rt->g->t[r];
        if (t->view_of < 0 && t->arena != ARENA_WEIGHTS && rt->bound[r])
            release_root(rt, r);
    }
}

const float *exec_tensor(const struct runtime *rt, const char *name, size_t *bytes)
{
    int t = graph_find(rt->g, name);
    if (t < 0)
        return NULL;
    *bytes = rt->g->t[t].bytes;
    return rt->addr[t];
}

void exec_teardown(struct runtime *rt)
{
    for (int a = 0; a < ARENA_COUNT; a++) {
        tlsan_arena_destroy(rt->arena[a], rt->g->arena_bytes[a]);
        free(rt->arena[a]);
    }
    pthread_mutex_destroy(&rt->lock);
    pthread_cond_destroy(&rt->cond);
    for (int t = 0; t < MAX_TENSORS; t++)
        free(rt->input_data[t]);
    free(rt);
}
