/* What every fuzz target does with a plan it was given: check it, which must succeed. */
#ifndef TLSAN_FUZZ_CHECK_H
#define TLSAN_FUZZ_CHECK_H

#include "tlsan/check.h"

#include <stdlib.h>

static inline void fuzz_check_plan(const tlsan_plan *plan)
{
    tlsan_report *report = NULL;
    tlsan_check_options opt = {.max_paths = 64};
    if (tlsan_check(plan, &opt, &report) != TLSAN_OK)
        abort();
    tlsan_report_free(report);
}

#endif
