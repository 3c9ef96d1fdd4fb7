/* prog_robust: a correct program that leans on the allocator, for robust.sh to run under
 * libtlsan.so. Every mode checks its own results, prints "MODE ok ..." and exits 0, or prints
 * "FAIL: ..." lines and exits 1. Modes (argv[1]):
 *   threads  8 threads x 100k allocations of varied sizes and kinds, contents checked
 *   fork     forks from a threaded program; each child allocates and exits cleanly
 *   dlopen   dlopen/dlsym/dlclose libm.so.6 in a loop, allocating in between
 *   realloc  realloc chains growing and shrinking, contents preserved
 *   limits   libc's contracts: huge and zero sizes, overflow, alignments, errno
 *   quick    a little of everything (for Valgrind and ASan runs)
 *   churn    1 MiB blocks freed and allocated keeping 100 live, then many small ones; prints
 *            how many allocations failed (for a run under ulimit -v)
 *   signals-own N  a SIGALRM timer every 50 us whose handler mallocs and frees, asks the
 *            usable size of a block of its own and now and then reallocs it, while the main
 *            thread (and, with N = 2, an idle second thread) allocates and frees
 *   usable-storm  a thread sends SIGUSR1 to the main thread without pause while it allocates
 *            and frees 20,000 blocks; the handler asks the usable size of a block (sampled
 *            under sample_rate=1: the interrupted thread often holds the pool's lock)
 *   closefd FILE  annotates once (so the trace is open), closes every fd from 3 up, opens
 *            FILE, puts it on every number up to 2047 (as a program's later opens could),
 *            writes 16 KiB to it, annotates enough to grow a trace past 1 MiB, then frees a
 *            block twice (a report)
 *   annotate MS  sleeps MS milliseconds, then annotates enough to grow a trace to megabytes
 *   forkfind  a double free in the parent, an arena; a clean forked child; prints its status
 *   dlopen-tls LIB  4 threads load LIB (lib_tls.c), use its thread-locals, free what they
 *            allocated and unload it, 300 times each
 *   forklog DIR  renames DIR/log-dir to DIR/moved (where the parent's log_path file is), then
 *            forks a child that frees a block twice
 *   libc-names  mixes glibc's exported __libc_malloc family with malloc/free both ways (a
 *            block from one freed or resized by the other), contents checked
 *   readonly-free  large blocks made read-only, then freed
 *   readonly-small CASE  small blocks whose pages are protected, then freed or reallocated
 *   exhaust  maps memory until the address space (ulimit -v) runs out, then allocates
 *   deepbind LIB [lazy]  opens LIB (lib_deepbind.c) with RTLD_DEEPBIND; blocks both ways
 *   sampled-protect  a page-aligned block of a page made PROT_NONE, its access caught
 *   fork-own  the parent frees 2,000 blocks and keeps 2,000 live, then forks children that
 *            overflow a block of their own, write into a block they freed, and (the last) write
 *            into a block the parent freed before the fork; prints each child's status
 *   small-stack BYTES  a thread with a stack of BYTES frees a block twice (glibc aborts)
 *   small-altstack BYTES  a thread with a signal stack of BYTES (and a SIGSEGV handler on it)
 *            reads a block after freeing it (caught when sampled: run with sample_rate=1) */
#include "tlsan/tlsan.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* Present when libtlsan.so is preloaded; then exact sizes can be asserted. */
extern int tlsan_rt_active(void) __attribute__((weak));

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);                                \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static int shim_on(void)
{
    return tlsan_rt_active && tlsan_rt_active();
}

/* Hides a size from the compiler, which otherwise refuses the huge constants. */
static size_t opaque(size_t v)
{
    volatile size_t x = v;
    return x;
}

static int aligned(const void *p, size_t a)
{
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* ---- threads ---- */

#define THREADS    8
#define ITERATIONS 100000
#define LIVE       64

static _Atomic unsigned long g_bad;

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void *thread_main(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg, seed = id * 7919u + 1;
    unsigned char *live[LIVE] = {0};
    size_t sizes[LIVE] = {0};
    unsigned char tags[LIVE] = {0};
    unsigned long bad = 0;
    for (unsigned i = 0; i < ITERATIONS; i++) {
        unsigned k = rnd(&seed) % LIVE;
        if (live[k]) {
            for (size_t j = 0; j < sizes[k]; j++)
                if (live[k][j] != tags[k]) {
                    bad++;
                    break;
                }
            free(live[k]);
        }
        size_t n = rnd(&seed) % 2048;
        unsigned kind = rnd(&seed) % 4;
        unsigned char *p;
        if (kind == 0) {
            p = calloc(1, n);
            for (size_t j = 0; p && j < n; j++)
                bad += p[j] != 0;
        } else if (kind == 1) {
            p = aligned_alloc(64, (n + 63) & ~(size_t)63);
            bad += p && !aligned(p, 64);
        } else if (kind == 2 && live[k] == NULL) {
            p = realloc(NULL, n);
        } else {
            p = malloc(n);
        }
        if (!p) {
            bad++;
            live[k] = NULL;
            continue;
        }
        bad += !aligned(p, alignof(max_align_t));
        tags[k] = (unsigned char)(id * 31 + i);
        memset(p, tags[k], n);
        live[k] = p;
        sizes[k] = n;
    }
    for (unsigned k = 0; k < LIVE; k++)
        free(live[k]);
    g_bad += bad;
    return NULL;
}

static void mode_threads(void)
{
    pthread_t t[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)i) == 0, "create");
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(g_bad == 0, "%lu bad blocks", (unsigned long)g_bad);
    if (!failures)
        printf("threads ok %d x %d\n", THREADS, ITERATIONS);
}

