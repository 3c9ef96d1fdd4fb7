/* check: derive lifetimes, find every unsafe decision of a plan, fill the report.
 *
 * Order of work: build the access index (lifetime.c); layout findings per tensor; then
 * read-before-write and declared lifetimes per tensor (views.c for views); then conflicts
 * from the sweep over steps (overlap.c), each pair judged exactly on the branch paths that
 * can change its answer (in-place exception included); then, where the order is not
 * total, reuse order along the tenant chains of each byte segment (order.c answers the
 * happens-before questions); last, the arena statistics (stats.c). */
#include "check/cache.h"
#include "check/stats.h"
#include "check/view_access.h"
#include "check/order.h"
#include "check/overlap.h"
#include "report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_PATHS 4096u

typedef struct inplace_decl {
    uint32_t lo, hi;  /* the two storage roots, lo < hi */
    uint32_t op;      /* declaring op */
    uint32_t out, in; /* the tensors as named in the declaration */
} inplace_decl;

enum {
    TENANT_FIXED = 1u << 0,  /* no conditional access: the same lifetime on every path */
    TENANT_ANCHOR = 1u << 1, /* an unconditional access: present on every path */
};

typedef struct checker {
    const tlsan_plan *p;
    tlsan_report *r;
    int64_t plan_index;
    uint64_t max_paths;
    access_index ix;
    order_ctx oc;
    path_state ps;
    if_set set;
    inplace_decl *decls;
    size_t n_decls;
    tlsan_cond *path_buf; /* n_ifs entries */
    view_access views;    /* built on demand */
    bool order_only;      /* check_pair judges reuse order, else conflicts */
    bool order_reads;     /* tlsan_check_options.order_reads, on a plan whose order is partial */
    uint8_t *tenant;      /* per root: TENANT_* bits */
    uint32_t *seg;        /* scratch of check_segment(): SEG_ARRAYS arrays of cap_seg entries */
    uint8_t *unproven;    /* per root: not proven ordered after every earlier tenant of its
                             bytes by the clock sweep; NULL when there was none */
    uint32_t *done;       /* with unproven: one root's order_done() per chain */
    uint32_t *seg_max;    /* with unproven: check_segment_clocks()'s range-max trees */
    uint32_t seg_gen;     /* the stamp of the current question */
    size_t cap_seg_max;
    size_t cap_seg;
    plan_stats *stats;
} checker;

static const char *tname(const tlsan_plan *p, uint32_t t)
{
    return strtab_str(&p->strings, p->tensors[t].name);
}

static const char *oname(const tlsan_plan *p, uint32_t o)
{
    return strtab_str(&p->strings, p->ops[o].name);
}

static tlsan_finding new_finding(const checker *c, tlsan_kind kind)
{
    tlsan_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor_index[0] = f.tensor_index[1] = -1;
    f.plan_index = c->plan_index;
    f.other_plan_index = -1;
    f.op_index = f.op_index2 = -1;
    return f;
}

/* Fills f's path with the current arms of the enumerated ifs (none when approximate). */
static void set_path(checker *c, tlsan_finding *f)
{
    if (c->ps.all_run) {
        f->approximate = true;
        return;
    }
    for (size_t i = 0; i < c->set.n; i++) {
        uint32_t fi = c->set.ifs[i];
        c->path_buf[i].if_name = strtab_str(&c->p->strings, c->p->ifs[fi].name);
        c->path_buf[i].arm = arm_name(c->p, fi, c->ps.arm[fi]);
    }
    f->path = c->path_buf;
    f->n_path = c->set.n;
}

/* Enumerates the paths of c->set, or the union of paths when they are too many. Returns
 * false when the caller's loop is done. */
static bool paths_begin(checker *c)
{
    uint64_t n = if_set_paths(&c->set, c->p);
    c->ps.all_run = n > c->max_paths;
    if (c->ps.all_run)
        c->stats->paths_approximate = true;
    else
        path_first(&c->ps, &c->set);
    return true;
}

static bool paths_next(checker *c)
{
    if (c->ps.all_run) {
        c->ps.all_run = false;
        return false;
    }
    return path_next(&c->ps, &c->set);
}

/* ---- layout ---- */

static int check_layout(checker *c)
{
    const tlsan_plan *p = c->p;
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        const tensor_rec *t = &p->tensors[i];
        const tensor_rec *root = &p->tensors[t->root];
        const arena_rec *a = &p->arenas[root->arena];
        const char *names[1] = {tname(p, i)};
        tlsan_finding f = new_finding(c, TLSAN_KIND_OUT_OF_BOUNDS);
        f.tensors = names;
        f.n_tensors = 1;
        f.tensor_index[0] = i;
        if (t->view_of == NO_INDEX) {
            uint64_t end = root_end(t);
            if (end > a->bytes) {
                f.has_bytes = true;
                f.bytes[0] = t->offset_bytes;
                f.bytes[1] = end;
                if (report_add(c->r, &f,
                               "'%s' occupies bytes [%" PRIu64 ", %" PRIu64
                               ") but arena '%s' has only %" PRIu64 " bytes",
                               names[0], t->offset_bytes, end, strtab_str(&p->strings, a->name),
                               a->bytes))
                    return -1;
            }
        } else {
            const tensor_rec *b = &p->tensors[t->view_of];
            uint64_t end = root_end(t); /* view_offset + bytes */
            if (end > b->bytes) {
                if (report_add(c->r, &f,
                               "view '%s' covers bytes [%" PRIu64 ", %" PRIu64
                               ") of its base '%s', which has only %" PRIu64 " bytes",
                               names[0], t->offset_bytes, end, strtab_str(&p->strings, b->name),
                               b->bytes))
                    return -1;
            }
        }
        f.kind = TLSAN_KIND_MISALIGNED;
        bool arena_bad = t->view_of == NO_INDEX && t->offset_bytes % a->alignment_bytes != 0;
        const tensor_extra *x = tensor_x(p, t);
        bool own_bad =
            (t->flags & TREC_HAS_ALIGNMENT) && t->abs_offset_bytes % x->alignment_bytes != 0;
        if (arena_bad || own_bad) {
            uint64_t need = own_bad ? x->alignment_bytes : a->alignment_bytes;
            if (report_add(c->r, &f,
                           "'%s' starts at offset %" PRIu64 " of arena '%s', not a multiple of "
                           "its %s alignment %" PRIu64,
                           names[0], t->abs_offset_bytes, strtab_str(&p->strings, a->name),
                           own_bad ? "own" : "arena's", need))
                return -1;
        }
        f.kind = TLSAN_KIND_MEMORY_KIND_MISMATCH;
        if (x->memory != STRTAB_NONE && x->memory != a->memory) {
            if (report_add(c->r, &f, "'%s' needs memory '%s' but arena '%s' is '%s'", names[0],
                           strtab_str(&p->strings, x->memory), strtab_str(&p->strings, a->name),
                           strtab_str(&p->strings, a->memory)))
                return -1;
        }
        f.kind = TLSAN_KIND_SIZE_MISMATCH;
        uint64_t need = plan_needed_bytes(p, t);
        if (need > t->bytes) {
            if (report_add(c->r, &f,
                           "'%s' has %" PRIu64 " bytes but its dtype %s and shape need %" PRIu64,
                           names[0], t->bytes, tlsan_dtype_name((tlsan_dtype)t->dtype), need))
                return -1;
        }
    }
    return 0;
}

