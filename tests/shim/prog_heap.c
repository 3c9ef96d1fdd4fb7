/* prog_heap: heap bugs for heap.sh to find under libtlsan.so. One mode per run (argv[1]):
 *   waf        writes 4 bytes at offset 8 of a freed 64-byte block (found at exit)
 *   waf-evict  the same, then frees enough to push the block out of a 1 MiB quarantine
 *   overflow   writes one byte 3 bytes past the end of a 40-byte block, then frees it
 *   double     frees a 32-byte block twice
 *   invalid    frees an interior pointer and a stack address
 *   nan        prints a float read from a freed block ("nan" with fills on)
 *   clean      allocates, uses and frees correctly; exits with status 3
 *   underflow  writes the byte before a 64-byte block, then frees it (glibc aborts)
 *   uaf-large  writes into a freed 1 MiB block (glibc unmapped it: SIGSEGV)
 *   uaf-read   reads from a freed 1 MiB block (the same)
 *   realloc-grow  grows one buffer to 16 MiB in 4 KiB steps, writing each step's bytes,
 *              then checks every byte; prints a sum of them
 *   segv-chain installs its own SIGSEGV handler (siglongjmp out), frees a 1 MiB block (the
 *              shim's handler comes after), then faults on a bad address: its handler runs
 *   segv-resethand  installs a one-shot (SA_RESETHAND) SIGSEGV handler that prints a line
 *              and returns, frees a 1 MiB block, then faults on a bad address: the handler
 *              runs once, the fault repeats and the program dies of SIGSEGV
 *   segv-later run with sample_rate=1 (the shim's handler installed at the first block):
 *              prints whether SIGSEGV reads as the default action, installs its own handler
 *              (signal), reads it back, faults on a bad address twice (caught), and prints
 *              whether signal() returned its handler when the default was put back
 *   segv-later-uaf  after its first block, installs a crash handler (signal), then reads a
 *              freed 32-byte block (sampled under sample_rate=1: the shim's fault, not the
 *              program's)
 *   as-limit   frees 120 blocks of 4 MiB, then maps 400 MiB itself: run under ulimit -v
 *              800000, the mapping must succeed as natively (prints "mmap ok")
 *   rss SIZE   allocates, fills and frees 200 MiB in blocks of SIZE bytes, one at a time;
 *              prints the peak resident set (VmHWM, kB)
 * Every access to freed memory goes through a volatile pointer so the compiler keeps it. Run
 * natively, the bug modes are undefined behaviour: they are meant for the shim only. */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The bugs are the point: keep GCC's static warnings about them quiet. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

static void *volatile sink;
static sigjmp_buf g_jump;

static void on_segv(int sig)
{
    (void)sig;
    siglongjmp(g_jump, 1);
}

/* Called again after its reset (the bug this mode guards against): stop at the third call. */
static void on_segv_once(int sig)
{
    static const char msg[] = "crash handler\n";
    static volatile int calls;
    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0 || ++calls == 3)
        _exit(3);
}

/* The pointer back through a volatile: the compiler no longer knows it was freed (no
 * use-after-free warning, no store dropped as dead). */
static void *launder(void *p)
{
    sink = p;
    return sink;
}

/* Frees [n] blocks of [size] bytes, so earlier blocks leave the quarantine. */
static void churn(size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++) {
        sink = malloc(size);
        free(sink);
    }
}

