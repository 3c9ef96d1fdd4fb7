/* shapeplan: small random plans of the benchmark's shapes (bench/gen_plan.c --shape), for the
 * differential tests: a ring of streams handing tensors on by events with many tenants per
 * byte (streams), the same with conditional tenants and conditional synchronisation
 * (branchy), a dataflow chain over reused slots (dataflow), and the ring read through chains
 * of views (views), a recorded engine run again and again on worker streams fed by the host
 * (engine: many tenants per byte, host records and waits, as replay rebuilds a run). Unlike the
 * benchmark's plans they are not clean by construction: waits are dropped, chains broken and stray
 * reads added at random, so that findings are frequent. The same seed always gives the same plan.
 */
#ifndef TLSAN_TEST_SHAPEPLAN_H
#define TLSAN_TEST_SHAPEPLAN_H

#include "tlsan/plan.h"

#include <stddef.h>
#include <stdint.h>

typedef enum shapeplan_kind {
    SHAPEPLAN_STREAMS,
    SHAPEPLAN_BRANCHY,
    SHAPEPLAN_DATAFLOW,
    SHAPEPLAN_VIEWS,
    SHAPEPLAN_ENGINE,
} shapeplan_kind;

/* A finalized plan the caller frees with tlsan_plan_free(), or NULL when out of memory or
 * when the builder refused it (a generator bug: `why`, when not NULL, then holds the
 * builder's error). */
tlsan_plan *shapeplan_make(uint64_t seed, shapeplan_kind kind, char *why, size_t why_bytes);

#endif
