/*
 * tlsan/check.h -- prove a memory plan safe, or list each unsafe decision.
 *
 * tlsan_check() derives every storage root's lifetime from the ops (never from the
 * planner's declared `lifetime`), per branch path, and reports the findings of
 * docs/plan-format.md: pairs of roots that share bytes while live, in-place pairs the
 * exception does not cover, reuses the executor's order does not enforce, declared
 * lifetimes shorter than the derived ones, reads before writes, and layout errors.
 * Algorithms and their sources are described in docs/design.md.
 *
 * Ownership: a report is owned by the caller (tlsan_report_free). Strings and arrays
 * inside findings point into the report or into the checked plan(s): the plan or cache
 * must outlive the report.
 *
 * Thread-safety: tlsan_check() only reads the plan, so several threads may check the same
 * finalized plan at once, each with its own report.
 */
#ifndef TLSAN_CHECK_H
#define TLSAN_CHECK_H

#include "tlsan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one list of finding kinds, static and run-time:
 *   X(ENUM, "name", severity, finder, "one-line description")
 * It drives the enum, tlsan_kind_name(), the severity every output shows (text "ERROR:" or
 * "WARNING:", JSON "severity", SARIF "level"), SARIF rules, the shim's report headlines, how
 * `tlsan replay` shows the findings a traced process reported, and the kind lists of the
 * documentation (docs/plan-format.md section 4 lists the checker's kinds, docs/runtime.md
 * "Findings at run time" the others, in this order; tests/report/test_kinds.c holds them to
 * it). The checker's kinds come first (SARIF rule indices are enum values). A declared
 * lifetime that is too short is a warning: the declaration is the planner's bookkeeping, and
 * each memory error it leads to is reported as an error of its own. */
#define TLSAN_FINDING_KINDS(X)                                                                     \
    X(LIVE_OVERLAP, "live-overlap", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,                  \
      "two storage roots share bytes while both are live")                                         \
    X(BAD_INPLACE, "bad-inplace", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,                    \
      "an in-place pair shares bytes where the in-place exception does not hold")                  \
    X(UNORDERED_REUSE, "unordered-reuse", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,            \
      "bytes are reused but the executor's order does not force the old tenant to finish first")   \
    X(LIFETIME_TOO_SHORT, "lifetime-too-short", TLSAN_SEVERITY_WARNING, TLSAN_FOUND_BY_CHECKER,    \
      "a declared lifetime does not contain the lifetime derived from the ops")                    \
    X(READ_BEFORE_WRITE, "read-before-write", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,        \
      "an op reads a non-input tensor before any write to it")                                     \
    X(OUT_OF_BOUNDS, "out-of-bounds", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,                \
      "a root lies past its arena's end, or a view past its base's end")                           \
    X(MISALIGNED, "misaligned", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,                      \
      "an offset is not a multiple of the required alignment")                                     \
    X(MEMORY_KIND_MISMATCH, "memory-kind-mismatch", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,  \
      "a tensor needs another memory kind than its arena's")                                       \
    X(SIZE_MISMATCH, "size-mismatch", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,                \
      "a tensor's bytes are fewer than its dtype and shape need")                                  \
    X(CACHE_KEY_COLLISION, "cache-key-collision", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_CHECKER,    \
      "two cached plans have equal keys but different layouts")                                    \
    X(HEAP_WRITE_AFTER_FREE, "heap-write-after-free", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_HEAP,   \
      "a freed heap block changed in quarantine")                                                  \
    X(HEAP_BUFFER_OVERFLOW, "heap-buffer-overflow", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_HEAP,     \
      "a write past a heap block's end")                                                           \
    X(HEAP_USE_AFTER_FREE, "heap-use-after-free", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_HEAP,       \
      "an access to a freed large heap block")                                                     \
    X(DOUBLE_FREE, "double-free", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_HEAP,                       \
      "a heap block freed twice")                                                                  \
    X(INVALID_FREE, "invalid-free", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_HEAP,                     \
      "free of a pointer malloc did not return")                                                   \
    X(ALLOC_DEALLOC_MISMATCH, "alloc-dealloc-mismatch", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_HEAP, \
      "a heap block released by another family (new[] + delete, malloc + delete, new + free)")     \
    X(LIVE_CORRUPTION, "live-corruption", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_TENSOR_RUNTIME,     \
      "a live tensor changed with no write of its own")                                            \
    X(STALE_WRITE, "stale-write", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_TENSOR_RUNTIME,             \
      "a released range changed before its next tenant")                                           \
    X(USE_AFTER_RELEASE, "use-after-release", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_TENSOR_RUNTIME, \
      "an op reads a released tensor")                                                             \
    X(SLOT_OVERFLOW, "slot-overflow", TLSAN_SEVERITY_ERROR, TLSAN_FOUND_BY_TENSOR_RUNTIME,         \
      "a write past the tensor's planned bytes")

