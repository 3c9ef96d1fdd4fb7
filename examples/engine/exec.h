/* exec.h - runs a planned graph in its arenas, with the tlsan annotations: arenas created,
 * the plan handed over, every root bound when it becomes live and released right after the
 * step the planner chose, views bound with their root, every kernel wrapped in op begin/end.
 * Two executors: sequential (the host runs every op) and a pool of two worker threads, one
 * per stream, that run the stream queues the host fills, with events between them. */
#ifndef ENGINE_EXEC_H
#define ENGINE_EXEC_H

#include "graph.h"

#include <stddef.h>

struct runtime;

/* Allocates the arenas, announces them and the plan, binds and loads the constants and the
 * inputs. NULL on allocation failure. */
struct runtime *exec_setup(struct graph *g, const char *plan, size_t plan_len);
/* Runs the graph once with the executor of g->mode: binds and loads the inputs, runs every
 * op. 0 on success. The outputs stay bound until exec_end_run() or exec_teardown(). */
int exec_run(struct runtime *rt);
/* Releases the outputs (and whatever else is still bound) before the next run. */
void exec_end_run(struct runtime *rt);
/* Address of tensor `name` after the run (outputs stay bound until exec_teardown). */
const float *exec_tensor(const struct runtime *rt, const char *name, size_t *bytes);
/* Ends the arenas and frees everything. */
void exec_teardown(struct runtime *rt);

#endif
