/* prog_heapbugs: one heap bug per mode (argv[1]), for heapbugs.sh to run under `tlsan run`
 * and check the report's kind and the file:line of each stack's first frame. Each line the
 * test looks for carries a comment naming it (MODE: ROLE). Built with -g. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;

/* Hides a pointer from the compiler, so a bad access is not optimised away. */
static void *launder(void *p)
{
    sink = p;
    return sink;
}

__attribute__((noinline)) static void double_free(void)
{
    char *p = malloc(32); /* double-free: allocated */
    free(p);              /* double-free: first freed */
    free(launder(p));     /* double-free: freed again */
}

__attribute__((noinline)) static void write_after_free(void)
{
    unsigned char *p = malloc(64); /* write-after-free: allocated */
    free(p);                       /* write-after-free: freed */
    volatile unsigned char *v = launder(p);
    v[10] = 0x41;
    /* 4 MiB of frees push the block out of a 1 MiB quarantine: found at its eviction. */
    for (int i = 0; i < 64; i++) {
        sink = malloc(64 * 1024);
        free(sink);
    }
}

__attribute__((noinline)) static void overflow(void)
{
    unsigned char *p = malloc(24); /* overflow: allocated */
    volatile unsigned char *v = launder(p);
    v[26] = 0x55;
    free(p); /* overflow: freed */
}

__attribute__((noinline)) static void underflow(void)
{
    unsigned char *p = malloc(24); /* underflow: allocated */
    volatile unsigned char *v = launder(p);
    v[-1] = 0x55;
    free(p); /* underflow: freed */
}

__attribute__((noinline)) static void invalid_free(void)
{
    char local[32];
    free(launder(local + 8)); /* invalid-free: freed */
}

__attribute__((noinline)) static void use_after_free(void)
{
    unsigned char *p = malloc((size_t)1 << 20); /* use-after-free: allocated */
    free(p);                                    /* use-after-free: freed */
    volatile unsigned char *v = launder(p);
    v[4096] = 0x41; /* use-after-free: written */
}

/* Overflows and an underflow of blocks that are never freed: found at exit. */
__attribute__((noinline)) static void live_overflow(void)
{
    unsigned char *p = malloc(40); /* live-overflow: allocated */
    ((volatile unsigned char *)launder(p))[43] = 0x55;
    sink = p;
}

__attribute__((noinline)) static void live_underflow(void)
{
    unsigned char *p = malloc(40); /* live-underflow: allocated */
    ((volatile unsigned char *)launder(p))[-3] = 0x55;
    sink = p;
}

/* An overflow of a block that stays live, then churn: the periodic check finds it while the
 * program runs (the block is still live and unfreed when the finding is made). */
__attribute__((noinline)) static void live_periodic(void)
{
    unsigned char *p = malloc(40); /* live-periodic: allocated */
    ((volatile unsigned char *)launder(p))[40] = 0x55;
    for (int i = 0; i < 3 << 19; i++)
        free(launder(malloc(32)));
    printf("churned\n");
    fflush(stdout);
    sink = p;
}

/* A write after free into a 64 KiB block, between the windows a sampled verification would
 * read: found at its eviction, every byte of a block below the guarded size being compared. */
__attribute__((noinline)) static void mid_write_after_free(void)
{
    unsigned char *p = malloc(64 * 1024); /* mid-write-after-free: allocated */
    free(p);                              /* mid-write-after-free: freed */
    ((volatile unsigned char *)launder(p))[40000] = 0x41;
    for (int i = 0; i < 64; i++)
        free(launder(malloc(64 * 1024)));
}

/* A large calloc'd block (not page-aligned: its whole inner pages are guarded) read after
 * its free: caught at the read. */
__attribute__((noinline)) static void calloc_use_after_free(void)
{
    unsigned char *p = calloc(1, (size_t)3 << 18); /* calloc-use-after-free: allocated */
    free(p);                                       /* calloc-use-after-free: freed */
    volatile unsigned char *v = launder(p);
    sink = (void *)(uintptr_t)v[500000]; /* calloc-use-after-free: read */
}

