/* brute: the reference checker of brute.h.
 *
 * Written from ../shared/plan-format.md alone (quoted as "spec:" below), over the finalized
 * plan model of src/check/plan.h. Everything is recomputed the slow, obvious way: every path is
 * enumerated, every tensor's accesses are found by walking view chains, every pair of roots
 * is compared, happens-before is a full transitive closure. Where the spec leaves room for
 * two readings, the comment marked "Reading:" says which one is taken. */
#include "support/brute.h"

#include "check/plan.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BRUTE_MAX_PATHS 4096
#define BRUTE_MAX_OPS   256

/* ---- the finding set ---- */

static int finding_cmp(const brute_finding *a, const brute_finding *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->n_tensors != b->n_tensors)
        return a->n_tensors < b->n_tensors ? -1 : 1;
    for (size_t i = 0; i < a->n_tensors; i++) {
        int c = strcmp(a->tensors[i], b->tensors[i]);
        if (c)
            return c;
    }
    return 0;
}

int brute_findings_add(brute_findings *set, tlsan_kind kind, const char *t0, const char *t1)
{
    brute_finding f = {kind, 0, {NULL, NULL}};
    if (t0)
        f.tensors[f.n_tensors++] = t0;
    if (t1)
        f.tensors[f.n_tensors++] = t1;
    if (f.n_tensors == 2 && strcmp(f.tensors[0], f.tensors[1]) > 0) {
        f.tensors[0] = t1;
        f.tensors[1] = t0;
    }
    size_t at = 0;
    while (at < set->n && finding_cmp(&set->v[at], &f) < 0)
        at++;
    if (at < set->n && finding_cmp(&set->v[at], &f) == 0)
        return 1;
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 8;
        brute_finding *v = realloc(set->v, cap * sizeof *v);
        if (!v)
            return -1;
        set->v = v;
        set->cap = cap;
    }
    memmove(set->v + at + 1, set->v + at, (set->n - at) * sizeof *set->v);
    set->v[at] = f;
    set->n++;
    return 0;
}

void brute_findings_clear(brute_findings *set)
{
    free(set->v);
    set->v = NULL;
    set->n = set->cap = 0;
}

int brute_findings_equal(const brute_findings *a, const brute_findings *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (finding_cmp(&a->v[i], &b->v[i]) != 0)
            return 0;
    return 1;
}

const char *brute_kind_name(tlsan_kind kind)
{
    /* Own table from the header's X-macro: the test support must not depend on the
     * library's tlsan_kind_name(), which is part of what is being tested. */
    static const char *const names[] = {
#define BRUTE_X_NAME(e, name, sev, finder, desc) name,
        TLSAN_FINDING_KINDS(BRUTE_X_NAME)
#undef BRUTE_X_NAME
    };
    return (unsigned)kind < TLSAN_KIND_COUNT_ ? names[kind] : "unknown";
}

tlsan_kind brute_kind_from_name(const char *name)
{
    for (int k = 0; k < TLSAN_KIND_COUNT_; k++)
        if (strcmp(brute_kind_name((tlsan_kind)k), name) == 0)
            return (tlsan_kind)k;
    return TLSAN_KIND_COUNT_;
}

void brute_findings_print(const brute_findings *set, FILE *out)
{
    for (size_t i = 0; i < set->n; i++) {
        fprintf(out, "%s", brute_kind_name(set->v[i].kind));
        for (size_t k = 0; k < set->v[i].n_tensors; k++)
            fprintf(out, " %s", set->v[i].tensors[k]);
        fputc('\n', out);
    }
}

/* ---- plan queries, all by walking the model directly ---- */

typedef struct brute {
    const tlsan_plan *p;
    int64_t n;     /* number of ops = the output step */
    uint32_t *arm; /* the path: arm index per if */
    bool *runs;    /* op index -> runs on the path */
    brute_findings *out;
} brute;

static const char *tname(const brute *b, uint32_t t)
{
    return plan_str(b->p, b->p->tensors[t].name);
}

/* spec: "follow `view_of` to a tensor that has an `arena`". */
static uint32_t root_of(const brute *b, uint32_t t)
{
    while (b->p->tensors[t].view_of != NO_INDEX)
        t = b->p->tensors[t].view_of;
    return t;
}

static bool is_root(const brute *b, uint32_t t)
{
    return b->p->tensors[t].view_of == NO_INDEX;
}

/* True when u is t or a view below t (t is on u's view chain). A tensor's accesses are its
 * own and those of the views below it (spec: "its views' included", "those of the views
 * below it"). */
static bool is_under(const brute *b, uint32_t u, uint32_t t)
{
    for (;;) {
        if (u == t)
            return true;
        if (b->p->tensors[u].view_of == NO_INDEX)
            return false;
        u = b->p->tensors[u].view_of;
    }
}

