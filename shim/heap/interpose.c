/* interpose.c - the allocator functions the program calls (LD_PRELOAD), and the real ones.
 *
 * Every hook takes one of four paths:
 *   pass  the shim is off (ASan, Valgrind, internal failure) or not tracking yet: the real
 *         function, nothing else;
 *   defer entered while this thread holds a shim lock or is inside the real allocator,
 *         which only a signal handler can do (lock.h): the real function, and the table's
 *         part left to the end of the locked section (heap_deferred_*), since taking any
 *         shim lock here could deadlock on the thread's own lock or corrupt the table; when
 *         the thread is inside the real allocator, not even that (its state is half
 *         updated): the block comes from the bootstrap buffer, and a free waits;
 *   lite  re-entered (libunwind, stdio, dlsym... allocating inside the shim) or during
 *         initialisation: the block is still tracked, so freeing it later from outside is
 *         not an invalid free, but it gets no redzone, no stack and no fill;
 *   full  tracked with its allocation stack and redzone; frees are checked and quarantined.
 * Before any of them: inside a symbolizer section (symheap.h: libdw, while a report is
 * symbolized) every allocation comes from the symbolizer's own heap, and a block of that heap
 * goes back to it, whoever frees it.
 * The real functions come from dlsym(RTLD_NEXT); dlsym itself may allocate before they are
 * known, which is served from a static bootstrap buffer (never freed; its blocks carry a
 * size word so realloc and malloc_usable_size work on them). The buffer also serves a
 * signal handler that interrupted the real allocator (the defer path below).
 *
 * libc's contracts are kept: errno untouched on success, ENOMEM on failure, the overflow checks of
 * calloc and reallocarray, posix_memalign's EINVAL for a bad alignment (errno untouched),
 * realloc(p, 0) frees and returns NULL as glibc does, realloc(NULL, n) is malloc(n), malloc(0)
 * returns a unique pointer, and the alignment rules of memalign and aligned_alloc are the real
 * functions' own (the shim calls them with the redzone added to the size). */
#include "deepbind.h"
#include "depot.h"
#include "engine/engine.h"
#include "heap/heap.h"
#include "heap/sample.h"
#include "lock.h"
#include "shim.h"
#include "symheap.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT      __attribute__((visibility("default")))
#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
/* The allocation stack, from the hook's caller (depot_capture_here: the walk starts in the
 * hook's frame; the shim's frames are dropped by address); no call at all when stacks are
 * off. */
#define STACK() (shim_opts()->stack_depth ? depot_capture_here() : 0)
/* Keeps a call out of tail position, so the caller's frame stays on the stack. */
#define NO_TAIL(p) __asm__ volatile("" : "+r"(p)::"memory")

/* Removed from glibc's headers in 2.26 but still an exported symbol programs may call. */
void cfree(void *p);

static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void *(*r_memalign)(size_t, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);
static size_t (*r_usable_size)(void *);
static atomic_int g_resolved;
static __thread int t_resolving __attribute__((tls_model("initial-exec")));

/* ---- the bootstrap buffer ---- */

#define BOOT_BYTES (256u * 1024u)
static _Alignas(64) unsigned char g_boot[BOOT_BYTES];
static atomic_size_t g_boot_used;

static int is_boot(const void *p)
{
    return (const unsigned char *)p >= g_boot && (const unsigned char *)p < g_boot + BOOT_BYTES;
}

/* Static memory is zero and never reused, so these blocks are zeroed (calloc). */
static void *boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    if (align & (align - 1) || align > BOOT_BYTES || n > BOOT_BYTES) {
        errno = ENOMEM;
        return NULL;
    }
    size_t used = atomic_load(&g_boot_used), start, end;
    do {
        start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
        end = start + n;
        if (end > BOOT_BYTES) {
            errno = ENOMEM;
            return NULL;
        }
    } while (!atomic_compare_exchange_weak(&g_boot_used, &used, end));
    memcpy(g_boot + start - sizeof(size_t), &n, sizeof n);
    return g_boot + start;
}

static size_t boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
    return n;
}

/* ---- the real functions ---- */

static void resolve(void)
{
    if (LIKELY(atomic_load_explicit(&g_resolved, memory_order_acquire)))
        return;
    /* Allocations inside dlsym on this thread go to the bootstrap buffer. Two threads may
     * resolve at once; they store the same values. */
    t_resolving = 1;
    r_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    r_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    r_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    r_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    r_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    r_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    r_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    r_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    r_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    r_usable_size = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    t_resolving = 0;
    if (!r_malloc || !r_free || !r_calloc || !r_realloc || !r_memalign || !r_posix_memalign) {
        static const char msg[] = "tlsan: cannot find the real allocator functions\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        _exit(127);
    }
    if (!r_aligned_alloc)
        r_aligned_alloc = r_memalign;
    atomic_store_explicit(&g_resolved, 1, memory_order_release);
}

void shim_interpose_resolve(void)
{
    resolve();
    heap_set_real_free(r_free);
}

/* The real functions as the non-pass paths call them: marked as inside the real allocator
 * (lock.h), so that a signal handler interrupting them does not enter it again. */
static void *real_malloc(size_t n)
{
    shim_real_enter();
    void *p = r_malloc(n);
    shim_real_leave();
    return p;
}

static void *real_calloc(size_t count, size_t size)
{
    shim_real_enter();
    void *p = r_calloc(count, size);
    shim_real_leave();
    return p;
}

/* ---- the path a hook takes ---- */

enum path { P_PASS, P_DEFER, P_LITE, P_FULL };

/* P_FULL holds the re-entry guard: the hook calls shim_leave() before returning. */
static inline enum path path(void)
{
    enum shim_state st = shim_state();
    if (UNLIKELY(st != SHIM_ACTIVE)) {
        if (st == SHIM_UNINIT) {
            shim_init();
            st = shim_state();
        }
        if (st == SHIM_INITING && !shim_tracking())
            return P_PASS;
        if (st != SHIM_ACTIVE && st != SHIM_INITING)
            return P_PASS;
        if (UNLIKELY(shim_t_locks))
            return P_DEFER;
        if (st == SHIM_INITING)
            return P_LITE;
    }
    if (UNLIKELY(shim_t_locks))
        return P_DEFER;
    return shim_enter() ? P_FULL : P_LITE;
}

