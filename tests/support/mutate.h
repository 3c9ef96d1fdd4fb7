/* mutate: hostile variants of a valid input, for the tests that every reader of untrusted
 * bytes (plans, TVM graphs, traces) either accepts them or refuses them with a clear error,
 * never crashes nor gives a partial answer. The libFuzzer targets in fuzz/ explore further;
 * these are the deterministic part that runs in ctest (under ASan in the sanitizer tier).
 *
 * A variant is one of: every truncation (or `max_cuts` evenly spread ones), `flips`
 * single-bit flips, and `swaps` bytes replaced by one of a few bytes that matter to a parser
 * (JSON punctuation, digits, a quote, a backslash, NUL, bytes that are no UTF-8). Positions
 * come from `seed` (splitmix), so a failing variant is reproduced from the seed alone. */
#ifndef TLSAN_TEST_MUTATE_H
#define TLSAN_TEST_MUTATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mutate_plan {
    size_t max_cuts; /* SIZE_MAX: every truncation */
    size_t flips, swaps;
    uint64_t seed;
} mutate_plan;

/* Calls `try` on each variant of in[0, n) (a private copy, freed afterwards; `what` says
 * which variant, e.g. "cut at 17" or "flip of bit 3 of byte 40"). Returns the number of
 * variants tried. Aborts the test (cmocka fail) when out of memory. */
size_t mutate_each(const uint8_t *in, size_t n, const mutate_plan *plan,
                   void (*try)(const uint8_t *bytes, size_t n, const char *what, void *ctx),
                   void *ctx);

#endif
