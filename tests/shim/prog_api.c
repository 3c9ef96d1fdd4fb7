/* prog_api.c - a small multi-threaded "engine" annotated with tlsan.h, run by api.sh under
 * the shim (and without it: the weak entry points make every annotation a no-op).
 *
 * One arena; two iterations of a small graph (the second rebinds every name as a new
 * tenant). mm_1 and mm_2 run in parallel on two threads (streams 1 and 2), then the host
 * waits for both events and runs the rest: add_3, relu_4, an in-place neg_6 through a view,
 * sum_7 into an output. The mode (argv[1]) plants one bug in the first iteration:
 *   clean     none
 *   clobber   'tmp' is bound inside live 'h1' and written; add_3 then reads h1
 *   stale     8 bytes are written into h1's bytes after its release, before h4 takes them
 *   uar       relu_4 also reads h1 after its release
 *   overflow  mm_1 writes 8 bytes past the end of h1 (4000 bytes planned)
 *   plan-bad  the plan handed to tlsan_plan_load places h2 over live h1
 *   fork-exec clean, then runs itself again (fork + exec, mode clean) and waits for it
 *   _exit     clean, then ends by _exit(4) instead of returning from main
 *   _exit-in-handler  annotates without pause until SIGALRM's handler, 2 ms in, calls _exit(0)
 *   misuse    arenas the shim must refuse or drop, never crash on: unmapped, wrapping around
 *             the address space, read-only, inside another; and a heap arena freed before its
 *             destroy */
#include "tlsan/tlsan.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARENA_BYTES 65536

static const char PLAN_OK[] =
    "{\"tlsan_plan\": 1, \"name\": \"prog_api\","
    " \"arenas\": [{\"name\": \"a0\", \"bytes\": 65536}],"
    " \"tensors\": ["
    "  {\"name\": \"x\", \"bytes\": 4096, \"arena\": \"a0\", \"offset\": 0, \"input\": true},"
    "  {\"name\": \"w\", \"bytes\": 4096, \"arena\": \"a0\", \"offset\": 4096, \"input\": true},"
    "  {\"name\": \"h1\", \"bytes\": 4000, \"arena\": \"a0\", \"offset\": 8192},"
    "  {\"name\": \"h2\", \"bytes\": 4096, \"arena\": \"a0\", \"offset\": %d},"
    "  {\"name\": \"h3\", \"bytes\": 4000, \"arena\": \"a0\", \"offset\": 0},"
    "  {\"name\": \"s\", \"bytes\": 64, \"arena\": \"a0\", \"offset\": 16384, \"output\": true}],"
    " \"ops\": ["
    "  {\"name\": \"mm_1\", \"reads\": [\"x\", \"w\"], \"writes\": [\"h1\"]},"
    "  {\"name\": \"mm_2\", \"reads\": [\"x\", \"w\"], \"writes\": [\"h2\"]},"
    "  {\"name\": \"add_3\", \"reads\": [\"h1\", \"h2\"], \"writes\": [\"h3\"]},"
    "  {\"name\": \"sum_7\", \"reads\": [\"h3\"], \"writes\": [\"s\"]}]}";

enum mode {
    CLEAN,
    CLOBBER,
    STALE,
    UAR,
    OVERFLOW,
    PLAN_BAD,
    FORK_EXEC,
    MISUSE,
    UNDERSCORE_EXIT,
    EXIT_IN_HANDLER
};

/* Not static: -rdynamic exports them, so report stacks name them; run_op and graph are not
 * inlined, so the stacks start there (api.sh checks frame #0). */
float *at(size_t off);
__attribute__((noinline)) void run_op(const char *name, int stream, const char *const *reads,
                                      size_t n_reads, const char *const *writes, size_t n_writes,
                                      const char *const *inplace, size_t n_inplace, float *out,
                                      const float *a, const float *b, size_t n, int kind);
void *worker(void *arg);
__attribute__((noinline)) void graph(void);

static unsigned char *arena;
static enum mode mode;
static int iteration;

float *at(size_t off)
{
    return (float *)(arena + off);
}

