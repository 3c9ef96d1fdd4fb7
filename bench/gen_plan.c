/* tlsan_gen_plan: generates a realistic memory plan for the checker benchmark.
 *
 *   tlsan_gen_plan --roots N --seed S [--inject K] [--lifetimes] [--no-shapes] -o PLAN.json
 *
 * The plan is shaped like an inference graph: ops in topological order, each reading one
 * to three recently produced tensors, sometimes an older one (a residual connection) and
 * often a weight, and writing one (sometimes two) new tensors. Activations go to arena
 * "act", placed by a greedy first-fit planner in first-write order (the way an on-line
 * arena allocator works); weights are constants bump-allocated in arena "weights". The
 * plan is clean by construction. `--inject K` then moves K intermediate tensors onto the
 * bytes of a tensor that is live at the same time, and every pair of roots that conflicts
 * afterwards is written to PLAN.json.injected ("a b" per line, a < b by name). A compact
 * description of the roots (PLAN.json.roots) feeds the naive all-pairs baseline.
 *
 * Exit status: 0 written, 2 bad arguments or an I/O error. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_shapes.h"
#include "support/splitmix.h"

#define ALIGN_BYTES     64
#define RECENT_WINDOW   6   /* ops read from the last few tensors produced... */
#define RESIDUAL_WINDOW 256 /* ...and sometimes from one this far back */

enum { KIND_ACT = 0, KIND_WEIGHT = 1 };
enum { ROOT_INPUT = 1u << 0, ROOT_OUTPUT = 1u << 1 };

/* One realistic tensor shape: f16 elements, so bytes = 2 * product of dims. */
typedef struct shape_def {
    uint64_t dims[3];
    unsigned n_dims;
    unsigned weight; /* relative frequency */
} shape_def;

/* Activations of a small transformer / CNN at batch 1: 4 KiB .. 4 MiB. */
static const shape_def act_shapes[] = {
    {{1, 16, 128}, 3, 2},   /* 4 KiB */
    {{1, 64, 128}, 3, 3},   /* 16 KiB */
    {{1, 128, 256}, 3, 4},  /* 64 KiB */
    {{1, 128, 768}, 3, 8},  /* 192 KiB: hidden state */
    {{1, 128, 2304}, 3, 2}, /* 576 KiB: fused qkv */
    {{1, 128, 3072}, 3, 3}, /* 768 KiB: MLP hidden */
    {{1, 512, 1024}, 3, 2}, /* 1 MiB */
    {{1, 512, 4096}, 3, 1}, /* 4 MiB */
};
/* Weights: biases, projections, embeddings. */
static const shape_def weight_shapes[] = {
    {{768, 0, 0}, 1, 3},     /* 1.5 KiB bias (a multiple of 64) */
    {{64, 64, 0}, 2, 2},     /* 8 KiB */
    {{256, 256, 0}, 2, 2},   /* 128 KiB */
    {{768, 768, 0}, 2, 4},   /* 1.1 MiB */
    {{768, 2304, 0}, 2, 1},  /* 3.4 MiB */
    {{1024, 2048, 0}, 2, 1}, /* 4 MiB */
};

typedef struct root {
    uint64_t offset_bytes;
    int64_t first, last; /* derived lifetime in steps */
    uint8_t kind;
    uint8_t flags;
    uint8_t shape;   /* index into act_shapes or weight_shapes */
    uint8_t n_views; /* a chain of views (view of view ...) read by later ops */
    uint32_t id;     /* number within its kind: t<id> or w<id> */
} root;

/* A handle names a root or one of its views: root index * 4 + view depth (0: the root). */
#define H_ROOT(h)    ((h) >> 2)
#define H_VIEW(h)    ((h)&3u)
#define H_MAKE(r, v) ((uint32_t)(r)*4u + (uint32_t)(v))
typedef struct op {
    uint32_t reads[5];
    uint32_t writes[2];
    uint8_t n_reads, n_writes;
    uint8_t type;
} op;

/* The plan shapes generated here (gen_shapes.c makes the multi-stream ones). */
typedef enum shape_kind {
    SHAPE_CURRENT,  /* the inference-shaped DAG described above */
    SHAPE_SEQ,      /* sequential names t0.. and o0.., 1-2 reads per op, no weights */
    SHAPE_DATAFLOW, /* the DAG under the dataflow schedule, each op reading its predecessor's output
                     */
    SHAPE_VIEWS,    /* ggml-like: most tensors read through chains of reshape/permute views */
} shape_kind;

typedef struct gen {
    shape_kind shape;
    root *roots;
    size_t n_roots, cap_roots;
    op *ops;
    size_t n_ops, cap_ops;
    uint64_t rng;
    uint32_t n_acts, n_weights;
} gen;

/* true with probability per_mille / 1000 */
static bool rng_chance(uint64_t *state, unsigned per_mille)
{
    return splitmix_below(state, 1000) < per_mille;
}

