/* op.h - what the ops in flight tell the other modules (op.c): a release or a bind that
 * happens while an op that accesses the bytes has not ended. */
#ifndef TLSAN_SHIM_ENGINE_OP_H
#define TLSAN_SHIM_ENGINE_OP_H

#include "engine/state.h"

/* Root t (still bound, t->release_stack set) is being released: every op in flight that
 * accesses its tenant, begun on another thread, is use-after-release (nothing can order the
 * end of an op that has not ended before the release). Returns how many ops were reported.
 * Lock held. */
size_t ops_in_flight_release(struct work *w, const struct tensor *t);
/* Root u was just bound: an op in flight, begun on another thread, that accesses bytes of u
 * through a tenant released meanwhile is unordered-reuse (unless its release was reported).
 * Lock held. */
void ops_in_flight_bind(struct work *w, const struct tensor *u);

#endif
