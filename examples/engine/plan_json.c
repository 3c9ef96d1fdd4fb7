/* plan_json.c - see plan_json.h. Names in this engine need no JSON escaping (letters, digits,
 * '.', '_'), which graph.c guarantees by construction. */
#include "plan_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
    char *p;
    size_t len, cap;
    int oom;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

/* Step numbers of the emitted plan: the ops the executor drops are not in it. */
struct steps {
    int map[MAX_OPS + 1];
    int n;
};

static void make_steps(const struct graph *g, struct steps *st)
{
    st->n = 0;
    for (int s = 0; s < g->nops; s++)
        st->map[s] = g->ops[s].dropped ? -1 : st->n++;
}

/* A lifetime bound at step s: a first access maps forward, a last one backward. */
static int map_step(const struct graph *g, const struct steps *st, int s, int forward)
{
    if (s < 0)
        return -1;
    if (s >= g->nops)
        return st->n;
    while (st->map[s] < 0)
        s += forward ? 1 : -1;
    return st->map[s];
}

static void put_names(struct buf *b, const struct graph *g, const int *ids, int n)
{
    put(b, "[");
    for (int i = 0; i < n; i++)
        put(b, "%s\"%s\"", i ? ", " : "", g->t[ids[i]].name);
    put(b, "]");
}

static void put_tensor(struct buf *b, const struct graph *g, const struct steps *st, int id)
{
    const struct tensor *t = &g->t[id];
    put(b, "    {\"name\": \"%s\", \"bytes\": %zu, ", t->name, t->bytes);
    if (t->view_of >= 0)
        put(b, "\"view_of\": \"%s\", \"view_offset\": %zu, ", g->t[t->view_of].name,
            t->view_offset);
    else
        put(b, "\"arena\": \"%s\", \"offset\": %zu, ", arena_names[t->arena], t->offset);
    put(b, "\"dtype\": \"f32\", \"shape\": [");
    for (int d = 0; d < t->ndim; d++)
        put(b, "%s%d", d ? ", " : "", t->shape[d]);
    put(b, "]");
    if ((t->flags & TF_CONST) == TF_CONST)
        put(b, ", \"constant\": true");
    else if (t->flags & TF_INPUT)
        put(b, ", \"input\": true");
    else if (t->flags & TF_OUTPUT)
        put(b, ", \"output\": true");
    if (t->view_of < 0 && t->arena != ARENA_WEIGHTS)
        put(b, ", \"lifetime\": [%d, %d]", map_step(g, st, t->first, 1),
            map_step(g, st, t->free_step, 0));
    put(b, "}");
}

static void put_op(struct buf *b, const struct graph *g, const struct op *o)
{
    put(b, "    {\"name\": \"%s\"", o->name);
    switch (o->kind) {
    case K_SYNC_RECORD:
        put(b, ", \"record\": \"%s\"", event_names[o->event]);
        break;
    case K_SYNC_WAIT:
        put(b, ", \"wait\": \"%s\"", event_names[o->event]);
        break;
    case K_SYNC_ALL:
        put(b, ", \"sync\": true");
        break;
    default:
        put(b, ", \"reads\": ");
        put_names(b, g, o->reads, o->n_reads);
        put(b, ", \"writes\": ");
        put_names(b, g, o->writes, o->n_writes);
        if (o->n_inplace) {
            put(b, ", \"inplace\": [");
            for (int p = 0; p < o->n_inplace; p++)
                put(b, "%s[\"%s\", \"%s\"]", p ? ", " : "", g->t[o->inplace[p][0]].name,
                    g->t[o->inplace[p][1]].name);
            put(b, "]");
        }
        break;
    }
    if (g->mode == EXEC_POOL && o->kind != K_SYNC_ALL)
        put(b, ", \"stream\": \"%s\"", o->stream ? "s1" : "main");
    if (o->arm != ARM_NONE)
        put(b, ", \"branch\": {\"if\": \"use_bias\", \"arm\": \"%s\"}",
            o->arm == ARM_BIAS ? "bias" : "proj");
    if (graph_in_loop(g, (int)(o - g->ops)))
        put(b, ", \"loop\": \"L0\"");
    put(b, "}");
}

char *plan_json(const struct graph *g, size_t *len)
{
    struct buf b = {malloc(4096), 0, 4096, 0};
    if (!b.p)
        return NULL;
    struct steps st;
    make_steps(g, &st);
    put(&b, "{\n  \"tlsan_plan\": 1,\n  \"name\": \"engine-%s-%s\",\n",
        g->mode == EXEC_POOL ? "pool" : "seq", bug_names[g->bug]);
    put(&b, "  \"schedule\": \"sequential\",\n  \"arenas\": [\n");
    for (int a = 0; a < ARENA_COUNT; a++)
        put(&b,
            "    {\"name\": \"%s\", \"bytes\": %zu, \"alignment\": 64, \"memory\": \"host\"}%s\n",
            arena_names[a], g->arena_bytes[a], a + 1 < ARENA_COUNT ? "," : "");
    put(&b, "  ],\n  \"tensors\": [\n");
    for (int i = 0; i < g->nt; i++) {
        put_tensor(&b, g, &st, i);
        put(&b, "%s\n", i + 1 < g->nt ? "," : "");
    }
    put(&b, "  ],\n  \"ops\": [\n");
    int first = 1;
    for (int s = 0; s < g->nops; s++) {
        if (g->ops[s].dropped)
            continue;
        put(&b, "%s", first ? "" : ",\n");
        first = 0;
        put_op(&b, g, &g->ops[s]);
    }
    put(&b, "\n  ]\n}\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