/* spec: "a view's: its root's offset plus the view offsets down the chain". Saturating, as
 * offsets may each be up to 2^63-1. */
static uint64_t abs_offset(const brute *b, uint32_t t)
{
    uint64_t off = 0;
    for (;;) {
        uint64_t o = b->p->tensors[t].offset_bytes;
        off = off > UINT64_MAX - o ? UINT64_MAX : off + o;
        if (b->p->tensors[t].view_of == NO_INDEX)
            return off;
        t = b->p->tensors[t].view_of;
    }
}

/* Flags of t and every view below it. spec: "constant: both of the above"; "a flag on a view
 * holds its root too". A view's flags do not include its base's (brief: "for a view, not
 * its base's"). */
static unsigned flags_under(const brute *b, uint32_t t)
{
    unsigned fl = 0;
    for (size_t u = 0; u < b->p->n_tensors; u++)
        if (is_under(b, (uint32_t)u, t)) {
            unsigned f = b->p->tensors[u].flags;
            if (f & TLSAN_TENSOR_CONSTANT)
                f |= TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT;
            fl |= f & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT);
        }
    return fl;
}

static bool list_has_under(const brute *b, uint32_t start, uint32_t count, uint32_t t)
{
    for (uint32_t i = 0; i < count; i++)
        if (is_under(b, b->p->id_pool.v[start + i], t))
            return true;
    return false;
}

static bool op_reads(const brute *b, size_t k, uint32_t t)
{
    const op_rec *o = &b->p->ops[k];
    return list_has_under(b, o->reads_start, o->n_reads, t);
}

static bool op_writes(const brute *b, size_t k, uint32_t t)
{
    const op_rec *o = &b->p->ops[k];
    return list_has_under(b, o->writes_start, o->n_writes, t);
}

static bool op_accesses(const brute *b, size_t k, uint32_t t)
{
    return op_reads(b, k, t) || op_writes(b, k, t);
}

/* The op names tensor t itself (not a view of it) in the given list. */
static bool list_names(const brute *b, uint32_t start, uint32_t count, uint32_t t)
{
    for (uint32_t i = 0; i < count; i++)
        if (b->p->id_pool.v[start + i] == t)
            return true;
    return false;
}

/* spec: "the op runs only where all of them hold"; "ops outside any branch run on every
 * path". */
static bool op_on_path(const brute *b, size_t k)
{
    const op_extra *o = op_x(b->p, &b->p->ops[k]);
    for (uint32_t c = 0; c < o->n_cond; c++) {
        uint32_t f = b->p->id_pool.v[o->cond_start + 2 * c];
        uint32_t a = b->p->id_pool.v[o->cond_start + 2 * c + 1];
        if (b->arm[f] != a)
            return false;
    }
    return true;
}

/* ---- lifetimes ---- */

typedef struct life {
    bool live; /* accessed at all on the path */
    int64_t first, last;
} life;

static void touch(life *l, int64_t step)
{
    if (!l->live) {
        l->live = true;
        l->first = l->last = step;
        return;
    }
    if (step < l->first)
        l->first = step;
    if (step > l->last)
        l->last = step;
}

/* The lifetime on the current path of tensor t (a root for conflicts, any tensor for
 * lifetime-too-short):
 * spec: "a root's lifetime is the closed interval from its first access to its last access
 * (reads and writes, its views' included, with the input/output steps above)";
 * "Inputs are written at step -1, outputs read at step n, constants both";
 * spec (loops): "a root accessed inside it on a path is live on all of s..e when it is
 * accessed before the loop too (an input counts: step -1), or when its first access in the
 * body is a read (carried to the next iteration)".
 * Reading: "its first access in the body is a read" holds when the first op of the body
 * (on the path) that accesses it reads it, even if that op also writes it (the spec says so
 * for read-before-write: "an op that reads and writes it at its first access counts as
 * reading first"; ops read their inputs before writing their outputs).
 * Reading: "accessed before the loop" looks at the real accesses (and the input step), not
 * at another loop's extension. */