typedef enum tlsan_severity {
    TLSAN_SEVERITY_WARNING = 1,
    TLSAN_SEVERITY_ERROR = 2,
} tlsan_severity;

/** Which part of tlsan decides a kind: one per kind, which places it in the table (the
 *  checker's first). A checker kind may also be found by the tensor runtime as it happens:
 *  `read-before-write` and `unordered-reuse` are (docs/runtime.md, "Findings at run time"). */
typedef enum tlsan_finder {
    /** The static checker: tlsan check, tlsan replay, and the shim's tlsan_plan_load and ggml
     *  graphs (src/check/). */
    TLSAN_FOUND_BY_CHECKER = 1,
    /** The shim's malloc interposition, for every program (shim/heap/). */
    TLSAN_FOUND_BY_HEAP = 2,
    /** The shim's tensor runtime: the annotation API and the ggml adapter (shim/engine/,
     *  shim/ggml/). The annotation API also reports the checker's read-before-write and
     *  unordered-reuse. */
    TLSAN_FOUND_BY_TENSOR_RUNTIME = 3,
} tlsan_finder;

typedef enum tlsan_kind {
#define TLSAN_X_ENUM(e, name, sev, finder, desc) TLSAN_KIND_##e,
    TLSAN_FINDING_KINDS(TLSAN_X_ENUM)
#undef TLSAN_X_ENUM
        TLSAN_KIND_COUNT_,
/** The number of kinds the checker reports (they are the first): a tlsan_finding's kind is
 *  always below it. */
#define TLSAN_X_IS_CHECKER(e, name, sev, finder, desc) +((finder) == TLSAN_FOUND_BY_CHECKER)
    TLSAN_KIND_CHECKER_COUNT_ = 0 TLSAN_FINDING_KINDS(TLSAN_X_IS_CHECKER)
#undef TLSAN_X_IS_CHECKER
} tlsan_kind;

/** The kind's spec name ("live-overlap"), or "unknown". Static storage. */
TLSAN_API const char *tlsan_kind_name(tlsan_kind kind);
/** The kind's one-line description. Static storage. */
TLSAN_API const char *tlsan_kind_description(tlsan_kind kind);
/** The kind's severity. */
TLSAN_API tlsan_severity tlsan_kind_severity(tlsan_kind kind);
/** Who decides the kind; 0 for an unknown kind. */
TLSAN_API tlsan_finder tlsan_kind_finder(tlsan_kind kind);
/** The kind named `name` ("heap-write-after-free"), or TLSAN_KIND_COUNT_ when none is. */
TLSAN_API tlsan_kind tlsan_kind_from_name(const char *name);
/** "error" or "warning" (as JSON and SARIF write it). Static storage. */
TLSAN_API const char *tlsan_severity_name(tlsan_severity severity);

/** unordered-reuse lists at most this many accesses of the earlier tenant. */
#define TLSAN_MAX_LISTED_OPS 8

/** One finding. Read-only; valid while its report (and the checked plans) live. */
typedef struct tlsan_finding {
    tlsan_kind kind;            /**< a checker kind (below TLSAN_KIND_CHECKER_COUNT_) */
    const char *message;        /**< one sentence, no trailing newline */
    const char *const *tensors; /**< names involved (storage roots for memory findings) */
    size_t n_tensors;
    int64_t tensor_index[2];  /**< plan indices of tensors[0..1], -1 when not applicable */
    int64_t plan_index;       /**< index in the cache, -1 for a lone plan */
    int64_t other_plan_index; /**< cache-key-collision: the second plan, else -1 */
    bool has_steps;
    int64_t steps[2]; /**< [first, last] colliding steps */
    bool has_bytes;
    uint64_t bytes[2]; /**< [start, end) shared bytes within the arena */
    bool has_lifetimes;
    int64_t lifetimes[2][2]; /**< per tensor, [first, last] on the reported path */
    const tlsan_cond *path;  /**< the branch path that shows it (only relevant ifs) */
    size_t n_path;
    int64_t op_index;  /**< an op involved: declaring op (bad-inplace), reader
                            (read-before-write), later tenant's first op (unordered-reuse);
                            -1 when none */
    int64_t op_index2; /**< unordered-reuse: an access of the earlier tenant not ordered
                            before op_index; -1 when none */
    bool approximate;  /**< paths were too many to enumerate: judged on the union of paths */
    /** unordered-reuse: every access (op index, ascending) of the earlier tenant that is not
     *  ordered before op_index, at most TLSAN_MAX_LISTED_OPS of them (op_index2 is the
     *  first); n_unordered_total counts them all. Empty for other kinds. */
    const int64_t *unordered_ops;
    size_t n_unordered_ops;
    size_t n_unordered_total;
    /** Index (report order) of the finding this one follows from, or -1: a live-overlap,
     *  bad-inplace or unordered-reuse whose pair the planner could only have placed on the
     *  same bytes because it believed a declared lifetime that is too short. */
    int64_t cause;
    /** With tlsan_check_options.group_repeats: how many findings this one stands for (those
     *  of its kind on tenants of the same names, NAME and NAME#k, one per cause however long
     *  the run; 1 when alone) and the first and last run among them. A tenant NAME#k belongs
     *  to run k, NAME to run 1, a finding to the latest run of its tensors. The finding
     *  itself is the group's first (lowest run). repeats is 0 when findings are not grouped. */
    size_t repeats;
    int64_t first_run, last_run;
} tlsan_finding;

