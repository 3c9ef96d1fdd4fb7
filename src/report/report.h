/* report: the findings of one check (a plan or a cache), built by check.c and cache.c,
 * written by report_text.c, report_json.c and report_sarif.c. */
#ifndef TLSAN_REPORT_PRIV_H
#define TLSAN_REPORT_PRIV_H

#include "tlsan/check.h"
#include "check/plan.h"

#include <stdio.h>

typedef struct plan_stats {
    size_t n_tensors, n_roots, n_ops;
    tlsan_arena_stats *arenas; /* n_arenas entries (malloc'd, freed by tlsan_report_free),
                                  names point into the plan */
    size_t n_arenas;
    bool paths_approximate; /* some pair or root was judged on the union of paths */
} plan_stats;

/* A finding the process reported while it ran (a FINDING record of its trace), with its
 * stacks symbolized offline (src/replay/runtime_findings.c). */
typedef struct runtime_frame {
    uint64_t pc;          /* the address in the recording process */
    const char *module;   /* the module's path, NULL when none held pc */
    uint64_t offset;      /* pc - the module's base */
    const char *function; /* NULL when unknown; without a symbol version */
    uint64_t function_offset_bytes;
    const char *file; /* NULL when unknown */
    int line;         /* 0 when unknown */
    bool inlined;     /* inlined into the next frame, which has the same pc */
} runtime_frame;
typedef struct runtime_stack {
    const char *role; /* "allocated here", ... */
    const runtime_frame *frames;
    size_t n_frames;
} runtime_stack;
typedef struct runtime_finding {
    const char *kind, *message;
    const char *const *tensors;
    size_t n_tensors;
    const runtime_stack *stacks;
    size_t n_stacks;
} runtime_finding;

struct tlsan_report {
    const tlsan_plan **plans; /* the checked plans (one for a lone plan), not owned */
    size_t n_plans;
    bool is_cache;
    plan_stats *stats; /* n_plans entries */
    tlsan_finding *findings;
    size_t n_findings, cap_findings;
    const runtime_finding *runtime; /* borrowed (report_set_runtime) */
    size_t n_runtime;
    const char *runtime_process; /* "pid N": who reported them */
    bool traced; /* checked from a trace (report_set_runtime): run-time kinds may show */
    /* Findings that follow from one access the planner probably missed (report_explain.c):
     * access_cause_of[i] indexes access_causes for finding i, or is -1; NULL when none. */
    struct access_cause *access_causes;
    size_t n_access_causes;
    int64_t *access_cause_of;
};

/* Attaches the findings a traced process reported at run time (borrowed: they must outlive the
 * report): the writers show them after the checker's, and they count for
 * report_total_count. */
void report_set_runtime(tlsan_report *r, const runtime_finding *findings, size_t n,
                        const char *process);
/* The checker's findings and the run-time ones. */
size_t report_total_count(const tlsan_report *r);
/* Writers of the run-time findings (report_runtime.c), called by the text, JSON and SARIF
 * writers: text blocks; JSON objects inside the open "findings" array; SARIF results inside
 * the open "results" array. */
void report_text_runtime(const tlsan_report *r, const char *label, const char *rule, FILE *out);
struct report_gen;
void report_gen_runtime_findings(struct report_gen *j, const tlsan_report *r);
void report_gen_runtime_results(struct report_gen *j, const tlsan_report *r);

/* Creates a report over n_plans plans (borrowed). NULL when out of memory. */
tlsan_report *report_new(const tlsan_plan *const *plans, size_t n_plans, bool is_cache);

/* Appends a finding. Copies f, its tensors array (names are borrowed: they must live as long
 * as the plans), its path array, and formats the message from fmt (printf). Returns 0, or -1
 * when out of memory (the report is unchanged). */
