/* ggml_graphs: builds one of the example graphs (graphs.h) with the real ggml API, allocates
 * it with ggml_gallocr (or ggml_backend_sched), computes it on the CPU backend and prints
 * every output bit-exactly, as the hex of each float. The program knows nothing of tlsan: it
 * is what `tlsan run` checks (shim/ggml/ggml.c interposes the allocation and compute calls).
 *
 * Usage: ggml_graphs [--graph mlp|block|multi] [--runs N] [--threads N] [--sched]
 *                    [--backend-dir DIR]
 *        ggml_addon_graphs --addon FILE [the same options]
 *   --runs N      compute the same allocated graph N times (default 2); the outputs of every
 *                 run must be identical, and the shim checks an unchanged graph only once
 *   --sched       allocate and compute through ggml_backend_sched instead of ggml_gallocr +
 *                 ggml_backend_graph_compute
 *   --backend-dir where the CPU backends (libggml-cpu-*.so) are; default: the folder of the
 *                 loaded libggml-base.so
 *   --addon FILE  (ggml_addon_graphs, the same program on the ggml built into a Node addon,
 *                 addon.c) the addon to load, as Node does, with dlopen(RTLD_LOCAL)
 * Outputs go to stdout, diagnostics to stderr. Exit status 0, 1 on a failure, 2 on usage. */
#include "backend.h"
#include "graphs.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct options {
    enum graph_kind kind;
    int runs;
    int threads;
    bool sched;
    const char *backend_dir;
    const char *addon;
};

static int usage(void)
{
    fprintf(stderr, "usage: ggml_graphs [--graph mlp|block|multi] [--runs N] [--threads N] "
                    "[--sched] [--backend-dir DIR] [--addon FILE]\n");
    return 2;
}

static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.kind = GRAPH_MLP, .runs = 2, .threads = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--sched") == 0) {
            o->sched = true;
        } else if (strcmp(a, "--graph") == 0 && v) {
            if (graph_kind_parse(v, &o->kind) != 0)
                return -1;
            i++;
        } else if (strcmp(a, "--runs") == 0 && v) {
            o->runs = atoi(v);
            i++;
        } else if (strcmp(a, "--threads") == 0 && v) {
            o->threads = atoi(v);
            i++;
        } else if (strcmp(a, "--backend-dir") == 0 && v) {
            o->backend_dir = v;
            i++;
        } else if (strcmp(a, "--addon") == 0 && v) {
            o->addon = v;
            i++;
        } else {
            return -1;
        }
    }
    return o->runs >= 1 && o->threads >= 1 ? 0 : -1;
}

/* Gives every weight its deterministic values (graph_fill, seeded by its name). */
static int fill_tensors(struct ggml_context *ctx)
{
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        size_t n = (size_t)ggml_nelements(t);
        float *host = malloc(n * sizeof *host);
        if (!host)
            return -1;
        graph_fill(host, n, ggml_get_name(t));
        ggml_backend_tensor_set(t, host, 0, n * sizeof *host);
        free(host);
    }
    return 0;
}

static int set_inputs(const struct graph_io *io)
{
    for (size_t i = 0; i < io->n_inputs; i++) {
        struct ggml_tensor *t = io->inputs[i];
        size_t n = (size_t)ggml_nelements(t);
        float *host = malloc(n * sizeof *host);
        if (!host)
            return -1;
        graph_fill(host, n, ggml_get_name(t));
        ggml_backend_tensor_set(t, host, 0, n * sizeof *host);
        free(host);
    }
    return 0;
}

/* Prints each output as "output NAME [ne0 ne1 ne2 ne3]" then its floats' bit patterns, 8 a
 * line. Returns an FNV-1a hash of all the output bytes (to compare runs), 0 on failure. */
