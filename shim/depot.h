/* depot.h - the stack depot: each distinct stack stored once, named by a 32-bit id.
 * Stacks are raw return addresses captured with libunwind's unw_backtrace (UNW_LOCAL_ONLY), or
 * on x86-64 recognised as one the thread captured before at the same place (the memo,
 * depot.c); they are symbolized only when a report is printed. Storage is mmap'd, never malloc'd.
 * Thread-safe. */
#ifndef TLSAN_SHIM_DEPOT_H
#define TLSAN_SHIM_DEPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEPOT_MAX_FRAMES 64

/* Captures the calling thread's stack (stack_depth frames at most) and interns it. Frame 0
 * is the caller of depot_capture, with the innermost `skip` frames dropped from there (an
 * allocation hook passes 1 so that frame 0 is the program's call to malloc). Returns its id, or 0
 * when stacks are off, the capture failed, or the depot is full. Safe inside allocation hooks
 * (guards re-entry itself). */
uint32_t depot_capture(unsigned skip);

/* depot_capture inlined into its caller, for the allocation hooks: the walk then starts in the
 * hook's own frame instead of one frame further in (depot_capture's), which saves libunwind a
 * step of each capture (malloc_heavy captures 8.5M stacks). Frame 0 is the hook's caller;
 * frames inside libtlsan.so are dropped as by depot_capture. Same contract otherwise. The two
 * halves around the walk are depot_walk_begin (the number of frames to ask for; 0: no capture)
 * and depot_walk_end (drops the shim's frames, interns the rest); nothing else calls them.
 *
 * On x86-64 a capture first asks the thread's memo of repeated stacks (depot_memo_find, keyed
 * by the hook's stack pointer and return address; see depot.c): a hit answers with the id of
 * the stack it verified is still on the stack, without walking. depot_walk_end_memo is
 * depot_walk_end that may also fill the memo for that key. */
int depot_walk_begin(void);
uint32_t depot_walk_end(void **buf, int n);
#define DEPOT_WALK_BUF (DEPOT_MAX_FRAMES + 8)
int unw_backtrace(void **buffer, int size);
#if defined(__x86_64__)
#define DEPOT_MEMO 1
uint32_t depot_memo_find(uintptr_t sp, uintptr_t ra);
uint32_t depot_walk_end_memo(void **buf, int n, uintptr_t sp, uintptr_t ra);
#endif
__attribute__((always_inline)) static inline uint32_t depot_capture_here(void)
{
    void *buf[DEPOT_WALK_BUF];
#ifdef DEPOT_MEMO
    uintptr_t sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    uint32_t id = depot_memo_find(sp, ra);
    if (id)
        return id;
    int want = depot_walk_begin();
    return want ? depot_walk_end_memo(buf, unw_backtrace(buf, want), sp, ra) : 0;
#else
    int want = depot_walk_begin();
    return want ? depot_walk_end(buf, unw_backtrace(buf, want)) : 0;
#endif
}

/* Makes the memo of repeated stacks available (shim initialisation, before any thread is
 * created; the unit tests call it too). Idempotent. False when it cannot be (no
 * thread-specific key to give a thread's memo back at its exit): captures then always walk. */
bool depot_memo_init(void);

/* The calling thread's memo counters since it started (for the tests and the benchmarks):
 * captures answered by the memo, and memo entries filled. */
void depot_memo_counts(uint64_t *hits, uint64_t *fills);

/* Interns given frames; returns the id (0 on failure). */
uint32_t depot_put(const uintptr_t *frames, unsigned n_frames);

/* The frames of a stack id; returns the count (0 for id 0 or unknown). Pointer stays valid
 * for the life of the process. */
unsigned depot_get(uint32_t id, const uintptr_t **frames);

/* Writes "    #i 0xADDR in FUNC+0xOFF (MODULE+0xOFF)" lines for a stack to b. With
 * `symbolize` false (inside a hook), only module + offset; otherwise function names from
 * dladdr. Never allocates when symbolize is false. */
struct outbuf;
void depot_format(struct outbuf *b, uint32_t id, int symbolize);

/* Fork handlers (shim.c): the insert lock. */
void depot_lock(void);
void depot_unlock(void);
void depot_reinit_lock(void);

#endif