/* One op: begin, the kernel, end. `kernel` computes out[i] = f(a[i], b[i]) for n floats. */
void run_op(const char *name, int stream, const char *const *reads, size_t n_reads,
            const char *const *writes, size_t n_writes, const char *const *inplace,
            size_t n_inplace, float *out, const float *a, const float *b, size_t n, int kind)
{
    tlsan_op_info op = {name, stream, reads, n_reads, writes, n_writes, inplace, n_inplace};
    uint64_t token = tlsan_op_begin(&op);
    for (size_t i = 0; i < n; i++) {
        float x = a ? a[i % 1000] : 0.f, y = b ? b[i % 1000] : 1.f;
        out[i] = kind == 0 ? x * y : kind == 1 ? x + y : kind == 2 ? (x > 0 ? x : 0) : -x;
    }
    tlsan_op_end(token);
}

struct job {
    const char *name;
    int stream, event;
    size_t out;
    size_t n;
};

void *worker(void *arg)
{
    struct job *j = arg;
    static const char *const reads[] = {"x", "w"};
    const char *writes[] = {j->out == 8192 ? "h1" : "h2"};
    run_op(j->name, j->stream, reads, 2, writes, 1, NULL, 0, at(j->out), at(0), at(4096), j->n, 0);
    tlsan_event_record(j->event, j->stream);
    return NULL;
}

void graph(void)
{
    bool fault = iteration == 0;
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    tlsan_tensor_bind(arena, "x", arena, 4096, TLSAN_BIND_INPUT);
    tlsan_tensor_bind(arena, "w", arena + 4096, 4096, TLSAN_BIND_INPUT);
    for (int i = 0; i < 1024; i++) {
        at(0)[i] = (float)i;
        at(4096)[i] = 0.5f;
    }
    tlsan_tensor_bind(arena, "h1", arena + 8192, 4000, 0);
    tlsan_tensor_bind(arena, "h2", arena + 12288, 4096, 0);

    /* mm_1 and mm_2 in parallel on their own streams. */
    struct job j1 = {"mm_1", 1, 1, 8192, fault && mode == OVERFLOW ? 1002 : 1000};
    struct job j2 = {"mm_2", 2, 2, 12288, 1024};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, worker, &j1);
    pthread_create(&t2, NULL, worker, &j2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    tlsan_event_wait(0, 1);
    tlsan_event_wait(0, 2);
    tlsan_tensor_release(arena, "x", arena, 0);

    if (fault && mode == CLOBBER) {
        /* A bad placement: tmp inside h1 while h1 is still to be read. */
        tlsan_tensor_bind(arena, "tmp", arena + 9216, 1024, 0);
        static const char *const r[] = {"w"}, *const w[] = {"tmp"};
        run_op("scale_9", 0, r, 1, w, 1, NULL, 0, at(9216), at(4096), NULL, 256, 0);
    }

    tlsan_tensor_bind(arena, "h3", arena, 4000, 0);
    static const char *const r3[] = {"h1", "h2"}, *const w3[] = {"h3"};
    run_op("add_3", 0, r3, 2, w3, 1, NULL, 0, at(0), at(8192), at(12288), 1000, 1);
    tlsan_tensor_release(arena, "h1", arena + 8192, 0);
    tlsan_tensor_release(arena, "h2", arena + 12288, 0);
    if (fault && mode == CLOBBER)
        tlsan_tensor_release(arena, "tmp", arena + 9216, 0);

    if (fault && mode == STALE)
        memset(arena + 8192 + 100, 0, 8); /* through a pointer kept past h1's release */

    tlsan_tensor_bind(arena, "h4", arena + 8192, 4000, 0);
    static const char *const r4[] = {"h3", "h1"}, *const w4[] = {"h4"};
    run_op("relu_4", 0, r4, fault && mode == UAR ? 2 : 1, w4, 1, NULL, 0, at(8192), at(0), NULL,
           1000, 2);
    tlsan_tensor_release(arena, "h3", arena, 0);

    /* neg_6 computes y in place over h4; y is read through a view. */
    tlsan_tensor_bind(arena, "y", arena + 8192, 4000, TLSAN_BIND_INPLACE | TLSAN_BIND_OUTPUT);
    static const char *const r6[] = {"h4"}, *const w6[] = {"y"}, *const ip6[] = {"y", "h4"};
    run_op("neg_6", 0, r6, 1, w6, 1, ip6, 1, at(8192), at(8192), NULL, 1000, 3);
    tlsan_tensor_release(arena, "h4", arena + 8192, TLSAN_RELEASE_HANDOVER);
    tlsan_view_bind("yv", "y", 0, 2000);

    tlsan_tensor_bind(arena, "s", arena + 16384, 64, TLSAN_BIND_OUTPUT);
    static const char *const r7[] = {"yv"}, *const w7[] = {"s"};
    run_op("sum_7", 0, r7, 1, w7, 1, NULL, 0, at(16384), at(8192), NULL, 16, 1);
    tlsan_host_sync();

    if (iteration == 0) {
        char plan[4096];
        int n = snprintf(plan, sizeof plan, PLAN_OK, mode == PLAN_BAD ? 10240 : 12288);
        if (mode == PLAN_BAD)
            memcpy(strstr(plan, "\"prog_api\""), "\"prog_bad\"", 10);
        int findings = tlsan_plan_load(plan, (size_t)n);
        if (findings)
            printf("prog_api: tlsan_plan_load found %d\n", findings);
    }
    tlsan_arena_destroy(arena, ARENA_BYTES);
}

