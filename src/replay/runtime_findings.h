/* runtime_findings: the findings a traced process reported while it ran (its FINDING
 * records), with their stacks symbolized by the shim's own rule (symbolizer_stack_frames), for
 * `tlsan replay` to show beside the checker's findings (report_set_runtime). */
#ifndef TLSAN_RUNTIME_FINDINGS_H
#define TLSAN_RUNTIME_FINDINGS_H

#include "replay/trace_read.h"
#include "report/report.h"

#include <stdbool.h>

typedef struct runtime_findings {
    runtime_finding *items;
    size_t n;
    size_t n_suppressed; /* FINDING records a suppression matched: not in items */
    char process[32];    /* "pid N" */
    /* Everything the items point to, owned here. */
    void **owned;
    size_t n_owned, cap_owned;
} runtime_findings;

/* The FINDING records of t that no suppression matched; with `symbolize`, frames get function, file
 * and line from the module files. Independent of t once made. TLSAN_OK, or TLSAN_ERR_NOMEM (*out
 * NULL). */
tlsan_status runtime_findings_read(const trace_data *t, bool symbolize, runtime_findings **out);
void runtime_findings_free(runtime_findings *f);

#endif
