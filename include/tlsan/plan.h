/*
 * tlsan/plan.h -- build, read and write memory plans.
 *
 * A memory plan (format: docs/plan-format.md; the contract shared with planners) lists
 * arenas, the tensors placed in them (storage roots at an offset in an arena, or views of
 * another tensor) and the ops in execution order with the tensors each reads and writes.
 * An engine's own tests can build a plan in memory with the tlsan_plan_add_* calls below,
 * then tlsan_plan_finalize() it and hand it to tlsan_check() (tlsan/check.h); no JSON is
 * involved. tlsan_plan_read_file() reads the JSON form.
 *
 * Units: every byte count and offset is in bytes, every step is an index into the op list
 * (-1 is the step before the first op, where inputs are written; n_ops is the step after
 * the last, where outputs are read).
 *
 * Thread-safety: a plan is not synchronised. Building or finalizing one plan from two
 * threads at once is undefined; a finalized plan may be read (checked, written) from many
 * threads at once. Distinct plans are independent.
 *
 * Errors: functions return a tlsan_status; on TLSAN_ERR_INVALID they fill the caller's
 * tlsan_error (when not NULL) with where the problem is and what it is. The library never
 * aborts or exits on a caller's input.
 */
#ifndef TLSAN_PLAN_H
#define TLSAN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TLSAN_BUILDING_SHARED)
#define TLSAN_API __attribute__((visibility("default")))
#else
#define TLSAN_API
#endif

/** Status codes returned by every fallible call. */
typedef enum tlsan_status {
    TLSAN_OK = 0,
    TLSAN_ERR_INVALID = 1, /**< the input breaks a rule of the plan format */
    TLSAN_ERR_NOMEM = 2,   /**< an allocation failed; the object is unchanged or freed */
    TLSAN_ERR_IO = 3,      /**< a file could not be opened, read or written */
    TLSAN_ERR_ARG = 4,     /**< a NULL or out-of-contract argument (a caller bug) */
    TLSAN_ERR_STATE = 5,   /**< call not allowed now (e.g. adding to a finalized plan) */
} tlsan_status;

/** Where and why an input was refused. All strings are NUL-terminated, possibly empty. */
typedef struct tlsan_error {
    char file[256];  /**< the file being read, "" for in-memory plans */
    char where[256]; /**< JSON path of the offending value, e.g. "tensors[3].offset" */
    int line;        /**< 1-based line of a JSON syntax error, 0 otherwise */
    int column;      /**< 1-based column of a JSON syntax error, 0 otherwise */
    char what[512];  /**< what is wrong, one sentence without trailing newline */
} tlsan_error;

/** Formats an error as "FILE: WHERE: WHAT" (or FILE:LINE:COLUMN: WHAT) into buf.
 *  Returns buf. Never fails; truncates to buf_bytes. Thread-safe. */
TLSAN_API char *tlsan_error_format(const tlsan_error *err, char *buf, size_t buf_bytes);

/** Returns a static English name of a status ("ok", "invalid input", ...). */
TLSAN_API const char *tlsan_status_name(tlsan_status status);

/** How the executor orders ops (plan-format.md, "Order"). */
typedef enum tlsan_schedule {
    TLSAN_SCHEDULE_SEQUENTIAL = 0, /**< list order per stream, plus events, sync, after */
    TLSAN_SCHEDULE_DATAFLOW = 1,   /**< any order respecting per-root data dependencies */
} tlsan_schedule;

/** Element types; the size of each is given by tlsan_dtype_bits(). */
typedef enum tlsan_dtype {
    TLSAN_DTYPE_NONE = 0, /**< no dtype/shape given */
    TLSAN_DTYPE_F64,
    TLSAN_DTYPE_I64,
    TLSAN_DTYPE_U64,
    TLSAN_DTYPE_F32,
    TLSAN_DTYPE_I32,
    TLSAN_DTYPE_U32,
    TLSAN_DTYPE_F16,
    TLSAN_DTYPE_BF16,
    TLSAN_DTYPE_I16,
    TLSAN_DTYPE_U16,
    TLSAN_DTYPE_F8,
    TLSAN_DTYPE_I8,
    TLSAN_DTYPE_U8,
    TLSAN_DTYPE_BOOL,
    TLSAN_DTYPE_I4,
    TLSAN_DTYPE_U4,
    TLSAN_DTYPE_COUNT_
} tlsan_dtype;

/** Parses a dtype name ("f16", "u4", ...). Returns TLSAN_DTYPE_NONE when unknown. */
TLSAN_API tlsan_dtype tlsan_dtype_from_name(const char *name);
/** The spec's name of a dtype, or "" for TLSAN_DTYPE_NONE. */
TLSAN_API const char *tlsan_dtype_name(tlsan_dtype dtype);
/** Bits per element (4 for i4/u4, 8 for u8, ...), 0 for TLSAN_DTYPE_NONE. */
TLSAN_API unsigned tlsan_dtype_bits(tlsan_dtype dtype);

