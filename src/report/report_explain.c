/* report_explain: what a finding's steps mean and what the planner probably missed.
 *
 * A step in a lifetime that no op of the tensor accounts for comes from a rule of the
 * format: the input step (-1, an "input" or "constant" flag), the output step (n_ops, an
 * "output" or "constant" flag, possibly on another tensor of the same storage root), or the
 * loop rule (a value carried round a loop is live over the whole body). Findings that follow
 * from a declared lifetime the planner trusted are linked to it, and pairs that follow from
 * one access the planner missed (a tensor missing from an op) are grouped under it
 * (report_link_causes). The text, JSON and SARIF writers all describe findings through these
 * functions. */
#include "check/lifetime.h"
#include "report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *tlsan_severity_name(tlsan_severity severity)
{
    return severity == TLSAN_SEVERITY_WARNING ? "warning" : "error";
}

/* Whether tensor x is t or lies inside t (a view of it, at any depth). */
static bool inside(const tlsan_plan *p, uint32_t x, uint32_t t)
{
    if (p->tensors[t].root == t)
        return p->tensors[x].root == t;
    for (uint32_t y = x; y != NO_INDEX; y = p->tensors[y].view_of)
        if (y == t)
            return true;
    return false;
}

uint32_t report_op_touches(const tlsan_plan *p, uint32_t start, uint32_t n, uint32_t t)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t x = p->id_pool.v[start + k];
        if (inside(p, x, t))
            return x;
    }
    return NO_INDEX;
}

static bool op_touches_any(const tlsan_plan *p, uint32_t op, uint32_t t)
{
    const op_rec *o = &p->ops[op];
    return report_op_touches(p, o->reads_start, o->n_reads, t) != NO_INDEX ||
           report_op_touches(p, o->writes_start, o->n_writes, t) != NO_INDEX;
}

/* The tensor of root's tree that carries `flag` (the root first), NO_INDEX when none. */
static uint32_t flag_bearer(const tlsan_plan *p, uint32_t root, unsigned flag)
{
    if (p->tensors[root].flags & flag)
        return root;
    for (uint32_t i = 0; i < p->n_tensors; i++)
        if (p->tensors[i].root == root && (p->tensors[i].flags & flag))
            return i;
    return NO_INDEX;
}

/* Labels `step` of tensor t, whose lifetime is l, when a rule rather than an op of t puts
 * it there. False when the step needs no label. */
static bool label_step(const tlsan_plan *p, uint32_t t, life l, int64_t step, step_label *out)
{
    uint32_t root = p->tensors[t].root;
    memset(out, 0, sizeof *out);
    out->step = step;
    out->loop = NO_INDEX;
    if (step < 0 || step >= (int64_t)p->n_ops) {
        unsigned flag = step < 0 ? TLSAN_TENSOR_INPUT : TLSAN_TENSOR_OUTPUT;
        if (step != -1 && step != (int64_t)p->n_ops)
            return false;
        if (!(p->root_flags[root] & flag))
            return false;
        uint32_t b = flag_bearer(p, root, flag);
        if (b == NO_INDEX)
            return false;
        out->kind = step < 0 ? STEP_INPUT : STEP_OUTPUT;
        out->bearer = plan_str(p, p->tensors[b].name);
        out->flag = (p->tensors[b].flags & TLSAN_TENSOR_CONSTANT) ? "constant"
                    : step < 0                                    ? "input"
                                                                  : "output";
        return true;
    }
    /* Only an end of the lifetime with no access of t there is the loop rule's doing. */
    if (step != l.first && step != l.last)
        return false;
    uint32_t loop = plan_op_loop(p, step);
    if (loop == NO_INDEX || op_touches_any(p, (uint32_t)step, t))
        return false;
    const loop_rec *L = &p->loops[loop];
    if (l.first > (int32_t)L->first_op || l.last < (int32_t)L->last_op)
        return false;
    out->kind = STEP_LOOP;
    out->loop = loop;
    return true;
}

static bool has_label(const step_label *v, size_t n, const step_label *x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].step == x->step && v[i].tensor == x->tensor)
            return true;
    return false;
}

