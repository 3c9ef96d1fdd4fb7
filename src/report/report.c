/* report: the finding kinds, building and sorting reports, and the public accessors. */
#include "report/report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- kinds: every table below is generated from TLSAN_FINDING_KINDS ---- */

static const char *const kind_names[TLSAN_KIND_COUNT_] = {
#define TLSAN_X_NAME(e, name, sev, finder, desc) [TLSAN_KIND_##e] = name,
    TLSAN_FINDING_KINDS(TLSAN_X_NAME)
#undef TLSAN_X_NAME
};

static const char *const kind_descriptions[TLSAN_KIND_COUNT_] = {
#define TLSAN_X_DESC(e, name, sev, finder, desc) [TLSAN_KIND_##e] = desc,
    TLSAN_FINDING_KINDS(TLSAN_X_DESC)
#undef TLSAN_X_DESC
};

static const tlsan_severity kind_severities[TLSAN_KIND_COUNT_] = {
#define TLSAN_X_SEV(e, name, sev, finder, desc) [TLSAN_KIND_##e] = sev,
    TLSAN_FINDING_KINDS(TLSAN_X_SEV)
#undef TLSAN_X_SEV
};

static const tlsan_finder kind_finders[TLSAN_KIND_COUNT_] = {
#define TLSAN_X_FINDER(e, name, sev, finder, desc) [TLSAN_KIND_##e] = finder,
    TLSAN_FINDING_KINDS(TLSAN_X_FINDER)
#undef TLSAN_X_FINDER
};

/* The checker's kinds must come first: SARIF from `tlsan check` lists them as rules
 * 0..TLSAN_KIND_CHECKER_COUNT_-1 and a result's ruleIndex is its kind. */
