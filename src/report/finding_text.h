/* finding_text: the one text rendering of a checker finding's body, for the shim.
 *
 * `tlsan check` and `tlsan replay` write whole reports with report_write_text (report.h);
 * the runtime shim writes the checker's findings about a plan handed to tlsan_plan_load, or a
 * ggml graph, inside its own reports (==PID== headline, stacks, SUMMARY; shim/runtime_report.h).
 * Both render the body of a finding, every line between the headline and what follows it,
 * with the same code (report_text.c), so the same finding reads the same everywhere.
 *
 * This header is the report layer's interface to the shim: it names only public types
 * (tlsan/check.h), so the shim does not see the checker's private plan model. */
#ifndef TLSAN_REPORT_FINDING_TEXT_H
#define TLSAN_REPORT_FINDING_TEXT_H

#include "tlsan/check.h"

#include <stddef.h>

/* Receives the text in pieces (not lines, not NUL-terminated: n_bytes counts it); lines end
 * with '\n'. Called synchronously from the renderer. */
typedef void (*report_text_sink)(void *sink_ctx, const char *text, size_t n_bytes);

/* Renders the body of finding f of report r into sink: the message, the shared bytes, the
 * colliding steps with their ops, the tensors with their stacks, causes, suggestions, exactly
 * as `tlsan check` prints them under the headline. `label` is the input's name, shown with
 * tensors' source positions (" at LABEL:LINE:COLUMN"); NULL: "<plan>". Formats on the stack;
 * a piece longer than 511 bytes is formatted on the heap (dropped if that fails). Thread-safe
 * for a report nobody changes meanwhile. */
void report_finding_text_body(const tlsan_report *r, const tlsan_finding *f, const char *label,
                              report_text_sink sink, void *sink_ctx);

#endif
