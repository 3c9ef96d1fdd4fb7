/* cfi.h - the fast stack walk: frames unwound from the call frame information (.eh_frame)
 * with one rule per code address, remembered.
 *
 * libunwind's unw_backtrace costs about 130 ns even for two frames (initialising a cursor,
 * its per-thread cache), and an allocation-heavy program takes two stacks per block: that
 * was a quarter of what the shim's defaults cost. Most frames need only three registers to
 * unwind: the rule at a code address says the frame's canonical frame address (CFA) is rsp
 * or rbp plus a constant, the return address is at CFA - 8, and the caller's rbp is either
 * still in rbp or saved at CFA + a constant. cfi_backtrace reads that rule from the
 * module's .eh_frame (found with _dl_find_object and .eh_frame_hdr's sorted table), keeps it
 * in a table keyed by address, and walks with it: a few nanoseconds a frame once the
 * addresses are known. Any frame whose rule is not of that form (a signal frame, a CFA
 * computed by an expression, no unwind information) makes it answer "not for me", and the
 * caller takes libunwind's walk instead, so a stack is always what libunwind would give.
 * x86_64 only (elsewhere it always declines). */
#ifndef TLSAN_SHIM_CFI_H
#define TLSAN_SHIM_CFI_H

#include <stdint.h>

/* The calling thread's stack as unw_backtrace gives it when called where cfi_backtrace is
 * called: frames[0] an address in the caller (after the call), then the return addresses
 * outward, at most max frames. Returns the count, or -1 when some frame cannot be unwound
 * this way (take libunwind's walk). Never allocates, takes no lock, thread-safe; learning
 * a new address's rule reads only the loaded modules' .eh_frame. */
int cfi_backtrace(void **frames, int max);

/* The rule for one code address, as cfi_backtrace uses it (exposed for the unit test):
 * true and the fields set when the frame at pc can be unwound with it. */
struct cfi_rule {
    int outermost;  /* the return address is undefined: the last frame (_start, clone) */
    int cfa_is_rbp; /* CFA = (cfa_is_rbp ? rbp : rsp) + cfa_offset */
    int32_t cfa_offset;
    int rbp_saved; /* the caller's rbp is at CFA + rbp_offset; else rbp is unchanged */
    int32_t rbp_offset;
};
int cfi_rule_at(uintptr_t pc, struct cfi_rule *rule);

#endif