static unsigned pick_shape(uint64_t *state, const shape_def *defs, size_t n)
{
    unsigned total = 0;
    for (size_t i = 0; i < n; i++)
        total += defs[i].weight;
    unsigned r = (unsigned)splitmix_below(state, total);
    for (size_t i = 0; i < n; i++) {
        if (r < defs[i].weight)
            return (unsigned)i;
        r -= defs[i].weight;
    }
    return 0;
}

static uint64_t shape_bytes(const shape_def *def)
{
    uint64_t elems = 1;
    for (unsigned i = 0; i < def->n_dims; i++)
        elems *= def->dims[i];
    return elems * 2;
}

static uint64_t root_bytes(const root *r)
{
    return r->kind == KIND_WEIGHT ? shape_bytes(&weight_shapes[r->shape])
                                  : shape_bytes(&act_shapes[r->shape]);
}

static bool grow(void **data, size_t *cap, size_t need, size_t elem_bytes)
{
    if (need <= *cap)
        return true;
    size_t new_cap = *cap ? *cap * 2 : 1024;
    while (new_cap < need)
        new_cap *= 2;
    void *p = realloc(*data, new_cap * elem_bytes);
    if (!p)
        return false;
    *data = p;
    *cap = new_cap;
    return true;
}

static int64_t new_root(gen *g, uint8_t kind)
{
    if (!grow((void **)&g->roots, &g->cap_roots, g->n_roots + 1, sizeof(root)))
        return -1;
    root *r = &g->roots[g->n_roots];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    if (kind == KIND_WEIGHT) {
        r->shape = (uint8_t)pick_shape(&g->rng, weight_shapes,
                                       sizeof(weight_shapes) / sizeof(weight_shapes[0]));
        r->id = g->n_weights++;
        r->first = -1; /* constants: the last step is set once n_ops is known */
    } else {
        r->shape =
            (uint8_t)pick_shape(&g->rng, act_shapes, sizeof(act_shapes) / sizeof(act_shapes[0]));
        r->id = g->n_acts++;
    }
    return (int64_t)g->n_roots++;
}

static const char *const op_types[] = {"linear", "conv", "layernorm", "gelu",      "softmax",
                                       "add",    "mul",  "matmul",    "attention", "concat"};