/* ---- read-before-write ---- */

/* The earliest write of a root on one chain (a stream) so far on the path: a later op is
 * ordered after some write of that chain exactly when it is ordered after this one, since
 * program order joins the writes of a chain. */
typedef struct chain_write {
    uint32_t chain, op;
} chain_write;

/* Reports read `x` of root r: an earlier op (`w`, the latest earlier write) writes r, but no
 * write of r is ordered before x. */
static int report_unordered_read(checker *c, uint32_t r, uint32_t x, uint32_t w)
{
    const tlsan_plan *p = c->p;
    const char *names[1] = {tname(p, r)};
    tlsan_finding f = new_finding(c, TLSAN_KIND_READ_BEFORE_WRITE);
    f.tensors = names;
    f.n_tensors = 1;
    f.tensor_index[0] = r;
    f.op_index = x;
    f.op_index2 = w;
    f.has_steps = true;
    f.steps[0] = w;
    f.steps[1] = x;
    set_path(c, &f);
    c->ps.all_run = false;
    return report_add(c->r, &f,
                      "op '%s' (step %u) reads '%s', which op '%s' (step %u) writes, but no write "
                      "of it is ordered before the read (missing event or sync?)",
                      oname(p, x), x, names[0], oname(p, w), w);
}

/* tlsan_check_options.order_reads: on each path, a read of r that an earlier write of r
 * precedes in the list must be ordered after one of them (reads with no earlier write are
 * the list-order rule's, check_read_before_write()). One order question per read and chain
 * that wrote r before it. The ifs enumerated: those of r's conditional accesses, and of the
 * conditional ops between its first and last access when they can change the order. Under
 * the union of paths only unconditional writes count, each proven for every path. */
static int check_unordered_read(checker *c, uint32_t r)
{
    const tlsan_plan *p = c->p;
    const access_index *ix = &c->ix;
    uint32_t a0 = ix->start[r], a1 = ix->start[r + 1];
    uint32_t first_write = a0;
    while (first_write < a1 && !(ix->rw[first_write] & ACC_WRITE))
        first_write++;
    uint32_t last_read = a1; /* one past the last read */
    while (last_read > a0 && !(ix->rw[last_read - 1] & ACC_READ))
        last_read--;
    if (last_read <= first_write + 1)
        return 0; /* no read after a write */
    uint32_t lo = ix->op[first_write], hi = ix->op[last_read - 1];
    size_t n_chains = 0, cap = 4;
    chain_write *chains = malloc(cap * sizeof *chains);
    if (!chains)
        return -1;
    if_set_clear(&c->set);
    for (uint32_t a = a0; a < a1; a++)
        if (ix->rw[a] & ACC_COND)
            if_set_add_op(&c->set, p, ix->op[a]);
    if (!order_clocks_cover(&c->oc, lo, hi))
        if_set_add_range(&c->set, p, ix, (int32_t)lo, (int32_t)hi);
    int rc = 0;
    paths_begin(c);
    do {
        n_chains = 0;
        uint32_t latest = NO_INDEX;
        for (uint32_t a = first_write; a < a1 && rc == 0; a++) {
            uint32_t x = ix->op[a];
            bool cond = (ix->rw[a] & ACC_COND) != 0;
            if (cond && (c->ps.all_run || !op_runs(&c->ps, x))) {
                /* under the union of paths a conditional write may not run; a conditional
                 * read may, and is judged as if it did */
                if (!c->ps.all_run || !(ix->rw[a] & ACC_READ))
                    continue;
            }
            if ((ix->rw[a] & ACC_READ) && latest != NO_INDEX) {
                bool ordered = false;
                const path_state *ps = c->ps.all_run ? NULL : &c->ps;
                for (size_t k = 0; k < n_chains && !ordered; k++)
                    ordered = order_op_before(&c->oc, ps, chains[k].op, x);
                if (!ordered) {
                    rc = report_unordered_read(c, r, x, latest);
                    goto out;
                }
            }
            if (!(ix->rw[a] & ACC_WRITE) || (cond && c->ps.all_run))
                continue;
            latest = x;
            uint32_t chain = p->op_stream[x];
            size_t k = 0;
            while (k < n_chains && chains[k].chain != chain)
                k++;
            if (k < n_chains)
                continue; /* a later write of a chain that already wrote */
            if (n_chains == cap) {
                chain_write *grown = realloc(chains, 2 * cap * sizeof *grown);
                if (!grown) {
                    rc = -1;
                    goto out;
                }
                chains = grown;
                cap *= 2;
            }
            chains[n_chains++] = (chain_write){chain, x};
        }
    } while (paths_next(c));
out:
    c->ps.all_run = false;
    free(chains);
    return rc;
}

static int check_read_before_write(checker *c, uint32_t r)
{
    const tlsan_plan *p = c->p;
    const access_index *ix = &c->ix;
    if (p->root_flags[r] & TLSAN_TENSOR_INPUT)
        return 0;
    uint32_t a0 = ix->start[r], a1 = ix->start[r + 1];
    if (a0 == a1)
        return 0;
    /* Only conditional accesses before the first unconditional one can come first. */
    uint32_t u = a0;
    while (u < a1 && (ix->rw[u] & ACC_COND))
        u++;
    if_set_clear(&c->set);
    for (uint32_t a = a0; a < u; a++)
        if_set_add_op(&c->set, p, ix->op[a]);
    paths_begin(c);
    do {
        for (uint32_t a = a0; a < a1; a++) {
            /* Under the union of paths, a read counts as first unless an unconditional
             * write precedes it: any conditional write may be skipped on some path. */
            bool skip =
                c->ps.all_run ? false : (ix->rw[a] & ACC_COND) && !op_runs(&c->ps, ix->op[a]);
            if (skip)
                continue;
            if (!(ix->rw[a] & ACC_READ)) {
                if (c->ps.all_run && (ix->rw[a] & ACC_COND))
                    continue;
                break;
            }
            const char *names[1] = {tname(p, r)};
            tlsan_finding f = new_finding(c, TLSAN_KIND_READ_BEFORE_WRITE);
            f.tensors = names;
            f.n_tensors = 1;
            f.tensor_index[0] = r;
            f.op_index = ix->op[a];
            f.has_steps = true;
            f.steps[0] = f.steps[1] = ix->op[a];
            set_path(c, &f);
            c->ps.all_run = false;
            return report_add(c->r, &f,
                              "op '%s' (step %u) reads '%s' before any op writes it, and it is "
                              "not an input",
                              oname(p, ix->op[a]), ix->op[a], names[0]);
        }
    } while (paths_next(c));
    return c->order_reads && !c->oc.total ? check_unordered_read(c, r) : 0;
}

