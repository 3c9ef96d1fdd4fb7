/* handle.c - see handle.h. */
#include "engine/handle.h"

#include "engine/state.h"
#include "engine/tensor.h"

#include "out.h"

#include <stdlib.h>
#include <string.h>

/* Names and views an op names on the stack before the table spills to the heap. */
#define HANDLES_INLINE 16

struct slot {
    struct name *name;
    /* A view declared by handle: its base's slot, offset and size; 0 when none. Views of one
     * base are a list (first_view, next_view), declared again when the root is bound. */
    uint32_t view_base;
    uint64_t view_offset, view_size;
    uint32_t first_view, next_view;
    /* A root bound by tlsan_bind_inplace: the input whose bytes it took (slot, tenant). */
    uint32_t inplace_input, inplace_input_gen;
    /* The in-place output bound over this root's current tenant (slot, tenant); 0 none. */
    uint32_t handed_to, handed_to_gen;
    /* The op location last given for this name (interned), and the caller's pointers it was
     * interned from (a cache: the same literal is not hashed again at every op). */
    const char *loc_file, *loc_func;
    int loc_line;
    const char *loc_file_given, *loc_func_given;
};

/* Slot i + 1 is g_slots[i]. */
static struct slot *g_slots;
static size_t g_n_slots, g_cap_slots;

static uint64_t handle_make(uint32_t slot, uint32_t tenant)
{
    return (uint64_t)slot << 32 | tenant;
}

static uint32_t handle_slot_of(uint64_t h)
{
    return (uint32_t)(h >> 32);
}

static uint32_t handle_tenant(uint64_t h)
{
    return (uint32_t)h;
}

/* The slot of name n, created on first use; 0 when out of memory. Lock held. */
static uint32_t slot_of(struct name *n)
{
    if (n->handle_slot)
        return n->handle_slot;
    if (g_n_slots >= UINT32_MAX - 1 ||
        !engine_grow((void **)&g_slots, &g_cap_slots, g_n_slots + 1, sizeof *g_slots))
        return 0;
    g_slots[g_n_slots] = (struct slot){.name = n};
    n->handle_slot = (uint32_t)++g_n_slots;
    return n->handle_slot;
}

static struct slot *slot_at(uint32_t i)
{
    return i && i <= g_n_slots ? &g_slots[i - 1] : NULL;
}

/* The tenant number of a live root (its gen's low bits; never 0, which means "a view"). */
static uint32_t tenant_of(const struct tensor *t)
{
    uint32_t g = (uint32_t)t->gen;
    return g ? g : 1;
}

enum handle_status { HANDLE_NONE, HANDLE_OK, HANDLE_UNKNOWN, HANDLE_STALE };

/* The slot and tensor of handle h: HANDLE_OK for a live root's current tenant or a declared
 * view; HANDLE_STALE for a root released (or bound again) since; HANDLE_NONE for 0. Lock
 * held. */
static enum handle_status handle_get(uint64_t h, struct slot **s_out, struct tensor **t_out)
{
    if (!h)
        return HANDLE_NONE;
    struct slot *s = slot_at(handle_slot_of(h));
    struct tensor *t = s ? s->name->tensor : NULL;
    if (!t)
        return HANDLE_UNKNOWN;
    *s_out = s;
    *t_out = t;
    if (handle_tenant(h) == 0)
        return t->is_view && s->view_base ? HANDLE_OK : HANDLE_STALE;
    if (t->is_view || !t->bound || tenant_of(t) != handle_tenant(h))
        return HANDLE_STALE;
    return HANDLE_OK;
}

/* A view to declare again: its name, its base's name, offset, size. */
struct redeclare {
    const char *name, *base;
    uint64_t offset, size;
};

/* Appends the views following slot `root` (depth first, each base before its views) to
 * *out, growing it from inline storage inl. Lock held. */
static void collect_views(uint32_t base, struct redeclare **out, size_t *n, size_t *cap,
                          const struct redeclare *inl)
{
    struct slot *b = slot_at(base);
    for (uint32_t v = b ? b->first_view : 0; v; v = slot_at(v)->next_view) {
        struct slot *s = slot_at(v);
        if (!engine_grow_from((void **)out, cap, *n + 1, sizeof **out, inl))
            return;
        (*out)[(*n)++] =
            (struct redeclare){s->name->text, b->name->text, s->view_offset, s->view_size};
        collect_views(v, out, n, cap, inl);
    }
}

/* After a bind of `name` by handle: its handle (0 when the bind was refused), and every view
 * that follows it declared again. */