/* Builds the op list and the roots' derived lifetimes. Returns false when out of memory. */
static bool build_graph(gen *g, uint64_t n_roots_wanted)
{
    bool ok = false;
    uint32_t *produced = NULL; /* handles in production order */
    size_t n_produced = 0, cap_produced = 0;
    uint64_t remaining = n_roots_wanted;

    /* Graph inputs: token embeddings, attention mask, position ids... */
    uint64_t n_inputs = n_roots_wanted / 20000 + 1;
    if (n_inputs > 4)
        n_inputs = 4;
    for (uint64_t i = 0; i < n_inputs && remaining > 0; i++, remaining--) {
        int64_t ri = new_root(g, KIND_ACT);
        if (ri < 0 || !grow((void **)&produced, &cap_produced, n_produced + 1, sizeof(uint32_t)))
            goto cleanup;
        g->roots[ri].flags |= ROOT_INPUT;
        g->roots[ri].first = g->roots[ri].last = -1;
        produced[n_produced++] = H_MAKE(ri, 0);
    }

    while (remaining > 0) {
        if (!grow((void **)&g->ops, &g->cap_ops, g->n_ops + 1, sizeof(op)))
            goto cleanup;
        int64_t step = (int64_t)g->n_ops;
        op *o = &g->ops[g->n_ops++];
        memset(o, 0, sizeof(*o));

        /* 1-3 distinct recent tensors */
        size_t window = n_produced < RECENT_WINDOW ? n_produced : RECENT_WINDOW;
        unsigned want = 1 + (unsigned)splitmix_below(&g->rng, g->shape == SHAPE_SEQ ? 2 : 3);
        if (want > window)
            want = (unsigned)window;
        /* dataflow: the previous op's output first, so every op depends on the one before
         * and the first-fit reuses are ordered by the data dependencies */
        if (g->shape == SHAPE_DATAFLOW && want > 0)
            o->reads[o->n_reads++] = produced[n_produced - 1];
        while (o->n_reads < want) {
            uint32_t h = produced[n_produced - 1 - splitmix_below(&g->rng, window)];
            bool dup = false;
            for (unsigned i = 0; i < o->n_reads; i++)
                dup |= H_ROOT(o->reads[i]) == H_ROOT(h);
            if (!dup)
                o->reads[o->n_reads++] = h;
        }
        /* a residual connection to an older tensor */
        if (g->shape != SHAPE_SEQ && n_produced > RECENT_WINDOW && rng_chance(&g->rng, 150)) {
            size_t span = n_produced - RECENT_WINDOW;
            if (span > RESIDUAL_WINDOW)
                span = RESIDUAL_WINDOW;
            uint32_t h = produced[n_produced - 1 - RECENT_WINDOW - splitmix_below(&g->rng, span)];
            bool dup = false;
            for (unsigned i = 0; i < o->n_reads; i++)
                dup |= H_ROOT(o->reads[i]) == H_ROOT(h);
            if (!dup)
                o->reads[o->n_reads++] = h;
        }
        for (unsigned i = 0; i < o->n_reads; i++)
            g->roots[H_ROOT(o->reads[i])].last = step;

        /* the outputs */
        unsigned n_out = rng_chance(&g->rng, 100) ? 2 : 1;
        if (n_out > remaining)
            n_out = (unsigned)remaining;
        for (unsigned i = 0; i < n_out; i++) {
            int64_t ri = new_root(g, KIND_ACT);
            if (ri < 0 ||
                !grow((void **)&produced, &cap_produced, n_produced + 1, sizeof(uint32_t)))
                goto cleanup;
            root *r = &g->roots[ri];
            r->first = r->last = step;
            uint32_t h = H_MAKE(ri, 0);
            /* a reshape: later consumers read it through a view; ggml-like plans chain a
             * permute and a reshape of the reshape on most tensors */
            if (g->shape == SHAPE_VIEWS ? rng_chance(&g->rng, 700)
                                        : g->shape != SHAPE_SEQ && rng_chance(&g->rng, 30)) {
                r->n_views = g->shape == SHAPE_VIEWS ? 1 + (uint8_t)splitmix_below(&g->rng, 3) : 1;
                h = H_MAKE(ri, r->n_views);
            }
            o->writes[o->n_writes++] = H_MAKE(ri, 0);
            produced[n_produced++] = h;
            /* a few extra graph outputs (e.g. a KV cache handed back) */
            if (splitmix_below(&g->rng, 10000) == 0)
                r->flags |= ROOT_OUTPUT;
        }
        remaining -= n_out;

        /* a weight: mostly its own, sometimes a shared (tied) one */
        if (g->shape == SHAPE_SEQ) {
            /* no weights */
        } else if (remaining > 0 && rng_chance(&g->rng, 600)) {
            int64_t wi = new_root(g, KIND_WEIGHT);
            if (wi < 0)
                goto cleanup;
            o->reads[o->n_reads++] = H_MAKE(wi, 0);
            remaining--;
        } else if (g->n_weights > 0 && rng_chance(&g->rng, 50)) {
            /* find a random existing weight by probing; roots are a mix of both kinds */
            for (int tries = 0; tries < 16; tries++) {
                size_t ri = (size_t)splitmix_below(&g->rng, g->n_roots);
                if (g->roots[ri].kind == KIND_WEIGHT) {
                    o->reads[o->n_reads++] = H_MAKE(ri, 0);
                    break;
                }
            }
        }
        /* a name for the op, from what it reads */
        bool has_weight =
            o->n_reads > 0 && g->roots[H_ROOT(o->reads[o->n_reads - 1])].kind == KIND_WEIGHT;
        unsigned n_act = o->n_reads - (has_weight ? 1 : 0);
        if (has_weight)
            o->type = (uint8_t)(splitmix_below(&g->rng, 3)); /* linear, conv, layernorm */
        else if (n_act <= 1)
            o->type = (uint8_t)(3 + splitmix_below(&g->rng, 2)); /* gelu, softmax */
        else if (n_act == 2)
            o->type = (uint8_t)(5 + splitmix_below(&g->rng, 3)); /* add, mul, matmul */
        else
            o->type = (uint8_t)(8 + splitmix_below(&g->rng, 2)); /* attention, concat */
    }

    /* The last tensor produced is the graph's output. */
    if (n_produced > 0)
        g->roots[H_ROOT(produced[n_produced - 1])].flags |= ROOT_OUTPUT;
    for (size_t i = 0; i < g->n_roots; i++) {
        root *r = &g->roots[i];
        if (r->kind == KIND_WEIGHT || (r->flags & ROOT_OUTPUT))
            r->last = (int64_t)g->n_ops;
    }
    ok = true;
cleanup:
    free(produced);
    return ok;
}

/* ---- the greedy first-fit planner ---- */

typedef struct gap {
    uint64_t offset_bytes, bytes;
} gap;

typedef struct free_list {
    gap *gaps; /* sorted by offset, disjoint, not touching, all below top */
    size_t n, cap;
    uint64_t top_bytes;  /* everything at or above is free */
    uint64_t peak_bytes; /* the arena size needed */
} free_list;

static bool fl_alloc(free_list *fl, uint64_t bytes, uint64_t *offset_out)
{
    for (size_t i = 0; i < fl->n; i++) {
        gap *gp = &fl->gaps[i];
        if (gp->bytes >= bytes) {
            *offset_out = gp->offset_bytes;
            gp->offset_bytes += bytes;
            gp->bytes -= bytes;
            if (gp->bytes == 0) {
                memmove(gp, gp + 1, (fl->n - i - 1) * sizeof(gap));
                fl->n--;
            }
            return true;
        }
    }
    /* No gap fits: a last gap touching the top grows into the free space above. */
    if (fl->n > 0 &&
        fl->gaps[fl->n - 1].offset_bytes + fl->gaps[fl->n - 1].bytes == fl->top_bytes) {
        *offset_out = fl->gaps[fl->n - 1].offset_bytes;
        fl->n--;
    } else {
        *offset_out = fl->top_bytes;
    }
    fl->top_bytes = *offset_out + bytes;
    if (fl->top_bytes > fl->peak_bytes)
        fl->peak_bytes = fl->top_bytes;
    return true;
}

