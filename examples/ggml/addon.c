/* addon.c - ggml_addon_graphs' ggml: the one built into a Node addon (whisper.node's
 * index.node), loaded as Node loads an addon: dlopen(RTLD_LAZY | RTLD_LOCAL), nothing of it in
 * the global scope, every function found with dlsym on the handle (see README.md here).
 *
 * Each ggml function the example uses (main.c, graphs.c, backend.c) is defined here as a
 * forwarder to the addon's own definition, so the example's calls reach the addon directly,
 * never through a PLT the shim could interpose: like a host calling into its addon. The
 * forwarders are hidden, so that the addon's own PLT calls do not bind to them either. */
#include "backend.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *g_addon;

int example_open_addon(const char *file)
{
    g_addon = dlopen(file, RTLD_LAZY | RTLD_LOCAL);
    if (!g_addon) {
        fprintf(stderr, "ggml_addon_graphs: %s\n", dlerror());
        return -1;
    }
    if (dlsym(RTLD_DEFAULT, "ggml_init")) {
        fprintf(stderr, "ggml_addon_graphs: ggml is in the global scope after all\n");
        return -1;
    }
    return 0;
}

static void *addon_sym(const char *name)
{
    void *p = g_addon ? dlsym(g_addon, name) : NULL;
    if (!p) {
        fprintf(stderr, "ggml_addon_graphs: the addon has no %s (--addon FILE first)\n", name);
        exit(1);
    }
    return p;
}

/* RET NAME PARAMS forwards to the addon's NAME with ARGS (FWDV: a void one); the compiler
 * checks PARAMS against ggml's declaration of NAME. */
#define ADDON_FN(name) (__typeof__(name) *)addon_sym(#name)
#define FWD(ret, name, params, args)                                                               \
    __attribute__((visibility("hidden"))) ret name params                                          \
    {                                                                                              \
        static __typeof__(name) *fn;                                                               \
        if (!fn)                                                                                   \
            fn = ADDON_FN(name);                                                                   \
        return fn args;                                                                            \
    }
#define FWDV(name, params, args)                                                                   \
    __attribute__((visibility("hidden"))) void name params                                         \
    {                                                                                              \
        static __typeof__(name) *fn;                                                               \
        if (!fn)                                                                                   \
            fn = ADDON_FN(name);                                                                   \
        fn args;                                                                                   \
    }

typedef struct ggml_tensor *tensor_t;
typedef struct ggml_context *context_t;

FWD(const char *, ggml_version, (void), ())
FWD(const char *, ggml_commit, (void), ())
FWD(size_t, ggml_tensor_overhead, (void), ())
FWD(size_t, ggml_graph_overhead, (void), ())
FWD(context_t, ggml_init, (struct ggml_init_params params), (params))
FWDV(ggml_free, (context_t ctx), (ctx))
FWD(int64_t, ggml_nelements, (const struct ggml_tensor *t), (t))
FWD(const char *, ggml_get_name, (const struct ggml_tensor *t), (t))
FWD(tensor_t, ggml_set_name, (tensor_t t, const char *name), (t, name))
FWDV(ggml_set_input, (tensor_t t), (t))
FWDV(ggml_set_output, (tensor_t t), (t))
FWD(tensor_t, ggml_get_first_tensor, (const struct ggml_context *ctx), (ctx))
FWD(tensor_t, ggml_get_next_tensor, (const struct ggml_context *ctx, tensor_t t), (ctx, t))
FWD(tensor_t, ggml_new_tensor_1d, (context_t ctx, enum ggml_type type, int64_t ne0),
    (ctx, type, ne0))
FWD(tensor_t, ggml_new_tensor_2d, (context_t ctx, enum ggml_type type, int64_t ne0, int64_t ne1),
    (ctx, type, ne0, ne1))
FWD(tensor_t, ggml_add, (context_t ctx, tensor_t a, tensor_t b), (ctx, a, b))
FWD(tensor_t, ggml_add_inplace, (context_t ctx, tensor_t a, tensor_t b), (ctx, a, b))
FWD(tensor_t, ggml_mul, (context_t ctx, tensor_t a, tensor_t b), (ctx, a, b))
FWD(tensor_t, ggml_mul_mat, (context_t ctx, tensor_t a, tensor_t b), (ctx, a, b))
FWD(tensor_t, ggml_gelu, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_silu, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_silu_inplace, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_tanh, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_soft_max, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_soft_max_inplace, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_cont, (context_t ctx, tensor_t a), (ctx, a))
FWD(tensor_t, ggml_cont_2d, (context_t ctx, tensor_t a, int64_t ne0, int64_t ne1),
    (ctx, a, ne0, ne1))