/** An arena: one reserved block of `bytes` bytes in which storage roots are placed. */
typedef struct tlsan_arena_desc {
    const char *name;         /**< required, unique among arenas */
    uint64_t bytes;           /**< reserved size in bytes, at most INT64_MAX */
    uint64_t alignment_bytes; /**< every root's offset must be a multiple; 0 means 1 */
    const char *memory;       /**< memory kind ("host", "cuda:0"); NULL means "host" */
} tlsan_arena_desc;

/** Tensor flags (plan-format.md); on a view they also hold for its storage root. */
enum {
    TLSAN_TENSOR_INPUT = 1u << 0,    /**< written at step -1 (graph input, loaded weight) */
    TLSAN_TENSOR_OUTPUT = 1u << 1,   /**< read at step n_ops (handed to the caller) */
    TLSAN_TENSOR_CONSTANT = 1u << 2, /**< live for the whole program: input and output */
};

/** A tensor: a storage root (arena != NULL) or a view (view_of != NULL), never both. */
typedef struct tlsan_tensor_desc {
    const char *name;           /**< required, unique among tensors */
    uint64_t bytes;             /**< size in bytes */
    const char *arena;          /**< storage root: the arena's name; NULL for a view */
    uint64_t offset_bytes;      /**< storage root: offset of its first byte in the arena */
    const char *view_of;        /**< view: the name of its base tensor; NULL for a root */
    uint64_t view_offset_bytes; /**< view: bytes from its base's first byte */
    uint64_t alignment_bytes;   /**< 0: no own alignment requirement */
    const char *memory;         /**< memory kind it needs; NULL: no requirement */
    unsigned flags;             /**< TLSAN_TENSOR_* */
    bool has_lifetime;          /**< true when the planner declared a lifetime */
    int64_t lifetime[2];        /**< declared [first_write, last_read] in steps */
    tlsan_dtype dtype;          /**< TLSAN_DTYPE_NONE: no dtype/shape given */
    const uint64_t *shape;      /**< n_shape extents (elements), used when dtype is set */
    size_t n_shape;
    const char *const *stack; /**< where the planner placed it, innermost frame first */
    size_t n_stack;
} tlsan_tensor_desc;

/** One branch condition: the op runs only where `if_name` takes arm `arm`. */
typedef struct tlsan_cond {
    const char *if_name;
    const char *arm;
} tlsan_cond;

/** What a synchronisation op does. */
typedef enum tlsan_sync_kind {
    TLSAN_SYNC_NONE = 0, /**< a compute op */
    TLSAN_SYNC_RECORD,   /**< records `event` on its stream */
    TLSAN_SYNC_WAIT,     /**< waits on its stream for the latest earlier record of `event` */
    TLSAN_SYNC_ALL,      /**< joins every stream */
} tlsan_sync_kind;

/** An op, added in execution order. Arrays may be NULL when their count is 0. */
typedef struct tlsan_op_desc {
    const char *name; /**< required, unique among ops */
    const char *const *reads;
    size_t n_reads;
    const char *const *writes;
    size_t n_writes;
    const char *const *inplace; /**< 2*n_inplace names: out0, in0, out1, in1, ... */
    size_t n_inplace;
    const char *stream;       /**< NULL means "main" */
    const char *const *after; /**< names of earlier ops this op depends on */
    size_t n_after;
    const tlsan_cond *branch; /**< the op runs where all conditions hold */
    size_t n_branch;
    const char *loop;     /**< the loop whose body holds the op; NULL: none */
    tlsan_sync_kind sync; /**< TLSAN_SYNC_NONE for compute ops */
    const char *event;    /**< the event of a record or wait */
    const char *const *stack;
    size_t n_stack;
} tlsan_op_desc;

/** A plan under construction or finalized. Opaque. */
typedef struct tlsan_plan tlsan_plan;

/** Creates an empty plan (sequential, no name). Returns NULL when out of memory.
 *  The caller owns it and frees it with tlsan_plan_free(). */
TLSAN_API tlsan_plan *tlsan_plan_create(void);
/** Frees a plan and everything it owns. NULL is allowed. */
TLSAN_API void tlsan_plan_free(tlsan_plan *plan);

/** Sets the plan's name (copied). */
TLSAN_API tlsan_status tlsan_plan_set_name(tlsan_plan *plan, const char *name);
/** Sets the schedule. */
TLSAN_API tlsan_status tlsan_plan_set_schedule(tlsan_plan *plan, tlsan_schedule schedule);

/** Adds an arena (all strings copied). Errors: TLSAN_ERR_INVALID for a missing or duplicate
 *  name or an out-of-range number (err->where is "arenas[I]..."), TLSAN_ERR_NOMEM,
 *  TLSAN_ERR_STATE after finalize. */
TLSAN_API tlsan_status tlsan_plan_add_arena(tlsan_plan *plan, const tlsan_arena_desc *arena,
                                            tlsan_error *err);
/** Adds a tensor (all strings and arrays copied). References to arenas and bases are
 *  resolved by tlsan_plan_finalize(), so they may name things added later. Errors as for
 *  arenas, with err->where "tensors[I]...". */
TLSAN_API tlsan_status tlsan_plan_add_tensor(tlsan_plan *plan, const tlsan_tensor_desc *tensor,
                                             tlsan_error *err);
