/* planner.h - the lifetime-based arena planner. It derives the interval [first, free] of every
 * storage root from the op list (views count as accesses of their root, the loop body keeps
 * carried values live across iterations, both branch arms count, outputs live to the end),
 * merges in-place pairs, and places the roots of each arena by greedy-by-size best-fit
 * (TFLite's "greedy by size" strategy): biggest first, each into the smallest gap left by the
 * already placed roots it may not share bytes with. Two roots may share bytes when their
 * intervals are disjoint and the earlier one's release happens before the later one's first
 * access under the streams' event order. --inject bugs change exactly one of these rules. */
#ifndef ENGINE_PLANNER_H
#define ENGINE_PLANNER_H

#include "graph.h"

/* Fills every root's first/last/free_step/per_iter/inplace_of/offset and g->arena_bytes. */
void planner_run(struct graph *g);

/* 1 when op instance `a` (index in graph_walk order) happens before instance `b` under the
 * stream order (program order per stream, record->wait, sync); uses the planner's schedule,
 * i.e. with every sync op, also the ones the executor drops. Valid after planner_run(). */
int planner_hb_inst(int a, int b);

#endif
