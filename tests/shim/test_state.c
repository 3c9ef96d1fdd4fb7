/* state: the written spans of a root (tensor_written, tensor_has_unwritten), which decide
 * read-before-write at run time, against a brute-force twin: one flag per byte, on thousands
 * of random sequences of writes and reads. The spans must also stay sorted, disjoint and
 * merged (a root written whole is one span, however many views wrote it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/state.h"
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROOT_OFFSET 1000 /* the root's first byte in its arena */
#define ROOT_BYTES  96
#define TRIALS      5000

/* xorshift64: a fixed sequence, so a failure repeats. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A random [lo, hi) inside the root, sometimes empty, often a whole or half "view". */
static void random_range(uint64_t *state, uint64_t *lo, uint64_t *hi)
{
    uint64_t a = next_random(state) % (ROOT_BYTES + 1), b = next_random(state) % (ROOT_BYTES + 1);
    switch (next_random(state) % 4) {
    case 0:
        a = 0, b = ROOT_BYTES;
        break;
    case 1:
        a = (next_random(state) % 2) * (ROOT_BYTES / 2), b = a + ROOT_BYTES / 2;
        break;
    default:
        break;
    }
    *lo = ROOT_OFFSET + (a < b ? a : b);
    *hi = ROOT_OFFSET + (a < b ? b : a);
}

static void spans_match_brute_force(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    struct tensor t;
    memset(&t, 0, sizeof t);
    t.off = ROOT_OFFSET;
    t.size = ROOT_BYTES;
    for (int trial = 0; trial < TRIALS; trial++) {
        bool written[ROOT_BYTES] = {false};
        t.n_written = 0; /* a new bind */
        int n_ops = 1 + (int)(next_random(&seed) % 8);
        for (int op = 0; op < n_ops; op++) {
            uint64_t lo, hi;
            random_range(&seed, &lo, &hi);
            if (next_random(&seed) % 2) {
                tensor_written(&t, lo, hi);
                for (uint64_t b = lo; b < hi; b++)
                    written[b - ROOT_OFFSET] = true;
            } else {
                bool want = false;
                for (uint64_t b = lo; b < hi; b++)
                    want |= !written[b - ROOT_OFFSET];
                if (tensor_has_unwritten(&t, lo, hi) != want)
                    fail_msg("trial %d: read [%llu, %llu) unwritten %d, brute force %d", trial,
                             (unsigned long long)lo, (unsigned long long)hi, !want, want);
            }
            for (size_t i = 0; i < t.n_written; i++) {
                assert_true(t.written[i].lo < t.written[i].hi);
                if (i > 0)
                    assert_true(t.written[i - 1].hi < t.written[i].lo); /* merged */
                for (uint64_t b = t.written[i].lo; b < t.written[i].hi; b++)
                    assert_true(written[b - ROOT_OFFSET]);
            }
        }
        size_t n_bytes = 0;
        for (size_t i = 0; i < t.n_written; i++)
            n_bytes += t.written[i].hi - t.written[i].lo;
        size_t n_brute = 0;
        for (size_t b = 0; b < ROOT_BYTES; b++)
            n_brute += written[b];
        assert_int_equal(n_bytes, n_brute);
    }
    free(t.written);
}

static void written_whole_through_views_is_one_span(void **state)
{
    (void)state;
    struct tensor t;
    memset(&t, 0, sizeof t);
    t.off = 256;
    t.size = 256;
    tensor_written(&t, 384, 512);
    assert_true(tensor_has_unwritten(&t, 256, 512));
    assert_false(tensor_has_unwritten(&t, 400, 512));
    tensor_written(&t, 256, 300);
    assert_int_equal(t.n_written, 2);
    assert_true(tensor_has_unwritten(&t, 256, 384));
    tensor_written(&t, 300, 384);
    assert_int_equal(t.n_written, 1);
    assert_int_equal(t.written[0].lo, 256);
    assert_int_equal(t.written[0].hi, 512);
    assert_false(tensor_has_unwritten(&t, 256, 512));
    assert_false(tensor_has_unwritten(&t, 300, 300)); /* nothing read */
    free(t.written);
}

int main(void)
{
    setenv("TLSAN_OPTIONS", "exitcode=0:trace=0", 1);
    shim_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spans_match_brute_force),
        cmocka_unit_test(written_whole_through_views_is_one_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
