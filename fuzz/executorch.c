/* libFuzzer target of the ExecuTorch importer: any bytes are a .pte. The importer must
 * return a plan per method or refuse with TLSAN_ERR_INVALID, and a plan it returns must be
 * checkable; a crash, a sanitizer report or another status is a bug. */
#include "fuzz_check.h"
#include "tlsan/executorch.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlsan_plan **plans = NULL;
    size_t n = 0;
    tlsan_error err;
    tlsan_status st =
        tlsan_import_executorch_buffer(data, size, "fuzz.pte", NULL, &plans, &n, &err);
    if (st != TLSAN_OK && st != TLSAN_ERR_INVALID)
        abort();
    for (size_t i = 0; i < n; i++)
        fuzz_check_plan(plans[i]);
    tlsan_executorch_plans_free(plans, n);
    return 0;
}
