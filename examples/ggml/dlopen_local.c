/* ggml_dlopen_local: ggml loaded the way a plug-in loads it (a Node addon, a Python
 * extension): dlopen(RTLD_LOCAL), every function through dlsym on the handle, nothing of ggml
 * in the global scope. The shim then cannot find the real ggml functions with
 * dlsym(RTLD_NEXT); it must search the loaded objects (shim/ggml/ggml.c). The program's own calls
 * through the handle bypass the shim, but libggml's internal calls go through its PLT and so
 * reach it: ggml_backend_graph_compute calls ggml_backend_graph_compute_async, where the graph
 * is checked. Computes e = (a + b) + a + (a + b) and prints e's first value.
 *
 * With ADDON (whisper.node's index.node, ggml built in), the addon is loaded the same way
 * first and the graph computed on its ggml too: two ggml copies in one process, neither in
 * the global scope, each of which the shim must serve with its own functions.
 *
 * Usage: ggml_dlopen_local LIB_DIR [ADDON]. Exit status 0, 1 on a failure. */
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <dlfcn.h>
#include <stdio.h>

/* A pointer to `name` of type typeof(name), from the handle. */
#define SYM(handle, name) __typeof__(name) *p_##name = (__typeof__(name) *)dlsym(handle, #name)

/* Builds and computes the graph with the ggml of `base` (its core functions) and `reg` (its
 * backend registry), loading the backends of `dir` first when not NULL. Returns 0 when e[0]
 * is 7. */
static int compute_with(void *base, void *reg, const char *dir, const char *what)
{
    SYM(reg, ggml_backend_load_all_from_path);
    SYM(reg, ggml_backend_init_by_type);
    SYM(base, ggml_init);
    SYM(base, ggml_new_tensor_1d);
    SYM(base, ggml_add);
    SYM(base, ggml_new_graph);
    SYM(base, ggml_build_forward_expand);
    SYM(base, ggml_set_input);
    SYM(base, ggml_set_name);
    SYM(base, ggml_gallocr_new);
    SYM(base, ggml_gallocr_alloc_graph);
    SYM(base, ggml_backend_get_default_buffer_type);
    SYM(base, ggml_backend_tensor_set);
    SYM(base, ggml_backend_tensor_get);
    SYM(base, ggml_backend_graph_compute);
    if (!p_ggml_backend_load_all_from_path || !p_ggml_backend_graph_compute ||
        !p_ggml_backend_tensor_get)
        return 1;

    if (dir)
        p_ggml_backend_load_all_from_path(dir);
    ggml_backend_t be = p_ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    struct ggml_init_params params = {.mem_size = 1 << 20, .no_alloc = true};
    struct ggml_context *ctx = be ? p_ggml_init(params) : NULL;
    if (!ctx)
        return 1;
    struct ggml_tensor *a = p_ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    struct ggml_tensor *b = p_ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    p_ggml_set_name(a, "a");
    p_ggml_set_name(b, "b");
    p_ggml_set_input(a);
    p_ggml_set_input(b);
    struct ggml_tensor *c = p_ggml_set_name(p_ggml_add(ctx, a, b), "c");
    struct ggml_tensor *d = p_ggml_set_name(p_ggml_add(ctx, c, a), "d");
    struct ggml_tensor *e = p_ggml_set_name(p_ggml_add(ctx, d, c), "e");
    struct ggml_cgraph *graph = p_ggml_new_graph(ctx);
    p_ggml_build_forward_expand(graph, e);
    ggml_gallocr_t galloc = p_ggml_gallocr_new(p_ggml_backend_get_default_buffer_type(be));
    if (!p_ggml_gallocr_alloc_graph(galloc, graph))
        return 1;
    float ones[64], twos[64], out = 0;
    for (int i = 0; i < 64; i++) {
        ones[i] = 1;
        twos[i] = 2;
    }
    p_ggml_backend_tensor_set(a, ones, 0, sizeof ones);
    p_ggml_backend_tensor_set(b, twos, 0, sizeof twos);
    if (p_ggml_backend_graph_compute(be, graph) != GGML_STATUS_SUCCESS)
        return 1;
    p_ggml_backend_tensor_get(e, &out, 0, sizeof out);
    printf("%s: e[0] = %g\n", what, (double)out);
    return out == 7.0f ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: ggml_dlopen_local LIB_DIR [ADDON]\n");
        return 2;
    }
    void *addon = NULL;
    if (argc == 3 && !(addon = dlopen(argv[2], RTLD_LAZY | RTLD_LOCAL))) {
        fprintf(stderr, "ggml_dlopen_local: %s\n", dlerror());
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-base.so", argv[1]);
    void *base = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    snprintf(path, sizeof path, "%s/libggml.v0.4.0.so", argv[1]);
    void *reg = base ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!base || !reg) {
        fprintf(stderr, "ggml_dlopen_local: %s\n", dlerror());
        return 1;
    }
    if (dlsym(RTLD_DEFAULT, "ggml_init")) {
        fprintf(stderr, "ggml_dlopen_local: ggml is in the global scope after all\n");
        return 1;
    }
    if (compute_with(base, reg, argv[1], "libggml"))
        return 1;
    /* The addon's CPU backend is built in: nothing to load into its registry. */
    return addon && compute_with(addon, addon, NULL, "addon") ? 1 : 0;
}
