/* graph.c - builds the model: a tiny transformer block run twice by a loop (shared weights,
 * a recurrent memory carried between iterations), a two-armed branch on use_bias and a small
 * scoring tail. In pool mode attention head 1 and the KV-cache save run on stream s1, with
 * the events that order them against the main stream. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const bug_names[BUG_COUNT_] = {
    "none",         "lifetime-short", "view-untracked", "inplace-still-read", "branch-one-arm",
    "loop-carried", "missing-event",  "output-reused",  "stale-async-write",
};

/* Event ids are 1-based; index 0 is unused. */
const char *const event_names[] = {"", "e_qkv", "e_h1", "e_c0", "e_kv"};
enum { EV_QKV = 1, EV_H1, EV_C0, EV_KV };

const char *const arena_names[ARENA_COUNT] = {"weights", "act", "ws"};

static void die(const char *what, const char *name)
{
    fprintf(stderr, "engine: graph: %s: %s\n", what, name);
    exit(3);
}

/* A tensor; shape as up to 4 extents, 0-terminated. */
static int add_tensor(struct graph *g, const char *name, int arena, unsigned flags, int d0, int d1,
                      int d2, int d3)
{
    if (g->nt == MAX_TENSORS)
        die("too many tensors", name);
    struct tensor *t = &g->t[g->nt];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    int dims[MAX_DIMS] = {d0, d1, d2, d3};
    size_t elems = 1;
    for (int i = 0; i < MAX_DIMS && dims[i] > 0; i++) {
        t->shape[t->ndim++] = dims[i];
        elems *= (size_t)dims[i];
    }
    t->bytes = elems * sizeof(float);
    t->view_of = -1;
    t->arena = arena;
    t->flags = flags;
    t->inplace_of = -1;
    t->inplace_op = -1;
    t->workspace = arena == ARENA_WS;
    return g->nt++;
}

static int add_view(struct graph *g, const char *name, const char *base, size_t offset, int d0,
                    int d1, int d2)
{
    int b = graph_find(g, base);
    if (b < 0)
        die("unknown view base", base);
    int v = add_tensor(g, name, -1, 0, d0, d1, d2, 0);
    g->t[v].view_of = b;
    g->t[v].view_offset = offset;
    if (offset + g->t[v].bytes > g->t[b].bytes)
        die("view past its base", name);
    return v;
}

/* Parses "a,b,c" into tensor ids. */
static int parse_list(struct graph *g, const char *list, int *out)
{
    int n = 0;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int id = graph_find(g, tok);
        if (id < 0)
            die("unknown tensor", tok);
        if (n == MAX_IO)
            die("too many operands", list);
        out[n++] = id;
    }
    return n;
}

static struct op *add_op_at(struct graph *g, const char *file, int line, const char *func,
                            const char *name, enum op_kind kind, int stream, const char *reads,
                            const char *writes)
{
    if (g->nops == MAX_OPS)
        die("too many ops", name);
    struct op *o = &g->ops[g->nops++];
    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", name);
    o->kind = kind;
    o->stream = g->mode == EXEC_POOL ? stream : 0;
    o->arm = ARM_NONE;
    o->alpha = 1.0f;
    o->file = file;
    o->line = line;
    o->func = func;
    if (reads)
        o->n_reads = parse_list(g, reads, o->reads);
    if (writes)
        o->n_writes = parse_list(g, writes, o->writes);
    return o;
}

/* add_op at the line of the model that declares the op. */
#define add_op(g, ...) add_op_at((g), __FILE__, __LINE__, __func__, __VA_ARGS__)

static void add_inplace(struct graph *g, struct op *o, const char *out, const char *in)
{
    o->inplace[o->n_inplace][0] = graph_find(g, out);
    o->inplace[o->n_inplace][1] = graph_find(g, in);
    o->n_inplace++;
}

