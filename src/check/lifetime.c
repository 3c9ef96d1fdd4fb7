/* lifetime: access index, branch paths and per-path live ranges. */
#include "check/lifetime.h"

#include <stdlib.h>
#include <string.h>

void access_index_free(access_index *ix)
{
    free(ix->start);
    free(ix->op);
    free(ix->rw);
    free(ix->hull);
    free(ix->cond_bits);
    free(ix->cond_rank);
    free(ix->cond_ops);
    free(ix->cond_if_start);
    free(ix->cond_ifs);
    free(ix->cond_arms);
    memset(ix, 0, sizeof *ix);
}

static inline int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

static inline int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

life root_must(const access_index *ix, const tlsan_plan *p, uint32_t r)
{
    life must = {LIFE_NONE_FIRST, LIFE_NONE_LAST};
    if (p->tensors[r].root != r)
        return must;
    uint8_t fl = p->root_flags[r];
    if (fl & TLSAN_TENSOR_INPUT)
        must.first = must.last = -1;
    if (fl & TLSAN_TENSOR_OUTPUT) {
        must.first = min32(must.first, (int32_t)p->n_ops);
        must.last = (int32_t)p->n_ops;
    }
    for (uint32_t a = ix->start[r]; a < ix->start[r + 1]; a++) {
        if (!(ix->rw[a] & ACC_COND)) {
            must.first = min32(must.first, (int32_t)ix->op[a]);
            must.last = max32(must.last, (int32_t)ix->op[a]);
        }
    }
    return must;
}

/* Calls fn for each (root, rw bit) an op touches, views resolved to their roots. */
#define FOR_EACH_ROOT_ACCESS(p, o, root_var, bit_var, body)                                        \
    do {                                                                                           \
        const op_rec *o_ = &(p)->ops[o];                                                           \
        for (uint32_t k_ = 0; k_ < o_->n_reads + o_->n_writes; k_++) {                             \
            uint32_t t_ = k_ < o_->n_reads ? (p)->id_pool.v[o_->reads_start + k_]                  \
                                           : (p)->id_pool.v[o_->writes_start + k_ - o_->n_reads];  \
            uint32_t root_var = (p)->tensors[t_].root;                                             \
            uint8_t bit_var = k_ < o_->n_reads ? ACC_READ : ACC_WRITE;                             \
            body                                                                                   \
        }                                                                                          \
    } while (0)