/* ---- declared lifetimes ---- */

static int report_lifetime_too_short(checker *c, uint32_t t, life derived, bool approximate);

/* A view's declared lifetime against its hull (when the exact lists were too large). The
 * hull contains every path's derived lifetime, so a finding is approximate, never a miss. */
static int check_view_lifetime_hull(checker *c, uint32_t t)
{
    const tlsan_plan *p = c->p;
    life h = c->views.hull[t];
    unsigned flags = c->views.flags[t];
    if (flags & TLSAN_TENSOR_INPUT)
        h.first = -1, h.last = h.last < -1 ? -1 : h.last;
    if (flags & TLSAN_TENSOR_OUTPUT)
        h.last = (int32_t)p->n_ops, h.first = h.first > h.last ? h.last : h.first;
    if (life_empty(h))
        return 0;
    /* widen each end to the whole loop body it lies in (the loop rule's most) */
    if (h.first >= 0 && h.first < (int32_t)p->n_ops && plan_op_loop(p, h.first) != NO_INDEX)
        h.first = (int32_t)p->loops[plan_op_loop(p, h.first)].first_op;
    if (h.last >= 0 && h.last < (int32_t)p->n_ops && plan_op_loop(p, h.last) != NO_INDEX)
        h.last = (int32_t)p->loops[plan_op_loop(p, h.last)].last_op;
    const int64_t *declared = tensor_x(p, &p->tensors[t])->lifetime;
    if (declared[0] <= h.first && h.last <= declared[1])
        return 0;
    c->stats->paths_approximate = true;
    return report_lifetime_too_short(c, t, h, true);
}

static int check_declared_lifetime(checker *c, uint32_t t)
{
    const tlsan_plan *p = c->p;
    const tensor_rec *tr = &p->tensors[t];
    life derived = {LIFE_NONE_FIRST, LIFE_NONE_LAST};
    bool is_view = tr->view_of != NO_INDEX;
    if (is_view && !c->views.start && view_access_build(&c->views, p, &c->ix) != 0)
        return -1;
    if (is_view && c->views.hull)
        return check_view_lifetime_hull(c, t);
    if_set_clear(&c->set);
    if (!is_view) {
        if_set_add_root(&c->set, p, &c->ix, t);
    } else {
        for (uint32_t a = c->views.start[t]; a < c->views.start[t + 1]; a++)
            if (c->views.rw[a] & ACC_COND)
                if_set_add_op(&c->set, p, c->views.op[a]);
    }
    paths_begin(c);
    bool approximate = c->ps.all_run;
    do {
        life l;
        if (!is_view) {
            l = root_life(&c->ix, p, t, &c->ps);
        } else {
            uint32_t a0 = c->views.start[t];
            l = accesses_life(p, c->views.op + a0, c->views.rw + a0, c->views.start[t + 1] - a0,
                              c->views.flags[t], &c->ps);
        }
        if (!life_empty(l)) {
            derived.first = l.first < derived.first ? l.first : derived.first;
            derived.last = l.last > derived.last ? l.last : derived.last;
        }
    } while (paths_next(c));
    if (life_empty(derived))
        return 0;
    const int64_t *declared = tensor_x(p, tr)->lifetime;
    if (declared[0] <= derived.first && derived.last <= declared[1])
        return 0;
    return report_lifetime_too_short(c, t, derived, approximate);
}

static int report_lifetime_too_short(checker *c, uint32_t t, life derived, bool approximate)
{
    const tlsan_plan *p = c->p;
    const int64_t *declared = tensor_x(p, &p->tensors[t])->lifetime;
    const char *names[1] = {tname(p, t)};
    tlsan_finding f = new_finding(c, TLSAN_KIND_LIFETIME_TOO_SHORT);
    f.tensors = names;
    f.n_tensors = 1;
    f.tensor_index[0] = t;
    f.has_lifetimes = true;
    f.lifetimes[0][0] = derived.first;
    f.lifetimes[0][1] = derived.last;
    f.has_steps = true;
    f.steps[0] = declared[0];
    f.steps[1] = declared[1];
    f.approximate = approximate;
    return report_add(c->r, &f,
                      "'%s' declares lifetime [%" PRId64 ", %" PRId64
                      "] but the ops use it over [%d, %d]",
                      names[0], declared[0], declared[1], derived.first, derived.last);
}

/* ---- pairs ---- */

static int cmp_decl(const void *x, const void *y)
{
    const inplace_decl *a = x, *b = y;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

static int collect_decls(checker *c)
{
    const tlsan_plan *p = c->p;
    size_t n = 0;
    for (uint32_t x = 0; x < p->n_op_extras; x++)
        n += p->op_extras[x].n_inplace;
    c->decls = malloc((n ? n : 1) * sizeof *c->decls);
    if (!c->decls)
        return -1;
    for (uint32_t o = 0; o < p->n_ops && n; o++) {
        const op_extra *r = op_x(p, &p->ops[o]);
        for (uint32_t k = 0; k < r->n_inplace; k++) {
            uint32_t out = p->id_pool.v[r->inplace_start + 2 * k];
            uint32_t in = p->id_pool.v[r->inplace_start + 2 * k + 1];
            uint32_t ro = p->tensors[out].root, ri = p->tensors[in].root;
            if (ro == ri)
                continue; /* one storage root: no pair of roots to excuse */
            c->decls[c->n_decls++] =
                (inplace_decl){ro < ri ? ro : ri, ro < ri ? ri : ro, o, out, in};
        }
    }
    qsort(c->decls, c->n_decls, sizeof *c->decls, cmp_decl);
    return 0;
}

/* The declarations of the pair (lo, hi): [*first, *first + return value). */
static size_t find_decls(const checker *c, uint32_t lo, uint32_t hi, size_t *first)
{
    size_t a = 0, b = c->n_decls;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        const inplace_decl *d = &c->decls[m];
        if (d->lo < lo || (d->lo == lo && d->hi < hi))
            a = m + 1;
        else
            b = m;
    }
    *first = a;
    size_t e = a;
    while (e < c->n_decls && c->decls[e].lo == lo && c->decls[e].hi == hi)
        e++;
    return e - a;
}

static bool list_has(const tlsan_plan *p, uint32_t start, uint32_t n, uint32_t t)
{
    for (uint32_t k = 0; k < n; k++)
        if (p->id_pool.v[start + k] == t)
            return true;
    return false;
}

/* Whether op k reads a byte of `out` through a tensor whose bytes differ from `in`'s: reading
 * a concat while overwriting its first half in place is not in-place safe, however the pair
 * is declared (plan-format.md, "Exception, in-place"). Returns that tensor, or NO_INDEX. */