static uint64_t bound_handle(const char *api, const char *name, const void *arena_base,
                             const void *addr, size_t size_bytes)
{
    struct redeclare inl[HANDLES_INLINE], *views = inl;
    size_t n_views = 0, cap_views = HANDLES_INLINE;
    uint64_t h = 0;
    engine_lock();
    struct name *n = engine_name(name, false);
    struct tensor *t = n ? n->tensor : NULL;
    uint32_t slot = t ? slot_of(n) : 0;
    if (slot && !t->is_view && t->bound && t->arena->base == (uintptr_t)arena_base &&
        t->arena->base + t->off == (uintptr_t)addr && t->size == size_bytes) {
        struct slot *s = slot_at(slot);
        s->inplace_input = s->inplace_input_gen = 0;
        s->handed_to = s->handed_to_gen = 0;
        h = handle_make(slot, tenant_of(t));
        collect_views(slot, &views, &n_views, &cap_views, inl);
    }
    engine_unlock();
    for (size_t i = 0; i < n_views; i++)
        engine_view_bind(api, views[i].name, views[i].base, views[i].offset, views[i].size);
    if (views != inl)
        free(views);
    return h;
}

uint64_t tlsan_rt_bind(const void *arena_base, const char *name, const void *addr,
                       size_t size_bytes, unsigned flags)
{
    if (!engine_active() || !name)
        return 0;
    engine_tensor_bind("tlsan_bind", arena_base, name, addr, size_bytes, flags);
    return bound_handle("tlsan_bind", name, arena_base, addr, size_bytes);
}

/* Why handle h was refused, for a usage warning. */
static const char *refusal(enum handle_status st)
{
    return st == HANDLE_UNKNOWN ? "not a handle the shim returned"
                                : "stale (its tensor was released, or bound again, since)";
}

uint64_t tlsan_rt_bind_inplace(const char *name, uint64_t input, unsigned flags)
{
    if (!engine_active() || !name || !input)
        return 0;
    engine_lock();
    struct slot *in = NULL;
    struct tensor *t = NULL;
    enum handle_status st = handle_get(input, &in, &t);
    if (st == HANDLE_OK && t->is_view) {
        const char *view = t->name;
        engine_unlock();
        usage_warning("tlsan_bind_inplace('%s'): its input '%s' is a view, not a storage root; "
                      "ignored",
                      name, view);
        return 0;
    }
    if (st != HANDLE_OK) {
        engine_unlock();
        usage_warning("tlsan_bind_inplace('%s'): the input handle is %s; ignored", name,
                      refusal(st));
        return 0;
    }
    const void *base = (const void *)t->arena->base;
    const void *addr = (const void *)(t->arena->base + t->off);
    size_t size = t->size;
    uint32_t in_slot = t->interned->handle_slot;
    uint32_t in_tenant = handle_tenant(input);
    engine_unlock();

    engine_tensor_bind("tlsan_bind_inplace", base, name, addr, size, flags | TLSAN_BIND_INPLACE);
    uint64_t h = bound_handle("tlsan_bind_inplace", name, base, addr, size);
    if (!h)
        return 0;
    engine_lock();
    struct slot *out = slot_at(handle_slot_of(h));
    out->inplace_input = in_slot;
    out->inplace_input_gen = in_tenant;
    in = slot_at(in_slot);
    in->handed_to = handle_slot_of(h);
    in->handed_to_gen = handle_tenant(h);
    engine_unlock();
    return h;
}

/* Takes slot v off its base's list of views. Lock held. */
static void unlink_view(uint32_t v)
{
    struct slot *s = slot_at(v), *b = slot_at(s->view_base);
    if (!b)
        return;
    for (uint32_t *pp = &b->first_view; *pp; pp = &slot_at(*pp)->next_view)
        if (*pp == v) {
            *pp = s->next_view;
            break;
        }
    s->view_base = 0;
    s->next_view = 0;
}

/* Whether slot `base` is slot v or follows it (a view declared over itself). Lock held. */
static bool follows(uint32_t base, uint32_t v)
{
    for (uint32_t b = base; b; b = slot_at(b)->view_base)
        if (b == v)
            return true;
    return false;
}

uint64_t tlsan_rt_view(const char *name, uint64_t base, size_t view_offset_bytes, size_t size_bytes)
{
    if (!engine_active() || !name || !base)
        return 0;
    engine_lock();
    struct slot *b = NULL;
    struct tensor *bt = NULL;
    enum handle_status st = handle_get(base, &b, &bt);
    const char *base_name = st == HANDLE_OK ? b->name->text : NULL;
    uint32_t bs = st == HANDLE_OK ? b->name->handle_slot : 0; /* slots move as the table grows */
    engine_unlock();
    if (!base_name) {
        usage_warning("tlsan_view('%s'): the base handle is %s; ignored", name, refusal(st));
        return 0;
    }
    engine_view_bind("tlsan_view", name, base_name, view_offset_bytes, size_bytes);

    uint64_t h = 0;
    engine_lock();
    struct name *n = engine_name(name, false);
    struct tensor *t = n ? n->tensor : NULL;
    uint32_t v = t && t->is_view ? slot_of(n) : 0;
    if (v && t->size == size_bytes && !follows(bs, v)) {
        unlink_view(v);
        struct slot *s = slot_at(v);
        s->view_base = bs;
        s->view_offset = view_offset_bytes;
        s->view_size = size_bytes;
        s->next_view = slot_at(bs)->first_view;
        slot_at(bs)->first_view = v;
        h = handle_make(v, 0);
    }
    engine_unlock();
    return h;
}

