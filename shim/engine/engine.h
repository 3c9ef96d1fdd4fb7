/* engine.h - the engine annotation runtime: the tlsan_rt_* entry points of
 * include/tlsan/tlsan.h. It keeps the arenas, the tensors bound in them and the ops in
 * flight; records every call in the trace; and checks, while the engine runs, what the
 * static replay cannot see: bytes that changed under a live tensor (clobbers by overlapping
 * tensors, checksum mismatches), reads of released tensors, writes into released ranges
 * (the sentinel broken before the next bind) and writes past a tensor's end.
 *
 * It runs outside the allocation hooks (it may malloc; those blocks are tracked like the
 * program's) and symbolizes its reports. Every entry point is a quick no-op while
 * !shim_active(). Thread-safe: one mutex guards the state; tensors are hashed, verified and
 * filled outside it. */
#ifndef TLSAN_SHIM_ENGINE_H
#define TLSAN_SHIM_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLSAN_RT_API __attribute__((visibility("default")))

struct tlsan_op_info;
struct tlsan_op_decl;
struct tlsan_src_loc;

TLSAN_RT_API void tlsan_rt_arena_create(const char *name, const void *base, size_t size_bytes);
TLSAN_RT_API void tlsan_rt_arena_destroy(const void *base);
TLSAN_RT_API int tlsan_rt_plan_load(const char *plan_json, size_t json_bytes);
TLSAN_RT_API void tlsan_rt_tensor_bind(const void *arena_base, const char *name, const void *addr,
                                       size_t size_bytes, unsigned flags);
TLSAN_RT_API void tlsan_rt_view_bind(const char *name, const char *base_name,
                                     size_t view_offset_bytes, size_t size_bytes);
TLSAN_RT_API void tlsan_rt_tensor_release(const void *arena_base, const char *name,
                                          const void *addr, unsigned flags);
TLSAN_RT_API uint64_t tlsan_rt_op_begin(const struct tlsan_op_info *op);
TLSAN_RT_API void tlsan_rt_op_end(uint64_t op_token);
TLSAN_RT_API void tlsan_rt_event_record(int event, int stream);
TLSAN_RT_API void tlsan_rt_event_wait(int stream, int event);
TLSAN_RT_API void tlsan_rt_host_sync(void);
/* API version 2, by handle (engine/handle.c). */
TLSAN_RT_API uint64_t tlsan_rt_bind(const void *arena_base, const char *name, const void *addr,
                                    size_t size_bytes, unsigned flags);
TLSAN_RT_API uint64_t tlsan_rt_bind_inplace(const char *name, uint64_t input, unsigned flags);
TLSAN_RT_API uint64_t tlsan_rt_view(const char *name, uint64_t base, size_t view_offset_bytes,
                                    size_t size_bytes);
TLSAN_RT_API void tlsan_rt_release(uint64_t tensor);
TLSAN_RT_API uint64_t tlsan_rt_op_start(const struct tlsan_op_decl *op);
TLSAN_RT_API void tlsan_rt_host_access(uint64_t tensor, size_t offset_bytes, size_t size_bytes,
                                       unsigned access, const struct tlsan_src_loc *loc);

/* The heap hook's part (interpose.c): a block of n bytes at p is being freed. An arena
 * inside it is dropped, with one usage warning, without its memory being read again (so
 * freeing an arena's memory before tlsan_arena_destroy cannot crash the shim). Only a load
 * when no arena exists. */
extern atomic_uint engine_g_arenas;
void engine_heap_block_freed_slow(const void *p, size_t n);
/* True while any arena is declared (a freed heap block may then hold one). */
static inline bool engine_has_arenas(void)
{
    return atomic_load_explicit(&engine_g_arenas, memory_order_relaxed) != 0;
}
static inline void engine_heap_block_freed(const void *p, size_t n)
{
    if (atomic_load_explicit(&engine_g_arenas, memory_order_relaxed))
        engine_heap_block_freed_slow(p, n);
}

/* Usage warnings printed so far (tests). */
unsigned engine_usage_warnings(void);

#endif
