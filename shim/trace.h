/* trace.h - the trace writer (docs/trace-format.md). Records go into a shared mapping of the
 * trace file, so a crash leaves every completed record. Never allocates; thread-safe (one
 * lock); every function is a no-op when tracing is off or failed. */
#ifndef TLSAN_SHIM_TRACE_H
#define TLSAN_SHIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decides where this process's trace goes, from the options: nowhere by default or with
 * trace=0; trace_path=FILE (FILE, or FILE.PID for a forked child or when FILE is another
 * process's); trace_dir=DIR, else the environment's TLSAN_TRACE_DIR (set by `tlsan run`),
 * else with trace=1 the working directory: DIR/tlsan.PID.trace, a new file (.PID.N.trace
 * when taken). Relative paths are resolved now. Nothing is created until the first record,
 * so a process that records nothing leaves no file; a file that cannot be created then
 * costs one line and turns tracing off. Returns whether a trace is asked for. */
bool trace_open(void);
/* In a forked child: drops the parent's mapping and ids; the child's own trace (FILE.PID or
 * DIR/tlsan.PID.trace) is created at its first record, and modules and stacks go out again
 * as records first use them. */
void trace_reopen_in_child(void);
/* Whether records are kept (a trace is asked for and has not failed or ended): lets a caller
 * skip building a costly record nobody keeps. */
bool trace_wanted(void);
/* Writes END and cuts the file to its length (when one was created). Records after it are
 * dropped. */
void trace_close(uint64_t n_findings);

/* String id for text (interned: the same text gets the same id; 0 for NULL). */
uint64_t trace_string(const char *text);
/* Makes sure a STACK record (and the MODULE records it needs) exists for a depot id;
 * returns its trace stack id (trace ids are dense in the order the STACK records are
 * written, as the format requires, so not the depot id), or 0. The record functions below
 * take depot ids and do this themselves. */
uint64_t trace_stack(uint32_t depot_id);

uint64_t trace_arena(const char *name, uintptr_t base, uint64_t size_bytes, uint32_t stack);
void trace_arena_end(uint64_t arena_id, uint32_t stack);
void trace_bind(const char *tensor, uint64_t arena_id, uint64_t offset_bytes, uint64_t size_bytes,
                unsigned flags, uint32_t stack);
void trace_view(const char *tensor, const char *base, uint64_t view_offset_bytes,
                uint64_t size_bytes, uint32_t stack);
void trace_release(const char *tensor, unsigned flags, uint32_t stack);
void trace_op(uint64_t op_id, const char *name, int stream, const char *const *reads,
              size_t n_reads, const char *const *writes, size_t n_writes,
              const char *const *inplace, size_t n_inplace, uint32_t stack);
void trace_op_end(uint64_t op_id);
void trace_record(int event, int stream, uint32_t stack);
void trace_wait(int stream, int event, uint32_t stack);
void trace_sync(uint32_t stack);
void trace_plan(const char *json, size_t json_bytes, uint32_t stack);
/* A finding: kind, message, tensor names, (role, stack) pairs, which stacks start at a
 * faulting instruction rather than a return address (bit i for stack i), and whether a
 * suppression matched it (not printed, not counted). */
void trace_finding(const char *kind, const char *message, const char *const *tensors,
                   size_t n_tensors, const char *const *roles, const uint32_t *stacks,
                   size_t n_stacks, uint64_t fault_stacks, bool suppressed);

#endif