/* When the real allocator fails and the quarantine holds memory, the quarantine is emptied
 * and the request tried once more: the memory the shim holds back must not be what makes a
 * correct program run out. (Not for absurd sizes, which no draining would satisfy.) */
#define RETRY_AFTER_DRAIN(p, call, n)                                                              \
    do {                                                                                           \
        if (UNLIKELY(!(p)) && (n) <= ((size_t)1 << 40)) {                                          \
            int saved_ = errno;                                                                    \
            if (heap_quarantine_drain()) {                                                         \
                (p) = (call);                                                                      \
                if (p)                                                                             \
                    errno = saved_;                                                                \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static inline void *tracked(void *p, size_t n, uint32_t stack, unsigned flags)
{
    if (p)
        heap_track(p, n, stack, flags);
    return p;
}

/* The defer path's allocation: the real block, tracked when the locked section ends. */
static inline void *deferred(void *p, size_t n)
{
    if (p)
        heap_deferred_track(p, n);
    return p;
}

/* The real block for a layout: memalign when it asks for an alignment, else malloc or
 * calloc (zeroed). */
static void *real_block(const struct heap_layout *l, int zeroed)
{
    void *p;
    shim_real_enter();
    p = l->align ? r_memalign(l->align, l->total)
        : zeroed ? r_calloc(1, l->total)
                 : r_malloc(l->total);
    shim_real_leave();
    return p;
}

/* The full path's block of n bytes (malloc, calloc with HEAP_ZEROED, realloc's new block
 * with `extra` room): laid out with its redzones (heap_layout), tried again once after
 * draining the quarantine, tracked. NULL (errno ENOMEM) when it cannot be had. */
static void *full_block(size_t n, unsigned flags, size_t extra, uint32_t stack)
{
    struct heap_layout l;
    if (!heap_layout(n, 0, flags, extra, &l))
        return NULL;
    int zeroed = (flags & HEAP_ZEROED) != 0;
    void *real = real_block(&l, zeroed);
    RETRY_AFTER_DRAIN(real, real_block(&l, zeroed), l.total);
    if (real)
        return heap_track_block(real, n, stack, &l);
    if (l.total == n + extra || n > ((size_t)1 << 40))
        return NULL;
    /* The real allocator has no room for what the shim adds (redzones, table), even with
     * the quarantine emptied. When it has none for the bare block either, the program's
     * request fails as natively (NULL, ENOMEM: a program may probe how much it can have),
     * and checking goes on. When the bare block fits, a correct program must not run out
     * because of the shim: it stops checking, and the block is the real allocator's own. */
    int saved = errno;
    real = zeroed ? real_calloc(1, n) : real_malloc(n);
    if (!real) {
        errno = ENOMEM;
        return NULL;
    }
    shim_fail("the real allocator is out of memory");
    errno = saved;
    return real;
}

/* The real allocator's usable size of a tracked block's real block. */
static size_t real_usable(void *p, size_t left)
{
    if (!r_usable_size)
        return 0;
    shim_real_enter();
    size_t n = r_usable_size((char *)p - left);
    shim_real_leave();
    return n;
}

/* The full path's end: errno as the caller left it unless the call failed (the stack
 * capture and a failed first try may set it). */
static inline void *done(void *p, int saved)
{
    if (p)
        errno = saved;
    shim_leave();
    return p;
}

/* ---- the hooks ---- */

/* malloc's body, for a block of `family` (malloc's or operator new's). */
__attribute__((always_inline)) static inline void *alloc_as(size_t n, unsigned family)
{
    if (UNLIKELY(symheap_t_active))
        return symheap_alloc(n, 16);
    if (UNLIKELY(!atomic_load_explicit(&g_resolved, memory_order_relaxed))) {
        if (t_resolving)
            return boot_alloc(n, 16);
        resolve();
    }
    switch (path()) {
    case P_PASS:
        return r_malloc(n);
    case P_DEFER:
        return shim_t_in_real ? boot_alloc(n, 16) : deferred(real_malloc(n), n);
    case P_LITE:
        return tracked(real_malloc(n), n, 0, HEAP_LITE | family);
    case P_FULL:
        break;
    }
    int saved = errno;
    uint32_t stack = STACK();
    void *p;
    if (UNLIKELY(sample_due()) && (p = sample_alloc(n, family, 0, stack)))
        return done(p, saved);
    return done(full_block(n, family, 0, stack), saved);
}

EXPORT void *malloc(size_t n)
{
    return alloc_as(n, HEAP_FAMILY_MALLOC);
}

/* The free of a block of the sampling pool (sample.h), by whatever path: checked on the full
 * path; only taken back otherwise; inside a locked section (a signal handler) left alone, a
 * leak, since the pool's lock may be this very thread's. */
__attribute__((noinline)) static void free_sampled(void *p, unsigned family)
{
    int saved = errno;
    resolve();
    enum path how = path();
    if (how == P_FULL) {
        size_t n;
        if (sample_size(p, &n))
            engine_heap_block_freed(p, n);
        uint32_t stack = STACK();
        sample_free(p, family, stack, true);
        shim_leave();
    } else if (how != P_DEFER) {
        sample_free(p, family, 0, false);
    }
    errno = saved;
}

/* free's body, for a function of `family` (free or operator delete): a block of another
 * family is reported as a mismatch and freed all the same. */
__attribute__((always_inline)) static inline void free_as(void *p, unsigned family)
{
    if (!p || UNLIKELY(is_boot(p)))
        return;
    if (UNLIKELY(symheap_owns(p))) {
        symheap_free(p);
        return;
    }
    if (UNLIKELY(sample_owns(p))) {
        free_sampled(p, family);
        return;
    }
    resolve();
    switch (path()) {
    case P_PASS:
        r_free(heap_pass_real(p, NULL));
        return;
    case P_DEFER:
        heap_deferred_free(p);
        return;
    case P_LITE:
        heap_free(p, 0, 1);
        return;
    case P_FULL:
        break;
    }
    int saved = errno; /* free leaves errno alone (glibc, POSIX 2024) */
    if (family == HEAP_FAMILY_MALLOC && !shim_opts()->stack_depth && !engine_has_arenas() &&
        heap_free_unclaimed(p)) {
        shim_leave();
        errno = saved;
        return;
    }
    /* The capture may re-enter a free of the same block (ld.so), which must then leave it
     * to this one: marked as this thread's (heap_freeing) while the stack is captured, and
     * freed in one table visit after; with engine arenas to tell, the block's size is needed
     * before, so it is claimed before the capture instead. */
    if (!engine_has_arenas()) {
        heap_freeing(p);
        uint32_t stack = STACK();
        heap_freeing(NULL);
        heap_free_once(p, family, stack);
        shim_leave();
        errno = saved;
        return;
    }
    struct heap_claim c;
    heap_free_claim(p, &c);
    c.dealloc = (enum heap_family)family;
    if (c.state == HEAP_CLAIM_LIVE)
        engine_heap_block_freed(p, c.size);
    uint32_t stack = STACK();
    heap_free_finish(p, &c, stack);
    shim_leave();
    errno = saved;
}

EXPORT void free(void *p)
{
    free_as(p, HEAP_FAMILY_MALLOC);
}

EXPORT void cfree(void *p)
{
    free(p);
}

EXPORT void *calloc(size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (UNLIKELY(symheap_t_active))
        return symheap_calloc(count, size);
    if (UNLIKELY(!atomic_load_explicit(&g_resolved, memory_order_relaxed))) {
        if (t_resolving)
            return boot_alloc(n, 16);
        resolve();
    }
    switch (path()) {
    case P_PASS:
        return r_calloc(count, size);
    case P_DEFER:
        return shim_t_in_real ? boot_alloc(n, 16) : deferred(real_calloc(1, n), n);
    case P_LITE:
        return tracked(real_calloc(1, n), n, 0, HEAP_LITE);
    case P_FULL:
        break;
    }
    int saved = errno;
    uint32_t stack = STACK();
    void *p;
    if (UNLIKELY(sample_due()) && (p = sample_alloc(n, HEAP_FAMILY_MALLOC, 1, stack)))
        return done(p, saved);
    return done(full_block(n, HEAP_ZEROED, 0, stack), saved);
}

/* realloc for a tracked heap, re-entered (lite): a new block, a copy, and the old block
 * freed at once. */
static void *realloc_lite(void *p, size_t n)
{
    size_t old;
    if (heap_lookup(p, &old) != 1) {
        heap_free(p, 0, 1);
        errno = ENOMEM;
        return NULL;
    }
    void *q = tracked(real_malloc(n), n, 0, HEAP_LITE);
    if (!q)
        return NULL; /* the old block stays as it was */
    memcpy(q, p, old < n ? old : n);
    heap_free(p, 0, 1);
    return q;
}

/* realloc inside a locked section (defer path): the table is read through heap_peek (without
 * the shard's lock when this thread's interrupted section holds it); a block it does not know
 * is copied for the real allocator's usable size of it (at least its requested size). When
 * heap_peek cannot tell (-1) the realloc fails with ENOMEM rather than guess where the block
 * starts. */
static void *realloc_deferred(void *p, size_t n)
{
    size_t old = heap_deferred_size(p), left = 0;
    if (!old) {
        int known = heap_peek(p, &old, &left);
        if (known < 0 || known == 2) { /* busy, or freed already (its pages may be guarded) */
            errno = ENOMEM;
            return NULL;
        }
        if (known == 0)
            old = r_usable_size ? r_usable_size(p) : 0;
    }
    void *q = shim_t_in_real ? boot_alloc(n, 16) : deferred(real_malloc(n), n);
    if (!q)
        return NULL;
    memcpy(q, p, old < n ? old : n);
    heap_deferred_free(p);
    return q;
}

/* realloc of a block of the symbolizer's heap, or inside a symbolizer section of a new
 * block: there, the symbolizer's heap; outside (the loader growing what dlopen allocated), a
 * block of the program's heap takes over. */
static void *realloc_symheap(void *p, size_t n)
{
    if (p && n == 0) {
        symheap_free(p);
        return NULL;
    }
    if (symheap_t_active)
        return symheap_realloc(p, n);
    void *q = malloc(n);
    if (q) {
        size_t old = symheap_size(p);
        memcpy(q, p, old < n ? old : n);
        symheap_free(p);
    }
    return q;
}

EXPORT void *realloc(void *p, size_t n)
{
    if (UNLIKELY(symheap_owns(p) || (!p && symheap_t_active)))
        return realloc_symheap(p, n);
    if (UNLIKELY(!atomic_load_explicit(&g_resolved, memory_order_relaxed))) {
        if (t_resolving) {
            void *q = boot_alloc(n, 16);
            if (q && p)
                memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
            return q;
        }
        resolve();
    }
    if (!p)
        return malloc(n);
    if (n == 0) {
        /* glibc: realloc(p, 0) frees p and returns NULL. */
        free(p);
        return NULL;
    }
    if (UNLIKELY(is_boot(p))) {
        void *q = malloc(n);
        if (q)
            memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
        return q;
    }
    if (UNLIKELY(sample_owns(p))) {
        /* A sampled block moves to a new one (which may be sampled again). */
        size_t old;
        if (!sample_size(p, &old)) {
            free(p); /* freed already or not a block: reported as free reports it */
            errno = ENOMEM;
            return NULL;
        }
        void *q = malloc(n);
        if (q) {
            memcpy(q, p, old < n ? old : n);
            free(p);
        }
        return q;
    }
    switch (path()) {
    case P_PASS: {
        size_t old, left;
        if (!shim_tracking() || heap_peek(p, &old, &left) != 1 || !left)
            return r_realloc(p, n);
        /* A block the shim laid out, before it stopped: moved to a plain one. */
        void *q = r_malloc(n);
        if (q) {
            memcpy(q, p, old < n ? old : n);
            r_free(heap_pass_real(p, NULL));
        }
        return q;
    }
    case P_DEFER:
        return realloc_deferred(p, n);
    case P_LITE:
        return realloc_lite(p, n);
    case P_FULL:
        break;
    }
    /* In place when the real block has room (the checks of a free are made on the old
     * end); otherwise a new block with room to grow by half again (so that a buffer grown
     * step by step moves a logarithmic number of times), a copy, and the old block freed
     * into the quarantine, so a stale pointer to it is caught like any freed one. The old
     * block is claimed before the stack is captured, as in free. */
    int saved = errno;
    struct heap_claim c;
    heap_free_claim(p, &c);
    uint32_t stack = STACK();
    if (c.state == HEAP_CLAIM_UNKNOWN && deepbind_seen() && deepbind_glibc_block(p)) {
        /* glibc's own block (a library opened with RTLD_DEEPBIND allocated it before its
         * calls were bound to the shim's): it moves to one of the shim's. */
        void *q = full_block(n, 0, 0, stack);
        if (q) {
            size_t old = real_usable(p, 0);
            memcpy(q, p, old < n ? old : n);
            shim_real_enter();
            r_free(p);
            shim_real_leave();
        }
        return done(q, saved);
    }
    if (c.state != HEAP_CLAIM_LIVE) {
        /* Freed already or never allocated: reported as free would report it. */
        heap_free_finish(p, &c, stack);
        errno = ENOMEM;
        shim_leave();
        return NULL;
    }
    if (heap_resize(p, &c, n, real_usable(p, c.left), stack)) {
        if (n < c.size)
            engine_heap_block_freed((char *)p + n, c.size - n);
        return done(p, saved);
    }
    size_t extra = n > c.size ? n / 2 : 0;
    void *q = full_block(n, 0, extra, stack);
    if (!q && extra)
        q = full_block(n, 0, 0, stack);
    if (!q) {
        heap_free_unclaim(p); /* the old block stays as it was */
    } else if (!shim_active()) {
        /* full_block gave up checking: the old block goes straight back too. */
        memcpy(q, p, c.size < n ? c.size : n);
        heap_free_unclaim(p);
        r_free(heap_pass_real(p, NULL));
    } else {
        memcpy(q, p, c.size < n ? c.size : n);
        engine_heap_block_freed(p, c.size);
        heap_free_finish(p, &c, stack);
    }
    return done(q, saved);
}

EXPORT void *reallocarray(void *p, size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

/* The aligned allocators: `real` is called with the redzone added to the size; it applies
 * its own alignment rules (and errors). */
enum align_fn { A_MEMALIGN, A_ALIGNED_ALLOC, A_VALLOC, A_PVALLOC };

static void *call_aligned(enum align_fn fn, size_t align, size_t n)
{
    void *p = NULL;
    shim_real_enter();
    switch (fn) {
    case A_MEMALIGN:
        p = r_memalign(align, n);
        break;
    case A_ALIGNED_ALLOC:
        p = r_aligned_alloc(align, n);
        break;
    case A_VALLOC:
    case A_PVALLOC:
        p = r_memalign(align, n); /* align is the page size; n already rounded */
        break;
    }
    shim_real_leave();
    return p;
}

/* boot_alloc with the alignment rounded up to a power of two. */
static void *boot_aligned(size_t align, size_t n)
{
    while (align & (align - 1))
        align &= align - 1, align <<= 1;
    return boot_alloc(n, align);
}

__attribute__((noinline)) static void *aligned_hook(enum align_fn fn, size_t align, size_t n,
                                                    unsigned family, uint32_t (*capture)(void))
{
    if (UNLIKELY(symheap_t_active)) {
        while (align & (align - 1))
            align &= align - 1, align <<= 1;
        return symheap_alloc(n, align);
    }
    if (UNLIKELY(!atomic_load_explicit(&g_resolved, memory_order_relaxed))) {
        if (t_resolving)
            return boot_aligned(align, n);
        resolve();
    }
    switch (path()) {
    case P_PASS:
        return fn == A_VALLOC && r_valloc     ? r_valloc(n)
               : fn == A_PVALLOC && r_pvalloc ? r_pvalloc(n)
                                              : call_aligned(fn, align, n);
    case P_DEFER:
        return shim_t_in_real ? boot_aligned(align, n) : deferred(call_aligned(fn, align, n), n);
    case P_LITE:
        return tracked(call_aligned(fn, align, n), n, 0, HEAP_LITE | family);
    case P_FULL:
        break;
    }
    int saved = errno;
    /* glibc checks the alignment before the size: an alignment above half the address space
     * is EINVAL even when the size (here with the redzone added) would overflow. */
    if ((fn == A_MEMALIGN || fn == A_ALIGNED_ALLOC) && align > SIZE_MAX / 2 + 1) {
        shim_leave();
        errno = EINVAL;
        return NULL;
    }
    uint32_t stack = capture();
    struct heap_layout l;
    void *p = NULL;
    if (heap_layout(n, align, family, 0, &l)) {
        size_t a = l.align > align ? l.align : align;
        errno = 0;
        p = call_aligned(fn, a, l.total);
        if (!p && errno != EINVAL) /* a bad alignment stays one */
            RETRY_AFTER_DRAIN(p, call_aligned(fn, a, l.total), l.total);
        if (p)
            p = heap_track_block(p, n, stack, &l);
    }
    return done(p, saved);
}

/* Frame 0 of the stack is the program's call: depot_capture drops every frame inside
 * libtlsan.so (this function, aligned_hook, the exported function) by address. No count of
 * frames to skip: the compiler made this call a tail call, and the count of 3 it was then
 * dropped the program's own frame (an aligned block's stack started inside libc). */
__attribute__((noinline)) static uint32_t capture_aligned(void)
{
    return depot_capture(0);
}

EXPORT void *memalign(size_t align, size_t n)
{
    void *p = aligned_hook(A_MEMALIGN, align, n, HEAP_FAMILY_MALLOC, capture_aligned);
    NO_TAIL(p);
    return p;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    void *p = aligned_hook(A_ALIGNED_ALLOC, align, n, HEAP_FAMILY_MALLOC, capture_aligned);
    NO_TAIL(p);
    return p;
}

EXPORT void *valloc(size_t n)
{
    void *p = aligned_hook(A_VALLOC, (size_t)sysconf(_SC_PAGESIZE), n, HEAP_FAMILY_MALLOC,
                           capture_aligned);
    NO_TAIL(p);
    return p;
}

/* pvalloc rounds the size up to whole pages (0 becomes one page); the block's size is that. */
EXPORT void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    size_t rounded = n ? (n + page - 1) & ~(page - 1) : page;
    void *p = aligned_hook(A_PVALLOC, page, rounded, HEAP_FAMILY_MALLOC, capture_aligned);
    NO_TAIL(p);
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    int saved = errno;
    void *p = aligned_hook(A_MEMALIGN, align, n, HEAP_FAMILY_MALLOC, capture_aligned);
    NO_TAIL(p);
    int err = p ? 0 : errno;
    errno = saved;
    if (!p)
        return err ? err : ENOMEM;
    *out = p;
    return 0;
}

/* glibc exports its allocator a second time under __libc_* names, and some programs call
 * those directly (a malloc wrapper reaching "the real one"). Left alone they would reach
 * glibc's heap with our blocks and ours with glibc's: a false invalid-free, or glibc's abort
 * on a pointer it never made. Aliases, not wrappers, so the stacks keep the same frames (gcc
 * would want glibc's declaration attributes repeated on each alias; they change no code). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#endif
EXPORT void *__libc_malloc(size_t n) __attribute__((alias("malloc")));
EXPORT void __libc_free(void *p) __attribute__((alias("free")));
EXPORT void *__libc_calloc(size_t count, size_t size) __attribute__((alias("calloc")));
EXPORT void *__libc_realloc(void *p, size_t n) __attribute__((alias("realloc")));
EXPORT void *__libc_memalign(size_t align, size_t n) __attribute__((alias("memalign")));
EXPORT void *__libc_valloc(size_t n) __attribute__((alias("valloc")));
EXPORT void *__libc_pvalloc(size_t n) __attribute__((alias("pvalloc")));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (is_boot(p))
        return boot_size(p);
    if (symheap_owns(p))
        return symheap_size(p);
    if (sample_owns(p)) {
        size_t n;
        return sample_size(p, &n) ? n : 0;
    }
    resolve();
    enum shim_state st = shim_state();
    if (st == SHIM_UNINIT) {
        shim_init();
        st = shim_state();
    }
    size_t n = 0, left = 0;
    if (st == SHIM_OFF || (st == SHIM_INITING && !shim_tracking())) {
        if (shim_tracking() && heap_peek(p, &n, &left) == 1 && left)
            return n; /* laid out by the shim before it stopped */
        return r_usable_size ? r_usable_size(p) : 0;
    }
    if (UNLIKELY(shim_t_locks)) {
        /* Inside a locked section (a signal handler): heap_peek reads the table without the
         * lock its interrupted section holds; 0 when it cannot tell (as for a freed block). */
        if ((n = heap_deferred_size(p)) != 0)
            return n;
        int known = heap_peek(p, &n, &left);
        if (known != 0)
            return known == 1 ? n : 0;
        return r_usable_size ? r_usable_size(p) : 0;
    }
    /* A block a handler allocated in a section that has ended may still wait in the list for
     * the table when a handler deferred it in the section's last instructions (lock.h). */
    if (UNLIKELY(shim_t_deferred) && (n = heap_deferred_size(p)) != 0)
        return n;
    /* The requested size: the redzone is not the program's to use. */
    size_t size;
    return heap_lookup(p, &size) == 1 ? size : 0;
}

/* _exit and _Exit skip destructors, so without these a write after free followed by _exit
 * would never be checked, nor the trace closed. A call made inside the shim (a halting
 * report) ends at once; so does a vfork child's (shim_exit_quick_checks), and one from a
 * signal handler that interrupted a locked section of its own thread (lock.h): the checks
 * and the trace's end would wait for a lock the thread itself holds. That process ends as
 * one that died, its trace without an end record. */
static void exit_checks(void)
{
    if (!shim_t_in_shim && !shim_t_locks)
        shim_exit_quick_checks();
}

EXPORT void _exit(int status)
{
    exit_checks();
    shim_real_exit(status);
}

EXPORT void _Exit(int status)
{
    exit_checks();
    shim_real_exit(status);
}

/* ---- SIGSEGV as the program sees it ----
 *
 * The shim's SIGSEGV handler (heap.c) is installed when the first block is sampled or
 * guarded. From then on the program's sigaction of SIGSEGV sets and reads an action kept for
 * the program, which the handler chains to for every fault that is not the shim's: the
 * program sees the disposition it would natively (Rust's runtime, say, installs its stack
 * overflow handler only over SIG_DFL), and a handler it installs later does not take the
 * faults on sampled and guarded blocks away from the shim. signal() and its aliases set the
 * action through glibc's internal sigaction, which this does not see: for SIGSEGV they are
 * sigaction calls here, with glibc's flags. Other signals go to the next definitions. */
static void *next_fn(void *_Atomic *cache, const char *name)
{
    void *fn = atomic_load_explicit(cache, memory_order_acquire);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(cache, fn, memory_order_release);
    }
    return fn;
}

