/* arena.c - arenas: tlsan_arena_create/destroy, the range table of the free hook. */
#include "engine/arena.h"
#include "engine/sentinel_ranges.h"
#include "engine/state.h"
#include "engine/work.h"

#include "checker_report.h"
#include "checksum.h"
#include "depot.h"
#include "heap/heap.h"
#include "modules.h"
#include "out.h"
#include "check/plan_query.h" /* the checker's interface to the shim */
#include "runtime_report.h"
#include "shim.h"
#include "trace.h"
#include "tlsan/check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Adds a's range to the sorted table (mutex held). False when the table cannot engine_grow: the
 * arena is then not watched by the free hook. */
static bool ranges_add(struct arena *a)
{
    shim_lock_take(&g_arena_ranges.lock);
    if (g_arena_ranges.n == g_arena_ranges.cap) {
        size_t cap = g_arena_ranges.cap ? g_arena_ranges.cap * 2 : 256;
        void *m = mmap(NULL, cap * sizeof *g_arena_ranges.v, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            shim_lock_drop(&g_arena_ranges.lock);
            return false;
        }
        if (g_arena_ranges.v) {
            memcpy(m, g_arena_ranges.v, g_arena_ranges.n * sizeof *g_arena_ranges.v);
            munmap(g_arena_ranges.v, g_arena_ranges.cap * sizeof *g_arena_ranges.v);
        }
        g_arena_ranges.v = m;
        g_arena_ranges.cap = cap;
    }
    size_t i = g_arena_ranges.n;
    while (i > 0 && g_arena_ranges.v[i - 1].lo > a->base) {
        g_arena_ranges.v[i] = g_arena_ranges.v[i - 1];
        i--;
    }
    g_arena_ranges.v[i] = (struct arena_range){a->base, a->base + a->size, a};
    g_arena_ranges.n++;
    atomic_store_explicit(&engine_g_arenas, (unsigned)g_arena_ranges.n, memory_order_relaxed);
    shim_lock_drop(&g_arena_ranges.lock);
    return true;
}

static void ranges_remove(struct arena *a)
{
    shim_lock_take(&g_arena_ranges.lock);
    for (size_t i = 0; i < g_arena_ranges.n; i++) {
        if (g_arena_ranges.v[i].a == a) {
            memmove(&g_arena_ranges.v[i], &g_arena_ranges.v[i + 1],
                    (g_arena_ranges.n - i - 1) * sizeof *g_arena_ranges.v);
            g_arena_ranges.n--;
            break;
        }
    }
    atomic_store_explicit(&engine_g_arenas, (unsigned)g_arena_ranges.n, memory_order_relaxed);
    shim_lock_drop(&g_arena_ranges.lock);
}

void engine_heap_block_freed_slow(const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    if (hi <= lo)
        return;
    struct arena *gone[8];
    size_t n_gone = 0;
    shim_lock_take(&g_arena_ranges.lock);
    /* The first range ending after lo (the ranges are disjoint, so their ends are sorted
     * too), then every range starting before hi. */
    size_t l = 0, r = g_arena_ranges.n;
    while (l < r) {
        size_t m = l + (r - l) / 2;
        if (g_arena_ranges.v[m].hi <= lo)
            l = m + 1;
        else
            r = m;
    }
    while (l < g_arena_ranges.n && g_arena_ranges.v[l].lo < hi &&
           n_gone < sizeof gone / sizeof gone[0]) {
        gone[n_gone++] = g_arena_ranges.v[l].a;
        atomic_store_explicit(&g_arena_ranges.v[l].a->gone, true, memory_order_release);
        memmove(&g_arena_ranges.v[l], &g_arena_ranges.v[l + 1],
                (g_arena_ranges.n - l - 1) * sizeof *g_arena_ranges.v);
        g_arena_ranges.n--;
    }
    atomic_store_explicit(&engine_g_arenas, (unsigned)g_arena_ranges.n, memory_order_relaxed);
    shim_lock_drop(&g_arena_ranges.lock);
    if (!n_gone)
        return;
    atomic_store_explicit(&g_arena_freed, true, memory_order_release);
    for (size_t i = 0; i < n_gone; i++)
        usage_warning(
            "arena '%s' [%p, +%llu) freed before tlsan_arena_destroy; dropped (its tensors "
            "are unbound and its memory no longer read)",
            gone[i]->name ? gone[i]->name : "?", (void *)gone[i]->base, (ull)gone[i]->size);
}

/* Frees what an ended arena keeps about its bytes (intervals, live tensors, placements). */
static void arena_free_tables(struct arena *a)
{
    for (size_t i = 0; i < a->n_sentinel; i++)
        released_tenant_unref(a->sentinel[i].released);
    free(a->sentinel);
    free(a->live);
    free(a->placements);
    a->sentinel = NULL;
    a->live = NULL;
    a->placements = NULL;
    a->n_sentinel = a->cap_sentinel = a->cap_live = a->n_placements = a->cap_placements = 0;
}

