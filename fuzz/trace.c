/* libFuzzer target of the trace reader and of replay: any bytes are a trace file. The reader
 * must decode it or refuse with TLSAN_ERR_INVALID at an offset; a trace it decodes must
 * replay into a plan or be refused as invalid, and a plan it gives must be checkable. A
 * crash, a sanitizer report or another outcome is a bug. */
#include "replay/replay.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trace_data *t = NULL;
    tlsan_error err;
    tlsan_status st = trace_read_buffer(data, size, "fuzz.trace", &t, &err);
    if (st == TLSAN_ERR_INVALID) {
        if (!err.where[0] || !err.what[0])
            abort();
        return 0;
    }
    if (st != TLSAN_OK || !t)
        abort();
    tlsan_plan *plan = NULL;
    st = replay_build(t, "fuzz", false, NULL, &plan, &err);
    if (st == TLSAN_OK) {
        fuzz_check_plan(plan);
        tlsan_plan_free(plan);
    } else if (st != TLSAN_ERR_INVALID || !err.what[0]) {
        abort();
    }
    trace_data_free(t);
    return 0;
}
