/* graphs.c - the example's ggml graphs (graphs.h). Shapes follow ggml's convention: ne[0]
 * is the innermost (feature) dimension, so a batch of 4 vectors of 16 is [16, 4], and
 * ggml_mul_mat(w, x) with w [in, out] and x [in, n] gives [out, n]. */
#include "graphs.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* The MLP's sizes. */
enum { MLP_IN = 16, MLP_HID = 32, MLP_OUT = 8, MLP_BATCH = 4 };
/* The transformer block's sizes: model width, tokens, heads, head width, MLP width. */
enum { BLK_D = 32, BLK_T = 8, BLK_H = 4, BLK_HD = BLK_D / BLK_H, BLK_FF = 64 };

int graph_kind_parse(const char *name, enum graph_kind *out)
{
    static const struct {
        const char *name;
        enum graph_kind kind;
    } kinds[] = {{"mlp", GRAPH_MLP}, {"block", GRAPH_BLOCK}, {"multi", GRAPH_MULTI}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(name, kinds[i].name) == 0) {
            *out = kinds[i].kind;
            return 0;
        }
    return -1;
}

/* FNV-1a of the name seeds an xorshift stream: values independent of build and platform. */
void graph_fill(float *dst, size_t n, const char *seed_name)
{
    uint64_t s = 1469598103934665603ull;
    for (const char *p = seed_name; *p; p++)
        s = (s ^ (unsigned char)*p) * 1099511628211ull;
    if (!s)
        s = 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        /* 24 random bits to a float in [-1, 1): exact in binary32, no rounding. */
        dst[i] = (float)((int32_t)(s >> 40) - (1 << 23)) / (float)(1 << 23);
    }
}

static struct ggml_tensor *named(struct ggml_tensor *t, const char *name)
{
    if (t)
        ggml_set_name(t, name);
    return t;
}

static struct ggml_tensor *weight(struct ggml_context *wctx, const char *name, int64_t ne0,
                                  int64_t ne1)
{
    struct ggml_tensor *t = ne1 ? ggml_new_tensor_2d(wctx, GGML_TYPE_F32, ne0, ne1)
                                : ggml_new_tensor_1d(wctx, GGML_TYPE_F32, ne0);
    return named(t, name);
}

/* A fully connected layer: act(w x + b). `act` 0: none, 'g': gelu, 's': silu. Returns the
 * layer's output named `name`. */
static struct ggml_tensor *dense(struct ggml_context *wctx, struct ggml_context *g,
                                 struct ggml_tensor *x, const char *name, int64_t in, int64_t out,
                                 int act)
{
    char wn[GGML_MAX_NAME], bn[GGML_MAX_NAME], mn[GGML_MAX_NAME];
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    snprintf(mn, sizeof mn, "%s.matmul", name);
    struct ggml_tensor *w = weight(wctx, wn, in, out);
    struct ggml_tensor *b = weight(wctx, bn, out, 0);
    struct ggml_tensor *y = named(ggml_mul_mat(g, w, x), mn);
    /* The bias add stays unnamed: reports then show it as ADD#NODE. */
    y = ggml_add(g, y, b);
    if (act == 'g')
        y = ggml_gelu(g, y);
    else if (act == 's')
        y = ggml_silu(g, y);
    return named(y, name);
}

static void add_output(struct graph_io *io, struct ggml_tensor *t)
{
    ggml_set_output(t);
    ggml_build_forward_expand(io->graph, t);
    io->outputs[io->n_outputs++] = t;
}

static struct ggml_tensor *add_input(struct graph_io *io, struct ggml_context *g, const char *name,
                                     int64_t ne0, int64_t ne1)
{
    struct ggml_tensor *t = named(ggml_new_tensor_2d(g, GGML_TYPE_F32, ne0, ne1), name);
    ggml_set_input(t);
    io->inputs[io->n_inputs++] = t;
    return t;
}

static int build_mlp(struct ggml_context *wctx, struct ggml_context *g, struct graph_io *io,
                     int multi)
{
    struct ggml_tensor *x = add_input(io, g, "x", MLP_IN, MLP_BATCH);
    struct ggml_tensor *h1 = dense(wctx, g, x, "fc1", MLP_IN, MLP_HID, 'g');
    struct ggml_tensor *h2 = dense(wctx, g, h1, "fc2", MLP_HID, MLP_HID, 's');
    struct ggml_tensor *logits = dense(wctx, g, h2, "fc3", MLP_HID, MLP_OUT, 0);
    struct ggml_tensor *probs = named(ggml_soft_max(g, logits), "probs");
    if (!probs)
        return -1;
    if (multi) {
        /* A second head on h1, built first so that the outputs are not all at the end: h1 is
         * read by both heads and handed out too. */
        struct ggml_tensor *aux =
            named(ggml_tanh(g, dense(wctx, g, h1, "aux", MLP_HID, MLP_OUT, 0)), "aux_out");
        if (!aux)
            return -1;
        add_output(io, aux);
        add_output(io, h1);
    }
    add_output(io, probs);
    return 0;
}

