/* prog_handles.c - a small two-stream "engine" annotated with the handle API of tlsan.h
 * (version 2), run by handles.sh under the shim and without it.
 *
 * One arena; three runs of a small graph, each binding every root again (a new tenant of
 * each name) while the views, declared once in the first run, follow their roots. The host
 * fills the inputs (tlsan_host_write), mm_1 and mm_2 run on two threads (streams 1 and 2),
 * the host waits for both events, runs add_3 and relu_4 (TLSAN_OP_SCOPE), neg_6 in place over
 * h4 (one tlsan_bind_inplace), sum_7 through the view yv of y with a descriptor built by the
 * "executor" (TLSAN_OP_SCOPE_DESC, its location the model's line), and copies part of the
 * output s out (tlsan_host_read_range). Every root is released by handle. The mode (argv[1])
 * plants one bug in the first run:
 *   clean        none
 *   uar-view     relu_4 also reads the view h1v after h1's release
 *   uar-root     relu_4 also reads h1 by its own handle after its release
 *   host-uar     the host reads h2 (by a view) after its release
 *   host-uar-root  the host reads h2 by its own handle after its release
 *   host-unwritten  the host reads h3 before add_3 wrote it
 *   inplace-read relu_4 runs after neg_6 and reads h4, whose bytes neg_6 consumed in place
 *   clobber      'tmp' is bound inside live h1 and written by scale_9; add_3 then reads h1
 *   desc-uar     y is released before sum_7 reads it through yv
 *   misuse       h1 released twice by handle, a view of a released root, a stale handle in
 *                an op, a host read and a view past the end of a root; then the clean run */
#include "tlsan/tlsan.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES 65536
#define RUNS        3

enum mode {
    CLEAN,
    UAR_VIEW,
    HOST_UAR,
    HOST_UNWRITTEN,
    INPLACE_READ,
    CLOBBER,
    DESC_UAR,
    MISUSE,
    UAR_ROOT,
    HOST_UAR_ROOT
};

/* Not static: -rdynamic exports them, so report stacks name them; not inlined, so the stacks
 * start there (handles.sh checks frame #0). */
__attribute__((noinline)) void kernel(float *out, const float *a, const float *b, size_t n,
                                      int kind);
void *worker(void *arg);
__attribute__((noinline)) void graph(int run);

static unsigned char *arena;
static enum mode mode;
/* The views, declared once; their handles stay valid across the runs. */
static tlsan_tensor h1v, h2v, yv;

static float *at(size_t off)
{
    return (float *)(arena + off);
}

/* out[i] = f(a[i], b[i]) for n floats. */
void kernel(float *out, const float *a, const float *b, size_t n, int kind)
{
    for (size_t i = 0; i < n; i++) {
        float x = a ? a[i % 1000] : 0.f, y = b ? b[i % 1000] : 1.f;
        out[i] = kind == 0 ? x * y : kind == 1 ? x + y : kind == 2 ? (x > 0 ? x : 0) : -x;
    }
}

struct job {
    const char *name;
    int stream, event;
    tlsan_tensor x, w, out;
    size_t out_off, n;
};

void *worker(void *arg)
{
    struct job *j = arg;
    TLSAN_OP_SCOPE(j->name, j->stream, TLSAN_READS(j->x, j->w), TLSAN_WRITES(j->out))
    {
        kernel(at(j->out_off), at(0), at(4096), j->n, 0);
    }
    tlsan_event_record(j->event, j->stream);
    return NULL;
}