/* Synchronisation ops exist only in the pool executor's schedule. */
static void add_sync(struct graph *g, const char *name, enum op_kind kind, int stream, int event)
{
    if (g->mode != EXEC_POOL)
        return;
    struct op *o = add_op(g, name, kind, stream, NULL, NULL);
    o->event = event;
    /* missing-event: the executor forgets the event that lets main reuse the bytes of qkv
     * only after s1 saved K and V from it. */
    if (g->bug == BUG_MISSING_EVENT && event == EV_KV)
        o->dropped = 1;
}

static void build_tensors(struct graph *g)
{
    const int seq = g->seq, hid = g->hid, hdim = g->hdim, ffn = g->ffn;
    const int W = ARENA_WEIGHTS, A = ARENA_ACT, S = ARENA_WS;
    /* Constants. */
    add_tensor(g, "pos", W, TF_CONST, seq, hid, 0, 0);
    add_tensor(g, "ln1.g", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "ln1.b", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "w_qkv", W, TF_CONST, hid, 3 * hid, 0, 0);
    add_tensor(g, "w_o", W, TF_CONST, hid, hid, 0, 0);
    add_tensor(g, "ln2.g", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "ln2.b", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "w_fc1", W, TF_CONST, hid, ffn, 0, 0);
    add_tensor(g, "w_fc2", W, TF_CONST, ffn, hid, 0, 0);
    add_tensor(g, "lnf.g", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "lnf.b", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "w_head", W, TF_CONST, hid, hid, 0, 0);
    add_tensor(g, "b_head", W, TF_CONST, hid, 0, 0, 0);
    add_tensor(g, "w_proj", W, TF_CONST, hid, hid, 0, 0);
    add_tensor(g, "w_conf", W, TF_CONST, hid, NCONF, 0, 0);
    /* Graph inputs: the token activations and the recurrent memory. */
    add_tensor(g, "x", A, TF_INPUT, seq, hid, 0, 0);
    add_tensor(g, "mem", A, TF_INPUT, seq, hid, 0, 0);
    /* The block. */
    add_tensor(g, "h", A, 0, seq, hid, 0, 0);
    add_tensor(g, "hm", A, 0, seq, hid, 0, 0);
    add_tensor(g, "ln1_out", A, 0, seq, hid, 0, 0);
    add_tensor(g, "qkv", A, 0, 3, HEADS, seq, hdim);
    const size_t part = (size_t)HEADS * seq * hdim * sizeof(float);
    const size_t head = (size_t)seq * hdim * sizeof(float);
    add_view(g, "q", "qkv", 0, HEADS, seq, hdim); /* slices of qkv */
    add_view(g, "k", "qkv", part, HEADS, seq, hdim);
    add_view(g, "v", "qkv", 2 * part, HEADS, seq, hdim);
    add_view(g, "q0", "q", 0, seq, hdim, 0); /* one head of a slice */
    add_view(g, "q1", "q", head, seq, hdim, 0);
    add_view(g, "k0", "k", 0, seq, hdim, 0);
    add_view(g, "k1", "k", head, seq, hdim, 0);
    add_view(g, "v0", "v", 0, seq, hdim, 0);
    add_view(g, "v1", "v", head, seq, hdim, 0);
    add_tensor(g, "sc0", A, 0, seq, seq, 0, 0);
    add_tensor(g, "pr0", A, 0, seq, seq, 0, 0);
    add_tensor(g, "ws0", S, 0, seq, 2, 0, 0);
    add_tensor(g, "ctx0", A, 0, seq, hdim, 0, 0);
    add_tensor(g, "sc1", A, 0, seq, seq, 0, 0);
    add_tensor(g, "pr1", A, 0, seq, seq, 0, 0);
    add_tensor(g, "ws1", S, 0, seq, 2, 0, 0);
    add_tensor(g, "ctx1", A, 0, seq, hdim, 0, 0);
    add_tensor(g, "kv_cache", A, TF_OUTPUT, 2, HEADS, seq, hdim);
    add_tensor(g, "attn_cat", A, 0, HEADS, seq, hdim, 0);
    add_view(g, "cat0", "attn_cat", 0, seq, hdim, 0); /* concat destinations */
    add_view(g, "cat1", "attn_cat", head, seq, hdim, 0);
    add_tensor(g, "attn_o", A, 0, seq, hid, 0, 0);
    add_tensor(g, "h1", A, 0, seq, hid, 0, 0);
    add_tensor(g, "ln2_out", A, 0, seq, hid, 0, 0);
    add_tensor(g, "fc1_out", A, 0, seq, ffn, 0, 0);
    add_tensor(g, "act", A, 0, seq, ffn, 0, 0);
    add_tensor(g, "fc2_out", A, 0, seq, hid, 0, 0);
    /* The head, the branch and the scoring tail. */
    add_tensor(g, "hf", A, 0, seq, hid, 0, 0);
    add_tensor(g, "logits", A, 0, seq, hid, 0, 0);
    add_tensor(g, "y", A, TF_OUTPUT, seq, hid, 0, 0);
    add_tensor(g, "py", A, 0, seq, hid, 0, 0);
    add_tensor(g, "wsy", S, 0, seq, 2, 0, 0);
    add_tensor(g, "gy", A, 0, seq, hid, 0, 0);
    add_tensor(g, "sy", A, 0, seq, hid, 0, 0);
    add_tensor(g, "conf", A, TF_OUTPUT, seq, NCONF, 0, 0);
}

