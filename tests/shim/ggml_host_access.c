/* ggml_host_access.c - a ggml host reading and writing graph tensors with
 * ggml_backend_tensor_get/set, correctly or after one ggml_gallocr allocated the next graph
 * over them (tests/shim/ggml.sh). Built against the prebuilt ggml (.deps/ggml), without tlsan.
 *
 * Two graphs on one ggml_gallocr and the CPU backend:
 *   graph A: a_in -> a_scaled = a_in * 2 -> a_out = a_scaled + a_in, and 'a_out (kept)', a
 *            view of a_out's first KEPT floats that the host keeps to read later;
 *   graph B: b_in -> b_scaled = b_in * 3 -> b_out = b_scaled + b_in (WIDTH floats each, the
 *            same as A: the gallocr places it on A's bytes), or with `grow` 16 times wider
 *            (the gallocr frees its buffer and allocates a larger one).
 * Modes (argv[2]):
 *   clean       each graph's outputs read right after its compute (what a correct host does)
 *   stale-get   the kept view of A read after B was allocated and computed: its bytes are B's
 *   stale-set   A's input written after B was allocated
 *   stale-grow  the kept view read after B, grown, made the gallocr reallocate its buffer
 *   stale-view  a view of a_out the host made after A's compute ('a_out (late view)', in a
 *               context of its own, in no graph) read after B was allocated and computed
 * Prints the values read, one per line, so a run under tlsan can be compared byte for byte.
 * Usage: ggml_host_access GGML_LIB_DIR MODE */
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <stdio.h>
#include <string.h>

enum { WIDTH = 64, KEPT = 4, GROWN = 16 * WIDTH };

struct graph {
    struct ggml_context *ctx;
    struct ggml_cgraph *cgraph;
    struct ggml_tensor *in, *out, *kept;
};

static struct ggml_tensor *named(struct ggml_tensor *t, const char *name)
{
    ggml_set_name(t, name);
    return t;
}

/* One of the two graphs: prefix "a" or "b", input times `factor` plus the input. */
static int graph_build(struct graph *g, const char *prefix, float factor, int width)
{
    struct ggml_init_params params = {
        .mem_size = ggml_tensor_overhead() * 16 + ggml_graph_overhead(), .no_alloc = true};
    char name[GGML_MAX_NAME];
    g->ctx = ggml_init(params);
    if (!g->ctx)
        return -1;
    snprintf(name, sizeof name, "%s_in", prefix);
    g->in = named(ggml_new_tensor_1d(g->ctx, GGML_TYPE_F32, width), name);
    ggml_set_input(g->in);
    snprintf(name, sizeof name, "%s_scaled", prefix);
    struct ggml_tensor *scaled = named(ggml_scale(g->ctx, g->in, factor), name);
    snprintf(name, sizeof name, "%s_out", prefix);
    g->out = named(ggml_add(g->ctx, scaled, g->in), name);
    ggml_set_output(g->out);
    g->cgraph = ggml_new_graph(g->ctx);
    ggml_build_forward_expand(g->cgraph, g->out);
    snprintf(name, sizeof name, "%s_out (kept)", prefix);
    g->kept = named(ggml_view_1d(g->ctx, g->out, KEPT, 0), name);
    ggml_build_forward_expand(g->cgraph, g->kept);
    return 0;
}

/* Allocates the graph, sets its input to start, start + 1, ... and computes it. */
static int graph_run(struct graph *g, ggml_gallocr_t galloc, ggml_backend_t backend, float start)
{
    float host[GROWN];
    if (!ggml_gallocr_alloc_graph(galloc, g->cgraph))
        return -1;
    for (int64_t i = 0; i < g->in->ne[0]; i++)
        host[i] = start + (float)i;
    ggml_backend_tensor_set(g->in, host, 0, (size_t)g->in->ne[0] * sizeof *host);
    return ggml_backend_graph_compute(backend, g->cgraph) == GGML_STATUS_SUCCESS ? 0 : -1;
}

/* Reads and prints the first KEPT floats of t. */
static void print_first(const char *what, const struct ggml_tensor *t)
{
    float host[KEPT];
    ggml_backend_tensor_get(t, host, 0, sizeof host);
    for (int i = 0; i < KEPT; i++)
        printf("%s[%d] = %g\n", what, i, (double)host[i]);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GGML_LIB_DIR clean|stale-get|stale-set|stale-grow|stale-view\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[2];
    ggml_backend_load_all_from_path(argv[1]);
    ggml_backend_t backend = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (!backend) {
        fprintf(stderr, "ggml_host_access: no CPU backend in %s\n", argv[1]);
        return 1;
    }
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    struct graph a, b;
    int width_b = strcmp(mode, "stale-grow") == 0 ? GROWN : WIDTH;
    if (!galloc || graph_build(&a, "a", 2.0f, WIDTH) != 0 ||
        graph_build(&b, "b", 3.0f, width_b) != 0 || graph_run(&a, galloc, backend, 1.0f) != 0) {
        fprintf(stderr, "ggml_host_access: cannot run graph A\n");
        return 1;
    }
    if (strcmp(mode, "clean") == 0)
        print_first("a", a.kept); /* right after A's compute */
    /* A view made after the compute: ggml places it on a_out's bytes as it makes it. */
    struct ggml_init_params params = {.mem_size = ggml_tensor_overhead() * 2, .no_alloc = true};
    struct ggml_context *late_ctx = ggml_init(params);
    struct ggml_tensor *late = late_ctx ? ggml_view_1d(late_ctx, a.out, KEPT, 0) : NULL;
    if (!late) {
        fprintf(stderr, "ggml_host_access: cannot make the late view\n");
        return 1;
    }
    ggml_set_name(late, "a_out (late view)");
    if (graph_run(&b, galloc, backend, 100.0f) != 0) {
        fprintf(stderr, "ggml_host_access: cannot run graph B\n");
        return 1;
    }
    if (strcmp(mode, "clean") == 0) {
        print_first("b", b.kept);
    } else if (strcmp(mode, "stale-get") == 0 || strcmp(mode, "stale-grow") == 0) {
        print_first("a after b", a.kept); /* the stale read */
    } else if (strcmp(mode, "stale-view") == 0) {
        print_first("late view after b", late); /* the stale read through a later view */
    } else if (strcmp(mode, "stale-set") == 0) {
        float zeros[WIDTH] = {0};
        ggml_backend_tensor_set(a.in, zeros, 0, sizeof zeros); /* the stale write */
        print_first("b_in", b.in);
    } else {
        fprintf(stderr, "ggml_host_access: unknown mode %s\n", mode);
        return 2;
    }
    ggml_gallocr_free(galloc);
    ggml_free(late_ctx);
    ggml_free(a.ctx);
    ggml_free(b.ctx);
    ggml_backend_free(backend);
    return 0;
}
