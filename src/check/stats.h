/* stats: per arena, the largest end offset used (required_bytes) and the largest sum of
 * live root bytes at one step over all paths (lower_bound_bytes), by a sweep over lifetime
 * start and end events counting-sorted by step. Every path is swept when there are at most
 * 64; beyond, the spans live on every path give a bound that is still valid (marked
 * approximate). */
#ifndef TLSAN_STATS_H
#define TLSAN_STATS_H

#include "check/lifetime.h"
#include "report/report.h"

/* Fills s (its arenas array is allocated here and freed with the report). `ps` and `set`
 * are scratch (their arms and members are overwritten). 0, or -1 when out of memory. */
int stats_compute(const tlsan_plan *p, const access_index *ix, path_state *ps, if_set *set,
                  plan_stats *s);

#endif
