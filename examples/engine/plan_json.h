/* plan_json.h - writes the planned layout as a plan in the tlsan plan format (arenas, roots
 * with offset and the lifetime the planner assumed, views, ops in execution order with reads,
 * writes, in-place pairs, streams, sync ops, the branch and the loop). The plan describes the
 * ops exactly as the executor runs them, whatever the planner got wrong. */
#ifndef ENGINE_PLAN_JSON_H
#define ENGINE_PLAN_JSON_H

#include "graph.h"

#include <stddef.h>

/* A NUL-terminated JSON text (malloc'd; *len is its length), or NULL when out of memory. */
char *plan_json(const struct graph *g, size_t *len);

#endif
