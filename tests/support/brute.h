/* brute: a deliberately slow reference checker, written straight from
 * ../shared/plan-format.md and independent of src/check/check.c and its modules.
 *
 * It enumerates every branch path, builds every root's lifetime on each path, compares
 * every pair of roots and takes the full transitive closure of happens-before per path.
 * It is meant for small plans (tests/check/test_differential.c compares it with tlsan_check()
 * on thousands of random ones) and gives up (-1) when a plan has too many paths or ops.
 *
 * Only the finding kinds and the names they carry are computed (what the shared cases'
 * .expect files list); steps, bytes and paths are not. */
#ifndef TLSAN_TEST_BRUTE_H
#define TLSAN_TEST_BRUTE_H

#include "tlsan/check.h"
#include "tlsan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One finding: its kind and the names involved, sorted by strcmp. The names point into the
 * checked plan (it must outlive the findings). */
typedef struct brute_finding {
    tlsan_kind kind;
    size_t n_tensors;
    const char *tensors[2];
} brute_finding;

/* A set of findings, kept sorted by (kind, names) and free of duplicates. */
typedef struct brute_findings {
    brute_finding *v;
    size_t n, cap;
} brute_findings;

/* Adds a finding (names in any order; NULL for the second when there is one). Returns 0
 * when added, 1 when the set already held it (it is not added twice), -1 when out of
 * memory. */
int brute_findings_add(brute_findings *set, tlsan_kind kind, const char *t0, const char *t1);
/* Frees the set's storage and empties it. */
void brute_findings_clear(brute_findings *set);
/* True when both sets hold the same findings. */
int brute_findings_equal(const brute_findings *a, const brute_findings *b);
/* The spec's name of a kind ("live-overlap"), "unknown" when out of range. */
const char *brute_kind_name(tlsan_kind kind);
/* Parses a kind name; TLSAN_KIND_COUNT_ when unknown. */
tlsan_kind brute_kind_from_name(const char *name);
/* Prints one line per finding, "kind name [name]", like the .expect files. */
void brute_findings_print(const brute_findings *set, FILE *out);

/* Writes a finalized plan as plan-format JSON (own writer, for failure messages). */
void brute_plan_dump(const tlsan_plan *plan, FILE *out);

/* Checks a finalized plan by brute force. *out must be empty (zero-initialised) and receives
 * every finding of the plan (cache-key-collision is not computed: it concerns caches).
 * Returns 0, or -1 when the plan is too large for brute force (more than 4096 paths or 256
 * ops) or an allocation failed. Not thread-safe on the same `out`; reads the plan only. */
int brute_check(const tlsan_plan *plan, brute_findings *out);
/* brute_check() with tlsan_check_options.order_reads: a read of a root that an earlier op on
 * the path writes, but that no earlier write of the root happens before, is
 * read-before-write. */
int brute_check_with(const tlsan_plan *plan, bool order_reads, brute_findings *out);

#endif
