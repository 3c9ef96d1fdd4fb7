/* arena.h - arenas: create, destroy, and the heap hook that drops an arena whose memory is freed.
 */
#ifndef TLSAN_SHIM_ENGINE_ARENA_H
#define TLSAN_SHIM_ENGINE_ARENA_H

#include "engine/state.h"

/* Drops the arenas whose memory was freed (mutex held): their tensors are unbound without
 * reading a byte, their lists go, and they stay on the list, dead, only so that their
 * tlsan_arena_destroy is quietly accepted (the warning was given at the free). */
void arena_reap_freed(void);

#endif
