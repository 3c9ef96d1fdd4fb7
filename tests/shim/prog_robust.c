/* prog_robust: a correct program that leans on the allocator, for robust.sh to run under
 * libtlsan.so. Every mode checks its own results, prints "MODE ok ..." and exits 0, or prints
 * "FAIL: ..." lines and exits 1. Modes (argv[1]):
 *   threads  8 threads x 100k allocations of varied sizes and kinds, contents checked
 *   fork     forks from a threaded program; each child allocates and exits cleanly
 *   dlopen   dlopen/dlsym/dlclose libm.so.6 in a loop, allocating in between
 *   realloc  realloc chains growing and shrinking, contents preserved
 *   limits   libc's contracts: huge and zero sizes, overflow, alignments, errno
 *   quick    a little of everything (for Valgrind and ASan runs) */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "quick";
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
    else {
        fprintf(stderr, "prog_robust: unknown mode %s\n", mode);
        return 2;
    }
    return failures ? 1 : 0;
}
