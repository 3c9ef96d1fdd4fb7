/* report.h - runtime findings in the AddressSanitizer layout:
 *
 *   ==PID==ERROR: tlsan: KIND on TENSOR-OR-ADDRESS ...      (the headline)
 *   ... free-form lines and stacks ...
 *   SUMMARY: tlsan: KIND ...
 *
 * A report is built between report_begin() and report_end() into a fixed buffer (no malloc),
 * then written in one write(2) under a lock, recorded in the trace as a FINDING record, and
 * counted. With halt_on_error the process then exits with `exitcode`. Thread-safe. */
#ifndef TLSAN_SHIM_REPORT_H
#define TLSAN_SHIM_REPORT_H

#include <stdint.h>

/* Runtime finding kinds: X(enum suffix, name, description). The static kinds come from the
 * checker's TLSAN_FINDING_KINDS. */
#define SHIM_FINDING_KINDS(X)                                                                      \
    X(HEAP_WRITE_AFTER_FREE, "heap-write-after-free", "a freed heap block changed in quarantine")  \
    X(HEAP_BUFFER_OVERFLOW, "heap-buffer-overflow", "a write past a heap block's end")             \
    X(HEAP_USE_AFTER_FREE, "heap-use-after-free", "an access to a freed large heap block")         \
    X(DOUBLE_FREE, "double-free", "a heap block freed twice")                                      \
    X(INVALID_FREE, "invalid-free", "free of a pointer malloc did not return")                     \
    X(ALLOC_DEALLOC_MISMATCH, "alloc-dealloc-mismatch",                                            \
      "a heap block released by another family (new[] + delete, malloc + delete, new + free)")     \
    X(LIVE_CORRUPTION, "live-corruption", "a live tensor changed with no write of its own")        \
    X(STALE_WRITE, "stale-write", "a released range changed before its next tenant")               \
    X(USE_AFTER_RELEASE, "use-after-release", "an op reads a released tensor")                     \
    X(SLOT_OVERFLOW, "slot-overflow", "a write past the tensor's planned bytes")

enum shim_kind {
#define X(e, n, d) SHIM_KIND_##e,
    SHIM_FINDING_KINDS(X)
#undef X
        SHIM_KIND_COUNT_
};

const char *shim_kind_name(enum shim_kind kind);

struct report;

/* Starts a report of a runtime kind; the headline is "KIND " followed by the formatted
 * text. `symbolize`: 0 inside allocation hooks (frames as module+offset only). Returns NULL
 * when the report cannot be made (re-entered); then skip the other calls. */
struct report *report_begin(enum shim_kind kind, int symbolize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same for a static checker kind by name ("live-overlap"), used at plan load. */
struct report *report_begin_named(const char *kind, int symbolize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Starts the report of a checker finding (a plan handed over, a ggml graph): the headline
 * names its kind, its tensors and `where` ("plan 'x'"), symbolized. NULL as for
 * report_begin(). */
struct tlsan_finding;
struct report *report_begin_finding(const struct tlsan_finding *f, const char *where);
/* Names the finding's tensors and ends its report with a SUMMARY naming them and `where`. */
void report_end_finding(struct report *r, const struct tlsan_finding *f, const char *where);
/* A free-form line (indented by the caller if wanted). */
void report_line(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "TITLE:" then the stack's frames; "(no stack)" for id 0. Also recorded with the finding
 * in the trace under this role. */
void report_stack(struct report *r, const char *title, uint32_t stack_id);
/* The same for the stack of a faulting access (captured in the SIGSEGV handler), whose frame 0
 * is the faulting instruction itself rather than a return address. */
void report_fault_stack(struct report *r, const char *title, uint32_t stack_id);
/* Names a tensor involved (recorded in the trace's FINDING). */
void report_tensor(struct report *r, const char *name);
/* Writes the report ending with "SUMMARY: tlsan: KIND " + formatted text, records and
 * counts it, and halts if asked. */
void report_end(struct report *r, const char *summary_fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Findings reported so far by this process. */
uint64_t report_count(void);
/* In a forked child: frees report slots held by threads that do not exist there, and
 * starts the count of findings again (the parent's are not the child's). */
void report_reinit_in_child(void);

#endif
