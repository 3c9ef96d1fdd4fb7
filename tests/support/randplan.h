/* randplan: small random plans for differential testing (tests/check/test_differential.c).
 *
 * Plans are built with the public builder (tlsan_plan_add_* and tlsan_plan_finalize) and are
 * always valid; they are drawn so that the interesting cases are frequent: few byte slots
 * (roots collide often), views, ops that read and write the same tensor, inputs, outputs
 * and constants, declared lifetimes, branches, loops, in-place declarations, several
 * streams with record/wait/sync, `after` edges and the dataflow schedule. The same seed
 * always gives the same plan (own PRNG, no global state). */
#ifndef TLSAN_TEST_RANDPLAN_H
#define TLSAN_TEST_RANDPLAN_H

#include "tlsan/plan.h"

#include <stdint.h>

/* Features a caller may switch off (e.g. to shrink a failing case). */
enum {
    RANDPLAN_NO_BRANCHES = 1u << 0,
    RANDPLAN_NO_LOOPS = 1u << 1,
    RANDPLAN_NO_STREAMS = 1u << 2, /* one stream, no synchronisation ops */
    RANDPLAN_NO_DATAFLOW = 1u << 3,
    RANDPLAN_NO_VIEWS = 1u << 4,
    RANDPLAN_NO_LAYOUT = 1u << 5, /* no bounds, alignment, memory or dtype findings drawn */
    RANDPLAN_NO_INPLACE = 1u << 6,
    RANDPLAN_NO_AFTER = 1u << 7,
};

typedef struct randplan_opts {
    unsigned disable;   /* RANDPLAN_NO_* bits */
    unsigned max_ops;   /* 2..max_ops ops; 0 means 10 (at most 16) */
    unsigned max_roots; /* 2..max_roots roots; 0 means 8 (at most 8) */
    unsigned max_ifs;   /* 0..max_ifs conditionals; 0 means 3 (at most 6) */
} randplan_opts;

/* Makes the plan of `seed` (opt may be NULL for the defaults). Returns a finalized plan the
 * caller frees with tlsan_plan_free(), or NULL when out of memory or when the builder
 * refused the plan (a generator bug: then `why`, when not NULL, holds the builder's error,
 * formatted, up to why_bytes). */
tlsan_plan *randplan_make(uint64_t seed, const randplan_opts *opt, char *why, size_t why_bytes);

#endif