static void build_ops(struct graph *g)
{
    struct op *o;
    o = add_op(g, "embed", K_ADD, 0, "x,pos", "h");

    g->loop_begin = g->nops;
    o = add_op(g, "b.mix", K_ADD, 0, "h,mem", "hm");
    o->alpha = 0.5f;
    /* The recurrent memory for the next iteration. */
    add_op(g, "b.memup", K_RELU, 0, "hm", "mem");
    add_op(g, "b.ln1", K_LAYERNORM, 0, "hm,ln1.g,ln1.b", "ln1_out");
    add_op(g, "b.qkv", K_QKV, 0, "ln1_out,w_qkv", "qkv");
    add_sync(g, "rec_qkv", K_SYNC_RECORD, 0, EV_QKV);
    add_sync(g, "wait_qkv", K_SYNC_WAIT, 1, EV_QKV);
    /* Head 1 on s1. */
    add_op(g, "b.scores1", K_SCORES, 1, "q1,k1", "sc1");
    o = add_op(g, "b.softmax1", K_SOFTMAX, 1, "sc1", "pr1,ws1");
    add_inplace(g, o, "pr1", "sc1");
    add_op(g, "b.ctx1", K_MATMUL, 1, "pr1,v1", "ctx1");
    add_sync(g, "rec_h1", K_SYNC_RECORD, 1, EV_H1);
    /* Head 0 on main. */
    add_op(g, "b.scores0", K_SCORES, 0, "q0,k0", "sc0");
    o = add_op(g, "b.softmax0", K_SOFTMAX, 0, "sc0", "pr0,ws0");
    add_inplace(g, o, "pr0", "sc0");
    add_op(g, "b.ctx0", K_MATMUL, 0, "pr0,v0", "ctx0");
    /* s1 saves K and V once main is done with qkv, then frees qkv on s1. */
    add_sync(g, "rec_c0", K_SYNC_RECORD, 0, EV_C0);
    add_sync(g, "wait_c0", K_SYNC_WAIT, 1, EV_C0);
    add_op(g, "b.kvsave", K_CONCAT, 1, "k,v", "kv_cache");
    add_sync(g, "rec_kv", K_SYNC_RECORD, 1, EV_KV);
    add_sync(g, "wait_h1", K_SYNC_WAIT, 0, EV_H1);
    add_sync(g, "wait_kv", K_SYNC_WAIT, 0, EV_KV);
    add_op(g, "b.concat", K_CONCAT, 0, "ctx0,ctx1", "cat0,cat1");
    add_op(g, "b.oproj", K_OPROJ, 0, "attn_cat,w_o", "attn_o");
    o = add_op(g, "b.res1", K_ADD, 0, "hm,attn_o", "h1");
    add_inplace(g, o, "h1", "hm");
    /* Layernorm may run in place, but b.res2 still reads h1: a correct planner declines. */
    o = add_op(g, "b.ln2", K_LAYERNORM, 0, "h1,ln2.g,ln2.b", "ln2_out");
    add_inplace(g, o, "ln2_out", "h1");
    add_op(g, "b.fc1", K_MATMUL, 0, "ln2_out,w_fc1", "fc1_out");
    o = add_op(g, "b.gelu", K_GELU, 0, "fc1_out", "act");
    add_inplace(g, o, "act", "fc1_out");
    add_op(g, "b.fc2", K_MATMUL, 0, "act,w_fc2", "fc2_out");
    add_op(g, "b.res2", K_ADD, 0, "h1,fc2_out", "h");
    g->loop_end = g->nops - 1;

    add_op(g, "lnf", K_LAYERNORM, 0, "h,lnf.g,lnf.b", "hf");
    /* if use_bias: y = hf w_head + b_head, else: y = hf w_proj */
    o = add_op(g, "head", K_MATMUL, 0, "hf,w_head", "logits");
    o->arm = ARM_BIAS;
    o = add_op(g, "add_bias", K_ADD, 0, "logits,b_head", "y");
    o->arm = ARM_BIAS;
    o = add_op(g, "proj", K_MATMUL, 0, "hf,w_proj", "y");
    o->arm = ARM_PROJ;
    add_op(g, "softmax_y", K_SOFTMAX, 0, "y", "py,wsy");
    add_op(g, "gelu_y", K_GELU, 0, "py", "gy");
    add_op(g, "mix_y", K_ADD, 0, "py,gy", "sy");
    add_op(g, "conf", K_MATMUL, 0, "sy,w_conf", "conf");
    add_sync(g, "join", K_SYNC_ALL, 0, 0);
}

