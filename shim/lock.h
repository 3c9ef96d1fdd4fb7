/* lock.h - the shim's tiny spin lock: a test-and-test-and-set byte that yields the CPU after a
 * short spin. Cheaper than a pthread mutex on the uncontended fast path (one atomic exchange
 * to take, one release store to drop), never allocates, and a forked child re-initialises it
 * with a plain store. Critical sections are a few hash-table or ring operations long. */
#ifndef TLSAN_SHIM_LOCK_H
#define TLSAN_SHIM_LOCK_H

#include <sched.h>
#include <stdatomic.h>

#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SHIM_HAVE_SINGLE_THREADED 1
#endif
#endif

typedef struct {
    atomic_int held;
} shim_lock;

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
 * exchange, which is most of the cost of an uncontended lock. A thread can only be created
 * outside every critical section (they call nothing), so the flag cannot change inside one. */
static inline void shim_lock_take(shim_lock *l)
{
#ifdef SHIM_HAVE_SINGLE_THREADED
    if (__libc_single_threaded) {
        atomic_store_explicit(&l->held, 1, memory_order_relaxed);
        return;
    }
#endif
    for (unsigned spins = 0;; spins++) {
        if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
            !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
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
}

/* In a forked child: the lock may have been held by a thread that does not exist there. */
static inline void shim_lock_reset(shim_lock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_relaxed);
}

#endif
