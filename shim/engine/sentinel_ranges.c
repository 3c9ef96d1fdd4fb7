/* sentinel_ranges.c - the sentinel ranges of an arena and the released tenants they remember. */
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

void released_tenant_ref(struct released_tenant *p)
{
    if (p)
        p->refs++;
}

/* Released tenants are recycled (one per release: a malloc each would go through the tracked
 * heap). Lock held. */
struct released_tenant *released_tenant_new(void)
{
    struct released_tenant *p = g_engine.free_released_tenants;
    if (p) {
        g_engine.free_released_tenants = p->next_free;
        return p;
    }
    return malloc(sizeof *p);
}

void released_tenant_free(struct released_tenant *p)
{
    p->next_free = g_engine.free_released_tenants;
    g_engine.free_released_tenants = p;
}

void released_tenant_unref(struct released_tenant *p)
{
    if (p && --p->refs == 0)
        released_tenant_free(p);
}

/* First interval ending after lo. */
size_t sentinel_ranges_find(const struct arena *a, uint64_t lo)
{
    size_t l = 0, h = a->n_sentinel;
    while (l < h) {
        size_t m = l + (h - l) / 2;
        if (a->sentinel[m].hi <= lo)
            l = m + 1;
        else
            h = m;
    }
    return l;
}

/* Removes [lo, hi) from the intervals (its bytes no longer hold a known sentinel). */
void sentinel_ranges_cut(struct arena *a, uint64_t lo, uint64_t hi)
{
    size_t i = sentinel_ranges_find(a, lo);
    while (i < a->n_sentinel && a->sentinel[i].lo < hi) {
        struct sentinel_range *v = &a->sentinel[i];
        if (v->lo < lo && v->hi > hi) {
            struct sentinel_range right = {hi, v->hi, v->released};
            v->hi = lo;
            if (engine_grow((void **)&a->sentinel, &a->cap_sentinel, a->n_sentinel + 1,
                            sizeof *a->sentinel)) {
                memmove(&a->sentinel[i + 2], &a->sentinel[i + 1],
                        (a->n_sentinel - i - 1) * sizeof *a->sentinel);
                a->sentinel[i + 1] = right;
                a->n_sentinel++;
                released_tenant_ref(right.released);
            }
            return;
        }
        if (v->lo < lo) {
            v->hi = lo;
            i++;
        } else if (v->hi > hi) {
            v->lo = hi;
            return;
        } else {
            released_tenant_unref(v->released);
            memmove(&a->sentinel[i], &a->sentinel[i + 1],
                    (a->n_sentinel - i - 1) * sizeof *a->sentinel);
            a->n_sentinel--;
        }
    }
}

void sentinel_ranges_add(struct arena *a, uint64_t lo, uint64_t hi, struct released_tenant *p)
{
    if (lo >= hi)
        return;
    sentinel_ranges_cut(a, lo, hi);
    if (!engine_grow((void **)&a->sentinel, &a->cap_sentinel, a->n_sentinel + 1,
                     sizeof *a->sentinel))
        return;
    size_t i = sentinel_ranges_find(a, lo);
    memmove(&a->sentinel[i + 1], &a->sentinel[i], (a->n_sentinel - i) * sizeof *a->sentinel);
    a->sentinel[i] = (struct sentinel_range){lo, hi, p};
    a->n_sentinel++;
    released_tenant_ref(p);
}

/* Appends to w->ranges the parts of [lo, hi) that no live root of a (other than self) covers. */
void append_uncovered(struct work *w, struct arena *a, const struct tensor *self, uint64_t lo,
                      uint64_t hi)
{
    uint64_t cur = lo;
    while (cur < hi) {
        /* The live root covering cur that reaches furthest, else the nearest start after. */
        uint64_t cover_end = cur, next_start = hi;
        for (size_t i = 0; i < a->n_live; i++) {
            const struct tensor *t = a->live[i];
            if (t == self || t->size == 0)
                continue;
            uint64_t s = t->off, e = t->off + t->size;
            if (s <= cur && e > cover_end)
                cover_end = e;
            else if (s > cur && s < next_start)
                next_start = s;
        }
        if (cover_end > cur) {
            cur = cover_end;
            continue;
        }
        WORK_PUSH(w, ranges, n_ranges, cap_ranges, ranges_inline,
                  (struct byte_range){cur, next_start, NULL});
        cur = next_start;
    }
}
