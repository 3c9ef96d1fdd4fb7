/* shim.c - the shim's process-wide state: initialisation, options, the re-entry guard, fork
 * handling and the exit check.
 *
 * Initialisation runs from the constructor, or earlier from the first allocation hook
 * (libraries initialised before us allocate). It must not allocate before the heap side
 * table exists, or that block would later look like an invalid free: so the options come from
 * getenv (no allocation), the table is mmap'd next, and only then does anything that may
 * allocate run (dlsym for the sanitizer check, the trace, pthread_atfork); those nested
 * allocations are tracked in lite mode (shim_enter is held). Other threads arriving during
 * initialisation wait only until the table exists, never for the rest: the initialising
 * thread may be waiting for a loader lock they hold. */
#include "shim.h"
#include "depot.h"
#include "heap/heap.h"
#include "heap/sample.h"
#include "modules.h"
#include "out.h"
#include "runtime_report.h"
#include "suppress.h"
#include "symbolizer.h"
#include "symheap.h"
#include "trace.h"
#include "unwind.h"
#include "tlsan/tlsan.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define SHIM_HAVE_VALGRIND 1
#endif
#endif

#define TLS __attribute__((tls_model("initial-exec")))

struct shim_options shim_g_opts = {
#define X(type, name, def, help) .name = def,
    SHIM_OPTIONS(X)
#undef X
};
atomic_int shim_g_state = SHIM_UNINIT;
#define g_opts  shim_g_opts
#define g_state shim_g_state
static atomic_bool g_tracking;
static atomic_int g_failed;
__thread int shim_t_in_shim TLS;
__thread int shim_t_locks TLS;
__thread int shim_t_in_real TLS;
static __thread int t_initing TLS;
static __thread int t_tid TLS;

struct shim_options *shim_opts_mut(void)
{
    return &g_opts;
}

bool shim_active(void)
{
    return shim_state() == SHIM_ACTIVE;
}

bool shim_tracking(void)
{
    return atomic_load_explicit(&g_tracking, memory_order_acquire);
}

int shim_tid(void)
{
    if (!t_tid)
        t_tid = (int)syscall(SYS_gettid);
    return t_tid;
}

void shim_fail(const char *why)
{
    if (atomic_exchange(&g_failed, 1))
        return;
    out_printf("tlsan: %s; passing through\n", why);
    atomic_store_explicit(&g_state, SHIM_OFF, memory_order_release);
    /* From now on frees go straight to the real free: the blocks held back in the
     * quarantine would never be, and a correct program may need that memory (the usual
     * reason to get here is an exhausted address space). */
    if (shim_tracking())
        heap_quarantine_drain();
}

