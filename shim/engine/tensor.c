/* tensor.c - tensors: tlsan_tensor_bind, tlsan_view_bind, tlsan_tensor_release (declared in
 * engine.h), and the bind and view for the version-2 calls (tensor.h). */
#include "engine/arena.h"
#include "engine/op.h"
#include "engine/sentinel_ranges.h"
#include "engine/state.h"
#include "engine/tensor.h"
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

static struct tensor *tensor_of(struct name *n)
{
    if (!n->tensor) {
        n->tensor = calloc(1, sizeof *n->tensor);
        if (n->tensor) {
            n->tensor->name = n->text;
            n->tensor->interned = n;
        }
    }
    return n->tensor;
}

/* checksum=shared: does t's new placement share bytes with another name's, ever? */
static void note_placement(struct tensor *t)
{
    struct arena *a = t->arena;
    uint64_t lo = t->off, hi = t->off + t->size;
    if (t->placed_arena == a && t->placed_lo == lo && t->placed_hi == hi)
        return;
    t->placed_arena = a;
    t->placed_lo = lo;
    t->placed_hi = hi;
    bool exact = false;
    for (size_t i = 0; i < a->n_placements; i++) {
        struct placement *p = &a->placements[i];
        if (!ranges_overlap(p->lo, p->hi, lo, hi))
            continue;
        bool same_range = p->lo == lo && p->hi == hi;
        exact |= same_range;
        if (p->n_names == 1 && p->name == t->name)
            continue; /* only this tensor's own earlier place */
        /* Another name shares bytes with this one. A range holding two names or more had
         * them all marked when its second came. */
        t->shared = true;
        if (p->n_names == 1) {
            struct name *on = engine_name(p->name, false);
            if (on && on->tensor)
                on->tensor->shared = true;
        }
        if (same_range)
            p->n_names++;
    }
    if (!exact && hi > lo)
        PUSH(a->placements, a->n_placements, a->cap_placements,
             (struct placement){t->name, lo, hi, 1});
}

