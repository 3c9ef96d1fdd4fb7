/* ggml_model.h - a ggml compute graph, as allocated, read into tlsan's terms: storage roots
 * placed in arenas (ggml backend buffers), views of them, and one op per graph node with the
 * tensors it reads and writes; then a tlsan plan of it for the checker.
 *
 * The reading (the contract between ggml's graph allocator and the plan format):
 *   - op i is graph node i, in graph order; it writes the node and reads its src[] (view
 *     nodes: VIEW, RESHAPE, PERMUTE, TRANSPOSE, NONE compute nothing: no reads, no writes),
 *     except a CPY's src[1], the destination it writes (gm_reads_src);
 *   - a tensor with view_src is a view of view_src at view_offs, when its data says so
 *     (data == view_src->data + view_offs); otherwise it is taken where its data is, as a root;
 *   - each backend buffer holding a root is an arena, the root's offset is data - base;
 *   - a leaf (a src that is no node) is an input, written before the graph (weights, the
 *     graph's inputs), except a leaf without GGML_TENSOR_FLAG_INPUT in a buffer where nodes
 *     are placed: ggml_gallocr allocates such a leaf only when its first consumer runs (the
 *     destination of a ggml_cpy, say), so that consumer is taken to write it;
 *   - GGML_TENSOR_FLAG_INPUT / OUTPUT give the plan's input / output; a node no later node
 *     reads is an output too (the caller computed it to read it, and ggml_gallocr never frees
 *     it);
 *   - an op declares in-place each source that covers exactly the node's bytes from another
 *     root (ggml_gallocr's reuse of a parent's memory), so the checker applies its in-place
 *     exception, and reports bad-inplace when the exception does not hold.
 *
 * No ggml library is linked: the struct layouts come from ggml's public headers and the few
 * functions needed are passed in (struct gm_api), resolved at run time by shim/ggml/ggml.c. */
#ifndef TLSAN_SHIM_GGML_MODEL_H
#define TLSAN_SHIM_GGML_MODEL_H

#include <ggml-backend.h>
#include <ggml.h>

#include "tlsan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The ggml functions the model needs. */
struct gm_api {
    int (*graph_n_nodes)(struct ggml_cgraph *graph);
    struct ggml_tensor *(*graph_node)(struct ggml_cgraph *graph, int i);
    void *(*buffer_get_base)(ggml_backend_buffer_t buffer);
    size_t (*buffer_get_size)(ggml_backend_buffer_t buffer);
    const char *(*buffer_name)(ggml_backend_buffer_t buffer);
    size_t (*nbytes)(const struct ggml_tensor *tensor);
    const char *(*op_desc)(const struct ggml_tensor *tensor);
};

#define GM_NAME_BYTES (GGML_MAX_NAME + 32)

struct gm_tensor {
    struct ggml_tensor *t;
    int node;              /* node index, -1 for a leaf */
    int leaf;              /* leaf number (order of discovery), -1 for a node */
    uint32_t root;         /* index of its storage root (itself for a root) */
    bool view;             /* a view in the plan (else a root) */
    int32_t arena;         /* root: index in arenas */
    uint64_t offset_bytes; /* root: from the arena's base; view: from its root's first byte */
    uint64_t bytes;
    unsigned flags;           /* root: TLSAN_TENSOR_* */
    int64_t first, last;      /* root: derived lifetime in steps (node indices) */
    int64_t first_writer;     /* root: the op taken to write a lazily allocated leaf, or -1 */
    char name[GM_NAME_BYTES]; /* unique in the model: the plan's name */
};

struct gm_arena {
    ggml_backend_buffer_t buffer; /* NULL: memory of no backend buffer (one arena per root) */
    uintptr_t base;
    uint64_t bytes;
    bool compute; /* some node root is placed in it */
    char name[64];
};

struct gm_model {
    struct gm_tensor *tensors;
    size_t n_tensors, cap_tensors;
    struct gm_arena *arenas;
    size_t n_arenas, cap_arenas;
    int n_nodes;
    uint32_t *node_index; /* node i -> tensor index */
    uint32_t *slots;      /* pointer hash: tensor index + 1, 0 empty */
    size_t n_slots;
    size_t n_skipped; /* tensors without data, left out */
    int n_leaves;
};

/* The identity of a graph as allocated: nodes, their sources, views and data addresses. Two
 * computes of a graph with equal keys check the same; cheap (no allocation). */
uint64_t gm_key(const struct gm_api *api, struct ggml_cgraph *graph);

/* Reads the graph. Returns 0, or -1 when out of memory (m is then empty). Free with gm_free. */
int gm_build(struct gm_model *m, const struct gm_api *api, struct ggml_cgraph *graph);
void gm_free(struct gm_model *m);

/* The index of a ggml tensor in the model, or -1. */
long gm_find(const struct gm_model *m, const struct ggml_tensor *t);

/* The tensor's readable name: ggml_get_name, or OP#NODE for an unnamed node, leaf#K for an
 * unnamed leaf, where unnamed includes the names ggml gives as it builds the graph ("node_5",
 * "leaf_2"). The plan name adds @NODE (or @leafK) to a name already taken. */
void gm_display_name(const struct gm_model *m, const struct gm_api *api, size_t i, char *buf,
                     size_t cap);

/* True when node i's op computes nothing (views). */
bool gm_is_view_op(const struct gm_api *api, const struct ggml_tensor *t);

/* Whether node t's op reads its source src[s]: not the tensor it writes, which ggml lists as
 * a source in two places: ggml_cast's node is its own src[1], and ggml_cpy's src[1] is the
 * destination it overwrites (the node is a view of it). */
bool gm_reads_src(const struct gm_api *api, const struct ggml_tensor *t, int s);

/* The plan of the model, finalized, named `name`. Tensor index i of the plan is tensor i of
 * the model; op i is node i. NULL with err filled on failure. */
tlsan_plan *gm_plan(const struct gm_model *m, const struct gm_api *api, const char *name,
                    tlsan_error *err);

#endif
