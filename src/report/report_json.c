/* report_json: one JSON object per input on one line (plan-format.md, "Findings"), and the
 * yajl_gen helpers the SARIF writer shares. */
#include "core/utf8.h"
#include "report/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

/* ---- generator helpers ---- */

static void print_to_file(void *ctx, const char *s, size_t len)
{
    report_gen *j = ctx;
    if (len && fwrite(s, 1, len, j->out) != len)
        j->failed = true;
}

int report_gen_init(report_gen *j, FILE *out)
{
    j->out = out;
    j->failed = false;
    j->g = yajl_gen_alloc(NULL);
    if (!j->g)
        return -1;
    /* Validation lets report_gen_str() notice bytes that are not UTF-8 (names given
     * through the builder API are not checked) instead of writing invalid JSON. */
    yajl_gen_config(j->g, yajl_gen_print_callback, print_to_file, (void *)j);
    yajl_gen_config(j->g, yajl_gen_validate_utf8, 1);
    return 0;
}

int report_gen_finish(report_gen *j)
{
    if (j->g)
        yajl_gen_free(j->g);
    j->g = NULL;
    if (ferror(j->out))
        j->failed = true;
    return j->failed ? -1 : 0;
}

static void check(report_gen *j, yajl_gen_status st)
{
    if (st != yajl_gen_status_ok)
        j->failed = true;
}

void report_gen_str(report_gen *j, const char *s)
{
    if (!s)
        s = "";
    size_t len = strlen(s);
    yajl_gen_status st = yajl_gen_invalid_string;
    if (utf8_valid_text(s, len))
        st = yajl_gen_string(j->g, (const unsigned char *)s, len);
    if (st != yajl_gen_invalid_string) {
        check(j, st);
        return;
    }
    /* Not UTF-8: keep the ASCII bytes, mark the others, so the output stays valid. */
    char *copy = malloc(len + 1);
    if (!copy) {
        j->failed = true;
        return;
    }
    for (size_t i = 0; i < len; i++)
        copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    check(j, yajl_gen_string(j->g, (const unsigned char *)copy, len));
    free(copy);
}

void report_gen_i64(report_gen *j, int64_t v)
{
    check(j, yajl_gen_integer(j->g, (long long)v));
}

void report_gen_u64(report_gen *j, uint64_t v)
{
    /* Printed by hand: yajl_gen_integer takes a signed long long. */
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%" PRIu64, v);
    check(j, yajl_gen_number(j->g, buf, (size_t)n));
}

void report_gen_bool(report_gen *j, bool v)
{
    check(j, yajl_gen_bool(j->g, v));
}

void report_gen_open_map(report_gen *j)
{
    check(j, yajl_gen_map_open(j->g));
}

void report_gen_close_map(report_gen *j)
{
    check(j, yajl_gen_map_close(j->g));
}

void report_gen_open_array(report_gen *j)
{
    check(j, yajl_gen_array_open(j->g));
}

void report_gen_close_array(report_gen *j)
{
    check(j, yajl_gen_array_close(j->g));
}

void report_gen_pair_i64(report_gen *j, int64_t a, int64_t b)
{
    report_gen_open_array(j);
    report_gen_i64(j, a);
    report_gen_i64(j, b);
    report_gen_close_array(j);
}

void report_gen_pair_u64(report_gen *j, uint64_t a, uint64_t b)
{
    report_gen_open_array(j);
    report_gen_u64(j, a);
    report_gen_u64(j, b);
    report_gen_close_array(j);
}

