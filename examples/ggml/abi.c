/* ggml_abi: guards against drift between the headers tlsan builds with (from
 * @fugood/llama.node) and the prebuilt libraries it runs (from @node-llama-cpp/linux-x64).
 * The two come from different llama.cpp commits, so every assumption the examples and the
 * shim's ggml adapter make about ggml's ABI is checked here against the library itself:
 *
 *   - ggml_version() is the version the packages were pinned for (argument 1);
 *   - struct ggml_tensor's fields sit where the library puts them: the library's own accessors
 *     (ggml_get_name, ggml_get_data, ggml_nbytes, ...) must agree with
 *     reading the fields directly; the view, source and flag fields the shim reads are set
 *     by the library as the header says; ggml_tensor_overhead() is the header's struct size
 *     plus ggml's 32-byte object header;
 *   - the enum values the shim and examples pass or compare (ggml_op, ggml_type) name the same
 *     things in the library (ggml_op_name, ggml_type_name);
 *   - ggml_nbytes of tensors of known shapes is the bytes those shapes need, for contiguous,
 *     permuted and view tensors;
 *   - the graph accessors the shim resolves (ggml_graph_n_nodes, ggml_graph_node,
 *     ggml_graph_nodes) agree, and ggml_gallocr places the graph's tensors inside its buffer.
 *
 * Prints one line per check ("ok ..." or "FAIL ...") and exits 0 when all pass, 1 otherwise. */
#include "backend.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int g_failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        printf((cond) ? "ok   " : "FAIL ");                                                        \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (!(cond))                                                                               \
            g_failed = 1;                                                                          \
    } while (0)

static void check_ops_and_types(void)
{
    static const struct {
        enum ggml_op op;
        const char *name;
    } ops[] = {
        {GGML_OP_NONE, "NONE"},         {GGML_OP_ADD, "ADD"},
        {GGML_OP_MUL, "MUL"},           {GGML_OP_SCALE, "SCALE"},
        {GGML_OP_CPY, "CPY"},           {GGML_OP_CONT, "CONT"},
        {GGML_OP_RESHAPE, "RESHAPE"},   {GGML_OP_VIEW, "VIEW"},
        {GGML_OP_PERMUTE, "PERMUTE"},   {GGML_OP_TRANSPOSE, "TRANSPOSE"},
        {GGML_OP_MUL_MAT, "MUL_MAT"},   {GGML_OP_SOFT_MAX, "SOFT_MAX"},
        {GGML_OP_RMS_NORM, "RMS_NORM"}, {GGML_OP_DIAG_MASK_INF, "DIAG_MASK_INF"},
        {GGML_OP_GET_ROWS, "GET_ROWS"}, {GGML_OP_SET_ROWS, "SET_ROWS"},
        {GGML_OP_ROPE, "ROPE"},         {GGML_OP_FLASH_ATTN_EXT, "FLASH_ATTN_EXT"},
        {GGML_OP_UNARY, "UNARY"},       {GGML_OP_GLU, "GLU"},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        CHECK(strcmp(ggml_op_name(ops[i].op), ops[i].name) == 0,
              "enum ggml_op %d is %s in the library (header: %s)", (int)ops[i].op,
              ggml_op_name(ops[i].op), ops[i].name);
    static const struct {
        enum ggml_type type;
        const char *name;
        size_t size;
    } types[] = {{GGML_TYPE_F32, "f32", 4},
                 {GGML_TYPE_F16, "f16", 2},
                 {GGML_TYPE_I32, "i32", 4},
                 {GGML_TYPE_BF16, "bf16", 2}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        CHECK(strcmp(ggml_type_name(types[i].type), types[i].name) == 0 &&
                  ggml_type_size(types[i].type) == types[i].size,
              "enum ggml_type %d is %s, %zu bytes (header: %s, %zu)", (int)types[i].type,
              ggml_type_name(types[i].type), ggml_type_size(types[i].type), types[i].name,
              types[i].size);
}

static void check_layout(struct ggml_context *ctx)
{
    struct ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 5, 3, 2);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 5, 3, 2);
    ggml_set_name(a, "a");
    ggml_set_name(b, "b");
    struct ggml_tensor *c = ggml_add(ctx, a, b);
    struct ggml_tensor *v = ggml_view_2d(ctx, a, 5, 2, a->nb[1], 3 * a->nb[1]);
    struct ggml_tensor *p = ggml_permute(ctx, a, 2, 0, 1, 3);
    struct ggml_tensor *h = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 7, 3);
    ggml_set_input(a);
    ggml_set_output(c);

    CHECK(ggml_tensor_overhead() == 32 + sizeof(struct ggml_tensor),
          "ggml_tensor_overhead() %zu = 32 + sizeof(struct ggml_tensor) %zu",
          ggml_tensor_overhead(), sizeof(struct ggml_tensor));
    CHECK(ggml_get_name(a) == a->name && strcmp(a->name, "a") == 0,
          "offsetof(ggml_tensor, name) %zu", offsetof(struct ggml_tensor, name));
    CHECK(a->type == GGML_TYPE_F32 && h->type == GGML_TYPE_F16, "offsetof(ggml_tensor, type) %zu",
          offsetof(struct ggml_tensor, type));
    CHECK(a->ne[0] == 5 && a->ne[1] == 3 && a->ne[2] == 2 && a->ne[3] == 1 &&
              ggml_nelements(a) == 30,
          "offsetof(ggml_tensor, ne) %zu", offsetof(struct ggml_tensor, ne));
    CHECK(a->nb[0] == 4 && a->nb[1] == 20 && a->nb[2] == 60 && a->nb[3] == 120,
          "offsetof(ggml_tensor, nb) %zu", offsetof(struct ggml_tensor, nb));
    CHECK(c->op == GGML_OP_ADD && c->src[0] == a && c->src[1] == b && c->src[2] == NULL,
          "offsetof(ggml_tensor, op) %zu, src %zu", offsetof(struct ggml_tensor, op),
          offsetof(struct ggml_tensor, src));
    CHECK((a->flags & GGML_TENSOR_FLAG_INPUT) && !(a->flags & GGML_TENSOR_FLAG_OUTPUT) &&
              (c->flags & GGML_TENSOR_FLAG_OUTPUT),
          "offsetof(ggml_tensor, flags) %zu; INPUT=%d OUTPUT=%d",
          offsetof(struct ggml_tensor, flags), GGML_TENSOR_FLAG_INPUT, GGML_TENSOR_FLAG_OUTPUT);
    CHECK(v->op == GGML_OP_VIEW && v->view_src == a && v->view_offs == 3 * a->nb[1] &&
              v->src[0] == a,
          "offsetof(ggml_tensor, view_src) %zu, view_offs %zu",
          offsetof(struct ggml_tensor, view_src), offsetof(struct ggml_tensor, view_offs));
    struct ggml_tensor *vv = ggml_view_1d(ctx, v, 2, 4);
    CHECK(vv->view_src == a && vv->view_offs == 3 * a->nb[1] + 4,
          "a view of a view names the storage root, offsets add up");
    CHECK(p->op == GGML_OP_PERMUTE && p->view_src == a && p->ne[0] == 3 && p->ne[1] == 2 &&
              p->ne[2] == 5,
          "permute is a view with permuted ne");
    CHECK(ggml_get_data(a) == a->data && a->data == NULL && a->buffer == NULL,
          "offsetof(ggml_tensor, data) %zu, buffer %zu (unallocated: NULL)",
          offsetof(struct ggml_tensor, data), offsetof(struct ggml_tensor, buffer));
    /* ggml_scale keeps its factor in op_params[0]: written by the library, read here. */
    struct ggml_tensor *s = ggml_scale(ctx, a, 0.25f);
    float factor;
    memcpy(&factor, s->op_params, sizeof factor);
    CHECK(s->op == GGML_OP_SCALE && factor == 0.25f, "offsetof(ggml_tensor, op_params) %zu",
          offsetof(struct ggml_tensor, op_params));

    /* ggml_nbytes for the shapes built: contiguous, f16, a view, a permuted view. */
    CHECK(ggml_nbytes(a) == 5 * 3 * 2 * 4, "ggml_nbytes(f32 [5,3,2]) %zu == 120", ggml_nbytes(a));
    CHECK(ggml_nbytes(h) == 7 * 3 * 2, "ggml_nbytes(f16 [7,3]) %zu == 42", ggml_nbytes(h));
    CHECK(ggml_nbytes(v) == 5 * 2 * 4, "ggml_nbytes(view [5,2]) %zu == 40", ggml_nbytes(v));
    CHECK(ggml_nbytes(p) == ggml_nbytes(a), "ggml_nbytes(permuted) %zu == %zu", ggml_nbytes(p),
          ggml_nbytes(a));
}