size_t report_step_labels(const tlsan_report *r, const tlsan_finding *f, step_label *out,
                          size_t max)
{
    const tlsan_plan *p = report_plan_of(r, f);
    size_t n = 0, nt = f->n_tensors < 2 ? f->n_tensors : 2;
    if (f->kind == TLSAN_KIND_CACHE_KEY_COLLISION)
        return 0;
    for (size_t i = 0; i < nt; i++) {
        uint32_t t = report_tensor_of(r, f, i, p);
        if (t == NO_INDEX)
            continue;
        /* without lifetimes only the input and output steps can be told */
        life l = {LIFE_NONE_FIRST, LIFE_NONE_LAST};
        if (f->has_lifetimes)
            l = (life){(int32_t)f->lifetimes[i][0], (int32_t)f->lifetimes[i][1]};
        int64_t steps[4] = {f->has_lifetimes ? l.first : -2, f->has_lifetimes ? l.last : -2, -2,
                            -2};
        if (nt == 2 && f->has_steps) {
            steps[2] = f->steps[0];
            steps[3] = f->steps[1];
        }
        for (int k = 0; k < 4 && n < max; k++) {
            step_label s;
            if (steps[k] < -1 || !label_step(p, t, l, steps[k], &s))
                continue;
            s.tensor = i;
            if (!has_label(out, n, &s))
                out[n++] = s;
        }
    }
    return n;
}

const char *report_step_kind_name(step_kind kind)
{
    switch (kind) {
    case STEP_INPUT:
        return "input";
    case STEP_OUTPUT:
        return "output";
    case STEP_LOOP:
        return "loop";
    default:
        return "op";
    }
}

void report_step_text(const tlsan_plan *p, const char *tensor, const step_label *s, char *buf,
                      size_t n)
{
    if (s->kind == STEP_INPUT || s->kind == STEP_OUTPUT) {
        snprintf(buf, n, "the graph-%s step: '%s' is %s %s",
                 s->kind == STEP_INPUT ? "input" : "output", s->bearer,
                 strcmp(s->flag, "constant") == 0 ? "a" : "an", s->flag);
    } else if (s->kind == STEP_LOOP) {
        const loop_rec *L = &p->loops[s->loop];
        snprintf(buf, n,
                 "a loop extension: '%s' is carried round loop '%s', so live over all of its "
                 "steps %" PRIu32 "..%" PRIu32,
                 tensor, plan_str(p, L->name), L->first_op, L->last_op);
    } else {
        buf[0] = '\0';
    }
}

void report_step_note(const tlsan_plan *p, uint32_t t, int32_t first, int32_t last, int64_t step,
                      char *buf, size_t n)
{
    step_label s;
    life l = {first, last};
    buf[0] = '\0';
    if (!label_step(p, t, l, step, &s))
        return;
    char text[400];
    report_step_text(p, plan_str(p, p->tensors[t].name), &s, text, sizeof text);
    snprintf(buf, n, " (%s)", text);
}

/* ---- what the planner probably missed ---- */

/* The first op after step `after` (up to `upto`) that touches t; NO_INDEX when none. */
static uint32_t first_touch(const tlsan_plan *p, uint32_t t, int64_t from, int64_t upto,
                            size_t *n_more)
{
    uint32_t found = NO_INDEX;
    *n_more = 0;
    for (int64_t s = from < 0 ? 0 : from; s <= upto && s < (int64_t)p->n_ops; s++) {
        if (!op_touches_any(p, (uint32_t)s, t))
            continue;
        if (found == NO_INDEX)
            found = (uint32_t)s;
        else
            ++*n_more;
    }
    return found;
}

/* "op 'O' (step S) reads 'x' through view 'v'" */
static void describe_access(const tlsan_plan *p, uint32_t op, uint32_t t, char *buf, size_t n)
{
    const op_rec *o = &p->ops[op];
    uint32_t w = report_op_touches(p, o->writes_start, o->n_writes, t);
    uint32_t x = w != NO_INDEX ? w : report_op_touches(p, o->reads_start, o->n_reads, t);
    int k = snprintf(buf, n, "op '%s' (step %" PRIu32 ") %s '%s'", plan_name(p, o->name), op,
                     w != NO_INDEX ? "writes" : "reads", plan_name(p, p->tensors[t].name));
    if (x != t && x != NO_INDEX && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " through view '%s'", plan_name(p, p->tensors[x].name));
}

