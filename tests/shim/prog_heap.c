/* prog_heap: heap bugs for heap.sh to find under libtlsan.so. One mode per run (argv[1]):
 *   waf        writes 4 bytes at offset 8 of a freed 64-byte block (found at exit)
 *   waf-evict  the same, then frees enough to push the block out of a 1 MiB quarantine
 *   overflow   writes one byte 3 bytes past the end of a 40-byte block, then frees it
 *   double     frees a 32-byte block twice
 *   invalid    frees an interior pointer and a stack address
 *   nan        prints a float read from a freed block ("nan" with fills on)
 *   clean      allocates, uses and frees correctly; exits with status 3
 * Every access to freed memory goes through a volatile pointer so the compiler keeps it. Run
 * natively, the bug modes are undefined behaviour: they are meant for the shim only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bugs are the point: keep GCC's static warnings about them quiet. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

static void *volatile sink;

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