/* ---- fork ---- */

static _Atomic int g_stop;

static void *churn_main(void *arg)
{
    (void)arg;
    unsigned seed = 99;
    while (!g_stop) {
        size_t n = rnd(&seed) % 4096;
        char *p = malloc(n + 1);
        memset(p, 'x', n + 1);
        free(p);
    }
    return NULL;
}

static void mode_fork(void)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, churn_main, NULL);
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* The child: other threads are gone, every lock must be usable. */
            int bad = 0;
            char *keep[100];
            for (int i = 0; i < 100; i++) {
                keep[i] = malloc((size_t)i * 10 + 1);
                memset(keep[i], i, (size_t)i * 10 + 1);
            }
            for (int i = 0; i < 100; i++) {
                bad += keep[i][i * 10] != (char)i;
                free(keep[i]);
            }
            char *s = strdup("child");
            bad += strcmp(s, "child") != 0;
            free(s);
            exit(bad ? 1 : 0);
        }
        CHECK(pid > 0, "fork");
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %#x", round, status);
    }
    g_stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    if (!failures)
        printf("fork ok 20 children\n");
}

/* ---- dlopen ---- */

static void mode_dlopen(void)
{
    for (int i = 0; i < 200; i++) {
        void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
        CHECK(h, "dlopen: %s", dlerror());
        if (!h)
            break;
        double (*cosf)(double) = (double (*)(double))dlsym(h, "cos");
        CHECK(cosf && cosf(0.0) == 1.0, "cos");
        char *p = malloc(100 + (size_t)i);
        memset(p, 1, 100 + (size_t)i);
        free(p);
        CHECK(dlclose(h) == 0, "dlclose");
        /* dlerror after a failed lookup allocates its message; freeing it later must be fine */
        CHECK(dlsym(RTLD_DEFAULT, "no_such_symbol_tlsan") == NULL, "dlsym");
        CHECK(dlerror() != NULL, "dlerror");
    }
    if (!failures)
        printf("dlopen ok 200 rounds\n");
}

/* ---- realloc ---- */

static void mode_realloc(void)
{
    for (int chain = 0; chain < 20; chain++) {
        size_t n = 1;
        unsigned char *p = malloc(n);
        p[0] = 0;
        /* Byte i always holds i mod 251 up to the current size. */
        while (n < (1u << 20)) {
            size_t m = n + n / 2 + 1;
            p = realloc(p, m);
            CHECK(p, "grow to %zu", m);
            for (size_t i = 0; i < n; i++)
                if (p[i] != (unsigned char)(i % 251)) {
                    CHECK(0, "byte %zu lost growing %zu -> %zu", i, n, m);
                    break;
                }
            for (size_t i = n; i < m; i++)
                p[i] = (unsigned char)(i % 251);
            n = m;
        }
        while (n > 1) {
            size_t m = n / 3 + 1;
            p = realloc(p, m);
            for (size_t i = 0; i < m; i++)
                if (p[i] != (unsigned char)(i % 251)) {
                    CHECK(0, "byte %zu lost shrinking to %zu", i, m);
                    break;
                }
            n = m == n ? 1 : m;
        }
        p = reallocarray(p, 10, 10);
        CHECK(p && p[0] == 0, "reallocarray");
        CHECK(realloc(p, 0) == NULL, "realloc(p, 0) frees and returns NULL");
    }
    if (!failures)
        printf("realloc ok 20 chains\n");
}

/* ---- limits ---- */

