/* depot and modules: equal stacks get equal ids, captured frames start at the caller, the
 * frames are formatted as module+offset (and function names when symbolizing), concurrent
 * interning agrees, and modules are found (and found again after a dlopen). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "depot.h"
#include "modules.h"
#include "out.h"
#include "shim.h"

static void put_get(void **state)
{
    (void)state;
    uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[3] = {0x1000, 0x2000, 0x3001};
    uint32_t ia = depot_put(a, 3), ib = depot_put(b, 3), ia2 = depot_put(a, 3);
    assert_int_not_equal(ia, 0);
    assert_int_not_equal(ib, 0);
    assert_int_not_equal(ia, ib);
    assert_int_equal(ia, ia2);
    /* A prefix is another stack. */
    uint32_t ip = depot_put(a, 2);
    assert_int_not_equal(ip, ia);
    const uintptr_t *f;
    assert_int_equal(depot_get(ia, &f), 3);
    assert_memory_equal(f, a, sizeof a);
    assert_int_equal(depot_get(ip, &f), 2);
    assert_int_equal(f[1], 0x2000);
    assert_int_equal(depot_put(a, 0), 0);
    assert_int_equal(depot_get(0, &f), 0);
    assert_int_equal(depot_get(999999, &f), 0);
    /* More than DEPOT_MAX_FRAMES frames are cut to the innermost ones. */
    uintptr_t many[DEPOT_MAX_FRAMES + 10];
    for (unsigned i = 0; i < DEPOT_MAX_FRAMES + 10; i++)
        many[i] = 0x5000 + i;
    uint32_t im = depot_put(many, DEPOT_MAX_FRAMES + 10);
    assert_int_equal(depot_get(im, &f), DEPOT_MAX_FRAMES);
    assert_int_equal(im, depot_put(many, DEPOT_MAX_FRAMES));
}

__attribute__((noinline)) uint32_t capture_here(void)
{
    uint32_t id = depot_capture(0);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return id;
}

__attribute__((noinline)) uint32_t capture_skip_one(void)
{
    uint32_t id = capture_here();
    __asm__ volatile("" ::: "memory");
    return id;
}

__attribute__((noinline)) static uint32_t capture_skipping(void)
{
    uint32_t id = depot_capture(1); /* drops this function: frame 0 is its caller */
    __asm__ volatile("" ::: "memory");
    return id;
}

static void capture(void **state)
{
    (void)state;
    uint32_t ids[3];
    volatile int count = 3; /* not a constant: the loop is not unrolled into 3 call sites */
    for (int i = 0; i < count; i++)
        ids[i] = capture_here(); /* one call site: one stack */
    assert_int_not_equal(ids[0], 0);
    assert_int_equal(ids[0], ids[1]);
    assert_int_equal(ids[1], ids[2]);
    uint32_t other = capture_here(); /* another call site */
    assert_int_not_equal(other, ids[0]);

    const uintptr_t *f;
    unsigned n = depot_get(ids[0], &f);
    assert_true(n >= 3);
    /* Frame 0 is inside capture_here, frame 1 in this function. */
    assert_true(f[0] > (uintptr_t)capture_here && f[0] < (uintptr_t)capture_here + 64);
    assert_true(f[1] > (uintptr_t)capture && f[1] < (uintptr_t)capture + 4096);
    n = depot_get(capture_skip_one(), &f);
    assert_true(f[0] > (uintptr_t)capture_here && f[0] < (uintptr_t)capture_here + 64);
    assert_true(f[1] > (uintptr_t)capture_skip_one && f[1] < (uintptr_t)capture_skip_one + 64);
    n = depot_get(capture_skipping(), &f);
    assert_true(f[0] > (uintptr_t)capture && f[0] < (uintptr_t)capture + 4096);

    /* stack_depth bounds the frames; 0 turns capture off. */
    struct shim_options *o = shim_opts_mut();
    o->stack_depth = 2;
    assert_int_equal(depot_get(capture_here(), &f), 2);
    o->stack_depth = 0;
    assert_int_equal(capture_here(), 0);
    o->stack_depth = 16;
}