/* A sanitizer that replaces malloc itself: the shim must stay out of its way. */
static const char *sanitizer_present(void)
{
    static const char *const syms[][2] = {
        {"__asan_init", "AddressSanitizer"},
        {"__hwasan_init", "HWAddressSanitizer"},
        {"__msan_init", "MemorySanitizer"},
        {"__tsan_init", "ThreadSanitizer"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (dlsym(RTLD_DEFAULT, syms[i][0]))
            return syms[i][1];
    return NULL;
}

/* Every lock, so no copy in the child is held by a thread that does not exist there. The
 * order is the nesting order: the quarantine lock is the only one held while taking others
 * (heap_verify_quarantine reports under it: shard, symbolizer, symbolizer's heap, modules
 * and output locks). */
static void fork_prepare(void)
{
    heap_lock_all();
    symbolizer_lock();
    symheap_lock();
    modules_lock();
    depot_lock();
    out_lock();
}

static void fork_parent(void)
{
    out_unlock();
    depot_unlock();
    modules_unlock();
    symheap_unlock();
    symbolizer_unlock();
    heap_unlock_all();
}

/* The process the shim's state belongs to: set at init and in each fork child. A vfork
 * child (no fork handlers run) shares the parent's memory; it must not close the parent's
 * trace or evict its quarantine, so its _exit skips the checks. */
static _Atomic int g_owner_pid;

static void fork_child(void)
{
    atomic_store(&g_owner_pid, (int)syscall(SYS_getpid));
    /* The locks may be copies of locks other threads held: those threads are gone. This
     * thread took them all in fork_prepare and its count of held locks says so. */
    shim_t_locks = 0;
    shim_t_in_real = 0;
    heap_reinit_locks();
    heap_fork_child();
    depot_reinit_lock();
    modules_reinit_lock();
    symheap_reinit_lock();
    symbolizer_reinit_in_child();
    out_reinit_lock();
    report_reinit_in_child();
    t_tid = 0;
    out_open_log(g_opts.log_path);
    trace_reopen_in_child();
}

static void print_active_line(void)
{
    static const char *const shown[] = {
        "quarantine_mb", "fill",     "redzone",  "stack_depth", "checksum", "trace",
        "halt_on_error", "exitcode", "log_path", "trace_path",  "trace_dir"};
    char buf[1024];
    struct outbuf b = {buf, 0, sizeof buf};
    out_appendf(&b, "==%d==tlsan: active (", (int)getpid());
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        char pair[OPTIONS_STR_MAX_BYTES + 32];
        options_format_pair(&g_opts, shown[i], pair, sizeof pair);
        out_appendf(&b, "%s%s", i ? " " : "", pair);
    }
    out_appendf(&b, ")\n");
    out_lock();
    out_write(b.data, b.len);
    out_unlock();
}

/* Findings turn an exit status of 0 into `exitcode`; any other status stays the program's
 * (a failing program still fails, whatever exitcode says). The status is known only to exit
 * handlers: this one, registered at init, runs after _dl_fini (registered later, at the
 * program's start) has run the destructor, which leaves the decision here. */
static atomic_bool g_exit_hooked, g_exit_findings;

static void exit_status_hook(int status, void *arg)
{
    (void)arg;
    if (status == 0 && atomic_load(&g_exit_findings)) {
        fflush(NULL);
        shim_real_exit(g_opts.exitcode);
    }
}

static void init_once(void)
{
    if (shim_interpose_resolve)
        shim_interpose_resolve();
    options_defaults(&g_opts);
    char errs[1024];
    bool ok = options_parse(&g_opts, getenv("TLSAN_OPTIONS"), errs, sizeof errs);
    out_open_log(g_opts.log_path);
    if (!ok)
        out_printf("%s\n", errs);
    if (g_opts.help) {
        char help[OPTIONS_HELP_BYTES];
        size_t help_len = options_help_text(help, sizeof help);
        out_lock();
        out_write(help, help_len);
        out_unlock();
    }
    suppress_load(g_opts.suppressions);

    const char *under = NULL;
#ifdef SHIM_HAVE_VALGRIND
    if (RUNNING_ON_VALGRIND)
        under = "Valgrind";
#endif
    if (!under) {
        if (!heap_init()) {
            shim_fail("cannot map the heap side table");
            return;
        }
        atomic_store_explicit(&g_tracking, true, memory_order_release);
        /* Only an interposer of malloc is in a sanitizer's way: the unit tests link the
         * shim without interpose.c, and run under AddressSanitizer and ThreadSanitizer. */
        under = shim_interpose_resolve ? sanitizer_present() : NULL;
    }
    if (under) {
        out_printf("==%d==tlsan: running under %s; the shim passes through (no checks, no "
                   "trace)\n",
                   (int)getpid(), under);
        atomic_store_explicit(&g_state, SHIM_OFF, memory_order_release);
        return;
    }
    /* Before the first stack capture initialises libunwind, while the process most likely
     * has one thread: libunwind's own memory validation would hold a pipe on the lowest free
     * descriptors and read and write them for the rest of the run (unwind.h). */
    if (g_opts.stack_depth > 0) {
        unwind_setup();
        if (g_opts.stack_memo)
            depot_memo_init();
    }
    trace_open();
    atomic_store(&g_owner_pid, (int)syscall(SYS_getpid));
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
        shim_fail("pthread_atfork failed");
        return;
    }
    if (on_exit(exit_status_hook, NULL) == 0)
        atomic_store(&g_exit_hooked, true);
    if (g_opts.verbosity >= 1)
        print_active_line();
    int expect = SHIM_INITING;
    atomic_compare_exchange_strong(&g_state, &expect, SHIM_ACTIVE);
}