typedef void (*sig_handler_fn)(int);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sig_handler_fn (*signal_fn)(int, sig_handler_fn);
static void *_Atomic g_next_sigaction, *_Atomic g_next_signal, *_Atomic g_next_sysv_signal;

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig == SIGSEGV && heap_segv_program_action(act, old))
        return 0;
    sigaction_fn next = (sigaction_fn)next_fn(&g_next_sigaction, "sigaction");
    return next(sig, act, old);
}

/* signal(SIGSEGV, handler) as glibc makes it: `flags`, the signal blocked in its handler
 * unless SA_NODEFER; the previous handler returned. */
static sig_handler_fn segv_signal(sig_handler_fn handler, int flags)
{
    if (handler == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (!(flags & SA_NODEFER))
        sigaddset(&act.sa_mask, SIGSEGV);
    act.sa_flags = flags;
    return sigaction(SIGSEGV, &act, &old) < 0 ? SIG_ERR : old.sa_handler;
}

/* BSD semantics (glibc's signal, bsd_signal and ssignal are one function). */
EXPORT sig_handler_fn signal(int sig, sig_handler_fn handler)
{
    if (sig == SIGSEGV)
        return segv_signal(handler, SA_RESTART);
    return ((signal_fn)next_fn(&g_next_signal, "signal"))(sig, handler);
}

/* System V semantics: one-shot, not blocked in its handler. */
EXPORT sig_handler_fn sysv_signal(int sig, sig_handler_fn handler)
{
    if (sig == SIGSEGV)
        return segv_signal(handler, SA_RESETHAND | SA_NODEFER | SA_INTERRUPT);
    return ((signal_fn)next_fn(&g_next_sysv_signal, "sysv_signal"))(sig, handler);
}

/* Aliases, as glibc's are; gcc wants glibc's declaration attributes repeated, as above. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#endif
EXPORT sig_handler_fn bsd_signal(int sig, sig_handler_fn handler) __attribute__((alias("signal")));
EXPORT sig_handler_fn ssignal(int sig, sig_handler_fn handler) __attribute__((alias("signal")));
EXPORT sig_handler_fn __sysv_signal(int sig, sig_handler_fn handler)
    __attribute__((alias("sysv_signal")));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* ---- dlopen ----
 *
 * Only RTLD_DEEPBIND is the shim's concern: the opened objects' allocator calls are bound to
 * the shim's after the real dlopen (deepbind.h). Any other call is a sibling call to the next
 * dlopen, so that glibc takes the program's return address for its caller, which decides the
 * namespace and the RUNPATH a bare name is searched along. */
typedef void *(*dlopen_fn)(const char *, int);
static void *_Atomic g_next_dlopen;

EXPORT void *dlopen(const char *file, int flags)
{
    dlopen_fn next = (dlopen_fn)next_fn(&g_next_dlopen, "dlopen");
    if (UNLIKELY(flags & RTLD_DEEPBIND))
        return deepbind_dlopen(next, file, flags, __builtin_return_address(0));
    return next(file, flags);
}

/* ---- C++'s operator new and delete ----
 *
 * The replaceable forms (scalar and array; plain, nothrow, aligned) by their mangled names,
 * so that no C++ runtime is linked. A block remembers its family (heap.h), and a delete of a
 * malloc'd block, a free of a new'd one, or delete and delete[] swapped is reported as an
 * alloc-dealloc-mismatch. The blocks are the shim's own, as malloc's. What only the C++
 * runtime does stays its own: when the shim cannot allocate, the call goes to the next
 * definition (libstdc++'s), which calls the new-handler, tries malloc again and throws
 * std::bad_alloc (or returns NULL for the nothrow forms); its block is then marked as of the
 * family. Interposition only forwards. A delete is a free of the family: the size and
 * alignment arguments are the allocator's to ignore (glibc's free needs neither). */

/* The forms of operator new: [array][form], the next definition's name. */
enum new_form { NEW_PLAIN, NEW_NOTHROW, NEW_ALIGNED, NEW_ALIGNED_NOTHROW, NEW_FORMS };
static const char *const g_new_names[2][NEW_FORMS] = {
    {"_Znwm", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t"},
    {"_Znam", "_ZnamRKSt9nothrow_t", "_ZnamSt11align_val_t", "_ZnamSt11align_val_tRKSt9nothrow_t"},
};
static void *_Atomic g_next_new[2][NEW_FORMS];

/* The next definition of a form, looked up at its first use (the C++ runtime is loaded by
 * then: the program calling it links it). */
static void *next_new(int array, enum new_form form)
{
    void *fn = atomic_load_explicit(&g_next_new[array][form], memory_order_acquire);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, g_new_names[array][form]);
        atomic_store_explicit(&g_next_new[array][form], fn, memory_order_release);
    }
    return fn;
}

