/* graphs.h - the example's ggml graphs: what each computes, with which weights.
 *
 * Each builder puts its weights in `wctx` and its graph (inputs, intermediates, outputs) in
 * `gctx`; both contexts are no_alloc: the caller gives the weights a backend buffer and the
 * graph to ggml_gallocr, which is what the shim checks. Every tensor the builder makes is
 * named (ggml_set_name), except the few left unnamed on purpose so that reports show the
 * shim's fallback name OP#NODE. */
#ifndef EXAMPLES_GGML_GRAPHS_H
#define EXAMPLES_GGML_GRAPHS_H

#include <ggml.h>

#include <stddef.h>

#define GRAPH_MAX_IO 4

enum graph_kind {
    GRAPH_MLP,   /* 3 fully connected layers (gelu, silu), softmax */
    GRAPH_BLOCK, /* a pre-norm transformer block: attention with reshapes, permutes, a causal
                  * mask and in-place scale/mask/softmax, then a SiLU MLP with in-place residual */
    GRAPH_MULTI, /* the MLP with a second head and an intermediate marked as output: 3 outputs */
};

struct graph_io {
    struct ggml_cgraph *graph;
    struct ggml_tensor *inputs[GRAPH_MAX_IO];
    size_t n_inputs;
    struct ggml_tensor *outputs[GRAPH_MAX_IO];
    size_t n_outputs;
};

/* Parses "mlp", "block" or "multi"; returns 0 on success, -1 for an unknown name. */
int graph_kind_parse(const char *name, enum graph_kind *out);

/* Builds graph `kind`. Returns 0, or -1 when a context is too small. */
int graph_build(enum graph_kind kind, struct ggml_context *wctx, struct ggml_context *gctx,
                struct graph_io *io);

/* Fills a float tensor's host copy `dst` (n floats) with values in [-1, 1) that depend only
 * on `seed_name` and the index: weights and inputs are the same on every run and machine. */
void graph_fill(float *dst, size_t n, const char *seed_name);

#endif
