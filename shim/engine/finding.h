/* finding.h - the run-time findings of the engine runtime (shim/engine/) and the ggml adapter
 * (shim/ggml/): what each kind's report says, in one place. */
#ifndef TLSAN_SHIM_ENGINE_FINDING_H
#define TLSAN_SHIM_ENGINE_FINDING_H

#include <stdint.h>

struct report;

/* Starts a live-corruption report: the one headline of the kind,
 * "live-corruption on tensor 'T' in arena 'A' bytes [LO, HI)", followed by " in WHERE" when
 * where is not NULL (a ggml graph). NULL as for report_begin(). */
struct report *live_corruption_begin(const char *tensor, const char *arena, uint64_t lo_bytes,
                                     uint64_t hi_bytes, const char *where);

#endif
