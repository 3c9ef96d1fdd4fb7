/* trace_read: decoding a trace written by libtlsan.so (docs/trace-format.md) into memory.
 *
 * The whole file is read and checked record by record: a record that names an id no earlier
 * record defined, a varint over 10 bytes, or a payload shorter than its fields is an invalid
 * trace (TLSAN_ERR_INVALID, err->where = "offset N"). A zero tag or a record cut by the end of
 * the file ends the trace: what came before is kept and `truncated` says so. */
#ifndef TLSAN_TRACE_READ_H
#define TLSAN_TRACE_READ_H

#include "core/trace_format.h"
#include "tlsan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct trace_module {
    uint64_t base, size_bytes;
    const char *path; /* into the trace's string storage */
} trace_module;

typedef struct trace_frame {
    uint64_t module; /* 0: none, then offset is the absolute address */
    uint64_t offset;
} trace_frame;

typedef struct trace_stack {
    const trace_frame *frames;
    size_t n_frames;
} trace_stack;

/* One event of the run, in trace order. Strings are string ids (0 = none); `names` points
 * into the trace's id arrays. */
typedef struct trace_event {
    enum trace_tag tag;
    uint64_t id;           /* ARENA/ARENA_END: arena id; OP/OP_END: op id */
    uint64_t name;         /* ARENA/BIND/VIEW/RELEASE/OP: the name's string id */
    uint64_t base_name;    /* VIEW: the base tensor */
    uint64_t a, b;         /* ARENA: base, size; BIND: offset, size; VIEW: offset, size;
                              RECORD/WAIT: event, stream; OP: stream */
    uint64_t arena;        /* BIND: arena id */
    uint64_t flags;        /* BIND/RELEASE */
    uint64_t stack;        /* stack id, 0 = none */
    const uint64_t *names; /* OP: reads, writes, inplace pairs; FINDING: tensors */
    size_t n_reads, n_writes, n_inplace; /* FINDING: n_reads = tensors */
    const char *text;                    /* PLAN: the JSON (not NUL-terminated); FINDING: kind */
    size_t text_bytes;
    const char *message;      /* FINDING: message (NUL-terminated) */
    const char *const *roles; /* FINDING: role of each stack ("allocated", ...) */
    const uint64_t *role_stacks;
    size_t n_roles;
    uint64_t fault_stacks; /* FINDING: bit i, stack i starts at a faulting instruction */
    bool suppressed;       /* FINDING: a suppression matched it (not reported, not counted) */
} trace_event;

typedef struct trace_data trace_data;

/* Reads and decodes a trace file. On TLSAN_OK *out owns everything (free with
 * trace_data_free). Errors: TLSAN_ERR_IO (err->what has the reason), TLSAN_ERR_INVALID (not a
 * trace, unknown version, a malformed record; err->where = "offset N"), TLSAN_ERR_NOMEM;
 * err->file is the path on every error but TLSAN_ERR_NOMEM. */
tlsan_status trace_read_file(const char *path, trace_data **out, tlsan_error *err);
/* Same from memory (copied); `label` names it in errors (err->file). */
tlsan_status trace_read_buffer(const void *data, size_t n_bytes, const char *label,
                               trace_data **out, tlsan_error *err);
void trace_data_free(trace_data *t);

/* Header fields. */
uint32_t trace_pid(const trace_data *t);
uint32_t trace_parent_pid(const trace_data *t);
/* True when the trace ends without an END record (the process died) or with a torn record. */
bool trace_truncated(const trace_data *t);

size_t trace_n_events(const trace_data *t);
const trace_event *trace_event_at(const trace_data *t, size_t index);
/* The text of a string id, NULL for 0 (ids are validated on reading). */
const char *trace_str(const trace_data *t, uint64_t id);
/* Stack by id; n_frames 0 for id 0. */
trace_stack trace_stack_get(const trace_data *t, uint64_t id);
/* Module by id, NULL for 0. */
const trace_module *trace_module_get(const trace_data *t, uint64_t id);
size_t trace_n_modules(const trace_data *t);
/* Counts of defined ids: strings and stacks run 1..n. */
size_t trace_n_strings(const trace_data *t);
size_t trace_n_stacks(const trace_data *t);

#endif
