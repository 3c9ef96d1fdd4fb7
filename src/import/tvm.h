/* tvm: TVM graph-executor JSON to a plan (public API in tlsan/tvm.h).
 *
 * The internal entry point below takes options used by tests: storage overrides move an
 * entry onto another storage id before the slots are laid out, which is how the tests inject
 * the planner bug "two live entries share one buffer" into real graphs. */
#ifndef TLSAN_TVM_PRIV_H
#define TLSAN_TVM_PRIV_H

#include "tlsan/tvm.h"

#include <stddef.h>
#include <stdint.h>

/* Places entry `entry` (node_row_ptr[node] + output index) on storage id `storage_id`
 * instead of the one the graph gives it. */
typedef struct tvm_storage_override {
    size_t entry;
    int64_t storage_id; /* >= 0; may be an id the graph does not use (a new slot) */
} tvm_storage_override;

typedef struct tvm_import_options {
    const tvm_storage_override *overrides; /* applied in order; a later one wins */
    size_t n_overrides;
} tvm_import_options;

/* tlsan_import_tvm_buffer() with options (NULL: none). An override naming an entry the
 * graph does not have, or a negative storage id, gives TLSAN_ERR_ARG with err->what set. */
tlsan_status tvm_import_buffer_ex(const char *json, size_t json_bytes, const char *label,
                                  const tvm_import_options *opt, tlsan_plan **out,
                                  tlsan_error *err);

#endif