static void format(void **state)
{
    (void)state;
    char text[2048];
    struct outbuf b = {text, 0, sizeof text};
    depot_format(&b, 0, 1);
    assert_string_equal(text, "    (no stack)\n");

    /* A frame in libc: module+offset; with symbolize its function too. */
    uintptr_t pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid") + 5;
    uintptr_t frames[2] = {pc, 0x10};
    uint32_t id = depot_put(frames, 2);
    const struct shim_module *m = modules_find(pc);
    assert_non_null(m);
    assert_non_null(strstr(m->path, "libc.so"));
    char want[1024];
    snprintf(want, sizeof want, "    #0 %p (%s+0x%zx)\n    #1 0x10 (<unknown module>)\n",
             (void *)pc, m->path, (size_t)(pc - m->base));
    b = (struct outbuf){text, 0, sizeof text};
    depot_format(&b, id, 0);
    assert_string_equal(text, want);
    b = (struct outbuf){text, 0, sizeof text};
    depot_format(&b, id, 1);
    Dl_info info;
    assert_true(dladdr((void *)(pc - 1), &info) && info.dli_sname);
    snprintf(want, sizeof want, "    #0 %p in %s+0x5 (%s+0x%zx)\n    #1 0x10 (<unknown module>)\n",
             (void *)pc, info.dli_sname, m->path, (size_t)(pc - m->base));
    assert_string_equal(text, want);
}

/* Enough stacks that the hash table (4,096 slots at first) doubles three times while four
 * threads intern the same ones at once. */
#define MANY 20000u

static void many_frames(unsigned i, uintptr_t f[4])
{
    f[0] = 0x100000 + i;
    f[1] = 0x200000 + i;
    f[2] = 0x300000;
    f[3] = i % 7;
}

static void *intern_many(void *arg)
{
    uint32_t *ids = arg;
    for (unsigned i = 0; i < MANY; i++) {
        uintptr_t f[4];
        many_frames(i, f);
        ids[i] = depot_put(f, 4);
    }
    return NULL;
}

static void concurrent(void **state)
{
    (void)state;
    static uint32_t ids[4][MANY];
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, intern_many, ids[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < MANY; i++) {
        assert_int_not_equal(ids[0][i], 0);
        for (int k = 1; k < 4; k++)
            assert_int_equal(ids[k][i], ids[0][i]);
        if (i)
            assert_int_not_equal(ids[0][i], ids[0][i - 1]);
        /* the record is the stack, and the grown table finds it again */
        uintptr_t f[4];
        many_frames(i, f);
        const uintptr_t *got;
        assert_int_equal(depot_get(ids[0][i], &got), 4);
        assert_memory_equal(got, f, sizeof f);
        assert_int_equal(depot_put(f, 4), ids[0][i]);
    }
}

static void modules(void **state)
{
    (void)state;
    const struct shim_module *self = modules_find((uintptr_t)modules);
    assert_non_null(self);
    assert_non_null(strstr(self->path, "shim_test_depot"));
    assert_ptr_equal(modules_get(self->id), self);
    assert_null(modules_get(0));
    assert_null(modules_get(100000));
    assert_null(modules_find(0x10));
    uint32_t before = modules_count();
    assert_true(before >= 2);
    /* A module loaded later is found by a rescan. */
    void *h = dlopen("libm.so.6", RTLD_NOW);
    assert_non_null(h);
    void *cosp = dlsym(h, "cos");
    const struct shim_module *m = modules_find((uintptr_t)cosp);
    assert_non_null(m);
    assert_non_null(strstr(m->path, "libm.so.6"));
    assert_true((uintptr_t)cosp >= m->base && (uintptr_t)cosp < m->base + m->size_bytes);
    assert_true(modules_count() >= before);
    dlclose(h);
}

/* ---- the memo of repeated stacks against a walk of every capture ----
 * Random paths of calls down to one hook-like function that captures twice at each call: with
 * the memo (depot_capture_here) and with a plain walk. The two must name the same frames
 * (after frame 0, the two capture points). The paths mix frames of fixed size, frames of a
 * size set by the path (alloca, with a frame pointer), recursion, and calls through one call
 * site to different functions, so that one key (the hook's stack pointer and return address)
 * is reached by many different stacks. */
#define TWIN_PATHS    48
#define TWIN_MAX_LEN  14
#define TWIN_CAPTURES 60000

struct twin_path {
    unsigned len;
    unsigned char op[TWIN_MAX_LEN];
    unsigned short size[TWIN_MAX_LEN];
};

struct twin_result {
    uint32_t memo, plain;
};

__attribute__((always_inline)) static inline uint32_t plain_capture_here(void)
{
    void *buf[DEPOT_WALK_BUF];
    int want = depot_walk_begin();
    return want ? depot_walk_end(buf, unw_backtrace(buf, want)) : 0;
}

