/* heap (and report): the sentinel (fill phase, NaN views, exact first-change offsets, the sampling
 * rule of large blocks), and the side table with its checks: double and invalid frees, redzone
 * overflow, write after free at eviction and at exit, the quarantine budget, lite blocks,
 * and growth of the table; the report layout. Reports go to a pipe and are read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "depot.h"
#include "heap/heap.h"
#include "lock.h"
#include "out.h"
#include "runtime_report.h"
#include "../support/splitmix.h"
#include "shim.h"

/* ---- the sentinel ---- */

static void fill_phase(void **state)
{
    (void)state;
    _Alignas(16) unsigned char buf[64];
    for (size_t start = 0; start < 9; start++) {
        memset(buf, 0, sizeof buf);
        sentinel_fill(buf + start, 40);
        for (size_t i = 0; i < sizeof buf; i++) {
            unsigned char want = (i < start || i >= start + 40) ? 0 : (i & 1) ? 0x7F : 0xFE;
            assert_int_equal(buf[i], want);
        }
    }
    assert_int_equal(sentinel_byte(0x1000), 0xFE);
    assert_int_equal(sentinel_byte(0x1001), 0x7F);
}

static void nan_views(void **state)
{
    (void)state;
    _Alignas(16) unsigned char buf[64];
    sentinel_fill(buf, sizeof buf);
    for (size_t off = 0; off < sizeof buf; off += 2) {
        uint16_t h;
        memcpy(&h, buf + off, 2);
        assert_int_equal(h, SHIM_SENTINEL_U16);
        /* f16: exponent bits 14..10 all ones and a mantissa: NaN. bf16: bits 14..7 ones. */
        assert_int_equal(h & 0x7C00, 0x7C00);
        assert_int_not_equal(h & 0x03FF, 0);
        assert_int_equal(h & 0x7F80, 0x7F80);
        assert_int_not_equal(h & 0x007F, 0);
    }
    for (size_t off = 0; off < sizeof buf; off += 4) {
        float f;
        memcpy(&f, buf + off, 4);
        assert_true(isnan(f));
        int32_t i;
        memcpy(&i, buf + off, 4);
        assert_int_equal(i, 0x7FFE7FFE);
    }
    for (size_t off = 0; off < sizeof buf; off += 8) {
        double d;
        memcpy(&d, buf + off, 8);
        assert_true(isnan(d));
    }
}

/* The word-at-a-time fill and search against their byte-by-byte twins, on random ranges of
 * every alignment and length up to 300 (the redzones, small blocks and the word and line
 * loops' every remainder), each damaged at up to 3 random bytes or not at all. */
static void sentinel_twins(void **state)
{
    (void)state;
    _Alignas(64) unsigned char buf[352], want[352];
    uint64_t seed = 11;
    for (int iter = 0; iter < 20000; iter++) {
        size_t start = (size_t)splitmix_below(&seed, 24), n = (size_t)splitmix_below(&seed, 301);
        unsigned char bg = (unsigned char)splitmix_next(&seed);
        memset(buf, bg, sizeof buf);
        memset(want, bg, sizeof want);
        for (size_t i = 0; i < n; i++)
            want[start + i] = sentinel_byte((uintptr_t)(buf + start + i));
        sentinel_fill(buf + start, n);
        assert_memory_equal(buf, want, sizeof buf); /* nothing outside the range is touched */
        size_t first = n;
        unsigned hits = n ? (unsigned)splitmix_below(&seed, 4) : 0;
        for (unsigned h = 0; h < hits; h++) {
            size_t off = (size_t)splitmix_below(&seed, n);
            /* Any other value, the other phase's byte among them. */
            unsigned char v =
                splitmix_chance(&seed, 50)
                    ? sentinel_byte((uintptr_t)(buf + start + off + 1))
                    : (unsigned char)(buf[start + off] ^ (1u + splitmix_below(&seed, 255)));
            buf[start + off] = v;
        }
        for (size_t i = 0; i < n; i++)
            if (buf[start + i] != sentinel_byte((uintptr_t)(buf + start + i))) {
                first = i;
                break;
            }
        assert_int_equal(sentinel_find_change(buf + start, n), first);
    }
}

static void find_change(void **state)
{
    (void)state;
    _Alignas(16) unsigned char buf[128];
    for (size_t start = 0; start < 9; start++) {
        size_t n = 100;
        sentinel_fill(buf + start, n);
        assert_int_equal(sentinel_find_change(buf + start, n), n);
        assert_int_equal(sentinel_find_change(buf + start, 0), 0);
        static const size_t offs[] = {0, 1, 6, 7, 8, 9, 15, 16, 63, 64, 98, 99};
        for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
            size_t off = offs[k];
            unsigned char old = buf[start + off];
            buf[start + off] ^= 0x01;
            assert_int_equal(sentinel_find_change(buf + start, n), off);
            /* A second change after the first does not matter. */
            buf[start + n - 1] ^= off == n - 1 ? 0 : 0x80;
            assert_int_equal(sentinel_find_change(buf + start, n), off);
            buf[start + n - 1] ^= off == n - 1 ? 0 : 0x80;
            buf[start + off] = old;
        }
        /* Bytes the right value at the wrong phase are a change too. */
        buf[start + 10] = sentinel_byte((uintptr_t)(buf + start + 11));
        assert_int_equal(sentinel_find_change(buf + start, n), 10);
    }
}

static void verify_sampling(void **state)
{
    (void)state;
    /* Small blocks: every byte. */
    unsigned char *small = malloc(HEAP_VERIFY_FULL_BYTES);
    sentinel_fill(small, HEAP_VERIFY_FULL_BYTES);
    small[3000] = 0;
    assert_int_equal(sentinel_verify(small, HEAP_VERIFY_FULL_BYTES), 3000);
    small[3000] = sentinel_byte((uintptr_t)(small + 3000));
    /* Up to the size from which blocks are guarded instead: a byte between where the windows
     * of a sampled block would be is found too. */
    _Static_assert(HEAP_VERIFY_FULL_BYTES == HEAP_GUARD_MIN, "verified in full up to guarding");
    small[HEAP_VERIFY_FULL_BYTES - 300] ^= 1;
    assert_int_equal(sentinel_verify(small, HEAP_VERIFY_FULL_BYTES), HEAP_VERIFY_FULL_BYTES - 300);
    free(small);

    /* A 1 MiB block: first and last 256 bytes and 64 windows of 64 bytes, the window i at
     * (256 + i * step) rounded down to 8, step = (n - 512) / 64. */
    size_t n = 1u << 20, step = (n - 512) / 64;
    unsigned char *p = malloc(n);
    sentinel_fill(p, n);
    assert_int_equal(sentinel_verify(p, n), n);
    size_t in_window = ((256 + 10 * step) & ~(size_t)7) + 5;
    size_t between = 256 + 200; /* after window 0 ([256, 320)), before window 1 */
    static const size_t found[] = {0, 255, 0, 0, 0};
    (void)found;
    size_t cases[][2] = {
        {0, 0},         {255, 255},   {in_window, in_window}, {n - 256, n - 256},
        {n - 1, n - 1}, {between, n}, /* missed: documented */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        unsigned char old = p[cases[k][0]];
        p[cases[k][0]] ^= 0x10;
        assert_int_equal(sentinel_verify(p, n), cases[k][1]);
        p[cases[k][0]] = old;
    }
    free(p);
}

/* ---- the table and the checks ---- */

