/* libFuzzer target of the plan reader: any bytes are a plan file (a plan or a plan cache).
 * The reader must return one of them or refuse with TLSAN_ERR_INVALID and an error naming the
 * file and what is wrong; what it returns must be checkable, and its report must render in
 * every format. A crash, a sanitizer report or another outcome is a bug. */
#include "report/report.h"
#include "tlsan/check.h"
#include "tlsan/plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
    static FILE *f;
    if (!f && !(f = fopen("/dev/null", "w")))
        abort();
    return f;
}

static void render(const tlsan_report *r)
{
    report_text_options text = {0};
    const char *label = "fuzz.json";
    if (report_write_text(r, label, &text, sink()) != 0 ||
        report_write_json(r, label, sink()) != 0 ||
        report_write_sarif(&r, &label, NULL, 1, sink()) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_error err;
    tlsan_status st = tlsan_read_buffer((const char *)data, size, "fuzz.json", &plan, &cache, &err);
    if (st == TLSAN_ERR_INVALID) {
        /* an invalid input is refused with its file and what is wrong */
        if (strcmp(err.file, "fuzz.json") != 0 || !err.what[0] ||
            report_write_json_error("fuzz.json", &err, sink()) != 0)
            abort();
        return 0;
    }
    if (st != TLSAN_OK || !plan == !cache)
        abort();
    tlsan_report *report = NULL;
    tlsan_check_options opt = {.max_paths = 64};
    st = plan ? tlsan_check(plan, &opt, &report) : tlsan_check_cache(cache, &opt, &report);
    if (st != TLSAN_OK)
        abort();
    render(report);
    tlsan_report_free(report);
    tlsan_plan_free(plan);
    tlsan_cache_free(cache);
    return 0;
}
