/* plan_query.h - what the runtime shim needs of a checked plan, and nothing more.
 *
 * The shim (shim/engine/) checks a plan handed to tlsan_plan_load with the public API
 * (tlsan/check.h) and renders the findings with src/report/finding_text.h. Beyond that it asks
 * one question of the plan's layout, answered here so that it never sees the checker's private
 * plan model (check/plan.h): which storage roots share bytes with another root (checksum=shared
 * hashes those). This header names only public types; it is the checker's whole interface to
 * the shim besides the public API. */
#ifndef TLSAN_CHECK_PLAN_QUERY_H
#define TLSAN_CHECK_PLAN_QUERY_H

#include "tlsan/plan.h"

/* Calls visit(ctx, NAME) for every storage root of the finalized plan p whose bytes intersect
 * another root's in the same arena (a root may be named more than once; roots of no bytes never
 * are). NAME lives as long as p. A sweep in offset order per arena: O(n log n) for n roots.
 * Returns 0, or -1 when out of memory (then some roots may not have been named). */
int plan_query_shared_roots(const tlsan_plan *p, void (*visit)(void *ctx, const char *name),
                            void *ctx);

#endif