/* Each call below is a misuse the header promises not to turn into a crash. */
static int misuse(void)
{
    tlsan_arena_create("unmapped", (void *)0x1000, 4096);
    tlsan_arena_destroy((void *)0x1000, 4096);
    tlsan_arena_create("wraps", (void *)(uintptr_t)-4096, 8192);
    void *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ro == MAP_FAILED)
        return 1;
    tlsan_arena_create("read-only", ro, 8192);
    munmap(ro, 8192);
    /* Large enough that the real free unmaps it once it leaves the quarantine. */
    size_t big = (size_t)64 << 20;
    unsigned char *heap = malloc(big);
    if (!heap)
        return 1;
    tlsan_arena_create("heap", heap, big);
    tlsan_arena_create("overlap", heap + 4096, 4096); /* inside 'heap': refused */
    tlsan_tensor_bind(heap, "t", heap, big / 2, 0);
    static const char *const w[] = {"t"};
    tlsan_op_info op = {"write_t", 0, NULL, 0, w, 1, NULL, 0};
    uint64_t token = tlsan_op_begin(&op);
    memset(heap, 1, big / 2);
    tlsan_op_end(token);
    free(heap);
    heap = *(unsigned char *volatile *)&heap; /* the misuse is the point: keep GCC quiet */
    /* Push it out of the quarantine (64 MiB by default), so its pages are gone. */
    for (int i = 0; i < 3; i++)
        free(malloc(big));
    tlsan_tensor_bind(heap, "u", heap, 64, 0);
    tlsan_op_info rd = {"read_t", 0, w, 1, NULL, 0, NULL, 0};
    tlsan_op_end(tlsan_op_begin(&rd));
    tlsan_arena_destroy(heap, big);
    printf("prog_api: misuse done\n");
    return 0;
}

static void exit_on_alarm(int sig)
{
    (void)sig;
    _exit(0);
}

/* The signal most often lands while the shim records an annotation, the trace's lock held
 * by this very thread: _exit from the handler must still end the process at once. */
static int exit_in_handler(void)
{
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    signal(SIGALRM, exit_on_alarm);
    struct itimerval in_2ms = {.it_value = {.tv_usec = 2000}};
    if (setitimer(ITIMER_REAL, &in_2ms, NULL) != 0)
        return 1;
    static const char *const w[] = {"t"};
    for (;;) {
        tlsan_tensor_bind(arena, "t", arena, 64, 0);
        run_op("op", 0, NULL, 0, w, 1, NULL, 0, at(0), NULL, NULL, 16, 3);
        tlsan_tensor_release(arena, "t", arena, 64);
    }
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"clean",    "clobber",         "stale",     "uar",
                                        "overflow", "plan-bad",        "fork-exec", "misuse",
                                        "_exit",    "_exit-in-handler"};
    const char *m = argc > 1 ? argv[1] : "clean";
    size_t k = 0;
    while (k < sizeof names / sizeof names[0] && strcmp(names[k], m) != 0)
        k++;
    if (k == sizeof names / sizeof names[0]) {
        fprintf(
            stderr,
            "usage: prog_api "
            "clean|clobber|stale|uar|overflow|plan-bad|fork-exec|misuse|_exit|_exit-in-handler\n");
        return 2;
    }
    mode = (enum mode)k;
    if (mode == MISUSE)
        return misuse();
    if (mode == EXIT_IN_HANDLER)
        return exit_in_handler();
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    for (iteration = 0; iteration < 2; iteration++)
        graph();
    free(arena);
    if (mode == UNDERSCORE_EXIT)
        _exit(4);
    if (mode == FORK_EXEC) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/proc/self/exe", argv[0], "clean", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
            return 1;
        printf("prog_api: child %d exited %d\n", (int)pid, WEXITSTATUS(status));
        return WEXITSTATUS(status);
    }
    return 0;
}
