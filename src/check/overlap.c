/* overlap: candidate pairs by sweep, with an interval treap for the live set. */
#include "check/overlap.h"

#include <stdlib.h>
#include <string.h>

/* A treap node per root taking part, indexed by the order in which the sweep inserts it
 * (the roots by first step); the key (start offset, tensor index) and the end offset are read
 * from the root's record, and the priority is computed from that order, so a node is 16
 * bytes and nothing else is kept per node, and a plan's views cost the sweep nothing. */
typedef struct tnode {
    uint64_t max_end;     /* largest end offset in this subtree */
    uint32_t left, right; /* children, NO_INDEX for none */
} tnode;

typedef struct treap {
    tnode *n;
    const uint32_t *root; /* node -> tensor index */
    const tensor_rec *t;
    uint32_t *stack;
} treap;

static inline const tensor_rec *rec(const treap *tr, uint32_t x)
{
    return &tr->t[tr->root[x]];
}

/* Roots are inserted in ascending tensor index among equal first steps, so the index breaks
 * ties of the start offset as the root's rank among the participants would. */
static inline bool key_less(const treap *tr, uint32_t a, uint32_t b)
{
    uint64_t sa = rec(tr, a)->offset_bytes, sb = rec(tr, b)->offset_bytes;
    return sa < sb || (sa == sb && tr->root[a] < tr->root[b]);
}

/* The priority of the node inserted i-th: the (i+1)-th value of splitmix64 from a fixed seed
 * (its state after k steps is seed + k * the increment), so runs are reproducible and no
 * priority is stored. */