/* The allocation failed in the shim: the next definition's answer (a block, NULL for the
 * nothrow forms, or a std::bad_alloc thrown through this frame, which holds no shim state). */
__attribute__((noinline)) static void *new_forward(int array, enum new_form form, size_t n,
                                                   size_t align, const void *tag)
{
    void *fn = next_new(array, form);
    if (!fn) {
        if (form == NEW_NOTHROW || form == NEW_ALIGNED_NOTHROW)
            return NULL;
        static const char msg[] = "tlsan: operator new failed and has no next definition\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        abort();
    }
    void *p = NULL;
    switch (form) {
    case NEW_PLAIN:
        p = ((void *(*)(size_t))fn)(n);
        break;
    case NEW_NOTHROW:
        p = ((void *(*)(size_t, const void *))fn)(n, tag);
        break;
    case NEW_ALIGNED:
        p = ((void *(*)(size_t, size_t))fn)(n, align);
        break;
    case NEW_ALIGNED_NOTHROW:
        p = ((void *(*)(size_t, size_t, const void *))fn)(n, align, tag);
        break;
    case NEW_FORMS:
        break;
    }
    /* Its block came from the shim's malloc, as a block of that family. */
    if (p && shim_active() && !shim_t_locks)
        heap_set_family(p, array ? HEAP_FAMILY_NEW_ARRAY : HEAP_FAMILY_NEW);
    return p;
}