static void mode_limits(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p;

    errno = 0;
    CHECK(malloc(opaque(SIZE_MAX)) == NULL && errno == ENOMEM, "malloc(SIZE_MAX) errno %d", errno);
    errno = 0;
    CHECK(malloc(opaque(SIZE_MAX / 2)) == NULL && errno == ENOMEM, "malloc(SIZE_MAX/2) errno %d",
          errno);
    errno = 0;
    CHECK(malloc(opaque(SIZE_MAX - 8)) == NULL && errno == ENOMEM, "malloc(SIZE_MAX-8) errno %d",
          errno);
    errno = 0;
    CHECK(calloc(opaque(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM, "calloc overflow errno %d",
          errno);
    errno = 0;
    CHECK(calloc(1, opaque(SIZE_MAX)) == NULL && errno == ENOMEM, "calloc(1, SIZE_MAX) errno %d",
          errno);
    errno = 0;
    p = malloc(16);
    CHECK(reallocarray(p, opaque(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM,
          "reallocarray overflow");
    errno = 0;
    CHECK(realloc(p, opaque(SIZE_MAX)) == NULL && errno == ENOMEM, "realloc(p, SIZE_MAX) errno %d",
          errno);
    free(p); /* still valid after the failed reallocs */

    void *z1 = malloc(0), *z2 = malloc(0), *z3 = calloc(0, 0), *z4 = calloc(0, 10);
    CHECK(z1 && z2 && z3 && z4, "zero-size requests return pointers");
    CHECK(z1 != z2 && z1 != z3 && z2 != z3 && z3 != z4, "zero-size pointers are unique");
    free(z1), free(z2), free(z3), free(z4);
    p = realloc(NULL, 24);
    CHECK(p && aligned(p, alignof(max_align_t)), "realloc(NULL, n) is malloc(n)");
    CHECK(realloc(p, 0) == NULL, "realloc(p, 0) returns NULL");

    /* posix_memalign: EINVAL for an alignment that is not a power-of-two multiple of
     * sizeof(void *), errno untouched. */
    static const size_t bad_align[] = {0, 1, 2, 4, 3, 12, 24, 48, 100};
    for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
        p = (void *)0x1;
        errno = 1234;
        int r = posix_memalign(&p, bad_align[i], 16);
        CHECK(r == EINVAL && errno == 1234 && p == (void *)0x1, "posix_memalign(%zu) = %d",
              bad_align[i], r);
    }
    static const size_t good_align[] = {8, 16, 32, 64, 128, 4096, 65536};
    for (size_t i = 0; i < sizeof good_align / sizeof good_align[0]; i++) {
        p = NULL;
        errno = 1234;
        int r = posix_memalign(&p, good_align[i], 100);
        CHECK(r == 0 && p && aligned(p, good_align[i]) && errno == 1234, "posix_memalign(%zu) = %d",
              good_align[i], r);
        memset(p, 0, 100);
        free(p);
        p = aligned_alloc(good_align[i], good_align[i] * 2);
        CHECK(p && aligned(p, good_align[i]), "aligned_alloc(%zu)", good_align[i]);
        free(p);
        p = memalign(good_align[i], 33);
        CHECK(p && aligned(p, good_align[i]), "memalign(%zu)", good_align[i]);
        free(p);
    }
    p = NULL;
    CHECK(posix_memalign(&p, 64, opaque(SIZE_MAX)) == ENOMEM && p == NULL, "posix_memalign huge");
    errno = 0;
    CHECK(memalign(64, opaque(SIZE_MAX)) == NULL && errno == ENOMEM, "memalign huge");
    /* glibc 2.36 memalign and aligned_alloc round a non-power-of-two alignment up. */
    p = memalign(opaque(24), 10);
    printf("memalign(24, 10): %s\n", !p ? "NULL" : aligned(p, 32) ? "aligned to 32" : "other");
    free(p);
    errno = 0;
    p = aligned_alloc(opaque(3), 16);
    printf("aligned_alloc(3, 16): %s errno %d\n", p ? "non-NULL" : "NULL", p ? 0 : errno);
    free(p);

    p = valloc(10);
    CHECK(p && aligned(p, page), "valloc");
    free(p);
    p = pvalloc(10);
    CHECK(p && aligned(p, page) && malloc_usable_size(p) >= page, "pvalloc");
    if (shim_on())
        CHECK(malloc_usable_size(p) == page, "pvalloc size %zu", malloc_usable_size(p));
    free(p);

    p = malloc(10);
    CHECK(malloc_usable_size(p) >= 10, "usable size");
    if (shim_on())
        CHECK(malloc_usable_size(p) == 10, "usable size %zu is the requested one",
              malloc_usable_size(p));
    free(p);
    CHECK(malloc_usable_size(NULL) == 0, "usable size of NULL");
    errno = 4321;
    free(NULL);
    p = malloc(8);
    free(p);
    CHECK(errno == 4321, "free keeps errno");
    /* A successful allocation leaves errno alone (the shim's stack capture may set it). */
    errno = 4321;
    p = memalign(opaque(0), 0); /* a constant 0 crashes clang 14's optimizer (alloc_align) */
    CHECK(p && errno == 4321, "memalign(0, 0) keeps errno (%d)", errno);
    free(p);
    errno = 4321;
    p = malloc(10);
    CHECK(p && errno == 4321, "malloc keeps errno (%d)", errno);
    p = realloc(p, 100);
    CHECK(p && errno == 4321, "realloc keeps errno (%d)", errno);
    free(p);
    p = aligned_alloc(64, 64);
    CHECK(p && errno == 4321, "aligned_alloc keeps errno (%d)", errno);
    free(p);
    p = calloc(3, 3);
    CHECK(p && errno == 4321, "calloc keeps errno (%d)", errno);
    free(p);
    /* glibc checks the alignment first: EINVAL, even with a size that would overflow. */
    errno = 0;
    CHECK(memalign(opaque(SIZE_MAX), opaque(SIZE_MAX - 4)) == NULL && errno == EINVAL,
          "memalign(SIZE_MAX, SIZE_MAX-4) errno %d", errno);
    errno = 0;
    CHECK(aligned_alloc(opaque(SIZE_MAX), opaque(SIZE_MAX)) == NULL && errno == EINVAL,
          "aligned_alloc(SIZE_MAX, SIZE_MAX) errno %d", errno);
    if (!failures)
        printf("limits ok (shim %s)\n", shim_on() ? "active" : "not active");
}

static void mode_quick(void)
{
    char *p = malloc(100);
    memset(p, 1, 100);
    p = realloc(p, 1000);
    CHECK(p[99] == 1, "realloc kept the bytes");
    free(p);
    void *q = NULL;
    CHECK(posix_memalign(&q, 64, 8) == 0 && aligned(q, 64), "posix_memalign");
    free(q);
    q = calloc(10, 10);
    free(q);
    if (!failures)
        printf("quick ok\n");
}

/* ---- churn ---- */

static void mode_churn(void)
{
    enum { LIVE_MB = 100 };
    void **ring = calloc(LIVE_MB, sizeof *ring);
    long fails = 0;
    for (long i = 0; i < 2000; i++) {
        long k = i % LIVE_MB;
        free(ring[k]);
        ring[k] = malloc(1 << 20);
        if (!ring[k])
            fails++;
        else
            memset(ring[k], 1, 1 << 20);
    }
    size_t n = (size_t)LIVE_MB * 4096;
    void **small = malloc(n * sizeof *small);
    for (int r = 0; r < 3; r++) {
        for (size_t i = 0; i < n; i++)
            fails += (small[i] = malloc(100)) == NULL;
        for (size_t i = 0; i < n; i++)
            free(small[i]);
    }
    free(small);
    for (long k = 0; k < LIVE_MB; k++)
        free(ring[k]);
    free(ring);
    printf("churn fails %ld\n", fails);
}

/* Installs fn for sig with these sa_flags (and an empty mask). */
static void set_handler(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

/* ---- signals ---- */

static volatile sig_atomic_t g_hits;
static volatile sig_atomic_t g_bad_size;       /* how many times */
static volatile size_t g_bad_usable, g_bad_of; /* the last wrong answer, for a block of */
static unsigned char *volatile g_own;          /* the handler's own block, resized by it */
static volatile size_t g_own_size;
static pthread_t g_main;

static void on_alarm(int sig)
{
    (void)sig;
    unsigned char *p = malloc(64);
    if (p)
        memset(p, 1, 64);
    free(p);
    g_hits++;
    /* A block of its own asked about and resized, on the main thread only: with two threads
     * two handlers may run at once. The interrupted thread may hold the lock of the block's
     * shard of the table, or (sampled under sample_rate=1) the pool's. */
    if (!pthread_equal(pthread_self(), g_main))
        return;
    size_t usable = malloc_usable_size(g_own);
    if (usable < g_own_size) {
        g_bad_size = g_bad_size + 1;
        g_bad_usable = usable;
        g_bad_of = g_own_size;
    }
    if (g_hits % 64)
        return; /* the usable size on every call; a realloc (two page protections when
                   sampled) on some, or the handler would outlast the timer's period */
    size_t n = g_hits & 64 ? 100 : 200;
    unsigned char *q = realloc(g_own, n);
    if (q) {
        g_own = q;
        g_own_size = n;
    }
}

/* ---- usable-storm ---- */

static unsigned char *volatile g_storm_block;
static atomic_int g_storm_stop;
static volatile size_t g_storm_usable;
static pthread_t g_storm_main;

static void on_storm(int sig)
{
    (void)sig;
    g_storm_usable = malloc_usable_size(g_storm_block);
}

static void *storm_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_storm_stop))
        pthread_kill(g_storm_main, SIGUSR1);
    return NULL;
}

static void mode_usable_storm(void)
{
    g_storm_block = malloc(64);
    CHECK(g_storm_block, "malloc");
    g_storm_main = pthread_self();
    set_handler(SIGUSR1, on_storm, SA_RESTART);
    pthread_t storm;
    CHECK(pthread_create(&storm, NULL, storm_main, NULL) == 0, "pthread_create");
    void *keep[300] = {0};
    for (long i = 0; i < 20000; i++) {
        int k = (int)(i % 300);
        free(keep[k]);
        keep[k] = malloc((size_t)(i % 3000) + 1);
    }
    atomic_store(&g_storm_stop, 1);
    pthread_join(storm, NULL);
    signal(SIGUSR1, SIG_IGN);
    for (int k = 0; k < 300; k++)
        free(keep[k]);
    CHECK(g_storm_usable >= 64, "malloc_usable_size in the handler below the block's size");
    free(g_storm_block);
    if (!failures)
        printf("usable-storm ok\n");
}

static void *idle_main(void *arg)
{
    while (!g_stop)
        usleep(1000);
    return arg;
}

static void mode_signals(int threads)
{
    pthread_t idle;
    if (threads > 1)
        pthread_create(&idle, NULL, idle_main, NULL);
    g_main = pthread_self();
    g_own = malloc(g_own_size = 64);
    CHECK(g_own, "malloc");
    set_handler(SIGALRM, on_alarm, SA_RESTART);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, NULL);
    void *ring[128] = {0};
    for (long i = 0; i < 300000; i++) {
        int k = (int)(i & 127);
        free(ring[k]);
        ring[k] = malloc((size_t)(i * 7) % 300 + 1);
        CHECK(ring[k], "malloc");
    }
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    for (int k = 0; k < 128; k++)
        free(ring[k]);
    g_stop = 1;
    if (threads > 1)
        pthread_join(idle, NULL);
    free(g_own);
    CHECK(g_hits > 0, "no SIGALRM handled");
    CHECK(!g_bad_size,
          "malloc_usable_size in the handler below the block's size %d times (last: %zu for "
          "%zu bytes, of %ld calls)",
          (int)g_bad_size, (size_t)g_bad_usable, (size_t)g_bad_of, (long)g_hits);
    if (!failures)
        printf("signals ok\n");
}

