/* shim.h - process-wide state of the shim: initialisation, the options, the per-thread
 * re-entry guard, and the switch to pass-through. The only global mutable state in tlsan
 * lives in shim/. */
#ifndef TLSAN_SHIM_SHIM_H
#define TLSAN_SHIM_SHIM_H

#include "core/options.h"

#include <stdatomic.h>
#include <stdbool.h>

/* Initialises once (idempotent, thread-safe): options, report fd, modules, trace.
 * Called from the constructor and lazily from the first hook. */
void shim_init(void);
/* The parsed options (defaults before init). */
static inline const struct shim_options *shim_opts(void);
/* The same, writable: for unit tests that set options without TLSAN_OPTIONS. */
struct shim_options *shim_opts_mut(void);
/* True while the shim traces and checks; false under ASan/Valgrind, before init, or after an
 * internal failure. */
bool shim_active(void);
/* Stops tracing for good after an internal failure: prints one line "tlsan: WHY; passing
 * through" and from then on every hook passes through to the real functions. */
void shim_fail(const char *why);

/* The per-thread guard: shim_enter() returns false when this thread is already inside the
 * shim (a hook re-entered from libunwind, stdio, dlsym...); the caller then takes its plain
 * path. Pair every true with shim_leave(). */
static inline bool shim_enter(void);
static inline void shim_leave(void);

/* The kernel thread id (cached per thread). */
int shim_tid(void);

/* For the allocator hooks (interpose.c): where the shim is in its life. */
enum shim_state {
    SHIM_UNINIT,  /* nothing done yet: call shim_init() */
    SHIM_INITING, /* shim_init() is running: blocks are tracked (once shim_tracking()), no checks */
    SHIM_ACTIVE,  /* tracing and checking */
    SHIM_OFF,     /* passing through for good (ASan, Valgrind, internal failure) */
};
static inline enum shim_state shim_state(void);
/* True once the heap side table is ready: from then on every block is tracked. */
bool shim_tracking(void);

/* Defined by interpose.c (absent from the unit tests): resolves the real allocator
 * functions. shim.c calls it from shim_init and runs its constructor only when present. */
void shim_interpose_resolve(void) __attribute__((weak));

/* The end-of-process checks from the shim's destructor: the quarantine verified (unless
 * shim_exit_quick_checks did), the summary, the trace closed; with findings, an exit status
 * of 0 then becomes the exitcode option (a later exit handler, see shim.c). */
void shim_exit_checks(void);
/* From the program's _exit and _Exit (interpose.c), which skip destructors: the quarantine
 * verified, so a write after free followed by _exit is reported and recorded, and the trace
 * closed with its end record, as at exit; the exit status stays the program's (no summary
 * line either). Nothing in a vfork child (it shares the parent's memory). */
void shim_exit_quick_checks(void);
/* Ends the process at once with status, as _exit does, without going through the hook. */
_Noreturn void shim_real_exit(int status);

/* The fast path of every hook: inline, on the shim's globals (defined in shim.c). */
extern _Atomic int shim_g_state;
extern struct shim_options shim_g_opts;

static inline const struct shim_options *shim_opts(void)
{
    return &shim_g_opts;
}

extern __thread int shim_t_in_shim __attribute__((tls_model("initial-exec")));

static inline enum shim_state shim_state(void)
{
    return (enum shim_state)atomic_load_explicit(&shim_g_state, memory_order_acquire);
}

static inline bool shim_enter(void)
{
    if (shim_t_in_shim)
        return false;
    shim_t_in_shim = 1;
    return true;
}

static inline void shim_leave(void)
{
    shim_t_in_shim = 0;
}

#endif