/* ---- forms the program replaced ----
 *
 * The default of most forms calls another replaceable one (operator new[] calls operator
 * new, the nothrow new calls the throwing one, a sized or array delete calls operator delete,
 * ...), and a program may replace only the ones it calls into, typically operator new and
 * delete with a pool of its own. A form of the shim's stands for the default only while each
 * form its default calls, in turn, is the shim's; otherwise it goes to the next definition
 * (the C++ runtime's default), which calls the program's, as natively: else a nothrow new or
 * a new[] would come from the shim's heap and reach the program's own delete. */
enum delegate {
    D_NEW,
    D_NEW_ARRAY,
    D_NEW_ALIGNED,
    D_NEW_ARRAY_ALIGNED,
    D_DELETE,
    D_DELETE_ARRAY,
    D_DELETE_ALIGNED,
    D_DELETE_ARRAY_ALIGNED,
    D_COUNT
};
static const char *const g_delegate_names[D_COUNT] = {
    "_Znwm",  "_Znam",  "_ZnwmSt11align_val_t",  "_ZnamSt11align_val_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t"};
static _Atomic signed char g_delegate_state[D_COUNT]; /* 0: not looked up; 1: the shim's; 2: not */
#define DBIT(d) (1u << (d))

/* True when the global definition of delegate d is not this library's. */
__attribute__((noinline)) static bool delegate_lookup(unsigned d)
{
    void *fn = dlsym(RTLD_DEFAULT, g_delegate_names[d]);
    Dl_info theirs, ours;
    bool replaced = fn && dladdr(fn, &theirs) && dladdr((void *)delegate_lookup, &ours) &&
                    theirs.dli_fbase != ours.dli_fbase;
    atomic_store_explicit(&g_delegate_state[d], replaced ? 2 : 1, memory_order_relaxed);
    return replaced;
}