static int g_pipe[2];
static struct sigaction g_shim_segv;
/* Atomic: the threads of threads_at_once free through it at once. */
static _Atomic unsigned g_real_frees;
static void *_Atomic g_last_freed;

static void counting_free(void *p)
{
    g_real_frees++;
    g_last_freed = p;
    free(p);
}

static void no_free(void *p)
{
    (void)p;
    g_real_frees++;
}

/* Reads what the reports wrote so far. */
static const char *reports(void)
{
    static char text[65536];
    size_t len = 0;
    ssize_t n;
    while ((n = read(g_pipe[0], text + len, sizeof text - 1 - len)) > 0)
        len += (size_t)n;
    text[len] = '\0';
    return text;
}

static int setup(void **state)
{
    (void)state;
    if (pipe(g_pipe) != 0)
        return -1;
    fcntl(g_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(g_pipe[1], F_SETPIPE_SZ, 1 << 20);
    out_set_fd(g_pipe[1]);
    struct shim_options *o = shim_opts_mut();
    o->redzone = 16;
    o->quarantine_mb = 1;
    o->fill = 1;
    o->stack_depth = 8;
    o->trace = 0;
    o->halt_on_error = SHIM_HALT_NEVER; /* the bugs here would otherwise abort, as glibc's */
    heap_set_real_free(counting_free);
    if (!heap_init())
        return -1;
    /* The shim's SIGSEGV handler, which cmocka replaces with its own around each test:
     * guarded_fault puts it back while it faults. */
    heap_segv_install();
    return sigaction(SIGSEGV, NULL, &g_shim_segv);
}

/* A block as the hooks make it: size + redzone from the real malloc, then tracked. */
static unsigned char *alloc(size_t n)
{
    unsigned char *p = malloc(n + heap_redzone());
    assert_true(heap_track(p, n, 0, 0));
    memset(p, 0x11, n);
    return p;
}

static void track_and_free(void **state)
{
    (void)state;
    unsigned char *p = alloc(40);
    size_t size = 0;
    assert_int_equal(heap_lookup(p, &size), 1);
    assert_int_equal(size, 40);
    assert_int_equal(sentinel_find_change(p + 40, 16), 16); /* the redzone */
    uint64_t before = report_count();
    heap_free(p, 0, 0);
    assert_int_equal(heap_lookup(p, &size), 2); /* in quarantine */
    assert_int_equal(sentinel_find_change(p, 40), 40);
    assert_int_equal(report_count(), before);
    assert_string_equal(reports(), "");
    assert_int_equal(heap_lookup(p + 8, NULL), 0);
}

static void double_and_invalid(void **state)
{
    (void)state;
    unsigned char *p = alloc(32);
    uint64_t before = report_count();
    heap_free(p, 0, 0);
    heap_free(p, 0, 0);
    assert_int_equal(report_count(), before + 1);
    const char *r = reports();
    assert_non_null(strstr(r, "ERROR: tlsan: double-free on address 0x"));
    assert_non_null(strstr(r, " (a 32-byte block)\n  the block was freed before"));
    assert_non_null(strstr(r, "\nfreed again here:\n    (no stack)\nfirst freed here:\n    (no "
                              "stack)\nallocated here:\n    (no stack)\n"));
    assert_non_null(strstr(r, "\nSUMMARY: tlsan: double-free of a 32-byte block\n"));

    unsigned char *q = alloc(64);
    unsigned frees = g_real_frees;
    heap_free(q + 16, 0, 0);
    assert_int_equal(report_count(), before + 2);
    assert_int_equal(g_real_frees, frees); /* ignored */
    r = reports();
    char want[128];
    snprintf(want, sizeof want,
             "ERROR: tlsan: invalid-free on address %p, which malloc did not "
             "return\n",
             (void *)(q + 16));
    assert_non_null(strstr(r, want));
    snprintf(want, sizeof want, "\nSUMMARY: tlsan: invalid-free on address %p\n", (void *)(q + 16));
    assert_non_null(strstr(r, want));
    assert_int_equal(heap_lookup(q, NULL), 1); /* the block is untouched */
    heap_free(q, 0, 0);
    assert_int_equal(report_count(), before + 2);
}

static void overflow(void **state)
{
    (void)state;
    unsigned char *p = alloc(40);
    p[40 + 5] = 0xAA;
    p[40 + 6] = 0xBB;
    uint64_t before = report_count();
    heap_free(p, 0, 0);
    assert_int_equal(report_count(), before + 1);
    const char *r = reports();
    char want[256];
    snprintf(want, sizeof want,
             "ERROR: tlsan: heap-buffer-overflow on address %p, 5 bytes past the end of a "
             "40-byte block at %p\n",
             (void *)(p + 45), (void *)p);
    assert_non_null(strstr(r, want));
    /* p is 16-aligned: byte 45 is at an odd address. */
    assert_non_null(strstr(r, "  bytes at 5 past the end (11 shown):\n"
                              "    expected: 7f fe 7f fe 7f fe 7f fe 7f fe 7f\n"
                              "    found:    aa bb 7f fe 7f fe 7f fe 7f fe 7f\n"));
    assert_non_null(strstr(r, "SUMMARY: tlsan: heap-buffer-overflow 5 bytes past the end of a "
                              "40-byte block\n"));
    /* The block is quarantined with a mended redzone. */
    assert_int_equal(heap_lookup(p, NULL), 2);
    assert_int_equal(sentinel_find_change(p + 40, 16), 16);
}

static void write_after_free(void **state)
{
    (void)state;
    /* At exit (heap_verify_quarantine). */
    unsigned char *p = alloc(100);
    heap_free(p, 0, 0);
    p[33] = 0x41;
    uint64_t before = report_count();
    assert_int_equal(heap_verify_quarantine(0), 1);
    assert_int_equal(report_count(), before + 1);
    const char *r = reports();
    char want[256];
    snprintf(want, sizeof want,
             "ERROR: tlsan: heap-write-after-free on address %p at offset 33 of a 100-byte "
             "block at %p\n  the freed block changed while in quarantine (found at exit)\n"
             "  bytes at offset 33 (16 shown):\n"
             "    expected: 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe\n"
             "    found:    41 fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe\n",
             (void *)(p + 33), (void *)p);
    assert_non_null(strstr(r, want));
    assert_non_null(strstr(r, "SUMMARY: tlsan: heap-write-after-free at offset 33 of a 100-byte "
                              "block\n"));
    /* Near the end only the bytes left are shown. */
    p[33] = 0x7F;
    p[97] = 0;
    assert_int_equal(heap_verify_quarantine(0), 1);
    assert_non_null(strstr(reports(), "  bytes at offset 97 (3 shown):\n"
                                      "    expected: 7f fe 7f\n    found:    00 fe 7f\n"));
    p[97] = 0x7F;
    assert_int_equal(heap_verify_quarantine(0), 0);

    /* At eviction: freeing 1.2 MiB more (blocks below HEAP_GUARD_MIN, which are filled and
     * count in full) pushes p out of the 1 MiB quarantine. */
    p[50] = 0x42;
    before = report_count();
    unsigned char *big[12];
    for (int i = 0; i < 12; i++) {
        big[i] = alloc(100 * 1024);
        heap_free(big[i], 0, 0);
    }
    assert_int_equal(heap_lookup(p, NULL), 0); /* evicted and freed */
    assert_int_equal(heap_lookup(big[11], NULL), 2);
    /* Each costs its chunk (100 KiB + 16 + 8, rounded to 16) and 80 bytes of records: ten
     * fit in 1 MiB, so p and the first two left (their addresses may be reused since). */
    struct heap_stats st;
    heap_get_stats(&st);
    assert_int_equal(st.quarantine_blocks, 10);
    assert_int_equal(st.quarantine_bytes, 10 * (((100 * 1024 + 16 + 8 + 15) & ~15) + 80));
    assert_int_equal(report_count(), before + 1);
    r = reports();
    assert_non_null(strstr(r, "at offset 50 of a 100-byte block"));
    assert_non_null(strstr(r, "(found when it left the quarantine)"));
}

static void budget_and_lite(void **state)
{
    (void)state;
    struct shim_options *o = shim_opts_mut();
    /* quarantine_mb=0: freed at once, the redzone still checked. */
    o->quarantine_mb = 0;
    assert_true(heap_init());
    unsigned char *p = alloc(24);
    p[24] = 0;
    unsigned frees = g_real_frees;
    uint64_t before = report_count();
    heap_free(p, 0, 0);
    assert_int_equal(g_real_frees, frees + 1);
    assert_int_equal(report_count(), before + 1);
    assert_non_null(strstr(reports(), "0 bytes past the end of a 24-byte block"));
    /* A block larger than the budget is not quarantined either: for one to be guarded, that
     * is 64 times the budget of address space. */
    o->quarantine_mb = 1;
    assert_true(heap_init());
    p = alloc((64u << 20) + 1);
    heap_free(p, 0, 0);
    assert_int_equal(heap_lookup(p, NULL), 0);
    assert_int_equal(g_real_frees, frees + 2);

    /* Lite blocks: no redzone, freed at once; lite frees ignore unknown pointers. */
    unsigned char *l = malloc(8);
    assert_true(heap_track(l, 8, 0, HEAP_LITE));
    assert_int_equal(heap_lookup(l, NULL), 1);
    heap_free(l + 1, 0, 1);
    assert_int_equal(heap_lookup(l, NULL), 1);
    heap_free(l, 0, 1);
    assert_int_equal(heap_lookup(l, NULL), 0);
    assert_int_equal(g_real_frees, frees + 3);
    /* A lite block freed from outside: quarantined, no redzone check. */
    l = malloc(8);
    assert_true(heap_track(l, 8, 0, HEAP_LITE));
    heap_free(l, 0, 0);
    assert_int_equal(heap_lookup(l, NULL), 2);
    assert_int_equal(report_count(), before + 1);
    assert_string_equal(reports(), "");
}

/* A block as the hooks lay it out (heap_layout), from the real allocator. */
static unsigned char *alloc_laid_out(size_t n, struct heap_layout *l)
{
    assert_true(heap_layout(n, 0, 0, 0, l));
    void *real = l->align ? aligned_alloc(l->align, (l->total + l->align - 1) & ~(l->align - 1))
                          : malloc(l->total);
    unsigned char *p = heap_track_block(real, n, 0, l);
    assert_ptr_equal(p, (unsigned char *)real + l->left);
    memset(p, 0x11, n);
    return p;
}

static void underflow_and_layout(void **state)
{
    (void)state;
    struct heap_layout l;
    /* A small block: 16 bytes of left redzone; a large one starts a page in, page-aligned. */
    unsigned char *p = alloc_laid_out(40, &l);
    assert_int_equal(l.left, 16);
    assert_int_equal(l.total, 16 + 40 + 16);
    assert_int_equal(sentinel_find_change(p - 16, 16), 16);
    assert_true(heap_layout(HEAP_GUARD_MIN, 0, 0, 0, &l));
    assert_int_equal(l.left, (size_t)sysconf(_SC_PAGESIZE));
    assert_int_equal(l.align, l.left);
    assert_true(heap_layout(HEAP_GUARD_MIN, 0, HEAP_ZEROED, 0, &l)); /* calloc: not aligned */
    assert_int_equal(l.left, 16);
    assert_int_equal(l.align, 0);
    assert_true(heap_layout(100, 64, 0, 0, &l)); /* keeps the alignment */
    assert_int_equal(l.left, 64);
    assert_false(heap_layout(HEAP_SIZE_MAX, 0, 0, 0, &l));

    p[-3] = 0x41;
    uint64_t before = report_count();
    unsigned frees = g_real_frees;
    heap_free(p, 0, 0);
    assert_int_equal(report_count(), before + 1);
    char want[256];
    snprintf(want, sizeof want,
             "ERROR: tlsan: heap-buffer-overflow on address %p, 3 bytes before the start of a "
             "40-byte block at %p (underflow)\n"
             "  the 16-byte redzone before the block changed (found when it was freed)\n"
             "  bytes from 3 before the start (3 shown):\n"
             "    expected: 7f fe 7f\n    found:    41 fe 7f\n",
             (void *)(p - 3), (void *)p);
    assert_non_null(strstr(reports(), want));
    /* Quarantined, its redzone refilled; evicted (last: it is the newest) to the real
     * block's start. */
    assert_int_equal(heap_lookup(p, NULL), 2);
    assert_int_equal(sentinel_find_change(p - 16, 16), 16);
    assert_true(heap_quarantine_drain());
    assert_true(g_real_frees >= frees + 1);
    assert_ptr_equal(g_last_freed, p - 16);
    assert_string_equal(reports(), "");
}

static void guarded_blocks(void **state)
{
    (void)state;
    struct heap_layout l;
    size_t n = HEAP_GUARD_MIN + 1000, page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = alloc_laid_out(n, &l);
    assert_int_equal((uintptr_t)p % page, 0);
    heap_free(p, 0, 0);
    assert_int_equal(heap_lookup(p, NULL), 2);
    /* The whole pages are inaccessible and given back; the tail page's bytes are filled. */
    unsigned char vec[64];
    assert_int_equal(mincore(p, page, vec), 0);
    assert_int_equal(vec[0] & 1, 0);
    assert_int_equal(sentinel_find_change(p + n - 1000, 1000), 1000);
    struct heap_stats st;
    heap_get_stats(&st);
    assert_true(st.quarantine_bytes < 3 * page); /* only the edges count */
    /* A write into the tail page is found at exit, as in any filled block. */
    p[n - 10] = 0;
    assert_int_equal(heap_verify_quarantine(0), 1);
    assert_non_null(strstr(reports(), "at offset 132062 of a 132072-byte block"));
    p[n - 10] = sentinel_byte((uintptr_t)(p + n - 10));
    /* Eviction makes it accessible again before the real free. */
    assert_true(heap_quarantine_drain());
    assert_ptr_equal(g_last_freed, p - page);
    assert_string_equal(reports(), "");
}

static void resize_in_place(void **state)
{
    (void)state;
    struct heap_layout l;
    assert_true(heap_layout(100, 0, 0, 400, &l)); /* room to grow */
    unsigned char *real = malloc(l.total), *p = heap_track_block(real, 100, 0, &l);
    struct heap_claim c;
    heap_free_claim(p, &c);
    assert_int_equal(c.left, 16);
    /* Grown to 300 in place: the old end's redzone checked (here: written), the new one
     * filled, the size recorded, the claim gone. */
    p[100] = 0;
    uint64_t before = report_count();
    assert_true(heap_resize(p, &c, 300, malloc_usable_size(real), 0));
    assert_int_equal(report_count(), before + 1);
    assert_non_null(strstr(reports(), "0 bytes past the end of a 100-byte block"));
    size_t size;
    assert_int_equal(heap_lookup(p, &size), 1);
    assert_int_equal(size, 300);
    assert_int_equal(sentinel_find_change(p + 300, 16), 16);
    /* No room for 600: the caller moves it (nothing done). */
    heap_free_claim(p, &c);
    assert_false(heap_resize(p, &c, 600, malloc_usable_size(real), 0));
    assert_int_equal(heap_lookup(p, &size), 1);
    assert_int_equal(size, 300);
    heap_free_unclaim(p);
    heap_free(p, 0, 0);
    assert_true(heap_quarantine_drain());
    assert_ptr_equal(g_last_freed, real);
    assert_string_equal(reports(), "");
}

/* A block resized in place again and again while another thread scans the live redzones:
 * the scan must never see the new size before the redzone is at the new end (it once did,
 * between the resize's table visit and its fill, and took the program's bytes past a shrunk
 * block for an overflow). */
static atomic_int g_scan_stop;

static void *scan_live(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_scan_stop))
        heap_verify_live(0);
    return NULL;
}

