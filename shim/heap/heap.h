/* heap.h - tracked heap blocks: the side table of live blocks (address -> size, alloc stack),
 * sentinel fills, the FIFO quarantine, redzones, and the checks on free and on eviction.
 * interpose.c calls these; the real allocator functions come from there. */
#ifndef TLSAN_SHIM_HEAP_H
#define TLSAN_SHIM_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sentinel: bytes FE 7F repeated from a block's start (the u16 0x7FFE little-endian).
 * Read at any aligned offset as f16, bf16, f32 or f64 it is a NaN, so a stale read shows up
 * in outputs; as an int32 it is the unusual 0x7FFE7FFE. */
#define SHIM_SENTINEL_U16 0x7FFEu

/* Fills [p, p+n) with the sentinel, phase taken from the address (even = 0xFE). */
void sentinel_fill(void *p, size_t n);
/* Returns the offset of the first byte in [p, p+n) that differs from the sentinel, or n. */
size_t sentinel_find_change(const void *p, size_t n);
/* The sentinel byte expected at address a. */
static inline unsigned char sentinel_byte(uintptr_t a)
{
    return (a & 1) ? 0x7F : 0xFE;
}

/* How a freed block that was filled is verified when it leaves the quarantine (and at exit):
 * a block of at most HEAP_VERIFY_FULL_BYTES is compared in full, which costs less than its
 * fill at the free did (a read against a write of every byte); a larger one is sampled: its
 * first and last 256 bytes plus 64 windows of 64 bytes spread evenly between them (about
 * 4.5 KiB per block, so evicting a 1 GiB block costs microseconds, not a full scan). Blocks
 * that large are normally guarded instead (HEAP_GUARD_MIN: their pages inaccessible, every
 * access caught), so sampling is only for those that could not be (the guard registry full,
 * an alignment above a page): a write that lands elsewhere in one of them is missed. */
#define HEAP_VERIFY_FULL_BYTES (128u * 1024u)
/* Returns the offset of the first changed byte the rule above finds, or n. */
size_t sentinel_verify(const void *p, size_t n);

/* Block flags. */
enum {
    HEAP_LITE = 1u << 0,   /* allocated re-entered (inside the shim): no redzone, no stack */
    HEAP_ZEROED = 1u << 1, /* heap_layout: the block must come zeroed (calloc) */
};

/* Which family of functions allocated a block, and so must free it: the malloc family
 * (malloc, calloc, realloc, the aligned allocators, and free), C++'s operator new (and
 * delete), operator new[] (and delete[]). A block freed by another family's function is an
 * alloc-dealloc-mismatch. Passed in heap_track's and heap_layout's flags; bits of their own. */
enum heap_family {
    HEAP_FAMILY_MALLOC = 0,
    HEAP_FAMILY_NEW = 1u << 9,
    HEAP_FAMILY_NEW_ARRAY = 2u << 9,
};
#define HEAP_FAMILY_MASK (3u << 9)

/* A freed block of at least this many bytes is guarded while in quarantine: its whole pages
 * are made inaccessible (PROT_NONE) and given back to the kernel (MADV_DONTNEED) instead of
 * filled, so an access faults as it does natively once glibc has unmapped such a block
 * (M_MMAP_THRESHOLD, 128 KiB by default). The fault is reported as heap-use-after-free by a
 * SIGSEGV handler, installed when the first block is guarded, chained to the handler the
 * program had then; with halt_on_error other than 0 the program then dies of SIGSEGV. At
 * most 1024 blocks are guarded at once (each may split a mapping), holding at most 64 times
 * the quarantine's budget of address space. */
#define HEAP_GUARD_MIN ((size_t)128 * 1024)
/* The largest block the shim hands out (the table keeps sizes in 51 bits): beyond any user
 * address space, so no allocation the real allocator could satisfy is refused. */
#define HEAP_SIZE_MAX ((size_t)1 << 51)

/* Where the program's block lies in the one asked of the real allocator: at `left` bytes
 * into it (the left redzone's 16 bytes end there; a large block starts a page in, so that
 * its pages can be guarded; an aligned block `align` bytes in), followed by its redzone.
 * `total` is what to ask for, `align` the alignment to ask for (0: malloc's, 16). */
struct heap_layout {
    size_t left, total, align;
    unsigned code;   /* left, as the table records it */
    unsigned family; /* enum heap_family, from heap_layout's flags */
};
/* Lays out a block of n bytes (alignment `align`, 0 or up to 16 for malloc's; flags:
 * HEAP_ZEROED, a family) with `extra` bytes of room after the redzone (realloc's growth). False,
 * with errno ENOMEM, when the sizes overflow or n reaches HEAP_SIZE_MAX. */