static life lifetime_on_path(const brute *b, uint32_t t)
{
    life l = {false, 0, 0};
    unsigned fl = flags_under(b, t);
    if (fl & TLSAN_TENSOR_INPUT)
        touch(&l, -1);
    if (fl & TLSAN_TENSOR_OUTPUT)
        touch(&l, b->n);
    for (size_t k = 0; k < b->p->n_ops; k++)
        if (b->runs[k] && op_accesses(b, k, t))
            touch(&l, (int64_t)k);
    for (size_t L = 0; L < b->p->n_loops; L++) {
        uint32_t s = b->p->loops[L].first_op, e = b->p->loops[L].last_op;
        size_t first_in_body = SIZE_MAX;
        for (size_t k = s; k <= e; k++)
            if (b->runs[k] && op_accesses(b, k, t)) {
                first_in_body = k;
                break;
            }
        if (first_in_body == SIZE_MAX)
            continue;
        bool before = (fl & TLSAN_TENSOR_INPUT) != 0;
        for (size_t k = 0; k < s; k++)
            if (b->runs[k] && op_accesses(b, k, t))
                before = true;
        bool carried = op_reads(b, first_in_body, t);
        if (before || carried) {
            touch(&l, s);
            touch(&l, e);
        }
    }
    return l;
}

/* The raw access steps of t on the path (no loop extension): the input step, the ops, the
 * output step. Returns how many were written to steps (at most n + 2). */
static size_t accesses_on_path(const brute *b, uint32_t t, int64_t *steps)
{
    size_t m = 0;
    unsigned fl = flags_under(b, t);
    if (fl & TLSAN_TENSOR_INPUT)
        steps[m++] = -1;
    for (size_t k = 0; k < b->p->n_ops; k++)
        if (b->runs[k] && op_accesses(b, k, t))
            steps[m++] = (int64_t)k;
    if (fl & TLSAN_TENSOR_OUTPUT)
        steps[m++] = b->n;
    return m;
}

/* ---- happens-before ---- */

static void edge(const brute *b, bool *hb, size_t i, size_t j)
{
    hb[i * b->p->n_ops + j] = true;
}

/* The full happens-before relation among the ops of the current path, transitively closed
 * (hb[i*n+j]: op i happens before op j).
 * spec: "Under "sequential" with one stream, ops are totally ordered. With several streams,
 * happens-before is: program order within a stream, record→wait of the same event, `sync`,
 * and `after`. Under "dataflow" the executor may run ops in any order that respects, per
 * storage root, write→later read/write and read→later write, plus `after` and `sync`;
 * streams and events are ignored there". "Only ops on the path count; a `wait` pairs with
 * the latest `record` of its event listed before it (none: no edge)".
 * With one stream, program order within it already orders every pair, so the
 * sequential one-stream case needs no special code.
 * Reading: `sync` ("joins every stream") orders every op on the path listed before it
 * before it, and it before every op listed after it.
 * Reading: "the latest record listed before it" counts records on the path only ("Only ops
 * on the path count"). */
static void happens_before(const brute *b, bool *hb)
{
    const tlsan_plan *p = b->p;
    size_t n = p->n_ops;
    memset(hb, 0, n * n * sizeof *hb);
    for (size_t j = 0; j < n; j++) {
        if (!b->runs[j])
            continue;
        const op_rec *oj = &p->ops[j];
        for (size_t i = 0; i < j; i++) {
            if (!b->runs[i])
                continue;
            const op_rec *oi = &p->ops[i];
            if (oi->sync == TLSAN_SYNC_ALL || oj->sync == TLSAN_SYNC_ALL)
                edge(b, hb, i, j);
            if (p->schedule == TLSAN_SCHEDULE_SEQUENTIAL) {
                if (p->op_stream[i] == p->op_stream[j])
                    edge(b, hb, i, j);
            } else {
                for (size_t r = 0; r < p->n_tensors; r++) {
                    if (!is_root(b, (uint32_t)r))
                        continue;
                    bool wi = op_writes(b, i, (uint32_t)r), ri = op_reads(b, i, (uint32_t)r);
                    bool wj = op_writes(b, j, (uint32_t)r), rj = op_reads(b, j, (uint32_t)r);
                    if ((wi && (rj || wj)) || (ri && wj))
                        edge(b, hb, i, j);
                }
            }
        }
        for (uint32_t a = 0; a < op_x(p, oj)->n_after; a++) {
            uint32_t i = p->id_pool.v[op_x(p, oj)->after_start + a];
            if (b->runs[i])
                edge(b, hb, i, j);
        }
        if (p->schedule == TLSAN_SCHEDULE_SEQUENTIAL && oj->sync == TLSAN_SYNC_WAIT) {
            for (size_t i = j; i-- > 0;) {
                const op_rec *oi = &p->ops[i];
                if (b->runs[i] && oi->sync == TLSAN_SYNC_RECORD &&
                    strcmp(plan_str(p, oi->event), plan_str(p, oj->event)) == 0) {
                    edge(b, hb, i, j);
                    break;
                }
            }
        }
    }
    /* Floyd-Warshall transitive closure. */
    for (size_t m = 0; m < n; m++)
        for (size_t i = 0; i < n; i++)
            if (hb[i * n + m])
                for (size_t j = 0; j < n; j++)
                    if (hb[m * n + j])
                        hb[i * n + j] = true;
}