static void resize_scan_race(void **state)
{
    (void)state;
    (void)reports();
    uint64_t before = report_count();
    struct heap_layout l;
    assert_true(heap_layout(1306, 0, 0, 64, &l));
    unsigned char *real = malloc(l.total), *p = heap_track_block(real, 1306, 0, &l);
    memset(p, 0x33, 1306);
    atomic_store(&g_scan_stop, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, scan_live, NULL), 0);
    for (int i = 0; i < 2000000; i++) {
        size_t n = i & 1 ? 1306 : 1300;
        struct heap_claim c;
        heap_free_claim(p, &c);
        assert_true(heap_resize(p, &c, n, malloc_usable_size(real), 0));
        memset(p, 0x33, n); /* the program writes its block to its new end */
    }
    atomic_store(&g_scan_stop, 1);
    pthread_join(t, NULL);
    if (report_count() != before)
        fail_msg("%llu false reports while resizing:\n%.2000s",
                 (unsigned long long)(report_count() - before), reports());
    heap_free(p, 0, 0);
    assert_true(heap_quarantine_drain());
    assert_string_equal(reports(), "");
}

static void ring_and_drain(void **state)
{
    (void)state;
    /* 8000 small blocks (112 bytes each as the budget counts them): more than the ring's
     * first 4096 slots; all stay quarantined. */
    enum { N = 8000 };
    static unsigned char *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = alloc(8);
        heap_free(blocks[i], 0, 0);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(heap_lookup(blocks[i], NULL), 2);
    struct heap_stats st;
    heap_get_stats(&st);
    assert_true(st.quarantine_blocks >= N);
    /* One is written to after free: draining verifies it. */
    blocks[N / 2][3] = 0;
    uint64_t before = report_count();
    unsigned frees = g_real_frees;
    assert_true(heap_quarantine_drain());
    assert_int_equal(report_count(), before + 1);
    assert_non_null(strstr(reports(), "at offset 3 of a 8-byte block"));
    assert_true(g_real_frees >= frees + N);
    for (int i = 0; i < N; i++)
        assert_int_equal(heap_lookup(blocks[i], NULL), 0);
    heap_get_stats(&st);
    assert_int_equal(st.quarantine_blocks, 0);
    assert_int_equal(st.quarantine_bytes, 0);
    assert_false(heap_quarantine_drain());
}