void engine_tensor_bind(const char *api, const void *arena_base, const char *name, const void *addr,
                        size_t size_bytes, unsigned flags)
{
    if (!engine_active())
        return;
    uint32_t stack = depot_capture(1);
    if (!name) {
        usage_warning("%s: NULL name ignored", api);
        return;
    }
    struct work w = WORK_INIT(w);
    engine_lock();
    struct arena *a = arena_find((uintptr_t)arena_base);
    uintptr_t p = (uintptr_t)addr;
    if (!a) {
        engine_unlock();
        usage_warning("%s('%s'): %p is not the base of an arena", api, name, arena_base);
        return;
    }
    if (p < a->base || p - a->base > a->size || size_bytes > a->size - (p - a->base)) {
        engine_unlock();
        usage_warning("%s('%s'): [%p, +%zu) is not inside arena '%s' [%p, +%llu); ignored", api,
                      name, addr, size_bytes, a->name, (void *)a->base, (ull)a->size);
        return;
    }
    struct name *n = engine_name(name, true);
    struct tensor *t = n ? tensor_of(n) : NULL;
    if (!t) {
        engine_unlock();
        return;
    }
    if (!t->is_view && t->bound) {
        engine_unlock();
        usage_warning("%s('%s'): bound again without a release; ignored", api, name);
        return;
    }
    if (t->is_view && t->root->bound && t->root->gen == t->root_gen) {
        engine_unlock();
        usage_warning("%s('%s'): the name is a live view; ignored", api, name);
        return;
    }
    t->is_view = false;
    t->arena = a;
    t->off = p - a->base;
    t->size = size_bytes;
    t->flags = flags;
    t->bound = true;
    t->gen++;
    t->epoch++;
    t->bind_stack = stack;
    t->release_stack = 0;
    t->has_hash = false;
    t->writers = 0;
    t->last_op = NULL;
    t->last_op_stack = 0;
    t->released_reader_op = NULL;
    t->clobber = CLOBBER_NONE;
    t->clobber_reported = false;
    t->clobber_by = NULL;
    t->n_written = 0;
    t->read_before_write_reported = false;
    /* An input holds data before the first op; an in-place output holds its input's. */
    if (flags & (TLSAN_BIND_INPUT | TLSAN_BIND_INPLACE))
        tensor_written(t, t->off, t->off + t->size);
    PUSH(a->live, a->n_live, a->cap_live, t);
    ops_in_flight_bind(&w, t);
    trace_bind(name, a->trace_id, t->off, size_bytes, flags, stack);
    if (shim_opts()->checksum == SHIM_CHECKSUM_SHARED)
        note_placement(t);
    /* The sentinel parts of the new range: verified below, no longer sentinel from now. */
    uint64_t lo = t->off, hi = t->off + t->size;
    for (size_t i = sentinel_ranges_find(a, lo); i < a->n_sentinel && a->sentinel[i].lo < hi; i++) {
        struct sentinel_range *v = &a->sentinel[i];
        uint64_t s = v->lo > lo ? v->lo : lo, e = v->hi < hi ? v->hi : hi;
        released_tenant_ref(v->released);
        WORK_PUSH(&w, ranges, n_ranges, cap_ranges, ranges_inline,
                  (struct byte_range){s, e, v->released});
    }
    sentinel_ranges_cut(a, lo, hi);
    engine_unlock();

    struct finding *f = NULL;
    struct stale_write *stale = NULL;
    for (size_t i = 0; i < w.n_ranges; i++) {
        struct byte_range *r = &w.ranges[i];
        size_t at = sentinel_find_change((const void *)(a->base + r->lo), r->hi - r->lo);
        if (at < r->hi - r->lo) {
            if (!f && (f = calloc(1, sizeof *f))) {
                struct finding_bytes bytes;
                capture_bytes(&bytes, a, r->lo + at, r->hi - (r->lo + at));
                stale = finding_stale_write(f, (struct finding_tensor){t->name, stack, lo, hi},
                                            a->name, &bytes);
            }
            if (stale && stale->n_previous < FINDING_MAX_TENSORS) {
                struct released_tenant *released = r->released;
                bool dup = false;
                for (size_t k = 0; k < stale->n_previous; k++)
                    dup |= stale->previous[k].name && released &&
                           stale->previous[k].name == released->name &&
                           stale->previous[k].lo == released->lo;
                if (!dup)
                    stale->previous[stale->n_previous++] =
                        released ? (struct finding_tensor){released->name, released->release_stack,
                                                           released->lo, released->hi}
                                 : (struct finding_tensor){NULL, 0, r->lo, r->hi};
            }
        }
    }
    if (w.n_ranges) {
        engine_lock();
        for (size_t i = 0; i < w.n_ranges; i++)
            released_tenant_unref(w.ranges[i].released);
        engine_unlock();
    }
    if (f) {
        *w.tail = f;
        w.tail = &f->next;
    }
    work_done(&w);
}

void engine_view_bind(const char *api, const char *name, const char *base_name,
                      size_t view_offset_bytes, size_t size_bytes)
{
    if (!engine_active())
        return;
    uint32_t stack = depot_capture(1);
    if (!name || !base_name) {
        usage_warning("%s: NULL name ignored", api);
        return;
    }
    engine_lock();
    struct name *bn = engine_name(base_name, false);
    struct tensor *b = bn ? bn->tensor : NULL;
    struct tensor *root = b ? (b->is_view ? b->root : b) : NULL;
    if (!b || !root->bound || (b->is_view && b->root_gen != root->gen)) {
        engine_unlock();
        usage_warning("%s('%s'): its base '%s' is not live; ignored", api, name, base_name);
        return;
    }
    struct name *n = engine_name(name, true);
    struct tensor *t = n ? tensor_of(n) : NULL;
    if (!t || t == b) {
        engine_unlock();
        if (t)
            usage_warning("%s('%s'): a view of itself; ignored", api, name);
        return;
    }
    if (!t->is_view && t->bound) {
        engine_unlock();
        usage_warning("%s('%s'): the name is a bound storage root; ignored", api, name);
        return;
    }
    uint64_t view_offset = (b->is_view ? b->view_offset : 0) + view_offset_bytes;
    t->is_view = true;
    t->bound = false;
    t->root = root;
    t->root_gen = root->gen;
    t->view_offset = view_offset;
    t->size = size_bytes;
    t->bind_stack = stack;
    uint64_t base_size = b->size;
    trace_view(name, base_name, view_offset_bytes, size_bytes, stack);
    engine_unlock();
    if (view_offset_bytes > base_size || size_bytes > base_size - view_offset_bytes)
        usage_warning("%s('%s'): [%zu, +%zu) runs past the end of its base '%s' (%llu bytes)", api,
                      name, view_offset_bytes, size_bytes, base_name, (ull)base_size);
}

