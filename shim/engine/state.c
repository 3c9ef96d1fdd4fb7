/* state.c - the engine's state, its lock and fork handlers, interned names, usage warnings. */
#include "engine/state.h"

#include "engine/arena.h"
#include "out.h"
#include "shim.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct engine_state g_engine = {.lock = PTHREAD_MUTEX_INITIALIZER};
struct arena_range_table g_arena_ranges = {.lock = SHIM_LOCK_INIT};
atomic_uint engine_g_arenas;
atomic_bool g_arena_freed;

static atomic_uint n_usage_warnings;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

bool engine_grow_from(void **v, size_t *cap, size_t need, size_t elem, const void *inl)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 8;
    while (c < need)
        c *= 2;
    void *n = *v == inl ? malloc(c * elem) : realloc(*v, c * elem);
    if (!n)
        return false;
    if (inl && *v == inl && *cap)
        memcpy(n, inl, *cap * elem);
    *v = n;
    *cap = c;
    return true;
}

bool engine_grow(void **v, size_t *cap, size_t need, size_t elem)
{
    return engine_grow_from(v, cap, need, elem, NULL);
}

void usage_warning(const char *fmt, ...)
{
    unsigned n = atomic_fetch_add(&n_usage_warnings, 1);
    if (n > USAGE_MAX)
        return;
    char buf[768];
    struct outbuf b = {buf, 0, sizeof buf - 1};
    if (n == USAGE_MAX) {
        out_appendf(&b, "tlsan: warning: further annotation usage warnings suppressed\n");
    } else {
        va_list ap;
        va_start(ap, fmt);
        out_appendf(&b, "tlsan: warning: ");
        out_vappendf(&b, fmt, ap);
        va_end(ap);
        out_appendf(&b, "\n");
    }
    out_lock();
    out_write(buf, b.len);
    out_unlock();
}

unsigned engine_usage_warnings(void)
{
    return atomic_load(&n_usage_warnings);
}

void engine_lock(void)
{
    pthread_mutex_lock(&g_engine.lock);
    if (atomic_load_explicit(&g_arena_freed, memory_order_acquire))
        arena_reap_freed();
}

void engine_unlock(void)
{
    pthread_mutex_unlock(&g_engine.lock);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_engine.lock);
    shim_lock_take(&g_arena_ranges.lock);
}

static void fork_parent(void)
{
    shim_lock_drop(&g_arena_ranges.lock);
    pthread_mutex_unlock(&g_engine.lock);
}

static void fork_child(void)
{
    /* Reset, not dropped: the shim's own child handler, registered (so run) before this
     * one, has already set this thread's count of held locks (lock.h) to zero. */
    shim_lock_reset(&g_arena_ranges.lock);
    pthread_mutex_init(&g_engine.lock, NULL);
}

static void init_once(void)
{
    /* Registered after the shim's own handlers, so it runs first at fork: the engine lock is
     * taken before the allocator's (the order a thread in the engine takes them). */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

bool engine_active(void)
{
    if (!shim_active())
        return false;
    pthread_once(&fork_handlers_once, init_once);
    return true;
}

uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The interned name s; NULL when absent and !add, or out of memory. */
struct name *engine_name(const char *s, bool add)
{
    if (!s)
        return NULL;
    uint64_t h = hash_str(s);
    if (g_engine.names_cap) {
        for (struct name *n = g_engine.names[h & (g_engine.names_cap - 1)]; n; n = n->next)
            if (n->hash == h && strcmp(n->text, s) == 0)
                return n;
    }
    if (!add)
        return NULL;
    if (g_engine.names_n + 1 > g_engine.names_cap) {
        size_t cap = g_engine.names_cap ? g_engine.names_cap * 2 : 1024;
        struct name **b = calloc(cap, sizeof *b);
        if (!b)
            return NULL;
        for (size_t i = 0; i < g_engine.names_cap; i++) {
            for (struct name *n = g_engine.names[i], *next; n; n = next) {
                next = n->next;
                n->next = b[n->hash & (cap - 1)];
                b[n->hash & (cap - 1)] = n;
            }
        }
        free(g_engine.names);
        g_engine.names = b;
        g_engine.names_cap = cap;
    }
    size_t len = strlen(s);
    struct name *n = calloc(1, sizeof *n + len + 1);
    if (!n)
        return NULL;
    memcpy(n->text, s, len + 1);
    n->hash = h;
    n->next = g_engine.names[h & (g_engine.names_cap - 1)];
    g_engine.names[h & (g_engine.names_cap - 1)] = n;
    g_engine.names_n++;
    return n;
}

const char *engine_intern(const char *s)
{
    struct name *n = engine_name(s ? s : "?", true);
    return n ? n->text : "?";
}

bool hash_wanted(const struct tensor *t)
{
    enum shim_checksum c = shim_opts()->checksum;
    return c == SHIM_CHECKSUM_ALL ||
           (c == SHIM_CHECKSUM_SHARED && (t->shared || t->interned->plan_shared));
}

bool ranges_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    return a0 < b1 && b0 < a1;
}

struct arena *arena_find(uintptr_t base)
{
    for (struct arena *a = g_engine.arenas; a; a = a->next)
        if (!a->dead && a->base == base)
            return a;
    return NULL;
}

void tensor_written(struct tensor *t, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return;
    /* The spans [first, last) that touch [lo, hi) merge with it into one. */
    size_t first = 0;
    while (first < t->n_written && t->written[first].hi < lo)
        first++;
    size_t last = first;
    while (last < t->n_written && t->written[last].lo <= hi) {
        lo = t->written[last].lo < lo ? t->written[last].lo : lo;
        hi = t->written[last].hi > hi ? t->written[last].hi : hi;
        last++;
    }
    if (first == last) {
        if (!engine_grow((void **)&t->written, &t->cap_written, t->n_written + 1,
                         sizeof *t->written)) {
            /* Out of memory: stop checking this tenant rather than report bytes it wrote. */
            t->read_before_write_reported = true;
            return;
        }
        memmove(&t->written[first + 1], &t->written[first],
                (t->n_written - first) * sizeof *t->written);
        t->n_written++;
        last = first + 1;
    } else if (last > first + 1) {
        memmove(&t->written[first + 1], &t->written[last],
                (t->n_written - last) * sizeof *t->written);
        t->n_written -= last - first - 1;
    }
    t->written[first] = (struct span){lo, hi};
}

bool tensor_has_unwritten(const struct tensor *t, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return false;
    /* Spans are disjoint and merged: [lo, hi) is covered only by one span containing it. */
    for (size_t i = 0; i < t->n_written; i++)
        if (t->written[i].lo <= lo && hi <= t->written[i].hi)
            return false;
    return true;
}

void live_remove(struct arena *a, struct tensor *t)
{
    for (size_t i = 0; i < a->n_live; i++) {
        if (a->live[i] == t) {
            a->live[i] = a->live[--a->n_live];
            return;
        }
    }
}
