/* cfi: the fast walk gives exactly libunwind's stack (its brute-force twin, unw_backtrace at
 * the same place) on thousands of random call chains through frames of every usual shape:
 * no frame pointer, frame pointer, alloca (a CFA on rbp), large frames, recursion; in the main
 * thread and in another; cut at a given depth; and it does not decline on any of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <alloca.h>
#include <libunwind.h>
#include <pthread.h>
#include <string.h>

#include "cfi.h"

#define MAX_FRAMES 64

/* What one random chain found at its innermost call. */
struct outcome {
    int fast_n, slow_n;
    void *fast[MAX_FRAMES], *slow[MAX_FRAMES];
    int max; /* the depth asked for */
};

static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

typedef int (*link_fn)(int depth, uint64_t *state, struct outcome *out);
static int pick_next(int depth, uint64_t *state, struct outcome *out);

/* The innermost call: both walks from the same function. Frame 0 of each is an address in
 * this function (after its own call), so the stacks are compared from frame 1. */
__attribute__((noinline)) static int leaf(struct outcome *out)
{
    out->fast_n = cfi_backtrace(out->fast, out->max);
    out->slow_n = unw_backtrace(out->slow, out->max);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return out->fast_n;
}

__attribute__((noinline)) static int link_plain(int depth, uint64_t *state, struct outcome *out)
{
    int r = pick_next(depth - 1, state, out);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

/* __builtin_frame_address makes GCC keep a frame pointer in the function. */
__attribute__((noinline)) static int link_frame_pointer(int depth, uint64_t *state,
                                                        struct outcome *out)
{
    volatile char pad[24];
    pad[0] = (char)depth;
    void *volatile frame = __builtin_frame_address(0);
    (void)frame;
    int r = pick_next(depth - 1, state, out);
    return r + pad[0];
}

__attribute__((noinline)) static int link_alloca(int depth, uint64_t *state, struct outcome *out)
{
    size_t bytes = 16 + next_random(state) % 3000;
    volatile char *buf = alloca(bytes);
    buf[0] = 1;
    buf[bytes - 1] = 2;
    int r = pick_next(depth - 1, state, out);
    return r + buf[0];
}

__attribute__((noinline)) static int link_large(int depth, uint64_t *state, struct outcome *out)
{
    volatile char big[9000];
    big[depth % 9000] = 3;
    int r = pick_next(depth - 1, state, out);
    return r + big[depth % 9000];
}

static int pick_next(int depth, uint64_t *state, struct outcome *out)
{
    static const link_fn links[] = {link_plain, link_frame_pointer, link_alloca, link_large};
    if (depth <= 0)
        return leaf(out);
    return links[next_random(state) % 4](depth, state, out);
}

static void check_same(const struct outcome *o)
{
    assert_true(o->fast_n >= 0); /* these frames are all of the forms the walk follows */
    assert_int_equal(o->fast_n, o->slow_n);
    assert_true(o->fast_n >= 1);
    for (int i = 1; i < o->fast_n; i++)
        assert_ptr_equal(o->fast[i], o->slow[i]);
}

static void random_chains(uint64_t seed, int chains)
{
    uint64_t state = seed;
    for (int k = 0; k < chains; k++) {
        struct outcome o;
        memset(&o, 0, sizeof o);
        o.max = MAX_FRAMES;
        int depth = (int)(next_random(&state) % 40);
        pick_next(depth, &state, &o);
        check_same(&o);
        /* Whole stacks here: the chain, leaf, main's callers; at least depth + 3 frames. */
        assert_true(o.fast_n >= (depth + 3 < MAX_FRAMES ? depth + 3 : MAX_FRAMES));
    }
}

static void twin_main_thread(void **state)
{
    (void)state;
    random_chains(42, 3000);
}

static void *thread_body(void *arg)
{
    random_chains(*(uint64_t *)arg, 1000);
    return NULL;
}

static void twin_other_thread(void **state)
{
    (void)state;
    pthread_t t;
    uint64_t seed = 7;
    assert_int_equal(pthread_create(&t, NULL, thread_body, &seed), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

static void cut_at_depth(void **state)
{
    (void)state;
    uint64_t s = 99;
    for (int max = 1; max <= 12; max++) {
        struct outcome o;
        memset(&o, 0, sizeof o);
        o.max = max;
        pick_next(20, &s, &o);
        assert_int_equal(o.fast_n, max);
        check_same(&o);
    }
}

/* A frame-pointer function's rule, read from its own CFI at an address past its prologue:
 * the CFA is rbp + 16 and the caller's rbp is saved at CFA - 16. */
__attribute__((noinline)) static uintptr_t inside_fp(void)
{
    uintptr_t here;
    void *volatile frame = __builtin_frame_address(0);
    (void)frame;
    __asm__ volatile("lea 0(%%rip), %0" : "=r"(here));
    return here;
}

static void rule_of_frame_pointer_function(void **state)
{
    (void)state;
    struct cfi_rule r;
    assert_int_equal(cfi_rule_at(inside_fp(), &r), 1);
    assert_int_equal(r.outermost, 0);
    assert_int_equal(r.cfa_is_rbp, 1);
    assert_int_equal(r.cfa_offset, 16);
    assert_int_equal(r.rbp_saved, 1);
    assert_int_equal(r.rbp_offset, -16);
    /* No unwind information at all: not a rule. */
    assert_int_equal(cfi_rule_at(16, &r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(twin_main_thread),
        cmocka_unit_test(twin_other_thread),
        cmocka_unit_test(cut_at_depth),
        cmocka_unit_test(rule_of_frame_pointer_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
