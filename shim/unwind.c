/* unwind.c - libunwind's local memory accessor, validating without a pipe (unwind.h). */
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Whether libunwind asks for validation is a bit of the accessor's `arg` in the versions
 * whose accessor this replaces (1.6 and later on x86_64: the low bit of the packed ucontext
 * pointer). Anywhere else every read is validated, which is slower but never wrong. */
#if defined(__x86_64__) && UNW_VERSION >= UNW_VERSION_CODE(1, 6)
#define WANTS_VALIDATION(arg) (((uintptr_t)(arg)&1u) != 0)
#else
#define WANTS_VALIDATION(arg) ((void)(arg), 1)
#endif

/* Pages found readable during the current capture (unwind_capture_begin): a capture reads a
 * few pages many times (the stack, the unwind tables), and one check a page is what
 * libunwind's own validator did. Kept for one capture only: memory may be unmapped between
 * two. Zero (not cached) outside a capture, for libunwind's other users. */
#define CACHE_PAGES 8
static __thread struct {
    int on;
    unsigned next;
    uintptr_t page[CACHE_PAGES];
} t_cache __attribute__((tls_model("initial-exec")));

/* process_vm_readv: 1 works, -1 refused (seccomp, ENOSYS), so the probe is used. */
static atomic_int g_vm_readv = 1;
static atomic_int g_state; /* 0 not set up, 1 setting up, 2 set up, -1 failed */

bool unwind_probe_word(uintptr_t addr, uint64_t *val)
{
    /* The kernel's sigset is 8 bytes on Linux; -1 is no valid `how`. rt_sigprocmask copies
     * the new set before it looks at `how`, so EFAULT means unreadable and EINVAL readable,
     * and the mask is never changed. */
    int saved = errno;
    long r = syscall(SYS_rt_sigprocmask, -1, (void *)addr, NULL, (size_t)8);
    bool ok = r == -1 && errno == EINVAL;
    errno = saved;
    if (ok)
        memcpy(val, (const void *)addr, sizeof *val);
    return ok;
}

bool unwind_read_word(uintptr_t addr, uint64_t *val)
{
    if (atomic_load_explicit(&g_vm_readv, memory_order_relaxed) > 0) {
        int saved = errno;
        struct iovec local = {val, sizeof *val}, remote = {(void *)addr, sizeof *val};
        /* getpid() each time: a forked child must read its own memory, not its parent's. */
        ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        int err = errno;
        errno = saved;
        if (n == (ssize_t)sizeof *val)
            return true;
        if (n >= 0 || err == EFAULT)
            return false;
        if (err != ENOSYS && err != EPERM)
            return false;
        atomic_store_explicit(&g_vm_readv, -1, memory_order_relaxed);
    }
    return unwind_probe_word(addr, val);
}

void unwind_capture_begin(void)
{
    memset(t_cache.page, 0, sizeof t_cache.page);
    t_cache.next = 0;
    t_cache.on = 1;
}

void unwind_capture_end(void)
{
    t_cache.on = 0;
}

static uintptr_t page_of(uintptr_t a)
{
    return a & ~(uintptr_t)4095;
}

static bool cached(uintptr_t page)
{
    for (unsigned i = 0; i < CACHE_PAGES; i++)
        if (t_cache.page[i] == page)
            return true;
    return false;
}

static void remember(uintptr_t page)
{
    if (!cached(page)) {
        t_cache.page[t_cache.next] = page;
        t_cache.next = (t_cache.next + 1) % CACHE_PAGES;
    }
}

/* libunwind's access_mem for its local address space, with its semantics: -1 for an
 * invalid address when validation is asked for. */
static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    if (write) {
        memcpy((void *)addr, val, sizeof *val);
        return 0;
    }
    if (!WANTS_VALIDATION(arg)) {
        memcpy(val, (const void *)addr, sizeof *val);
        return 0;
    }
    uintptr_t first = page_of(addr), last = page_of(addr + sizeof *val - 1);
    if (t_cache.on && first && cached(first) && (last == first || cached(last))) {
        memcpy(val, (const void *)addr, sizeof *val);
        return 0;
    }
    uint64_t v;
    if (first == 0 || !unwind_read_word((uintptr_t)addr, &v))
        return -1;
    if (t_cache.on) {
        remember(first);
        if (last != first)
            remember(last);
    }
    *val = (unw_word_t)v;
    return 0;
}

/* Is rd, wr the pipe libunwind opens (pipe2 with O_CLOEXEC | O_NONBLOCK)? */
static bool is_its_pipe(int rd, int wr)
{
    struct stat a, b;
    if (fstat(rd, &a) != 0 || fstat(wr, &b) != 0 || !S_ISFIFO(a.st_mode) || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino)
        return false;
    int fa = fcntl(rd, F_GETFL), fb = fcntl(wr, F_GETFL);
    int da = fcntl(rd, F_GETFD), db = fcntl(wr, F_GETFD);
    return fa >= 0 && fb >= 0 && (fa & O_ACCMODE) == O_RDONLY && (fb & O_ACCMODE) == O_WRONLY &&
           (fa & O_NONBLOCK) && (fb & O_NONBLOCK) && da >= 0 && db >= 0 && (da & FD_CLOEXEC) &&
           (db & FD_CLOEXEC);
}

bool unwind_setup(void)
{
    /* No shim lock: libunwind allocates while it initialises, and those allocations must
     * take the hooks' ordinary paths. A thread that finds another setting up waits. */
    /* Every capture calls this: once set up, a plain load answers (a compare-exchange, a
     * locked instruction, cost a third of what a capture did). */
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (st == 2 || st == -1)
        return st == 2;
    st = 0;
    if (!atomic_compare_exchange_strong(&g_state, &st, 1)) {
        while ((st = atomic_load_explicit(&g_state, memory_order_acquire)) == 1)
            sched_yield();
        return st == 2;
    }
    /* Where libunwind's pipe2 will land: the two lowest free numbers, found with a pipe of
     * our own, closed at once. */
    int probe[2] = {-1, -1};
    bool probed = pipe2(probe, O_CLOEXEC) == 0;
    if (probed) {
        close(probe[0]);
        close(probe[1]);
    }
    /* unw_get_accessors initialises libunwind first (its pipe is opened there), then hands
     * over the local address space's accessor table, which libunwind reads at every call. */
    unw_accessors_t *acc = unw_get_accessors(unw_local_addr_space);
    if (!acc) {
        atomic_store_explicit(&g_state, -1, memory_order_release);
        return false;
    }
    acc->access_mem = access_mem;
    /* libunwind's own accessor was the pipe's only user: close it, if it is where it went.
     * (Not found there when libunwind was initialised before, or another thread took the
     * numbers meanwhile: then nothing is closed.) */
    if (probed && is_its_pipe(probe[0], probe[1])) {
        close(probe[0]);
        close(probe[1]);
    }
    atomic_store_explicit(&g_state, 2, memory_order_release);
    return true;
}