int access_index_build(access_index *ix, const tlsan_plan *p)
{
    memset(ix, 0, sizeof *ix);
    size_t nt = p->n_tensors, no = p->n_ops;
    uint32_t *last = NULL; /* per root: 1 + last op that touched it, to merge an op's accesses */
    ix->start = calloc(nt + 1, sizeof *ix->start);
    ix->hull = malloc((nt ? nt : 1) * sizeof *ix->hull);
    size_t n_words = no / 64 + 1;
    ix->cond_bits = calloc(n_words, sizeof *ix->cond_bits);
    ix->cond_rank = malloc(n_words * sizeof *ix->cond_rank);
    last = calloc(nt ? nt : 1, sizeof *last);
    if (!ix->start || !ix->hull || !ix->cond_bits || !ix->cond_rank || !last)
        goto fail;

    /* Count, then fill: a CSR layout keeps each root's accesses contiguous and sorted. */
    size_t total = 0;
    for (uint32_t o = 0; o < no; o++) {
        FOR_EACH_ROOT_ACCESS(p, o, r, bit, {
            (void)bit;
            if (last[r] != o + 1) {
                last[r] = o + 1;
                ix->start[r + 1]++;
                total++;
            }
        });
    }
    if (total > UINT32_MAX)
        goto fail;
    for (size_t t = 0; t < nt; t++)
        ix->start[t + 1] += ix->start[t];
    ix->op = malloc((total ? total : 1) * sizeof *ix->op);
    ix->rw = malloc(total ? total : 1);
    if (!ix->op || !ix->rw)
        goto fail;
    memset(last, 0, (nt ? nt : 1) * sizeof *last);
    /* fill position per root: reuse `last` as (fill cursor) after this pass's own marker */
    uint32_t *cursor = malloc((nt ? nt : 1) * sizeof *cursor);
    if (!cursor)
        goto fail;
    memcpy(cursor, ix->start, (nt ? nt : 1) * sizeof *cursor);
    uint32_t n_cond = 0;
    for (uint32_t o = 0; o < no; o++) {
        uint8_t cond = op_x(p, &p->ops[o])->n_cond ? ACC_COND : 0;
        if (cond) {
            ix->cond_bits[o / 64] |= UINT64_C(1) << (o % 64);
            n_cond++;
        }
        FOR_EACH_ROOT_ACCESS(p, o, r, bit, {
            if (last[r] != o + 1) {
                last[r] = o + 1;
                ix->op[cursor[r]] = o;
                ix->rw[cursor[r]] = (uint8_t)(bit | cond);
                cursor[r]++;
            } else {
                ix->rw[cursor[r] - 1] |= bit;
            }
        });
    }
    free(cursor);
    cursor = NULL;
    ix->cond_ops = malloc((n_cond ? n_cond : 1) * sizeof *ix->cond_ops);
    if (!ix->cond_ops)
        goto fail;
    n_cond = 0;
    for (size_t w = 0; w < n_words; w++) {
        ix->cond_rank[w] = n_cond;
        for (uint64_t bits = ix->cond_bits[w]; bits; bits &= bits - 1)
            ix->cond_ops[n_cond++] = (uint32_t)(64 * w + (size_t)__builtin_ctzll(bits));
    }
    ix->cond_if_start = malloc((n_cond + 1) * sizeof *ix->cond_if_start);
    if (!ix->cond_if_start)
        goto fail;
    size_t n_ifs = 0;
    for (uint32_t k = 0; k < n_cond; k++) {
        ix->cond_if_start[k] = (uint32_t)n_ifs;
        n_ifs += op_x(p, &p->ops[ix->cond_ops[k]])->n_cond;
    }
    if (n_ifs > UINT32_MAX)
        goto fail;
    ix->cond_if_start[n_cond] = (uint32_t)n_ifs;
    ix->cond_ifs = malloc((n_ifs ? n_ifs : 1) * sizeof *ix->cond_ifs);
    ix->cond_arms = malloc((n_ifs ? n_ifs : 1) * sizeof *ix->cond_arms);
    if (!ix->cond_ifs || !ix->cond_arms)
        goto fail;
    for (uint32_t k = 0; k < n_cond; k++) {
        const op_extra *x = op_x(p, &p->ops[ix->cond_ops[k]]);
        for (uint32_t c = 0; c < x->n_cond; c++) {
            ix->cond_ifs[ix->cond_if_start[k] + c] = p->id_pool.v[x->cond_start + 2 * c];
            ix->cond_arms[ix->cond_if_start[k] + c] = p->id_pool.v[x->cond_start + 2 * c + 1];
        }
    }

    /* Spans: `must` from unconditional accesses, `hull` from all (loops assumed carried
     * whenever they could be, so the hull contains every path's lifetime). */
    for (uint32_t r = 0; r < nt; r++) {
        life must = root_must(ix, p, r), hull = must;
        if (p->tensors[r].root == r) {
            for (uint32_t a = ix->start[r]; a < ix->start[r + 1]; a++) {
                int32_t s = (int32_t)ix->op[a];
                hull.first = min32(hull.first, s);
                hull.last = max32(hull.last, s);
            }
            for (uint32_t a = ix->start[r]; a < ix->start[r + 1]; a++) {
                uint32_t l = plan_op_loop(p, ix->op[a]);
                if (l == NO_INDEX)
                    continue;
                const loop_rec *L = &p->loops[l];
                bool before = hull.first < (int32_t)L->first_op;
                bool any_read = false;
                uint32_t b = a;
                while (b < ix->start[r + 1] && plan_op_loop(p, ix->op[b]) == l) {
                    any_read |= (ix->rw[b] & ACC_READ) != 0;
                    b++;
                }
                if (before || any_read) {
                    hull.first = min32(hull.first, (int32_t)L->first_op);
                    hull.last = max32(hull.last, (int32_t)L->last_op);
                }
                a = b - 1;
            }
            /* A conditional access matters only outside the unconditional span, or inside
             * a loop that is not wholly within it (the loop rule may then move an end). */
            for (uint32_t a = ix->start[r]; a < ix->start[r + 1]; a++) {
                if (!(ix->rw[a] & ACC_COND))
                    continue;
                int32_t s = (int32_t)ix->op[a];
                bool relevant = life_empty(must) || s < must.first || s > must.last;
                uint32_t l = plan_op_loop(p, ix->op[a]);
                if (!relevant && l != NO_INDEX) {
                    const loop_rec *L = &p->loops[l];
                    relevant = (int32_t)L->first_op < must.first || (int32_t)L->last_op > must.last;
                }
                if (relevant)
                    ix->rw[a] |= ACC_RELEVANT;
            }
        }
        ix->hull[r] = hull;
    }
    free(last);
    return 0;
fail:
    free(last);
    access_index_free(ix);
    return -1;
}

