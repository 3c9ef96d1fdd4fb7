/* views: the accesses below views that declare a lifetime. */
#include "check/view_access.h"

#include <stdlib.h>
#include <string.h>

void view_access_free(view_access *va)
{
    free(va->start);
    free(va->op);
    free(va->rw);
    free(va->flags);
    free(va->hull);
    memset(va, 0, sizeof *va);
}

/* Whether tensor t gets a list: every view for the picture, only the views that declare a
 * lifetime for the checker (the others are judged through their root). */
static bool listed(const tensor_rec *t, bool every_view)
{
    return t->view_of != NO_INDEX && (every_view || (t->flags & TREC_HAS_LIFETIME));
}

/* Tensors ordered so that every view comes after its base (by depth in the view forest),
 * computed without recursion: O(n_tensors). */
static uint32_t *by_depth(const tlsan_plan *p)
{
    size_t nt = p->n_tensors;
    uint32_t *depth = malloc((nt ? nt : 1) * sizeof *depth);
    uint32_t *count = calloc(nt + 2, sizeof *count);
    uint32_t *order = malloc((nt ? nt : 1) * sizeof *order);
    if (!depth || !count || !order) {
        free(depth);
        free(count);
        free(order);
        return NULL;
    }
    for (size_t t = 0; t < nt; t++)
        depth[t] = UINT32_MAX;
    for (uint32_t t = 0; t < nt; t++) {
        /* climb to a tensor of known depth, then number the chain on the way back down by
         * reusing `order` as the stack */
        uint32_t n = 0, x = t;
        while (depth[x] == UINT32_MAX && p->tensors[x].view_of != NO_INDEX) {
            order[n++] = x;
            x = p->tensors[x].view_of;
        }
        if (depth[x] == UINT32_MAX)
            depth[x] = 0;
        while (n > 0) {
            uint32_t v = order[--n];
            depth[v] = depth[p->tensors[v].view_of] + 1;
        }
    }
    for (size_t t = 0; t < nt; t++)
        count[depth[t] + 1]++;
    for (size_t d = 0; d <= nt; d++)
        count[d + 1] += count[d];
    for (uint32_t t = 0; t < nt; t++)
        order[count[depth[t]]++] = t;
    free(depth);
    free(count);
    return order;
}

/* Lists longer than this many entries in all are not built; the hull stands in. */
static size_t view_list_budget(const tlsan_plan *p, const access_index *ix)
{
    return 4 * (size_t)ix->start[p->n_tensors] + (1u << 22);
}

/* The accesses of the view trees below the views that declare a lifetime: for such a view,
 * its own accesses and those of the views below it (a tensor's derived lifetime). The
 * lists are filled in one pass over the ops, jumping from each accessed tensor to its
 * nearest declaring ancestor, so the cost is the size of the lists. When those would be
 * too large (deep chains of declaring views), a per-tensor hull takes their place: the
 * span of every access below, widened to whole loop bodies, which contains the derived
 * lifetime on every path. */
