/* report_sarif: SARIF 2.1.0 output, so that CI systems can show findings next to the plan
 * files: one run, one rule per finding kind, one result per finding. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TLSAN_VERSION_STRING
#define TLSAN_VERSION_STRING "0.0.0"
#endif

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"

static const char *level_of(tlsan_kind kind)
{
    return tlsan_kind_severity(kind) == TLSAN_SEVERITY_WARNING ? "warning" : "error";
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

static void gen_artifact_location(report_gen *j, const char *uri)
{
    report_gen_str(j, "physicalLocation");
    report_gen_open_map(j);
    report_gen_str(j, "artifactLocation");
    report_gen_open_map(j);
    report_gen_str(j, "uri");
    report_gen_str(j, uri);
    report_gen_close_map(j);
    report_gen_close_map(j);
}

static void gen_rules(report_gen *j)
{
    report_gen_str(j, "rules");
    report_gen_open_array(j);
    for (int k = 0; k < TLSAN_KIND_COUNT_; k++) {
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
    gen_artifact_location(j, uri);
    report_gen_str(j, "logicalLocations");
    report_gen_open_array(j);
    for (size_t i = 0; i < f->n_tensors; i++) {
        report_gen_open_map(j);
        report_gen_str(j, "name");
        report_gen_str(j, f->tensors[i]);
        if (plan) {
            char *fq = malloc(strlen(plan) + strlen(f->tensors[i]) + 2);
            if (fq) {
                sprintf(fq, "%s/%s", plan, f->tensors[i]);
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
    gen_rules(&j);
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