static void growth(void **state)
{
    (void)state;
    /* 300k fake addresses (lite: nothing is written to them) force every shard to grow. */
    heap_set_real_free(no_free);
    const uintptr_t base = 0x100000000000ull;
    for (uintptr_t i = 0; i < 300000; i++)
        assert_true(heap_track((void *)(base + i * 16), i, 0, HEAP_LITE));
    struct heap_stats st;
    heap_get_stats(&st);
    assert_true(st.live_blocks >= 300000);
    for (uintptr_t i = 0; i < 300000; i += 7) {
        size_t size;
        assert_int_equal(heap_lookup((void *)(base + i * 16), &size), 1);
        assert_int_equal(size, i);
    }
    unsigned frees = g_real_frees;
    for (uintptr_t i = 0; i < 300000; i++)
        heap_free((void *)(base + i * 16), 0, 1);
    assert_int_equal(g_real_frees, frees + 300000);
    for (uintptr_t i = 0; i < 300000; i += 1000)
        assert_int_equal(heap_lookup((void *)(base + i * 16), NULL), 0);
    heap_set_real_free(counting_free);
    assert_string_equal(reports(), "");
}

static void report_layout(void **state)
{
    (void)state;
    uint64_t before = report_count();
    struct report *r = report_begin(TLSAN_KIND_LIVE_OVERLAP, 0, "between '%s' and '%s'", "a", "b");
    assert_non_null(r);
    /* A report inside a report (e.g. from its own stack walk) is refused. */
    assert_null(report_begin(TLSAN_KIND_DOUBLE_FREE, 0, "nested"));
    report_tensor(r, "a");
    report_tensor(r, "b");
    report_line(r, "  bytes %d..%d of arena '%s'", 0, 63, "a0");
    report_stack(r, "bound here", 0);
    report_end(r, "between '%s' and '%s'", "a", "b");
    assert_int_equal(report_count(), before + 1);
    char want[256];
    snprintf(want, sizeof want,
             "==%d==ERROR: tlsan: live-overlap between 'a' and 'b'\n"
             "  bytes 0..63 of arena 'a0'\n"
             "bound here:\n    (no stack)\n"
             "SUMMARY: tlsan: live-overlap between 'a' and 'b'\n",
             (int)getpid());
    assert_string_equal(reports(), want);
    /* After the report, a new one can begin again. */
    r = report_begin(TLSAN_KIND_STALE_WRITE, 1, "on '%s'", "t");
    assert_non_null(r);
    report_end(r, "on '%s'", "t");
    snprintf(want, sizeof want,
             "==%d==ERROR: tlsan: stale-write on 't'\nSUMMARY: tlsan: stale-write on 't'\n",
             (int)getpid());
    assert_string_equal(reports(), want);
}

/* A free re-entered on the same block while the outer free holds its claim (ld.so freeing a
 * slot, the outer free's stack capture re-entering _dl_update_slotinfo, which frees it
 * again): the inner (lite) free is a no-op, the outer one finishes, nothing is reported and
 * the block is freed once. A claimed block can also be put back (a failed realloc). */
static void claim_before_stack(void **state)
{
    (void)state;
    uint64_t before = report_count();
    unsigned frees = g_real_frees;
    unsigned char *p = alloc(48);
    struct heap_claim c;
    heap_free_claim(p, &c);
    assert_int_equal(c.state, HEAP_CLAIM_LIVE);
    assert_int_equal(c.size, 48);
    heap_free(p, 0, 1); /* the nested free */
    assert_int_equal(heap_lookup(p, NULL), 1);
    assert_int_equal(g_real_frees, frees);
    struct heap_claim c2;
    heap_free_claim(p, &c2);
    assert_int_equal(c2.state, HEAP_CLAIM_BUSY);
    heap_free_finish(p, &c, 0);
    assert_int_equal(heap_lookup(p, NULL), 2); /* quarantined, once */
    assert_int_equal(report_count(), before);
    assert_string_equal(reports(), "");
    heap_free_claim(p, &c);
    assert_int_equal(c.state, HEAP_CLAIM_FREED);
    heap_free_finish(p, &c, 0);
    assert_int_equal(report_count(), before + 1);
    assert_non_null(strstr(reports(), "ERROR: tlsan: double-free on address 0x"));
    unsigned char *q = alloc(16);
    heap_free_claim(q, &c);
    heap_free_unclaim(q);
    heap_free(q, 0, 1); /* live again: a lite free frees it */
    assert_int_equal(heap_lookup(q, NULL), 0);
    assert_int_equal(g_real_frees, frees + 1);
    heap_free_claim(q + 1, &c);
    assert_int_equal(c.state, HEAP_CLAIM_UNKNOWN);
}

