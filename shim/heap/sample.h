/* sample.h - guarded sampling, in the spirit of GWP-ASan: one allocation in `sample_rate`
 * (option; on average, at random) of at most a page is served from a pool of its own where
 * each block has a page to itself, right-aligned against an inaccessible guard page, and the
 * page is made inaccessible when the block is freed. An overflow past the block's end, and
 * a read or write after its free, then fault at the instruction that makes them: the
 * SIGSEGV handler (heap.c) hands the fault here, which reports it with that access's stack
 * beside the allocation and free stacks. A freed slot stays inaccessible until it is
 * needed again, the oldest freed first, so a stale pointer is caught long after the
 * quarantine let its block go. interpose.c decides (sample_due) and routes the pool's
 * blocks here; they are not in heap.c's table. Thread-safe (one lock). */
#ifndef TLSAN_SHIM_SAMPLE_H
#define TLSAN_SHIM_SAMPLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The pool's bounds, set once when it is mapped (0 until then): sample_owns is two compares.
 * lo is stored before hi is published (release), and hi is read first (acquire), so a
 * thread that sees the pool's end also sees its start; before that, hi is 0 and nothing is
 * owned. */
extern uintptr_t sample_g_lo;
extern _Atomic uintptr_t sample_g_hi;
/* Allocations left on this thread until the next sampled one. */
extern __thread uint32_t sample_t_countdown __attribute__((tls_model("initial-exec")));

static inline bool sample_owns(const void *p)
{
    uintptr_t hi = atomic_load_explicit(&sample_g_hi, memory_order_acquire);
    return (uintptr_t)p < hi && (uintptr_t)p >= sample_g_lo;
}

/* Draws the next countdown; true when this allocation is to be sampled. */
bool sample_next(void);

/* True when this allocation (of the full path) is to be sampled: one decrement usually. */
static inline bool sample_due(void)
{
    if (__builtin_expect(sample_t_countdown > 1, 1)) {
        sample_t_countdown--;
        return false;
    }
    return sample_next();
}

/* A sampled block of n bytes of `family` (heap.h's enum heap_family), zeroed if asked, with
 * its allocation stack; NULL when it cannot be had (larger than a page, every slot live, the
 * pool not mappable): the caller then allocates as usual. */
void *sample_alloc(size_t n, unsigned family, int zeroed, uint32_t alloc_stack);
/* The free of a pointer sample_owns: checks (double, invalid, mismatched free; the bytes
 * between the block and its page's edges), then the page is made inaccessible. `report`
 * false (the shim passing through, or re-entered): only the bookkeeping. */
void sample_free(void *p, unsigned family, uint32_t free_stack, bool report);
/* Checks the bytes around every live sampled block (at exit; while the program runs, every
 * 64th sampled allocation checks 8 slots in turn): an overflow into a block's slack or an
 * underflow into its page is reported as heap-buffer-overflow, and the bytes refilled.
 * Returns the findings made. */
unsigned sample_verify_live(int symbolize);
/* True when p is a live sampled block; its requested size in *size then. */
bool sample_size(const void *p, size_t *size);

/* The SIGSEGV handler's question: is addr in the pool? If so the access is reported
 * (heap-use-after-free, or heap-buffer-overflow for a guard page), made possible again so
 * that the program goes on as natively (unless halt_on_error ends it), and true returned. */
bool sample_fault(uintptr_t addr, int is_write);

/* When the real allocator runs out (heap_quarantine_drain): unmaps the pool's pages that no
 * live block needs, once, with one line, so that under a finite RLIMIT_AS the pool is not
 * what makes a correct program fail; those slots are not used again (a stale access to a
 * block freed in one then faults as a wild one does). True when it gave any back. */
bool sample_give_back(void);

/* Fork handlers (through heap_lock_all and the like). */
void sample_lock(void);
void sample_unlock(void);
void sample_reinit_lock(void);

#endif