void tlsan_rt_release(uint64_t tensor)
{
    if (!engine_active() || !tensor)
        return;
    engine_lock();
    struct slot *s = NULL;
    struct tensor *t = NULL;
    enum handle_status st = handle_get(tensor, &s, &t);
    if (st != HANDLE_OK || t->is_view) {
        const char *name = st == HANDLE_UNKNOWN ? "?" : s->name->text;
        engine_unlock();
        usage_warning("tlsan_release('%s'): the handle is %s; ignored", name,
                      st == HANDLE_OK ? "a view's (views end with their storage root)"
                                      : refusal(st));
        return;
    }
    const char *name = t->name;
    const void *base = (const void *)t->arena->base;
    const void *addr = (const void *)(t->arena->base + t->off);
    unsigned flags = 0;
    struct slot *out = slot_at(s->handed_to);
    struct tensor *ot = out ? out->name->tensor : NULL;
    if (ot && !ot->is_view && ot->bound && tenant_of(ot) == s->handed_to_gen &&
        out->inplace_input == t->interned->handle_slot)
        flags |= TLSAN_RELEASE_HANDOVER;
    engine_unlock();
    tlsan_rt_tensor_release(base, name, addr, flags);
}

/* Remembers loc as the location of op `op`. Lock held. */
static void set_location(const char *op, const tlsan_src_loc *loc)
{
    if (!op || !loc || !loc->file)
        return;
    struct name *n = engine_name(op, true);
    uint32_t i = n ? slot_of(n) : 0;
    struct slot *s = slot_at(i);
    if (!s)
        return;
    if (s->loc_file_given != loc->file) {
        s->loc_file = engine_intern(loc->file);
        s->loc_file_given = loc->file;
    }
    if (s->loc_func_given != loc->func) {
        s->loc_func = loc->func ? engine_intern(loc->func) : NULL;
        s->loc_func_given = loc->func;
    }
    s->loc_line = loc->line;
}

bool engine_op_location(const char *op, char *buf, size_t cap)
{
    if (!op || !cap)
        return false;
    bool found = false;
    engine_lock();
    struct name *n = engine_name(op, false);
    struct slot *s = n ? slot_at(n->handle_slot) : NULL;
    if (s && s->loc_file) {
        struct outbuf b = {buf, 0, cap - 1};
        out_appendf(&b, "%s:%d", s->loc_file, s->loc_line);
        if (s->loc_func)
            out_appendf(&b, " in %s", s->loc_func);
        buf[b.len] = 0;
        found = true;
    }
    engine_unlock();
    return found;
}

/* The name a handle stands for in an op of `op_name` (NULL: left out, with a warning once the
 * lock is dropped, counted in *n_refused). Lock held. */
/* Whether stale handle h names the latest tenant of its root, released and not bound again
 * since: an access through it is a use-after-release of that tenant, which the name alone
 * tells the version-1 checks (a released name). Lock held. */
static bool names_released_tenant(uint64_t h, const struct tensor *t)
{
    return !t->is_view && !t->bound && handle_tenant(h) != 0 && tenant_of(t) == handle_tenant(h);
}

static const char *access_name(uint64_t h, bool *refused)
{
    struct slot *s = NULL;
    struct tensor *t = NULL;
    enum handle_status st = handle_get(h, &s, &t);
    if (st == HANDLE_STALE && names_released_tenant(h, t)) {
        *refused = false;
        return t->name;
    }
    *refused = st != HANDLE_OK && st != HANDLE_NONE;
    return st == HANDLE_OK ? t->name : NULL;
}

/* The op's names, translated under the lock: reads, writes, then in-place pairs. */
struct op_names {
    const char **v;
    size_t n_reads, n_writes, n_inplace;
    size_t n_refused;
    const char *inl[3 * HANDLES_INLINE];
};

/* The in-place pairs of op d: each write bound by tlsan_bind_inplace whose input's tenant the
 * op also reads. Lock held. */
