/* ggml_model.c - a ggml graph as allocated, read as a memory plan (ggml_model.h). */
#ifdef TLSAN_HAVE_GGML /* else the adapter is absent (shim/ggml/ggml.c) */
#include "ggml/ggml_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

uint64_t gm_key(const struct gm_api *api, struct ggml_cgraph *graph)
{
    int n = api->graph_n_nodes(graph);
    uint64_t h = mix(0xcbf29ce484222325ull, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        const struct ggml_tensor *t = api->graph_node(graph, i);
        h = mix(h, (uintptr_t)t);
        h = mix(h, (uintptr_t)t->data);
        h = mix(h, (uint64_t)t->op << 32 | (uint32_t)t->flags);
        h = mix(h, (uint64_t)t->type);
        for (int d = 0; d < GGML_MAX_DIMS; d++)
            h = mix(h, (uint64_t)t->ne[d]);
        h = mix(h, (uintptr_t)t->view_src);
        h = mix(h, (uint64_t)t->view_offs);
        for (int s = 0; s < GGML_MAX_SRC; s++)
            if (t->src[s]) {
                h = mix(h, (uintptr_t)t->src[s]);
                h = mix(h, (uintptr_t)t->src[s]->data);
            }
    }
    return h;
}

/* ---- the tensor table ---- */

static size_t slot_of(const struct gm_model *m, const struct ggml_tensor *t)
{
    uint64_t h = mix(0x9e3779b97f4a7c15ull, (uintptr_t)t);
    return (size_t)h & (m->n_slots - 1);
}

long gm_find(const struct gm_model *m, const struct ggml_tensor *t)
{
    if (!t || !m->n_slots)
        return -1;
    for (size_t s = slot_of(m, t);; s = (s + 1) & (m->n_slots - 1)) {
        uint32_t v = m->slots[s];
        if (!v)
            return -1;
        if (m->tensors[v - 1].t == t)
            return (long)v - 1;
    }
}

/* Adds t (if it has data and is new); returns its index, or -1 (no data, or out of room). */
static long add(struct gm_model *m, struct ggml_tensor *t, int node)
{
    if (!t)
        return -1;
    long found = gm_find(m, t);
    if (found >= 0)
        return found;
    if (!t->data) {
        m->n_skipped++;
        return -1;
    }
    if (m->n_tensors == m->cap_tensors)
        return -1; /* cannot happen: sized for every node, source and view source */
    size_t i = m->n_tensors++;
    struct gm_tensor *g = &m->tensors[i];
    memset(g, 0, sizeof *g);
    g->t = t;
    g->node = node;
    g->leaf = node < 0 ? m->n_leaves++ : -1;
    g->arena = -1;
    g->first_writer = -1;
    size_t s = slot_of(m, t);
    while (m->slots[s])
        s = (s + 1) & (m->n_slots - 1);
    m->slots[s] = (uint32_t)i + 1;
    return (long)i;
}

bool gm_is_view_op(const struct gm_api *api, const struct ggml_tensor *t)
{
    /* By name, not by enum value: the names are what ggml keeps stable across versions. */
    static const char *const views[] = {"NONE", "VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"};
    const char *d = api->op_desc(t);
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (d && strcmp(d, views[i]) == 0)
            return true;
    return false;
}

bool gm_reads_src(const struct gm_api *api, const struct ggml_tensor *t, int s)
{
    if (!t->src[s] || t->src[s] == t)
        return false;
    const char *d = s == 1 ? api->op_desc(t) : NULL;
    return !(d && strcmp(d, "CPY") == 0);
}

/* True for the names ggml gives unnamed tensors as it builds a graph ("node_12", "leaf_3"):
 * they say less than the op and node index. */