/* [BLK_D, BLK_T] -> per head [BLK_HD, BLK_T, BLK_H] (the layout ggml_mul_mat wants for q, k). */
static struct ggml_tensor *heads(struct ggml_context *g, struct ggml_tensor *t, const char *name)
{
    char n[GGML_MAX_NAME];
    t = ggml_reshape_3d(g, t, BLK_HD, BLK_H, BLK_T);
    snprintf(n, sizeof n, "%s (heads)", name);
    named(t, n);
    t = ggml_permute(g, t, 0, 2, 1, 3);
    snprintf(n, sizeof n, "%s (permuted)", name);
    return named(t, n);
}

static int build_block(struct ggml_context *wctx, struct ggml_context *g, struct graph_io *io)
{
    struct ggml_tensor *x = add_input(io, g, "x", BLK_D, BLK_T);
    struct ggml_tensor *g1 = weight(wctx, "attn_norm.weight", BLK_D, 0);
    struct ggml_tensor *wq = weight(wctx, "attn_q.weight", BLK_D, BLK_D);
    struct ggml_tensor *wk = weight(wctx, "attn_k.weight", BLK_D, BLK_D);
    struct ggml_tensor *wv = weight(wctx, "attn_v.weight", BLK_D, BLK_D);
    struct ggml_tensor *wo = weight(wctx, "attn_output.weight", BLK_D, BLK_D);
    struct ggml_tensor *g2 = weight(wctx, "ffn_norm.weight", BLK_D, 0);
    struct ggml_tensor *wu = weight(wctx, "ffn_up.weight", BLK_D, BLK_FF);
    struct ggml_tensor *wd = weight(wctx, "ffn_down.weight", BLK_FF, BLK_D);

    struct ggml_tensor *n1 = named(ggml_rms_norm(g, x, 1e-5f), "attn_rms");
    n1 = named(ggml_mul(g, n1, g1), "attn_norm");
    struct ggml_tensor *q = heads(g, named(ggml_mul_mat(g, wq, n1), "q"), "q");
    struct ggml_tensor *k = heads(g, named(ggml_mul_mat(g, wk, n1), "k"), "k");
    struct ggml_tensor *v = named(ggml_mul_mat(g, wv, n1), "v");
    /* v as [BLK_T, BLK_HD, BLK_H], contiguous, so that kqv = v^T softmax(kq) is one mul_mat. */
    v = named(ggml_reshape_3d(g, v, BLK_HD, BLK_H, BLK_T), "v (heads)");
    v = named(ggml_cont(g, ggml_permute(g, v, 1, 2, 0, 3)), "v (transposed)");

    struct ggml_tensor *kq = named(ggml_mul_mat(g, k, q), "kq");
    /* In place: each returns a view of kq, computed over kq's own bytes. */
    kq = named(ggml_scale_inplace(g, kq, 1.0f / sqrtf((float)BLK_HD)), "kq_scaled");
    kq = named(ggml_diag_mask_inf_inplace(g, kq, 0), "kq_masked");
    kq = named(ggml_soft_max_inplace(g, kq), "kq_soft_max");
    struct ggml_tensor *kqv = named(ggml_mul_mat(g, v, kq), "kqv");
    kqv = named(ggml_permute(g, kqv, 0, 2, 1, 3), "kqv (merged)");
    kqv = named(ggml_cont_2d(g, kqv, BLK_D, BLK_T), "kqv_out");
    struct ggml_tensor *attn = named(ggml_mul_mat(g, wo, kqv), "attn_out");
    struct ggml_tensor *res = named(ggml_add(g, attn, x), "attn_residual");

    struct ggml_tensor *n2 = named(ggml_rms_norm(g, res, 1e-5f), "ffn_rms");
    n2 = named(ggml_mul(g, n2, g2), "ffn_norm");
    struct ggml_tensor *up = named(ggml_mul_mat(g, wu, n2), "ffn_up");
    up = named(ggml_silu_inplace(g, up), "ffn_act");
    struct ggml_tensor *down = named(ggml_mul_mat(g, wd, up), "ffn_down");
    struct ggml_tensor *out = named(ggml_add_inplace(g, down, res), "block_out");
    if (!out)
        return -1;
    add_output(io, out);
    return 0;
}

int graph_build(enum graph_kind kind, struct ggml_context *wctx, struct ggml_context *gctx,
                struct graph_io *io)
{
    memset(io, 0, sizeof *io);
    io->graph = ggml_new_graph(gctx);
    if (!io->graph)
        return -1;
    switch (kind) {
    case GRAPH_MLP:
        return build_mlp(wctx, gctx, io, 0);
    case GRAPH_MULTI:
        return build_mlp(wctx, gctx, io, 1);
    case GRAPH_BLOCK:
        return build_block(wctx, gctx, io);
    }
    return -1;
}