static bool fl_free(free_list *fl, uint64_t offset_bytes, uint64_t bytes)
{
    size_t lo = 0, hi = fl->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fl->gaps[mid].offset_bytes < offset_bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* lo: the first gap after the freed block */
    bool merge_prev =
        lo > 0 && fl->gaps[lo - 1].offset_bytes + fl->gaps[lo - 1].bytes == offset_bytes;
    bool merge_next = lo < fl->n && offset_bytes + bytes == fl->gaps[lo].offset_bytes;
    if (merge_prev && merge_next) {
        fl->gaps[lo - 1].bytes += bytes + fl->gaps[lo].bytes;
        memmove(&fl->gaps[lo], &fl->gaps[lo + 1], (fl->n - lo - 1) * sizeof(gap));
        fl->n--;
        lo--;
    } else if (merge_prev) {
        fl->gaps[lo - 1].bytes += bytes;
        lo--;
    } else if (merge_next) {
        fl->gaps[lo].offset_bytes = offset_bytes;
        fl->gaps[lo].bytes += bytes;
    } else {
        if (!grow((void **)&fl->gaps, &fl->cap, fl->n + 1, sizeof(gap)))
            return false;
        memmove(&fl->gaps[lo + 1], &fl->gaps[lo], (fl->n - lo) * sizeof(gap));
        fl->gaps[lo].offset_bytes = offset_bytes;
        fl->gaps[lo].bytes = bytes;
        fl->n++;
    }
    /* a gap reaching the top gives its bytes back to the top */
    if (lo == fl->n - 1 && fl->gaps[lo].offset_bytes + fl->gaps[lo].bytes == fl->top_bytes) {
        fl->top_bytes = fl->gaps[lo].offset_bytes;
        fl->n--;
    }
    return true;
}

/* Min-heap of live roots keyed by last step, to release them once their lifetime is over. */
typedef struct heap {
    uint32_t *items;
    size_t n, cap;
} heap;

static bool heap_push(heap *h, const root *roots, uint32_t item)
{
    if (!grow((void **)&h->items, &h->cap, h->n + 1, sizeof(uint32_t)))
        return false;
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (roots[h->items[parent]].last <= roots[item].last)
            break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = item;
    return true;
}

static uint32_t heap_pop(heap *h, const root *roots)
{
    uint32_t top = h->items[0];
    uint32_t item = h->items[--h->n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && roots[h->items[child + 1]].last < roots[h->items[child]].last)
            child++;
        if (roots[item].last <= roots[h->items[child]].last)
            break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->n > 0)
        h->items[i] = item;
    return top;
}

/* Places activations first-fit in first-write order (roots were created in that order): a
 * root's bytes are reused only once its last step is strictly before the new root's first
 * step, because touching at one step is a conflict. Weights are bump-allocated. */
static bool place(gen *g, uint64_t *act_bytes, uint64_t *weight_bytes)
{
    bool ok = false;
    free_list fl = {0};
    heap live = {0};
    uint64_t weight_top = 0;
    for (size_t i = 0; i < g->n_roots; i++) {
        root *r = &g->roots[i];
        uint64_t bytes = root_bytes(r);
        if (r->kind == KIND_WEIGHT) {
            r->offset_bytes = weight_top;
            weight_top += bytes;
            continue;
        }
        while (live.n > 0 && g->roots[live.items[0]].last < r->first) {
            uint32_t done = heap_pop(&live, g->roots);
            if (!fl_free(&fl, g->roots[done].offset_bytes, root_bytes(&g->roots[done])))
                goto cleanup;
        }
        if (!fl_alloc(&fl, bytes, &r->offset_bytes) || !heap_push(&live, g->roots, (uint32_t)i))
            goto cleanup;
    }
    *act_bytes = fl.peak_bytes;
    *weight_bytes = weight_top;
    ok = true;
cleanup:
    free(fl.gaps);
    free(live.items);
    return ok;
}

/* ---- injection ---- */

static bool lifetimes_meet(const root *a, const root *b)
{
    return !(a->last < b->first || b->last < a->first);
}

static bool bytes_meet(const root *a, const root *b)
{
    uint64_t a_end = a->offset_bytes + root_bytes(a), b_end = b->offset_bytes + root_bytes(b);
    return a->offset_bytes < b_end && b->offset_bytes < a_end;
}

typedef struct pair {
    uint32_t a, b;
} pair;

static int pair_cmp(const void *pa, const void *pb)
{
    const pair *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    return x->b < y->b ? -1 : (x->b > y->b);
}