static int build(view_access *va, const tlsan_plan *p, const access_index *ix, bool every_view)
{
    size_t nt = p->n_tensors;
    uint32_t *order = by_depth(p);
    uint32_t *near = malloc((nt ? nt : 1) * sizeof *near); /* nearest declaring ancestor */
    uint64_t *count = calloc(nt ? nt : 1, sizeof *count);  /* merged accesses per tensor */
    uint32_t *last = calloc(nt ? nt : 1, sizeof *last);
    uint32_t *cursor = NULL;
    va->start = calloc(nt + 1, sizeof *va->start);
    va->flags = calloc(nt ? nt : 1, 1);
    if (!order || !near || !count || !last || !va->start || !va->flags)
        goto fail;
    for (size_t i = 0; i < nt; i++) { /* bases before views */
        uint32_t t = order[i];
        const tensor_rec *r = &p->tensors[t];
        uint32_t up = r->view_of == NO_INDEX ? NO_INDEX : near[r->view_of];
        near[t] = listed(r, every_view) ? t : up;
    }
    for (size_t i = nt; i-- > 0;) { /* views before bases: flags of the tree below */
        uint32_t t = order[i];
        va->flags[t] |= p->tensors[t].flags & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT);
        if (p->tensors[t].view_of != NO_INDEX)
            va->flags[p->tensors[t].view_of] |= va->flags[t];
    }
    /* Count each declaring view's merged accesses: own, then those of the views below. */
    for (uint32_t o = 0; o < p->n_ops; o++) {
        const op_rec *r = &p->ops[o];
        for (uint32_t k = 0; k < r->n_reads + r->n_writes; k++) {
            uint32_t t = k < r->n_reads ? p->id_pool.v[r->reads_start + k]
                                        : p->id_pool.v[r->writes_start + k - r->n_reads];
            if (near[t] != NO_INDEX && last[t] != o + 1) {
                last[t] = o + 1;
                count[t]++;
            }
        }
    }
    uint64_t total = 0;
    for (size_t i = nt; i-- > 0;) {
        uint32_t t = order[i];
        uint32_t b = p->tensors[t].view_of;
        if (b != NO_INDEX)
            count[b] += count[t]; /* an upper bound: one op may touch two views of a tree */
        if (listed(&p->tensors[t], every_view))
            total += count[t];
    }
    if (total > view_list_budget(p, ix) || total > UINT32_MAX) {
        /* Hull per tensor, views before bases: own accesses, then children. */
        va->hull = malloc((nt ? nt : 1) * sizeof *va->hull);
        if (!va->hull)
            goto fail;
        for (size_t t = 0; t < nt; t++)
            va->hull[t] = (life){LIFE_NONE_FIRST, LIFE_NONE_LAST};
        for (uint32_t o = 0; o < p->n_ops; o++) {
            const op_rec *r = &p->ops[o];
            for (uint32_t k = 0; k < r->n_reads + r->n_writes; k++) {
                uint32_t t = k < r->n_reads ? p->id_pool.v[r->reads_start + k]
                                            : p->id_pool.v[r->writes_start + k - r->n_reads];
                life *h = &va->hull[t];
                if ((int32_t)o < h->first)
                    h->first = (int32_t)o;
                if ((int32_t)o > h->last)
                    h->last = (int32_t)o;
            }
        }
        for (size_t i = nt; i-- > 0;) {
            uint32_t t = order[i], b = p->tensors[t].view_of;
            if (b == NO_INDEX || life_empty(va->hull[t]))
                continue;
            life *h = &va->hull[b];
            h->first = va->hull[t].first < h->first ? va->hull[t].first : h->first;
            h->last = va->hull[t].last > h->last ? va->hull[t].last : h->last;
        }
        goto done;
    }
    for (size_t t = 0; t < nt; t++)
        va->start[t + 1] =
            va->start[t] + (listed(&p->tensors[t], every_view) ? (uint32_t)count[t] : 0);
    va->op = malloc((total ? total : 1) * sizeof *va->op);
    va->rw = malloc(total ? total : 1);
    cursor = malloc((nt ? nt : 1) * sizeof *cursor);
    if (!va->op || !va->rw || !cursor)
        goto fail;
    memcpy(cursor, va->start, (nt ? nt : 1) * sizeof *cursor);
    memset(last, 0, (nt ? nt : 1) * sizeof *last);
    for (uint32_t o = 0; o < p->n_ops; o++) {
        const op_rec *r = &p->ops[o];
        uint8_t cond = op_x(p, r)->n_cond ? ACC_COND : 0;
        for (uint32_t k = 0; k < r->n_reads + r->n_writes; k++) {
            uint32_t t = k < r->n_reads ? p->id_pool.v[r->reads_start + k]
                                        : p->id_pool.v[r->writes_start + k - r->n_reads];
            uint8_t bit = k < r->n_reads ? ACC_READ : ACC_WRITE;
            for (uint32_t x = near[t]; x != NO_INDEX;) {
                if (last[x] == o + 1) {
                    va->rw[cursor[x] - 1] |= bit;
                } else {
                    last[x] = o + 1;
                    va->op[cursor[x]] = o;
                    va->rw[cursor[x]] = bit | cond;
                    cursor[x]++;
                }
                uint32_t b = p->tensors[x].view_of;
                x = b == NO_INDEX ? NO_INDEX : near[b];
            }
        }
    }
    /* Counts were upper bounds; close the gaps so each list is start[t]..cursor[t]. */
    {
        uint32_t w = 0;
        for (size_t t = 0; t < nt; t++) {
            uint32_t a0 = va->start[t], a1 = listed(&p->tensors[t], every_view) ? cursor[t] : a0;
            va->start[t] = w;
            memmove(va->op + w, va->op + a0, (a1 - a0) * sizeof *va->op);
            memmove(va->rw + w, va->rw + a0, a1 - a0);
            w += a1 - a0;
        }
        va->start[nt] = w;
    }
done:
    free(order);
    free(near);
    free(count);
    free(last);
    free(cursor);
    return 0;
fail:
    free(order);
    free(near);
    free(count);
    free(last);
    free(cursor);
    view_access_free(va);
    return -1;
}

int view_access_build(view_access *va, const tlsan_plan *p, const access_index *ix)
{
    return build(va, p, ix, false);
}

int view_access_build_every_view(view_access *va, const tlsan_plan *p, const access_index *ix)
{
    return build(va, p, ix, true);
}
