/* report.h - runtime findings in the AddressSanitizer layout:
 *
 *   ==PID==ERROR: tlsan: KIND on TENSOR-OR-ADDRESS ...      (the headline; WARNING: for a
 *                                                            warning kind of the table)
 *   ... free-form lines and stacks ...
 *   SUMMARY: tlsan: KIND ...
 *
 * A report is built between report_begin() and report_end() into a fixed buffer (no malloc),
 * then written in one write(2) under a lock, recorded in the trace as a FINDING record, and
 * counted. With halt_on_error the process then exits with `exitcode`. Thread-safe. */
#ifndef TLSAN_SHIM_REPORT_H
#define TLSAN_SHIM_REPORT_H

#include <stdint.h>

#include "tlsan/check.h"

struct report;

/* Starts a report of a kind of the one table (TLSAN_FINDING_KINDS in tlsan/check.h); the
 * headline is its name and a space followed by the formatted text. `symbolize`: 0 inside
 * allocation hooks (frames as module+offset only). Returns NULL when the report cannot be
 * made (re-entered); then skip the other calls. */
struct report *report_begin(tlsan_kind kind, int symbolize, const char *fmt, ...)
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
/* A stack's title ("'x' (bytes [0, 64)) read by op 'add' (model.c:118 in block) at") holds
 * names and a source path: up to REPORT_TITLE_BYTES - 1 bytes are kept, in the text, the JSON
 * line and the trace alike (they were cut at 63 once). */
#define REPORT_TITLE_BYTES 320
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