/* True when any delegate of the mask (DBIT) is the program's. */
static inline bool replaced_any(unsigned mask)
{
    for (unsigned d = 0; mask; d++, mask >>= 1) {
        if (!(mask & 1))
            continue;
        int st = atomic_load_explicit(&g_delegate_state[d], memory_order_relaxed);
        if (UNLIKELY(st == 0 ? delegate_lookup(d) : st == 2))
            return true;
    }
    return false;
}

/* The delegates of a form of operator new (none for the plain and the aligned scalar ones,
 * whose defaults call malloc and aligned_alloc). */
static inline unsigned new_delegates(int array, enum new_form form)
{
    bool aligned = form == NEW_ALIGNED || form == NEW_ALIGNED_NOTHROW;
    bool nothrow = form == NEW_NOTHROW || form == NEW_ALIGNED_NOTHROW;
    unsigned scalar = aligned ? DBIT(D_NEW_ALIGNED) : DBIT(D_NEW);
    unsigned arr = aligned ? DBIT(D_NEW_ARRAY_ALIGNED) : DBIT(D_NEW_ARRAY);
    if (array)
        return nothrow ? arr | scalar : scalar;
    return nothrow ? scalar : 0;
}

/* The family a delete form frees as: its own, unless the program replaced a form of
 * operator new its blocks come from (`news`, DBIT): those then come from the program's
 * operator, through malloc (which the default delete pairs with, glibc's free natively), and
 * are malloc's to the shim, not a mismatch. */