static uint32_t wider_read(const tlsan_plan *p, const op_rec *k, const tensor_rec *out,
                           const tensor_rec *in)
{
    uint64_t os = out->abs_offset_bytes, oe = os + out->bytes;
    uint32_t arena = p->tensors[out->root].arena;
    for (uint32_t i = 0; i < k->n_reads; i++) {
        uint32_t t = p->id_pool.v[k->reads_start + i];
        const tensor_rec *r = &p->tensors[t];
        uint64_t rs = r->abs_offset_bytes, re = rs + r->bytes;
        if (p->tensors[r->root].arena != arena || r->bytes == 0 || out->bytes == 0 || rs >= oe ||
            os >= re)
            continue; /* an empty range intersects nothing */
        if (rs != in->abs_offset_bytes || r->bytes != in->bytes)
            return t;
    }
    return NO_INDEX;
}

/* The in-place exception of plan-format.md on the current path. */
static bool inplace_excused(const checker *c, size_t d0, size_t nd, uint32_t a, life la, life lb)
{
    const tlsan_plan *p = c->p;
    for (size_t i = d0; i < d0 + nd; i++) {
        const inplace_decl *d = &c->decls[i];
        const op_rec *k = &p->ops[d->op];
        const tensor_rec *out = &p->tensors[d->out], *in = &p->tensors[d->in];
        if (!list_has(p, k->reads_start, k->n_reads, d->in) ||
            !list_has(p, k->writes_start, k->n_writes, d->out))
            continue;
        if (out->abs_offset_bytes != in->abs_offset_bytes || out->bytes != in->bytes)
            continue;
        if (wider_read(p, k, out, in) != NO_INDEX)
            continue;
        if (!op_runs(&c->ps, d->op))
            continue;
        /* Under the union of paths the exception must hold on every path: with the op
         * always running and the union lifetimes meeting at it, any path's overlap is
         * that one step. */
        if (c->ps.all_run && op_x(p, &p->ops[d->op])->n_cond)
            continue;
        life lin = in->root == a ? la : lb;
        life lout = out->root == a ? la : lb;
        if (lin.last == (int32_t)d->op && lout.first == (int32_t)d->op)
            return true;
    }
    return false;
}

/* Why the in-place exception does not cover declaration d on the current path, in words:
 * the first of its conditions that fails (plan-format.md, "Exception, in-place"). */
static void inplace_why(const checker *c, const inplace_decl *d, uint32_t a, life la, life lb,
                        char *buf, size_t n)
{
    const tlsan_plan *p = c->p;
    const op_rec *k = &p->ops[d->op];
    const tensor_rec *out = &p->tensors[d->out], *in = &p->tensors[d->in];
    const char *kn = oname(p, d->op), *on = tname(p, d->out), *inn = tname(p, d->in);
    life lin = in->root == a ? la : lb, lout = out->root == a ? la : lb;
    uint32_t wide;
    if (!list_has(p, k->reads_start, k->n_reads, d->in))
        snprintf(buf, n, "op '%s' does not read '%s'", kn, inn);
    else if (!list_has(p, k->writes_start, k->n_writes, d->out))
        snprintf(buf, n, "op '%s' does not write '%s'", kn, on);
    else if (out->abs_offset_bytes != in->abs_offset_bytes || out->bytes != in->bytes)
        snprintf(buf, n, "'%s' and '%s' do not cover the same bytes", on, inn);
    else if ((wide = wider_read(p, k, out, in)) != NO_INDEX)
        snprintf(buf, n, "op '%s' reads bytes of '%s' through '%s', which is not '%s'", kn, on,
                 tname(p, wide), inn);
    else if (c->ps.all_run && op_x(p, k)->n_cond)
        snprintf(buf, n, "op '%s' is conditional and the paths were too many to tell", kn);
    else if (!op_runs(&c->ps, d->op))
        snprintf(buf, n, "op '%s' does not run on this path", kn);
    else if (lin.last != (int32_t)d->op) {
        char note[400];
        report_step_note(p, in->root, lin.first, lin.last, lin.last, note, sizeof note);
        snprintf(buf, n, "'%s' is still live at step %d%s, after op '%s' (step %u)", inn, lin.last,
                 note, kn, d->op);
    } else {
        char note[400];
        report_step_note(p, out->root, lout.first, lout.last, lout.first, note, sizeof note);
        snprintf(buf, n, "'%s' is already live at step %d%s, before op '%s' (step %u)", on,
                 lout.first, note, kn, d->op);
    }
}

/* First access of a root on the current path, or NO_INDEX. */
static uint32_t first_access(const checker *c, uint32_t r)
{
    for (uint32_t a = c->ix.start[r]; a < c->ix.start[r + 1]; a++)
        if (!(c->ix.rw[a] & ACC_COND) || op_runs(&c->ps, c->ix.op[a]))
            return c->ix.op[a];
    return NO_INDEX;
}

static void pair_geometry(const checker *c, tlsan_finding *f, uint32_t x, uint32_t y)
{
    const tensor_rec *tx = &c->p->tensors[x], *ty = &c->p->tensors[y];
    f->has_bytes = true;
    f->bytes[0] = tx->offset_bytes > ty->offset_bytes ? tx->offset_bytes : ty->offset_bytes;
    uint64_t ex = root_end(tx), ey = root_end(ty);
    f->bytes[1] = ex < ey ? ex : ey;
}

/* Root r's lifetime on the current path. A root with no conditional access has one
 * lifetime on every path, its hull (check_one() made it exact), except under the union of
 * paths, whose loop rule may lengthen it. */
static life tenant_life(const checker *c, uint32_t r)
{
    if ((c->tenant[r] & TENANT_FIXED) && !c->ps.all_run)
        return c->ix.hull[r];
    return root_life(&c->ix, c->p, r, &c->ps);
}

/* Reports that root e's access `bad` is not ordered before op lf, the first access of l,
 * which reuses e's bytes. */
static int report_unordered(checker *c, uint32_t e, uint32_t l, life le, life ll, uint32_t lf,
                            uint32_t bad)
{
    const tlsan_plan *p = c->p;
    const char *names[2] = {tname(p, e), tname(p, l)};
    tlsan_finding f = new_finding(c, TLSAN_KIND_UNORDERED_REUSE);
    f.tensors = names;
    f.n_tensors = 2;
    f.tensor_index[0] = e;
    f.tensor_index[1] = l;
    f.has_steps = true;
    f.steps[0] = bad;
    f.steps[1] = lf;
    f.has_lifetimes = true;
    f.lifetimes[0][0] = le.first;
    f.lifetimes[0][1] = le.last;
    f.lifetimes[1][0] = ll.first;
    f.lifetimes[1][1] = ll.last;
    f.op_index = lf;
    f.op_index2 = bad;
    /* every access of e not ordered before lf, not only the first */
    uint32_t listed[TLSAN_MAX_LISTED_OPS];
    int64_t listed_ops[TLSAN_MAX_LISTED_OPS];
    f.n_unordered_total =
        order_unordered(&c->oc, c->ps.all_run ? NULL : &c->ps, e, lf, listed, TLSAN_MAX_LISTED_OPS);
    f.n_unordered_ops =
        f.n_unordered_total < TLSAN_MAX_LISTED_OPS ? f.n_unordered_total : TLSAN_MAX_LISTED_OPS;
    for (size_t i = 0; i < f.n_unordered_ops; i++)
        listed_ops[i] = listed[i];
    f.unordered_ops = listed_ops;
    pair_geometry(c, &f, e, l);
    set_path(c, &f);
    return report_add(c->r, &f,
                      "'%s' reuses the bytes of '%s' from op '%s' (step %u), but op '%s' (step %u) "
                      "that accesses '%s' is not ordered before it%s",
                      names[1], names[0], oname(p, lf), lf, oname(p, bad), bad, names[0],
                      p->schedule == TLSAN_SCHEDULE_DATAFLOW ? " by the dataflow dependencies"
                                                             : " (missing event or sync?)");
}