/* Step i happens before step j (steps -1 and n are the host before and after every op). */
static bool hb_step(const brute *b, const bool *hb, int64_t i, int64_t j)
{
    if (i == -1 || j == b->n)
        return true;
    if (i == b->n || j == -1)
        return false;
    return hb[(size_t)i * b->p->n_ops + (size_t)j];
}

/* ---- pairs of roots ---- */

/* spec: "their byte ranges intersect (an empty range intersects nothing; only roots' ranges
 * count ...)" and "in the same arena". */
static bool share_bytes(const brute *b, uint32_t x, uint32_t y)
{
    const tensor_rec *tx = &b->p->tensors[x], *ty = &b->p->tensors[y];
    if (tx->arena != ty->arena || tx->bytes == 0 || ty->bytes == 0)
        return false;
    /* offsets and bytes are at most 2^63-1, so the sums fit */
    return tx->offset_bytes < ty->offset_bytes + ty->bytes &&
           ty->offset_bytes < tx->offset_bytes + tx->bytes;
}

/* spec (table): "some op declares them an in-place pair" — through their storage roots, in
 * either order, whatever path the op is on. */
static bool declared_pair(const brute *b, uint32_t x, uint32_t y)
{
    for (size_t k = 0; k < b->p->n_ops; k++) {
        const op_extra *o = op_x(b->p, &b->p->ops[k]);
        for (uint32_t q = 0; q < o->n_inplace; q++) {
            uint32_t ro = root_of(b, b->p->id_pool.v[o->inplace_start + 2 * q]);
            uint32_t ri = root_of(b, b->p->id_pool.v[o->inplace_start + 2 * q + 1]);
            if ((ro == x && ri == y) || (ro == y && ri == x))
                return true;
        }
    }
    return false;
}

/* spec: "Exception, in-place: op `k` declares `[out, in]` (the pair is matched to the
 * conflicting roots through their storage roots), lists `in` in its `reads` and `out` in its
 * `writes`, `out` and `in` cover the same bytes, `k` reads no byte of `out` through a tensor
 * whose bytes differ from `in`'s (...), and on the path at hand `k` runs and the two
 * roots' lifetimes meet only at step `k` (the input's root is last accessed at `k`, the
 * output's first accessed at `k`)."
 * Reading: "lists `in` in its `reads`" means the tensor `in` itself (a view of it or its base
 * does not count); "cover the same bytes" compares the two declared tensors' absolute byte
 * ranges [offset, offset + bytes); "last/first accessed" are the ends of the lifetimes
 * (with the input/output steps and the loop rule). */
/* spec: "`k` reads no byte of `out` through a tensor whose bytes differ from `in`'s".
 * Reading: any tensor in k's `reads` (a view or a root) in out's arena whose absolute range
 * [offset, offset + bytes) intersects out's and is not exactly in's range. */
static bool reads_out_elsewhere(const brute *b, const op_rec *o, uint32_t out, uint32_t in)
{
    const tlsan_plan *p = b->p;
    uint64_t os = abs_offset(b, out), oe = os + p->tensors[out].bytes;
    uint64_t is = abs_offset(b, in), ie = is + p->tensors[in].bytes;
    uint32_t arena = p->tensors[root_of(b, out)].arena;
    if (p->tensors[out].bytes == 0)
        return false;
    for (uint32_t i = 0; i < o->n_reads; i++) {
        uint32_t r = p->id_pool.v[o->reads_start + i];
        if (p->tensors[root_of(b, r)].arena != arena || p->tensors[r].bytes == 0)
            continue;
        uint64_t rs = abs_offset(b, r), re = rs + p->tensors[r].bytes;
        if (rs < oe && os < re && (rs != is || re != ie))
            return true;
    }
    return false;
}

static bool inplace_covers(const brute *b, uint32_t x, uint32_t y, const life *lf)
{
    const tlsan_plan *p = b->p;
    for (size_t k = 0; k < p->n_ops; k++) {
        if (!b->runs[k])
            continue;
        const op_rec *o = &p->ops[k];
        const op_extra *ox = op_x(p, o);
        for (uint32_t q = 0; q < ox->n_inplace; q++) {
            uint32_t out = p->id_pool.v[ox->inplace_start + 2 * q];
            uint32_t in = p->id_pool.v[ox->inplace_start + 2 * q + 1];
            uint32_t ro = root_of(b, out), ri = root_of(b, in);
            if (!((ro == x && ri == y) || (ro == y && ri == x)))
                continue;
            if (!list_names(b, o->reads_start, o->n_reads, in) ||
                !list_names(b, o->writes_start, o->n_writes, out))
                continue;
            if (abs_offset(b, out) != abs_offset(b, in) ||
                p->tensors[out].bytes != p->tensors[in].bytes)
                continue;
            if (reads_out_elsewhere(b, o, out, in))
                continue;
            if (lf[ri].last == (int64_t)k && lf[ro].first == (int64_t)k)
                return true;
        }
    }
    return false;
}

