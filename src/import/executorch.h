/* executorch: ExecuTorch programs (.pte) to plans (public API in tlsan/executorch.h).
 *
 * The internal entry point takes options used by tests: placement overrides move a planned
 * tensor to another memory id and offset before the plan is built, which is how the tests
 * plant the planner bug "two live tensors share bytes" into real programs. */
#ifndef TLSAN_EXECUTORCH_PRIV_H
#define TLSAN_EXECUTORCH_PRIV_H

#include "tlsan/executorch.h"

#include <stddef.h>
#include <stdint.h>

/* Places value `value` of method `method` (indices in the program) at `offset` bytes of
 * planned buffer `memory_id` instead of where the program puts it. */
typedef struct et_placement_override {
    size_t method, value;
    uint32_t memory_id;
    uint64_t offset;
} et_placement_override;

typedef struct et_import_options {
    const et_placement_override *overrides; /* applied in order; a later one wins */
    size_t n_overrides;
} et_import_options;

/* tlsan_import_executorch_buffer() with options (NULL: none). An override naming a method or
 * value the program does not have, or a value that is not a planned tensor, gives
 * TLSAN_ERR_ARG with err->what set. */
tlsan_status et_import_buffer_ex(const void *data, size_t bytes, const char *label,
                                 const char *method, const et_import_options *opt,
                                 tlsan_plan ***plans, size_t *n_plans, tlsan_error *err);

#endif
