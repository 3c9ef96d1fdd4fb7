/* plan_query.c - the shim's questions about a plan's layout (plan_query.h). */
#include "check/plan_query.h"

#include "check/plan.h"

#include <stdlib.h>

static int cmp_root(const void *x, const void *y, void *arg)
{
    const tlsan_plan *p = arg;
    const tensor_rec *a = &p->tensors[*(const uint32_t *)x], *b = &p->tensors[*(const uint32_t *)y];
    if (a->arena != b->arena)
        return a->arena < b->arena ? -1 : 1;
    if (a->offset_bytes != b->offset_bytes)
        return a->offset_bytes < b->offset_bytes ? -1 : 1;
    return 0;
}

/* A sweep in offset order: a root starting before the furthest end so far intersects the root
 * that reaches it, and every intersecting root is met that way. */
int plan_query_shared_roots(const tlsan_plan *p, void (*visit)(void *ctx, const char *name),
                            void *ctx)
{
    uint32_t *ix = malloc((p->n_tensors + 1) * sizeof *ix);
    if (!ix)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < p->n_tensors; i++)
        if (p->tensors[i].view_of == NO_INDEX && p->tensors[i].bytes)
            ix[n++] = (uint32_t)i;
    qsort_r(ix, n, sizeof *ix, cmp_root, (void *)(uintptr_t)p) /* qsort_r passes it on untouched */;
    uint64_t max_end = 0;
    uint32_t max_at = NO_INDEX, arena = NO_INDEX;
    for (size_t k = 0; k < n; k++) {
        const tensor_rec *t = &p->tensors[ix[k]];
        if (t->arena != arena) {
            arena = t->arena;
            max_end = 0;
            max_at = NO_INDEX;
        }
        if (max_at != NO_INDEX && t->offset_bytes < max_end) {
            visit(ctx, plan_str(p, t->name));
            visit(ctx, plan_str(p, p->tensors[max_at].name));
        }
        uint64_t end = t->offset_bytes + t->bytes;
        if (end < t->offset_bytes)
            end = UINT64_MAX;
        if (max_at == NO_INDEX || end > max_end) {
            max_end = end;
            max_at = ix[k];
        }
    }
    free(ix);
    return 0;
}