/* ---- layout findings (no path involved) ---- */

/* Element sizes in bits, from the spec's list ("f64 i64 u64 8, f32 i32 u32 4, f16 bf16 i16
 * u16 2, f8 i8 u8 bool 1, i4 u4 ½"), looked up by the dtype's name. */
static uint64_t element_bits(const char *name)
{
    static const struct {
        const char *name;
        uint64_t bits;
    } table[] = {{"f64", 64}, {"i64", 64},  {"u64", 64}, {"f32", 32}, {"i32", 32}, {"u32", 32},
                 {"f16", 16}, {"bf16", 16}, {"i16", 16}, {"u16", 16}, {"f8", 8},   {"i8", 8},
                 {"u8", 8},   {"bool", 8},  {"i4", 4},   {"u4", 4}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].bits;
    return 0;
}

/* spec: "`bytes` must hold it"; "`[]` is one element"; "½ rounded up over the whole
 * tensor". Returns false when the need exceeds 2^64-1 bytes (then nothing holds it). */
static bool needed_bytes(const brute *b, uint32_t t, uint64_t *need)
{
    const tensor_rec *r = &b->p->tensors[t];
    uint64_t bits = element_bits(tlsan_dtype_name((tlsan_dtype)r->dtype));
    for (uint32_t i = 0; i < plan_shape_rank(b->p, r); i++)
        if (plan_shape_dim(b->p, r, i) == 0) {
            *need = 0;
            return true;
        }
    uint64_t total_bits = bits;
    for (uint32_t i = 0; i < plan_shape_rank(b->p, r); i++) {
        uint64_t d = plan_shape_dim(b->p, r, i);
        if (total_bits > UINT64_MAX / d)
            return false;
        total_bits *= d;
    }
    *need = total_bits / 8 + (total_bits % 8 != 0);
    return true;
}

static int layout_findings(const brute *b)
{
    const tlsan_plan *p = b->p;
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const tensor_rec *r = &p->tensors[t];
        const char *name = tname(b, t);
        const arena_rec *arena = &p->arenas[p->tensors[root_of(b, t)].arena];
        /* spec: "a root past its arena's `bytes`, or a view past its base's `bytes`";
         * "its bytes start `view_offset` bytes after its base's start and must lie inside its
         * base". Reading: past = offset + bytes > the container's bytes (so an empty tensor
         * exactly at the end is inside). */
        uint64_t limit = is_root(b, t) ? arena->bytes : p->tensors[r->view_of].bytes;
        if (r->offset_bytes > limit || r->bytes > limit - r->offset_bytes)
            if (brute_findings_add(b->out, TLSAN_KIND_OUT_OF_BOUNDS, name, NULL) < 0)
                return -1;
        /* spec: "a root's offset not a multiple of its arena's alignment, or a tensor's not of
         * its own `alignment`" (a tensor's offset: "its offset within the arena"). */
        if (is_root(b, t) && r->offset_bytes % arena->alignment_bytes != 0)
            if (brute_findings_add(b->out, TLSAN_KIND_MISALIGNED, name, NULL) < 0)
                return -1;
        if ((r->flags & TREC_HAS_ALIGNMENT) &&
            abs_offset(b, t) % tensor_x(p, r)->alignment_bytes != 0)
            if (brute_findings_add(b->out, TLSAN_KIND_MISALIGNED, name, NULL) < 0)
                return -1;
        /* spec: "a tensor's `memory` differs from its arena's"; a view's arena is its
         * root's. */
        if (tensor_x(p, r)->memory != STRTAB_NONE &&
            strcmp(plan_str(p, tensor_x(p, r)->memory), plan_str(p, arena->memory)) != 0)
            if (brute_findings_add(b->out, TLSAN_KIND_MEMORY_KIND_MISMATCH, name, NULL) < 0)
                return -1;
        /* spec: "`bytes` is smaller than `shape` and `dtype` need". */
        if (r->dtype != TLSAN_DTYPE_NONE) {
            uint64_t need = 0;
            if (!needed_bytes(b, t, &need) || r->bytes < need)
                if (brute_findings_add(b->out, TLSAN_KIND_SIZE_MISMATCH, name, NULL) < 0)
                    return -1;
        }
    }
    return 0;
}

/* ---- the check ---- */

