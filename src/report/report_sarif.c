/* report_sarif: SARIF 2.1.0 output, so that CI systems can show findings next to the plan
 * files: one run, one rule per finding kind, one result per finding. */
#include "report/report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/version.h"

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"

/* SARIF's levels "error" and "warning" are tlsan's severity names. */
static const char *level_of(tlsan_kind kind)
{
    return tlsan_severity_name(tlsan_kind_severity(kind));
}

/* A file label as a URI reference: absolute paths become file:// URIs, and every byte
 * outside the unreserved set and '/' is percent-encoded. The caller frees the result; NULL when out
 * of memory. */
static char *label_uri(const char *label)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *prefix = label[0] == '/' ? "file://" : "";
    size_t len = strlen(label);
    char *uri = malloc(strlen(prefix) + 3 * len + 1);
    if (!uri)
        return NULL;
    char *o = uri + strlen(prefix);
    memcpy(uri, prefix, strlen(prefix));
    for (const unsigned char *s = (const unsigned char *)label; *s; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
            strchr("-._~/", *s)) {
            *o++ = (char)*s;
        } else {
            *o++ = '%';
            *o++ = hex[*s >> 4];
            *o++ = hex[*s & 15];
        }
    }
    *o = '\0';
    return uri;
}

static void gen_text(report_gen *j, const char *key, const char *text)
{
    report_gen_str(j, key);
    report_gen_open_map(j);
    report_gen_str(j, "text");
    report_gen_str(j, text);
    report_gen_close_map(j);
}

/* "physicalLocation": the file, and the region starting at line:column when line > 0. */
static void gen_physical_location(report_gen *j, const char *uri, int line, int column)
{
    report_gen_str(j, "physicalLocation");
    report_gen_open_map(j);
    report_gen_str(j, "artifactLocation");
    report_gen_open_map(j);
    report_gen_str(j, "uri");
    report_gen_str(j, uri);
    report_gen_close_map(j);
    if (line > 0) {
        report_gen_str(j, "region");
        report_gen_open_map(j);
        report_gen_str(j, "startLine");
        report_gen_i64(j, line);
        report_gen_str(j, "startColumn");
        report_gen_i64(j, column);
        report_gen_close_map(j);
    }
    report_gen_close_map(j);
}

static void gen_artifact_location(report_gen *j, const char *uri)
{
    gen_physical_location(j, uri, 0, 0);
}

/* The index of the plan that holds a finding's tensor i: the finding's plan, or for a
 * cache-key-collision on a tensor only the second plan has, that plan. */
static size_t holder_plan(const tlsan_report *r, const tlsan_finding *f, size_t i)
{
    size_t pi = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    size_t other = (size_t)f->other_plan_index;
    if (f->other_plan_index >= 0 && other < r->n_plans &&
        report_tensor_of(r, f, i, r->plans[pi]) == NO_INDEX)
        return other;
    return pi;
}

/* Where a finding's tensor i begins in the object of plan `pi` (line 0 when unknown). */
static void tensor_pos_in(const tlsan_report *r, const tlsan_finding *f, size_t i, size_t pi,
                          int *line, int *column)
{
    const tlsan_plan *p = r->plans[pi];
    uint32_t t = report_tensor_of(r, f, i, p);
    *line = *column = 0;
    if (t != NO_INDEX)
        tlsan_plan_tensor_source(p, t, line, column);
}

/* Where a finding's tensor i begins in the plan file (line 0 when unknown). */
static void tensor_pos(const tlsan_report *r, const tlsan_finding *f, size_t i, int *line,
                       int *column)
{
    tensor_pos_in(r, f, i, holder_plan(r, f, i), line, column);
}

/* One related location: an id, the place and a message. */
static void gen_related(report_gen *j, int64_t *id, const char *uri, int line, int column,
                        const char *text)
{
    report_gen_open_map(j);
    report_gen_str(j, "id");
    report_gen_i64(j, (*id)++);
    gen_physical_location(j, uri, line, column);
    gen_text(j, "message", text);
    report_gen_close_map(j);
}