bool heap_layout(size_t n, size_t align, unsigned flags, size_t extra, struct heap_layout *l);
/* Tracks the real block `real` laid out by l (heap_track): fills its redzones and returns the
 * program's pointer (real + l->left); returns real itself when it cannot be tracked (after
 * shim_fail), since the pass-through then frees it as the real allocator's. */
void *heap_track_block(void *real, size_t size, uint32_t alloc_stack, const struct heap_layout *l);

/* Maps the side table and the quarantine (options must be parsed). Returns false when the
 * memory cannot be mapped. */
bool heap_init(void);
/* The real free (set by interpose.c; the unit tests pass libc's). Blocks leaving the
 * quarantine go there. */
void heap_set_real_free(void (*real_free)(void *));
/* Redzone bytes to allocate after each block (0 when off). */
size_t heap_redzone(void);

/* Tracks a block the real allocator just returned: `size` requested bytes at p, followed by
 * heap_redzone() more unless flags has HEAP_LITE (flags may also name a family). Fills the redzone.
 * When the table cannot grow, the quarantine is emptied and the growth tried again; returns false
 * (after shim_fail) when it still cannot. */
bool heap_track(void *p, size_t size, uint32_t alloc_stack, unsigned flags);

/* The free hook's body, for a pointer that is not NULL. Full mode: checks (double-free,
 * invalid-free, redzone), fills, quarantines, evicts (heap_free_claim + heap_free_finish).
 * Lite (re-entered): forgets the block and frees it at once; ignores pointers it does not
 * track and blocks being freed (claimed). */
void heap_free(void *p, uint32_t free_stack, int lite);
/* The free of a live block when no redzone and no quarantine are kept, in one table visit;
 * for the hook's path without stacks. Returns false, having done nothing, in every other
 * case (the caller then frees with claim + finish). */
bool heap_free_unclaimed(void *p);

/* The full free in two steps, so that nothing between them can free the block a second
 * time: heap_free_claim marks a live block as being freed (a free of it meanwhile, ld.so's
 * own free re-entered through the stack capture, is then a no-op) and copies what the table
 * knows of it; the hook captures the free stack; heap_free_finish checks, fills and
 * quarantines it, or reports the invalid or double free the claim found. heap_free_unclaim
 * puts a claimed block back (a realloc whose new block could not be allocated). */
enum heap_claim_state {
    HEAP_CLAIM_UNKNOWN, /* not a block of the table: invalid free */
    HEAP_CLAIM_LIVE,    /* claimed: finish or unclaim it */
    HEAP_CLAIM_FREED,   /* in the quarantine: double free */
    HEAP_CLAIM_BUSY,    /* being freed by another free right now: double free */
};
struct heap_claim {
    enum heap_claim_state state;
    size_t size, left; /* left: the block's offset into its real block */
    uint32_t alloc_stack, free_stack;
    enum heap_family family; /* the allocating family (claim sets it) */
    /* The family of the function freeing it: HEAP_FAMILY_MALLOC as heap_free_claim leaves
     * it; a C++ delete sets its own before heap_free_finish, which reports a mismatch. */
    enum heap_family dealloc;
};
void heap_free_claim(void *p, struct heap_claim *c);
/* The full free in one table visit (claim and finish at once), for a caller that has captured
 * the free stack already: a live block freed by its own family (`dealloc`) is checked, filled
 * and quarantined; anything else is reported as heap_free_finish reports it. The capture must
 * be bracketed by heap_freeing(p) and heap_freeing(NULL): a free of p re-entered meanwhile
 * (ld.so's own, through the capture) is then left to this one, as a claim would make it. */
void heap_freeing(const void *p);
void heap_free_once(void *p, unsigned dealloc, uint32_t free_stack);
void heap_free_finish(void *p, const struct heap_claim *c, uint32_t free_stack);
void heap_free_unclaim(void *p);

/* realloc in place: when the real block (`usable` bytes, its malloc_usable_size) has room
 * for n bytes and the redzone, checks the claimed block's redzones as a free would (an
 * overwritten left one ends the program as natively), moves the redzone to the new end,
 * records n and the realloc's stack, and releases the claim; true then. False, having done
 * nothing, when the block must move (no room, or shrunk to less than half of over 4 KiB). */
bool heap_resize(void *p, const struct heap_claim *c, size_t n, size_t usable, uint32_t stack);