void graph(int run)
{
    bool fault = run == 0;
    tlsan_tensor x = tlsan_bind(arena, "x", arena, 4096, 0);
    tlsan_tensor w = tlsan_bind(arena, "w", arena + 4096, 4096, 0);
    for (int i = 0; i < 1024; i++) {
        at(0)[i] = (float)i;
        at(4096)[i] = 0.5f;
    }
    tlsan_host_write(x);
    tlsan_host_write(w);
    tlsan_tensor h1 = tlsan_bind(arena, "h1", arena + 8192, 4000, 0);
    tlsan_tensor h2 = tlsan_bind(arena, "h2", arena + 12288, 4096, 0);
    if (run == 0) {
        h1v = tlsan_view("h1v", h1, 0, 2000);
        h2v = tlsan_view("h2v", h2, 1024, 1024);
    }

    struct job j1 = {"mm_1", 1, 1, x, w, h1, 8192, 1000};
    struct job j2 = {"mm_2", 2, 2, x, w, h2, 12288, 1024};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, worker, &j1);
    pthread_create(&t2, NULL, worker, &j2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    tlsan_event_wait(0, 1);
    tlsan_event_wait(0, 2);
    tlsan_release(x);

    tlsan_tensor tmp = {0};
    if (fault && mode == CLOBBER) {
        tmp = tlsan_bind(arena, "tmp", arena + 9216, 1024, 0);
        TLSAN_OP_SCOPE("scale_9", 0, TLSAN_READS(w), TLSAN_WRITES(tmp))
        {
            kernel(at(9216), at(4096), NULL, 256, 0);
        }
    }
    tlsan_release(w);

    tlsan_tensor h3 = tlsan_bind(arena, "h3", arena, 4000, 0);
    if (fault && mode == HOST_UNWRITTEN)
        tlsan_host_read(h3); /* line: host_read(h3) */
    TLSAN_OP_SCOPE("add_3", 0, TLSAN_READS(h1, h2), TLSAN_WRITES(h3))
    {
        kernel(at(0), at(8192), at(12288), 1000, 1);
    }
    tlsan_release(h1);
    tlsan_release(h2);
    if (fault && mode == CLOBBER)
        tlsan_release(tmp);
    if (fault && mode == HOST_UAR)
        tlsan_host_read(h2v); /* line: host_read(h2v) */
    if (fault && mode == HOST_UAR_ROOT)
        tlsan_host_read(h2); /* line: host_read(h2) */

    tlsan_tensor h4 = tlsan_bind(arena, "h4", arena + 8192, 4000, 0);
    tlsan_tensor y = {0};
    if (!(fault && mode == INPLACE_READ)) {
        if (fault && mode == UAR_VIEW) {
            TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h3, h1v), TLSAN_WRITES(h4))
            {
                kernel(at(8192), at(0), NULL, 1000, 2);
            }
        } else if (fault && mode == UAR_ROOT) {
            TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h3, h1), TLSAN_WRITES(h4))
            {
                kernel(at(8192), at(0), NULL, 1000, 2);
            }
        } else {
            TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h3), TLSAN_WRITES(h4))
            {
                kernel(at(8192), at(0), NULL, 1000, 2);
            }
        }
        tlsan_release(h3);
        /* neg_6 computes y in place over h4: one declaration. */
        y = tlsan_bind_inplace("y", h4, TLSAN_BIND_OUTPUT);
        TLSAN_OP_SCOPE("neg_6", 0, TLSAN_READS(h4), TLSAN_WRITES(y))
        {
            kernel(at(8192), at(8192), NULL, 1000, 3);
        }
        tlsan_release(h4);
    } else {
        /* The bug: the executor runs neg_6 before relu_4, which still reads h4. */
        TLSAN_OP_SCOPE("fill_4", 0, TLSAN_READS(h3), TLSAN_WRITES(h4))
        {
            kernel(at(8192), at(0), NULL, 1000, 2);
        }
        y = tlsan_bind_inplace("y", h4, TLSAN_BIND_OUTPUT);
        TLSAN_OP_SCOPE("neg_6", 0, TLSAN_READS(h4), TLSAN_WRITES(y))
        {
            kernel(at(8192), at(8192), NULL, 1000, 3);
        }
        TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h4), TLSAN_WRITES(h3))
        {
            kernel(at(0), at(8192), NULL, 1000, 2);
        }
        tlsan_release(h3);
        tlsan_release(h4);
    }
    if (run == 0)
        yv = tlsan_view("yv", y, 0, 2000);

    /* A generic executor's op: its descriptor and location come from the model. */
    static const tlsan_src_loc sum_7_at = {"model.py", 42, "block"};
    tlsan_tensor s = tlsan_bind(arena, "s", arena + 16384, 64, TLSAN_BIND_OUTPUT);
    if (fault && mode == DESC_UAR)
        tlsan_release(y);
    const tlsan_tensor r7[] = {yv}, w7[] = {s};
    tlsan_op_decl sum_7 = {"sum_7", 0, r7, 1, w7, 1, sum_7_at};
    TLSAN_OP_SCOPE_DESC(&sum_7)
    {
        kernel(at(16384), at(8192), NULL, 16, 1);
    }
    float copy[8];
    tlsan_host_read_range(s, 0, sizeof copy);
    memcpy(copy, at(16384), sizeof copy);
    if (run == RUNS - 1)
        printf("prog_handles: s[0..1] = %g %g\n", (double)copy[0], (double)copy[1]);
    if (!(fault && mode == DESC_UAR))
        tlsan_release(y);
    tlsan_release(s);
}

/* Each call below is refused with one usage warning; nothing else changes. */
static void misuse(void)
{
    tlsan_tensor a = tlsan_bind(arena, "a", arena + 32768, 256, TLSAN_BIND_INPUT);
    tlsan_tensor av = tlsan_view("av", a, 0, 128);
    tlsan_release(a);
    tlsan_release(a);                 /* twice */
    tlsan_release(av);                /* a view's handle */
    (void)tlsan_view("aw", a, 0, 64); /* a released base */
    tlsan_tensor b = tlsan_bind(arena, "a", arena + 32768, 256, TLSAN_BIND_INPUT);
    TLSAN_OP_SCOPE("stale_op", 0, TLSAN_READS(a), TLSAN_WRITES(b))
    { /* a: the old tenant */
        memset(arena + 32768, 0, 256);
    }
    (void)tlsan_bind_inplace("c", av, 0); /* an in-place input must be a root */
    tlsan_host_read_range(b, 200, 100);   /* past the end of its 256 bytes */
    (void)tlsan_view("ax", b, 200, 100);  /* the same range as a view */
    tlsan_release(b);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {
        "clean",   "uar-view", "host-uar", "host-unwritten", "inplace-read",
        "clobber", "desc-uar", "misuse",   "uar-root",       "host-uar-root"};
    const char *m = argc > 1 ? argv[1] : "clean";
    size_t k = 0;
    while (k < sizeof names / sizeof names[0] && strcmp(names[k], m) != 0)
        k++;
    if (k == sizeof names / sizeof names[0]) {
        fprintf(stderr, "usage: prog_handles clean|uar-view|host-uar|host-unwritten|"
                        "inplace-read|clobber|desc-uar|misuse|uar-root|host-uar-root\n");
        return 2;
    }
    mode = (enum mode)k;
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    if (mode == MISUSE)
        misuse();
    for (int run = 0; run < RUNS; run++)
        graph(run);
    tlsan_host_sync();
    tlsan_arena_destroy(arena, ARENA_BYTES);
    free(arena);
    return 0;
}