/* The other tensor, the ops involved, and the cause (and the findings that follow from a
 * cause), each where it is in the plan file. */
static void gen_related_locations(report_gen *j, const tlsan_report *r, const tlsan_finding *f,
                                  const char *uri)
{
    const tlsan_plan *p = report_plan_of(r, f);
    char text[1400];
    int line, column;
    int64_t id = 0;
    report_gen_str(j, "relatedLocations");
    report_gen_open_array(j);
    size_t own = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    for (size_t i = 1; i < f->n_tensors && i < 2; i++) {
        tensor_pos(r, f, i, &line, &column);
        size_t holder = holder_plan(r, f, i);
        char buf[48];
        const char *label = holder == own ? NULL : report_plan_label(r, holder, buf, sizeof buf);
        snprintf(text, sizeof text, "tensor '%s'%s%s%s", f->tensors[i], label ? " in plan '" : "",
                 label ? label : "", label ? "'" : "");
        gen_related(j, &id, uri, line, column, text);
    }
    /* A cache-key-collision: each differing tensor the second plan also has, there. */
    size_t second = (size_t)f->other_plan_index;
    for (size_t i = 0; f->other_plan_index >= 0 && second < r->n_plans && i < f->n_tensors; i++) {
        if (holder_plan(r, f, i) == second)
            continue; /* the result's own location already points into the second plan */
        tensor_pos_in(r, f, i, second, &line, &column);
        if (line == 0)
            continue;
        char buf[48];
        const char *label = report_plan_label(r, second, buf, sizeof buf);
        snprintf(text, sizeof text, "tensor '%s' in plan '%s'", f->tensors[i], label ? label : "");
        gen_related(j, &id, uri, line, column, text);
    }
    const int64_t ops[2] = {f->op_index, f->op_index2};
    for (int k = 0; k < 2; k++) {
        if (ops[k] < 0 || (uint64_t)ops[k] >= tlsan_plan_n_ops(p) || (k && ops[1] == ops[0]))
            continue;
        line = column = 0;
        tlsan_plan_op_source(p, (size_t)ops[k], &line, &column);
        snprintf(text, sizeof text, "op '%s' (step %" PRId64 ")",
                 tlsan_plan_op_name(p, (size_t)ops[k]), ops[k]);
        gen_related(j, &id, uri, line, column, text);
    }
    if (f->cause >= 0 && (size_t)f->cause < r->n_findings) {
        const tlsan_finding *c = &r->findings[f->cause];
        char hint[1200];
        report_suggestion(r, c, hint, sizeof hint);
        tensor_pos(r, c, 0, &line, &column);
        snprintf(text, sizeof text, "follows from %s on '%s'%s%s", tlsan_kind_name(c->kind),
                 c->tensors[0], hint[0] ? ": " : "", hint);
        gen_related(j, &id, uri, line, column, text);
    }
    size_t idx = (size_t)(f - r->findings);
    const access_cause *ac = report_access_cause_of(r, idx);
    if (ac) {
        char acc[600], hint[1200];
        report_access_text(r, ac, acc, sizeof acc);
        report_access_suggestion(r, ac, hint, sizeof hint);
        line = column = 0;
        tlsan_plan_op_source(p, ac->op, &line, &column);
        char why[2048];
        snprintf(why, sizeof why, "follows from %s, its last access: %s", acc, hint);
        gen_related(j, &id, uri, line, column, why);
        for (size_t i = 0; i < r->n_findings; i++) {
            const tlsan_finding *g = &r->findings[i];
            if (i == idx || report_access_cause_of(r, i) != ac)
                continue;
            size_t other = strcmp(g->tensors[0], plan_str(p, p->tensors[ac->tensor].name)) == 0;
            tensor_pos(r, g, other, &line, &column);
            snprintf(text, sizeof text, "with the same cause: %s between '%s' and '%s'",
                     tlsan_kind_name(g->kind), g->tensors[0], g->tensors[1]);
            gen_related(j, &id, uri, line, column, text);
        }
    }
    for (size_t i = 0; i < r->n_findings; i++) {
        const tlsan_finding *g = &r->findings[i];
        if (g->cause != (int64_t)idx)
            continue;
        size_t other = strcmp(g->tensors[0], f->tensors[0]) == 0 ? 1 : 0;
        tensor_pos(r, g, other, &line, &column);
        snprintf(text, sizeof text, "leads to %s between '%s' and '%s'", tlsan_kind_name(g->kind),
                 g->tensors[0], g->tensors[1]);
        gen_related(j, &id, uri, line, column, text);
    }
    report_gen_close_array(j);
}

