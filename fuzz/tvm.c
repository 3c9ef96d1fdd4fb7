/* libFuzzer target of the TVM importer: any bytes are a TVM graph JSON. The importer must
 * return a plan or refuse with TLSAN_ERR_INVALID and an error naming the file; a plan it
 * returns must be checkable. A crash, a sanitizer report or another outcome is a bug. */
#include "fuzz_check.h"
#include "tlsan/tvm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tlsan_plan *plan = NULL;
    tlsan_error err;
    tlsan_status st = tlsan_import_tvm_buffer((const char *)data, size, "fuzz.json", &plan, &err);
    if (st == TLSAN_ERR_INVALID) {
        if (strcmp(err.file, "fuzz.json") != 0 || !err.what[0])
            abort();
        return 0;
    }
    if (st != TLSAN_OK || !plan)
        abort();
    fuzz_check_plan(plan);
    tlsan_plan_free(plan);
    return 0;
}