static int check_pair(void *ctx, uint32_t a, uint32_t b)
{
    checker *c = ctx;
    const tlsan_plan *p = c->p;
    bool need_conflict = !c->order_only;
    bool need_order = !c->oc.total && c->order_only;
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    size_t d0 = 0, nd = find_decls(c, lo, hi, &d0);

    if_set_clear(&c->set);
    if (p->n_ifs) {
        if_set_add_root(&c->set, p, &c->ix, a);
        if_set_add_root(&c->set, p, &c->ix, b);
        for (size_t i = d0; i < d0 + nd; i++)
            if_set_add_op(&c->set, p, c->decls[i].op);
        if (need_order) {
            life ha = c->ix.hull[a], hb = c->ix.hull[b];
            if_set_add_range(&c->set, p, &c->ix, ha.first < hb.first ? ha.first : hb.first,
                             ha.last > hb.last ? ha.last : hb.last);
        }
    }
    bool conflict_done = !need_conflict, order_done = !need_order;
    paths_begin(c);
    do {
        life la = tenant_life(c, a), lb = tenant_life(c, b);
        bool meet = life_intersect(la, lb);
        if (meet && !conflict_done && !(nd && inplace_excused(c, d0, nd, a, la, lb))) {
            conflict_done = true;
            /* Earlier-born first, so messages read "x is overwritten by y". */
            bool swap = lb.first < la.first ||
                        (lb.first == la.first && strcmp(tname(p, b), tname(p, a)) < 0);
            uint32_t x = swap ? b : a, y = swap ? a : b;
            life lx = swap ? lb : la, ly = swap ? la : lb;
            const char *names[2] = {tname(p, x), tname(p, y)};
            tlsan_finding f = new_finding(c, nd ? TLSAN_KIND_BAD_INPLACE : TLSAN_KIND_LIVE_OVERLAP);
            f.tensors = names;
            f.n_tensors = 2;
            f.tensor_index[0] = x;
            f.tensor_index[1] = y;
            f.has_steps = true;
            f.steps[0] = lx.first > ly.first ? lx.first : ly.first;
            f.steps[1] = lx.last < ly.last ? lx.last : ly.last;
            f.has_lifetimes = true;
            f.lifetimes[0][0] = lx.first;
            f.lifetimes[0][1] = lx.last;
            f.lifetimes[1][0] = ly.first;
            f.lifetimes[1][1] = ly.last;
            pair_geometry(c, &f, x, y);
            if (nd)
                f.op_index = c->decls[d0].op;
            set_path(c, &f);
            int rc;
            if (nd) {
                char why[1024];
                inplace_why(c, &c->decls[d0], a, la, lb, why, sizeof why);
                rc = report_add(c->r, &f,
                                "'%s' and '%s' are declared in-place by op '%s' but are both "
                                "live over steps %" PRId64 "..%" PRId64 ": %s",
                                names[0], names[1], oname(p, c->decls[d0].op), f.steps[0],
                                f.steps[1], why);
            } else
                rc = report_add(c->r, &f,
                                "'%s' (live %d..%d) and '%s' (live %d..%d) share bytes [%" PRIu64
                                ", %" PRIu64 ") while both are live at steps %" PRId64 "..%" PRId64,
                                names[0], lx.first, lx.last, names[1], ly.first, ly.last,
                                f.bytes[0], f.bytes[1], f.steps[0], f.steps[1]);
            if (rc)
                return rc;
        }
        /* Reuse order, on a path where the lifetimes are disjoint. On the union of paths,
         * lifetimes that meet may still be disjoint on some path, either way round (the
         * conflict itself comes from the sweep over steps): then both orientations must
         * be proven. */
        bool both_ways = meet && c->ps.all_run;
        if (order_done || life_empty(la) || life_empty(lb) || (meet && !both_ways))
            goto next_path;
        for (int o = 0; o < 2 && !order_done; o++) {
            uint32_t e = o ? b : a, l = o ? a : b;
            life le = o ? lb : la, ll = o ? la : lb;
            if (!both_ways && !(le.last < ll.first))
                continue;
            uint32_t lf = NO_INDEX, bad = NO_INDEX;
            bool ordered = true;
            if (!c->ps.all_run) {
                lf = first_access(c, l);
                ordered = lf == NO_INDEX || order_forces(&c->oc, &c->ps, e, lf, &bad);
            } else {
                /* Union of paths: any access up to the first unconditional one may be the
                 * later tenant's first, and the order must be proven for every path. */
                for (uint32_t k = c->ix.start[l]; k < c->ix.start[l + 1] && ordered; k++) {
                    lf = c->ix.op[k];
                    ordered = order_forces_all_paths(&c->oc, e, lf, &bad);
                    if (!(c->ix.rw[k] & ACC_COND))
                        break;
                }
            }
            if (ordered)
                continue;
            order_done = true;
            int rc = report_unordered(c, e, l, le, ll, lf, bad);
            if (rc)
                return rc;
        }
    next_path:
        if (conflict_done && order_done) {
            c->ps.all_run = false;
            break;
        }
    } while (paths_next(c));
    return 0;
}

/* ---- reuse order along tenant chains ---- */

/* Whether, on every path where both run, e's lifetime ends before l's begins and every
 * access of e happens before l's first access: then the pair needs no question of its own,
 * and it carries transitivity (on a path where both are proven around a tenant B present
 * there, e's accesses happen before B's first, which is one of B's accesses, which happen
 * before l's first). With too many paths, the union of paths must prove it. */
