/* checker_report.h - the checker's findings in the shim's reports: a plan handed to
 * tlsan_plan_load (shim/engine/) or a ggml graph checked as a plan (shim/ggml/).
 *
 * The headline and SUMMARY are the shim's (report_begin_finding / report_end_finding,
 * runtime_report.h); the body between them is the checker's own text rendering
 * (src/report/finding_text.h), the lines `tlsan check` prints for the same finding. Called at
 * plan load or graph check, where the checker has just allocated: the body may allocate for
 * an overlong line. */
#ifndef TLSAN_SHIM_CHECKER_REPORT_H
#define TLSAN_SHIM_CHECKER_REPORT_H

#include "tlsan/check.h"

struct report;

/* Appends to r the body of finding f of rep, line by line (a line longer than the shim's
 * line buffer, 1023 bytes, is cut there). label: the input's name, shown with tensors' source
 * positions. */
void checker_report_body(struct report *r, const tlsan_report *rep, const tlsan_finding *f,
                         const char *label);

#endif