static void root_name(const root *r, char *buf, size_t buf_bytes)
{
    snprintf(buf, buf_bytes, "%c%" PRIu32, r->kind == KIND_WEIGHT ? 'w' : 't', r->id);
}

/* Moves k intermediate activations onto the bytes of another activation live at the same
 * time, then lists every conflicting pair by a direct scan (k is small). Returns false when
 * out of memory; *moved_out is how many moves were made (fewer when the plan is tiny). */
static bool inject(gen *g, uint64_t k, uint64_t *act_bytes, pair **pairs_out, size_t *n_pairs_out,
                   uint64_t *moved_out)
{
    uint32_t *moved = calloc(k ? k : 1, sizeof(uint32_t));
    uint8_t *is_moved = calloc(g->n_roots ? g->n_roots : 1, 1);
    pair *pairs = NULL;
    size_t n_pairs = 0, cap_pairs = 0;
    uint64_t n_moved = 0;
    bool ok = false;
    if (!moved || !is_moved)
        goto cleanup;
    for (uint64_t attempt = 0; n_moved < k && attempt < 100 * (k + 1); attempt++) {
        uint32_t t = (uint32_t)splitmix_below(&g->rng, g->n_roots);
        root *rt = &g->roots[t];
        if (rt->kind != KIND_ACT || (rt->flags & (ROOT_INPUT | ROOT_OUTPUT)) || is_moved[t])
            continue;
        /* reservoir-sample one activation live at the same time, not already sharing */
        uint32_t chosen = UINT32_MAX;
        uint64_t seen = 0;
        for (size_t u = 0; u < g->n_roots; u++) {
            const root *ru = &g->roots[u];
            if (u == t || ru->kind != KIND_ACT || !lifetimes_meet(rt, ru) || bytes_meet(rt, ru))
                continue;
            if (splitmix_below(&g->rng, ++seen) == 0)
                chosen = (uint32_t)u;
        }
        if (chosen == UINT32_MAX)
            continue;
        rt->offset_bytes = g->roots[chosen].offset_bytes;
        uint64_t end = rt->offset_bytes + root_bytes(rt);
        if (end > *act_bytes)
            *act_bytes = end;
        is_moved[t] = 1;
        moved[n_moved++] = t;
    }
    for (uint64_t i = 0; i < n_moved; i++) {
        const root *rt = &g->roots[moved[i]];
        for (size_t u = 0; u < g->n_roots; u++) {
            const root *ru = &g->roots[u];
            if (u == moved[i] || ru->kind != KIND_ACT || !lifetimes_meet(rt, ru) ||
                !bytes_meet(rt, ru))
                continue;
            if (!grow((void **)&pairs, &cap_pairs, n_pairs + 1, sizeof(pair)))
                goto cleanup;
            pairs[n_pairs].a = moved[i] < u ? moved[i] : (uint32_t)u;
            pairs[n_pairs].b = moved[i] < u ? (uint32_t)u : moved[i];
            n_pairs++;
        }
    }
    /* two moved roots that collide are found twice */
    if (n_pairs > 0)
        qsort(pairs, n_pairs, sizeof(pair), pair_cmp);
    size_t n_unique = 0;
    for (size_t i = 0; i < n_pairs; i++)
        if (n_unique == 0 || pair_cmp(&pairs[n_unique - 1], &pairs[i]) != 0)
            pairs[n_unique++] = pairs[i];
    *pairs_out = pairs;
    pairs = NULL;
    *n_pairs_out = n_unique;
    *moved_out = n_moved;
    ok = true;
cleanup:
    free(pairs);
    free(moved);
    free(is_moved);
    return ok;
}

/* ---- output ---- */

static void write_shape(FILE *f, const shape_def *def, bool drop_batch)
{
    fputs(",\"dtype\":\"f16\",\"shape\":[", f);
    unsigned start = drop_batch && def->n_dims > 1 ? 1 : 0;
    for (unsigned i = start; i < def->n_dims; i++)
        fprintf(f, i > start ? ",%" PRIu64 : "%" PRIu64, def->dims[i]);
    fputc(']', f);
}

/* View k (1-based) of a root is named NAME_v, NAME_v2, NAME_v3 (each a view of the one
 * before: reshape, permute, reshape). */
static void view_name(char *buf, size_t buf_bytes, const char *root_name_s, unsigned k)
{
    if (k == 1)
        snprintf(buf, buf_bytes, "%s_v", root_name_s);
    else
        snprintf(buf, buf_bytes, "%s_v%u", root_name_s, k);
}

static void write_handle(FILE *f, const gen *g, uint32_t h)
{
    char name[32], view[40];
    root_name(&g->roots[H_ROOT(h)], name, sizeof(name));
    if (H_VIEW(h) == 0) {
        fprintf(f, "\"%s\"", name);
        return;
    }
    view_name(view, sizeof view, name, H_VIEW(h));
    fprintf(f, "\"%s\"", view);
}