/* Hooks entered inside a locked section (a signal handler) only defer: nothing reaches the
 * table until the section's last lock is dropped. A block allocated and freed inside goes
 * straight back; one that outlives the section is tracked (lite) then; a deferred free of a
 * tracked block frees it then, and one of a quarantined block (a double free inside a
 * handler) or an unknown pointer leaves them alone. */
static void deferred_in_section(void **state)
{
    (void)state;
    uint64_t before = report_count();
    unsigned frees = g_real_frees;
    unsigned char *live = alloc(24), *gone = alloc(24);
    heap_free(gone, 0, 0);
    assert_int_equal(heap_lookup(gone, NULL), 2);

    shim_section_enter();
    unsigned char *a = malloc(64), *b = malloc(32);
    assert_true(heap_deferred_track(a, 64));
    assert_true(heap_deferred_track(b, 32));
    assert_int_equal(heap_deferred_size(b), 32);
    assert_true(heap_deferred_free(a)); /* freed at once */
    assert_int_equal(g_real_frees, frees + 1);
    assert_false(heap_deferred_free(live));
    assert_false(heap_deferred_free(gone));
    char local;
    assert_false(heap_deferred_free(&local));
    assert_int_equal(heap_lookup(b, NULL), 0); /* nothing in the table yet */
    assert_int_equal(heap_lookup(live, NULL), 1);
    shim_section_leave();

    assert_int_equal(heap_deferred_size(b), 0);
    size_t size = 0;
    assert_int_equal(heap_lookup(b, &size), 1);
    assert_int_equal(size, 32);
    assert_int_equal(heap_lookup(live, NULL), 0);
    assert_int_equal(heap_lookup(gone, NULL), 2);
    assert_int_equal(g_real_frees, frees + 2);
    assert_int_equal(report_count(), before);
    assert_string_equal(reports(), "");
    heap_free(b, 0, 1);

    /* The list is small: when it is full, a block stays untracked and a free is dropped. */
    shim_section_enter();
    void *blocks[40];
    unsigned tracked = 0;
    for (int i = 0; i < 40; i++) {
        blocks[i] = malloc(8);
        tracked += heap_deferred_track(blocks[i], 8);
    }
    assert_int_equal(tracked, 32);
    shim_section_leave();
    for (int i = 0; i < 40; i++) {
        assert_int_equal(heap_lookup(blocks[i], NULL), i < 32 ? 1 : 0);
        if (i < 32)
            heap_free(blocks[i], 0, 1);
        else
            free(blocks[i]);
    }
}

/* heap_peek as a signal handler inside a locked section calls it (malloc_usable_size,
 * realloc), with heap_lock_all standing for the section it interrupted: this thread holds
 * every shard lock and the quarantine's. The table is read without them; the ring is not
 * (-1). Another thread waits for the shard, unless it is inside a locked section of its own
 * while a fork takes every lock (heap_lock_all), where waiting could last for ever: -1. */
struct peeker {
    void *p;
    int in_section;
    int r;
    size_t size;
    atomic_int done;
};

static void *peeker_main(void *arg)
{
    struct peeker *k = arg;
    size_t left = 0;
    if (k->in_section)
        shim_section_enter();
    k->r = heap_peek(k->p, &k->size, &left);
    if (k->in_section)
        shim_section_leave();
    atomic_store(&k->done, 1);
    return NULL;
}

static void peek_own_section(void **state)
{
    (void)state;
    struct heap_layout l;
    assert_true(heap_layout(40, 0, 0, 0, &l));
    unsigned char *live = heap_track_block(malloc(l.total), 40, 0, &l);
    assert_true(heap_layout(24, 0, 0, 0, &l));
    unsigned char *gone = heap_track_block(malloc(l.total), 24, 0, &l);
    heap_free(gone, 0, 0); /* into the ring, out of the table (it has a left redzone) */
    size_t size = 0, left = 0;

    /* Asserted once the locks are dropped, so that a failure does not leave them held. */
    heap_lock_all();
    int live_r = heap_peek(live, &size, &left);
    size_t live_size = size, live_left = left;
    int gone_r = heap_peek(gone, &size, &left);
    struct peeker in = {live, 1, 0, 0, 0}, out = {live, 0, 0, 0, 0};
    pthread_t t, u;
    assert_int_equal(pthread_create(&t, NULL, peeker_main, &in), 0);
    pthread_join(t, NULL);
    assert_int_equal(pthread_create(&u, NULL, peeker_main, &out), 0);
    usleep(50000);
    int out_waited = !atomic_load(&out.done);
    heap_unlock_all();
    pthread_join(u, NULL);
    assert_int_equal(live_r, 1);
    assert_int_equal(live_size, 40);
    assert_int_equal(live_left, 16);
    assert_int_equal(gone_r, -1);
    assert_int_equal(in.r, -1);
    assert_true(out_waited);
    assert_int_equal(out.r, 1);
    assert_int_equal(out.size, 40);

    assert_int_equal(heap_peek(gone, &size, &left), 2);
    assert_int_equal(size, 24);
    heap_free(live, 0, 0);
    assert_string_equal(reports(), "");
}

/* heap_peek in a signal handler that interrupts the table's changes anywhere: a timer every
 * 30 us while this thread tracks and frees blocks (insertions, backward shifts, every shard
 * doubling a few times). 512 blocks stay live throughout, some 8 in each shard; each tick
 * peeks at a quarter of them in turn, most often some in the shard the interrupted code is
 * changing. Every one must read live with its size, whichever shard lock the interrupted code
 * holds (its own: read without it) and wherever in a change it stands. A tick that finds the
 * loop where the last one left it does nothing: in the sanitizer builds a tick may outlast
 * the timer's period, and the loop would never go on. */
enum { STEADY_BLOCKS = 512, STEADY_PER_TICK = 128, CHURN_LIVE = 100000, CHURN_TRACKS = 400000 };
static const uintptr_t g_steady_base = 0x200000000000ull;
static volatile sig_atomic_t g_ticks, g_steady_wrong;
static volatile uintptr_t g_churn_step, g_tick_step;

static void on_tick(int sig)
{
    (void)sig;
    if (g_churn_step == g_tick_step)
        return;
    g_tick_step = g_churn_step;
    int saved = errno;
    uintptr_t from = (uintptr_t)g_ticks * STEADY_PER_TICK % STEADY_BLOCKS;
    for (uintptr_t k = from; k < from + STEADY_PER_TICK; k++) {
        size_t size = 0, left = 0;
        if (heap_peek((void *)(g_steady_base + k * 16), &size, &left) != 1 || size != k + 1)
            g_steady_wrong = g_steady_wrong + 1;
    }
    g_ticks = g_ticks + 1;
    errno = saved;
}

