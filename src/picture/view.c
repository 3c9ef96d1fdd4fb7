/* view: the model behind a plan's picture, and the HTML page (see view.h). */
#include "picture/view.h"

#include "check/cache.h"
#include "check/view_access.h"
#include "core/trace_format.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

__extension__ typedef unsigned __int128 u128;

static inline int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

static inline int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

/* The span covering both lifetimes (an empty one adds nothing). */
static life life_join(life a, life b)
{
    if (life_empty(a))
        return b;
    if (life_empty(b))
        return a;
    return (life){min32(a.first, b.first), max32(a.last, b.last)};
}

void view_model_free(view_model *m)
{
    free(m->path_arms);
    free(m->life);
    free(m->dep);
    free(m->dep_life);
    free(m->mark);
    free(m->acc_start);
    free(m->acc_op);
    free(m->acc_rw);
    free(m->live_max);
    view_access_free(&m->views);
    memset(m, 0, sizeof *m);
}

/* Calls fn(t, rw) once per tensor an op touches, with the op's read and write bits merged
 * (an op may both read and write one tensor). `seen` is per-tensor scratch holding op + 1
 * for tensors already visited by this op. */
#define FOR_OP_TENSORS(p, op, seen, body)                                                          \
    do {                                                                                           \
        const op_rec *o_ = &(p)->ops[op];                                                          \
        for (uint32_t k_ = 0; k_ < o_->n_reads + o_->n_writes; k_++) {                             \
            bool w_ = k_ >= o_->n_reads;                                                           \
            uint32_t t =                                                                           \
                (p)->id_pool.v[w_ ? o_->writes_start + k_ - o_->n_reads : o_->reads_start + k_];   \
            uint8_t rw = w_ ? ACC_WRITE : ACC_READ;                                                \
            bool again = (seen)[t] == (op) + 1;                                                    \
            (seen)[t] = (op) + 1;                                                                  \
            body                                                                                   \
        }                                                                                          \
    } while (0)

/* Lists every tensor's own accesses (m->acc_*): one entry per op, read/write bits merged. */
static int own_accesses(view_model *m, const tlsan_plan *p)
{
    uint32_t *seen = calloc(p->n_tensors ? p->n_tensors : 1, sizeof *seen);
    m->acc_start = calloc(p->n_tensors + 1, sizeof *m->acc_start);
    int rc = -1;
    if (!seen || !m->acc_start)
        goto out;
    for (uint32_t op = 0; op < p->n_ops; op++)
        FOR_OP_TENSORS(p, op, seen, {
            (void)rw;
            if (!again)
                m->acc_start[t + 1]++;
        });
    for (size_t t = 0; t < p->n_tensors; t++)
        m->acc_start[t + 1] += m->acc_start[t];
    size_t n = m->acc_start[p->n_tensors];
    m->acc_op = malloc((n ? n : 1) * sizeof *m->acc_op);
    m->acc_rw = malloc(n ? n : 1);
    if (!m->acc_op || !m->acc_rw)
        goto out;
    /* Fill with a moving cursor per tensor (reusing acc_start, restored afterwards). */
    memset(seen, 0, p->n_tensors * sizeof *seen);
    for (uint32_t op = 0; op < p->n_ops; op++)
        FOR_OP_TENSORS(p, op, seen, {
            if (again) {
                m->acc_rw[m->acc_start[t] - 1] |= rw;
            } else {
                m->acc_op[m->acc_start[t]] = op;
                m->acc_rw[m->acc_start[t]++] = rw;
            }
        });
    for (size_t t = p->n_tensors; t > 0; t--)
        m->acc_start[t] = m->acc_start[t - 1];
    m->acc_start[0] = 0;
    rc = 0;
out:
    free(seen);
    return rc;
}

/* A tensor's lifetime on the path in ps: a view's from its accesses and those of the views
 * below it, as the checker derives it; when those lists were too large to build (the
 * builder's hull stands in), its root's lifetime, which contains it. */
static life tensor_life(const tlsan_plan *p, const access_index *ix, const view_access *va,
                        uint32_t t, const path_state *ps)
{
    uint32_t root = p->tensors[t].root;
    if (root == t || va->hull)
        return root_life(ix, p, root, ps);
    uint32_t a = va->start[t];
    return accesses_life(p, va->op + a, va->rw + a, va->start[t + 1] - a, va->flags[t], ps);
}

