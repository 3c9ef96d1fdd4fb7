/* symbolizer.h - the frames of a stack with function, file and line, read at report time.
 *
 * The shim symbolizes in the process, when a report is made (never when a stack is captured):
 * src/replay/symbolize.c's libdwfl code, on a libdw.so.1 loaded with dlopen at the first
 * report (a program that never reports never loads it; libtlsan.so does not depend on
 * elfutils), running on the symbolizer's own heap (symheap.h), so that it works inside an
 * allocation hook, a SIGSEGV handler or a broken heap. Without libdw, or with symbolize=0,
 * frames keep module+offset. Thread-safe (one lock). */
#ifndef TLSAN_SHIM_SYMBOLIZER_H
#define TLSAN_SHIM_SYMBOLIZER_H

#include "replay/symbolize.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One frame of a report's stack. The strings live as long as the process. */
struct shim_frame {
    uintptr_t pc;            /* the return address */
    const char *module;      /* the module's path; NULL when no module holds pc */
    uintptr_t module_offset; /* pc - the module's base */
    symbol_frame sym;        /* sym.function NULL when unknown */
};

/* The frames of depot stack `stack_id` (innermost first, inlined functions as frames of their
 * own at the same pc), with the wrappers at its start dropped (symbol_frame_is_wrapper: the
 * first frame is the program's call). `exact_first`: frame 0 is the faulting instruction
 * itself (a stack captured in a signal handler), not a return address. Returns how many were
 * stored, at most max. */
size_t symbolizer_stack(uint32_t stack_id, bool exact_first, struct shim_frame *out, size_t max);
/* Fork handlers (shim.c): the lock (taken before the fork, so no thread is inside libdw). */
void symbolizer_lock(void);
void symbolizer_unlock(void);
void symbolizer_reinit_in_child(void);

#endif
