/* cache: a plan cache (plan-format.md, "Plan caches") behind tlsan/plan.h's tlsan_cache.
 *
 * Each plan is stored with its key in a canonical text form, so that two keys are equal
 * as JSON values exactly when their canonical texts are equal byte for byte: object members
 * sorted, strings escaped one fixed way, integer literals as plain decimals ("-0" is "0"),
 * other number literals as normalized decimal scientific notation (1.0 and 1.00 both become
 * "1e0", which no integer literal can equal). The canonical text is itself valid JSON, so
 * messages can quote it. */
#ifndef TLSAN_CACHE_PRIV_H
#define TLSAN_CACHE_PRIV_H

#include "tlsan/check.h"
#include "tlsan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_common.h>

/* The allocator of the reader and the cache: malloc/realloc/free unless a test injects
 * failures. The returned table is static and read-only. */
const yajl_alloc_funcs *cache_default_alloc(void);

/* ---- canonical keys, built value by value (from the streaming reader or from text) ---- */

typedef struct ckey ckey;

/* Creates an empty builder; NULL when out of memory. */
ckey *ckey_new(const yajl_alloc_funcs *alloc);
void ckey_free(ckey *k);
/* Forgets any value in progress, keeps the buffers. */
void ckey_reset(ckey *k);

/* Feed one JSON value in document order. Each returns 0, -1 when out of memory, or 1 when
 * ckey_end_map() finds a repeated member name. Numbers come as their literal text. */
int ckey_null(ckey *k);
int ckey_bool(ckey *k, bool v);
int ckey_number(ckey *k, const char *text, size_t len);
int ckey_string(ckey *k, const char *s, size_t len);
int ckey_start_map(ckey *k);
int ckey_map_key(ckey *k, const char *s, size_t len);
int ckey_end_map(ckey *k);
int ckey_start_array(ckey *k);
int ckey_end_array(ckey *k);
/* True once a whole top-level value has been fed. */
bool ckey_done(const ckey *k);
/* Hands the canonical text of the finished value to the caller (NUL-terminated, allocated
 * with the builder's allocator) and resets the builder; NULL when out of memory. */
char *ckey_take(ckey *k, size_t *len);

/* ---- the cache ---- */

struct tlsan_cache {
    yajl_alloc_funcs alloc; /* allocates the arrays and keys below */
    tlsan_plan **plans;     /* owned, finalized */
    char **keys;            /* canonical key texts, owned */
    size_t *key_lens;
    size_t n_plans, cap_plans;
};

/* Creates an empty cache using `alloc` (NULL: malloc) for its own memory. */
tlsan_cache *cache_create_with(const yajl_alloc_funcs *alloc);
/* Appends a finalized plan with its canonical key (allocated with the cache's allocator).
 * Takes ownership of both on 0 only; -1 when out of memory. */
int cache_push(tlsan_cache *cache, tlsan_plan *plan, char *canon_key, size_t canon_key_len);
/* The canonical key text of plan `index` (NUL-terminated), NULL when out of range. */
const char *cache_key(const tlsan_cache *cache, size_t index);

/* Appends one cache-key-collision finding per pair of plans with equal keys whose tensors
 * differ (plan_index the earlier plan, other_plan_index the later, tensors the differing
 * names sorted by strcmp). Plans are grouped by a hash of their keys, so only plans with
 * equal keys are ever compared. Returns 0, or -1 when out of memory. */
int cache_collisions(const tlsan_cache *cache, tlsan_report *report);

#endif
