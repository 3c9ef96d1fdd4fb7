/*
 * tlsan/executorch.h -- import an ExecuTorch program (.pte) as memory plans, one per method.
 *
 * ExecuTorch's exporter plans memory ahead of time and writes the result into the program:
 * every planned tensor has a memory id and a byte offset in one of the method's planned
 * buffers. The importer turns each method of a .pte into a plan (tlsan/plan.h) that
 * tlsan_check() (tlsan/check.h) proves safe or not, deriving every lifetime from the
 * instructions (never from the planner). docs/executorch.md gives the mapping field by field
 * with the reasons; in short:
 * - Each planned buffer `memory_id` = 1..N-1 of `non_const_buffer_sizes` (N entries; 0 is
 *   reserved) is an arena "mem<ID>" of that many bytes, memory "host" (or "cuda:I" from
 *   `non_const_buffer_device`).
 * - Each Tensor value with `allocation_info` is a storage root "v<INDEX>" (INDEX: its place in
 *   the method's `values`) in arena "mem<memory_id>" at offset memory_offset_low +
 *   (memory_offset_high << 32), with bytes = product of `sizes` x the element size of
 *   `scalar_type` (absent: BYTE), dtype and shape given. A planned tensor that also has
 *   initial data (`data_buffer_idx` > 0: a mutable buffer) is `constant`; method inputs are
 *   `input`, method outputs `output`. Tensors without `allocation_info` (constants, and
 *   tensors the caller or the runtime provides) are not in the plan.
 * - Each instruction of each chain, in order, is one op: a KernelCall "OPERATOR.OVERLOAD@I"
 *   writes its returns (the longest tail of its arguments that repeat earlier ones: the
 *   out-variant convention; else the last argument) and reads its other arguments; a
 *   DelegateCall "delegate:ID@I" writes its trailing arguments that hold no data yet (its
 *   outputs) and reads the others. An argument read while it holds no data is a view whose
 *   op the exporter elided when it has the placement, bytes and scalar type of the tensor
 *   last written there (it becomes a view of that tensor), else scratch the call writes.
 *   Tensor lists and optional tensor lists stand for their tensors. A MoveCall "move@I"
 *   reads its source, and the destination stands for the source's tensor from then on; a
 *   FreeCall "free@I" touches nothing; a JumpFalseCall "jump_false@I" reads its condition
 *   and makes the ops it skips a branch arm (forward; an if/else with the emitter's
 *   unconditional jump) or a loop (backward).
 * - Each method's plan is named "BASE:METHOD", BASE the file name without ".pte" and with
 *   ':' replaced by '_' (so the first ':' ends it).
 *
 * Hostile input: the FlatBuffer is verified (every offset, vector length, string, nesting
 * depth and table count inside the file) with the reader flatc generates from ExecuTorch's
 * schema before anything is read, and every index, enum and size is checked before use.
 *
 * Units: bytes; steps are the indices of the plan's ops (instructions in chain order).
 *
 * Ownership: on TLSAN_OK *plans is a malloc'd array of *n_plans finalized plans owned by the
 * caller; free it with tlsan_executorch_plans_free(). On any error *plans is NULL and
 * *n_plans 0.
 *
 * Thread-safety: no global state; distinct calls may run concurrently.
 *
 * Errors: TLSAN_ERR_INVALID when the file is not a usable program, with err->where the
 * schema path of the offending field (e.g. "execution_plan[0].values[3].allocation_info
 * .memory_id") when there is one and err->what the reason: not a FlatBuffer with
 * identifier ET12, a FlatBuffer that does not verify, a truncated file (the extended header
 * or a data segment reaches past its end), an index out of range, an unknown value or
 * instruction type or scalar type, a memory id without a planned buffer, a negative size,
 * a tensor too large to count in bytes, a method name that is not UTF-8 text, two methods
 * of one name, or a `method` the program does not have (err->what lists the methods).
 * TLSAN_ERR_IO when the file cannot be read, TLSAN_ERR_NOMEM, TLSAN_ERR_ARG for NULL
 * arguments. err->file is the path or label.
 */
#ifndef TLSAN_EXECUTORCH_H
#define TLSAN_EXECUTORCH_H

#include "tlsan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Imports the program at `path` ("-" reads standard input): every method in program order,
 *  or only the one named `method` (NULL: all). See the file comment. */
TLSAN_API tlsan_status tlsan_import_executorch_file(const char *path, const char *method,
                                                    tlsan_plan ***plans, size_t *n_plans,
                                                    tlsan_error *err);

/** Same from `bytes` bytes at `data` (any alignment; not retained). `label` names the input
 *  in errors and gives the plans their BASE; NULL means an unnamed in-memory program
 *  (plans named after the method alone). */
TLSAN_API tlsan_status tlsan_import_executorch_buffer(const void *data, size_t bytes,
                                                      const char *label, const char *method,
                                                      tlsan_plan ***plans, size_t *n_plans,
                                                      tlsan_error *err);

/** Frees what the importer returned (each plan, then the array). NULL is a no-op. */
TLSAN_API void tlsan_executorch_plans_free(tlsan_plan **plans, size_t n_plans);

/** Writes imported plans as JSON: one plan for one method, else a plan cache whose plans
 *  carry the key {"method": NAME} (NAME: the part of the plan name after "BASE:").
 *  TLSAN_ERR_IO when the stream fails, TLSAN_ERR_ARG for NULL or no plans. */
TLSAN_API tlsan_status tlsan_executorch_write(tlsan_plan *const *plans, size_t n_plans, FILE *out,
                                              bool pretty);

#ifdef __cplusplus
}
#endif
#endif /* TLSAN_EXECUTORCH_H */
