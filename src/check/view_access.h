/* views: what a view's declared lifetime is judged against.
 *
 * A tensor's derived lifetime is made of its own accesses and those of the views below it
 * (plan-format.md). For every view that declares a lifetime, view_access_build() lists
 * those accesses, in one pass over the ops that jumps from each accessed tensor to its
 * nearest declaring ancestor, so the cost is the size of the lists. When the lists would be
 * too large (deep chains of declaring views), a per-tensor hull stands in: the span of every
 * access below, which contains the derived lifetime on every path. */
#ifndef TLSAN_VIEWS_H
#define TLSAN_VIEWS_H

#include "check/lifetime.h"

typedef struct view_access {
    uint32_t *start; /* n_tensors + 1 offsets; only views with a declared lifetime have any */
    uint32_t *op;
    uint8_t *rw;
    uint8_t *flags; /* per tensor: input/output flags of the view tree below it */
    life *hull;     /* when the lists would be too large: per tensor, a span containing the
                       derived lifetime on every path (judged approximate); else NULL */
} view_access;

/* Builds the lists (or the hulls). 0, or -1 when out of memory (then freed). */
int view_access_build(view_access *va, const tlsan_plan *p, const access_index *ix);
/* The same lists for every view, declaring a lifetime or not: what `tlsan view` draws each
 * view's lifetime from, so the picture shows the accesses the checker judges. A declaring
 * view's list is the one view_access_build() gives it. */
int view_access_build_every_view(view_access *va, const tlsan_plan *p, const access_index *ix);
void view_access_free(view_access *va);

#endif
