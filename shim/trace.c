/* trace.c - placeholder no-op writer; the real one follows docs/trace-format.md. */
#include "trace.h"

int trace_open(void)
{
    return 0;
}
void trace_reopen_in_child(void) {}
void trace_close(uint64_t n_findings)
{
    (void)n_findings;
}
uint64_t trace_string(const char *text)
{
    (void)text;
    return 0;
}
uint64_t trace_stack(uint32_t depot_id)
{
    (void)depot_id;
    return 0;
}
uint64_t trace_arena(const char *name, uintptr_t base, uint64_t size_bytes, uint32_t stack)
{
    (void)name, (void)base, (void)size_bytes, (void)stack;
    return 0;
}
void trace_arena_end(uint64_t arena_id, uint32_t stack)
{
    (void)arena_id, (void)stack;
}
void trace_bind(const char *tensor, uint64_t arena_id, uint64_t offset_bytes, uint64_t size_bytes,
                unsigned flags, uint32_t stack)
{
    (void)tensor, (void)arena_id, (void)offset_bytes, (void)size_bytes, (void)flags, (void)stack;
}
void trace_view(const char *tensor, const char *base, uint64_t view_offset_bytes,
                uint64_t size_bytes, uint32_t stack)
{
    (void)tensor, (void)base, (void)view_offset_bytes, (void)size_bytes, (void)stack;
}
void trace_release(const char *tensor, unsigned flags, uint32_t stack)
{
    (void)tensor, (void)flags, (void)stack;
}
void trace_op(uint64_t op_id, const char *name, int stream, const char *const *reads,
              size_t n_reads, const char *const *writes, size_t n_writes,
              const char *const *inplace, size_t n_inplace, uint32_t stack)
{
    (void)op_id, (void)name, (void)stream, (void)reads, (void)n_reads, (void)writes;
    (void)n_writes, (void)inplace, (void)n_inplace, (void)stack;
}
void trace_op_end(uint64_t op_id)
{
    (void)op_id;
}
void trace_record(int event, int stream, uint32_t stack)
{
    (void)event, (void)stream, (void)stack;
}
void trace_wait(int stream, int event, uint32_t stack)
{
    (void)stream, (void)event, (void)stack;
}
void trace_sync(uint32_t stack)
{
    (void)stack;
}
void trace_plan(const char *json, size_t json_bytes, uint32_t stack)
{
    (void)json, (void)json_bytes, (void)stack;
}
void trace_finding(const char *kind, const char *message, const char *const *tensors,
                   size_t n_tensors, const char *const *roles, const uint32_t *stacks,
                   size_t n_stacks)
{
    (void)kind, (void)message, (void)tensors, (void)n_tensors, (void)roles, (void)stacks;
    (void)n_stacks;
}