int brute_check(const tlsan_plan *plan, brute_findings *out)
{
    return brute_check_with(plan, false, out);
}

int brute_check_with(const tlsan_plan *plan, bool order_reads, brute_findings *out)
{
    int rc = -1;
    brute b = {plan, (int64_t)plan->n_ops, NULL, NULL, out};
    size_t nt = plan->n_tensors, n = plan->n_ops;
    life *lf = NULL, *derived = NULL;
    bool *conflict = NULL, *hb = NULL;
    int64_t *steps = NULL;

    if (!plan->finalized || n > BRUTE_MAX_OPS)
        return -1;
    /* spec: "A path fixes one arm for every `if` (an `if` with one named arm has an implicit
     * empty second arm)" — finalize gives such an if n_arms = 2. */
    size_t n_paths = 1;
    for (size_t f = 0; f < plan->n_ifs; f++) {
        n_paths *= plan->ifs[f].n_arms;
        if (n_paths > BRUTE_MAX_PATHS)
            return -1;
    }
    b.arm = calloc(plan->n_ifs ? plan->n_ifs : 1, sizeof *b.arm);
    b.runs = calloc(n ? n : 1, sizeof *b.runs);
    lf = calloc(nt ? nt : 1, sizeof *lf);
    derived = calloc(nt ? nt : 1, sizeof *derived);
    conflict = calloc(nt * nt + 1, sizeof *conflict);
    hb = calloc(n * n + 1, sizeof *hb);
    steps = calloc(n + 2, sizeof *steps);
    if (!b.arm || !b.runs || !lf || !derived || !conflict || !hb || !steps)
        goto out;

    if (layout_findings(&b) != 0)
        goto out;

    for (size_t path = 0; path < n_paths; path++) {
        /* Odometer: path number -> one arm per if. */
        size_t rest = path;
        for (size_t f = 0; f < plan->n_ifs; f++) {
            b.arm[f] = (uint32_t)(rest % plan->ifs[f].n_arms);
            rest /= plan->ifs[f].n_arms;
        }
        for (size_t k = 0; k < n; k++)
            b.runs[k] = op_on_path(&b, k);

        /* Lifetimes of every tensor on this path: roots for the pair rules, every tensor with
         * a declared lifetime for lifetime-too-short (spec: "the union over paths of its own
         * accesses and flags and those of the views below it, with the input/output steps and
         * the loop rule above"). */
        for (uint32_t t = 0; t < nt; t++) {
            lf[t] = lifetime_on_path(&b, t);
            if (lf[t].live) {
                touch(&derived[t], lf[t].first);
                touch(&derived[t], lf[t].last);
            }
        }

        /* spec: "An op reading a non-input root before any write to it on that path (an op
         * that reads and writes it at its first access counts as reading first) is
         * `read-before-write`, naming the root." */
        for (uint32_t r = 0; r < nt; r++) {
            if (!is_root(&b, r) || (flags_under(&b, r) & TLSAN_TENSOR_INPUT))
                continue;
            for (size_t k = 0; k < n; k++) {
                if (!b.runs[k] || !op_accesses(&b, k, r))
                    continue;
                if (op_reads(&b, k, r) &&
                    brute_findings_add(out, TLSAN_KIND_READ_BEFORE_WRITE, tname(&b, r), NULL) < 0)
                    goto out;
                break;
            }
        }

        /* tlsan_check_options.order_reads: "a read of a root that an earlier op writes, but
         * that no earlier write of the root happens before". */
        bool hb_ready = false;
        for (uint32_t r = 0; order_reads && r < nt; r++) {
            if (!is_root(&b, r) || (flags_under(&b, r) & TLSAN_TENSOR_INPUT))
                continue;
            for (size_t k = 0; k < n; k++) {
                if (!b.runs[k] || !op_reads(&b, k, r))
                    continue;
                bool written = false, ordered = false;
                for (size_t j = 0; j < k; j++) {
                    if (!b.runs[j] || !op_writes(&b, j, r))
                        continue;
                    if (!hb_ready) {
                        happens_before(&b, hb);
                        hb_ready = true;
                    }
                    written = true;
                    ordered = ordered || hb[j * n + k];
                }
                if (written && !ordered) {
                    if (brute_findings_add(out, TLSAN_KIND_READ_BEFORE_WRITE, tname(&b, r), NULL) <
                        0)
                        goto out;
                    break;
                }
            }
        }

        for (uint32_t x = 0; x < nt; x++) {
            if (!is_root(&b, x))
                continue;
            for (uint32_t y = x + 1; y < nt; y++) {
                if (!is_root(&b, y) || !share_bytes(&b, x, y))
                    continue;
                if (!lf[x].live || !lf[y].live)
                    continue; /* nothing to collide with or to order on this path */
                if (lf[x].first <= lf[y].last && lf[y].first <= lf[x].last) {
                    /* spec: "on some path, their lifetimes intersect" -> conflict, unless the
                     * in-place exception covers the pair on this path. */
                    if (!inplace_covers(&b, x, y, lf))
                        conflict[x * nt + y] = true;
                    continue;
                }
                /* spec: "On a path where two roots that share bytes have disjoint lifetimes,
                 * they must be ordered: every access of the earlier one must happen before
                 * the first access of the later one".
                 * Reading: "the earlier one" is the one whose lifetime ends first; its
                 * accesses are the raw ones (input step, ops, output step), and the later
                 * one's first access is its raw first access (not a loop extension). */
                uint32_t early = lf[x].last < lf[y].first ? x : y;
                uint32_t late = early == x ? y : x;
                if (!hb_ready) {
                    happens_before(&b, hb);
                    hb_ready = true;
                }
                size_t m_late = accesses_on_path(&b, late, steps);
                int64_t first_late = steps[0];
                (void)m_late;
                size_t m = accesses_on_path(&b, early, steps);
                bool ordered = true;
                for (size_t i = 0; i < m; i++)
                    if (!hb_step(&b, hb, steps[i], first_late))
                        ordered = false;
                if (!ordered && brute_findings_add(out, TLSAN_KIND_UNORDERED_REUSE, tname(&b, x),
                                                   tname(&b, y)) < 0)
                    goto out;
            }
        }
    }

    /* spec (table): live-overlap when "two roots conflict on some path, and no op declares
     * them an in-place pair"; bad-inplace when "two roots conflict on some path where the
     * in-place exception does not cover them, and some op declares them an in-place pair". */
    for (uint32_t x = 0; x < nt; x++)
        for (uint32_t y = x + 1; y < nt; y++) {
            if (!conflict[x * nt + y])
                continue;
            tlsan_kind kind =
                declared_pair(&b, x, y) ? TLSAN_KIND_BAD_INPLACE : TLSAN_KIND_LIVE_OVERLAP;
            if (brute_findings_add(out, kind, tname(&b, x), tname(&b, y)) < 0)
                goto out;
        }

    /* spec: "a declared `lifetime` does not contain the lifetime derived from the ops".
     * Reading: a tensor never accessed on any path has an empty derived lifetime, which every
     * declared lifetime contains. */
    for (uint32_t t = 0; t < nt; t++) {
        const tensor_rec *r = &plan->tensors[t];
        if (!(r->flags & TREC_HAS_LIFETIME) || !derived[t].live)
            continue;
        if (tensor_x(plan, r)->lifetime[0] > derived[t].first ||
            tensor_x(plan, r)->lifetime[1] < derived[t].last)
            if (brute_findings_add(out, TLSAN_KIND_LIFETIME_TOO_SHORT, tname(&b, t), NULL) < 0)
                goto out;
    }
    rc = 0;
out:
    free(b.arm);
    free(b.runs);
    free(lf);
    free(derived);
    free(conflict);
    free(hb);
    free(steps);
    return rc;
}