static void suggest_lifetime(const tlsan_plan *p, const tlsan_finding *f, uint32_t t, char *buf,
                             size_t n)
{
    const int64_t *declared = tensor_x(p, &p->tensors[t])->lifetime;
    life l = {(int32_t)f->lifetimes[0][0], (int32_t)f->lifetimes[0][1]};
    const char *name = plan_str(p, p->tensors[t].name);
    char what[600];
    step_label s;
    /* The end past the declaration first: a missed late use is the common mistake. */
    bool late = l.last > declared[1];
    int64_t end = late ? l.last : l.first;
    if (label_step(p, t, l, end, &s)) {
        if (s.kind == STEP_LOOP)
            snprintf(what, sizeof what,
                     "that '%s' is carried round loop '%s' (live over steps "
                     "%" PRIu32 "..%" PRIu32 ")",
                     name, plan_str(p, p->loops[s.loop].name), p->loops[s.loop].first_op,
                     p->loops[s.loop].last_op);
        else
            snprintf(what, sizeof what,
                     "that '%s' is %s (flag '%s' on '%s'), live at step %" PRId64, name,
                     s.kind == STEP_INPUT ? "a graph input" : "a graph output", s.flag, s.bearer,
                     end);
    } else {
        size_t more = 0;
        uint32_t op = late ? first_touch(p, t, declared[1] + 1, l.last, &more)
                           : first_touch(p, t, l.first, declared[0] - 1, &more);
        if (op == NO_INDEX) {
            buf[0] = '\0';
            return;
        }
        char acc[500];
        describe_access(p, op, t, acc, sizeof acc);
        if (more)
            snprintf(what, sizeof what, "that %s (and %zu later op%s)", acc, more,
                     more == 1 ? "" : "s");
        else
            snprintf(what, sizeof what, "that %s", acc);
    }
    snprintf(
        buf, n, "the planner probably missed %s; %s lifetime [%" PRId64 ", %" PRId64 "] %s", what,
        late ? "it freed the bytes after its declared" : "it placed the tensor by its declared",
        declared[0], declared[1],
        late ? "and reused them" : "and let another tenant use them first");
}

void report_suggestion(const tlsan_report *r, const tlsan_finding *f, char *buf, size_t n)
{
    const tlsan_plan *p = report_plan_of(r, f);
    uint32_t t = report_tensor_of(r, f, 0, p);
    buf[0] = '\0';
    if (t == NO_INDEX)
        return;
    switch (f->kind) {
    case TLSAN_KIND_LIFETIME_TOO_SHORT:
        if (f->has_lifetimes && (p->tensors[t].flags & TREC_HAS_LIFETIME))
            suggest_lifetime(p, f, t, buf, n);
        break;
    case TLSAN_KIND_READ_BEFORE_WRITE:
        snprintf(buf, n,
                 "the planner probably missed that '%s' is a graph input (\"input\": true), or "
                 "an earlier op's write of it",
                 f->tensors[0]);
        break;
    case TLSAN_KIND_UNORDERED_REUSE:
        if (f->op_index2 >= 0 && f->op_index >= 0 && (uint64_t)f->op_index < p->n_ops) {
            const char *a = plan_str(p, p->ops[f->op_index2].name);
            const char *b = plan_str(p, p->ops[f->op_index].name);
            if (p->schedule == TLSAN_SCHEDULE_DATAFLOW)
                snprintf(buf, n,
                         "the planner probably missed a dependency of op '%s' on op '%s' "
                         "(\"after\"), or placed '%s' on bytes still in use",
                         b, a, f->tensors[1]);
            else
                snprintf(buf, n,
                         "the planner probably missed an event (recorded after the last access "
                         "of '%s', from op '%s' on, and waited for before op '%s') or a sync "
                         "between the streams",
                         f->tensors[0], a, b);
        }
        break;
    default:
        break;
    }
}

/* ---- causes ---- */

typedef struct lts_ref {
    int64_t plan;
    uint32_t root;
    size_t finding;
} lts_ref;