int report_add(tlsan_report *r, const tlsan_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sorts findings by plan, kind, then tensor names (reports are deterministic), then links
 * each finding to its cause (report_link_causes). 0, or -1 when out of memory. */
int report_sort(tlsan_report *r);

/* tlsan_check_options.group_repeats: merges the findings of one plan and kind whose tensor
 * names are equal once a trailing "#k" is dropped into the first of them (lowest run), with
 * repeats, first_run and last_run set; keeps report order and relinks causes. 0, or -1 when
 * out of memory (findings may then be grouped, their causes unset). */
int report_group_repeats(tlsan_report *r);

/* The plan a finding belongs to. */
static inline const tlsan_plan *report_plan_of(const tlsan_report *r, const tlsan_finding *f)
{
    return r->plans[f->plan_index < 0 ? 0 : (size_t)f->plan_index];
}

/* Label of plan i for findings' "plan": its name, else "plans[I]" (cache) or NULL. Writes into
 * buf when it needs to format. */
const char *report_plan_label(const tlsan_report *r, size_t i, char *buf, size_t buf_bytes);

/* Index in `plan` of the finding's tensor i: its tensor_index when that is given and `plan`
 * is the finding's plan, else looked up by name (cache collisions, a second plan).
 * NO_INDEX when the plan has no such tensor. */
uint32_t report_tensor_of(const tlsan_report *r, const tlsan_finding *f, size_t i,
                          const tlsan_plan *plan);

/* Writers. `label` is the input's file name as the user gave it. All return 0, or -1 when
 * the stream or an allocation fails. */
typedef struct report_text_options {
    const char *pid_prefix; /* e.g. "==1234==" for the runtime shim, NULL for the checker */
    bool color;
} report_text_options;
int report_write_text(const tlsan_report *r, const char *label, const report_text_options *opt,
                      FILE *out);
/* One JSON object on one line: {"file": ..., "findings": [...], "stats": {...}}. */
int report_write_json(const tlsan_report *r, const char *label, FILE *out);
/* The line an invalid input gets in JSON output, so that the output stays one object per
 * input: {"file": LABEL, "error": {"where", "line", "column", "what"}}. */
int report_write_json_error(const char *label, const tlsan_error *err, FILE *out);
/* One SARIF 2.1.0 log for n inputs (one run, one result per finding). reports[i] is NULL for
 * an input that could not be checked: errors[i] (errors may be NULL) then becomes a tool
 * execution notification and the invocation is marked unsuccessful. */
int report_write_sarif(const tlsan_report *const *reports, const char *const *labels,
                       const tlsan_error *const *errors, size_t n, FILE *out);

/* JSON output helpers shared by the JSON and SARIF writers (report_json.c). A generator
 * made by report_gen_new() prints straight into `out`; every helper keeps going after an
 * error, and report_gen_finish() tells whether everything was written. */
typedef struct report_gen {
    struct yajl_gen_t *g;
    FILE *out;
    bool failed;
} report_gen;
int report_gen_init(report_gen *j, FILE *out);
/* Frees the generator; returns 0 when every value and the stream were fine, else -1. */
int report_gen_finish(report_gen *j);
void report_gen_str(report_gen *j, const char *s);
void report_gen_i64(report_gen *j, int64_t v);
void report_gen_u64(report_gen *j, uint64_t v);
void report_gen_bool(report_gen *j, bool v);
void report_gen_open_map(report_gen *j);
void report_gen_close_map(report_gen *j);
void report_gen_open_array(report_gen *j);
void report_gen_close_array(report_gen *j);
/* A [a, b] pair of integers. */
void report_gen_pair_i64(report_gen *j, int64_t a, int64_t b);
void report_gen_pair_u64(report_gen *j, uint64_t a, uint64_t b);
/* The finding's optional fields shared by JSON and SARIF: "steps", "bytes", "path",
 * "lifetimes", "ops", "approximate" (keys and values, inside an open map). */
/* "plans": [label, other plan's label] of a cache-key-collision; nothing for others. */
void report_gen_plan_pair(report_gen *j, const tlsan_report *r, const tlsan_finding *f,
                          const char *label);
/* The members every finding starts with in JSON, static or found at run time: kind,
 * severity, tensors, message (into the map the caller opened). */
void report_gen_finding_head(report_gen *j, const char *kind, const char *severity,
                             const char *const *tensors, size_t n_tensors, const char *message);
void report_gen_finding_details(report_gen *j, const tlsan_report *r, const tlsan_finding *f);

/* ---- explanations (report_explain.c) ---- */

/* Why a step lies in a tensor's lifetime when no op of the tensor accounts for it. */
typedef enum step_kind { STEP_OP, STEP_INPUT, STEP_OUTPUT, STEP_LOOP } step_kind;
typedef struct step_label {
    int64_t step;
    size_t tensor; /* index in the finding's tensors */
    step_kind kind;
    const char *bearer; /* input/output: the tensor whose flag it is (a name in the plan) */
    const char *flag;   /* input/output: "input", "output" or "constant" */
    uint32_t loop;      /* loop: index in plan->loops, else NO_INDEX */
} step_label;

/* The labels of the steps a finding shows (its colliding steps, its tensors' lifetime ends),
 * at most max, each (step, tensor) once; returns how many. */
size_t report_step_labels(const tlsan_report *r, const tlsan_finding *f, step_label *out,
                          size_t max);
/* "input", "output", "loop" (JSON's "label"). */
const char *report_step_kind_name(step_kind kind);
/* A label in words: "the graph-output step: 'h' is an output", "a loop extension: ...".
 * `tensor` is the labelled tensor's name. */
void report_step_text(const tlsan_plan *p, const char *tensor, const step_label *s, char *buf,
                      size_t n);
/* For check.c's messages: " (LABEL)" when `step` of tensor t, live first..last, needs one,
 * else "". */
void report_step_note(const tlsan_plan *p, uint32_t t, int32_t first, int32_t last, int64_t step,
                      char *buf, size_t n);
/* The tensor of the op list (start, n) that is t or a view inside t, or NO_INDEX. */
uint32_t report_op_touches(const tlsan_plan *p, uint32_t start, uint32_t n, uint32_t t);
/* One line: what the planner probably missed ("" when there is nothing to say). */
void report_suggestion(const tlsan_report *r, const tlsan_finding *f, char *buf, size_t n);
/* Sets every finding's cause (report order): 0, or -1 when out of memory (causes unset). */
int report_link_causes(tlsan_report *r);
/* How many findings follow from finding `cause`. */
size_t report_count_effects(const tlsan_report *r, size_t cause);

/* A tensor missing from an op, as the planner saw it: two or more pair findings (live-overlap,
 * bad-inplace, unordered-reuse) of one storage root whose lifetime reaches the other
 * tenant only through its last access, by one op; without that access the root's lifetime
 * ends at `previous_step`, before each other tenant begins. The planner probably did not
 * count that the op touches the tensor (often through a view), freed its bytes after
 * `previous_step` and reused them. Set by report_link_causes for findings that have no
 * declared-lifetime cause. */
typedef struct access_cause {
    int64_t plan_index;
    uint32_t tensor;       /* the storage root (plan index) */
    uint32_t op;           /* the op whose access keeps it live: its last access */
    int64_t previous_step; /* its access before that (-1: the graph-input step) */
    size_t first_finding;  /* the group's first finding (report order) */
    size_t n_findings;
} access_cause;
/* The access cause finding i follows from, or NULL. */
const access_cause *report_access_cause_of(const tlsan_report *r, size_t finding);
/* "op 'O' (step S) reads 'x' through view 'v'": the access in words. */
void report_access_text(const tlsan_report *r, const access_cause *c, char *buf, size_t n);
/* One line: what the planner probably missed. */
void report_access_suggestion(const tlsan_report *r, const access_cause *c, char *buf, size_t n);

#endif