static inline uint32_t prio(uint32_t i)
{
    uint64_t z = 0x746c73616eull + ((uint64_t)i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(z ^ (z >> 31));
}

static void pull(treap *tr, uint32_t x)
{
    tnode *n = tr->n;
    uint64_t m = root_end(rec(tr, x));
    if (n[x].left != NO_INDEX && n[n[x].left].max_end > m)
        m = n[n[x].left].max_end;
    if (n[x].right != NO_INDEX && n[n[x].right].max_end > m)
        m = n[n[x].right].max_end;
    n[x].max_end = m;
}

/* Splits tree t into keys below x's key (*l) and the rest (*r). */
static void split(treap *tr, uint32_t t, uint32_t x, uint32_t *l, uint32_t *r)
{
    if (t == NO_INDEX) {
        *l = *r = NO_INDEX;
        return;
    }
    if (key_less(tr, t, x)) {
        split(tr, tr->n[t].right, x, &tr->n[t].right, r);
        *l = t;
    } else {
        split(tr, tr->n[t].left, x, l, &tr->n[t].left);
        *r = t;
    }
    pull(tr, t);
}

static uint32_t merge(treap *tr, uint32_t l, uint32_t r)
{
    if (l == NO_INDEX)
        return r;
    if (r == NO_INDEX)
        return l;
    tnode *n = tr->n;
    if (prio(l) > prio(r)) {
        n[l].right = merge(tr, n[l].right, r);
        pull(tr, l);
        return l;
    }
    n[r].left = merge(tr, l, n[r].left);
    pull(tr, r);
    return r;
}

static uint32_t insert(treap *tr, uint32_t t, uint32_t x)
{
    uint32_t l, r;
    split(tr, t, x, &l, &r);
    return merge(tr, merge(tr, l, x), r);
}

static uint32_t erase(treap *tr, uint32_t t, uint32_t x)
{
    if (t == NO_INDEX)
        return NO_INDEX;
    if (t == x)
        return merge(tr, tr->n[t].left, tr->n[t].right);
    if (key_less(tr, x, t))
        tr->n[t].left = erase(tr, tr->n[t].left, x);
    else
        tr->n[t].right = erase(tr, tr->n[t].right, x);
    pull(tr, t);
    return t;
}

/* Reports every node of tree t whose [start, end) meets [qs, qe). */
static int query(treap *tr, uint32_t t, uint64_t qs, uint64_t qe, uint32_t who, overlap_pair_fn fn,
                 void *ctx)
{
    tnode *n = tr->n;
    size_t top = 0;
    if (t != NO_INDEX)
        tr->stack[top++] = t;
    while (top > 0) {
        uint32_t x = tr->stack[--top];
        if (n[x].max_end <= qs)
            continue; /* nothing below ends after the query starts */
        if (n[x].left != NO_INDEX)
            tr->stack[top++] = n[x].left;
        if (rec(tr, x)->offset_bytes < qe) {
            if (root_end(rec(tr, x)) > qs) {
                int rc = fn(ctx, tr->root[x], tr->root[who]);
                if (rc)
                    return rc;
            }
            if (n[x].right != NO_INDEX)
                tr->stack[top++] = n[x].right;
        }
    }
    return 0;
}

/* Counting sort of the roots taking part by a step key in [-1, n_ops]: of the roots
 * themselves, or with `ranks` of their positions 0..n_roots-1 in `roots`. Stable. */
static uint32_t *sort_by_step(const tlsan_plan *p, const uint32_t *roots, size_t n_roots,
                              const life *hull, bool by_last, bool ranks)
{
    size_t n_keys = p->n_ops + 2;
    uint32_t *count = calloc(n_keys + 1, sizeof *count);
    uint32_t *out = malloc((n_roots ? n_roots : 1) * sizeof *out);
    if (!count || !out) {
        free(count);
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < n_roots; i++) {
        life h = hull[roots[i]];
        count[(size_t)((by_last ? h.last : h.first) + 1) + 1]++;
    }
    for (size_t k = 0; k < n_keys; k++)
        count[k + 1] += count[k];
    for (size_t i = 0; i < n_roots; i++) {
        life h = hull[roots[i]];
        out[count[(size_t)((by_last ? h.last : h.first) + 1)]++] = ranks ? (uint32_t)i : roots[i];
    }
    free(count);
    return out;
}

/* The roots that take part: bytes > 0 and some access or flag. */
static uint32_t *participants(const tlsan_plan *p, const access_index *ix, size_t *n_out)
{
    uint32_t *roots = calloc(p->n_tensors ? p->n_tensors : 1, sizeof *roots);
    if (!roots)
        return NULL;
    size_t n = 0;
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (p->tensors[t].root == t && p->tensors[t].bytes > 0 && !life_empty(ix->hull[t]))
            roots[n++] = t;
    *n_out = n;
    return roots;
}

int overlap_live_pairs(const tlsan_plan *p, const access_index *ix, overlap_pair_fn fn, void *ctx)
{
    int rc = -1;
    size_t n = 0;
    uint32_t *roots = participants(p, ix, &n);
    uint32_t *ins = NULL, *by_last = NULL, *node_of_rank = NULL, *tree_of_arena = NULL;
    const life *hull = ix->hull;
    treap tr = {.t = p->tensors};
    if (!roots)
        goto out;
    /* The sorts work on ranks (ascending with the root's index, so equal keys keep the order
     * the roots' own sort gives them); the treap on the order of insertion: ins[i] is the
     * root inserted i-th, by_last the nodes in the order they leave. */
    ins = sort_by_step(p, roots, n, hull, false, true);
    by_last = sort_by_step(p, roots, n, hull, true, true);
    node_of_rank = malloc((n ? n : 1) * sizeof *node_of_rank);
    if (!ins || !by_last || !node_of_rank)
        goto out;
    for (size_t i = 0; i < n; i++) {
        node_of_rank[ins[i]] = (uint32_t)i;
        ins[i] = roots[ins[i]];
    }
    for (size_t j = 0; j < n; j++)
        by_last[j] = node_of_rank[by_last[j]];
    free(node_of_rank);
    node_of_rank = NULL;
    free(roots);
    roots = NULL;
    tr.root = ins;
    tr.n = malloc((n ? n : 1) * sizeof *tr.n);
    tr.stack = malloc((n ? n : 1) * sizeof *tr.stack);
    tree_of_arena = malloc((p->n_arenas ? p->n_arenas : 1) * sizeof *tree_of_arena);
    if (!tr.n || !tr.stack || !tree_of_arena)
        goto out;
    for (size_t a = 0; a < p->n_arenas; a++)
        tree_of_arena[a] = NO_INDEX;
    size_t j = 0;
    rc = 0;
    for (uint32_t x = 0; x < n && rc == 0; x++) {
        int32_t first = hull[ins[x]].first;
        /* Closed intervals: a root leaves only once its last step is before this first. */
        while (j < n && hull[ins[by_last[j]]].last < first) {
            uint32_t d = by_last[j++];
            uint32_t a = rec(&tr, d)->arena;
            tree_of_arena[a] = erase(&tr, tree_of_arena[a], d);
        }
        const tensor_rec *t = rec(&tr, x);
        tnode *nx = &tr.n[x];
        nx->max_end = root_end(t);
        nx->left = nx->right = NO_INDEX;
        rc = query(&tr, tree_of_arena[t->arena], t->offset_bytes, nx->max_end, x, fn, ctx);
        tree_of_arena[t->arena] = insert(&tr, tree_of_arena[t->arena], x);
    }
out:
    free(roots);
    free(ins);
    free(by_last);
    free(node_of_rank);
    free(tr.n);
    free(tr.stack);
    free(tree_of_arena);
    return rc;
}

typedef struct seg_bound {
    uint32_t arena;
    uint64_t at;
} seg_bound;

static int cmp_bound(const void *x, const void *y)
{
    const seg_bound *a = x, *b = y;
    if (a->arena != b->arena)
        return a->arena < b->arena ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* Index of the first bound of `arena` at or after `at` in the sorted, unique bounds. */
static size_t bound_index(const seg_bound *b, size_t n, uint32_t arena, uint64_t at)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].arena < arena || (b[mid].arena == arena && b[mid].at < at))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The distinct start and end offsets of the roots, sorted by arena and offset. Planners
 * place many tenants at the same few offsets, so the bounds are deduplicated by hashing
 * before the sort: O(N + U log U) for U distinct bounds. NULL when out of memory. */