bool op_runs(const path_state *ps, uint32_t op)
{
    if (ps->all_run)
        return true;
    const access_index *ix = ps->ix;
    if (ix) {
        if (!((ix->cond_bits[op / 64] >> (op % 64)) & 1))
            return true; /* no condition */
        uint32_t k = cond_ops_before(ix, op);
        for (uint32_t c = ix->cond_if_start[k]; c < ix->cond_if_start[k + 1]; c++)
            if (ps->arm[ix->cond_ifs[c]] != ix->cond_arms[c])
                return false;
        return true;
    }
    const tlsan_plan *p = ps->plan;
    const op_extra *o = op_x(p, &p->ops[op]);
    for (uint32_t k = 0; k < o->n_cond; k++) {
        const uint32_t *c = &p->id_pool.v[o->cond_start + 2 * k];
        if (ps->arm[c[0]] != c[1])
            return false;
    }
    return true;
}

int if_set_init(if_set *s, size_t n_ifs)
{
    memset(s, 0, sizeof *s);
    s->ifs = malloc((n_ifs ? n_ifs : 1) * sizeof *s->ifs);
    s->stamp = calloc(n_ifs ? n_ifs : 1, sizeof *s->stamp);
    s->gen = 1;
    if (!s->ifs || !s->stamp) {
        if_set_free(s);
        return -1;
    }
    return 0;
}

void if_set_free(if_set *s)
{
    free(s->ifs);
    free(s->stamp);
    memset(s, 0, sizeof *s);
}

void if_set_clear(if_set *s)
{
    s->n = 0;
    if (++s->gen == 0) {
        /* wrapped: stamps from 2^32 clears ago could collide, so reset them */
        s->gen = 1;
    }
}

void if_set_add_op(if_set *s, const tlsan_plan *p, uint32_t op)
{
    const op_extra *o = op_x(p, &p->ops[op]);
    for (uint32_t k = 0; k < o->n_cond; k++) {
        uint32_t f = p->id_pool.v[o->cond_start + 2 * k];
        if (s->stamp[f] != s->gen) {
            s->stamp[f] = s->gen;
            s->ifs[s->n++] = f;
        }
    }
}

void if_set_add_cond(if_set *s, const access_index *ix, uint32_t k)
{
    for (uint32_t c = ix->cond_if_start[k]; c < ix->cond_if_start[k + 1]; c++) {
        uint32_t f = ix->cond_ifs[c];
        if (s->stamp[f] != s->gen) {
            s->stamp[f] = s->gen;
            s->ifs[s->n++] = f;
        }
    }
}

void if_set_add_root(if_set *s, const tlsan_plan *p, const access_index *ix, uint32_t root)
{
    (void)p;
    for (uint32_t a = ix->start[root]; a < ix->start[root + 1]; a++)
        if (ix->rw[a] & ACC_RELEVANT) /* a relevant access is conditional */
            if_set_add_cond(s, ix, cond_ops_before(ix, ix->op[a]));
}

void if_set_add_range(if_set *s, const tlsan_plan *p, const access_index *ix, int32_t lo,
                      int32_t hi)
{
    if (lo < 0)
        lo = 0;
    if (hi >= (int32_t)p->n_ops)
        hi = (int32_t)p->n_ops - 1;
    if (lo > hi)
        return;
    uint32_t end = cond_ops_before(ix, (uint32_t)hi + 1);
    for (uint32_t k = cond_ops_before(ix, (uint32_t)lo); k < end; k++) {
        if (s->n >= IF_SET_SATURATED)
            return;
        if_set_add_cond(s, ix, k);
    }
}

