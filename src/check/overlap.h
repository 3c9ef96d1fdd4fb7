/* overlap: find the pairs of storage roots that could collide, without comparing all pairs.
 *
 * overlap_live_pairs() sweeps over steps: roots enter at the first step of their hull
 * lifetime (the union over all paths) and leave after its last; the roots alive at a step
 * are kept per arena in an interval treap over byte ranges (a randomized balanced search
 * tree keyed by start offset, each node annotated with the largest end offset in its
 * subtree, as in the augmented interval trees of Cormen et al., "Introduction to
 * Algorithms", 3rd ed., section 14.3; treaps: Seidel and Aragon, "Randomized search trees",
 * Algorithmica 1996). Each entering root asks the treap for every live root whose bytes it
 * shares: O((N + K) log N) for N roots and K reported pairs. Step keys are bounded by the
 * number of ops, so both event orders come from a counting sort.
 *
 * overlap_segments() cuts each arena into elementary byte segments and lists the roots of
 * each, for the reuse-order questions along tenant chains (check.c). */
#ifndef TLSAN_OVERLAP_H
#define TLSAN_OVERLAP_H

#include "check/lifetime.h"

/* Called once per unordered pair (a != b, both storage roots of one arena). Return 0 to go
 * on, non-zero to stop (the value is passed back). */
typedef int (*overlap_pair_fn)(void *ctx, uint32_t a, uint32_t b);

/* Roots with no bytes or an empty hull take no part. Returns 0, the callback's non-zero
 * value, or -1 when out of memory. */
int overlap_live_pairs(const tlsan_plan *p, const access_index *ix, overlap_pair_fn fn, void *ctx);

/* Called once per elementary byte segment [start, end) of an arena (a maximal range over
 * which the set of covering roots does not change) that two or more roots cover, with those
 * roots sorted by the first step of their hull (then by index). Return 0 to go on. */
typedef int (*overlap_segment_fn)(void *ctx, uint64_t start, const uint32_t *roots, size_t n);

/* Every segment shared by two or more roots. Each root is listed in every segment it
 * covers: the work is O(N log N + S) where S, the sum of those lists, is N plus at most
 * four times the pairs that share bytes, and about N for planner-made layouts. */
int overlap_segments(const tlsan_plan *p, const access_index *ix, overlap_segment_fn fn, void *ctx);

/* A counter of a root for one chain (overlap_max_sweep()). */
typedef uint32_t (*overlap_counter_fn)(void *ctx, uint32_t root, uint32_t chain);

/* For each chain 0..n_chains-1, sweeps the roots in first-step order: once root e's hull
 * has ended before root l's first step, done(e, chain) is raised into e's bytes, and l is
 * marked in `failed` (one byte per tensor, zeroed by the caller) when the largest value
 * raised over any of l's bytes exceeds bound(l, chain). The values over the bytes are a
 * range-max segment tree over the elementary byte segments: O(n_chains N log N). Returns 0,
 * or -1 when out of memory. */
int overlap_max_sweep(const tlsan_plan *p, const access_index *ix, uint32_t n_chains,
                      overlap_counter_fn done, overlap_counter_fn bound, void *ctx,
                      uint8_t *failed);

/* Bytes [start, end) of a root in its arena, end saturated at UINT64_MAX. */
static inline uint64_t root_end(const tensor_rec *t)
{
    return t->offset_bytes > UINT64_MAX - t->bytes ? UINT64_MAX : t->offset_bytes + t->bytes;
}

#endif
