/* work.h - the per-call scratch of an entry point: findings collected under the lock and reported
 * after it, and the hash jobs run outside it. */
#ifndef TLSAN_SHIM_ENGINE_WORK_H
#define TLSAN_SHIM_ENGINE_WORK_H

#include "engine/state.h"

/* A zeroed finding on w's list, for a constructor of engine/finding.h. */
struct finding *finding_alloc(struct work *w);
/* Root t as a report names it, with its bind stack. */
struct finding_tensor tensor_as_bound(const struct tensor *t);
/* The name of t's arena ("?" when it has none). */
const char *arena_name_of(const struct tensor *t);
/* The one constructor of a live-corruption finding in the engine: root t's bytes were found
 * changed at `moment` (by: the op that read it, or the release / destroy call; via: the view
 * it was read through). Its cause is t's clobber mark (another root's write over it, or an
 * in-place consumer), else a checksum that went from `expect` to `got`. */
void live_corruption_new(struct work *w, const struct tensor *t, enum finding_moment moment,
                         struct finding_call by, const char *via, uint64_t expect, uint64_t got);
/* The sentinel bytes from arena offset `at` on (at most `avail`) as found and as expected. */
void capture_bytes(struct finding_bytes *b, const struct arena *a, uint64_t at, uint64_t avail);
/* Reports the findings (each distinct one once per process), frees the scratch. No lock
 * held: a report symbolizes, and may exit under halt_on_error. */
void work_done(struct work *w);
/* Queues a checksum of root t: verify it against t->hash (a finding at `moment`, by op / via)
 * or, !verify, store it. */
void job_add(struct work *w, struct tensor *t, bool verify, enum finding_moment moment,
             const char *op, uint32_t op_stack, const char *via);
/* Takes each job's epoch: call last, under the lock, after every state change. */
void jobs_seal(struct work *w);
/* Computes the queued checksums. No lock held. */
void jobs_run(struct work *w);
/* Applies the hashes whose tensors did not move meanwhile. Lock held. */
void jobs_apply(struct work *w);
/* A clobbered root that no op reads again was dead, unless it is a graph output: the host
 * reads those after the run. Lock held; t->release_stack set. */
void clobbered_output(struct work *w, struct tensor *t, enum finding_moment moment);

#endif