static int cmp_lts(const void *x, const void *y)
{
    const lts_ref *a = x, *b = y;
    if (a->plan != b->plan)
        return a->plan < b->plan ? -1 : 1;
    if (a->root != b->root)
        return a->root < b->root ? -1 : 1;
    return a->finding < b->finding ? -1 : a->finding > b->finding;
}

static bool pair_kind(tlsan_kind k)
{
    return k == TLSAN_KIND_LIVE_OVERLAP || k == TLSAN_KIND_BAD_INPLACE ||
           k == TLSAN_KIND_UNORDERED_REUSE;
}

/* A pair follows from a too-short declaration of one of its tensors when the other
 * tensor's lifetime misses the declared one: believing it, the planner saw them apart. */
static int link_lifetime_causes(tlsan_report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_findings; i++) {
        r->findings[i].cause = -1;
        n += r->findings[i].kind == TLSAN_KIND_LIFETIME_TOO_SHORT;
    }
    if (n == 0)
        return 0;
    lts_ref *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    n = 0;
    for (size_t i = 0; i < r->n_findings; i++) {
        const tlsan_finding *f = &r->findings[i];
        if (f->kind != TLSAN_KIND_LIFETIME_TOO_SHORT)
            continue;
        const tlsan_plan *p = report_plan_of(r, f);
        uint32_t t = report_tensor_of(r, f, 0, p);
        if (t != NO_INDEX)
            v[n++] = (lts_ref){f->plan_index, p->tensors[t].root, i};
    }
    qsort(v, n, sizeof *v, cmp_lts);
    for (size_t i = 0; i < r->n_findings; i++) {
        tlsan_finding *f = &r->findings[i];
        if (!pair_kind(f->kind) || f->n_tensors != 2 || !f->has_lifetimes)
            continue;
        const tlsan_plan *p = report_plan_of(r, f);
        for (size_t k = 0; k < 2 && f->cause < 0; k++) {
            uint32_t t = report_tensor_of(r, f, k, p);
            if (t == NO_INDEX)
                continue;
            lts_ref key = {f->plan_index, p->tensors[t].root, 0};
            size_t a = 0, b = n;
            while (a < b) {
                size_t m = a + (b - a) / 2;
                if (cmp_lts(&v[m], &key) < 0)
                    a = m + 1;
                else
                    b = m;
            }
            for (; a < n && v[a].plan == key.plan && v[a].root == key.root; a++) {
                const tlsan_finding *c = &r->findings[v[a].finding];
                const int64_t *other = f->lifetimes[1 - k];
                /* c's steps are its declared lifetime */
                if (other[1] < c->steps[0] || other[0] > c->steps[1]) {
                    f->cause = (int64_t)v[a].finding;
                    break;
                }
            }
        }
    }
    free(v);
    return 0;
}

/* ---- a tensor missing from an op ---- */

typedef struct access_ref {
    int64_t plan;
    uint32_t root, op;
    int64_t previous;
    size_t finding;
} access_ref;

static int cmp_access(const void *x, const void *y)
{
    const access_ref *a = x, *b = y;
    if (a->plan != b->plan)
        return a->plan < b->plan ? -1 : 1;
    if (a->root != b->root)
        return a->root < b->root ? -1 : 1;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    return a->finding < b->finding ? -1 : a->finding > b->finding;
}

/* Whether pair f collides only through the last access of its tensor k: that end of the
 * lifetime is an op of the tensor (not an output or loop step), and the tensor's access
 * before it comes before the other tenant begins. Fills the op and that earlier step. */
static bool collides_through_last_access(const tlsan_report *r, const tlsan_finding *f, size_t k,
                                         access_ref *out)
{
    const tlsan_plan *p = report_plan_of(r, f);
    uint32_t t = report_tensor_of(r, f, k, p);
    if (t == NO_INDEX || p->tensors[t].root != t)
        return false;
    life l = {(int32_t)f->lifetimes[k][0], (int32_t)f->lifetimes[k][1]};
    int64_t other_first = f->lifetimes[1 - k][0];
    step_label s;
    if (l.last < 0 || l.last >= (int32_t)p->n_ops || label_step(p, t, l, l.last, &s) ||
        !op_touches_any(p, (uint32_t)l.last, t) || other_first > l.last)
        return false;
    int64_t previous = -2;
    for (int64_t step = l.last - 1; step >= l.first && previous == -2; step--)
        if (step >= 0 ? op_touches_any(p, (uint32_t)step, t)
                      : label_step(p, t, l, step, &s) && s.kind == STEP_INPUT)
            previous = step;
    if (previous == -2 || previous >= other_first)
        return false;
    *out = (access_ref){f->plan_index, t, (uint32_t)l.last, previous, (size_t)(f - r->findings)};
    return true;
}