/* One plan object (no trailing newline); key_json, when not NULL, is its cache key. */
static void write_plan_object(FILE *f, const gen *g, const char *plan_name, const char *key_json,
                              uint64_t act_bytes, uint64_t weight_bytes, bool lifetimes,
                              bool shapes)
{
    char name[32], view[40], base[40];
    fprintf(f, "{\"tlsan_plan\":1,\"name\":\"%s\",\"schedule\":\"%s\",\n", plan_name,
            g->shape == SHAPE_DATAFLOW ? "dataflow" : "sequential");
    if (key_json)
        fprintf(f, "\"key\":%s,\n", key_json);
    fprintf(f,
            "\"arenas\":[{\"name\":\"act\",\"bytes\":%" PRIu64
            ",\"alignment\":%d,\"memory\":\"host\"},\n"
            " {\"name\":\"weights\",\"bytes\":%" PRIu64
            ",\"alignment\":%d,\"memory\":\"host\"}],\n",
            act_bytes, ALIGN_BYTES, weight_bytes, ALIGN_BYTES);
    fputs("\"tensors\":[\n", f);
    bool first = true;
    for (size_t i = 0; i < g->n_roots; i++) {
        const root *r = &g->roots[i];
        root_name(r, name, sizeof(name));
        const shape_def *def =
            r->kind == KIND_WEIGHT ? &weight_shapes[r->shape] : &act_shapes[r->shape];
        fprintf(f, "%s{\"name\":\"%s\",\"bytes\":%" PRIu64 ",\"arena\":\"%s\",\"offset\":%" PRIu64,
                first ? "" : ",\n", name, shape_bytes(def),
                r->kind == KIND_WEIGHT ? "weights" : "act", r->offset_bytes);
        first = false;
        if (shapes)
            write_shape(f, def, false);
        if (r->kind == KIND_WEIGHT)
            fputs(",\"constant\":true", f);
        if (r->flags & ROOT_INPUT)
            fputs(",\"input\":true", f);
        if (r->flags & ROOT_OUTPUT)
            fputs(",\"output\":true", f);
        if (lifetimes)
            fprintf(f, ",\"lifetime\":[%" PRId64 ",%" PRId64 "]", r->first, r->last);
        fputc('}', f);
        snprintf(base, sizeof base, "%s", name);
        for (unsigned k = 1; k <= r->n_views; k++) {
            view_name(view, sizeof view, name, k);
            fprintf(f, ",\n{\"name\":\"%s\",\"bytes\":%" PRIu64 ",\"view_of\":\"%s\"", view,
                    shape_bytes(def), base);
            if (shapes)
                write_shape(f, def, k % 2 == 1);
            fputc('}', f);
            snprintf(base, sizeof base, "%s", view);
        }
    }
    fputs("],\n\"ops\":[\n", f);
    for (size_t k = 0; k < g->n_ops; k++) {
        const op *o = &g->ops[k];
        if (g->shape == SHAPE_SEQ)
            fprintf(f, "%s{\"name\":\"o%zu\",\"reads\":[", k ? ",\n" : "", k);
        else
            fprintf(f, "%s{\"name\":\"%s_%zu\",\"reads\":[", k ? ",\n" : "", op_types[o->type], k);
        for (unsigned i = 0; i < o->n_reads; i++) {
            if (i)
                fputc(',', f);
            write_handle(f, g, o->reads[i]);
        }
        fputs("],\"writes\":[", f);
        for (unsigned i = 0; i < o->n_writes; i++) {
            if (i)
                fputc(',', f);
            write_handle(f, g, o->writes[i]);
        }
        fputs("]}", f);
    }
    fputs("]}", f);
}

static bool write_plan(const gen *g, const char *path, uint64_t seed, uint64_t act_bytes,
                       uint64_t weight_bytes, bool lifetimes, bool shapes)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    char plan_name[64];
    snprintf(plan_name, sizeof plan_name, "bench-%zu-s%" PRIu64, g->n_roots, seed);
    write_plan_object(f, g, plan_name, NULL, act_bytes, weight_bytes, lifetimes, shapes);
    fputc('\n', f);
    bool ok = !ferror(f);
    if (fclose(f) != 0)
        ok = false;
    return ok;
}

/* PLAN.json.roots: "N_ROOTS N_OPS" then "name arena offset bytes first last" per root. */
static bool write_roots(const gen *g, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    char name[32];
    fprintf(f, "%zu %zu\n", g->n_roots, g->n_ops);
    for (size_t i = 0; i < g->n_roots; i++) {
        const root *r = &g->roots[i];
        root_name(r, name, sizeof(name));
        fprintf(f, "%s %d %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 "\n", name, r->kind,
                r->offset_bytes, root_bytes(r), r->first, r->last);
    }
    bool ok = !ferror(f);
    if (fclose(f) != 0)
        ok = false;
    return ok;
}

/* "PREFIXa b" per pair, names in byte order, so the sidecar compares directly against
 * sorted findings. */