static bool pair_proven(checker *c, uint32_t e, uint32_t l)
{
    const tlsan_plan *p = c->p;
    const life *h = c->ix.hull;
    uint32_t bad;
    if (p->n_ifs == 0) { /* every hull is the exact lifetime */
        uint32_t lf = first_access(c, l);
        return h[e].last < h[l].first &&
               (lf == NO_INDEX || order_forces(&c->oc, &c->ps, e, lf, &bad));
    }
    if (!(h[e].first < h[l].first))
        return false; /* l may come first or meet e on some path */
    if_set_clear(&c->set);
    if_set_add_root(&c->set, p, &c->ix, e);
    if_set_add_root(&c->set, p, &c->ix, l);
    if_set_add_range(&c->set, p, &c->ix, h[e].first, h[e].last > h[l].last ? h[e].last : h[l].last);
    bool ok = true;
    paths_begin(c);
    do {
        life le = tenant_life(c, e), ll = tenant_life(c, l);
        if (life_empty(le) || life_empty(ll))
            continue; /* one of them does not exist on this path */
        if (!(le.last < ll.first)) {
            ok = false;
        } else if (!c->ps.all_run) {
            uint32_t lf = first_access(c, l);
            ok = lf == NO_INDEX || order_forces(&c->oc, &c->ps, e, lf, &bad);
        } else {
            /* any access up to the first unconditional one may be l's first */
            for (uint32_t k = c->ix.start[l]; k < c->ix.start[l + 1] && ok; k++) {
                ok = order_forces_all_paths(&c->oc, e, c->ix.op[k], &bad);
                if (!(c->ix.rw[k] & ACC_COND))
                    break;
            }
        }
    } while (ok && paths_next(c));
    c->ps.all_run = false;
    return ok;
}

/* Asks the pair (e, l) of a segment directly, reporting what is wrong; only where their
 * shared bytes begin, so that a pair is reported once. */
static int ask_pair(checker *c, uint64_t seg_start, uint32_t e, uint32_t l)
{
    const tlsan_plan *p = c->p;
    const life *h = c->ix.hull;
    uint64_t se = p->tensors[e].offset_bytes, sl = p->tensors[l].offset_bytes;
    if ((se > sl ? se : sl) != seg_start)
        return 0;
    if (p->n_ifs == 0) {
        uint32_t lf = first_access(c, l), bad = NO_INDEX;
        if (!(h[e].last < h[l].first) || lf == NO_INDEX ||
            order_forces(&c->oc, &c->ps, e, lf, &bad))
            return 0; /* a conflict (the sweep over steps judges it) or ordered */
        return report_unordered(c, e, l, h[e], h[l], lf, bad);
    }
    return check_pair(c, e, l); /* path by path */
}

/* check_segment()'s scratch, one array of the segment's length each. */
enum {
    SEG_APOS,   /* per anchor (in order): its position in the segment */
    SEG_GROUP,  /* per anchor: its group (a run of anchors each proven before the next) */
    SEG_GSTART, /* per group: its first anchor */
    SEG_MEMO,   /* per group: the latest group whose anchors were all proven after it, + 1 */
    SEG_TODO,   /* groups not yet proven before the current group's anchors */
    SEG_ATTACH, /* per position of a non-anchor: the anchor after it, NO_INDEX while none */
    SEG_BAD,    /* per position: the next non-anchor of its group not proven before its
                   anchor (a list per group), NO_INDEX at the end */
    SEG_GBAD,   /* per group: the head of that list */
    SEG_ARRAYS
};

/* The questions about later tenant l and the tenants of earlier group g (n_groups groups
 * and n_anch anchors so far). When g's last anchor is proven before l (`through`), so is
 * every tenant of g but the non-anchors not proven before their anchor; else the anchors of
 * g proven before l are a prefix (a proven anchor proves every anchor of its group before
 * it), found by bisection, and everything after that prefix is asked directly. */
static int settle_group(checker *c, uint64_t seg_start, const uint32_t *r, uint32_t l, uint32_t g,
                        uint32_t n_groups, uint32_t n_anch, bool through)
{
    size_t cap = c->cap_seg;
    const uint32_t *apos = c->seg + SEG_APOS * cap, *gstart = c->seg + SEG_GSTART * cap;
    const uint32_t *attach = c->seg + SEG_ATTACH * cap, *bad = c->seg + SEG_BAD * cap;
    const uint32_t *gbad = c->seg + SEG_GBAD * cap;
    uint32_t a0 = gstart[g], az = (g + 1 < n_groups ? gstart[g + 1] : n_anch) - 1;
    uint32_t upto = az + 1; /* anchors a0 .. upto-1 are proven before l */
    if (!through) {
        uint32_t lo = a0, hi = az; /* anchors before lo are proven, hi is not */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (pair_proven(c, r[apos[mid]], l))
                lo = mid + 1;
            else
                hi = mid;
        }
        upto = lo;
        uint32_t from = upto > a0 ? apos[upto - 1] + 1 : a0 > 0 ? apos[a0 - 1] + 1 : 0;
        for (uint32_t q = from; q <= apos[az]; q++) {
            int rc = ask_pair(c, seg_start, r[q], l);
            if (rc)
                return rc;
        }
    }
    /* the non-anchors attached to a proven anchor but not proven before it */
    for (uint32_t q = gbad[g]; q != NO_INDEX; q = bad[q])
        if (attach[q] < upto) {
            int rc = ask_pair(c, seg_start, r[q], l);
            if (rc)
                return rc;
        }
    return 0;
}

/* Collects the positions of segment tree `t` (leaves from `leaves` on) whose value exceeds
 * v, below node x, into out (each position once per call). */
static size_t tree_above(const uint32_t *t, size_t leaves, size_t x, uint32_t v, uint32_t *out,
                         size_t n)
{
    if (t[x] <= v)
        return n;
    if (x >= leaves) {
        out[n++] = (uint32_t)(x - leaves);
        return n;
    }
    n = tree_above(t, leaves, 2 * x, v, out, n);
    return tree_above(t, leaves, 2 * x + 1, v, out, n);
}

/* check_segment() with one path and clocks for every path (the clock sweep ran): a tenant e
 * is ordered before the later tenant l of disjoint lifetime exactly when, on every chain c,
 * done(e)[c] <= clock(first access of l)[c]. So per chain a range-max tree over the
 * segment's positions holds the done counters of the tenants before l, and the tenants above
 * l's clock are found by descending it: O(chains log m) per tenant the sweep did not prove
 * and O(log m) per tenant found, which is (or, when the lifetimes meet, is next to) a
 * finding; nothing is asked for the proven ones. Each found pair is then judged by
 * ask_pair(), as check_segment() would. */