/** Adds the next op in execution order (copied). Tensor names are resolved by finalize;
 *  `after` must name ops added before this one. Errors with err->where "ops[I]...". */
TLSAN_API tlsan_status tlsan_plan_add_op(tlsan_plan *plan, const tlsan_op_desc *op,
                                         tlsan_error *err);

/** Resolves every reference and validates the whole plan against the format's rules
 *  (references, view cycles, loop contiguity, lifetimes within [-1, n_ops], synchronisation
 *  ops without tensors, ...). After TLSAN_OK the plan is read-only and can be checked.
 *  On TLSAN_ERR_INVALID err says where and what; the plan must then only be freed. */
TLSAN_API tlsan_status tlsan_plan_finalize(tlsan_plan *plan, tlsan_error *err);

/** Counts of a plan's lists. */
TLSAN_API size_t tlsan_plan_n_arenas(const tlsan_plan *plan);
TLSAN_API size_t tlsan_plan_n_tensors(const tlsan_plan *plan);
TLSAN_API size_t tlsan_plan_n_ops(const tlsan_plan *plan);
/** The plan's name, or NULL when it has none. Owned by the plan. */
TLSAN_API const char *tlsan_plan_name(const tlsan_plan *plan);
/** The name of tensor `index` (0-based, add order), or NULL when out of range. */
TLSAN_API const char *tlsan_plan_tensor_name(const tlsan_plan *plan, size_t index);
/** The name of op `index` (= its step), or NULL when out of range. */
TLSAN_API const char *tlsan_plan_op_name(const tlsan_plan *plan, size_t index);

/** Where tensor (or op) `index` begins in the file it was read from: the line and column
 *  (1-based; columns count characters) of its object's opening brace (for a TVM graph, the
 *  brace of the node it comes from). Returns false (and
 *  leaves *line and *column alone) for a plan built with the tlsan_plan_add_* calls or an
 *  index out of range. Either pointer may be NULL. Thread-safe on a finalized plan. */
TLSAN_API bool tlsan_plan_tensor_source(const tlsan_plan *plan, size_t index, int *line,
                                        int *column);
TLSAN_API bool tlsan_plan_op_source(const tlsan_plan *plan, size_t index, int *line, int *column);

/** Reads a plan from a JSON file (format version 1, streaming: memory grows with the plan,
 *  not with the file). A file holding a plan cache ({"tlsan_plan_cache": 1, ...}) is refused
 *  here with TLSAN_ERR_INVALID; use tlsan_cache_read_file(). On success *out is a finalized
 *  plan owned by the caller. `path` "-" reads standard input. */
TLSAN_API tlsan_status tlsan_plan_read_file(const char *path, tlsan_plan **out, tlsan_error *err);
/** Same as tlsan_plan_read_file() from a memory buffer; `label` names it in errors. */
TLSAN_API tlsan_status tlsan_plan_read_buffer(const char *json, size_t json_bytes,
                                              const char *label, tlsan_plan **out,
                                              tlsan_error *err);
/** Writes a finalized plan as JSON in the plan format (pretty when `pretty`). Returns
 *  TLSAN_ERR_IO when the stream fails. */
TLSAN_API tlsan_status tlsan_plan_write(const tlsan_plan *plan, FILE *out, bool pretty);

/** A plan cache: plans looked up by a key (plan-format.md, "Plan caches"). Opaque. */
typedef struct tlsan_cache tlsan_cache;

/** Creates an empty cache; NULL when out of memory. Free with tlsan_cache_free(). */
TLSAN_API tlsan_cache *tlsan_cache_create(void);
/** Frees the cache and every plan it owns. NULL is allowed. */
TLSAN_API void tlsan_cache_free(tlsan_cache *cache);
/** Adds a finalized plan under a key given as JSON text (an object, e.g.
 *  "{\"batch\":1}"). The cache takes ownership of `plan` on TLSAN_OK only. */
TLSAN_API tlsan_status tlsan_cache_add(tlsan_cache *cache, tlsan_plan *plan, const char *key_json,
                                       tlsan_error *err);
/** Number of plans in the cache. */
TLSAN_API size_t tlsan_cache_n_plans(const tlsan_cache *cache);
/** Plan `index` of the cache (owned by the cache), or NULL when out of range. */
TLSAN_API const tlsan_plan *tlsan_cache_plan(const tlsan_cache *cache, size_t index);

/** Reads a JSON file holding either one plan or a plan cache. Exactly one of *plan_out and
 *  *cache_out is set on TLSAN_OK (the other is NULL); the caller owns it. */
TLSAN_API tlsan_status tlsan_read_file(const char *path, tlsan_plan **plan_out,
                                       tlsan_cache **cache_out, tlsan_error *err);
/** Same as tlsan_read_file() from a memory buffer; `label` names it in errors. */
TLSAN_API tlsan_status tlsan_read_buffer(const char *json, size_t json_bytes, const char *label,
                                         tlsan_plan **plan_out, tlsan_cache **cache_out,
                                         tlsan_error *err);

#ifdef __cplusplus
}
#endif
#endif /* TLSAN_PLAN_H */