static size_t inplace_pairs(const tlsan_op_decl *d, const char **pairs)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n_writes; i++) {
        struct slot *ws = NULL;
        struct tensor *wt = NULL;
        if (handle_get(d->writes[i].id, &ws, &wt) != HANDLE_OK || !ws->inplace_input)
            continue;
        uint64_t input = handle_make(ws->inplace_input, ws->inplace_input_gen);
        for (size_t k = 0; k < d->n_reads; k++)
            if (d->reads[k].id == input) {
                pairs[2 * n] = wt->name;
                pairs[2 * n + 1] = slot_at(ws->inplace_input)->name->text;
                n++;
                break;
            }
    }
    return n;
}

uint64_t tlsan_rt_op_start(const tlsan_op_decl *d)
{
    if (!engine_active() || !d)
        return 0;
    size_t nr = d->reads ? d->n_reads : 0, nw = d->writes ? d->n_writes : 0;
    size_t need = nr + nw + 2 * nw;
    struct op_names names = {.v = names.inl};
    if (need > sizeof names.inl / sizeof names.inl[0]) {
        names.v = malloc(need * sizeof *names.v);
        if (!names.v)
            return 0;
    }
    tlsan_op_decl desc = *d;
    desc.n_reads = nr;
    desc.n_writes = nw;
    engine_lock();
    for (size_t i = 0; i < nr; i++) {
        bool refused;
        const char *nm = access_name(d->reads[i].id, &refused);
        names.n_refused += refused;
        if (nm)
            names.v[names.n_reads++] = nm;
    }
    const char **writes = names.v + names.n_reads;
    for (size_t i = 0; i < nw; i++) {
        bool refused;
        const char *nm = access_name(d->writes[i].id, &refused);
        names.n_refused += refused;
        if (nm)
            writes[names.n_writes++] = nm;
    }
    const char **pairs = writes + names.n_writes;
    names.n_inplace = inplace_pairs(&desc, pairs);
    set_location(d->name, &d->loc);
    engine_unlock();
    if (names.n_refused)
        usage_warning("op '%s': %zu stale or unknown tensor handle(s) left out",
                      d->name ? d->name : "?", names.n_refused);
    tlsan_op_info info = {d->name, d->stream,      names.v, names.n_reads,
                          writes,  names.n_writes, pairs,   names.n_inplace};
    uint64_t token = tlsan_rt_op_begin(&info);
    if (names.v != names.inl)
        free(names.v);
    return token;
}

void tlsan_rt_host_access(uint64_t tensor, size_t offset_bytes, size_t size_bytes, unsigned access,
                          const tlsan_src_loc *loc)
{
    if (!engine_active() || !tensor || !(access & (TLSAN_ACCESS_READ | TLSAN_ACCESS_WRITE)))
        return;
    engine_lock();
    struct slot *s = NULL;
    struct tensor *t = NULL;
    enum handle_status st = handle_get(tensor, &s, &t);
    /* Copied: the name's text lives for the process, but a report below may need it. A
     * released tenant's handle is its (released) name, accessed whole. */
    bool released = st == HANDLE_STALE && names_released_tenant(tensor, t);
    const char *name = st == HANDLE_OK || released ? t->name : NULL;
    uint64_t size = st == HANDLE_OK ? t->size : 0;
    if (released)
        offset_bytes = 0, size_bytes = SIZE_MAX;
    engine_unlock();
    if (!name) {
        usage_warning("tlsan_host_access: the handle is %s; ignored", refusal(st));
        return;
    }
    const char *what = access == TLSAN_ACCESS_READ    ? "host_read"
                       : access == TLSAN_ACCESS_WRITE ? "host_write"
                                                      : "host_access";
    char target[320], op[400];
    out_copy_str(target, sizeof target, name);
    if (offset_bytes != 0 || (size_bytes != SIZE_MAX && size_bytes != size)) {
        size_t part =
            size_bytes == SIZE_MAX && offset_bytes <= size ? size - offset_bytes : size_bytes;
        struct outbuf b = {target, 0, sizeof target - 1};
        out_appendf(&b, "%s[%zu,+%zu]", name, offset_bytes, part);
        target[b.len] = 0;
        engine_view_bind("tlsan_host_access", target, name, offset_bytes, part);
    }
    struct outbuf b = {op, 0, sizeof op - 1};
    out_appendf(&b, "%s(%s)", what, target);
    op[b.len] = 0;
    engine_lock();
    set_location(op, loc);
    engine_unlock();
    const char *const one[] = {target};
    bool reads = access & TLSAN_ACCESS_READ, writes = access & TLSAN_ACCESS_WRITE;
    tlsan_op_info info = {
        op, 0, reads ? one : NULL, reads ? 1u : 0u, writes ? one : NULL, writes ? 1u : 0u, NULL, 0};
    tlsan_rt_op_end(tlsan_rt_op_begin(&info));
}