static int check_segment_clocks(checker *c, uint64_t seg_start, const uint32_t *r, size_t m)
{
    const life *h = c->ix.hull;
    uint32_t width = c->oc.width;
    size_t leaves = 1;
    while (leaves < m)
        leaves *= 2;
    /* the trees, then the positions found, then per position the stamp of the question
     * that found it */
    size_t need = 2 * leaves * width + 2 * leaves;
    if (need > c->cap_seg_max) {
        uint32_t *grown = realloc(c->seg_max, need * sizeof *grown);
        if (!grown)
            return -1;
        c->seg_max = grown;
        c->cap_seg_max = need;
    }
    memset(c->seg_max, 0, 2 * leaves * width * sizeof *c->seg_max);
    uint32_t *found = c->seg_max + 2 * leaves * width, *seen = found + leaves;
    memset(seen, 0, leaves * sizeof *seen);
    c->seg_gen = 0;
    for (size_t k = 0; k < m; k++) {
        uint32_t l = r[k];
        uint32_t lf = c->unproven[l] ? first_access(c, l) : NO_INDEX;
        if (lf != NO_INDEX && ++c->seg_gen == 0) {
            memset(seen, 0, leaves * sizeof *seen);
            c->seg_gen = 1;
        }
        for (uint32_t ch = 0; lf != NO_INDEX && ch < width; ch++) {
            const uint32_t *t = c->seg_max + 2 * leaves * ch;
            size_t n = tree_above(t, leaves, 1, order_clock(&c->oc, lf, ch), found, 0);
            for (size_t i = 0; i < n; i++) {
                uint32_t e = r[found[i]];
                if (seen[found[i]] == c->seg_gen)
                    continue; /* found on an earlier chain */
                seen[found[i]] = c->seg_gen;
                if (h[e].last < h[l].first) {
                    int rc = ask_pair(c, seg_start, e, l);
                    if (rc)
                        return rc;
                }
            }
        }
        order_done_all(&c->oc, l, c->done);
        for (uint32_t ch = 0; ch < width; ch++) {
            uint32_t *t = c->seg_max + 2 * leaves * ch;
            uint32_t d = c->done[ch];
            for (size_t x = leaves + k; x >= 1 && t[x] < d; x /= 2)
                t[x] = d;
        }
    }
    return 0;
}

/* The tenants of one byte segment, sorted by the first step of their hull. Ordering is
 * transitive through any tenant present on a path (see pair_proven()), and an *anchor*, a
 * tenant with an unconditional access, is present on every path. So the anchors are cut
 * into groups of consecutive anchors each proven before the next (one question per anchor);
 * a tenant without an unconditional access is proven before the anchor after it (one
 * question) or asked about directly. A later tenant l then needs: nothing for its own group
 * when it is an anchor or proven after the anchor before it; one question per earlier group
 * (its last anchor before l), remembered for the rest of l's group, which settles the whole
 * earlier group when it holds and else bisects it; direct questions for the non-anchors not
 * proven before their anchor, those since the last anchor, and what the bisections leave,
 * all of which are (or are next to) findings. In a plan whose reuses are ordered this is
 * about one question per tenant and segment, on every path; segments whose tenants are
 * mostly without an unconditional access, or with many failing links, cost more (up to a
 * question per pair). A pair is reported in the segment where its shared bytes begin, so
 * once. */
static int check_segment(void *ctx, uint64_t seg_start, const uint32_t *r, size_t m)
{
    checker *c = ctx;
    if (c->unproven) {
        /* the clock sweep proved every pair but those with a later tenant marked here */
        bool any = false;
        for (size_t k = 0; k < m && !any; k++)
            any = c->unproven[r[k]] != 0;
        if (!any)
            return 0;
        return check_segment_clocks(c, seg_start, r, m);
    }
    if (m > c->cap_seg) {
        uint32_t *ns = realloc(c->seg, SEG_ARRAYS * m * sizeof *ns);
        if (!ns)
            return -1;
        c->seg = ns;
        c->cap_seg = m;
    }
    size_t cap = c->cap_seg;
    uint32_t *apos = c->seg + SEG_APOS * cap, *group = c->seg + SEG_GROUP * cap;
    uint32_t *gstart = c->seg + SEG_GSTART * cap, *memo = c->seg + SEG_MEMO * cap;
    uint32_t *todo = c->seg + SEG_TODO * cap, *attach = c->seg + SEG_ATTACH * cap;
    uint32_t *bad = c->seg + SEG_BAD * cap, *gbad = c->seg + SEG_GBAD * cap;
    uint32_t n_anch = 0, n_groups = 0, n_todo = 0;
    uint32_t pending = 0; /* the first position after the last anchor */
    c->order_only = true;
    int rc = 0;
    for (uint32_t k = 0; k < m && rc == 0; k++) {
        uint32_t l = r[k];
        bool anchor = (c->tenant[l] & TENANT_ANCHOR) != 0;
        uint32_t own = NO_INDEX; /* l's group, when its anchors are all proven before l */
        if (anchor) {
            if (n_anch == 0 || !pair_proven(c, r[apos[n_anch - 1]], l)) {
                /* a new group: the earlier ones are yet to be proven before it */
                n_todo = 0;
                for (uint32_t g = 0; g < n_groups; g++)
                    todo[n_todo++] = g;
                gstart[n_groups] = n_anch;
                gbad[n_groups] = NO_INDEX;
                memo[n_groups] = 0;
                n_groups++;
            }
            own = n_groups - 1;
            apos[n_anch] = k;
            group[n_anch] = own;
            /* the non-anchors since the previous anchor attach to this one */
            for (uint32_t q = pending; q < k && rc == 0; q++) {
                attach[q] = n_anch;
                if (!pair_proven(c, r[q], l)) {
                    bad[q] = gbad[own];
                    gbad[own] = q;
                    rc = ask_pair(c, seg_start, r[q], l);
                }
            }
            n_anch++;
            pending = k + 1;
        } else {
            for (uint32_t q = pending; q < k && rc == 0; q++)
                rc = ask_pair(c, seg_start, r[q], l);
            if (n_anch > 0 && pair_proven(c, r[apos[n_anch - 1]], l))
                own = group[n_anch - 1];
        }
        if (own == NO_INDEX) {
            /* a non-anchor not proven after the anchor before it: every group directly */
            for (uint32_t g = 0; g < n_groups && rc == 0; g++)
                rc = settle_group(c, seg_start, r, l, g, n_groups, n_anch, false);
            continue;
        }
        /* l's own group is proven through its anchors, but for its bad non-anchors (those
         * just attached to l were asked above) */
        for (uint32_t q = gbad[own]; q != NO_INDEX && rc == 0; q = bad[q])
            if (!anchor || attach[q] + 1 != n_anch)
                rc = ask_pair(c, seg_start, r[q], l);
        /* the earlier groups proven before l's group: only their bad non-anchors */
        for (uint32_t g = 0; g < own && rc == 0; g++)
            if (memo[g] == own + 1)
                rc = settle_group(c, seg_start, r, l, g, n_groups, n_anch, true);
        /* the others: one question each, remembered when l is an anchor (it then proves
         * the group before every later tenant proven after l) */
        for (uint32_t i = 0; i < n_todo && rc == 0;) {
            uint32_t g = todo[i];
            bool through = pair_proven(c, r[apos[gstart[g + 1] - 1]], l);
            rc = settle_group(c, seg_start, r, l, g, n_groups, n_anch, through);
            if (through && anchor) {
                memo[g] = own + 1;
                todo[i] = todo[--n_todo];
            } else {
                i++;
            }
        }
    }
    c->order_only = false;
    return rc;
}

static uint32_t sweep_done(void *ctx, uint32_t root, uint32_t chain)
{
    return order_done(&((checker *)ctx)->oc, root, chain);
}

