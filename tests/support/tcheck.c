#include "tcheck.h"

#include "check/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *lines_of(tlsan_report *r)
{
    size_t n = tlsan_report_count(r);
    char **lines = calloc(n ? n : 1, sizeof *lines);
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        const tlsan_finding *f = tlsan_report_finding(r, i);
        const char *names[64];
        size_t k = f->n_tensors < 64 ? f->n_tensors : 64;
        for (size_t j = 0; j < k; j++)
            names[j] = f->tensors[j];
        qsort(names, k, sizeof *names, cmp_str);
        size_t len = strlen(tlsan_kind_name(f->kind)) + 1;
        for (size_t j = 0; j < k; j++)
            len += strlen(names[j]) + 1;
        lines[i] = malloc(len + 1);
        strcpy(lines[i], tlsan_kind_name(f->kind));
        for (size_t j = 0; j < k; j++) {
            strcat(lines[i], " ");
            strcat(lines[i], names[j]);
        }
        total += strlen(lines[i]) + 1;
    }
    qsort(lines, n, sizeof *lines, cmp_str);
    char *out = malloc(total);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(out, "\n");
        strcat(out, lines[i]);
        free(lines[i]);
    }
    free(lines);
    return out;
}

char *tcheck_lines(const char *json, unsigned max_paths)
{
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_error err;
    tlsan_status st = tlsan_read_buffer(json, strlen(json), "test", &plan, &cache, &err);
    if (st != TLSAN_OK) {
        char buf[1024];
        snprintf(buf, sizeof buf, "invalid: %s: %s", err.where, err.what);
        return strdup(buf);
    }
    tlsan_check_options opt = {.max_paths = max_paths};
    tlsan_report *r = NULL;
    if (plan)
        assert_int_equal(tlsan_check(plan, &opt, &r), TLSAN_OK);
    else
        assert_int_equal(tlsan_check_cache(cache, &opt, &r), TLSAN_OK);
    char *out = lines_of(r);
    tlsan_report_free(r);
    tlsan_plan_free(plan);
    tlsan_cache_free(cache);
    return out;
}

char *tcheck_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

char *tcheck_file_lines(const char *path)
{
    char *json = tcheck_slurp(path);
    if (!json)
        return NULL;
    char *out = tcheck_lines(json, 0);
    free(json);
    return out;
}

tlsan_plan *tcheck_plan(const char *json)
{
    tlsan_plan *plan = NULL;
    tlsan_error err;
    tlsan_status st = tlsan_plan_read_buffer(json, strlen(json), "test", &plan, &err);
    if (st != TLSAN_OK)
        fprintf(stderr, "plan refused: %s: %s\n", err.where, err.what);
    assert_int_equal(st, TLSAN_OK);
    return plan;
}

char *tcheck_q(const char *json_q, unsigned max_paths)
{
    char *json = strdup(json_q);
    for (char *c = json; *c; c++)
        if (*c == '\'')
            *c = '"';
    char *out = tcheck_lines(json, max_paths);
    free(json);
    return out;
}

tlsan_plan *tcheck_plan_q(const char *json_q)
{
    char *json = strdup(json_q);
    for (char *c = json; *c; c++)
        if (*c == '\'')
            *c = '"';
    tlsan_plan *p = tcheck_plan(json);
    free(json);
    return p;
}

uint32_t tcheck_tensor(const tlsan_plan *p, const char *name)
{
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (strcmp(strtab_str(&p->strings, p->tensors[t].name), name) == 0)
            return t;
    fail_msg("no tensor %s", name);
    return 0;
}