static seg_bound *unique_bounds(const tlsan_plan *p, const uint32_t *roots, size_t n,
                                size_t *nb_out)
{
    size_t n_slots = 16;
    while (n_slots < 4 * n)
        n_slots *= 2;
    seg_bound *b = malloc((n ? 2 * n : 1) * sizeof *b);
    uint32_t *slots = calloc(n_slots, sizeof *slots); /* index into b + 1; 0 = empty */
    size_t nb = 0;
    if (!b || !slots) {
        free(b);
        free(slots);
        return NULL;
    }
    for (size_t i = 0; i < 2 * n; i++) {
        const tensor_rec *t = &p->tensors[roots[i / 2]];
        seg_bound x = {t->arena, i % 2 ? root_end(t) : t->offset_bytes};
        uint64_t h = (x.at ^ ((uint64_t)x.arena << 48)) * 0x9e3779b97f4a7c15ull;
        size_t k = (size_t)(h >> 20) & (n_slots - 1);
        while (slots[k] && cmp_bound(&b[slots[k] - 1], &x) != 0)
            k = (k + 1) & (n_slots - 1);
        if (!slots[k]) {
            b[nb++] = x;
            slots[k] = (uint32_t)nb;
        }
    }
    free(slots);
    qsort(b, nb, sizeof *b, cmp_bound);
    *nb_out = nb;
    return b;
}

int overlap_segments(const tlsan_plan *p, const access_index *ix, overlap_segment_fn fn, void *ctx)
{
    int rc = -1;
    size_t n = 0, nb = 0;
    uint32_t *roots = participants(p, ix, &n);
    uint32_t *by_first = NULL, *start = NULL, *list = NULL, *cursor = NULL;
    seg_bound *b = NULL;
    if (!roots)
        goto out;
    by_first = sort_by_step(p, roots, n, ix->hull, false, false);
    b = unique_bounds(p, roots, n, &nb);
    free(roots);
    roots = NULL;
    if (!by_first || !b)
        goto out;
    /* Segment k is [b[k].at, b[k+1].at) of one arena. Lay out each segment's roots
     * (count, then fill in first-step order so every list comes out sorted). */
    start = calloc(nb + 1, sizeof *start);
    if (!start)
        goto out;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const tensor_rec *t = &p->tensors[by_first[i]];
        size_t s0 = bound_index(b, nb, t->arena, t->offset_bytes);
        size_t s1 = bound_index(b, nb, t->arena, root_end(t));
        for (size_t k = s0; k < s1; k++)
            start[k + 1]++;
        total += s1 - s0;
    }
    if (total > UINT32_MAX)
        goto out;
    for (size_t k = 0; k < nb; k++)
        start[k + 1] += start[k];
    list = malloc((total ? total : 1) * sizeof *list);
    cursor = malloc((nb ? nb : 1) * sizeof *cursor);
    if (!list || !cursor)
        goto out;
    memcpy(cursor, start, (nb ? nb : 1) * sizeof *cursor);
    for (size_t i = 0; i < n; i++) {
        const tensor_rec *t = &p->tensors[by_first[i]];
        size_t s0 = bound_index(b, nb, t->arena, t->offset_bytes);
        size_t s1 = bound_index(b, nb, t->arena, root_end(t));
        for (size_t k = s0; k < s1; k++)
            list[cursor[k]++] = by_first[i];
    }
    rc = 0;
    for (size_t k = 0; k < nb && rc == 0; k++)
        if (start[k + 1] - start[k] >= 2)
            rc = fn(ctx, b[k].at, list + start[k], start[k + 1] - start[k]);
out:
    free(roots);
    free(by_first);
    free(b);
    free(start);
    free(list);
    free(cursor);
    return rc;
}