static void peek_interrupting(void **state)
{
    (void)state;
    heap_set_real_free(no_free);
    const uintptr_t churn = 0x300000000000ull;
    for (uintptr_t k = 0; k < STEADY_BLOCKS; k++)
        assert_true(heap_track((void *)(g_steady_base + k * 16), k + 1, 0, HEAP_LITE));
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, &old);
    struct itimerval it = {{0, 30}, {0, 30}};
    setitimer(ITIMER_REAL, &it, NULL);
    uintptr_t oldest = 0;
    g_churn_step = 1;
    for (uintptr_t i = 0; i < CHURN_TRACKS; i++) {
        g_churn_step = i + 2;
        assert_true(heap_track((void *)(churn + i * 16), i, 0, HEAP_LITE));
        /* The live window widens to CHURN_LIVE blocks (the shards grow), then slides. */
        if (i - oldest >= CHURN_LIVE || (i & 1))
            heap_free((void *)(churn + oldest++ * 16), 0, 1);
    }
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    sigaction(SIGALRM, &old, NULL);
    while (oldest < CHURN_TRACKS)
        heap_free((void *)(churn + oldest++ * 16), 0, 1);
    for (uintptr_t k = 0; k < STEADY_BLOCKS; k++)
        heap_free((void *)(g_steady_base + k * 16), 0, 1);
    heap_set_real_free(counting_free);
    assert_true(g_ticks > 0);
    assert_int_equal(g_steady_wrong, 0);
    assert_string_equal(reports(), "");
}

/* heap_peek from a handler after every single instruction of the table's changes, where the
 * hardware can step (x86-64's trap flag: a SIGTRAP after each instruction, whose handler peeks
 * and returns): 300 blocks of one shard are tracked, partly freed and tracked again while the
 * shard is almost half full (deletions then move entries back), then the shard doubles, then
 * every block is freed. At each instruction every live block must read live with its size;
 * the one being tracked or freed, live with its size or unknown, never with another's. Not in
 * the sanitizer builds: their instrumented table code would take minutes to step through. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STEP_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STEP_SANITIZED 1
#endif
#if defined(__x86_64__) && !defined(STEP_SANITIZED)
#define STEP_TRAP_FLAG 0x100 /* in RFLAGS */
enum { STEP_BLOCKS = 300, STEP_DENSE = 250, STEP_CHURN = 100 };
enum { STEP_ABSENT, STEP_LIVE, STEP_MOVING }; /* moving: being tracked or freed */
static volatile uintptr_t g_step_addr[STEP_BLOCKS];
static volatile int g_step_state[STEP_BLOCKS];
static volatile sig_atomic_t g_stepping;
static volatile long g_steps, g_step_wrong;

static void on_step(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    ucontext_t *c = uc;
    if (!g_stepping) {
        c->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)STEP_TRAP_FLAG;
        return;
    }
    int saved = errno;
    g_steps = g_steps + 1;
    for (unsigned k = 0; k < STEP_BLOCKS; k++) {
        int state = g_step_state[k];
        if (state == STEP_ABSENT)
            continue;
        size_t size = 0, left = 0;
        int r = heap_peek((void *)g_step_addr[k], &size, &left);
        if (!(r == 1 && size == k + 1) && !(state == STEP_MOVING && r == 0))
            g_step_wrong = g_step_wrong + 1;
    }
    errno = saved;
}

/* One table change, stepped through: the flag is set by popf, the handler clears it at the
 * first trap after g_stepping is. */
static bool step_track(unsigned k)
{
    g_step_state[k] = STEP_MOVING;
    g_stepping = 1;
    __asm__ volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq" ::"i"(STEP_TRAP_FLAG) : "memory", "cc");
    bool ok = heap_track((void *)g_step_addr[k], k + 1, 0, HEAP_LITE);
    g_stepping = 0;
    g_step_state[k] = STEP_LIVE;
    return ok;
}

static void step_free(unsigned k)
{
    g_step_state[k] = STEP_MOVING;
    g_stepping = 1;
    __asm__ volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq" ::"i"(STEP_TRAP_FLAG) : "memory", "cc");
    heap_free((void *)g_step_addr[k], 0, 1);
    g_stepping = 0;
    g_step_state[k] = STEP_ABSENT;
}

static void peek_every_instruction(void **state)
{
    (void)state;
    const uintptr_t base = 0x400000000000ull;
    unsigned shard = heap_shard_index((void *)base), n = 0;
    for (uintptr_t a = base; n < STEP_BLOCKS; a += 16)
        if (heap_shard_index((void *)a) == shard)
            g_step_addr[n++] = a;
    heap_set_real_free(no_free);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_step;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &sa, &old);
    unsigned tracked = 0;
    for (unsigned k = 0; k < STEP_DENSE; k++)
        tracked += step_track(k);
    for (unsigned k = 0; k < STEP_CHURN; k++)
        step_free(k * 2);
    for (unsigned k = 0; k < STEP_CHURN; k++)
        tracked += step_track(k * 2);
    for (unsigned k = STEP_DENSE; k < STEP_BLOCKS; k++) /* the shard doubles */
        tracked += step_track(k);
    for (unsigned k = 0; k < STEP_BLOCKS; k++)
        step_free((k * 7) % STEP_BLOCKS);
    sigaction(SIGTRAP, &old, NULL);
    heap_set_real_free(counting_free);
    assert_int_equal(tracked, STEP_BLOCKS + STEP_CHURN);
    assert_true(g_steps > 10000);
    assert_int_equal(g_step_wrong, 0);
    for (unsigned k = 0; k < STEP_BLOCKS; k += 10)
        assert_int_equal(heap_lookup((void *)g_step_addr[k], NULL), 0);
    assert_string_equal(reports(), "");
}
#else
static void peek_every_instruction(void **state)
{
    (void)state;
    skip(); /* no trap flag here, or a sanitizer build */
}
#endif

/* The program's threads allocate and free at once, as through the hooks: the table's shards,
 * the quarantine (evicting, at 1 MiB) and the counters under their locks (the ThreadSanitizer
 * tier of .ci/test.sh checks them). Each block is found live with its size, then freed once;
 * nothing is reported. */
enum { CHURN_THREADS = 4, CHURN_BLOCKS = 3000 };

static void *churn(void *arg)
{
    size_t *wrong = arg;
    for (size_t i = 0; i < CHURN_BLOCKS; i++) {
        size_t n = 16 + i % 200, size = 0;
        unsigned char *p = malloc(n + heap_redzone());
        if (!p || !heap_track(p, n, 0, 0)) {
            (*wrong)++;
            continue;
        }
        memset(p, (int)i, n);
        *wrong += heap_lookup(p, &size) != 1 || size != n;
        heap_free(p, 0, 0);
        *wrong += heap_lookup(p, NULL) == 1;
    }
    return NULL;
}

static void threads_at_once(void **state)
{
    (void)state;
    uint64_t reported = report_count();
    struct heap_stats before, after;
    heap_get_stats(&before);
    pthread_t threads[CHURN_THREADS];
    size_t wrong[CHURN_THREADS] = {0};
    for (int t = 0; t < CHURN_THREADS; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, churn, &wrong[t]), 0);
    for (int t = 0; t < CHURN_THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(wrong[t], 0);
    }
    heap_get_stats(&after);
    assert_int_equal(after.allocs - before.allocs, CHURN_THREADS * CHURN_BLOCKS);
    /* Every block freed: evicted from the table (its frees) or still in quarantine. */
    assert_int_equal(after.frees - before.frees + after.quarantine_blocks -
                         before.quarantine_blocks,
                     CHURN_THREADS * CHURN_BLOCKS);
    assert_true(after.evictions > before.evictions);
    assert_int_equal(after.live_blocks, before.live_blocks);
    assert_int_equal(report_count(), reported);
    assert_string_equal(reports(), "");
}

/* ---- quarantined blocks out of the table: found by a search of the ring ---- */

/* A stack of one made-up frame, and how a report shows it. */
static uint32_t fake_stack(uintptr_t pc)
{
    return depot_put(&pc, 1);
}

