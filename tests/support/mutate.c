/* mutate.c - hostile variants of a valid input (mutate.h). */
#include "support/mutate.h"

#include "support/splitmix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Bytes a parser decides on: structure, numbers, strings, escapes, and bytes that are not
 * text (NUL, a lone continuation byte, a byte that starts no UTF-8 sequence). */
static const uint8_t k_swaps[] = {'{', '}', '[', ']', ',', ':', '"',  '\\', '-', '0',
                                  '9', 'e', '.', ' ', 'u', 0,   0x80, 0xff, 'n', 't'};

size_t mutate_each(const uint8_t *in, size_t n, const mutate_plan *plan,
                   void (*try)(const uint8_t *bytes, size_t n, const char *what, void *ctx),
                   void *ctx)
{
    /* One more byte than the input, so that a zero-length variant still has a buffer. */
    uint8_t *m = malloc(n + 1);
    if (!m)
        fail_msg("mutate: out of memory");
    char what[96];
    size_t tried = 0;
    size_t step = plan->max_cuts && n > plan->max_cuts ? n / plan->max_cuts : 1;
    for (size_t cut = 0; cut < n; cut += step, tried++) {
        memcpy(m, in, cut);
        snprintf(what, sizeof what, "cut at %zu", cut);
        try(m, cut, what, ctx);
    }
    uint64_t s = plan->seed;
    for (size_t i = 0; n && i < plan->flips; i++, tried++) {
        memcpy(m, in, n);
        size_t bit = (size_t)splitmix_below(&s, (uint64_t)n * 8);
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        snprintf(what, sizeof what, "flip of bit %zu of byte %zu", bit % 8, bit / 8);
        try(m, n, what, ctx);
    }
    for (size_t i = 0; n && i < plan->swaps; i++, tried++) {
        memcpy(m, in, n);
        size_t at = (size_t)splitmix_below(&s, n);
        uint8_t b = k_swaps[splitmix_below(&s, sizeof k_swaps)];
        m[at] = b;
        snprintf(what, sizeof what, "byte %zu set to 0x%02x", at, b);
        try(m, n, what, ctx);
    }
    free(m);
    return tried;
}