/* Whether the two captures name the same frames after frame 0 (the two capture points).
 * Inlined: as a call it made gcc keep a pointer to a local of memo_twin's in rbp, and the memo
 * refuses a stack with a frame whose rbp points into it but is no frame pointer (it may be a
 * realigned frame), so the exact count of the repeated stack below would not hold. */
__attribute__((always_inline)) static inline bool twin_agree(const struct twin_result *r)
{
    const uintptr_t *fm, *fp;
    unsigned nm = depot_get(r->memo, &fm), np = depot_get(r->plain, &fp);
    return nm != 0 && nm == np && memcmp(fm + 1, fp + 1, (nm - 1) * sizeof *fm) == 0;
}

__attribute__((noinline)) static void twin_hook(struct twin_result *r)
{
    r->memo = depot_capture_here();
    r->plain = plain_capture_here();
    __asm__ volatile("" ::: "memory");
}

static void twin_next(const struct twin_path *p, unsigned i, struct twin_result *r);

__attribute__((noinline)) static void twin_fixed_a(const struct twin_path *p, unsigned i,
                                                   struct twin_result *r)
{
    twin_next(p, i + 1, r);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void twin_fixed_b(const struct twin_path *p, unsigned i,
                                                   struct twin_result *r)
{
    twin_next(p, i + 1, r);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void twin_alloca(const struct twin_path *p, unsigned i,
                                                  struct twin_result *r)
{
    volatile char *a = __builtin_alloca(p->size[i]);
    a[0] = 1; /* the rest is left as earlier calls wrote it */
    twin_next(p, i + 1, r);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void twin_big(const struct twin_path *p, unsigned i,
                                               struct twin_result *r)
{
    volatile char big[1500];
    big[p->size[i] % sizeof big] = 1;
    twin_next(p, i + 1, r);
    __asm__ volatile("" ::: "memory");
}

typedef void twin_fn(const struct twin_path *, unsigned, struct twin_result *);
static twin_fn *volatile g_twin_fns[4] = {twin_fixed_a, twin_fixed_b, twin_alloca, twin_big};

__attribute__((noinline)) static void twin_next(const struct twin_path *p, unsigned i,
                                                struct twin_result *r)
{
    if (i == p->len)
        twin_hook(r);
    else
        g_twin_fns[p->op[i]](p, i, r); /* one call site, four callees */
    __asm__ volatile("" ::: "memory");
}

static uint64_t twin_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void memo_twin(void **state)
{
    (void)state;
    assert_true(depot_memo_init());
    static struct twin_path paths[TWIN_PATHS];
    uint64_t seed = 7;
    for (unsigned k = 0; k < TWIN_PATHS; k++) {
        struct twin_path *p = &paths[k];
        p->len = (unsigned)(twin_rand(&seed) % (TWIN_MAX_LEN + 1));
        for (unsigned i = 0; i < p->len; i++) {
            p->op[i] = (unsigned char)(twin_rand(&seed) % 4);
            p->size[i] = (unsigned short)(16 * (1 + twin_rand(&seed) % 24));
        }
    }
    /* Half the hot paths reach the hook at one stack pointer through different stacks: two
     * alloca frames whose sizes add up to the same, around a frame that differs. Only the
     * saved frame pointers tell them apart (a word left where another's return address was
     * stands at the same place). */
    for (unsigned k = 0; k < 4; k++) {
        struct twin_path *p = &paths[k];
        p->len = 3;
        p->op[0] = 2;
        p->op[1] = (unsigned char)(k % 2);
        p->op[2] = 2;
        p->size[0] = (unsigned short)(16 * (1 + k));
        p->size[2] = (unsigned short)(16 * (8 - k));
    }
    uint64_t hits0, fills0, hits, fills;
    unsigned differ = 0;
    /* One stack again and again: after at most 64 captures (the thread takes its memo) and 32
     * sightings (the entry is filled), the memo answers every one. */
    depot_memo_counts(&hits0, &fills0);
    static const struct twin_path one = {4, {0, 3, 1, 0}, {0, 300, 0, 0}};
    for (unsigned n = 0; n < 1000; n++) {
        struct twin_result r = {0, 0};
        twin_next(&one, 0, &r);
        differ += !twin_agree(&r);
    }
    depot_memo_counts(&hits, &fills);
    assert_int_equal(differ, 0);
    assert_true(hits - hits0 >= 1000 - 64 - 32 - 1);
    assert_int_equal(fills - fills0, 1);
    depot_memo_counts(&hits0, &fills0);
    for (unsigned n = 0; n < TWIN_CAPTURES; n++) {
        /* Three in four captures come from 8 hot paths (as a program's allocations come from
         * few call sites), the others from any path. */
        unsigned pick = (unsigned)twin_rand(&seed);
        const struct twin_path *p = &paths[pick % 4 ? pick % 8 : pick % TWIN_PATHS];
        struct twin_result r = {0, 0};
        twin_next(p, 0, &r);
        differ += !twin_agree(&r);
    }
    depot_memo_counts(&hits, &fills);
    fprintf(stderr, "memo twin: %u captures, %llu memo hits, %llu fills, %u differ\n",
            TWIN_CAPTURES, (unsigned long long)(hits - hits0), (unsigned long long)(fills - fills0),
            differ);
    assert_int_equal(differ, 0);
    /* The memo answered many captures (the test is of it, not of the walk; how many depends
     * on which keys share a set of ways, which moves with the stack's address: 9,800 to 31,800
     * in 40 runs), though half the hot paths share one key and keep emptying its entry. */
    assert_true(hits - hits0 >= 1000);
    assert_true(fills - fills0 >= 1);
}

#if defined(__x86_64__)
/* ---- a signal frame on the stack the memo is asked for ----
 * A SIGILL handler captures as twin_hook does. memo_sig_f(0) calls the leaf, which returns,
 * and faults at the instruction right after the call: the word below the interrupted stack
 * pointer holds the interrupted pc, as a return address would, and the stack may be
 * memoised. memo_sig_f(1) faults inside the leaf, one frame deeper, and its signal frame
 * lies at the same place (the kernel aligns it to 64 bytes) for most alignments of the
 * stack: the words verified still hold their values, the leaf's return address among them,
 * but the stack has the leaf in it. The alloca in memo_sig_shifted moves the stack by 16
 * bytes at a time through the alignments. */
void memo_sig_f(int fault_in_leaf);
__asm__(".text\n"
        ".type memo_sig_leaf, @function\n"
        "memo_sig_leaf:\n"
        ".cfi_startproc\n"
        "  test %edi, %edi\n"
        "  je 1f\n"
        "  ud2\n"
        "1:\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size memo_sig_leaf, .-memo_sig_leaf\n"
        ".globl memo_sig_f\n"
        ".hidden memo_sig_f\n"
        ".type memo_sig_f, @function\n"
        "memo_sig_f:\n"
        ".cfi_startproc\n"
        "  sub $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "  call memo_sig_leaf\n"
        "  ud2\n"
        "  add $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size memo_sig_f, .-memo_sig_f\n");

static sigjmp_buf g_sig_jump;
static struct twin_result g_sig_result;

static void memo_sig_handler(int sig)
{
    (void)sig;
    twin_hook(&g_sig_result);
    siglongjmp(g_sig_jump, 1);
}

__attribute__((noinline)) static void memo_sig_shifted(unsigned shift, int fault_in_leaf)
{
    volatile char *pad = __builtin_alloca(16 * shift + 1);
    pad[0] = 0;
    if (sigsetjmp(g_sig_jump, 1) == 0)
        memo_sig_f(fault_in_leaf);
    __asm__ volatile("" ::: "memory");
}

static void memo_signal(void **state)
{
    (void)state;
    assert_true(depot_memo_init());
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = memo_sig_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGILL, &sa, &old), 0);
    unsigned differ = 0, captures = 0;
    for (unsigned shift = 0; shift < 8; shift++) {
        for (unsigned i = 0; i <= 300; i++) {
            g_sig_result.memo = g_sig_result.plain = 0;
            memo_sig_shifted(shift, i == 300);
            differ += !twin_agree(&g_sig_result);
            captures++;
        }
    }
    assert_int_equal(sigaction(SIGILL, &old, NULL), 0);
    assert_int_equal(captures, 8 * 301);
    assert_int_equal(differ, 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_get),
        cmocka_unit_test(capture),
        cmocka_unit_test(format),
        cmocka_unit_test(concurrent),
        cmocka_unit_test(modules),
        cmocka_unit_test(memo_twin),
#if defined(__x86_64__)
        cmocka_unit_test(memo_signal),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