static const char *stack_text(const char *title, uintptr_t pc)
{
    static char text[4][128];
    static unsigned next;
    char *t = text[next++ % 4];
    snprintf(t, sizeof text[0], "\n%s:\n    #0 %p (<unknown module>)\n", title, (void *)pc);
    return t;
}

/* A block laid out with its left redzone (as every block of the hooks' full path) leaves the
 * table when it is quarantined: lookups, peeks, claims and a second free find it in the
 * ring, with its size, offset and stacks; the double free names the first free's stack and
 * the allocation's, and frees nothing. */
static void ring_freed_block(void **state)
{
    (void)state;
    heap_quarantine_drain();
    struct heap_stats before, st;
    heap_get_stats(&before);
    uint32_t at_alloc = fake_stack(0x1110), at_free = fake_stack(0x2220),
             at_again = fake_stack(0x3330);
    struct heap_layout l;
    assert_true(heap_layout(40, 0, 0, 0, &l));
    unsigned char *real = malloc(l.total), *p = heap_track_block(real, 40, at_alloc, &l);
    assert_ptr_equal(p, real + 16);
    heap_get_stats(&st);
    assert_int_equal(st.live_blocks, before.live_blocks + 1);
    heap_free(p, at_free, 0);
    heap_get_stats(&st);
    assert_int_equal(st.live_blocks, before.live_blocks); /* out of the table */
    assert_int_equal(st.quarantine_blocks, before.quarantine_blocks + 1);
    size_t size = 0, left = 0;
    assert_int_equal(heap_lookup(p, &size), 2);
    assert_int_equal(size, 40);
    size = 0;
    assert_int_equal(heap_peek(p, &size, &left), 2);
    assert_int_equal(size, 40);
    assert_int_equal(left, 16);
    assert_int_equal(heap_peek(p + 16, &size, &left), 0);
    struct heap_claim c;
    heap_free_claim(p, &c);
    assert_int_equal(c.state, HEAP_CLAIM_FREED);
    assert_int_equal(c.size, 40);
    assert_int_equal(c.left, 16);
    assert_int_equal(c.alloc_stack, at_alloc);
    assert_int_equal(c.free_stack, at_free);

    uint64_t reported = report_count();
    unsigned frees = g_real_frees;
    heap_free(p, at_again, 0);
    assert_int_equal(report_count(), reported + 1);
    assert_int_equal(g_real_frees, frees);
    const char *r = reports();
    char want[128];
    snprintf(want, sizeof want, "ERROR: tlsan: double-free on address %p (a 40-byte block)\n",
             (void *)p);
    assert_non_null(strstr(r, want));
    char stacks[512];
    snprintf(stacks, sizeof stacks, "%s%s%s", stack_text("freed again here", 0x3330),
             stack_text("first freed here", 0x2220) + 1, stack_text("allocated here", 0x1110) + 1);
    assert_non_null(strstr(r, stacks));
    /* A realloc of it (claim, then finish): the same report. */
    heap_free_claim(p, &c);
    heap_free_finish(p, &c, at_again);
    assert_int_equal(report_count(), reported + 2);
    assert_non_null(strstr(reports(), stacks));
    /* A lite (re-entered) free of it, and one deferred from a signal handler, leave it alone. */
    heap_free(p, 0, 1);
    shim_section_enter();
    assert_false(heap_deferred_free(p));
    shim_section_leave();
    assert_int_equal(g_real_frees, frees);
    assert_int_equal(heap_lookup(p, NULL), 2);
    /* Evicted once, to its real block. */
    assert_true(heap_quarantine_drain());
    assert_int_equal(g_real_frees, frees + 1);
    assert_ptr_equal(g_last_freed, real);
    assert_int_equal(heap_lookup(p, NULL), 0);
    heap_get_stats(&st);
    assert_int_equal(st.live_blocks, before.live_blocks);
    assert_int_equal(st.frees, before.frees + 1);
    assert_string_equal(reports(), "");
}

/* The real allocator hands a quarantined block's address out again (a free behind the shim's
 * back): the shim never frees the new, live block for real. With a left redzone the old ring
 * entry is dropped at its eviction; a tabled block (none) is replaced in the table, and of the
 * two ring entries only one frees. */
static void address_reused(void **state)
{
    (void)state;
    heap_quarantine_drain();
    struct heap_layout l;
    assert_true(heap_layout(64, 0, 0, 0, &l));
    unsigned char *real = malloc(l.total), *p = heap_track_block(real, 64, 0, &l);
    heap_free(p, 0, 0);
    assert_ptr_equal(heap_track_block(real, 64, 0, &l), p); /* given out again */
    unsigned frees = g_real_frees;
    assert_true(heap_quarantine_drain());
    assert_int_equal(g_real_frees, frees); /* the live block stays */
    assert_int_equal(heap_lookup(p, NULL), 1);
    heap_free(p, 0, 0);
    assert_true(heap_quarantine_drain());
    assert_int_equal(g_real_frees, frees + 1);
    assert_ptr_equal(g_last_freed, real);

    uint64_t reported = report_count();
    unsigned char *q = alloc(48); /* no left offset: tabled */
    heap_free(q, 0, 0);
    assert_true(heap_track(q, 48, 0, 0));
    assert_int_equal(heap_lookup(q, NULL), 1);
    heap_free(q, 0, 0);
    assert_int_equal(heap_lookup(q, NULL), 2);
    assert_true(heap_quarantine_drain());
    assert_int_equal(g_real_frees, frees + 2);
    assert_ptr_equal(g_last_freed, q);
    assert_int_equal(report_count(), reported);
    assert_string_equal(reports(), "");
}

/* Two threads free the same block at once, 2,000 times: one free quarantines it, the other is
 * a double free whoever comes second, never an invalid free (the block is in the table until
 * the ring holds it), and each block is freed for real once. The blocks are large (100 KiB,
 * filled and not guarded), so that the first free's fill, between its table visit and its
 * push to the ring, is long enough for the second to come in. */
enum { RACE_ROUNDS = 2000 };
static unsigned char *_Atomic g_race_block;
static pthread_barrier_t g_race_start, g_race_done;

static void *race_free(void *arg)
{
    uint32_t stack = fake_stack((uintptr_t)arg);
    for (int i = 0; i < RACE_ROUNDS; i++) {
        pthread_barrier_wait(&g_race_start);
        heap_free(g_race_block, stack, 0);
        pthread_barrier_wait(&g_race_done);
    }
    return NULL;
}

static void free_race(void **state)
{
    (void)state;
    heap_quarantine_drain();
    (void)reports();
    uint64_t reported = report_count();
    unsigned frees = g_real_frees;
    pthread_barrier_init(&g_race_start, NULL, 3);
    pthread_barrier_init(&g_race_done, NULL, 3);
    pthread_t t[2];
    for (uintptr_t k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, race_free, (void *)(0x4440 + k * 0x10)), 0);
    static char text[1 << 16];
    unsigned double_frees = 0, other = 0;
    struct heap_layout l;
    assert_true(heap_layout(100 * 1024, 0, 0, 0, &l));
    for (int i = 0; i < RACE_ROUNDS; i++) {
        g_race_block = heap_track_block(malloc(l.total), 100 * 1024, 0, &l);
        pthread_barrier_wait(&g_race_start);
        pthread_barrier_wait(&g_race_done);
        if (i % 100 == 99 || i == RACE_ROUNDS - 1) {
            heap_quarantine_drain();
            snprintf(text, sizeof text, "%s", reports());
            for (const char *at = text; (at = strstr(at, "ERROR: tlsan: ")) != NULL; at++)
                strncmp(at, "ERROR: tlsan: double-free", 25) == 0 ? double_frees++ : other++;
        }
    }
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    pthread_barrier_destroy(&g_race_start);
    pthread_barrier_destroy(&g_race_done);
    assert_int_equal(other, 0);
    assert_int_equal(double_frees, RACE_ROUNDS);
    assert_int_equal(report_count(), reported + RACE_ROUNDS);
    assert_int_equal(g_real_frees, frees + RACE_ROUNDS);
}

