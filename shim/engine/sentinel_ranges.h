/* sentinel_ranges.h - the ranges of an arena known to hold the sentinel, each remembering the
 * released tenant that left it (for stale-write reports). */
#ifndef TLSAN_SHIM_ENGINE_SENTINEL_RANGES_H
#define TLSAN_SHIM_ENGINE_SENTINEL_RANGES_H

#include "engine/state.h"

/* References to a released tenant, held by the sentinel ranges it left (p may be NULL). */
void released_tenant_ref(struct released_tenant *p);
/* Released tenants are recycled (one per release: a malloc each would go through the tracked
 * heap). Lock held. */
struct released_tenant *released_tenant_new(void);
void released_tenant_free(struct released_tenant *p);
/* Drops a reference; the last frees it. */
void released_tenant_unref(struct released_tenant *p);
/* First interval ending after lo. */
size_t sentinel_ranges_find(const struct arena *a, uint64_t lo);
/* Removes [lo, hi) from the intervals (its bytes no longer hold a known sentinel). */
void sentinel_ranges_cut(struct arena *a, uint64_t lo, uint64_t hi);
/* Adds [lo, hi), left by released tenant p (NULL: filled at arena create). */
void sentinel_ranges_add(struct arena *a, uint64_t lo, uint64_t hi, struct released_tenant *p);
/* Appends to w->ranges the parts of [lo, hi) that no live root of a (other than self) covers. */
void append_uncovered(struct work *w, struct arena *a, const struct tensor *self, uint64_t lo,
                      uint64_t hi);

#endif