static uint64_t print_outputs(const struct graph_io *io, int run)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < io->n_outputs; i++) {
        const struct ggml_tensor *t = io->outputs[i];
        size_t n = (size_t)ggml_nelements(t);
        float *host = malloc(n * sizeof *host);
        if (!host)
            return 0;
        ggml_backend_tensor_get(t, host, 0, n * sizeof *host);
        printf("run %d output %s [%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "]\n", run,
               ggml_get_name(t), t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
        for (size_t k = 0; k < n; k++) {
            uint32_t bits;
            memcpy(&bits, &host[k], sizeof bits);
            printf("%08" PRIx32 "%c", bits, (k % 8 == 7 || k + 1 == n) ? '\n' : ' ');
            for (int b = 0; b < 4; b++)
                h = (h ^ ((bits >> (8 * b)) & 0xff)) * 1099511628211ull;
        }
        free(host);
    }
    return h;
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse(argc, argv, &o) != 0)
        return usage();
    int rc = 1;
    struct ggml_context *wctx = NULL, *gctx = NULL;
    ggml_backend_t be = NULL;
    ggml_backend_buffer_t wbuf = NULL;
    ggml_gallocr_t galloc = NULL;
    ggml_backend_sched_t sched = NULL;

    if (o.addon && example_open_addon(o.addon) != 0)
        goto done;
    if (example_load_backends(o.backend_dir) != 0)
        goto done;
    be = example_cpu_backend(o.threads);
    if (!be) {
        fprintf(stderr, "ggml_graphs: no CPU backend\n");
        goto done;
    }
    fprintf(stderr, "ggml_graphs: ggml %s (%s), backend %s, %d threads\n", ggml_version(),
            ggml_commit(), ggml_backend_name(be), o.threads);

    /* no_alloc contexts hold only tensor metadata; the data lives in backend buffers. */
    struct ggml_init_params wp = {.mem_size = 64 * ggml_tensor_overhead(), .no_alloc = true};
    struct ggml_init_params gp = {.mem_size = 256 * ggml_tensor_overhead() + ggml_graph_overhead(),
                                  .no_alloc = true};
    wctx = ggml_init(wp);
    gctx = ggml_init(gp);
    if (!wctx || !gctx)
        goto done;
    struct graph_io io;
    if (graph_build(o.kind, wctx, gctx, &io) != 0) {
        fprintf(stderr, "ggml_graphs: cannot build the graph\n");
        goto done;
    }
    wbuf = ggml_backend_alloc_ctx_tensors(wctx, be);
    if (!wbuf || fill_tensors(wctx) != 0)
        goto done;

    if (o.sched) {
        sched = ggml_backend_sched_new(&be, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
        if (!sched || !ggml_backend_sched_alloc_graph(sched, io.graph))
            goto done;
    } else {
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
        if (!galloc || !ggml_gallocr_alloc_graph(galloc, io.graph))
            goto done;
    }
    fprintf(stderr, "ggml_graphs: %d nodes, compute buffer %zu bytes\n",
            ggml_graph_n_nodes(io.graph),
            galloc ? ggml_gallocr_get_buffer_size(galloc, 0)
                   : ggml_backend_sched_get_buffer_size(sched, be));

    uint64_t first = 0;
    for (int run = 0; run < o.runs; run++) {
        if (set_inputs(&io) != 0)
            goto done;
        enum ggml_status st = sched ? ggml_backend_sched_graph_compute(sched, io.graph)
                                    : ggml_backend_graph_compute(be, io.graph);
        if (st != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "ggml_graphs: compute failed (status %d)\n", (int)st);
            goto done;
        }
        uint64_t h = print_outputs(&io, run);
        if (run == 0)
            first = h;
        else if (h != first) {
            fprintf(stderr, "ggml_graphs: run %d's outputs differ from run 0's\n", run);
            goto done;
        }
    }
    rc = 0;
done:
    ggml_backend_sched_free(sched);
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(wbuf);
    if (gctx)
        ggml_free(gctx);
    if (wctx)
        ggml_free(wctx);
    ggml_backend_free(be);
    return rc;
}