/* Whether a tensor's lifetime can differ between paths. */
static bool tensor_depends(const tlsan_plan *p, const access_index *ix, const view_access *va,
                           uint32_t t)
{
    uint32_t root = p->tensors[t].root;
    if (root == t || va->hull) {
        for (uint32_t a = ix->start[root]; a < ix->start[root + 1]; a++)
            if (ix->rw[a] & ACC_RELEVANT)
                return true;
        return false;
    }
    for (uint32_t a = va->start[t]; a < va->start[t + 1]; a++)
        if (va->rw[a] & ACC_COND)
            return true;
    return false;
}

/* Raises m->live_max with the live root bytes of each step under lifetimes `lives`. */
static int add_live_bytes(view_model *m, const life *lives)
{
    const tlsan_plan *p = m->plan;
    size_t n_steps = p->n_ops + 2; /* steps -1 .. n_ops */
    u128 *diff = calloc(p->n_arenas * (n_steps + 1) + 1, sizeof *diff);
    u128 *neg = calloc(p->n_arenas * (n_steps + 1) + 1, sizeof *neg);
    if (!diff || !neg) {
        free(diff);
        free(neg);
        return -1;
    }
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const tensor_rec *tr = &p->tensors[t];
        if (tr->root != t || life_empty(lives[t]))
            continue;
        size_t base = tr->arena * (n_steps + 1);
        diff[base + (size_t)(lives[t].first + 1)] += tr->bytes;
        neg[base + (size_t)(lives[t].last + 2)] += tr->bytes;
    }
    for (size_t a = 0; a < p->n_arenas; a++) {
        u128 up = 0, down = 0;
        for (size_t s = 0; s < n_steps; s++) {
            up += diff[a * (n_steps + 1) + s];
            down += neg[a * (n_steps + 1) + s];
            u128 live = up - down;
            uint64_t v = live > (u128)UINT64_MAX ? UINT64_MAX : (uint64_t)live;
            uint64_t *slot = &m->live_max[a * n_steps + s];
            if (v > *slot)
                *slot = v;
        }
    }
    free(diff);
    free(neg);
    return 0;
}

static bool kind_is_pair(tlsan_kind k)
{
    return k == TLSAN_KIND_LIVE_OVERLAP || k == TLSAN_KIND_BAD_INPLACE ||
           k == TLSAN_KIND_UNORDERED_REUSE;
}

bool view_finding_in_plan(const view_model *m, const tlsan_finding *f)
{
    size_t pi = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    return pi == m->plan_index ||
           (f->other_plan_index >= 0 && (size_t)f->other_plan_index == m->plan_index);
}

uint32_t view_finding_tensor(const view_model *m, const tlsan_finding *f, size_t i)
{
    return report_tensor_of(m->report, f, i, m->plan);
}