static inline unsigned delete_family(unsigned family, unsigned news)
{
    return UNLIKELY(replaced_any(news)) ? HEAP_FAMILY_MALLOC : family;
}

/* The next definition's answer, as the program's replacement makes it (its block is its
 * own: no family set). */
__attribute__((noinline)) static void *new_delegated(int array, enum new_form form, size_t n,
                                                     size_t align, const void *tag)
{
    void *fn = next_new(array, form);
    switch (fn ? form : NEW_FORMS) {
    case NEW_PLAIN:
        return ((void *(*)(size_t))fn)(n);
    case NEW_NOTHROW:
        return ((void *(*)(size_t, const void *))fn)(n, tag);
    case NEW_ALIGNED:
        return ((void *(*)(size_t, size_t))fn)(n, align);
    case NEW_ALIGNED_NOTHROW:
        return ((void *(*)(size_t, size_t, const void *))fn)(n, align, tag);
    case NEW_FORMS:
        break;
    }
    return new_forward(array, form, n, align, tag); /* no next definition: reported there */
}

__attribute__((always_inline)) static inline void *new_as(int array, enum new_form form, size_t n,
                                                          size_t align, const void *tag)
{
    unsigned family = array ? HEAP_FAMILY_NEW_ARRAY : HEAP_FAMILY_NEW;
    unsigned delegates = new_delegates(array, form);
    if (delegates && UNLIKELY(replaced_any(delegates))) {
        void *q = new_delegated(array, form, n, align, tag);
        NO_TAIL(q);
        return q;
    }
    int saved = errno;
    void *p = form == NEW_ALIGNED || form == NEW_ALIGNED_NOTHROW
                  ? aligned_hook(A_MEMALIGN, align, n, family, capture_aligned)
                  : alloc_as(n, family);
    if (LIKELY(p))
        return p;
    errno = saved;
    p = new_forward(array, form, n, align, tag);
    NO_TAIL(p);
    return p;
}

/* The mangled names, declared here for -Wmissing-prototypes (nothrow_t by reference is a
 * pointer, align_val_t a size_t). */
void *_Znwm(size_t n);
void *_Znam(size_t n);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag);
void *_ZnamRKSt9nothrow_t(size_t n, const void *tag);
void *_ZnwmSt11align_val_t(size_t n, size_t align);
void *_ZnamSt11align_val_t(size_t n, size_t align);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t n);
void _ZdaPvm(void *p, size_t n);
void _ZdlPvSt11align_val_t(void *p, size_t align);
void _ZdaPvSt11align_val_t(void *p, size_t align);
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t align);
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t align);
void _ZdlPvRKSt9nothrow_t(void *p, const void *tag);
void _ZdaPvRKSt9nothrow_t(void *p, const void *tag);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag);

