/* plan_write: a finalized plan back to the plan format (JSON), resolving indices to names.
 *
 * tlsan_plan_write() (tlsan/plan.h) writes one plan to a FILE. The two calls below write into
 * a generator the caller owns, so a plan cache writer can emit
 * {"tlsan_plan_cache": 1, "plans": [{"key": ..., <members>}, ...]} around several plans. */
#ifndef TLSAN_PLAN_WRITE_PRIV_H
#define TLSAN_PLAN_WRITE_PRIV_H

#include "check/plan.h"

#include <yajl/yajl_gen.h>

/* Writes `plan` (finalized) as one JSON object into `g`. Keys whose value is the format's
 * default are left out. Returns TLSAN_OK, TLSAN_ERR_ARG for a NULL or unfinalized plan, or
 * TLSAN_ERR_IO when the generator fails. */
tlsan_status plan_write_gen(const tlsan_plan *plan, yajl_gen g);

/* Like plan_write_gen() without the enclosing braces: the caller has opened a map (and may
 * have written members of its own, such as a cache's "key") and closes it afterwards. */
tlsan_status plan_write_members(const tlsan_plan *plan, yajl_gen g);

#endif