/* ---- file descriptors ---- */

static unsigned char g_arena[1 << 16];

/* Enough annotations to grow a trace by megabytes: each name is new (a STRING record) and
 * long (the engine's cost grows with the number of names, not their length). */
static void annotate(int n)
{
    char name[400], op[400], pad[301];
    memset(pad, 'p', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    tlsan_arena_create("a", g_arena, sizeof g_arena);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "tensor_%d_%s", i, pad);
        snprintf(op, sizeof op, "op_number_%d_%s", i, pad);
        tlsan_tensor_bind(g_arena, name, g_arena, 64, 0);
        const char *writes[1] = {name};
        tlsan_op_info info = {op, 0, NULL, 0, writes, 1, NULL, 0};
        tlsan_op_end(tlsan_op_begin(&info));
        tlsan_tensor_release(g_arena, name, g_arena, 0);
    }
    tlsan_arena_destroy(g_arena, sizeof g_arena);
}

static void mode_closefd(const char *file)
{
    struct rlimit rl;
    int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2048 ? (int)rl.rlim_cur : 2048;
    annotate(1); /* the trace file is made at the first record: have it open before the close */
    for (int fd = 3; fd < 65536; fd++)
        close(fd);
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd == 3, "open: %d", fd);
    for (int n = 4; n < top; n++)
        dup2(fd, n);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 4; i++)
        CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "write");
    annotate(4000);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 16384, "size %lld", (long long)st.st_size);
    char *p = malloc(16);
    free(p);
    free(*(char *volatile *)&p);
    if (!failures)
        printf("closefd ok\n");
}