EXPORT void *_Znwm(size_t n)
{
    return new_as(0, NEW_PLAIN, n, 0, NULL);
}

EXPORT void *_Znam(size_t n)
{
    return new_as(1, NEW_PLAIN, n, 0, NULL);
}

EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag)
{
    return new_as(0, NEW_NOTHROW, n, 0, tag);
}

EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag)
{
    return new_as(1, NEW_NOTHROW, n, 0, tag);
}

EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t align)
{
    return new_as(0, NEW_ALIGNED, n, align, NULL);
}

EXPORT void *_ZnamSt11align_val_t(size_t n, size_t align)
{
    return new_as(1, NEW_ALIGNED, n, align, NULL);
}

EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag)
{
    return new_as(0, NEW_ALIGNED_NOTHROW, n, align, tag);
}

EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag)
{
    return new_as(1, NEW_ALIGNED_NOTHROW, n, align, tag);
}

EXPORT void _ZdlPv(void *p)
{
    free_as(p, delete_family(HEAP_FAMILY_NEW, DBIT(D_NEW)));
}

EXPORT void _ZdaPv(void *p)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE)))) {
        void *fn = next_fn(&next, "_ZdaPv");
        if (fn) {
            ((void (*)(void *))fn)(p);
            return;
        }
    }
    free_as(p, delete_family(HEAP_FAMILY_NEW_ARRAY, DBIT(D_NEW_ARRAY) | DBIT(D_NEW)));
}

EXPORT void _ZdlPvm(void *p, size_t n)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE)))) {
        void *fn = next_fn(&next, "_ZdlPvm");
        if (fn) {
            ((void (*)(void *, size_t))fn)(p, n);
            return;
        }
    }
    (void)n;
    free_as(p, delete_family(HEAP_FAMILY_NEW, DBIT(D_NEW)));
}

EXPORT void _ZdaPvm(void *p, size_t n)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ARRAY) | DBIT(D_DELETE)))) {
        void *fn = next_fn(&next, "_ZdaPvm");
        if (fn) {
            ((void (*)(void *, size_t))fn)(p, n);
            return;
        }
    }
    (void)n;
    free_as(p, delete_family(HEAP_FAMILY_NEW_ARRAY, DBIT(D_NEW_ARRAY) | DBIT(D_NEW)));
}

EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align)
{
    (void)align;
    free_as(p, delete_family(HEAP_FAMILY_NEW, DBIT(D_NEW_ALIGNED)));
}

EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ALIGNED)))) {
        void *fn = next_fn(&next, "_ZdaPvSt11align_val_t");
        if (fn) {
            ((void (*)(void *, size_t))fn)(p, align);
            return;
        }
    }
    (void)align;
    free_as(p,
            delete_family(HEAP_FAMILY_NEW_ARRAY, DBIT(D_NEW_ARRAY_ALIGNED) | DBIT(D_NEW_ALIGNED)));
}

EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t align)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ALIGNED)))) {
        void *fn = next_fn(&next, "_ZdlPvmSt11align_val_t");
        if (fn) {
            ((void (*)(void *, size_t, size_t))fn)(p, n, align);
            return;
        }
    }
    (void)n, (void)align;
    free_as(p, delete_family(HEAP_FAMILY_NEW, DBIT(D_NEW_ALIGNED)));
}

EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t align)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ARRAY_ALIGNED) | DBIT(D_DELETE_ALIGNED)))) {
        void *fn = next_fn(&next, "_ZdaPvmSt11align_val_t");
        if (fn) {
            ((void (*)(void *, size_t, size_t))fn)(p, n, align);
            return;
        }
    }
    (void)n, (void)align;
    free_as(p,
            delete_family(HEAP_FAMILY_NEW_ARRAY, DBIT(D_NEW_ARRAY_ALIGNED) | DBIT(D_NEW_ALIGNED)));
}

EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *tag)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE)))) {
        void *fn = next_fn(&next, "_ZdlPvRKSt9nothrow_t");
        if (fn) {
            ((void (*)(void *, const void *))fn)(p, tag);
            return;
        }
    }
    (void)tag;
    free_as(p, delete_family(HEAP_FAMILY_NEW, DBIT(D_NEW)));
}

EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *tag)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ARRAY) | DBIT(D_DELETE)))) {
        void *fn = next_fn(&next, "_ZdaPvRKSt9nothrow_t");
        if (fn) {
            ((void (*)(void *, const void *))fn)(p, tag);
            return;
        }
    }
    (void)tag;
    free_as(p, delete_family(HEAP_FAMILY_NEW_ARRAY, DBIT(D_NEW_ARRAY) | DBIT(D_NEW)));
}

EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ALIGNED)))) {
        void *fn = next_fn(&next, "_ZdlPvSt11align_val_tRKSt9nothrow_t");
        if (fn) {
            ((void (*)(void *, size_t, const void *))fn)(p, align, tag);
            return;
        }
    }
    (void)align, (void)tag;
    free_as(p, delete_family(HEAP_FAMILY_NEW, DBIT(D_NEW_ALIGNED)));
}

EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
    static void *_Atomic next;
    if (UNLIKELY(replaced_any(DBIT(D_DELETE_ARRAY_ALIGNED) | DBIT(D_DELETE_ALIGNED)))) {
        void *fn = next_fn(&next, "_ZdaPvSt11align_val_tRKSt9nothrow_t");
        if (fn) {
            ((void (*)(void *, size_t, const void *))fn)(p, align, tag);
            return;
        }
    }
    (void)align, (void)tag;
    free_as(p,
            delete_family(HEAP_FAMILY_NEW_ARRAY, DBIT(D_NEW_ARRAY_ALIGNED) | DBIT(D_NEW_ALIGNED)));
}