static void put_pairs(FILE *f, const gen *g, const char *prefix, const pair *pairs, size_t n_pairs)
{
    char a[32], b[32];
    for (size_t i = 0; i < n_pairs; i++) {
        root_name(&g->roots[pairs[i].a], a, sizeof(a));
        root_name(&g->roots[pairs[i].b], b, sizeof(b));
        if (strcmp(a, b) < 0)
            fprintf(f, "%s%s %s\n", prefix, a, b);
        else
            fprintf(f, "%s%s %s\n", prefix, b, a);
    }
}

static bool write_pairs(const gen *g, const char *path, const char *prefix, const pair *pairs,
                        size_t n_pairs)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    put_pairs(f, g, prefix, pairs, n_pairs);
    bool ok = !ferror(f);
    if (fclose(f) != 0)
        ok = false;
    return ok;
}

static void gen_free(gen *g)
{
    free(g->roots);
    free(g->ops);
    g->roots = NULL;
    g->ops = NULL;
    g->n_roots = g->n_ops = g->cap_roots = g->cap_ops = 0;
    g->n_acts = g->n_weights = 0;
}

/* A plan cache of many keys (an engine's plans for each sequence length): n_roots / 1000
 * plans of about 1000 roots, keyed {"seq": i}; one plan in five of them (at least one)
 * gets one injected move. PLAN.json.expected lists "PLAN live-overlap a b". */
static int write_cache(const char *out_path, const char *expected_path, uint64_t n_roots,
                       uint64_t seed, uint64_t k_inject)
{
    int status = 2;
    FILE *f = fopen(out_path, "w"), *e = fopen(expected_path, "w");
    gen g = {0};
    pair *pairs = NULL;
    if (!f || !e) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", out_path, strerror(errno));
        goto cleanup;
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    uint64_t n_plans = n_roots / 1000 ? n_roots / 1000 : 1;
    uint64_t every = n_plans / 5 ? n_plans / 5 : 1, n_expected = 0, n_ops = 0;
    fputs("{\"tlsan_plan_cache\":1,\"plans\":[\n", f);
    for (uint64_t i = 0; i < n_plans; i++) {
        uint64_t want = n_roots / n_plans + (i < n_roots % n_plans ? 1 : 0);
        uint64_t act_bytes = 0, weight_bytes = 0, n_moved = 0;
        size_t n_pairs = 0;
        g.shape = SHAPE_CURRENT;
        g.rng = seed * 1000003u + i;
        if (!build_graph(&g, want) || !place(&g, &act_bytes, &weight_bytes) ||
            !inject(&g, i % every == 0 && k_inject ? 1 : 0, &act_bytes, &pairs, &n_pairs,
                    &n_moved)) {
            fputs("tlsan_gen_plan: out of memory\n", stderr);
            goto cleanup;
        }
        char name[32], key[32], prefix[48];
        snprintf(name, sizeof name, "k%" PRIu64, i);
        snprintf(key, sizeof key, "{\"seq\":%" PRIu64 "}", i);
        snprintf(prefix, sizeof prefix, "%s live-overlap ", name);
        if (i)
            fputs(",\n", f);
        write_plan_object(f, &g, name, key, act_bytes, weight_bytes, false, true);
        put_pairs(e, &g, prefix, pairs, n_pairs);
        n_expected += n_pairs;
        n_ops += g.n_ops;
        free(pairs);
        pairs = NULL;
        gen_free(&g);
    }
    fputs("]}\n", f);
    if (ferror(f) || ferror(e)) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", out_path, strerror(errno));
        goto cleanup;
    }
    fprintf(stderr,
            "tlsan_gen_plan: %s: %" PRIu64 " roots, %" PRIu64 " ops in %" PRIu64
            " cached plans, %" PRIu64 " conflicting pairs\n",
            out_path, n_roots, n_ops, n_plans, n_expected);
    status = 0;
cleanup:
    if (f && fclose(f) != 0)
        status = 2;
    if (e && fclose(e) != 0)
        status = 2;
    free(pairs);
    gen_free(&g);
    return status;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return false;
    *out = v;
    return true;
}

static void usage(FILE *f)
{
    fputs("usage: tlsan_gen_plan --roots N --seed S [--inject K] [--shape SHAPE] [--lifetimes]\n"
          "                      [--no-shapes] -o PLAN.json\n"
          "  Writes a realistic clean plan of N storage roots (activations placed first-fit,\n"
          "  weights as constants), then moves K intermediate tensors onto live bytes.\n"
          "  Sidecars: PLAN.json.expected (the exact findings, \"KIND a b\" per line, names\n"
          "  sorted; \"PLAN KIND a b\" for a cache), PLAN.json.injected (conflicting pairs,\n"
          "  \"a b\") and PLAN.json.roots (compact roots for tlsan_naive_check).\n"
          "  SHAPE: current (default), seq (names t0.., o0.., 1-2 reads, no weights),\n"
          "  dataflow, views (chains of views), cache (plans of 1000 roots, one per key),\n"
          "  streams (3 streams handing tensors on by events, many tenants per byte; K waits\n"
          "  dropped), branchy (streams with conditional tenants; K waits dropped).\n"
          "  --lifetimes  also declare each root's exact lifetime\n"
          "  --no-shapes  leave out dtype and shape (a smaller file)\n",
          f);
}