/* One rule per kind the inputs can show: the checker's, and for a replayed trace also the
 * run-time kinds (the checker's come first, so a rule's index is its kind). */
static void gen_rules(report_gen *j, int n_kinds)
{
    report_gen_str(j, "rules");
    report_gen_open_array(j);
    for (int k = 0; k < n_kinds; k++) {
        report_gen_open_map(j);
        report_gen_str(j, "id");
        report_gen_str(j, tlsan_kind_name((tlsan_kind)k));
        gen_text(j, "shortDescription", tlsan_kind_description((tlsan_kind)k));
        report_gen_str(j, "defaultConfiguration");
        report_gen_open_map(j);
        report_gen_str(j, "level");
        report_gen_str(j, level_of((tlsan_kind)k));
        report_gen_close_map(j);
        report_gen_close_map(j);
    }
    report_gen_close_array(j);
}

static void gen_result(report_gen *j, const tlsan_report *r, const tlsan_finding *f,
                       const char *uri)
{
    char buf[48];
    size_t pi = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    const char *plan = report_plan_label(r, pi, buf, sizeof buf);

    report_gen_open_map(j);
    report_gen_str(j, "ruleId");
    report_gen_str(j, tlsan_kind_name(f->kind));
    report_gen_str(j, "ruleIndex");
    report_gen_i64(j, (int64_t)f->kind);
    report_gen_str(j, "level");
    report_gen_str(j, level_of(f->kind));
    gen_text(j, "message", f->message);
    report_gen_str(j, "locations");
    report_gen_open_array(j);
    report_gen_open_map(j);
    int line, column;
    tensor_pos(r, f, 0, &line, &column);
    gen_physical_location(j, uri, line, column);
    report_gen_str(j, "logicalLocations");
    report_gen_open_array(j);
    for (size_t i = 0; i < f->n_tensors; i++) {
        report_gen_open_map(j);
        report_gen_str(j, "name");
        report_gen_str(j, f->tensors[i]);
        char holder_buf[48];
        const char *holder =
            report_plan_label(r, holder_plan(r, f, i), holder_buf, sizeof holder_buf);
        if (holder) {
            char *fq = malloc(strlen(holder) + strlen(f->tensors[i]) + 2);
            if (fq) {
                sprintf(fq, "%s/%s", holder, f->tensors[i]);
                report_gen_str(j, "fullyQualifiedName");
                report_gen_str(j, fq);
                free(fq);
            }
        }
        report_gen_str(j, "kind");
        report_gen_str(j, "variable");
        report_gen_close_map(j);
    }
    report_gen_close_array(j);
    report_gen_close_map(j);
    report_gen_close_array(j);
    gen_related_locations(j, r, f, uri);

    report_gen_str(j, "properties");
    report_gen_open_map(j);
    if (plan) {
        report_gen_str(j, "plan");
        report_gen_str(j, plan);
    }
    report_gen_plan_pair(j, r, f, plan);
    report_gen_str(j, "tensors");
    report_gen_open_array(j);
    for (size_t i = 0; i < f->n_tensors; i++)
        report_gen_str(j, f->tensors[i]);
    report_gen_close_array(j);
    report_gen_finding_details(j, r, f);
    report_gen_close_map(j);
    report_gen_close_map(j);
}