void shim_init(void)
{
    for (;;) {
        int st = atomic_load_explicit(&g_state, memory_order_acquire);
        if (st == SHIM_ACTIVE || st == SHIM_OFF)
            return;
        if (st == SHIM_INITING) {
            if (t_initing)
                return; /* a hook nested in our own initialisation */
            /* Wait for the table only; see the file comment. */
            while (!shim_tracking() && shim_state() == SHIM_INITING)
                sched_yield();
            return;
        }
        int expect = SHIM_UNINIT;
        if (atomic_compare_exchange_strong(&g_state, &expect, SHIM_INITING))
            break;
    }
    t_initing = 1;
    bool entered = shim_enter();
    init_once();
    if (entered)
        shim_leave();
    t_initing = 0;
}

/* The annotation API's probe (tlsan.h); the other tlsan_rt_* live in shim/engine/. */
__attribute__((visibility("default"))) int tlsan_rt_active(void)
{
    return shim_active();
}

/* The unit tests link these sources without interpose.c: they initialise by hand. */
__attribute__((constructor)) static void shim_constructor(void)
{
    if (shim_interpose_resolve)
        shim_init();
}

/* Runs once, late: checks what is left in quarantine, then makes findings the exit status,
 * as LeakSanitizer does. From the destructor (the program's atexit handlers and destructors
 * ran before) or from the program's own _exit/_Exit (interpose.c), which skip destructors:
 * a write after free followed by _exit is found too, and its trace closed. */
static atomic_int g_exit_checked;

/* The heap's last checks, once per process: what is in quarantine and the redzones of what
 * is still live. */
static void verify_heap_once(void)
{
    if (atomic_exchange(&g_exit_checked, 1))
        return;
    heap_verify_quarantine(1);
    heap_verify_live(1);
    sample_verify_live(1);
}

void shim_exit_quick_checks(void)
{
    if (!shim_active() || atomic_load(&g_owner_pid) != (int)syscall(SYS_getpid))
        return;
    bool entered = shim_enter();
    verify_heap_once();
    /* The process ends here as it chose to: its trace gets its end record, as at exit, so
     * that it does not read as the trace of a process that died. */
    trace_close(report_count());
    if (entered)
        shim_leave();
}

void shim_exit_checks(void)
{
    if (!shim_active())
        return;
    bool entered = shim_enter();
    verify_heap_once();
    uint64_t n = report_count();
    if (g_opts.verbosity >= 1) {
        struct heap_stats st;
        heap_get_stats(&st);
        out_printf("==%d==tlsan: exit: %llu finding%s; %llu allocations, %llu blocks live, "
                   "%llu blocks (%llu bytes) in quarantine\n",
                   (int)getpid(), (unsigned long long)n, n == 1 ? "" : "s",
                   (unsigned long long)st.allocs, (unsigned long long)st.live_blocks,
                   (unsigned long long)st.quarantine_blocks,
                   (unsigned long long)st.quarantine_bytes);
    }
    if (g_opts.verbosity >= 2) {
        uint64_t hits, fills;
        depot_memo_counts(&hits, &fills);
        out_printf("==%d==tlsan: exit: the memo of repeated stacks answered %llu of this "
                   "thread's captures, from %llu fills\n",
                   (int)getpid(), (unsigned long long)hits, (unsigned long long)fills);
    }
    if (g_opts.verbosity >= 1 && suppress_count())
        out_printf("==%d==tlsan: exit: %lu finding%s suppressed\n", (int)getpid(), suppress_count(),
                   suppress_count() == 1 ? "" : "s");
    trace_close(n);
    if (entered)
        shim_leave();
    if (n && atomic_load(&g_exit_hooked)) {
        atomic_store(&g_exit_findings, true);
    } else if (n) {
        /* No exit status to go by: findings decide. _exit skips stdio's flush, which
         * exit() does only after this destructor. */
        fflush(NULL);
        shim_real_exit(g_opts.exitcode);
    }
}

_Noreturn void shim_real_exit(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}

__attribute__((destructor)) static void shim_destructor(void)
{
    shim_exit_checks();
}