/** Plan statistics (tlsan check --format json, "stats"). */
typedef struct tlsan_arena_stats {
    const char *name;
    uint64_t bytes;             /**< reserved size */
    uint64_t required_bytes;    /**< largest end offset used by a root */
    uint64_t lower_bound_bytes; /**< largest sum of live root bytes at one step, any path */
    double efficiency;          /**< lower_bound / required, 1.0 when required is 0 */
    bool approximate;           /**< lower bound taken without enumerating every path */
} tlsan_arena_stats;

/** The result of checking one plan or one cache. Opaque. */
typedef struct tlsan_report tlsan_report;

/** Options for tlsan_check(); zero-initialise for defaults. */
typedef struct tlsan_check_options {
    /** Most branch paths enumerated for one pair or root before falling back to the union
     *  of paths (reported as approximate). 0 means the default, 4096. */
    uint32_t max_paths;
    /** Judges every read against the order model too: a read of a root that an earlier op
     *  writes, but that no earlier write of the root happens before (a write on another
     *  stream with no event or sync to the reader), is `read-before-write`. Off by default:
     *  plan-format v1 leaves races between the accesses of one root out of scope. tlsan
     *  replay turns it on for a recorded run, whose streams really ran at the same time. */
    bool order_reads;
    /** Findings of one kind on tenants of the same names (NAME, NAME#2, ... as tlsan replay
     *  names the k-th bind of a name) become one finding with a count and the first and
     *  last run (tlsan_finding.repeats): a bug repeated in every run of a graph is one
     *  finding. tlsan replay turns it on for a recorded run. */
    bool group_repeats;
} tlsan_check_options;

/** Checks a finalized plan. On TLSAN_OK *out is a report owned by the caller (possibly
 *  with no findings). Errors: TLSAN_ERR_ARG (NULL or not finalized), TLSAN_ERR_NOMEM. */
TLSAN_API tlsan_status tlsan_check(const tlsan_plan *plan, const tlsan_check_options *options,
                                   tlsan_report **out);
/** Checks every plan of a cache and the cache's keys (cache-key-collision). */
TLSAN_API tlsan_status tlsan_check_cache(const tlsan_cache *cache,
                                         const tlsan_check_options *options, tlsan_report **out);

/** Frees a report. NULL is allowed. */
TLSAN_API void tlsan_report_free(tlsan_report *report);
/** Number of findings. */
TLSAN_API size_t tlsan_report_count(const tlsan_report *report);
/** Finding `index` (report order: by plan, then kind, then tensor names), or NULL. */
TLSAN_API const tlsan_finding *tlsan_report_finding(const tlsan_report *report, size_t index);
/** Number of findings of one kind. */
TLSAN_API size_t tlsan_report_count_kind(const tlsan_report *report, tlsan_kind kind);
/** Number of arenas with stats (of plan `plan_index`, 0 for a lone plan). */
TLSAN_API size_t tlsan_report_n_arena_stats(const tlsan_report *report, size_t plan_index);
/** Stats of arena `arena_index` of plan `plan_index`, or NULL when out of range. */
TLSAN_API const tlsan_arena_stats *tlsan_report_arena_stats(const tlsan_report *report,
                                                            size_t plan_index, size_t arena_index);

/** Output formats of tlsan_report_write(). */
typedef enum tlsan_format {
    TLSAN_FORMAT_TEXT = 0,  /**< sanitizer-style text, ends with a SUMMARY: line */
    TLSAN_FORMAT_JSON = 1,  /**< one JSON object per line (plan-format.md, "Findings") */
    TLSAN_FORMAT_SARIF = 2, /**< SARIF 2.1.0 */
} tlsan_format;

/** Writes a report: TEXT (sanitizer layout, ending with a SUMMARY: line), JSON (one object
 *  on one line) or SARIF 2.1.0. `label` names the input (a file name) in the output; NULL
 *  means "<plan>". Returns TLSAN_OK, TLSAN_ERR_IO when the stream fails, TLSAN_ERR_NOMEM,
 *  or TLSAN_ERR_ARG. The plans checked must still be alive. Thread-safe for distinct
 *  streams. */
TLSAN_API tlsan_status tlsan_report_write(const tlsan_report *report, tlsan_format format,
                                          const char *label, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* TLSAN_CHECK_H */