static void check_graph_and_alloc(struct ggml_context *ctx)
{
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 16);
    ggml_set_input(x);
    ggml_set_input(w);
    struct ggml_tensor *y = ggml_mul_mat(ctx, w, x);
    struct ggml_tensor *z = ggml_soft_max(ctx, ggml_scale(ctx, y, 0.5f));
    ggml_set_output(z);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, z);
    int n = ggml_graph_n_nodes(gf);
    CHECK(n == 3, "ggml_graph_n_nodes %d == 3", n);
    int same = 1;
    for (int i = 0; i < n; i++)
        same &= ggml_graph_node(gf, i) == ggml_graph_nodes(gf)[i];
    CHECK(same && ggml_graph_node(gf, -1) == z, "ggml_graph_node agrees with ggml_graph_nodes");
    CHECK(ggml_nbytes(y) == 16 * 4 * 4, "ggml_nbytes(mul_mat [16,4]) %zu == 256", ggml_nbytes(y));

    ggml_backend_t be = example_cpu_backend(1);
    CHECK(be != NULL, "a CPU backend is available");
    if (!be)
        return;
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
    int ok = ga && ggml_gallocr_alloc_graph(ga, gf);
    CHECK(ok, "ggml_gallocr_alloc_graph");
    if (ok) {
        struct ggml_tensor *all[] = {x, w, y, z};
        ggml_backend_buffer_t buf = y->buffer;
        const char *base = ggml_backend_buffer_get_base(buf);
        size_t size = ggml_backend_buffer_get_size(buf);
        int inside = 1;
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            inside &= all[i]->buffer == buf && (const char *)all[i]->data >= base &&
                      (const char *)all[i]->data + ggml_nbytes(all[i]) <= base + size;
        CHECK(inside, "every tensor of the graph lies inside the gallocr buffer (%zu bytes)", size);
    }
    ggml_gallocr_free(ga);
    ggml_backend_free(be);
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "0.23.0";
    if (example_load_backends(NULL) != 0)
        return 1;
    CHECK(strcmp(ggml_version(), want) == 0, "ggml_version() %s == %s (commit %s)", ggml_version(),
          want, ggml_commit());
    check_ops_and_types();
    struct ggml_init_params params = {
        .mem_size = 64 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true};
    struct ggml_context *ctx = ggml_init(params);
    check_layout(ctx);
    ggml_free(ctx);
    ctx = ggml_init(params);
    check_graph_and_alloc(ctx);
    ggml_free(ctx);
    printf("%s\n", g_failed ? "ggml ABI: MISMATCH" : "ggml ABI: all checks passed");
    return g_failed;
}
