/* sample.c - guarded sampling: the pool, its slots, and the faults on them (sample.h).
 *
 * The pool is one mapping of 2 * n + 1 pages (n slots, SLOTS_MAX unless a finite RLIMIT_AS
 * makes it fewer: pool_slots), all inaccessible at first: guard, slot 0,
 * guard, slot 1, ..., guard. A sampled block lies at the end of its slot's page, rounded to
 * malloc's 16-byte alignment, so the first byte past it (or past the few bytes of that
 * rounding) is in the next guard page; the rest of the page is filled with the sentinel and
 * checked at the free, which catches an underflow and an overflow into the rounding. When
 * the block is freed its page (and both guards, in case a fault opened one) goes back to
 * inaccessible, and the slot joins a FIFO of freed slots: a new block takes a slot never
 * used, else the one freed longest ago, so each freed block stays guarded for as long as
 * the pool allows. Contents are kept (no MADV_DONTNEED): a program that goes on after a
 * read after free reads what it would have read natively, its old bytes.
 *
 * Costs, per sampled block: two mprotect calls and the fill of one page. With the default
 * rate that is a few nanoseconds per allocation on average (docs/performance.md). */
#include "heap/sample.h"
#include "depot.h"
#include "heap/heap.h"
#include "lock.h"
#include "out.h"
#include "runtime_report.h"
#include "shim.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define SLOTS_MAX 256u /* 2 MiB of address space with 4 KiB pages; at most 1 MiB resident */
/* Under a finite RLIMIT_AS (ulimit -v) the pool takes at most this fraction of the limit. */
#define LIMIT_SHARE 1024u
/* The periodic check of live slots: every SCAN_EVERY-th sampled allocation checks the edges
 * of the next SCAN_SLOTS slots (at the default rate, 8 slots per 64,000 allocations). */
#define SCAN_EVERY 64u
#define SCAN_SLOTS 8u

/* SLOT_GONE: its page given back (sample_give_back), never used again. */
enum slot_state { SLOT_UNUSED, SLOT_LIVE, SLOT_FREED, SLOT_GONE };

struct slot {
    uintptr_t addr; /* the block (the program's pointer) */
    size_t size;
    uint32_t alloc_stack, free_stack;
    unsigned family; /* enum heap_family */
    unsigned char state;
    /* The bytes around a live block hold the sentinel (set once sample_alloc filled them):
     * only then may a scan of live blocks compare them. */
    unsigned char edges_filled;
};

uintptr_t sample_g_lo;
_Atomic uintptr_t sample_g_hi;
__thread uint32_t sample_t_countdown __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_random __attribute__((tls_model("initial-exec")));

static shim_lock g_lock = SHIM_LOCK_INIT;
static struct slot *g_slots; /* g_nslots, mapped with the pool */
static size_t g_nslots;      /* set before the pool is published (sample_g_hi) */
static uint32_t *g_freed;    /* FIFO ring of freed slot indices */
static size_t g_freed_head, g_freed_count, g_unused_next;
static size_t g_page;
static int g_map_failed;
static int g_given_back; /* sample_give_back ran (once) */
/* Why sampling is off, said once by sample_alloc after the lock is dropped (no line is
 * written under a shim lock): OFF_NONE when it is on or was said. */
static enum { OFF_NONE, OFF_PAGE, OFF_LIMIT, OFF_MAP } g_off;
static unsigned long long g_off_kib;         /* OFF_LIMIT: the limit; OFF_MAP: the pool's size */
static int g_off_errno;                      /* OFF_MAP: mmap's */
static size_t g_scan_next, g_scan_countdown; /* the periodic check of live slots */

/* ---- the decision ---- */

/* xorshift64*, from the same seed on every thread: enough to keep a program's allocation
 * pattern from lining up with the countdown, and a run samples the same allocations each
 * time (a finding on a sampled block is reproducible, and tests are not flaky). */
static uint32_t next_random(void)
{
    if (!t_random)
        t_random = 0x9E3779B97F4A7C15ull;
    t_random ^= t_random >> 12;
    t_random ^= t_random << 25;
    t_random ^= t_random >> 27;
    return (uint32_t)((t_random * 0x2545F4914F6CDD1Dull) >> 32);
}