int view_model_build(view_model *m, const tlsan_plan *p, const tlsan_report *report,
                     size_t plan_index)
{
    memset(m, 0, sizeof *m);
    m->plan = p;
    m->report = report;
    m->plan_index = plan_index;
    access_index ix = {0};
    if_set set = {0};
    path_state ps = {.plan = p};
    life *lives = NULL;
    size_t n_t = p->n_tensors ? p->n_tensors : 1;
    bool have_ix = false, have_set = false;

    if (access_index_build(&ix, p) != 0)
        goto fail;
    have_ix = true;
    if (own_accesses(m, p) != 0 || view_access_build_every_view(&m->views, p, &ix) != 0)
        goto fail;
    if (if_set_init(&set, p->n_ifs) != 0)
        goto fail;
    have_set = true;
    ps.arm = calloc(p->n_ifs ? p->n_ifs : 1, sizeof *ps.arm);
    m->life = malloc(n_t * sizeof *m->life);
    m->mark = calloc(n_t, 1);
    m->dep = malloc(n_t * sizeof *m->dep);
    lives = malloc(n_t * sizeof *lives);
    m->live_max = calloc(p->n_arenas * (p->n_ops + 2) + 1, sizeof *m->live_max);
    if (!ps.arm || !m->life || !m->mark || !m->dep || !lives || !m->live_max)
        goto fail;

    for (uint32_t f = 0; f < p->n_ifs; f++)
        set.ifs[set.n++] = f;
    m->paths_total = if_set_paths(&set, p);
    m->n_paths = m->paths_total <= VIEW_MAX_PATHS ? (size_t)m->paths_total : 0;
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (m->n_paths > 1 && tensor_depends(p, &ix, &m->views, t))
            m->dep[m->n_dep++] = t;

    if (m->n_paths == 0) {
        /* Too many paths to list: every op runs and every touched loop is carried, so each
         * drawn lifetime contains the lifetime of every path. */
        ps.all_run = true;
        for (uint32_t t = 0; t < p->n_tensors; t++)
            m->life[t] = tensor_life(p, &ix, &m->views, t, &ps);
        if (add_live_bytes(m, m->life) != 0)
            goto fail;
    } else {
        m->path_arms = malloc((m->n_paths * p->n_ifs + 1) * sizeof *m->path_arms);
        m->dep_life = malloc((m->n_paths * m->n_dep + 1) * sizeof *m->dep_life);
        if (!m->path_arms || !m->dep_life)
            goto fail;
        /* Lifetimes that do not depend on the path are the same on the first. */
        path_first(&ps, &set);
        for (uint32_t t = 0; t < p->n_tensors; t++)
            m->life[t] = lives[t] = tensor_life(p, &ix, &m->views, t, &ps);
        for (size_t d = 0; d < m->n_dep; d++)
            m->life[m->dep[d]] = (life){LIFE_NONE_FIRST, LIFE_NONE_LAST};
        size_t k = 0;
        do {
            memcpy(&m->path_arms[k * p->n_ifs], ps.arm, p->n_ifs * sizeof *ps.arm);
            for (size_t d = 0; d < m->n_dep; d++) {
                uint32_t t = m->dep[d];
                life l = tensor_life(p, &ix, &m->views, t, &ps);
                m->dep_life[k * m->n_dep + d] = lives[t] = l;
                m->life[t] = life_join(m->life[t], l);
            }
            if (add_live_bytes(m, lives) != 0)
                goto fail;
            k++;
        } while (path_next(&ps, &set));
    }

    for (size_t i = 0; i < tlsan_report_count(report); i++) {
        const tlsan_finding *f = tlsan_report_finding(report, i);
        if (!view_finding_in_plan(m, f))
            continue;
        for (size_t j = 0; j < f->n_tensors; j++) {
            uint32_t t = view_finding_tensor(m, f, j);
            if (t == NO_INDEX)
                continue;
            uint8_t mark = kind_is_pair(f->kind) ? VIEW_MARK_CONFLICT : VIEW_MARK_FLAGGED;
            if (mark > m->mark[t])
                m->mark[t] = mark;
        }
    }
    free(lives);
    free(ps.arm);
    if_set_free(&set);
    access_index_free(&ix);
    return 0;
fail:
    free(lives);
    free(ps.arm);
    if (have_set)
        if_set_free(&set);
    if (have_ix)
        access_index_free(&ix);
    view_model_free(m);
    return -1;
}

bool view_file_is_trace(const char *path)
{
    if (strcmp(path, "-") == 0)
        return false; /* standard input cannot be peeked at and read again */
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char head[TRACE_MAGIC_BYTES];
    bool is = fread(head, 1, sizeof head, f) == sizeof head &&
              memcmp(head, TRACE_MAGIC, TRACE_MAGIC_BYTES) == 0;
    fclose(f);
    return is;
}

/* ---- the HTML page ---- */

/* Emits the model as the JSON object the page's script draws (see view.js for its use).
 * Per-tensor data is stored column by column: for 10^5 tensors that is several times
 * smaller and faster to parse than one object per tensor. */