/* For hooks inside a locked section (a signal handler that interrupted it) or passing
 * through: what the table (and, for a block it does not hold, the quarantine's ring) knows of
 * p: 0 unknown, 1 live, 2 freed, size and left set for 1 and 2; -1 when it cannot be told
 * without risking to wait for ever. A shard held by this thread's interrupted section is read
 * without its lock, one held by another thread waited for (heap.c's peek_table says when
 * not); the quarantine is -1 when a thread inside a locked section finds it held. */
int heap_peek(const void *p, size_t *size, size_t *left);
/* The shard of the table that holds (or would hold) p: for the tests, which fill one shard
 * densely enough that deletions move entries. */
unsigned heap_shard_index(const void *p);
/* The pass-through's free and realloc (the shim off after it tracked blocks): the real
 * block of p. For a live tracked block with a left offset the entry is forgotten and
 * *size (may be NULL) set; anything else is p itself. */
void *heap_pass_real(void *p, size_t *size);

/* Hooks entered inside one of this thread's locked sections (a signal handler; lock.h) touch
 * no shim lock: they use the real allocator and leave the table's part for later, in a small
 * per-thread list that the section's end (heap_deferred_run, lock.h) works off.
 * heap_deferred_track: a block the real allocator just returned, to be tracked (lite) then;
 * false when the list is full (the block then stays untracked: freed later from outside, it
 * is reported as an invalid free and not freed; a leak, never a corruption).
 * heap_deferred_free: frees at once a block still waiting in the list to be tracked (not
 * when the thread is inside the real allocator: then it waits too);
 * otherwise the free waits in the list and is then done as a lite free (a tracked live block
 * is freed; a pointer the table does not know, or a block already freed, is left alone).
 * When the list is full such a free is dropped (a leak). Returns true when freed at once.
 * heap_deferred_size: the size of a block waiting to be tracked, or 0. */
bool heap_deferred_track(void *p, size_t size);
bool heap_deferred_free(void *p);
size_t heap_deferred_size(const void *p);

/* Evicts every block in the quarantine (verifying each): the hooks call it when the real
 * allocator fails, so the memory held back is not what makes a correct program run out.
 * Returns true when there was anything to evict. */
bool heap_quarantine_drain(void);

/* What is known of p: 1 live (size set), 2 freed and in quarantine (size set), 0 unknown.
 * A quarantined block is not in the table (heap.c): a pointer the table does not hold costs
 * a search of the quarantine's ring. */
int heap_lookup(const void *p, size_t *size);
/* Records that the live block at p belongs to `family` (a block C++'s operator new had
 * allocated through the next definition's call to malloc). */
void heap_set_family(void *p, enum heap_family family);

/* Verifies every block still in the quarantine (at exit); returns the findings made. */
unsigned heap_verify_quarantine(int symbolize);
/* Checks the redzones of every live block (at exit: an overflow of a block never freed is
 * found too; while the program runs, each shard's every 1024th allocation checks 32 of its
 * slots in turn); returns the findings made. A changed redzone is refilled once reported. */
unsigned heap_verify_live(int symbolize);

struct heap_stats {
    uint64_t allocs, frees, live_blocks, quarantine_blocks, quarantine_bytes, evictions;
};
void heap_get_stats(struct heap_stats *s);

/* What follows a bad free (double or invalid) by halt_on_error, to end its report's
 * explanation: "this free is ignored" (0), the process aborts as glibc would (native), or
 * exits with exitcode (1). */
const char *heap_bad_free_outcome(void);

/* For the sampled blocks (sample.c), which are not in the table: the mismatch report, and the
 * SIGSEGV handler installed before the first guarded page (it asks sample_fault first). */
void heap_report_mismatch(uintptr_t addr, size_t size, unsigned family, uint32_t alloc_stack,
                          unsigned dealloc, uint32_t free_stack);
void heap_segv_install(void);
/* The program's sigaction(SIGSEGV, act, old) once the shim's handler is installed (false
 * before: the call is then the kernel's, and the handler finds that action when installed):
 * the program sees and sets its own action, which the handler chains to for faults that are
 * not the shim's; the shim's handler stays the kernel's. */
struct sigaction;
bool heap_segv_program_action(const struct sigaction *act, struct sigaction *old);

/* In a forked child (shim.c's fork handler, after heap_reinit_locks): from now on the
 * checks at exit look only at what this process allocates and frees, not at the copy of the
 * parent's heap it was given (heap.c, g_qpushed). */
void heap_fork_child(void);

/* Fork handlers (shim.c): the quarantine lock, every table lock, the guard registry's. */
void heap_lock_all(void);
void heap_unlock_all(void);
void heap_reinit_locks(void);

#endif
