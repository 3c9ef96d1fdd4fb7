/*
 * tlsan/tvm.h -- import a TVM graph-executor JSON as a memory plan.
 *
 * TVM's graph planner writes the memory plan of a compiled model into the graph JSON it
 * deploys ("nodes", "heads", "node_row_ptr" and "attrs" with per-entry "storage_id", "shape"
 * and "dltype"). The importer turns that file into a plan (tlsan/plan.h) that tlsan_check()
 * (tlsan/check.h) can prove safe, so a planner bug that places two live entries in one
 * storage buffer is reported like any other live-overlap.
 *
 * The mapping (docs/plan-format.md is the plan format):
 * - Every entry (one output of one node; entry id = node_row_ptr[node] + output index) is a
 *   tensor named after its node, with ":K" appended for output K >= 1. A node name that
 *   occurs more than once in the graph becomes "NAME@NODE_INDEX" for each such node (so an
 *   entry may be "NAME@NODE_INDEX:K"). It carries dtype and shape from "dltype" and "shape"
 *   (float32 -> f32, float16 -> f16, int8 -> i8, uint8 -> u8, bool -> bool, ...), and bytes =
 *   elements * element size.
 * - Every storage id is one slot of a single arena named "storage" (alignment 64 bytes).
 *   The slots are laid end to end in increasing storage id order, each at a multiple of 64
 *   and as large as its largest entry; every entry of a storage id is a storage root at its
 *   slot's offset. Exception: the output of a "__nop" kernel (attrs.func_name "__nop", a
 *   reshape TVM runs as an alias) that has the storage id of its first input is a view of
 *   that input at view offset 0.
 * - Entries of "null" nodes (graph inputs and parameters) are constants; entries named in
 *   "heads" are outputs.
 * - Every "tvm_op" node is one op, in node order (the order TVM's executor runs them), named
 *   like the node; it reads its input entries and writes its num_outputs output entries.
 * - The plan is named after the file: its base name without a ".json" suffix.
 * - Each tensor and op has its node's place in the file as its source
 *   (tlsan_plan_tensor_source, tlsan_plan_op_source: the line and column of the node's
 *   opening brace), so reports and SARIF regions point at the node.
 *
 * Units: byte counts and offsets in bytes; steps are indices of the tvm_op nodes in node
 * order (the plan's ops).
 *
 * Ownership: on TLSAN_OK *out is a finalized plan owned by the caller, freed with
 * tlsan_plan_free(); on any error *out is NULL.
 *
 * Thread-safety: the importer keeps no global state; distinct calls may run concurrently.
 *
 * Errors: TLSAN_ERR_INVALID when the input is not a usable TVM graph: malformed JSON (err
 * line and column set), or a structural problem with err->where the JSON path in the TVM
 * file (e.g. "nodes[12].inputs[0]", "attrs.storage_id[1][7]") and err->what the reason:
 * a missing or wrong-typed key, a node id out of range or not earlier than its user, an
 * output index past the node's num_outputs, list lengths that disagree with the number of
 * entries, a negative storage id, an unknown dltype, a shape too large to count in bytes, a
 * node_row_ptr that disagrees with num_outputs. TLSAN_ERR_IO when the file cannot be read,
 * TLSAN_ERR_NOMEM, TLSAN_ERR_ARG for NULL arguments. err->file is the path or label.
 */
#ifndef TLSAN_TVM_H
#define TLSAN_TVM_H

#include "tlsan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Imports the TVM graph JSON file at `path` ("-" reads standard input) as a finalized plan.
 *  See the file comment for the mapping, ownership and errors. */
TLSAN_API tlsan_status tlsan_import_tvm_file(const char *path, tlsan_plan **out, tlsan_error *err);

/** Same as tlsan_import_tvm_file() from `json_bytes` bytes at `json` (need not be
 *  NUL-terminated; not retained). `label` names the input in errors and gives the plan its
 *  name; NULL means an unnamed in-memory graph. */
TLSAN_API tlsan_status tlsan_import_tvm_buffer(const char *json, size_t json_bytes,
                                               const char *label, tlsan_plan **out,
                                               tlsan_error *err);

#ifdef __cplusplus
}
#endif
#endif /* TLSAN_TVM_H */
