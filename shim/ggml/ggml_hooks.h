/* ggml_hooks.h - the shim's ggml adapter (shim/ggml/ggml.c): what it exposes besides the ten
 * interposed ggml functions (ggml_gallocr_alloc_graph, ggml_backend_sched_alloc_graph,
 * ggml_backend_graph_compute[_async], ggml_backend_sched_graph_compute[_async],
 * ggml_graph_compute, and the host's ggml_backend_tensor_get/set and ggml_backend_buffer_free;
 * declared by ggml's own headers).
 *
 * (Not named ggml.h: that would shadow ggml's own <ggml.h> for every file of the shim.)
 *
 * When a program allocates or computes a ggml graph, the adapter reads the graph as allocated
 * (shim/ggml/ggml_model.h), checks it as a plan, and reports each finding naming ggml tensors and
 * ops, with the stack of the allocation or compute call. A graph identical to one already checked
 * (same nodes, sources, views and data addresses) is not checked again. With checksum=shared (the
 * default) or all, each compute then runs node by node, hashing what each node writes and
 * verifying what it reads: bytes changed under a live tensor are live-corruption. A host's
 * ggml_backend_tensor_get/set of a tensor whose bytes its gallocr's next allocation gave to
 * another tensor, or whose buffer it freed, is use-after-release.
 *
 * TLSAN_OPTIONS=inject=VALUE plants a fault for self-tests, after ggml_gallocr_alloc_graph
 * (or before the first compute of a graph whose allocation the shim did not see):
 *   move@N     moves node N's data onto the bytes of another tensor of the same buffer that
 *              is live while N is (the earliest such node that neither feeds N nor reads it);
 *              the check then reports live-overlap naming both
 *   move@N@M   the same, onto node M's bytes (M's storage root when M is a view)
 * The moved node's views follow it. A line "tlsan: inject: ..." says what was moved where. */
#ifndef TLSAN_SHIM_GGML_HOOKS_H
#define TLSAN_SHIM_GGML_HOOKS_H

#include <stdbool.h>

struct ggml_inject {
    enum { GGML_INJECT_NONE, GGML_INJECT_MOVE } kind;
    int node;   /* the node moved */
    int victim; /* the node whose bytes it takes; -1: chosen by the adapter */
};

/* Parses an inject value ("" is none). Returns false for a malformed one. */
bool ggml_inject_parse(const char *text, struct ggml_inject *out);

/* Counters for tests: graphs checked, computes answered from the cache. */
unsigned long ggml_adapter_checked(void);
unsigned long ggml_adapter_cached(void);

#endif