/* Drops the arenas whose memory was freed (mutex held): their tensors are unbound without
 * reading a byte, their lists go, and they stay on the list, dead, only so that their
 * tlsan_arena_destroy is quietly accepted (the warning was given at the free). */
void arena_reap_freed(void)
{
    atomic_store_explicit(&g_arena_freed, false, memory_order_relaxed);
    for (struct arena *a = g_engine.arenas; a; a = a->next) {
        if (a->dead || !atomic_load_explicit(&a->gone, memory_order_acquire))
            continue;
        for (size_t i = 0; i < a->n_live; i++) {
            a->live[i]->bound = false;
            a->live[i]->epoch++;
        }
        a->n_live = 0;
        trace_arena_end(a->trace_id, 0);
        a->dead = true;
        arena_free_tables(a);
    }
}

void tlsan_rt_arena_create(const char *name, const void *base, size_t size_bytes)
{
    if (!engine_active())
        return;
    uint32_t stack = depot_capture(1);
    if (!base || !size_bytes) {
        usage_warning("tlsan_arena_create('%s'): empty arena (base %p, %zu bytes) ignored",
                      name ? name : "?", base, size_bytes);
        return;
    }
    uintptr_t b = (uintptr_t)base;
    if (size_bytes > UINTPTR_MAX - b) {
        usage_warning(
            "tlsan_arena_create('%s'): [%p, +%zu) runs past the end of the address space; "
            "ignored",
            name ? name : "?", base, size_bytes);
        return;
    }
    /* The arena is filled now (fill=1) and read later (checksums, sentinels): memory that is
     * not there, or not writable, would crash the program in the shim. */
    bool fill = shim_opts()->fill;
    if (!modules_range_usable(b, b + size_bytes, fill)) {
        usage_warning("tlsan_arena_create('%s'): [%p, +%zu) is not mapped %s memory; ignored",
                      name ? name : "?", base, size_bytes,
                      fill ? "readable and writable" : "readable");
        return;
    }
    engine_lock();
    for (struct arena *a = g_engine.arenas; a; a = a->next) {
        if (!a->dead && ranges_overlap(a->base, a->base + a->size, b, b + size_bytes)) {
            engine_unlock();
            usage_warning("tlsan_arena_create('%s'): [%p, +%zu) overlaps arena '%s'; ignored",
                          name ? name : "?", base, size_bytes, a->name);
            return;
        }
    }
    struct arena *a = calloc(1, sizeof *a);
    if (!a) {
        engine_unlock();
        return;
    }
    a->name = engine_intern(name);
    a->base = b;
    a->size = size_bytes;
    a->trace_id = trace_arena(a->name, b, size_bytes, stack);
    a->next = g_engine.arenas;
    g_engine.arenas = a;
    ranges_add(a);
    engine_unlock();
    /* No tensor is bound in it before this returns: fill, then publish the sentinel. */
    if (fill) {
        sentinel_fill((void *)b, size_bytes);
        engine_lock();
        if (!a->dead)
            sentinel_ranges_add(a, 0, size_bytes, NULL);
        engine_unlock();
    }
}

void tlsan_rt_arena_destroy(const void *base)
{
    if (!engine_active())
        return;
    uint32_t stack = depot_capture(1);
    struct work w = WORK_INIT(w);
    engine_lock();
    struct arena *a = arena_find((uintptr_t)base);
    if (!a) {
        /* An arena dropped when its memory was freed: warned then; now it goes. */
        for (struct arena **pp = &g_engine.arenas; *pp; pp = &(*pp)->next) {
            if ((*pp)->dead && (*pp)->base == (uintptr_t)base) {
                *pp = (*pp)->next;
                engine_unlock();
                return;
            }
        }
        engine_unlock();
        usage_warning("tlsan_arena_destroy(%p): no arena has this base", base);
        return;
    }
    ranges_remove(a);
    for (size_t i = 0; i < a->n_live; i++) {
        struct tensor *t = a->live[i];
        if (hash_wanted(t) && t->has_hash && t->writers == 0 && t->clobber == CLOBBER_NONE)
            job_add(&w, t, true, MOMENT_ARENA_DESTROY, NULL, 0, NULL);
        t->release_stack = stack;
        clobbered_output(&w, t, MOMENT_ARENA_DESTROY);
        t->bound = false;
        t->epoch++;
    }
    a->n_live = 0;
    trace_arena_end(a->trace_id, stack);
    jobs_seal(&w);
    engine_unlock();
    jobs_run(&w);
    engine_lock();
    jobs_apply(&w);
    /* Off the list (lookups stay fast for engines that make an arena per run), but not
     * freed: released tensors still point at it. Its lists go. */
    a->dead = true;
    for (struct arena **pp = &g_engine.arenas; *pp; pp = &(*pp)->next) {
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    }
    arena_free_tables(a);
    engine_unlock();
    work_done(&w);
}