/* Run with sample_rate=1 (every block of up to a page sampled): each bad access faults at
 * its own instruction, and the report names its line. */
__attribute__((noinline)) static void sampled_read_after_free(void)
{
    unsigned char *p = malloc(32); /* sampled-read-after-free: allocated */
    free(p);                       /* sampled-read-after-free: freed */
    volatile unsigned char *v = launder(p);
    sink = (void *)(uintptr_t)v[8]; /* sampled-read-after-free: read */
}

__attribute__((noinline)) static void sampled_write_after_free(void)
{
    unsigned char *p = malloc(100); /* sampled-write-after-free: allocated */
    free(p);                        /* sampled-write-after-free: freed */
    volatile unsigned char *v = launder(p);
    v[99] = 0x41; /* sampled-write-after-free: written */
}

__attribute__((noinline)) static void sampled_overflow(void)
{
    unsigned char *p = malloc(48); /* sampled-overflow: allocated */
    volatile unsigned char *v = launder(p);
    v[48] = 0x41; /* sampled-overflow: written */
    free(p);
}

/* 24 bytes: the 8 bytes of rounding to 16 after the block are on its page, checked at the
 * free. */
__attribute__((noinline)) static void sampled_slack(void)
{
    unsigned char *p = malloc(24); /* sampled-slack: allocated */
    volatile unsigned char *v = launder(p);
    v[26] = 0x41;
    free(p); /* sampled-slack: freed */
}

/* Each aligned allocator's block overflowed by one byte: its allocation stack starts at the
 * call here, not inside libc or the shim. */
__attribute__((noinline)) static void aligned(void)
{
    void *a = NULL;
    if (posix_memalign(&a, 64, 40) != 0) /* aligned: posix_memalign */
        return;
    char *b = aligned_alloc(64, 64); /* aligned: aligned_alloc */
    char *c = memalign(128, 100);    /* aligned: memalign */
    char *d = valloc(100);           /* aligned: valloc */
    char *e = pvalloc(100);          /* aligned: pvalloc */
    ((volatile char *)launder(a))[40] = 1;
    ((volatile char *)launder(b))[64] = 1;
    ((volatile char *)launder(c))[100] = 1;
    ((volatile char *)launder(d))[100] = 1;
    ((volatile char *)launder(e))[4096] = 1;
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
}

/* A write after free, then _exit and _Exit, which skip destructors: found at exit. */
__attribute__((noinline)) static void exit_after_free(int quick)
{
    unsigned char *p = malloc(48); /* exit-after-free: allocated */
    free(p);                       /* exit-after-free: freed */
    volatile unsigned char *v = launder(p);
    v[5] = 0x41;
    printf("exit%s\n", quick ? "" : " done");
    fflush(stdout);
    if (quick)
        _Exit(0);
    _exit(0);
}

__attribute__((noinline)) static void underscore_exit(void)
{
    exit_after_free(0);
}

__attribute__((noinline)) static void underscore_big_exit(void)
{
    exit_after_free(1);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } modes[] = {{"double-free", double_free},
                 {"write-after-free", write_after_free},
                 {"overflow", overflow},
                 {"underflow", underflow},
                 {"invalid-free", invalid_free},
                 {"use-after-free", use_after_free},
                 {"aligned", aligned},
                 {"_exit", underscore_exit},
                 {"_Exit", underscore_big_exit},
                 {"live-overflow", live_overflow},
                 {"live-underflow", live_underflow},
                 {"live-periodic", live_periodic},
                 {"mid-write-after-free", mid_write_after_free},
                 {"calloc-use-after-free", calloc_use_after_free},
                 {"sampled-read-after-free", sampled_read_after_free},
                 {"sampled-write-after-free", sampled_write_after_free},
                 {"sampled-overflow", sampled_overflow},
                 {"sampled-slack", sampled_slack}};
    for (size_t i = 0; argc > 1 && i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(argv[1], modes[i].name) == 0) {
            modes[i].run();
            printf("%s done\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "usage: prog_heapbugs MODE\n");
    return 2;
}