static bool ggml_auto_name(const char *name)
{
    const char *p =
        strncmp(name, "node_", 5) == 0 || strncmp(name, "leaf_", 5) == 0 ? name + 5 : NULL;
    if (!p || !*p)
        return false;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

void gm_display_name(const struct gm_model *m, const struct gm_api *api, size_t i, char *buf,
                     size_t cap)
{
    const struct gm_tensor *g = &m->tensors[i];
    if (g->t->name[0] && !ggml_auto_name(g->t->name))
        snprintf(buf, cap, "%.*s", (int)GGML_MAX_NAME, g->t->name);
    else if (g->node >= 0)
        snprintf(buf, cap, "%s#%d", api->op_desc(g->t), g->node);
    else
        snprintf(buf, cap, "leaf#%d", g->leaf);
}

/* Gives every tensor a name unique in the model: the display name, then @NODE (or @leafK),
 * then ~N, whichever is free first. A string hash set of the names taken. */
static int name_all(struct gm_model *m, const struct gm_api *api)
{
    size_t n_set = 16;
    while (n_set < 2 * m->n_tensors + 2)
        n_set <<= 1;
    uint32_t *set = calloc(n_set, sizeof *set);
    if (!set)
        return -1;
    for (size_t i = 0; i < m->n_tensors; i++) {
        struct gm_tensor *g = &m->tensors[i];
        char base[GM_NAME_BYTES];
        gm_display_name(m, api, i, base, sizeof base);
        for (unsigned attempt = 0;; attempt++) {
            if (attempt == 0)
                snprintf(g->name, sizeof g->name, "%.72s", base);
            else if (attempt == 1 && g->node >= 0)
                snprintf(g->name, sizeof g->name, "%.72s@%d", base, g->node);
            else if (attempt == 1)
                snprintf(g->name, sizeof g->name, "%.72s@leaf%d", base, g->leaf);
            else
                snprintf(g->name, sizeof g->name, "%.72s~%u", base, attempt);
            uint64_t h = 0xcbf29ce484222325ull;
            for (const char *p = g->name; *p; p++)
                h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
            size_t s = (size_t)h & (n_set - 1);
            bool taken = false;
            for (; set[s]; s = (s + 1) & (n_set - 1))
                if (strcmp(m->tensors[set[s] - 1].name, g->name) == 0) {
                    taken = true;
                    break;
                }
            if (!taken) {
                set[s] = (uint32_t)i + 1;
                break;
            }
        }
    }
    free(set);
    return 0;
}

/* ---- arenas ---- */

static long arena_add(struct gm_model *m, ggml_backend_buffer_t buffer, uintptr_t base,
                      uint64_t bytes, const char *kind)
{
    if (m->n_arenas == m->cap_arenas) {
        size_t cap = m->cap_arenas ? 2 * m->cap_arenas : 8;
        struct gm_arena *a = realloc(m->arenas, cap * sizeof *a);
        if (!a)
            return -1;
        m->arenas = a;
        m->cap_arenas = cap;
    }
    struct gm_arena *a = &m->arenas[m->n_arenas];
    memset(a, 0, sizeof *a);
    a->buffer = buffer;
    a->base = base;
    a->bytes = bytes;
    snprintf(a->name, sizeof a->name, "%s#%zu", kind && *kind ? kind : "buffer", m->n_arenas);
    return (long)m->n_arenas++;
}

/* The arena holding [addr, addr + bytes): the tensor's own buffer when it holds the address,
 * else any buffer seen that does (a tensor moved onto another buffer's bytes), else memory of
 * no backend buffer, an arena of its own. */
static long arena_of(struct gm_model *m, const struct gm_api *api, ggml_backend_buffer_t buffer,
                     uintptr_t addr, uint64_t bytes)
{
    if (buffer) {
        for (size_t i = 0; i < m->n_arenas; i++)
            if (m->arenas[i].buffer == buffer && addr >= m->arenas[i].base &&
                addr - m->arenas[i].base <= m->arenas[i].bytes)
                return (long)i;
        uintptr_t base = (uintptr_t)api->buffer_get_base(buffer);
        uint64_t size = api->buffer_get_size(buffer);
        bool known = false;
        for (size_t i = 0; i < m->n_arenas; i++)
            known |= m->arenas[i].buffer == buffer;
        if (!known && addr >= base && addr - base <= size)
            return arena_add(m, buffer, base, size, api->buffer_name(buffer));
    }
    for (size_t i = 0; i < m->n_arenas; i++)
        if (m->arenas[i].buffer && addr >= m->arenas[i].base &&
            addr - m->arenas[i].base <= m->arenas[i].bytes)
            return (long)i;
    return arena_add(m, NULL, addr, bytes, "extern");
}

/* ---- building ---- */

static uint32_t root_of(const struct gm_model *m, size_t i)
{
    return m->tensors[i].root;
}

static void note_access(struct gm_tensor *r, int64_t step, bool write)
{
    if (write && (r->first == INT64_MIN || step < r->first))
        r->first = step;
    if (r->last == INT64_MIN || step > r->last)
        r->last = step;
}

int gm_build(struct gm_model *m, const struct gm_api *api, struct ggml_cgraph *graph)
{
    memset(m, 0, sizeof *m);
    int n = api->graph_n_nodes(graph);
    if (n < 0)
        n = 0;
    m->n_nodes = n;
    /* Every node, each of its sources, and the view source of each of those. */
    m->cap_tensors = (size_t)n * (GGML_MAX_SRC + 1) * 2 + 1;
    m->n_slots = 16;
    while (m->n_slots < 2 * m->cap_tensors)
        m->n_slots <<= 1;
    m->tensors = malloc(m->cap_tensors * sizeof *m->tensors);
    m->slots = calloc(m->n_slots, sizeof *m->slots);
    m->node_index = malloc(((size_t)n + 1) * sizeof *m->node_index);
    if (!m->tensors || !m->slots || !m->node_index)
        goto fail;
    for (int i = 0; i < n; i++) {
        long k = add(m, api->graph_node(graph, i), i);
        m->node_index[i] = k < 0 ? UINT32_MAX : (uint32_t)k;
    }
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *t = api->graph_node(graph, i);
        for (int s = 0; s < GGML_MAX_SRC; s++)
            add(m, t->src[s], -1);
    }
    for (size_t i = 0, end = m->n_tensors; i < end; i++)
        add(m, m->tensors[i].t->view_src, -1);

    /* Roots and views, arenas. A view is one only where its data agrees with its source. */
    for (size_t i = 0; i < m->n_tensors; i++) {
        struct gm_tensor *g = &m->tensors[i];
        struct ggml_tensor *t = g->t;
        g->bytes = api->nbytes(t);
        g->root = (uint32_t)i;
        g->first = g->last = INT64_MIN;
        long v = gm_find(m, t->view_src);
        if (v >= 0 && (const char *)t->data == (const char *)t->view_src->data + t->view_offs) {
            g->view = true;
            g->root = (uint32_t)v;
            g->offset_bytes = t->view_offs;
            continue;
        }
        long a = arena_of(m, api, t->buffer, (uintptr_t)t->data, g->bytes);
        if (a < 0)
            goto fail;
        g->arena = (int32_t)a;
        g->offset_bytes = (uintptr_t)t->data - m->arenas[a].base;
        if (g->node >= 0)
            m->arenas[a].compute = true;
    }
    if (name_all(m, api) != 0)
        goto fail;

    /* Flags on roots; sinks are outputs. */
    bool *read = calloc((size_t)m->n_tensors + 1, sizeof *read);
    if (!read)
        goto fail;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *t = api->graph_node(graph, i);
        /* Consumed, as ggml_gallocr counts children: any source but itself (ggml_cast), a
         * CPY's destination included (the node is a view of it, read through it). */
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            long k = t->src[s] != t ? gm_find(m, t->src[s]) : -1;
            if (k >= 0)
                read[k] = true;
        }
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        struct gm_tensor *g = &m->tensors[i];
        struct gm_tensor *r = &m->tensors[g->root];
        if (g->t->flags & GGML_TENSOR_FLAG_INPUT)
            r->flags |= TLSAN_TENSOR_INPUT;
        if (g->t->flags & GGML_TENSOR_FLAG_OUTPUT)
            r->flags |= TLSAN_TENSOR_OUTPUT;
        if (g->node >= 0 && !read[i])
            r->flags |= TLSAN_TENSOR_OUTPUT;
        if (!g->view && g->node < 0 && !m->arenas[g->arena].compute)
            g->flags |= TLSAN_TENSOR_INPUT;
    }
    free(read);

    /* Lazily allocated leaves: written by their first consumer. Then the derived lifetimes
     * (used to pick an injection's victim; the checker derives its own from the plan). */
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *t = api->graph_node(graph, i);
        bool view_op = gm_is_view_op(api, t);
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            long k = gm_find(m, t->src[s]);
            if (k < 0)
                continue;
            struct gm_tensor *r = &m->tensors[root_of(m, (size_t)k)];
            if (r->node < 0 && !(r->flags & TLSAN_TENSOR_INPUT) && r->first_writer < 0 && !view_op)
                r->first_writer = i;
            if (!view_op)
                note_access(r, i, r->first_writer == i || !gm_reads_src(api, t, s));
        }
        if (!view_op && m->node_index[i] != UINT32_MAX)
            note_access(&m->tensors[root_of(m, m->node_index[i])], i, true);
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        struct gm_tensor *r = &m->tensors[i];
        if (r->view)
            continue;
        if (r->flags & TLSAN_TENSOR_INPUT) {
            r->first = -1;
            if (r->last == INT64_MIN)
                r->last = -1;
        }
        if (r->flags & TLSAN_TENSOR_OUTPUT) {
            r->last = n;
            if (r->first == INT64_MIN)
                r->first = n;
        }
    }
    return 0;