static void gen_plan_json(report_gen *j, const view_model *m, const char *label)
{
    const tlsan_plan *p = m->plan;
    const tlsan_report *r = m->report;
    char buf[64];
#define KEY(s) report_gen_str(j, s)
    report_gen_open_map(j);
    KEY("label");
    report_gen_str(j, label);
    KEY("name");
    const char *pl = report_plan_label(r, m->plan_index, buf, sizeof buf);
    report_gen_str(j, pl ? pl : "");
    KEY("schedule");
    report_gen_str(j, p->schedule == TLSAN_SCHEDULE_DATAFLOW ? "dataflow" : "sequential");

    KEY("ops");
    report_gen_open_array(j);
    for (uint32_t o = 0; o < p->n_ops; o++)
        report_gen_str(j, plan_str(p, p->ops[o].name));
    report_gen_close_array(j);
    KEY("op_stream");
    report_gen_open_array(j);
    for (uint32_t o = 0; o < p->n_ops; o++)
        report_gen_str(j, plan_str(p, plan_op_stream_name(p, o)));
    report_gen_close_array(j);

    KEY("arenas");
    report_gen_open_array(j);
    for (size_t a = 0; a < p->n_arenas; a++) {
        const tlsan_arena_stats *st = tlsan_report_arena_stats(r, m->plan_index, a);
        report_gen_open_map(j);
        KEY("name");
        report_gen_str(j, plan_str(p, p->arenas[a].name));
        KEY("bytes");
        report_gen_u64(j, p->arenas[a].bytes);
        KEY("memory");
        report_gen_str(j, plan_str(p, p->arenas[a].memory));
        KEY("required");
        report_gen_u64(j, st ? st->required_bytes : 0);
        KEY("lower_bound");
        report_gen_u64(j, st ? st->lower_bound_bytes : 0);
        KEY("lower_bound_approximate");
        report_gen_bool(j, st && st->approximate);
        /* Live root bytes at each step from -1 to n_ops, the most over the paths: what the
         * union view shows (summing union lifetimes would count tensors of exclusive arms
         * together). */
        KEY("live_max");
        report_gen_open_array(j);
        for (size_t s = 0; s < p->n_ops + 2; s++)
            report_gen_u64(j, m->live_max[a * (p->n_ops + 2) + s]);
        report_gen_close_array(j);
        report_gen_close_map(j);
    }
    report_gen_close_array(j);

    KEY("ifs");
    report_gen_open_array(j);
    for (uint32_t f = 0; f < p->n_ifs; f++) {
        report_gen_open_map(j);
        KEY("name");
        report_gen_str(j, plan_str(p, p->ifs[f].name));
        KEY("arms");
        report_gen_open_array(j);
        for (uint32_t a = 0; a < p->ifs[f].n_arms; a++)
            report_gen_str(j, arm_name(p, f, a));
        report_gen_close_array(j);
        report_gen_close_map(j);
    }
    report_gen_close_array(j);
    KEY("paths_total");
    report_gen_u64(j, m->paths_total);
    KEY("paths");
    report_gen_open_array(j);
    for (size_t k = 0; p->n_ifs && k < m->n_paths; k++) {
        report_gen_open_array(j);
        for (uint32_t f = 0; f < p->n_ifs; f++)
            report_gen_u64(j, m->path_arms[k * p->n_ifs + f]);
        report_gen_close_array(j);
    }
    report_gen_close_array(j);
    KEY("dep");
    report_gen_open_array(j);
    for (size_t d = 0; d < m->n_dep; d++)
        report_gen_u64(j, m->dep[d]);
    report_gen_close_array(j);
    KEY("path_life"); /* per path: first, last of each dep tensor, flattened */
    report_gen_open_array(j);
    for (size_t k = 0; m->n_dep && k < m->n_paths; k++) {
        report_gen_open_array(j);
        for (size_t d = 0; d < m->n_dep; d++) {
            life l = m->dep_life[k * m->n_dep + d];
            report_gen_i64(j, life_empty(l) ? 1 : l.first);
            report_gen_i64(j, life_empty(l) ? 0 : l.last);
        }
        report_gen_close_array(j);
    }
    report_gen_close_array(j);

    /* Tensors, column by column. */
    KEY("tensors");
    report_gen_open_map(j);
    KEY("name");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_str(j, plan_str(p, p->tensors[t].name));
    report_gen_close_array(j);
    KEY("base"); /* the tensor a view is of; -1 for a storage root */
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_i64(j, p->tensors[t].root == t ? -1 : (int64_t)p->tensors[t].view_of);
    report_gen_close_array(j);
    KEY("root");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_u64(j, p->tensors[t].root);
    report_gen_close_array(j);
    KEY("arena");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_u64(j, view_tensor_arena(p, t));
    report_gen_close_array(j);
    KEY("offset"); /* first byte within the arena */
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_u64(j, p->tensors[t].abs_offset_bytes);
    report_gen_close_array(j);
    KEY("bytes");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_u64(j, p->tensors[t].bytes);
    report_gen_close_array(j);
    KEY("life"); /* union over the paths: first, last flattened; an empty one is 1, 0 */
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        life l = m->life[t];
        report_gen_i64(j, life_empty(l) ? 1 : l.first);
        report_gen_i64(j, life_empty(l) ? 0 : l.last);
    }
    report_gen_close_array(j);
    KEY("mark");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_u64(j, m->mark[t]);
    report_gen_close_array(j);
    KEY("flags");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_u64(j, p->tensors[t].flags & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT));
    report_gen_close_array(j);
    /* The details a hover shows, sparse where most tensors have none. */
    KEY("declared");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const tensor_rec *tr = &p->tensors[t];
        if (tr->flags & TREC_HAS_LIFETIME) {
            const tensor_extra *x = tensor_x(p, tr);
            report_gen_pair_i64(j, x->lifetime[0], x->lifetime[1]);
        } else {
            report_gen_i64(j, 0);
        }
    }
    report_gen_close_array(j);
    KEY("dtype");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        report_gen_str(j, tlsan_dtype_name((tlsan_dtype)p->tensors[t].dtype));
    report_gen_close_array(j);
    KEY("shape");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const tensor_rec *tr = &p->tensors[t];
        if (tr->dtype == TLSAN_DTYPE_NONE) {
            report_gen_i64(j, 0);
            continue;
        }
        report_gen_open_array(j);
        for (uint32_t k = 0; k < plan_shape_rank(p, tr); k++)
            report_gen_u64(j, plan_shape_dim(p, tr, k));
        report_gen_close_array(j);
    }
    report_gen_close_array(j);
    KEY("stack");
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const tensor_extra *tx = tensor_x(p, &p->tensors[t]);
        if (!tx->n_stack) {
            report_gen_i64(j, 0);
            continue;
        }
        report_gen_open_array(j);
        for (uint32_t k = 0; k < tx->n_stack; k++)
            report_gen_str(j, plan_str(p, p->id_pool.v[tx->stack_start + k]));
        report_gen_close_array(j);
    }
    report_gen_close_array(j);
    KEY("access"); /* own accesses: op * 4 + (1 read | 2 write) */
    report_gen_open_array(j);
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        report_gen_open_array(j);
        for (uint32_t a = m->acc_start[t]; a < m->acc_start[t + 1]; a++)
            report_gen_u64(j, (uint64_t)m->acc_op[a] * 4 + (m->acc_rw[a] & 3));
        report_gen_close_array(j);
    }
    report_gen_close_array(j);
    report_gen_close_map(j);

    KEY("findings");
    report_gen_open_array(j);
    for (size_t i = 0; i < tlsan_report_count(r); i++) {
        const tlsan_finding *f = tlsan_report_finding(r, i);
        if (!view_finding_in_plan(m, f))
            continue;
        report_gen_open_map(j);
        KEY("kind");
        report_gen_str(j, tlsan_kind_name(f->kind));
        KEY("pair");
        report_gen_bool(j, kind_is_pair(f->kind));
        KEY("message");
        report_gen_str(j, f->message);
        KEY("names");
        report_gen_open_array(j);
        for (size_t k = 0; k < f->n_tensors; k++)
            report_gen_str(j, f->tensors[k]);
        report_gen_close_array(j);
        KEY("tensors"); /* indices in this plan, -1 when not in it */
        report_gen_open_array(j);
        for (size_t k = 0; k < f->n_tensors; k++) {
            uint32_t t = view_finding_tensor(m, f, k);
            report_gen_i64(j, t == NO_INDEX ? -1 : (int64_t)t);
        }
        report_gen_close_array(j);
        /* Steps, bytes, path (names), lifetimes, ops, approximate: as in JSON reports. */
        report_gen_finding_details(j, r, f);
        report_gen_close_map(j);
    }
    report_gen_close_array(j);
    report_gen_close_map(j);
