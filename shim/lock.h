/* lock.h - the shim's tiny spin lock: a test-and-test-and-set word that yields the CPU after a
 * short spin. Cheaper than a pthread mutex on the uncontended fast path (one atomic
 * compare-and-swap to take, one release store to drop), never allocates, and a forked child
 * re-initialises it with a plain store. Critical sections are a few hash-table or ring
 * operations long. The word holds its holder's token (shim_lock_token), so that a signal
 * handler can tell its own thread's section, which it interrupted and which cannot go on
 * until it returns, from another thread's, which will end (heap.c's peek_table). */
#ifndef TLSAN_SHIM_LOCK_H
#define TLSAN_SHIM_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SHIM_HAVE_SINGLE_THREADED 1
#endif
#endif

typedef struct {
    _Atomic uintptr_t held; /* 0: free; else the holder's shim_lock_token() */
} shim_lock;

/* How many shim locks this thread holds (shim.c). A hook that finds it non-zero was entered
 * on a thread that is inside a locked section: a signal handler that interrupted it (the
 * only way in, since no lock is held across a call that may allocate). Such a hook must not
 * take any shim lock: it could wait forever for its own thread, or, while the process is
 * single-threaded and the lock is taken with a plain store, enter the section a second time
 * and corrupt the table. It defers its work instead (heap_deferred_*), and the section's
 * last drop hands the deferred work over (heap_deferred_run). The count is raised before a
 * lock is taken and lowered after it is dropped, so it is never zero while one is held. */
extern __thread int shim_t_locks __attribute__((tls_model("initial-exec")));
/* This thread's token, what a lock it holds contains: the address of its own count, never 0
 * and, while the thread lives, no other thread's. */
static inline uintptr_t shim_lock_token(void)
{
    return (uintptr_t)&shim_t_locks;
}

/* Set while this thread has deferred work (heap.c). */
extern __thread int shim_t_deferred __attribute__((tls_model("initial-exec")));
void heap_deferred_run(void);

/* Set while this thread is inside the real allocator, called by a hook (interpose.c) or by
 * the quarantine (heap.c). It counts as a locked section too, and more: a hook entered then
 * (a signal handler that interrupted glibc's malloc) must not call the real allocator either,
 * whose own state is half-updated (single-threaded glibc takes no lock; with threads it
 * would wait for its own lock). Such a hook is served from the bootstrap buffer instead. */
extern __thread int shim_t_in_real __attribute__((tls_model("initial-exec")));

/* For a lock that is not a shim_lock (the trace's mutex): count it all the same. */
static inline void shim_section_enter(void)
{
    shim_t_locks++;
    atomic_signal_fence(memory_order_seq_cst);
}

/* The deferred work is done at the end of the last section, while it still counts: a
 * handler interrupting it defers its own work too, instead of looking in the table for a
 * block that is still on its way there from the list. */
static inline void shim_section_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    if (shim_t_locks == 1 && shim_t_deferred)
        heap_deferred_run();
    atomic_signal_fence(memory_order_seq_cst);
    shim_t_locks--;
}

/* Around a call into the real allocator. */
static inline void shim_real_enter(void)
{
    shim_section_enter();
    shim_t_in_real++;
    atomic_signal_fence(memory_order_seq_cst);
}

static inline void shim_real_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    shim_t_in_real--;
    shim_section_leave();
}

#define SHIM_LOCK_INIT                                                                             \
    {                                                                                              \
        0                                                                                          \
    }

static inline void shim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* While the process has one thread (glibc's __libc_single_threaded, the flag its own malloc
 * uses), nobody can contend: the lock is taken with a plain store instead of an atomic
 * compare-and-swap, which is most of the cost of an uncontended lock. A thread can only be
 * created outside every critical section (they call nothing), so the flag cannot change
 * inside one. With threads, a compare-and-swap and not an exchange: a failed attempt must not
 * overwrite the holder's token. */
static inline void shim_lock_take(shim_lock *l)
{
    uintptr_t me = shim_lock_token();
    shim_section_enter();
#ifdef SHIM_HAVE_SINGLE_THREADED
    if (__libc_single_threaded) {
        atomic_store_explicit(&l->held, me, memory_order_relaxed);
        return;
    }
#endif
    for (unsigned spins = 0;; spins++) {
        uintptr_t free_word = 0;
        if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
            atomic_compare_exchange_weak_explicit(&l->held, &free_word, me, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        if (spins >= 64)
            sched_yield();
        else
            shim_cpu_relax();
    }
}

static inline void shim_lock_drop(shim_lock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
    shim_section_leave();
}

/* In a forked child: the lock may have been held by a thread that does not exist there.
 * (The forking thread's count is reset by the caller, shim.c's fork handler.) */
static inline void shim_lock_reset(shim_lock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_relaxed);
}

#endif