/* A fault on a guarded block with halt_on_error=0: the report names the stacks the guard
 * registry kept (the block is in no table), the pages become accessible, and the block is
 * not verified afterwards (the access changed it) but freed for real once. */
static void guarded_fault(void **state)
{
    (void)state;
    struct heap_layout l;
    size_t n = HEAP_GUARD_MIN + 64, page = (size_t)sysconf(_SC_PAGESIZE);
    uint32_t at_alloc = fake_stack(0x5550), at_free = fake_stack(0x6660);
    assert_true(heap_layout(n, 0, 0, 0, &l));
    unsigned char *real = aligned_alloc(l.align, (l.total + l.align - 1) & ~(l.align - 1));
    unsigned char *p = heap_track_block(real, n, at_alloc, &l);
    heap_free(p, at_free, 0);
    unsigned frees = g_real_frees;
    uint64_t reported = report_count();
    /* The access's own stack is not captured: symbolizing it in the handler needs more than
     * the small alternate stack a sanitizer build runs it on. */
    struct shim_options *o = shim_opts_mut();
    unsigned depth = o->stack_depth;
    o->stack_depth = 0;
    struct sigaction cmocka;
    assert_int_equal(sigaction(SIGSEGV, &g_shim_segv, &cmocka), 0);
    ((volatile unsigned char *)p)[100] = 7;
    sigaction(SIGSEGV, &cmocka, NULL);
    o->stack_depth = depth;
    assert_int_equal(report_count(), reported + 1);
    const char *r = reports();
    char want[256];
    snprintf(want, sizeof want,
             "ERROR: tlsan: heap-use-after-free on address %p at offset 100 of a %zu-byte "
             "block at %p\n",
             (void *)(p + 100), n, (void *)p);
    assert_non_null(strstr(r, want));
    char stacks[256];
    snprintf(stacks, sizeof stacks, "\nwritten here:\n    (no stack)%s%s",
             stack_text("freed here", 0x6660), stack_text("allocated here", 0x5550) + 1);
    assert_non_null(strstr(r, stacks));
    assert_int_equal(p[100], 7);
    /* Not verified any more, the tail page (filled, never guarded) included. */
    p[n - 10] = 0;
    assert_int_equal(heap_verify_quarantine(0), 0);
    assert_true(heap_quarantine_drain());
    assert_int_equal(g_real_frees, frees + 1);
    assert_ptr_equal(g_last_freed, p - page);
    assert_string_equal(reports(), "");
}

/* The table and ring against a plain model on 20,000 random operations over 300 addresses
 * (laid out with a left redzone or not, so ring-only and tabled blocks mix): allocations,
 * frees, second frees, lookups and drains; each answer, report and real free as the model
 * says. The budget (1 MiB) holds every block freed between two drains. */
static void ring_twin(void **state)
{
    (void)state;
    enum { SLOTS = 300, OPS = 20000 };
    enum { NONE, LIVE, FREED } model[SLOTS] = {NONE};
    static unsigned char *ptr[SLOTS], *realp[SLOTS];
    static size_t sizes[SLOTS];
    heap_quarantine_drain();
    (void)reports();
    uint64_t seed = 29;
    unsigned frees = g_real_frees, want_frees = 0, quarantined = 0;
    uint64_t reported = report_count(), want_reports = 0;
    for (int op = 0; op < OPS; op++) {
        unsigned k = (unsigned)splitmix_below(&seed, SLOTS),
                 what = (unsigned)splitmix_below(&seed, 10);
        if (what == 0 && splitmix_chance(&seed, 5)) {
            heap_quarantine_drain();
            for (unsigned j = 0; j < SLOTS; j++)
                if (model[j] == FREED) {
                    model[j] = NONE;
                    want_frees++;
                }
            quarantined = 0;
        } else if (model[k] == NONE && what < 6) {
            size_t n = 1 + (size_t)splitmix_below(&seed, 200);
            struct heap_layout l;
            bool laid = splitmix_chance(&seed, 50);
            assert_true(heap_layout(n, 0, 0, 0, &l));
            if (laid) {
                realp[k] = malloc(l.total);
                ptr[k] = heap_track_block(realp[k], n, 0, &l);
            } else {
                realp[k] = ptr[k] = malloc(n + heap_redzone());
                assert_true(heap_track(ptr[k], n, 0, 0));
            }
            sizes[k] = n;
            model[k] = LIVE;
        } else if (model[k] != NONE && what < 8) {
            if (model[k] == FREED || quarantined < 2000) {
                heap_free(ptr[k], 0, 0);
                if (model[k] == FREED) {
                    want_reports++;
                } else {
                    model[k] = FREED;
                    quarantined++;
                }
            }
        } else if (model[k] != NONE) {
            size_t size = 0, left = 7;
            assert_int_equal(heap_lookup(ptr[k], &size), model[k] == LIVE ? 1 : 2);
            assert_int_equal(size, sizes[k]);
            assert_int_equal(heap_peek(ptr[k], &size, &left), model[k] == LIVE ? 1 : 2);
            assert_int_equal(left, (size_t)(ptr[k] - realp[k]));
        }
        assert_int_equal(report_count(), reported + want_reports);
        assert_int_equal(g_real_frees, frees + want_frees);
        if (op % 500 == 0)
            (void)reports();
    }
    for (unsigned j = 0; j < SLOTS; j++)
        if (model[j] == LIVE)
            heap_free(ptr[j], 0, 0);
    heap_quarantine_drain();
    (void)reports();
}

/* The quarantine gives back what it holds: its blocks' only pointers are in the shim's mmap'd
 * table, which LeakSanitizer (the sanitizer build) does not scan, so it would take them for
 * leaks. */
static int teardown(void **state)
{
    (void)state;
    heap_quarantine_drain();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fill_phase),
        cmocka_unit_test(nan_views),
        cmocka_unit_test(find_change),
        cmocka_unit_test(sentinel_twins),
        cmocka_unit_test(verify_sampling),
        cmocka_unit_test(track_and_free),
        cmocka_unit_test(double_and_invalid),
        cmocka_unit_test(overflow),
        cmocka_unit_test(write_after_free),
        cmocka_unit_test(budget_and_lite),
        cmocka_unit_test(underflow_and_layout),
        cmocka_unit_test(guarded_blocks),
        cmocka_unit_test(resize_in_place),
        cmocka_unit_test(resize_scan_race),
        cmocka_unit_test(ring_and_drain),
        cmocka_unit_test(peek_every_instruction), /* before the shards grow */
        cmocka_unit_test(peek_interrupting),      /* before growth: the shards still small */
        cmocka_unit_test(growth),
        cmocka_unit_test(report_layout),
        cmocka_unit_test(claim_before_stack),
        cmocka_unit_test(deferred_in_section),
        cmocka_unit_test(peek_own_section),
        cmocka_unit_test(threads_at_once),
        cmocka_unit_test(ring_freed_block),
        cmocka_unit_test(address_reused),
        cmocka_unit_test(free_race),
        cmocka_unit_test(guarded_fault),
        cmocka_unit_test(ring_twin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