FWD(tensor_t, ggml_rms_norm, (context_t ctx, tensor_t a, float eps), (ctx, a, eps))
FWD(tensor_t, ggml_scale_inplace, (context_t ctx, tensor_t a, float s), (ctx, a, s))
FWD(tensor_t, ggml_diag_mask_inf_inplace, (context_t ctx, tensor_t a, int n_past), (ctx, a, n_past))
FWD(tensor_t, ggml_reshape_3d, (context_t ctx, tensor_t a, int64_t ne0, int64_t ne1, int64_t ne2),
    (ctx, a, ne0, ne1, ne2))
FWD(tensor_t, ggml_permute, (context_t ctx, tensor_t a, int x0, int x1, int x2, int x3),
    (ctx, a, x0, x1, x2, x3))
FWD(struct ggml_cgraph *, ggml_new_graph, (context_t ctx), (ctx))
FWDV(ggml_build_forward_expand, (struct ggml_cgraph * g, tensor_t t), (g, t))
FWD(int, ggml_graph_n_nodes, (struct ggml_cgraph * g), (g))
FWD(ggml_gallocr_t, ggml_gallocr_new, (ggml_backend_buffer_type_t buft), (buft))
FWDV(ggml_gallocr_free, (ggml_gallocr_t galloc), (galloc))
FWD(bool, ggml_gallocr_alloc_graph, (ggml_gallocr_t galloc, struct ggml_cgraph *g), (galloc, g))
FWD(size_t, ggml_gallocr_get_buffer_size, (ggml_gallocr_t galloc, int id), (galloc, id))
FWDV(ggml_backend_tensor_set, (tensor_t t, const void *data, size_t offset, size_t size),
     (t, data, offset, size))
FWDV(ggml_backend_tensor_get, (const struct ggml_tensor *t, void *data, size_t offset, size_t size),
     (t, data, offset, size))
FWD(const char *, ggml_backend_name, (ggml_backend_t be), (be))
FWDV(ggml_backend_free, (ggml_backend_t be), (be))
FWD(ggml_backend_buffer_type_t, ggml_backend_get_default_buffer_type, (ggml_backend_t be), (be))
FWD(ggml_backend_buffer_t, ggml_backend_alloc_ctx_tensors, (context_t ctx, ggml_backend_t be),
    (ctx, be))
FWDV(ggml_backend_buffer_free, (ggml_backend_buffer_t buf), (buf))
FWD(enum ggml_status, ggml_backend_graph_compute, (ggml_backend_t be, struct ggml_cgraph *g),
    (be, g))
FWD(ggml_backend_sched_t, ggml_backend_sched_new,
    (ggml_backend_t * backends, ggml_backend_buffer_type_t *bufts, int n, size_t graph_size,
     bool parallel, bool op_offload),
    (backends, bufts, n, graph_size, parallel, op_offload))
FWDV(ggml_backend_sched_free, (ggml_backend_sched_t sched), (sched))
FWD(bool, ggml_backend_sched_alloc_graph, (ggml_backend_sched_t sched, struct ggml_cgraph *g),
    (sched, g))
FWD(enum ggml_status, ggml_backend_sched_graph_compute,
    (ggml_backend_sched_t sched, struct ggml_cgraph *g), (sched, g))
FWD(size_t, ggml_backend_sched_get_buffer_size, (ggml_backend_sched_t sched, ggml_backend_t be),
    (sched, be))
FWD(ggml_backend_t, ggml_backend_init_by_type,
    (enum ggml_backend_dev_type type, const char *params), (type, params))
FWD(ggml_backend_dev_t, ggml_backend_get_device, (ggml_backend_t be), (be))
FWD(ggml_backend_dev_t, ggml_backend_dev_by_type, (enum ggml_backend_dev_type type), (type))
FWD(ggml_backend_reg_t, ggml_backend_dev_backend_reg, (ggml_backend_dev_t dev), (dev))
FWD(void *, ggml_backend_reg_get_proc_address, (ggml_backend_reg_t reg, const char *name),
    (reg, name))