/* Two writes to address 16, each caught by on_segv (which jumps back) or not. */
static void fault_twice(void)
{
    for (int i = 0; i < 2; i++) {
        if (sigsetjmp(g_jump, 1) == 0) {
            volatile int *bad = (volatile int *)(uintptr_t)16;
            *bad = 1;
            printf("not caught\n");
        } else {
            printf("caught %d\n", i);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    if (strcmp(mode, "waf") == 0 || strcmp(mode, "waf-evict") == 0) {
        unsigned char *p = malloc(64);
        memset(p, 0, 64);
        free(p);
        volatile unsigned char *v = launder(p);
        for (int i = 0; i < 4; i++)
            v[8 + i] = 0x41;
        if (strcmp(mode, "waf-evict") == 0)
            churn(64, 64 * 1024); /* 4 MiB through a 1 MiB quarantine */
        printf("waf done\n");
        return 0;
    }
    if (strcmp(mode, "overflow") == 0) {
        unsigned char *p = malloc(40);
        memset(p, 1, 40);
        volatile unsigned char *v = p;
        v[43] = 0x55;
        free(p);
        printf("overflow done\n");
        return 0;
    }
    if (strcmp(mode, "double") == 0) {
        void *p = malloc(32);
        sink = p;
        free(p);
        free(sink);
        printf("double done\n");
        return 0;
    }
    if (strcmp(mode, "invalid") == 0) {
        char *p = malloc(32);
        free(launder(p + 8));
        char local[16];
        sink = local;
        free(sink);
        free(p);
        printf("invalid done\n");
        return 0;
    }
    if (strcmp(mode, "nan") == 0) {
        float *f = malloc(16 * sizeof *f);
        for (int i = 0; i < 16; i++)
            f[i] = (float)i;
        free(f);
        volatile float *v = launder(f);
        printf("%f %f\n", (double)v[0], (double)v[5]);
        double *d = malloc(8 * sizeof *d);
        d[0] = 1.0;
        free(d);
        volatile double *vd = launder(d);
        printf("%f\n", vd[3]);
        return 0;
    }
    if (strcmp(mode, "underflow") == 0) {
        unsigned char *p = malloc(64);
        memset(p, 1, 64);
        volatile unsigned char *v = p;
        v[-1] = 0x41;
        free(p);
        printf("underflow done\n");
        return 0;
    }
    if (strcmp(mode, "uaf-large") == 0 || strcmp(mode, "uaf-read") == 0) {
        size_t n = (size_t)1 << 20;
        unsigned char *p = malloc(n);
        memset(p, 1, n);
        free(p);
        volatile unsigned char *v = launder(p);
        if (strcmp(mode, "uaf-large") == 0)
            v[100] = 0x41;
        else
            printf("read %d\n", v[200000]);
        printf("%s done\n", mode);
        return 0;
    }
    if (strcmp(mode, "realloc-grow") == 0) {
        size_t step = 4096, total = (size_t)16 << 20;
        unsigned char *buf = NULL;
        for (size_t n = step; n <= total; n += step) {
            buf = realloc(buf, n);
            if (!buf)
                return 1;
            for (size_t i = n - step; i < n; i++)
                buf[i] = (unsigned char)(i * 7 + i / 4096);
        }
        unsigned long long sum = 0;
        for (size_t i = 0; i < total; i++) {
            if (buf[i] != (unsigned char)(i * 7 + i / 4096)) {
                printf("realloc-grow: byte %zu changed\n", i);
                return 1;
            }
            sum += buf[i];
        }
        free(buf);
        printf("realloc-grow %zu ok %llu\n", total, sum);
        return 0;
    }
    if (strcmp(mode, "segv-chain") == 0) {
        signal(SIGSEGV, on_segv);
        free(launder(malloc((size_t)1 << 20)));
        fault_twice();
        return 0;
    }
    if (strcmp(mode, "segv-later") == 0) {
        free(launder(malloc(64))); /* under sample_rate=1 the shim's handler is in by now */
        struct sigaction cur;
        sigaction(SIGSEGV, NULL, &cur);
        printf("default %d\n", cur.sa_handler == SIG_DFL && cur.sa_flags == 0);
        signal(SIGSEGV, on_segv);
        sigaction(SIGSEGV, NULL, &cur);
        printf("mine %d\n", cur.sa_handler == on_segv);
        fault_twice();
        printf("previous mine %d\n", signal(SIGSEGV, SIG_DFL) == on_segv);
        return 0;
    }
    if (strcmp(mode, "segv-later-uaf") == 0) {
        free(launder(malloc(64))); /* the shim's handler first, as in segv-later */
        signal(SIGSEGV, on_segv_once);
        unsigned char *p = malloc(32);
        ((volatile unsigned char *)p)[20] = 7; /* kept: a store before free is dead to gcc */
        free(p);
        printf("read %d\n", ((volatile unsigned char *)launder(p))[20]);
        printf("segv-later-uaf done\n");
        return 0;
    }
    if (strcmp(mode, "segv-resethand") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_segv_once;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGSEGV, &sa, NULL);
        free(launder(malloc((size_t)1 << 20)));
        volatile int *bad = (volatile int *)(uintptr_t)16;
        *bad = 1;
        printf("not dead\n");
        return 0;
    }
    if (strcmp(mode, "as-limit") == 0) {
        for (int i = 0; i < 120; i++) {
            unsigned char *p = malloc((size_t)4 << 20);
            if (!p)
                return 1;
            memset(p, i, 4096);
            free(launder(p));
        }
        void *m = mmap(NULL, (size_t)400 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        printf("mmap %s\n", m == MAP_FAILED ? "failed" : "ok");
        return 0;
    }
    if (strcmp(mode, "rss") == 0 && argc > 2) {
        size_t size = (size_t)strtoull(argv[2], NULL, 10), n = ((size_t)200 << 20) / size;
        for (size_t i = 0; i < n; i++) {
            unsigned char *p = malloc(size);
            memset(p, (int)(i & 0xff), size);
            free(launder(p));
        }
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "VmHWM:", 6) == 0)
                printf("%lld\n", strtoll(line + 6, NULL, 10));
        if (f)
            fclose(f);
        return 0;
    }
    if (strcmp(mode, "clean") == 0) {
        size_t total = 0;
        for (int i = 1; i <= 1000; i++) {
            char *p = malloc((size_t)i);
            memset(p, i & 0xff, (size_t)i);
            p = realloc(p, (size_t)i * 2);
            total += (unsigned char)p[i - 1];
            free(p);
        }
        char *s = calloc(10, 10);
        total += (size_t)s[99];
        free(s);
        printf("clean %zu\n", total);
        return 3;
    }
    fprintf(stderr, "prog_heap: unknown mode %s\n", mode);
    return 2;
}