/* A ratio with four decimals: yajl_gen_double prints 20 significant digits. */
static void gen_ratio(report_gen *j, double v)
{
    if (!isfinite(v)) {
        check(j, yajl_gen_null(j->g));
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.4f", v);
    size_t n = strlen(buf);
    while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
        buf[--n] = '\0';
    check(j, yajl_gen_number(j->g, buf, n));
}

/* ---- findings ---- */

/* Does an earlier tensor of the finding have the same name (keys must not repeat)? */
static bool repeated_name(const tlsan_finding *f, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (strcmp(f->tensors[k], f->tensors[i]) == 0)
            return true;
    return false;
}

void report_gen_plan_pair(report_gen *j, const tlsan_report *r, const tlsan_finding *f,
                          const char *label)
{
    if (f->other_plan_index < 0 || (uint64_t)f->other_plan_index >= r->n_plans)
        return;
    char buf[48];
    const char *other = report_plan_label(r, (size_t)f->other_plan_index, buf, sizeof buf);
    report_gen_str(j, "plans");
    report_gen_open_array(j);
    report_gen_str(j, label ? label : "plans[0]");
    report_gen_str(j, other ? other : "");
    report_gen_close_array(j);
}

/* "unordered_ops", "step_labels", "cause", "effects", "suggestion": what the text report
 * explains, for programs (report_explain.c). */
static void gen_explanations(report_gen *j, const tlsan_report *r, const tlsan_finding *f)
{
    const tlsan_plan *p = report_plan_of(r, f);
    if (f->n_unordered_ops) {
        report_gen_str(j, "unordered_ops");
        report_gen_open_array(j);
        for (size_t i = 0; i < f->n_unordered_ops; i++)
            report_gen_str(j, tlsan_plan_op_name(p, (size_t)f->unordered_ops[i]));
        report_gen_close_array(j);
        report_gen_str(j, "unordered_count");
        report_gen_u64(j, f->n_unordered_total);
    }
    step_label labels[8];
    size_t n = report_step_labels(r, f, labels, 8);
    if (n) {
        report_gen_str(j, "step_labels");
        report_gen_open_array(j);
        for (size_t i = 0; i < n; i++) {
            char text[600];
            report_step_text(p, f->tensors[labels[i].tensor], &labels[i], text, sizeof text);
            report_gen_open_map(j);
            report_gen_str(j, "step");
            report_gen_i64(j, labels[i].step);
            report_gen_str(j, "tensor");
            report_gen_str(j, f->tensors[labels[i].tensor]);
            report_gen_str(j, "label");
            report_gen_str(j, report_step_kind_name(labels[i].kind));
            if (labels[i].kind == STEP_LOOP) {
                report_gen_str(j, "loop");
                report_gen_str(j, plan_str(p, p->loops[labels[i].loop].name));
            } else {
                report_gen_str(j, "flag");
                report_gen_str(j, labels[i].flag);
                report_gen_str(j, "flag_on");
                report_gen_str(j, labels[i].bearer);
            }
            report_gen_str(j, "text");
            report_gen_str(j, text);
            report_gen_close_map(j);
        }
        report_gen_close_array(j);
    }
    if (f->cause >= 0 && (size_t)f->cause < r->n_findings) {
        const tlsan_finding *c = &r->findings[f->cause];
        report_gen_str(j, "cause");
        report_gen_open_map(j);
        report_gen_str(j, "finding");
        report_gen_i64(j, f->cause);
        report_gen_str(j, "kind");
        report_gen_str(j, tlsan_kind_name(c->kind));
        report_gen_str(j, "tensor");
        report_gen_str(j, c->tensors[0]);
        char why[1200];
        report_suggestion(r, c, why, sizeof why);
        if (why[0]) {
            report_gen_str(j, "suggestion");
            report_gen_str(j, why);
        }
        report_gen_close_map(j);
    }
    size_t idx = (size_t)(f - r->findings);
    const access_cause *ac = idx < r->n_findings ? report_access_cause_of(r, idx) : NULL;
    if (ac) {
        char text[1200];
        report_gen_str(j, "cause");
        report_gen_open_map(j);
        report_gen_str(j, "access");
        report_access_text(r, ac, text, sizeof text);
        report_gen_str(j, text);
        report_gen_str(j, "op");
        report_gen_str(j, tlsan_plan_op_name(p, ac->op));
        report_gen_str(j, "step");
        report_gen_i64(j, ac->op);
        report_gen_str(j, "tensor");
        report_gen_str(j, plan_str(p, p->tensors[ac->tensor].name));
        report_gen_str(j, "previous_step");
        report_gen_i64(j, ac->previous_step);
        report_gen_str(j, "findings");
        report_gen_open_array(j);
        for (size_t i = 0; i < r->n_findings; i++)
            if (report_access_cause_of(r, i) == ac)
                report_gen_u64(j, i);
        report_gen_close_array(j);
        report_access_suggestion(r, ac, text, sizeof text);
        report_gen_str(j, "suggestion");
        report_gen_str(j, text);
        report_gen_close_map(j);
    }
    if (idx < r->n_findings && report_count_effects(r, idx)) {
        report_gen_str(j, "effects");
        report_gen_open_array(j);
        for (size_t i = 0; i < r->n_findings; i++)
            if (r->findings[i].cause == (int64_t)idx)
                report_gen_u64(j, i);
        report_gen_close_array(j);
    }
    char hint[1200];
    report_suggestion(r, f, hint, sizeof hint);
    if (hint[0]) {
        report_gen_str(j, "suggestion");
        report_gen_str(j, hint);
    }
}

void report_gen_finding_details(report_gen *j, const tlsan_report *r, const tlsan_finding *f)
{
    const tlsan_plan *p = report_plan_of(r, f);
    if (f->has_steps) {
        report_gen_str(j, "steps");
        report_gen_pair_i64(j, f->steps[0], f->steps[1]);
    }
    if (f->has_bytes) {
        report_gen_str(j, "bytes");
        report_gen_pair_u64(j, f->bytes[0], f->bytes[1]);
    }
    if (f->n_path) {
        report_gen_str(j, "path");
        report_gen_open_map(j);
        for (size_t i = 0; i < f->n_path; i++) {
            report_gen_str(j, f->path[i].if_name);
            report_gen_str(j, f->path[i].arm);
        }
        report_gen_close_map(j);
    }
    size_t n_life = f->n_tensors < 2 ? f->n_tensors : 2;
    if (f->has_lifetimes && n_life) {
        report_gen_str(j, "lifetimes");
        report_gen_open_map(j);
        for (size_t i = 0; i < n_life; i++) {
            if (repeated_name(f, i))
                continue;
            report_gen_str(j, f->tensors[i]);
            report_gen_pair_i64(j, f->lifetimes[i][0], f->lifetimes[i][1]);
        }
        report_gen_close_map(j);
    }
    const int64_t op_idx[2] = {f->op_index, f->op_index2};
    bool any_op = false;
    for (int k = 0; k < 2; k++) {
        if (op_idx[k] < 0 || (uint64_t)op_idx[k] >= p->n_ops)
            continue;
        if (!any_op) {
            report_gen_str(j, "ops");
            report_gen_open_array(j);
            any_op = true;
        }
        report_gen_str(j, tlsan_plan_op_name(p, (size_t)op_idx[k]));
    }
    if (any_op)
        report_gen_close_array(j);
    if (f->approximate) {
        report_gen_str(j, "approximate");
        report_gen_bool(j, true);
    }
    if (f->repeats > 1) {
        report_gen_str(j, "repeats");
        report_gen_open_map(j);
        report_gen_str(j, "count");
        report_gen_u64(j, f->repeats);
        report_gen_str(j, "first_run");
        report_gen_i64(j, f->first_run);
        report_gen_str(j, "last_run");
        report_gen_i64(j, f->last_run);
        report_gen_close_map(j);
    }
    gen_explanations(j, r, f);
}

/* "stacks": {tensor: [frames]} for the finding's tensors that have one in its plan. */
static void gen_stacks(report_gen *j, const tlsan_report *r, const tlsan_finding *f)
{
    const tlsan_plan *p = report_plan_of(r, f);
    bool open = false;
    for (size_t i = 0; i < f->n_tensors; i++) {
        uint32_t t = report_tensor_of(r, f, i, p);
        if (t == NO_INDEX || tensor_x(p, &p->tensors[t])->n_stack == 0 || repeated_name(f, i))
            continue;
        if (!open) {
            report_gen_str(j, "stacks");
            report_gen_open_map(j);
            open = true;
        }
        const tensor_extra *tx = tensor_x(p, &p->tensors[t]);
        report_gen_str(j, f->tensors[i]);
        report_gen_open_array(j);
        for (uint32_t k = 0; k < tx->n_stack; k++)
            report_gen_str(j, plan_str(p, p->id_pool.v[tx->stack_start + k]));
        report_gen_close_array(j);
    }
    if (open)
        report_gen_close_map(j);
}

void report_gen_finding_head(report_gen *j, const char *kind, const char *severity,
                             const char *const *tensors, size_t n_tensors, const char *message)
{
    report_gen_str(j, "kind");
    report_gen_str(j, kind);
    report_gen_str(j, "severity");
    report_gen_str(j, severity);
    report_gen_str(j, "tensors");
    report_gen_open_array(j);
    for (size_t i = 0; i < n_tensors; i++)
        report_gen_str(j, tensors[i]);
    report_gen_close_array(j);
    report_gen_str(j, "message");
    report_gen_str(j, message);
}

static void gen_finding(report_gen *j, const tlsan_report *r, const tlsan_finding *f)
{
    char buf[48];
    report_gen_open_map(j);
    report_gen_finding_head(j, tlsan_kind_name(f->kind),
                            tlsan_severity_name(tlsan_kind_severity(f->kind)), f->tensors,
                            f->n_tensors, f->message);
    size_t pi = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    const char *label = report_plan_label(r, pi, buf, sizeof buf);
    if (label) {
        report_gen_str(j, "plan");
        report_gen_str(j, label);
    }
    report_gen_plan_pair(j, r, f, label);
    report_gen_finding_details(j, r, f);
    gen_stacks(j, r, f);
    report_gen_close_map(j);
}

/* The stats of one plan: {"tensors", "ops", "arenas": {NAME: {...}}}, inside an open map. */
static void gen_plan_stats(report_gen *j, const plan_stats *s)
{
    report_gen_str(j, "tensors");
    report_gen_u64(j, s->n_tensors);
    report_gen_str(j, "ops");
    report_gen_u64(j, s->n_ops);
    report_gen_str(j, "arenas");
    report_gen_open_map(j);
    for (size_t a = 0; a < s->n_arenas; a++) {
        const tlsan_arena_stats *as = &s->arenas[a];
        report_gen_str(j, as->name);
        report_gen_open_map(j);
        report_gen_str(j, "bytes");
        report_gen_u64(j, as->bytes);
        report_gen_str(j, "required_bytes");
        report_gen_u64(j, as->required_bytes);
        report_gen_str(j, "lower_bound_bytes");
        report_gen_u64(j, as->lower_bound_bytes);
        report_gen_str(j, "efficiency");
        gen_ratio(j, as->efficiency);
        if (as->approximate) {
            report_gen_str(j, "approximate");
            report_gen_bool(j, true);
        }
        report_gen_close_map(j);
    }
    report_gen_close_map(j);
    if (s->paths_approximate) {
        report_gen_str(j, "paths_approximate");
        report_gen_bool(j, true);
    }
}

int report_write_json(const tlsan_report *r, const char *label, FILE *out)
{
    report_gen j;
    if (!r || !out || report_gen_init(&j, out) != 0)
        return -1;
    char buf[48];
    report_gen_open_map(&j);
    report_gen_str(&j, "file");
    report_gen_str(&j, label);
    if (!r->is_cache && r->n_plans == 1 && tlsan_plan_name(r->plans[0])) {
        report_gen_str(&j, "plan");
        report_gen_str(&j, tlsan_plan_name(r->plans[0]));
    }
    report_gen_str(&j, "findings");
    report_gen_open_array(&j);
    for (size_t i = 0; i < r->n_findings; i++)
        gen_finding(&j, r, &r->findings[i]);
    report_gen_runtime_findings(&j, r);
    report_gen_close_array(&j);
    report_gen_str(&j, "stats");
    report_gen_open_map(&j);
    if (r->is_cache) {
        report_gen_str(&j, "plans");
        report_gen_open_array(&j);
        for (size_t p = 0; p < r->n_plans; p++) {
            report_gen_open_map(&j);
            report_gen_str(&j, "plan");
            report_gen_str(&j, report_plan_label(r, p, buf, sizeof buf));
            gen_plan_stats(&j, &r->stats[p]);
            report_gen_close_map(&j);
        }
        report_gen_close_array(&j);
    } else if (r->n_plans > 0) {
        gen_plan_stats(&j, &r->stats[0]);
    }
    report_gen_close_map(&j);
    report_gen_close_map(&j);
    if (fputc('\n', out) == EOF)
        j.failed = true;
    return report_gen_finish(&j);
}

int report_write_json_error(const char *label, const tlsan_error *err, FILE *out)
{
    report_gen j;
    if (!out || report_gen_init(&j, out) != 0)
        return -1;
    report_gen_open_map(&j);
    report_gen_str(&j, "file");
    report_gen_str(&j, label);
    report_gen_str(&j, "error");
    report_gen_open_map(&j);
    report_gen_str(&j, "where");
    report_gen_str(&j, err ? err->where : "");
    report_gen_str(&j, "line");
    report_gen_i64(&j, err ? err->line : 0);
    report_gen_str(&j, "column");
    report_gen_i64(&j, err ? err->column : 0);
    report_gen_str(&j, "what");
    report_gen_str(&j, err && err->what[0] ? err->what : "invalid input");
    report_gen_close_map(&j);
    report_gen_close_map(&j);
    if (fputc('\n', out) == EOF)
        j.failed = true;
    return report_gen_finish(&j);
}