/* One notification per input that could not be checked. */
static void gen_invocation(report_gen *j, const tlsan_report *const *reports,
                           const char *const *labels, const tlsan_error *const *errors, size_t n)
{
    bool ok = true;
    for (size_t i = 0; i < n; i++)
        ok = ok && reports[i];
    report_gen_str(j, "invocations");
    report_gen_open_array(j);
    report_gen_open_map(j);
    report_gen_str(j, "executionSuccessful");
    report_gen_bool(j, ok);
    if (!ok) {
        report_gen_str(j, "toolExecutionNotifications");
        report_gen_open_array(j);
        for (size_t i = 0; i < n; i++) {
            if (reports[i])
                continue;
            char what[1024];
            const tlsan_error *e = errors ? errors[i] : NULL;
            if (e)
                tlsan_error_format(e, what, sizeof what);
            else
                snprintf(what, sizeof what, "%s: could not be checked", labels[i]);
            char *uri = label_uri(labels[i]);
            report_gen_open_map(j);
            report_gen_str(j, "level");
            report_gen_str(j, "error");
            gen_text(j, "message", what);
            if (uri) {
                report_gen_str(j, "locations");
                report_gen_open_array(j);
                report_gen_open_map(j);
                gen_artifact_location(j, uri);
                report_gen_close_map(j);
                report_gen_close_array(j);
            }
            report_gen_close_map(j);
            free(uri);
        }
        report_gen_close_array(j);
    }
    report_gen_close_map(j);
    report_gen_close_array(j);
}

int report_write_sarif(const tlsan_report *const *reports, const char *const *labels,
                       const tlsan_error *const *errors, size_t n, FILE *out)
{
    report_gen j;
    if ((n && (!reports || !labels)) || !out || report_gen_init(&j, out) != 0)
        return -1;
    report_gen_open_map(&j);
    report_gen_str(&j, "$schema");
    report_gen_str(&j, SARIF_SCHEMA);
    report_gen_str(&j, "version");
    report_gen_str(&j, "2.1.0");
    report_gen_str(&j, "runs");
    report_gen_open_array(&j);
    report_gen_open_map(&j);

    report_gen_str(&j, "tool");
    report_gen_open_map(&j);
    report_gen_str(&j, "driver");
    report_gen_open_map(&j);
    report_gen_str(&j, "name");
    report_gen_str(&j, "tlsan");
    report_gen_str(&j, "version");
    report_gen_str(&j, TLSAN_VERSION_STRING);
    int n_kinds = TLSAN_KIND_CHECKER_COUNT_;
    for (size_t i = 0; i < n; i++)
        if (reports[i] && reports[i]->traced)
            n_kinds = TLSAN_KIND_COUNT_;
    gen_rules(&j, n_kinds);
    report_gen_close_map(&j);
    report_gen_close_map(&j);

    gen_invocation(&j, reports, labels, errors, n);

    report_gen_str(&j, "results");
    report_gen_open_array(&j);
    for (size_t i = 0; i < n; i++) {
        if (!reports[i])
            continue;
        char *uri = label_uri(labels[i] ? labels[i] : "-");
        if (!uri) {
            j.failed = true;
            continue;
        }
        for (size_t k = 0; k < reports[i]->n_findings; k++)
            gen_result(&j, reports[i], &reports[i]->findings[k], uri);
        report_gen_runtime_results(&j, reports[i]);
        free(uri);
    }
    report_gen_close_array(&j);

    report_gen_close_map(&j);
    report_gen_close_array(&j);
    report_gen_close_map(&j);
    if (fputc('\n', out) == EOF)
        j.failed = true;
    return report_gen_finish(&j);
}