static uint32_t sweep_bound(void *ctx, uint32_t root, uint32_t chain)
{
    checker *c = ctx;
    uint32_t lf = first_access(c, root);
    return lf == NO_INDEX ? UINT32_MAX : order_clock(&c->oc, lf, chain);
}

/* Reuse order. With one path and clocks, one sweep per chain proves at once, for every
 * root, that every earlier tenant of its bytes is done before its first access (the largest
 * done counter over its bytes against its clock); only the byte segments of the roots it
 * cannot prove are then judged along their tenant chains (check_segment()), which finds the
 * exact pairs. Without clocks, or with branches, every segment is. The segments are the
 * elementary byte ranges, so a root is listed in every segment it covers: a large tensor
 * of a fragmented arena in thousands, which the sweep spares. */
static int check_reuse_order(checker *c)
{
    const tlsan_plan *p = c->p;
    if (p->n_ifs == 0 && order_clocks_total(&c->oc)) {
        c->unproven = calloc(p->n_tensors ? p->n_tensors : 1, 1);
        if (!c->unproven ||
            overlap_max_sweep(p, &c->ix, c->oc.width, sweep_done, sweep_bound, c, c->unproven) != 0)
            return -1;
        bool any = false;
        for (size_t t = 0; t < p->n_tensors && !any; t++)
            any = c->unproven[t] != 0;
        if (!any)
            return 0;
        c->done = malloc((c->oc.width ? c->oc.width : 1) * sizeof *c->done);
        if (!c->done)
            return -1;
    }
    return overlap_segments(p, &c->ix, check_segment, c);
}

/* ---- driver ---- */

static void checker_free(checker *c)
{
    access_index_free(&c->ix);
    order_free(&c->oc);
    if_set_free(&c->set);
    free(c->ps.arm);
    free(c->decls);
    free(c->path_buf);
    free(c->tenant);
    free(c->seg);
    free(c->unproven);
    free(c->done);
    free(c->seg_max);
    view_access_free(&c->views);
}

/* Checks one plan into report r as plan `plan_index`. 0, or -1 when out of memory. */
static int check_one(const tlsan_plan *p, const tlsan_check_options *opt, tlsan_report *r,
                     int64_t plan_index)
{
    checker c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.r = r;
    c.plan_index = plan_index;
    c.max_paths = opt && opt->max_paths ? opt->max_paths : DEFAULT_MAX_PATHS;
    /* with a total order (one stream) or dataflow's per-root order every earlier write is
     * ordered before a read */
    c.order_reads = opt && opt->order_reads && p->schedule == TLSAN_SCHEDULE_SEQUENTIAL;
    c.stats = &r->stats[plan_index < 0 ? 0 : plan_index];
    c.ps.plan = p;
    int rc = -1;
    c.ps.arm = calloc(p->n_ifs ? p->n_ifs : 1, sizeof *c.ps.arm);
    c.path_buf = calloc(p->n_ifs ? p->n_ifs : 1, sizeof *c.path_buf);
    if (!c.ps.arm || !c.path_buf || if_set_init(&c.set, p->n_ifs) != 0 ||
        access_index_build(&c.ix, p) != 0 || order_init(&c.oc, p, &c.ix) != 0 ||
        collect_decls(&c) != 0)
        goto out;
    c.ps.ix = &c.ix;
    /* A root with no conditional access has one lifetime on every path: make its hull that
     * lifetime (the tenant chains rely on it being exact), and with no branches at all
     * every hull becomes exact, so the sweep offers only pairs that truly collide. */
    c.tenant = malloc(p->n_tensors ? p->n_tensors : 1);
    if (!c.tenant)
        goto out;
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        c.tenant[t] = TENANT_FIXED;
        for (uint32_t a = c.ix.start[t]; a < c.ix.start[t + 1]; a++)
            c.tenant[t] &= (uint8_t)((c.ix.rw[a] & ACC_COND) ? ~TENANT_FIXED : 0xff);
        for (uint32_t a = c.ix.start[t]; a < c.ix.start[t + 1]; a++)
            if (!(c.ix.rw[a] & ACC_COND))
                c.tenant[t] |= TENANT_ANCHOR;
        if ((c.tenant[t] & TENANT_FIXED) && p->tensors[t].root == t)
            c.ix.hull[t] = root_life(&c.ix, p, t, &c.ps);
    }
    if (check_layout(&c) != 0)
        goto out;
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        if (p->tensors[t].root == t && check_read_before_write(&c, t) != 0)
            goto out;
        if ((p->tensors[t].flags & TREC_HAS_LIFETIME) && check_declared_lifetime(&c, t) != 0)
            goto out;
    }
    /* Conflicts from the sweep over steps. Reuse order: nothing to ask when the order is
     * total; per byte segment along tenant chains when there is one path; else for every
     * pair that shares bytes, path by path. */
    int prc;
    prc = overlap_live_pairs(p, &c.ix, check_pair, &c);
    if (prc == 0 && !c.oc.total)
        prc = check_reuse_order(&c);
    if (prc != 0)
        goto out;
    if (stats_compute(p, &c.ix, &c.ps, &c.set, c.stats) != 0)
        goto out;
    rc = 0;
out:
    checker_free(&c);
    return rc;
}

tlsan_status tlsan_check(const tlsan_plan *plan, const tlsan_check_options *options,
                         tlsan_report **out)
{
    if (!plan || !out || !plan->finalized)
        return TLSAN_ERR_ARG;
    *out = NULL;
    const tlsan_plan *plans[1] = {plan};
    tlsan_report *r = report_new(plans, 1, false);
    if (!r)
        return TLSAN_ERR_NOMEM;
    if (check_one(plan, options, r, -1) != 0 || report_sort(r) != 0 ||
        (options && options->group_repeats && report_group_repeats(r) != 0)) {
        tlsan_report_free(r);
        return TLSAN_ERR_NOMEM;
    }
    *out = r;
    return TLSAN_OK;
}

tlsan_status tlsan_check_cache(const tlsan_cache *cache, const tlsan_check_options *options,
                               tlsan_report **out)
{
    if (!cache || !out)
        return TLSAN_ERR_ARG;
    *out = NULL;
    size_t n = tlsan_cache_n_plans(cache);
    const tlsan_plan **plans = malloc((n ? n : 1) * sizeof *plans);
    if (!plans)
        return TLSAN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        plans[i] = tlsan_cache_plan(cache, i);
    tlsan_report *r = report_new(plans, n, true);
    free(plans);
    if (!r)
        return TLSAN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (check_one(r->plans[i], options, r, (int64_t)i) != 0)
            goto nomem;
    if (cache_collisions(cache, r) != 0 || report_sort(r) != 0 ||
        (options && options->group_repeats && report_group_repeats(r) != 0))
        goto nomem;
    *out = r;
    return TLSAN_OK;
nomem:
    tlsan_report_free(r);
    return TLSAN_ERR_NOMEM;
}