/* ---- dumping a plan (for failure messages; independent of the library's writer) ---- */

static void dump_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void dump_names(const tlsan_plan *p, FILE *out, const char *key, uint32_t start,
                       uint32_t count, bool tensors)
{
    fprintf(out, ", \"%s\": [", key);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t idx = p->id_pool.v[start + i];
        if (i)
            fputs(", ", out);
        dump_str(out, plan_str(p, tensors ? p->tensors[idx].name : p->ops[idx].name));
    }
    fputc(']', out);
}

void brute_plan_dump(const tlsan_plan *p, FILE *out)
{
    fprintf(out, "{\"tlsan_plan\": 1, \"schedule\": \"%s\",\n \"arenas\": [",
            p->schedule == TLSAN_SCHEDULE_DATAFLOW ? "dataflow" : "sequential");
    for (size_t a = 0; a < p->n_arenas; a++) {
        const arena_rec *r = &p->arenas[a];
        fprintf(out, "%s\n  {\"name\": ", a ? "," : "");
        dump_str(out, plan_str(p, r->name));
        fprintf(out, ", \"bytes\": %llu, \"alignment\": %llu, \"memory\": ",
                (unsigned long long)r->bytes, (unsigned long long)r->alignment_bytes);
        dump_str(out, plan_str(p, r->memory));
        fputc('}', out);
    }
    fputs("],\n \"tensors\": [", out);
    for (size_t t = 0; t < p->n_tensors; t++) {
        const tensor_rec *r = &p->tensors[t];
        fprintf(out, "%s\n  {\"name\": ", t ? "," : "");
        dump_str(out, plan_str(p, r->name));
        fprintf(out, ", \"bytes\": %llu", (unsigned long long)r->bytes);
        if (r->view_of == NO_INDEX) {
            fputs(", \"arena\": ", out);
            dump_str(out, plan_str(p, p->arenas[r->arena].name));
            fprintf(out, ", \"offset\": %llu", (unsigned long long)r->offset_bytes);
        } else {
            fputs(", \"view_of\": ", out);
            dump_str(out, plan_str(p, p->tensors[r->view_of].name));
            fprintf(out, ", \"view_offset\": %llu", (unsigned long long)r->offset_bytes);
        }
        if ((r->flags & TLSAN_TENSOR_INPUT) && (r->flags & TLSAN_TENSOR_OUTPUT))
            fputs(", \"constant\": true", out);
        else if (r->flags & TLSAN_TENSOR_INPUT)
            fputs(", \"input\": true", out);
        else if (r->flags & TLSAN_TENSOR_OUTPUT)
            fputs(", \"output\": true", out);
        if (r->flags & TREC_HAS_ALIGNMENT)
            fprintf(out, ", \"alignment\": %llu",
                    (unsigned long long)tensor_x(p, r)->alignment_bytes);
        if (tensor_x(p, r)->memory != STRTAB_NONE) {
            fputs(", \"memory\": ", out);
            dump_str(out, plan_str(p, tensor_x(p, r)->memory));
        }
        if (r->flags & TREC_HAS_LIFETIME)
            fprintf(out, ", \"lifetime\": [%lld, %lld]", (long long)tensor_x(p, r)->lifetime[0],
                    (long long)tensor_x(p, r)->lifetime[1]);
        if (r->dtype != TLSAN_DTYPE_NONE) {
            fprintf(out, ", \"dtype\": \"%s\", \"shape\": [", tlsan_dtype_name(r->dtype));
            for (uint32_t i = 0; i < plan_shape_rank(p, r); i++)
                fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)plan_shape_dim(p, r, i));
            fputc(']', out);
        }
        fputc('}', out);
    }
    fputs("],\n \"ops\": [", out);
    for (size_t k = 0; k < p->n_ops; k++) {
        const op_rec *o = &p->ops[k];
        fprintf(out, "%s\n  {\"name\": ", k ? "," : "");
        dump_str(out, plan_str(p, o->name));
        fputs(", \"stream\": ", out);
        dump_str(out, plan_str(p, plan_op_stream_name(p, (uint32_t)k)));
        if (o->sync == TLSAN_SYNC_RECORD || o->sync == TLSAN_SYNC_WAIT) {
            fprintf(out, ", \"%s\": ", o->sync == TLSAN_SYNC_RECORD ? "record" : "wait");
            dump_str(out, plan_str(p, o->event));
        } else if (o->sync == TLSAN_SYNC_ALL) {
            fputs(", \"sync\": true", out);
        } else {
            dump_names(p, out, "reads", o->reads_start, o->n_reads, true);
            dump_names(p, out, "writes", o->writes_start, o->n_writes, true);
        }
        const op_extra *ox = op_x(p, o);
        if (ox->n_inplace) {
            fputs(", \"inplace\": [", out);
            for (uint32_t q = 0; q < ox->n_inplace; q++) {
                fputs(q ? ", [" : "[", out);
                dump_str(out,
                         plan_str(p, p->tensors[p->id_pool.v[ox->inplace_start + 2 * q]].name));
                fputs(", ", out);
                dump_str(out,
                         plan_str(p, p->tensors[p->id_pool.v[ox->inplace_start + 2 * q + 1]].name));
                fputc(']', out);
            }
            fputc(']', out);
        }
        if (ox->n_after)
            dump_names(p, out, "after", ox->after_start, ox->n_after, false);
        if (ox->n_cond) {
            fputs(", \"branch\": [", out);
            for (uint32_t c = 0; c < ox->n_cond; c++) {
                const if_rec *f = &p->ifs[p->id_pool.v[ox->cond_start + 2 * c]];
                uint32_t arm = p->id_pool.v[ox->cond_start + 2 * c + 1];
                fputs(c ? ", {\"if\": " : "{\"if\": ", out);
                dump_str(out, plan_str(p, f->name));
                fputs(", \"arm\": ", out);
                dump_str(out, plan_str(p, p->id_pool.v[f->arms_start + arm]));
                fputc('}', out);
            }
            fputc(']', out);
        }
        if (plan_op_loop(p, k) != NO_INDEX) {
            fputs(", \"loop\": ", out);
            dump_str(out, plan_str(p, p->loops[plan_op_loop(p, k)].name));
        }
        fputc('}', out);
    }
    fputs("]}\n", out);
}