static void mode_annotate(int ms)
{
    usleep((useconds_t)ms * 1000);
    annotate(4000);
    printf("annotate ok\n");
}

/* ---- dlopen of a library with thread-locals ---- */

static void *tls_main(void *arg)
{
    long sum = 0;
    for (int round = 0; round < 300; round++) {
        void *h = dlopen(arg, RTLD_NOW | RTLD_LOCAL);
        CHECK(h, "dlopen: %s", dlerror());
        if (!h)
            break;
        int (*work)(int) = (int (*)(int))dlsym(h, "lib_work");
        void (*done)(void) = (void (*)(void))dlsym(h, "lib_thread_done");
        for (int i = 0; i < 50; i++)
            sum += work(i);
        done();
        dlclose(h);
    }
    return (void *)sum;
}

static void mode_dlopen_tls(const char *lib)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, tls_main, (void *)lib);
    long total = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    CHECK(total == 2130000, "total %ld", total);
    if (!failures)
        printf("dlopen-tls ok\n");
}

/* ---- fork and findings ---- */

static void mode_forkfind(void)
{
    char *p = malloc(10);
    free(p);
    free(*(char *volatile *)&p); /* the parent's finding */
    /* The engine's fork handlers too: the child must come out of them with a clean state
     * (its blocks tracked: exact usable sizes). */
    tlsan_arena_create("a", g_arena, sizeof g_arena);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *q = malloc(5);
        int bad = shim_on() && malloc_usable_size(q) != 5;
        free(q);
        exit(bad ? 2 : 0);
    }
    tlsan_arena_destroy(g_arena, sizeof g_arena);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("forkfind child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* What a forked child's exit checks: its own blocks, not the copy of its parent's heap. */
static void mode_fork_own(void)
{
    static char *live[2000], *freed[2000];
    for (int i = 0; i < 2000; i++) {
        live[i] = malloc(48);
        freed[i] = malloc(48);
    }
    for (int i = 0; i < 2000; i++)
        free(freed[i]);
    for (int which = 0; which < 3; which++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            if (which == 0) {
                volatile char *p = malloc(64); /* volatile: the stores are not dead */
                p[64] = 1;                     /* the child's overflow */
            } else if (which == 1) {
                volatile char *p = malloc(32);
                free((void *)p);
                p[3] = 1; /* the child's write after free */
            } else {
                freed[7][3] = 1; /* into a block the parent freed: not checked at the exit */
            }
            exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        printf("fork-own child %d status %d\n", which,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    for (int i = 0; i < 2000; i++)
        free(live[i]);
}

static void mode_forklog(const char *dir)
{
    char from[512], to[512];
    snprintf(from, sizeof from, "%s/log-dir", dir);
    snprintf(to, sizeof to, "%s/moved", dir);
    CHECK(rename(from, to) == 0, "rename");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *p = malloc(10);
        free(p);
        free(*(char *volatile *)&p);
        exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("forklog child %d status %d\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* glibc exports its allocator under these names too; some programs and libraries call them
 * directly (to reach "the real malloc" from their own malloc wrapper, say). */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __libc_free(void *p);

static void mode_libc_names(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *a = __libc_malloc(100);
    CHECK(a != NULL, "__libc_malloc");
    memset(a, 'a', 100);
    a = realloc(a, 300);
    CHECK(a && a[99] == 'a', "realloc of a __libc_malloc block keeps its bytes");
    free(a);

    char *b = malloc(100);
    memset(b, 'b', 100);
    b = __libc_realloc(b, 5000);
    CHECK(b && b[0] == 'b' && b[99] == 'b', "__libc_realloc of a malloc block keeps its bytes");
    __libc_free(b);

    unsigned char *c = __libc_calloc(64, 8);
    int zero = 1;
    for (int i = 0; c && i < 512; i++)
        zero &= c[i] == 0;
    CHECK(c && zero, "__libc_calloc gives zeroed bytes");
    free(c);

    void *d = __libc_memalign(256, 100);
    CHECK(d && ((uintptr_t)d & 255) == 0, "__libc_memalign aligns");
    free(d);
    void *e = __libc_valloc(10);
    CHECK(e && ((uintptr_t)e & (page - 1)) == 0, "__libc_valloc aligns to a page");
    __libc_free(e);
    void *f = __libc_pvalloc(10);
    CHECK(f && ((uintptr_t)f & (page - 1)) == 0, "__libc_pvalloc aligns to a page");
    free(f);
    void *g = malloc(40);
    __libc_free(g);
    if (!failures)
        printf("libc-names ok\n");
}

/* A large block made read-only with mprotect, then freed: natively glibc unmaps it without
 * writing to it (the mmap threshold is fixed, so that each such block is mapped), so the
 * program goes on; the shim must too (it fills freed blocks). Then the same with every page
 * of the block but its first. The size is not a multiple of a page: the last page is shared
 * with the redzone. */
static void mode_readonly_free(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (1 << 20) + 1000;
    CHECK(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1, "mallopt");
    for (int round = 0; round < 2; round++) {
        unsigned char *p = malloc(n);
        CHECK(p != NULL, "malloc of 1 MiB");
        if (!p)
            return;
        memset(p, 'r', n);
        uintptr_t lo = ((uintptr_t)p + (round ? page : 0)) & ~(uintptr_t)(page - 1);
        uintptr_t hi = ((uintptr_t)p + n + page - 1) & ~(uintptr_t)(page - 1);
        CHECK(mprotect((void *)lo, hi - lo, PROT_READ) == 0, "mprotect read-only");
        CHECK(p[n - 1] == 'r', "the block reads back");
        free(p);
    }
    unsigned char *q = malloc(n);
    CHECK(q != NULL, "malloc after the frees");
    if (q)
        memset(q, 'q', n);
    free(q);
    if (!failures)
        printf("readonly-free ok\n");
}

/* Small blocks whose pages the program protected, then freed (arg: the case): natively glibc
 * writes only the chunk's header (before the protected page) and, for a block that does not
 * join the top chunk, its first bytes; the shim must neither crash nor report when the fill of
 * the freed block faults. Cases: "memalign-read" and "memalign-none" a memalign(4096, 4096)
 * block made read-only or inaccessible, then freed; "realloc-read" the read-only one grown
 * with realloc (natively in place, into the top chunk; under the shim it moves, and the copy
 * reads it); "interior-none" the middle page of a three-page block made inaccessible (a guard
 * page of the program's own), then freed. Natively a later allocation may carve the top chunk
 * over the protected page, so stdout is unbuffered (no buffer to allocate) and nothing is
 * allocated after. */
static void mode_readonly_small(const char *arg)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int none = strstr(arg, "-none") != NULL;
    unsigned char *p, *lo;
    size_t n;
    if (strcmp(arg, "interior-none") == 0) {
        n = 3 * page;
        p = malloc(n);
        CHECK(p != NULL, "malloc of three pages");
        if (!p)
            return;
        lo = (unsigned char *)(((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1));
    } else {
        n = page;
        p = lo = memalign(page, n);
        CHECK(p != NULL, "memalign of a page");
        if (!p)
            return;
    }
    memset(p, 'm', n);
    CHECK(mprotect(lo, page, none ? PROT_NONE : PROT_READ) == 0, "mprotect");
    if (strcmp(arg, "realloc-read") == 0) {
        unsigned char *q = realloc(p, 3 * page);
        CHECK(q != NULL && q[0] == 'm' && q[page - 1] == 'm', "realloc keeps the bytes");
        p = q;
    }
    free(p);
    if (!failures)
        printf("readonly-small %s ok\n", arg);
}

/* Run under ulimit -v: maps 64 KiB pieces until the address space is used up, then allocates
 * and frees a small block (the first small one: stdout is unbuffered), and unmaps them. Under
 * the shim with sample_rate=1 that block is sampled, and the pool cannot be mapped. The pieces
 * are chained through their own first word: nothing else of the limit is taken (the churn
 * mode runs near its limit too). */
static void mode_exhaust(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    enum { PIECE = 64 * 1024 };
    void **last = NULL;
    size_t n = 0;
    /* glibc's heap set up first, kept (natively the block below comes from it), by an
     * allocator the shim never samples (the pool is mapped at the first sampled call). */
    void *keep = NULL;
    CHECK(posix_memalign(&keep, 64, 8192) == 0, "posix_memalign");
    for (; n < (1u << 20); n++) { /* 64 GiB: the limit is reached first */
        void **m = mmap(NULL, PIECE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            break;
        *m = last;
        last = m;
    }
    CHECK(n < (1u << 20), "the address space ran out (run under ulimit -v)");
    char *p = malloc(32);
    CHECK(p != NULL, "a small block with the address space used up");
    if (p)
        memset(p, 'e', 32);
    free(p);
    size_t back = 0;
    while (last) {
        void **next = *last;
        back += munmap(last, PIECE) == 0;
        last = next;
    }
    CHECK(back == n, "every piece unmapped");
    free(keep);
    if (!failures)
        printf("exhaust ok\n");
}

/* dlopen(LIB, RTLD_NOW | RTLD_DEEPBIND) (arg "lazy": RTLD_LAZY) of lib_deepbind.c, whose
 * malloc family is then glibc's natively: blocks of the program freed and reallocated by the
 * library and the reverse, and the block its constructor allocated freed by the program.
 * Natively all of it is one allocator's; the shim must neither report nor crash. Then, for
 * arg "double-free", the library frees a block of the program's twice, and for "invalid-free"
 * the program frees an interior pointer (each a bug natively, which glibc aborts on). */
static void mode_deepbind(const char *lib, const char *how)
{
    int flags = (strcmp(how, "lazy") == 0 ? RTLD_LAZY : RTLD_NOW) | RTLD_DEEPBIND;
    void *h = dlopen(lib, flags);
    CHECK(h != NULL, "dlopen %s: %s", lib, dlerror());
    if (!h)
        return;
    void *(*lib_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "lib_deepbind_alloc");
    void (*lib_free)(void *) = (void (*)(void *))dlsym(h, "lib_deepbind_free");
    void *(*lib_realloc)(void *, size_t) =
        (void *(*)(void *, size_t))dlsym(h, "lib_deepbind_realloc");
    char *(*lib_take)(void) = (char *(*)(void))dlsym(h, "lib_deepbind_take");
    CHECK(lib_alloc && lib_free && lib_realloc && lib_take, "dlsym");
    if (!lib_alloc || !lib_free || !lib_realloc || !lib_take)
        return;
    for (int round = 0; round < 100; round++) {
        char *p = malloc(100); /* the program's, freed by the library */
        memset(p, 'p', 100);
        p = lib_realloc(p, 5000);
        CHECK(p && p[99] == 'p', "the library's realloc of the program's block");
        lib_free(p);
        char *q = lib_alloc(100); /* the library's, freed by the program */
        memset(q, 'q', 100);
        q = realloc(q, 3000);
        CHECK(q && q[99] == 'q', "the program's realloc of the library's block");
        free(q);
    }
    char *made = lib_take();
    CHECK(made && strcmp(made, "made by the constructor") == 0, "the constructor's block");
    made = realloc(made, 4000);
    CHECK(made && strcmp(made, "made by the constructor") == 0, "its realloc by the program");
    free(made);
    if (strcmp(how, "double-free") == 0) {
        char *p = malloc(24);
        lib_free(p);
        lib_free(p);
    } else if (strcmp(how, "invalid-free") == 0) {
        char *p = malloc(64);
        memset(p, 'x', 64);
        char *volatile inside = p + 16; /* volatile: the compiler sees no bad free */
        free(inside);
    }
    dlclose(h);
    if (!failures)
        printf("deepbind ok\n");
}

/* A page-aligned block of a page (as a sampled one is under the shim) made inaccessible by
 * the program, whose SIGSEGV handler catches its own access, then made accessible again and
 * freed. Natively such a malloc block is not page-aligned, and the mode prints the same. */
static sigjmp_buf g_protect_escape;

static void protect_handler(int sig)
{
    (void)sig;
    siglongjmp(g_protect_escape, 1);
}

static void mode_sampled_protect(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = malloc(page);
    CHECK(p != NULL, "malloc of a page");
    if (!p)
        return;
    memset(p, 's', page);
    if (((uintptr_t)p & (page - 1)) == 0) {
        signal(SIGSEGV, protect_handler);
        CHECK(mprotect(p, page, PROT_NONE) == 0, "mprotect");
        volatile unsigned char *v = p;
        int caught = sigsetjmp(g_protect_escape, 1);
        if (!caught)
            (void)v[0];
        CHECK(caught == 1, "the program's handler caught its own access");
        CHECK(mprotect(p, page, PROT_READ | PROT_WRITE) == 0, "mprotect back");
        signal(SIGSEGV, SIG_DFL);
    }
    CHECK(p[page - 1] == 's', "the block's bytes");
    free(p);
    if (!failures)
        printf("sampled-protect ok\n");
}

/* A program that asks for more than it can have (under ulimit -v) and goes on: natively the
 * malloc fails with ENOMEM; under the shim too, and the shim goes on checking (arg
 * "double-free": a double free afterwards is still reported). */
static void mode_oom_probe(const char *arg)
{
    errno = 0;
    void *big = malloc((size_t)1 << 30);
    CHECK(big == NULL && errno == ENOMEM, "1 GiB fails with ENOMEM under the limit");
    free(big);
    char *p = malloc(24);
    CHECK(p != NULL, "a small block after the failure");
    if (p)
        memset(p, 'p', 24);
    free(p);
    if (strcmp(arg, "double-free") == 0)
        free(p);
    if (!failures)
        printf("oom-probe ok\n");
}

/* ---- small stacks: a report made on them ---- */

static void *free_twice(void *arg)
{
    (void)arg;
    char *volatile p = malloc(48);
    p[0] = 1;
    free(p);
    free(p); /* the second free */
    return NULL;
}

static void mode_small_stack(const char *bytes)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)atol(bytes));
    pthread_t t;
    CHECK(pthread_create(&t, &attr, free_twice, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
    printf("small-stack returned\n"); /* not reached: glibc aborts on the double free */
}

static size_t g_altstack_bytes;

static void on_segv_exit(int sig)
{
    (void)sig;
    _exit(9);
}

static void *read_after_free(void *arg)
{
    (void)arg;
    stack_t ss = {.ss_sp = malloc(g_altstack_bytes), .ss_size = g_altstack_bytes};
    CHECK(ss.ss_sp && sigaltstack(&ss, NULL) == 0, "sigaltstack");
    volatile char *p = malloc(48);
    p[0] = 7;
    free((void *)p);
    int v = p[1]; /* read after free */
    printf("small-altstack read %d\n", v != 999);
    return NULL;
}

static void mode_small_altstack(const char *bytes)
{
    g_altstack_bytes = (size_t)atol(bytes);
    set_handler(SIGSEGV, on_segv_exit, SA_ONSTACK);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_after_free, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "quick";
    const char *arg = argc > 2 ? argv[2] : "";
    if (strcmp(mode, "threads") == 0)
        mode_threads();
    else if (strcmp(mode, "fork") == 0)
        mode_fork();
    else if (strcmp(mode, "dlopen") == 0)
        mode_dlopen();
    else if (strcmp(mode, "realloc") == 0)
        mode_realloc();
    else if (strcmp(mode, "limits") == 0)
        mode_limits();
    else if (strcmp(mode, "quick") == 0)
        mode_quick();
    else if (strcmp(mode, "churn") == 0)
        mode_churn();
    else if (strcmp(mode, "usable-storm") == 0)
        mode_usable_storm();
    else if (strcmp(mode, "signals-own") == 0)
        mode_signals(atoi(arg));
    else if (strcmp(mode, "closefd") == 0)
        mode_closefd(arg);
    else if (strcmp(mode, "annotate") == 0)
        mode_annotate(atoi(arg));
    else if (strcmp(mode, "dlopen-tls") == 0)
        mode_dlopen_tls(arg);
    else if (strcmp(mode, "forkfind") == 0)
        mode_forkfind();
    else if (strcmp(mode, "forklog") == 0)
        mode_forklog(arg);
    else if (strcmp(mode, "libc-names") == 0)
        mode_libc_names();
    else if (strcmp(mode, "oom-probe") == 0)
        mode_oom_probe(arg);
    else if (strcmp(mode, "readonly-free") == 0)
        mode_readonly_free();
    else if (strcmp(mode, "readonly-small") == 0)
        mode_readonly_small(arg);
    else if (strcmp(mode, "exhaust") == 0)
        mode_exhaust();
    else if (strcmp(mode, "sampled-protect") == 0)
        mode_sampled_protect();
    else if (strcmp(mode, "fork-own") == 0)
        mode_fork_own();
    else if (strcmp(mode, "small-stack") == 0)
        mode_small_stack(arg);
    else if (strcmp(mode, "small-altstack") == 0)
        mode_small_altstack(arg);
    else if (strcmp(mode, "deepbind") == 0)
        mode_deepbind(arg, argc > 3 ? argv[3] : "");
    else {
        fprintf(stderr, "prog_robust: unknown mode %s\n", mode);
        return 2;
    }
    return failures ? 1 : 0;
}