uint64_t if_set_paths(const if_set *s, const tlsan_plan *p)
{
    uint64_t paths = 1;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t arms = p->ifs[s->ifs[i]].n_arms;
        if (paths > UINT64_MAX / arms)
            return UINT64_MAX;
        paths *= arms;
    }
    return paths;
}

void path_first(path_state *ps, const if_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        ps->arm[s->ifs[i]] = 0;
}

bool path_next(path_state *ps, const if_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        uint32_t f = s->ifs[i];
        if (++ps->arm[f] < ps->plan->ifs[f].n_arms)
            return true;
        ps->arm[f] = 0;
    }
    return false;
}

/* The lifetime rule of plan-format.md over one access list. With skip_irrelevant, the
 * conditional accesses not marked ACC_RELEVANT are ignored (see lifetime.h). */
static life life_of(const tlsan_plan *p, const uint32_t *ops, const uint8_t *rw, size_t n,
                    unsigned flags, const path_state *ps, bool skip_irrelevant)
{
    life l = {LIFE_NONE_FIRST, LIFE_NONE_LAST};
    int32_t n_ops = (int32_t)p->n_ops;
    if (flags & TLSAN_TENSOR_INPUT)
        l.first = l.last = -1;
    if (flags & TLSAN_TENSOR_OUTPUT) {
        l.first = min32(l.first, n_ops);
        l.last = n_ops;
    }
    size_t i = 0;
    while (i < n) {
        uint32_t loop = plan_op_loop(p, ops[i]);
        if (loop == NO_INDEX) {
            bool runs = !(rw[i] & ACC_COND) ||
                        ((!skip_irrelevant || (rw[i] & ACC_RELEVANT)) && op_runs(ps, ops[i]));
            if (runs) {
                l.first = min32(l.first, (int32_t)ops[i]);
                l.last = max32(l.last, (int32_t)ops[i]);
            }
            i++;
            continue;
        }
        /* A loop body: live on all of it when accessed before the loop (inputs count) or
         * when the first access in the body reads (the value is carried round). */
        const loop_rec *L = &p->loops[loop];
        bool before = l.first < (int32_t)L->first_op;
        bool touched = false, first_reads = false, any_read = false;
        while (i < n && plan_op_loop(p, ops[i]) == loop) {
            any_read |= (rw[i] & ACC_READ) != 0;
            bool runs = !(rw[i] & ACC_COND) ||
                        ((!skip_irrelevant || (rw[i] & ACC_RELEVANT)) && op_runs(ps, ops[i]));
            if (runs) {
                if (!touched) {
                    touched = true;
                    first_reads = (rw[i] & ACC_READ) != 0;
                }
                l.first = min32(l.first, (int32_t)ops[i]);
                l.last = max32(l.last, (int32_t)ops[i]);
            }
            i++;
        }
        /* Under the union of paths any read may come first on some path. */
        if (touched && (before || first_reads || (ps->all_run && any_read))) {
            l.first = min32(l.first, (int32_t)L->first_op);
            l.last = max32(l.last, (int32_t)L->last_op);
        }
    }
    return l;
}

life root_life(const access_index *ix, const tlsan_plan *p, uint32_t root, const path_state *ps)
{
    uint32_t a = ix->start[root];
    return life_of(p, ix->op + a, ix->rw + a, ix->start[root + 1] - a, p->root_flags[root], ps,
                   true);
}

life accesses_life(const tlsan_plan *p, const uint32_t *ops, const uint8_t *rw, size_t n,
                   unsigned flags, const path_state *ps)
{
    return life_of(p, ops, rw, n, flags, ps, false);
}

const char *arm_name(const tlsan_plan *p, uint32_t f, uint32_t arm)
{
    const if_rec *r = &p->ifs[f];
    if (arm < r->n_named_arms)
        return strtab_str(&p->strings, p->id_pool.v[r->arms_start + arm]);
    /* The implicit empty arm of a one-armed if. */
    const char *named = strtab_str(&p->strings, p->id_pool.v[r->arms_start]);
    if (strcmp(named, "then") == 0)
        return "else";
    if (strcmp(named, "else") == 0)
        return "then";
    return "(other arm)";
}