fail:
    gm_free(m);
    return -1;
}

void gm_free(struct gm_model *m)
{
    free(m->tensors);
    free(m->arenas);
    free(m->slots);
    free(m->node_index);
    memset(m, 0, sizeof *m);
}

/* ---- the plan ---- */

static bool list_has(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == s)
            return true;
    return false;
}

tlsan_plan *gm_plan(const struct gm_model *m, const struct gm_api *api, const char *name,
                    tlsan_error *err)
{
    tlsan_plan *p = tlsan_plan_create();
    const char *reads[GGML_MAX_SRC], *writes[GGML_MAX_SRC + 1], *inplace[2 * GGML_MAX_SRC];
    if (!p)
        return NULL;
    if (tlsan_plan_set_name(p, name) != TLSAN_OK)
        goto fail;
    for (size_t i = 0; i < m->n_arenas; i++) {
        tlsan_arena_desc a = {.name = m->arenas[i].name, .bytes = m->arenas[i].bytes};
        if (tlsan_plan_add_arena(p, &a, err) != TLSAN_OK)
            goto fail;
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct gm_tensor *g = &m->tensors[i];
        tlsan_tensor_desc d = {.name = g->name, .bytes = g->bytes, .flags = g->flags};
        if (g->view) {
            d.view_of = m->tensors[g->root].name;
            d.view_offset_bytes = g->offset_bytes;
        } else {
            d.arena = m->arenas[g->arena].name;
            d.offset_bytes = g->offset_bytes;
        }
        if (tlsan_plan_add_tensor(p, &d, err) != TLSAN_OK)
            goto fail;
    }
    for (int i = 0; i < m->n_nodes; i++) {
        char op_name[96];
        uint32_t k = m->node_index[i];
        const struct ggml_tensor *t = k == UINT32_MAX ? NULL : m->tensors[k].t;
        snprintf(op_name, sizeof op_name, "%s#%d", t ? api->op_desc(t) : "UNALLOCATED", i);
        tlsan_op_desc op = {.name = op_name, .reads = reads, .writes = writes, .inplace = inplace};
        if (t && !gm_is_view_op(api, t)) {
            const struct gm_tensor *out = &m->tensors[k];
            writes[op.n_writes++] = out->name;
            for (int s = 0; s < GGML_MAX_SRC; s++) {
                long j = gm_find(m, t->src[s]);
                if (j < 0)
                    continue;
                const struct gm_tensor *src = &m->tensors[j];
                const struct gm_tensor *r = &m->tensors[src->root];
                if (r->first_writer == i) {
                    /* A leaf ggml_gallocr allocates for this op: its first access is a write. */
                    if (!list_has(writes, op.n_writes, r->name))
                        writes[op.n_writes++] = r->name;
                    continue;
                }
                if (!gm_reads_src(api, t, s))
                    continue; /* the destination it writes, through the node */
                if (list_has(reads, op.n_reads, src->name))
                    continue;
                reads[op.n_reads++] = src->name;
                if (src->t->data == t->data && src->bytes == out->bytes && src->root != out->root) {
                    inplace[2 * op.n_inplace] = out->name;
                    inplace[2 * op.n_inplace + 1] = src->name;
                    op.n_inplace++;
                }
            }
        }
        if (tlsan_plan_add_op(p, &op, err) != TLSAN_OK)
            goto fail;
    }
    if (tlsan_plan_finalize(p, err) != TLSAN_OK)
        goto fail;
    return p;
fail:
    tlsan_plan_free(p);
    return NULL;
}

#endif
