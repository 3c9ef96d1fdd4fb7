/* shim.h - process-wide state of the shim: initialisation, the options, the per-thread
 * re-entry guard, and the switch to pass-through. The only global mutable state in tlsan
 * lives in shim/. */
#ifndef TLSAN_SHIM_SHIM_H
#define TLSAN_SHIM_SHIM_H

#include "options.h"

#include <stdbool.h>

/* Initialises once (idempotent, thread-safe): options, report fd, modules, trace.
 * Called from the constructor and lazily from the first hook. */
void shim_init(void);
/* The parsed options (defaults before init). */
const struct shim_options *shim_opts(void);
/* True while the shim traces and checks; false under ASan/Valgrind, before init, or after an
 * internal failure. */
bool shim_active(void);
/* Stops tracing for good after an internal failure: prints one line "tlsan: WHY; passing
 * through" and from then on every hook passes through to the real functions. */
void shim_fail(const char *why);

/* The per-thread guard: shim_enter() returns false when this thread is already inside the
 * shim (a hook re-entered from libunwind, stdio, dlsym...); the caller then takes its plain
 * path. Pair every true with shim_leave(). */
bool shim_enter(void);
void shim_leave(void);

/* The kernel thread id (cached per thread). */
int shim_tid(void);

#endif