void graph_build(struct graph *g, enum exec_mode mode, enum bug bug, int use_bias, int seq, int hid)
{
    memset(g, 0, sizeof(*g));
    g->seq = seq;
    g->hid = hid;
    g->hdim = hid / HEADS;
    g->ffn = 2 * hid;
    g->mode = mode;
    g->bug = bug;
    g->use_bias = use_bias;
    build_tensors(g);
    build_ops(g);
}

int graph_find(const struct graph *g, const char *name)
{
    for (int i = 0; i < g->nt; i++)
        if (strcmp(g->t[i].name, name) == 0)
            return i;
    return -1;
}

int graph_root(const struct graph *g, int t)
{
    while (g->t[t].view_of >= 0)
        t = g->t[t].view_of;
    return t;
}

int graph_in_loop(const struct graph *g, int s)
{
    return s >= g->loop_begin && s <= g->loop_end;
}

int graph_is_sync(const struct op *o)
{
    return o->kind == K_SYNC_RECORD || o->kind == K_SYNC_WAIT || o->kind == K_SYNC_ALL;
}

size_t graph_elems(const struct tensor *t)
{
    return t->bytes / sizeof(float);
}

int graph_walk(const struct graph *g, int *steps, int *iters, int max)
{
    int n = 0;
    for (int s = 0; s < g->loop_begin && n < max; s++, n++)
        steps[n] = s, iters[n] = 0;
    for (int it = 0; it < LOOP_ITERS; it++)
        for (int s = g->loop_begin; s <= g->loop_end && n < max; s++, n++)
            steps[n] = s, iters[n] = it;
    for (int s = g->loop_end + 1; s < g->nops && n < max; s++, n++)
        steps[n] = s, iters[n] = 0;
    return n;
}