#undef KEY
}

/* The generator's output with every '<' written as \u003c. JSON has '<' only inside
 * strings, where the escape means the same; without any '<', names such as "</script>" or
 * "<!--<script>" cannot end or confuse the <script> element holding the data. */
static void print_script_safe(void *ctx, const char *s, size_t len)
{
    report_gen *j = ctx;
    while (len) {
        const char *lt = memchr(s, '<', len);
        size_t n = lt ? (size_t)(lt - s) : len;
        if (n && fwrite(s, 1, n, j->out) != n)
            j->failed = true;
        if (!lt)
            break;
        if (fputs("\\u003c", j->out) == EOF)
            j->failed = true;
        s += n + 1;
        len -= n + 1;
    }
}

/* Writes the data of every plan of the units as one JSON document. */
static int gen_data(const view_unit *units, size_t n_units, FILE *out)
{
    /* Set up by hand rather than by report_gen_init(): yajl frees the context of the print
     * callback it replaces, so the callback can only be set once. */
    report_gen j = {yajl_gen_alloc(NULL), out, false};
    if (!j.g)
        return -1;
    yajl_gen_config(j.g, yajl_gen_print_callback, print_script_safe, (void *)&j);
    yajl_gen_config(j.g, yajl_gen_validate_utf8, 1);
    /* Escaped solidus as well: no URL in a name or stack frame appears literally in the
     * page, so a scan for "http://" finds only what the page itself would fetch. */
    yajl_gen_config(j.g, yajl_gen_escape_solidus, 1);
    report_gen_open_map(&j);
    report_gen_str(&j, "tlsan_view");
    report_gen_i64(&j, 1);
    report_gen_str(&j, "plans");
    report_gen_open_array(&j);
    for (size_t u = 0; u < n_units && !j.failed; u++) {
        const view_unit *un = &units[u];
        size_t n_plans = un->plan ? 1 : tlsan_cache_n_plans(un->cache);
        for (size_t i = 0; i < n_plans && !j.failed; i++) {
            const tlsan_plan *p = un->plan ? un->plan : tlsan_cache_plan(un->cache, i);
            view_model m;
            if (view_model_build(&m, p, un->report, i) != 0) {
                j.failed = true;
                break;
            }
            char label[4200];
            if (un->cache) {
                const char *key = cache_key(un->cache, i);
                snprintf(label, sizeof label, "%s: plans[%zu] %s", un->label, i, key ? key : "");
            } else {
                snprintf(label, sizeof label, "%s", un->label);
            }
            gen_plan_json(&j, &m, label);
            view_model_free(&m);
        }
    }
    report_gen_close_array(&j);
    report_gen_close_map(&j);
    return report_gen_finish(&j);
}

int view_write_html(const view_unit *units, size_t n_units, FILE *out)
{
    /* The title names the first input: the page is usually made for one. */
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
          out);
    fputs("<title>tlsan view</title>\n<style>\n", out);
    fputs((const char *)view_asset_css, out);
    fputs("</style>\n</head>\n<body>\n<header><h1>tlsan view</h1>"
          "<p class=\"hint\">Steps run left to right, byte offsets top to bottom; one "
          "rectangle per tensor over its derived lifetime. Red: tensors of a finding that "
          "share bytes (the dark hatched area is where and when they collide). Wheel: zoom "
          "(Shift: bytes only, Ctrl: steps only); drag: pan; double-click: reset.</p>"
          "</header>\n<main id=\"tlsan-main\"></main>\n<div id=\"tlsan-tip\" "
          "hidden></div>\n<script type=\"application/json\" id=\"tlsan-data\">",
          out);
    if (gen_data(units, n_units, out) != 0)
        return -1;
    fputs("</script>\n<script>\n", out);
    fputs((const char *)view_asset_js, out);
    fputs("</script>\n</body>\n</html>\n", out);
    return ferror(out) ? -1 : 0;
}