bool sample_next(void)
{
    uint64_t rate = shim_opts()->sample_rate;
    /* 0 on a thread's first allocation: a countdown is drawn, nothing sampled yet. */
    bool due = sample_t_countdown == 1;
    if (rate == 0) {
        sample_t_countdown = UINT32_MAX;
        return false;
    }
    if (rate == 1) {
        sample_t_countdown = 1;
        return true;
    }
    if (rate > UINT32_MAX / 2)
        rate = UINT32_MAX / 2;
    /* Uniform in [1, 2 * rate - 1]: one allocation in `rate` on average. */
    sample_t_countdown = 1 + next_random() % (uint32_t)(2 * rate - 1);
    return due;
}

/* ---- the pool ---- */

static void *map_none(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The slots the pool may have: SLOTS_MAX, or under a finite RLIMIT_AS (ulimit -v, read at the
 * first sampled block), where address space is what the program runs short of, as many as
 * fit in 1/LIMIT_SHARE of the limit (a 100 MB limit: 11 slots, 92 KiB), so that the pool
 * is not what makes a correct program's own mapping fail; 0 when not one fits. */
static size_t pool_slots(size_t page, unsigned long long *limit_kib)
{
    struct rlimit limit;
    int saved = errno;
    bool limited = getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
    errno = saved;
    *limit_kib = limited ? (unsigned long long)limit.rlim_cur / 1024 : 0;
    if (!limited)
        return SLOTS_MAX;
    uint64_t fit = (uint64_t)limit.rlim_cur / LIMIT_SHARE;
    fit = fit > page ? (fit - page) / (2 * page) : 0;
    return fit < SLOTS_MAX ? (size_t)fit : SLOTS_MAX;
}

/* Maps the pool on the first sampled block (lock held); false when it cannot (g_off then
 * says why, once). */
static bool pool_ready(void)
{
    if (g_slots)
        return true;
    if (g_map_failed)
        return false;
    g_map_failed = 1;
    long page = sysconf(_SC_PAGESIZE);
    if (page < 4096 || page > (1L << 16)) {
        g_off = OFF_PAGE;
        return false;
    }
    size_t n = pool_slots((size_t)page, &g_off_kib);
    if (!n) {
        g_off = OFF_LIMIT;
        return false;
    }
    g_page = (size_t)page;
    size_t bytes = (2 * n + 1) * g_page;
    size_t meta = n * sizeof *g_slots + n * sizeof *g_freed;
    int saved = errno;
    void *pool = map_none(bytes);
    void *m = mmap(NULL, meta, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    g_off_errno = errno;
    errno = saved;
    if (!pool || m == MAP_FAILED) {
        if (pool)
            munmap(pool, bytes);
        if (m != MAP_FAILED)
            munmap(m, meta);
        g_off = OFF_MAP;
        g_off_kib = bytes / 1024;
        return false;
    }
    g_map_failed = 0;
    g_nslots = n;
    g_freed = (uint32_t *)((char *)m + n * sizeof *g_slots);
    heap_segv_install();
    g_slots = m; /* under the lock: pool_ready's answer */
    sample_g_lo = (uintptr_t)pool;
    atomic_store_explicit(&sample_g_hi, (uintptr_t)pool + bytes, memory_order_release);
    return true;
}

/* The one line saying that sampling is off and why, after pool_ready refused (no lock held). */
static void say_off(void)
{
    shim_lock_take(&g_lock);
    int why = g_off;
    g_off = OFF_NONE;
    shim_lock_drop(&g_lock);
    const char *off = "tlsan: guarded sampling (sample_rate) off:";
    if (why == OFF_PAGE)
        out_printf("%s the page size is not between 4 and 64 KiB\n", off);
    else if (why == OFF_LIMIT)
        out_printf("%s RLIMIT_AS (ulimit -v) of %llu KiB leaves no room for one slot (the pool "
                   "takes at most 1/%u of the limit)\n",
                   off, g_off_kib, LIMIT_SHARE);
    else if (why == OFF_MAP)
        out_printf("%s its pool of %llu KiB could not be mapped (errno %d)\n", off, g_off_kib,
                   g_off_errno);
}

static uintptr_t slot_page(size_t k)
{
    return sample_g_lo + (2 * k + 1) * g_page;
}

/* The slot whose page holds addr, or -1 (a guard page, or outside). */
static long slot_of(uintptr_t addr)
{
    size_t index = (addr - sample_g_lo) / g_page;
    return index & 1 ? (long)(index / 2) : -1;
}

static unsigned live_scan(size_t count, int at_exit, int symbolize);

/* The bytes a block of n takes at its page's end: n rounded to malloc's 16-byte alignment,
 * and 16 for malloc(0), whose unique pointer must lie in the slot's page (a block at the
 * page's very end would start in the next guard page, and its free find no slot). */
static size_t block_room(size_t n)
{
    return n ? (n + 15) & ~(size_t)15 : 16;
}

/* The sentinel on the bytes of the slot's page around the block at a of n bytes: before it,
 * and its slack after it. */
static void fill_edges(uintptr_t page, uintptr_t a, size_t n)
{
    sentinel_fill((void *)page, a - page);
    sentinel_fill((void *)(a + n), block_room(n) - n);
}

void *sample_alloc(size_t n, unsigned family, int zeroed, uint32_t alloc_stack)
{
    shim_lock_take(&g_lock);
    if (!pool_ready()) {
        bool say = g_off != OFF_NONE;
        shim_lock_drop(&g_lock);
        if (say)
            say_off();
        return NULL;
    }
    if (n > g_page) {
        shim_lock_drop(&g_lock);
        return NULL;
    }
    size_t k;
    if (g_unused_next < g_nslots) {
        k = g_unused_next++;
    } else if (g_freed_count) {
        k = g_freed[g_freed_head];
        g_freed_head = (g_freed_head + 1) % g_nslots;
        g_freed_count--;
    } else {
        shim_lock_drop(&g_lock); /* every slot live */
        return NULL;
    }
    uintptr_t page = slot_page(k);
    size_t rounded = block_room(n);
    uintptr_t a = page + g_page - rounded;
    g_slots[k] = (struct slot){a, n, alloc_stack, 0, family, SLOT_LIVE, 0};
    shim_lock_drop(&g_lock);
    int saved = errno;
    if (mprotect((void *)page, g_page, PROT_READ | PROT_WRITE) != 0) {
        errno = saved;
        shim_lock_take(&g_lock);
        g_slots[k].state = SLOT_UNUSED; /* never handed out again: the kernel refused it */
        shim_lock_drop(&g_lock);
        return NULL;
    }
    fill_edges(page, a, n);
    if (zeroed)
        memset((void *)a, 0, n);
    shim_lock_take(&g_lock);
    g_slots[k].edges_filled = 1;
    bool scan = ++g_scan_countdown >= SCAN_EVERY;
    if (scan)
        g_scan_countdown = 0;
    shim_lock_drop(&g_lock);
    if (scan)
        live_scan(SCAN_SLOTS, 0, 0);
    return (void *)a;
}

bool sample_size(const void *p, size_t *size)
{
    uintptr_t a = (uintptr_t)p;
    long k = slot_of(a);
    bool live = false;
    if (k < 0 || k >= (long)g_nslots)
        return false;
    /* Inside a locked section (a signal handler, lock.h) this thread may hold the pool's
     * lock itself: the slot is read without it, as sample_fault reads it. */
    bool lock = !shim_t_locks;
    if (lock)
        shim_lock_take(&g_lock);
    if (g_slots && g_slots[k].state == SLOT_LIVE && g_slots[k].addr == a) {
        *size = g_slots[k].size;
        live = true;
    }
    if (lock)
        shim_lock_drop(&g_lock);
    return live;
}

/* ---- reports ---- */

static const char *access_name(int is_write)
{
    return is_write < 0 ? "an access" : is_write ? "a write" : "a read";
}

static const char *access_role(int is_write)
{
    return is_write < 0 ? "accessed here" : is_write ? "written here" : "read here";
}

/* An access that faulted on slot s: its page (after the free), or a guard page beside it
 * (`before`: the guard before the block's page; otherwise the one after). */
static void report_fault(const struct slot *s, uintptr_t addr, int is_write, int guard,
                         uint32_t here)
{
    struct report *r;
    if (!guard) {
        long off = (long)(addr - s->addr);
        r = report_begin(TLSAN_KIND_HEAP_USE_AFTER_FREE, 0,
                         "on address %p at offset %ld of a %zu-byte block at %p", (void *)addr, off,
                         s->size, (void *)s->addr);
        if (!r)
            return;
        report_line(r,
                    "  %s of a freed block, sampled into a page of its own made inaccessible "
                    "at its free",
                    access_name(is_write));
        report_fault_stack(r, access_role(is_write), here);
        report_stack(r, "freed here", s->free_stack);
        report_stack(r, "allocated here", s->alloc_stack);
        report_end(r, "at offset %ld of a %zu-byte block", off, s->size);
        return;
    }
    bool under = addr < s->addr;
    size_t dist = under ? s->addr - addr : addr - (s->addr + s->size);
    const char *where = under ? "before the start of" : "past the end of";
    r = report_begin(TLSAN_KIND_HEAP_BUFFER_OVERFLOW, 0,
                     "on address %p, %zu bytes %s a %zu-byte block at %p%s", (void *)addr, dist,
                     where, s->size, (void *)s->addr, under ? " (underflow)" : "");
    if (!r)
        return;
    report_line(r, "  %s of the guard page beside a sampled block%s", access_name(is_write),
                s->state == SLOT_FREED ? " (already freed)" : "");
    report_fault_stack(r, access_role(is_write), here);
    report_stack(r, "allocated here", s->alloc_stack);
    if (s->state == SLOT_FREED)
        report_stack(r, "freed here", s->free_stack);
    report_end(r, "%zu bytes %s a %zu-byte block", dist, where, s->size);
}

/* The bytes of the slot's page around a block changed: found at its free (free_stack), or
 * by a scan of the live blocks (`when`: "at exit" or "by a periodic check"; no free stack). */
static void report_edges(const struct slot *s, uintptr_t at, uint32_t free_stack, const char *when,
                         int symbolize)
{
    bool under = at < s->addr;
    size_t dist = under ? s->addr - at : at - (s->addr + s->size);
    const char *where = under ? "before the start of" : "past the end of";
    struct report *r =
        report_begin(TLSAN_KIND_HEAP_BUFFER_OVERFLOW, symbolize,
                     "on address %p, %zu bytes %s a %zu-byte block at %p%s", (void *)at, dist,
                     where, s->size, (void *)s->addr, under ? " (underflow)" : "");
    if (!r)
        return;
    report_line(r, "  the sampled block's page changed %s it (found %s%s)",
                under ? "before" : "after", when ? when : "when it was freed",
                when ? "; the block is live" : "");
    report_stack(r, "allocated here", s->alloc_stack);
    if (!when)
        report_stack(r, "freed here", free_stack);
    report_end(r, "%zu bytes %s a %zu-byte block", dist, where, s->size);
}

/* The first changed byte before the block in its page, and after it in its 16-byte slack:
 * how many there are (0 to 2), in at[]. */
static unsigned changed_edges(const struct slot *s, uintptr_t page, uintptr_t at[2])
{
    unsigned n = 0;
    size_t before = s->addr - page, slack = block_room(s->size) - s->size;
    size_t off = sentinel_find_change((void *)page, before);
    if (off < before)
        at[n++] = page + off;
    off = sentinel_find_change((void *)(s->addr + s->size), slack);
    if (off < slack)
        at[n++] = s->addr + s->size + off;
    return n;
}

/* Checks the bytes around `count` live slots from the cursor (all: SIZE_MAX), as heap.c does
 * for the redzones of its live blocks: an overflow into the slack, or an underflow, of a
 * sampled block that is never freed would otherwise go unseen. The pages are read under the
 * lock (a live slot's page cannot be closed meanwhile); what changed is copied and refilled,
 * then reported with the lock dropped. Returns the findings made. */
static unsigned live_scan(size_t count, int at_exit, int symbolize)
{
    struct damage {
        struct slot s;
        uintptr_t at;
    } found[2 * SCAN_SLOTS];
    unsigned total = 0;
    for (size_t done = 0; done < count;) {
        unsigned n = 0;
        shim_lock_take(&g_lock);
        if (!g_slots) {
            shim_lock_drop(&g_lock);
            break;
        }
        if (count > g_nslots)
            count = g_nslots;
        for (; done < count && n + 2 <= 2 * SCAN_SLOTS; done++) {
            size_t k = g_scan_next++ % g_nslots;
            const struct slot *s = &g_slots[k];
            if (s->state != SLOT_LIVE || !s->edges_filled)
                continue;
            uintptr_t page = slot_page(k), at[2];
            unsigned m = changed_edges(s, page, at);
            for (unsigned i = 0; i < m; i++)
                found[n++] = (struct damage){*s, at[i]};
            if (m) /* refilled: its free does not report them again */
                fill_edges(page, s->addr, s->size);
        }
        shim_lock_drop(&g_lock);
        for (unsigned i = 0; i < n; i++)
            report_edges(&found[i].s, found[i].at, 0, at_exit ? "at exit" : "by a periodic check",
                         symbolize);
        total += n;
    }
    return total;
}

unsigned sample_verify_live(int symbolize)
{
    return live_scan(SIZE_MAX, 1, symbolize);
}

static void report_bad_free(uintptr_t a, const struct slot *s, uint32_t free_stack)
{
    struct report *r;
    if (s && s->addr == a) {
        r = report_begin(TLSAN_KIND_DOUBLE_FREE, 0, "on address %p (a %zu-byte block)", (void *)a,
                         s->size);
        if (!r)
            return;
        report_line(r, "  the sampled block was freed before; %s", heap_bad_free_outcome());
        report_stack(r, "freed again here", free_stack);
        report_stack(r, "first freed here", s->free_stack);
        report_stack(r, "allocated here", s->alloc_stack);
        report_end(r, "of a %zu-byte block", s->size);
        return;
    }
    r = report_begin(TLSAN_KIND_INVALID_FREE, 0, "on address %p, which malloc did not return",
                     (void *)a);
    if (!r)
        return;
    report_line(r, "  not the start of a sampled block (an interior pointer); %s",
                heap_bad_free_outcome());
    report_stack(r, "freed here", free_stack);
    report_end(r, "on address %p", (void *)a);
}

/* ---- free ---- */

void sample_free(void *p, unsigned family, uint32_t free_stack, bool report)
{
    uintptr_t a = (uintptr_t)p;
    long k = slot_of(a);
    if (k >= (long)g_nslots)
        k = -1;
    shim_lock_take(&g_lock);
    struct slot s = {0};
    bool live = g_slots && k >= 0 && g_slots[k].state == SLOT_LIVE && g_slots[k].addr == a;
    if (g_slots && k >= 0)
        s = g_slots[k];
    if (live) {
        g_slots[k].state = SLOT_FREED;
        g_slots[k].free_stack = free_stack;
    }
    shim_lock_drop(&g_lock);
    if (!live) {
        if (report) {
            report_bad_free(a, k >= 0 && s.state == SLOT_FREED ? &s : NULL, free_stack);
            if (shim_opts()->halt_on_error == SHIM_HALT_NATIVE)
                abort(); /* glibc: "free(): double free detected" or "invalid pointer" */
        }
        return;
    }
    uintptr_t page = slot_page((size_t)k);
    if (report) {
        if (family != s.family)
            heap_report_mismatch(a, s.size, s.family, s.alloc_stack, family, free_stack);
        uintptr_t at[2];
        unsigned m = changed_edges(&s, page, at);
        for (unsigned i = 0; i < m; i++)
            report_edges(&s, at[i], free_stack, NULL, 0);
    }
    /* The page and both guards (a fault may have opened one) inaccessible, then the slot
     * may be taken again. */
    int saved = errno;
    bool closed = mprotect((void *)(page - g_page), 3 * g_page, PROT_NONE) == 0;
    errno = saved;
    shim_lock_take(&g_lock);
    if (closed) {
        g_freed[(g_freed_head + g_freed_count) % g_nslots] = (uint32_t)k;
        g_freed_count++;
    } /* else the slot is never used again */
    shim_lock_drop(&g_lock);
}

/* ---- giving the pool back ---- */

/* Page i of the pool (0 to 2n: guard, slot 0, guard, ...) may be unmapped when no live slot
 * needs it: a slot's page when the slot is not live, a guard when neither slot beside it is. */
static bool page_unneeded(size_t i)
{
    if (i & 1)
        return g_slots[i / 2].state != SLOT_LIVE;
    return (i == 0 || g_slots[i / 2 - 1].state != SLOT_LIVE) &&
           (i / 2 >= g_nslots || g_slots[i / 2].state != SLOT_LIVE);
}

bool sample_give_back(void)
{
    size_t pages = 0, live = 0;
    shim_lock_take(&g_lock);
    if (!g_slots || g_given_back) {
        shim_lock_drop(&g_lock);
        return false;
    }
    g_given_back = 1;
    for (size_t i = 0; i < 2 * g_nslots + 1; i++) {
        if (!page_unneeded(i))
            continue;
        int saved = errno;
        pages += munmap((void *)(sample_g_lo + i * g_page), g_page) == 0;
        errno = saved;
    }
    for (size_t k = 0; k < g_nslots; k++) {
        if (g_slots[k].state == SLOT_LIVE)
            live++;
        else
            g_slots[k].state = SLOT_GONE;
    }
    g_unused_next = g_nslots;
    g_freed_count = 0; /* the live slots join the ring again when freed */
    shim_lock_drop(&g_lock);
    if (pages)
        out_printf("tlsan: guarded sampling (sample_rate): the program ran out of memory; the "
                   "pool's %zu KiB not in use given back (sampling off but for its %zu live "
                   "blocks' slots)\n",
                   pages * g_page / 1024, live);
    return pages > 0;
}

/* ---- faults ---- */

bool sample_fault(uintptr_t addr, int is_write)
{
    if (!sample_owns((void *)addr) || !g_slots)
        return false;
    long k = slot_of(addr);
    size_t index = (addr - sample_g_lo) / g_page;
    int guard = k < 0;
    if (guard) {
        /* A guard page: the overflow of the block before it (its end touches the guard),
         * else the underflow of the one after it. */
        long before = (long)(index / 2) - 1, after = (long)(index / 2);
        k = before >= 0 && g_slots[before].state != SLOT_UNUSED ? before : after;
    }
    if (k < 0 || k >= (long)g_nslots)
        return false;
    struct slot s = g_slots[k]; /* read without the lock: a handler must not wait for it */
    if (!guard && s.state == SLOT_LIVE)
        /* Handed out, its page not yet accessible (a stale pointer of the slot's last block,
         * meanwhile): the access is retried. Once the page was made accessible and filled, a
         * fault on it is the program's own protection (mprotect of its page-aligned block):
         * it goes where it would natively, to the program's handler or death. */
        return !s.edges_filled;
    if (s.state == SLOT_UNUSED || s.state == SLOT_GONE)
        return false;
    bool entered = shim_enter();
    /* Frames dropped: this function, heap.c's on_segv, and the kernel's signal trampoline
     * (libc's __restore_rt), so that frame 0 is the faulting instruction. */
    uint32_t here = shim_opts()->stack_depth ? depot_capture(3) : 0;
    report_fault(&s, addr, is_write, guard, here);
    if (entered)
        shim_leave();
    if (shim_opts()->halt_on_error == SHIM_HALT_ALWAYS)
        return true; /* report_end exited */
    /* Natively the access lands in memory the allocator owns and the program goes on: the
     * page is made accessible (a freed block keeps its old bytes) until the slot's next free
     * or allocation protects it again. */
    uintptr_t at = sample_g_lo + index * g_page;
    int saved = errno;
    if (mprotect((void *)at, g_page, PROT_READ | PROT_WRITE) != 0) {
        errno = saved;
        return false;
    }
    errno = saved;
    return true;
}

/* ---- fork ---- */

void sample_lock(void)
{
    shim_lock_take(&g_lock);
}

void sample_unlock(void)
{
    shim_lock_drop(&g_lock);
}

void sample_reinit_lock(void)
{
    shim_lock_reset(&g_lock);
}