#define TLSAN_X_ORDER(e, name, sev, finder, desc)                                                  \
    _Static_assert(((finder) == TLSAN_FOUND_BY_CHECKER) ==                                         \
                       (TLSAN_KIND_##e < TLSAN_KIND_CHECKER_COUNT_),                               \
                   "the checker's kinds come first in TLSAN_FINDING_KINDS: " name);
TLSAN_FINDING_KINDS(TLSAN_X_ORDER)
#undef TLSAN_X_ORDER

const char *tlsan_kind_name(tlsan_kind kind)
{
    return (unsigned)kind < TLSAN_KIND_COUNT_ ? kind_names[kind] : "unknown";
}

const char *tlsan_kind_description(tlsan_kind kind)
{
    return (unsigned)kind < TLSAN_KIND_COUNT_ ? kind_descriptions[kind] : "unknown finding kind";
}

tlsan_severity tlsan_kind_severity(tlsan_kind kind)
{
    return (unsigned)kind < TLSAN_KIND_COUNT_ ? kind_severities[kind] : TLSAN_SEVERITY_ERROR;
}

tlsan_finder tlsan_kind_finder(tlsan_kind kind)
{
    return (unsigned)kind < TLSAN_KIND_COUNT_ ? kind_finders[kind] : (tlsan_finder)0;
}

tlsan_kind tlsan_kind_from_name(const char *name)
{
    for (int k = 0; name && k < TLSAN_KIND_COUNT_; k++)
        if (strcmp(kind_names[k], name) == 0)
            return (tlsan_kind)k;
    return TLSAN_KIND_COUNT_;
}

/* ---- building ---- */

tlsan_report *report_new(const tlsan_plan *const *plans, size_t n_plans, bool is_cache)
{
    tlsan_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    size_t n = n_plans ? n_plans : 1;
    r->plans = calloc(n, sizeof *r->plans);
    r->stats = calloc(n, sizeof *r->stats);
    if (!r->plans || !r->stats) {
        free(r->plans);
        free(r->stats);
        free(r);
        return NULL;
    }
    if (n_plans)
        memcpy(r->plans, plans, n_plans * sizeof *plans);
    r->n_plans = n_plans;
    r->is_cache = is_cache;
    return r;
}

/* A finding's copies live in one block: the tensors array, then the path, then the
 * message. `tensors` always points at the block's start so that freeing is one call. */
int report_add(tlsan_report *r, const tlsan_finding *f, const char *fmt, ...)
{
    if (!r || !f || !fmt)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int msg_len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (msg_len < 0)
        return -1;
    if (f->n_tensors > SIZE_MAX / 4 / sizeof(char *) ||
        f->n_path > SIZE_MAX / 4 / sizeof(tlsan_cond))
        return -1;
    size_t tensors_bytes = f->n_tensors * sizeof(char *);
    size_t path_bytes = f->n_path * sizeof(tlsan_cond);
    size_t n_ops =
        f->n_unordered_ops < TLSAN_MAX_LISTED_OPS ? f->n_unordered_ops : TLSAN_MAX_LISTED_OPS;
    size_t ops_bytes = n_ops * sizeof(int64_t);
    size_t total = tensors_bytes + path_bytes + ops_bytes + (size_t)msg_len + 1;

    if (r->n_findings == r->cap_findings &&
        vec_reserve_((void **)&r->findings, &r->cap_findings, r->n_findings, 1,
                     sizeof *r->findings) != 0)
        return -1;
    char *block = malloc(total);
    if (!block)
        return -1;
    const char **tensors = (const char **)(void *)block;
    tlsan_cond *path = (tlsan_cond *)(void *)(block + tensors_bytes);
    int64_t *ops = (int64_t *)(void *)(block + tensors_bytes + path_bytes);
    char *message = block + tensors_bytes + path_bytes + ops_bytes;
    if (n_ops)
        memcpy(ops, f->unordered_ops, ops_bytes);
    if (f->n_tensors)
        memcpy(tensors, f->tensors, tensors_bytes);
    if (f->n_path)
        memcpy(path, f->path, path_bytes);
    va_start(ap, fmt);
    vsnprintf(message, (size_t)msg_len + 1, fmt, ap);
    va_end(ap);

    tlsan_finding *dst = &r->findings[r->n_findings++];
    *dst = *f;
    dst->tensors = tensors;
    dst->path = f->n_path ? path : NULL;
    dst->message = message;
    dst->unordered_ops = n_ops ? ops : NULL;
    dst->n_unordered_ops = n_ops;
    dst->cause = -1; /* linked once the report is sorted */
    return 0;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_findings(const void *pa, const void *pb)
{
    const tlsan_finding *a = pa, *b = pb;
    int c = cmp_i64(a->plan_index, b->plan_index);
    if (c)
        return c;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    size_t n = a->n_tensors < b->n_tensors ? a->n_tensors : b->n_tensors;
    for (size_t i = 0; i < n; i++) {
        c = strcmp(a->tensors[i], b->tensors[i]);
        if (c)
            return c;
    }
    if (a->n_tensors != b->n_tensors)
        return a->n_tensors < b->n_tensors ? -1 : 1;
    /* Ties (a pair reported under one kind twice never happens, but cache collisions may
     * name the same tensors for several plan pairs): keep the order total anyway. */
    if ((c = cmp_i64(a->other_plan_index, b->other_plan_index)) != 0)
        return c;
    return strcmp(a->message, b->message);
}

int report_sort(tlsan_report *r)
{
    if (r && r->n_findings > 1)
        qsort(r->findings, r->n_findings, sizeof *r->findings, cmp_findings);
    return r ? report_link_causes(r) : 0;
}

/* ---- one finding per cause across repeats ---- */

/* The length of name without a trailing "#k" (k a positive decimal number), and k (1 when
 * there is none): replay's name for the k-th tenant of NAME. */
static size_t base_length(const char *name, int64_t *run)
{
    size_t n = strlen(name), d = n;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    *run = 1;
    if (d == n || d == 0 || name[d - 1] != '#' || name[d] == '0' || n - d > 18)
        return n;
    *run = strtoll(name + d, NULL, 10);
    return d - 1;
}

/* A finding with what grouping compares, computed once: the length of its (first two)
 * names without "#k", its run, its report position. */
typedef struct repeat_key {
    const tlsan_finding *f;
    size_t base_len[2];
    int64_t run;
    size_t index;
} repeat_key;

/* Whether the keys are of one group: same plan, kind and names without "#k" (a
 * cache-key-collision names tensors of two plans: never a repeat). */
static int cmp_group(const repeat_key *x, const repeat_key *y)
{
    const tlsan_finding *a = x->f, *b = y->f;
    int c = cmp_i64(a->plan_index, b->plan_index);
    if (c)
        return c;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->n_tensors != b->n_tensors)
        return a->n_tensors < b->n_tensors ? -1 : 1;
    if (a->kind == TLSAN_KIND_CACHE_KEY_COLLISION || a->n_tensors > 2)
        return cmp_i64((int64_t)x->index, (int64_t)y->index);
    for (size_t i = 0; i < a->n_tensors; i++) {
        size_t la = x->base_len[i], lb = y->base_len[i];
        c = strncmp(a->tensors[i], b->tensors[i], la < lb ? la : lb);
        if (c)
            return c;
        if (la != lb)
            return la < lb ? -1 : 1;
    }
    return 0;
}

/* By group, then run, then report position. */
static int cmp_repeat(const void *px, const void *py)
{
    const repeat_key *x = px, *y = py;
    int c = cmp_group(x, y);
    if (c)
        return c;
    if ((c = cmp_i64(x->run, y->run)) != 0)
        return c;
    return cmp_i64((int64_t)x->index, (int64_t)y->index);
}

int report_group_repeats(tlsan_report *r)
{
    size_t n = r->n_findings;
    if (n == 0)
        return 0;
    repeat_key *keys = malloc(n * sizeof *keys);
    bool *dropped = calloc(n, sizeof *dropped);
    if (!keys || !dropped) {
        free(keys);
        free(dropped);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        tlsan_finding *f = &r->findings[i];
        repeat_key *k = &keys[i];
        *k = (repeat_key){.f = f, .run = 1, .index = i};
        for (size_t t = 0; t < f->n_tensors && t < 2; t++) {
            int64_t run;
            k->base_len[t] = base_length(f->tensors[t], &run);
            k->run = run > k->run ? run : k->run;
        }
        f->repeats = 1;
        f->first_run = f->last_run = k->run;
    }
    qsort(keys, n, sizeof *keys, cmp_repeat);
    for (size_t g = 0; g < n;) {
        size_t e = g + 1;
        while (e < n && cmp_group(&keys[g], &keys[e]) == 0)
            e++;
        tlsan_finding *head = &r->findings[keys[g].index];
        head->repeats = e - g;
        head->last_run = keys[e - 1].run; /* the keys of a group are sorted by run */
        for (size_t k = g + 1; k < e; k++)
            dropped[keys[k].index] = true;
        g = e;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (dropped[i]) {
            free((void *)(uintptr_t)r->findings[i].tensors);
            continue;
        }
        r->findings[kept++] = r->findings[i];
    }
    r->n_findings = kept;
    free(keys);
    free(dropped);
    return report_link_causes(r);
}

const char *report_plan_label(const tlsan_report *r, size_t i, char *buf, size_t buf_bytes)
{
    if (i < r->n_plans) {
        const char *name = tlsan_plan_name(r->plans[i]);
        if (name)
            return name;
    }
    if (!r->is_cache)
        return NULL;
    snprintf(buf, buf_bytes, "plans[%zu]", i);
    return buf;
}

uint32_t report_tensor_of(const tlsan_report *r, const tlsan_finding *f, size_t i,
                          const tlsan_plan *plan)
{
    if (i >= f->n_tensors)
        return NO_INDEX;
    if (plan == report_plan_of(r, f) && i < 2 && f->tensor_index[i] >= 0 &&
        (uint64_t)f->tensor_index[i] < plan->n_tensors)
        return (uint32_t)f->tensor_index[i];
    const char *name = f->tensors[i];
    uint32_t id = strtab_find(&plan->strings, name, strlen(name));
    return plan_lookup(&plan->tensor_by_name, id);
}

/* ---- public accessors ---- */

void tlsan_report_free(tlsan_report *report)
{
    if (!report)
        return;
    for (size_t i = 0; i < report->n_findings; i++)
        free((void *)(uintptr_t)report->findings[i].tensors);
    for (size_t i = 0; i < report->n_plans; i++)
        free(report->stats[i].arenas);
    free(report->findings);
    free(report->access_causes);
    free(report->access_cause_of);
    free(report->stats);
    free(report->plans);
    free(report);
}

size_t tlsan_report_count(const tlsan_report *report)
{
    return report ? report->n_findings : 0;
}

const tlsan_finding *tlsan_report_finding(const tlsan_report *report, size_t index)
{
    return report && index < report->n_findings ? &report->findings[index] : NULL;
}

size_t tlsan_report_count_kind(const tlsan_report *report, tlsan_kind kind)
{
    size_t n = 0;
    if (report)
        for (size_t i = 0; i < report->n_findings; i++)
            n += report->findings[i].kind == kind;
    return n;
}

size_t tlsan_report_n_arena_stats(const tlsan_report *report, size_t plan_index)
{
    return report && plan_index < report->n_plans ? report->stats[plan_index].n_arenas : 0;
}

const tlsan_arena_stats *tlsan_report_arena_stats(const tlsan_report *report, size_t plan_index,
                                                  size_t arena_index)
{
    if (!report || plan_index >= report->n_plans ||
        arena_index >= report->stats[plan_index].n_arenas)
        return NULL;
    return &report->stats[plan_index].arenas[arena_index];
}

tlsan_status tlsan_report_write(const tlsan_report *report, tlsan_format format, const char *label,
                                FILE *out)
{
    if (!report || !out)
        return TLSAN_ERR_ARG;
    if (!label)
        label = "<plan>";
    int rc;
    switch (format) {
    case TLSAN_FORMAT_TEXT: {
        report_text_options opt = {0};
        rc = report_write_text(report, label, &opt, out);
        break;
    }
    case TLSAN_FORMAT_JSON:
        rc = report_write_json(report, label, out);
        break;
    case TLSAN_FORMAT_SARIF: {
        const tlsan_report *reports[1] = {report};
        const char *labels[1] = {label};
        const tlsan_error *errors[1] = {NULL};
        rc = report_write_sarif(reports, labels, errors, 1, out);
        break;
    }
    default:
        return TLSAN_ERR_ARG;
    }
    return rc == 0 ? TLSAN_OK : TLSAN_ERR_IO;
}