/* Groups the pairs (without a declared-lifetime cause) that share the root and the access
 * through which they collide; groups of one are dropped. */
static int link_access_causes(tlsan_report *r)
{
    free(r->access_causes);
    free(r->access_cause_of);
    r->access_causes = NULL;
    r->access_cause_of = NULL;
    r->n_access_causes = 0;
    access_ref *v = malloc((r->n_findings ? r->n_findings : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < r->n_findings; i++) {
        const tlsan_finding *f = &r->findings[i];
        if (!pair_kind(f->kind) || f->n_tensors != 2 || !f->has_lifetimes || f->cause >= 0)
            continue;
        for (size_t k = 0; k < 2; k++)
            if (collides_through_last_access(r, f, k, &v[n])) {
                n++;
                break;
            }
    }
    qsort(v, n, sizeof *v, cmp_access);
    int rc = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && v[b].plan == v[a].plan && v[b].root == v[a].root && v[b].op == v[a].op)
            b++;
        if (b - a >= 2) {
            if (!r->access_cause_of) {
                r->access_causes = malloc(n / 2 * sizeof *r->access_causes);
                r->access_cause_of = malloc(r->n_findings * sizeof *r->access_cause_of);
                if (!r->access_causes || !r->access_cause_of) {
                    rc = -1;
                    break;
                }
                for (size_t i = 0; i < r->n_findings; i++)
                    r->access_cause_of[i] = -1;
            }
            /* the latest earlier access stands for the group (paths may differ) */
            int64_t previous = v[a].previous;
            for (size_t i = a; i < b; i++) {
                previous = v[i].previous > previous ? v[i].previous : previous;
                r->access_cause_of[v[i].finding] = (int64_t)r->n_access_causes;
            }
            r->access_causes[r->n_access_causes++] =
                (access_cause){v[a].plan, v[a].root, v[a].op, previous, v[a].finding, b - a};
        }
        a = b;
    }
    free(v);
    if (rc != 0) {
        free(r->access_causes);
        free(r->access_cause_of);
        r->access_causes = NULL;
        r->access_cause_of = NULL;
        r->n_access_causes = 0;
    }
    return rc;
}

int report_link_causes(tlsan_report *r)
{
    if (link_lifetime_causes(r) != 0)
        return -1;
    return link_access_causes(r);
}

const access_cause *report_access_cause_of(const tlsan_report *r, size_t finding)
{
    if (!r->access_cause_of || finding >= r->n_findings || r->access_cause_of[finding] < 0)
        return NULL;
    return &r->access_causes[r->access_cause_of[finding]];
}

void report_access_text(const tlsan_report *r, const access_cause *c, char *buf, size_t n)
{
    const tlsan_plan *p = r->plans[c->plan_index < 0 ? 0 : (size_t)c->plan_index];
    describe_access(p, c->op, c->tensor, buf, n);
}

void report_access_suggestion(const tlsan_report *r, const access_cause *c, char *buf, size_t n)
{
    char acc[500];
    report_access_text(r, c, acc, sizeof acc);
    if (c->previous_step < 0)
        snprintf(buf, n,
                 "the planner probably missed that %s, its only access after the graph-input "
                 "step; it freed the bytes after step -1 and reused them",
                 acc);
    else
        snprintf(buf, n,
                 "the planner probably missed that %s; it freed the bytes after step %" PRId64
                 " and reused them",
                 acc, c->previous_step);
}

size_t report_count_effects(const tlsan_report *r, size_t cause)
{
    /* only a declared lifetime is a cause: a report of many findings asks this of each */
    if (cause >= r->n_findings || r->findings[cause].kind != TLSAN_KIND_LIFETIME_TOO_SHORT)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < r->n_findings; i++)
        n += r->findings[i].cause == (int64_t)cause;
    return n;
}