void tlsan_rt_tensor_bind(const void *arena_base, const char *name, const void *addr,
                          size_t size_bytes, unsigned flags)
{
    engine_tensor_bind("tlsan_tensor_bind", arena_base, name, addr, size_bytes, flags);
}

void tlsan_rt_view_bind(const char *name, const char *base_name, size_t view_offset_bytes,
                        size_t size_bytes)
{
    engine_view_bind("tlsan_view_bind", name, base_name, view_offset_bytes, size_bytes);
}

void tlsan_rt_tensor_release(const void *arena_base, const char *name, const void *addr,
                             unsigned flags)
{
    if (!engine_active())
        return;
    uint32_t stack = depot_capture(1);
    struct work w = WORK_INIT(w);
    engine_lock();
    struct name *n = name ? engine_name(name, false) : NULL;
    struct tensor *t = n ? n->tensor : NULL;
    if (!t || t->is_view || !t->bound) {
        engine_unlock();
        usage_warning("tlsan_tensor_release('%s'): %s; ignored", name ? name : "(null)",
                      !t           ? "no tensor of this name was bound"
                      : t->is_view ? "a view (views end with their storage root)"
                                   : "not bound (released twice?)");
        return;
    }
    struct arena *a = t->arena;
    if (a->base != (uintptr_t)arena_base || (uintptr_t)addr != a->base + t->off) {
        engine_unlock();
        usage_warning(
            "tlsan_tensor_release('%s'): arena %p / address %p do not match its bind (arena "
            "'%s' at %p, address %p); ignored",
            name, arena_base, addr, a->name, (void *)a->base, (void *)(a->base + t->off));
        return;
    }
    if (hash_wanted(t) && t->has_hash && t->writers == 0 && t->clobber == CLOBBER_NONE)
        job_add(&w, t, true, MOMENT_RELEASE, NULL, 0, NULL);
    t->release_stack = stack;
    /* A writer in flight on this thread is the op releasing its own output: a misuse. */
    if (ops_in_flight_release(&w, t) == 0 && t->writers > 0)
        usage_warning(
            "tlsan_tensor_release('%s'): released while %d op(s) writing it are in flight", name,
            t->writers);
    clobbered_output(&w, t, MOMENT_RELEASE);
    t->bound = false;
    t->epoch++;
    live_remove(a, t);
    trace_release(name, flags, stack);
    struct released_tenant *released = NULL;
    if (shim_opts()->fill && !(flags & TLSAN_RELEASE_HANDOVER)) {
        append_uncovered(&w, a, t, t->off, t->off + t->size);
        released = w.n_ranges ? released_tenant_new() : NULL;
        if (released)
            *released = (struct released_tenant){
                t->name, t->off, t->off + t->size, t->bind_stack, stack, 0, NULL};
    }
    jobs_seal(&w);
    engine_unlock();

    jobs_run(&w); /* the last verify comes before the fill */
    for (size_t i = 0; released && i < w.n_ranges; i++)
        sentinel_fill((void *)(a->base + w.ranges[i].lo), w.ranges[i].hi - w.ranges[i].lo);

    engine_lock();
    jobs_apply(&w);
    if (released && !a->dead) {
        /* Publish only what is still uncovered (a racing bind keeps its bytes). */
        size_t n_fill = w.n_ranges;
        for (size_t i = 0; i < n_fill; i++)
            append_uncovered(&w, a, NULL, w.ranges[i].lo, w.ranges[i].hi);
        for (size_t i = n_fill; i < w.n_ranges; i++)
            sentinel_ranges_add(a, w.ranges[i].lo, w.ranges[i].hi, released);
    }
    if (released && released->refs == 0)
        released_tenant_free(released);
    engine_unlock();
    work_done(&w);
}