int main(int argc, char **argv)
{
    uint64_t n_roots = 0, seed = 1, k_inject = 0;
    bool have_roots = false, lifetimes = false, shapes = true;
    const char *out_path = NULL, *shape_name = "current";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--lifetimes")) {
            lifetimes = true;
        } else if (!strcmp(a, "--no-shapes")) {
            shapes = false;
        } else if (v && !strcmp(a, "--roots")) {
            have_roots = parse_u64(v, &n_roots);
            if (!have_roots || n_roots == 0 || n_roots > UINT32_MAX / 2) {
                fprintf(stderr, "tlsan_gen_plan: --roots wants 1..%u, not '%s'\n", UINT32_MAX / 2,
                        v);
                return 2;
            }
            i++;
        } else if (v && !strcmp(a, "--seed")) {
            if (!parse_u64(v, &seed)) {
                fprintf(stderr, "tlsan_gen_plan: --seed wants an unsigned integer, not '%s'\n", v);
                return 2;
            }
            i++;
        } else if (v && !strcmp(a, "--inject")) {
            if (!parse_u64(v, &k_inject) || k_inject > 1000000) {
                fprintf(stderr, "tlsan_gen_plan: --inject wants 0..1000000, not '%s'\n", v);
                return 2;
            }
            i++;
        } else if (v && !strcmp(a, "--shape")) {
            shape_name = v;
            i++;
        } else if (v && !strcmp(a, "-o")) {
            out_path = v;
            i++;
        } else {
            fprintf(stderr, "tlsan_gen_plan: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!have_roots || !out_path) {
        usage(stderr);
        return 2;
    }

    int status = 2;
    gen g = {0};
    g.rng = seed;
    pair *pairs = NULL;
    size_t n_pairs = 0;
    uint64_t act_bytes = 0, weight_bytes = 0, n_moved = 0;
    size_t path_bytes = strlen(out_path) + 16;
    char *side = malloc(path_bytes);
    if (!side) {
        fputs("tlsan_gen_plan: out of memory\n", stderr);
        goto cleanup;
    }
    snprintf(side, path_bytes, "%s.expected", out_path);
    if (!strcmp(shape_name, "streams") || !strcmp(shape_name, "branchy")) {
        status = gen_streams_write(out_path, side, n_roots, seed, k_inject,
                                   !strcmp(shape_name, "branchy"));
        goto cleanup;
    }
    if (!strcmp(shape_name, "cache")) {
        status = write_cache(out_path, side, n_roots, seed, k_inject);
        goto cleanup;
    }
    if (!strcmp(shape_name, "seq"))
        g.shape = SHAPE_SEQ;
    else if (!strcmp(shape_name, "dataflow"))
        g.shape = SHAPE_DATAFLOW;
    else if (!strcmp(shape_name, "views"))
        g.shape = SHAPE_VIEWS;
    else if (strcmp(shape_name, "current") != 0) {
        fprintf(stderr, "tlsan_gen_plan: unknown shape '%s'\n", shape_name);
        usage(stderr);
        goto cleanup;
    }
    if (g.shape == SHAPE_SEQ)
        shapes = false;
    if (!build_graph(&g, n_roots) || !place(&g, &act_bytes, &weight_bytes) ||
        !inject(&g, k_inject, &act_bytes, &pairs, &n_pairs, &n_moved)) {
        fputs("tlsan_gen_plan: out of memory\n", stderr);
        goto cleanup;
    }
    if (!write_plan(&g, out_path, seed, act_bytes, weight_bytes, lifetimes, shapes)) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", out_path, strerror(errno));
        goto cleanup;
    }
    if (!write_pairs(&g, side, "live-overlap ", pairs, n_pairs)) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", side, strerror(errno));
        goto cleanup;
    }
    snprintf(side, path_bytes, "%s.injected", out_path);
    if (!write_pairs(&g, side, "", pairs, n_pairs)) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", side, strerror(errno));
        goto cleanup;
    }
    snprintf(side, path_bytes, "%s.roots", out_path);
    if (!write_roots(&g, side)) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", side, strerror(errno));
        goto cleanup;
    }
    fprintf(stderr,
            "tlsan_gen_plan: %s: %zu roots (%" PRIu32 " activations, %" PRIu32
            " weights), %zu ops, act arena %" PRIu64 " bytes, %" PRIu64
            " moved, %zu conflicting pairs\n",
            out_path, g.n_roots, g.n_acts, g.n_weights, g.n_ops, act_bytes, n_moved, n_pairs);
    if (n_moved < k_inject)
        fprintf(stderr,
                "tlsan_gen_plan: warning: only %" PRIu64 " of %" PRIu64 " injections possible\n",
                n_moved, k_inject);
    status = 0;
cleanup:
    free(side);
    free(pairs);
    free(g.roots);
    free(g.ops);
    return status;
}
