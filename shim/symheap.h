/* symheap.h - the symbolizer's own heap: where libdw (and the dynamic loader, while it loads
 * libdw) allocate when a report is symbolized.
 *
 * A report may be made inside an allocation hook, in a SIGSEGV handler, or while the program's
 * heap is what is broken, and the shim never allocates with malloc on a report path. The
 * symbolizer (shim/symbolizer.c) still runs libdw, which calls malloc, calloc, realloc and
 * free. While this thread is inside symheap_enter() .. symheap_leave(), the allocator hooks
 * (heap/interpose.c) serve every allocation from this heap instead: memory mmap'd by the shim,
 * never the real allocator's, never in the block table. A block of this heap freed or resized
 * later, on any thread and outside the section (the loader keeps what dlopen allocated), goes
 * back here by its address (symheap_owns). Thread-safe (one lock); never returns memory to the
 * system (the symbolizer's caches live as long as the process). */
#ifndef TLSAN_SHIM_SYMHEAP_H
#define TLSAN_SHIM_SYMHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Non-zero while this thread is inside a symheap section (read by every allocation hook). */
extern __thread int symheap_t_active __attribute__((tls_model("initial-exec")));
/* The reserved range, [lo, hi); both 0 until the first section. */
extern uintptr_t symheap_g_lo, symheap_g_hi;

/* Enters a section on this thread: false when the heap cannot be reserved (then do not call
 * libdw). Sections nest. */
bool symheap_enter(void);
void symheap_leave(void);

/* Whether p is a block of this heap (hot path of free: two compares). */
static inline bool symheap_owns(const void *p)
{
    return (uintptr_t)p - symheap_g_lo < symheap_g_hi - symheap_g_lo;
}

/* malloc/memalign: NULL (errno ENOMEM) when the heap is full. align is a power of two. */
void *symheap_alloc(size_t size_bytes, size_t align);
/* calloc: zeroed; NULL on overflow or when full. */
void *symheap_calloc(size_t count, size_t size_bytes);
/* realloc inside a section (p NULL or a block of this heap): the block of this heap. Outside
 * a section the caller moves such a block to its own heap (symheap_size, symheap_free). */
void *symheap_realloc(void *p, size_t size_bytes);
void symheap_free(void *p);
/* The usable size of a block of this heap. */
size_t symheap_size(const void *p);

/* Fork handlers (shim.c): the lock. */
void symheap_lock(void);
void symheap_unlock(void);
void symheap_reinit_lock(void);

#endif