/* A range-max tree over segments: raise [lo, hi) to at least v, ask the largest over
 * [lo, hi). A node's tag was raised over its whole range; mx is the largest in its subtree
 * (its tag included), so nothing is ever pushed down. Bottom-up, without recursion: a range
 * is covered by O(log N) nodes, and every node above them whose range holds a point of the
 * range lies above one of its two end leaves. */
typedef struct max_tree {
    uint32_t *tag, *mx;
    size_t size; /* leaves, a power of two */
} max_tree;

static void tree_raise(max_tree *t, size_t lo, size_t hi, uint32_t v)
{
    if (lo >= hi)
        return;
    for (size_t l = lo + t->size, r = hi + t->size; l < r; l /= 2, r /= 2) {
        if (l & 1) {
            t->tag[l] = t->tag[l] < v ? v : t->tag[l];
            t->mx[l] = t->mx[l] < v ? v : t->mx[l];
            l++;
        }
        if (r & 1) {
            r--;
            t->tag[r] = t->tag[r] < v ? v : t->tag[r];
            t->mx[r] = t->mx[r] < v ? v : t->mx[r];
        }
    }
    for (size_t x = (lo + t->size) / 2; x > 0 && t->mx[x] < v; x /= 2)
        t->mx[x] = v;
    for (size_t x = (hi - 1 + t->size) / 2; x > 0 && t->mx[x] < v; x /= 2)
        t->mx[x] = v;
}

static uint32_t tree_max(const max_tree *t, size_t lo, size_t hi)
{
    uint32_t m = 0;
    if (lo >= hi)
        return 0;
    for (size_t l = lo + t->size, r = hi + t->size; l < r; l /= 2, r /= 2) {
        if (l & 1) {
            m = t->mx[l] > m ? t->mx[l] : m;
            l++;
        }
        if (r & 1) {
            r--;
            m = t->mx[r] > m ? t->mx[r] : m;
        }
    }
    /* the tags above the two end leaves, once each: the paths meet at their common
     * ancestor and share every node above it */
    size_t a = (lo + t->size) / 2, b = (hi - 1 + t->size) / 2;
    for (; a != b; a /= 2, b /= 2) {
        m = t->tag[a] > m ? t->tag[a] : m;
        m = t->tag[b] > m ? t->tag[b] : m;
    }
    for (; a > 0; a /= 2)
        m = t->tag[a] > m ? t->tag[a] : m;
    return m;
}

int overlap_max_sweep(const tlsan_plan *p, const access_index *ix, uint32_t n_chains,
                      overlap_counter_fn done, overlap_counter_fn bound, void *ctx, uint8_t *failed)
{
    int rc = -1;
    size_t n = 0, nb = 0;
    uint32_t *roots = participants(p, ix, &n);
    uint32_t *by_first = NULL, *by_last = NULL, *seg = NULL;
    seg_bound *b = NULL;
    max_tree t = {NULL, NULL, 1};
    if (!roots)
        goto out;
    by_first = sort_by_step(p, roots, n, ix->hull, false, false);
    by_last = sort_by_step(p, roots, n, ix->hull, true, false);
    b = unique_bounds(p, roots, n, &nb);
    seg = malloc((p->n_tensors ? 2 * p->n_tensors : 1) * sizeof *seg); /* per root: s0, s1 */
    if (!by_first || !by_last || !b || !seg)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const tensor_rec *r = &p->tensors[roots[i]];
        seg[2 * roots[i]] = (uint32_t)bound_index(b, nb, r->arena, r->offset_bytes);
        seg[2 * roots[i] + 1] = (uint32_t)bound_index(b, nb, r->arena, root_end(r));
    }
    while (t.size < nb)
        t.size *= 2;
    t.tag = malloc(2 * t.size * sizeof *t.tag);
    t.mx = malloc(2 * t.size * sizeof *t.mx);
    if (!t.tag || !t.mx)
        goto out;
    for (uint32_t chain = 0; chain < n_chains; chain++) {
        memset(t.tag, 0, 2 * t.size * sizeof *t.tag);
        memset(t.mx, 0, 2 * t.size * sizeof *t.mx);
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t l = by_first[i];
            int32_t first = ix->hull[l].first;
            for (; j < n && ix->hull[by_last[j]].last < first; j++) {
                uint32_t e = by_last[j], v = done(ctx, e, chain);
                if (v)
                    tree_raise(&t, seg[2 * e], seg[2 * e + 1], v);
            }
            if (!failed[l] && tree_max(&t, seg[2 * l], seg[2 * l + 1]) > bound(ctx, l, chain))
                failed[l] = 1;
        }
    }
    rc = 0;
out:
    free(roots);
    free(by_first);
    free(by_last);
    free(b);
    free(seg);
    free(t.tag);
    free(t.mx);
    return rc;
}
