/* The JSON importers against hostile bytes. Every case of the project's corpus (tests/cases)
 * and every TVM graph of it (tests/tvm), cut at every length and with bits flipped and bytes
 * replaced, is either read (and then checked, and a plan's report written in every format)
 * or refused with an error that names the file and says what is wrong. A cut short of a
 * valid file's last token is always refused: no answer from part of a file. Run under ASan
 * and UBSan in the sanitizer tier; fuzz/plan.c and fuzz/tvm.c explore further. */
#include "report/report.h"
#include "support/corpus.h"
#include "support/mutate.h"
#include "support/tcheck.h"
#include "tlsan/check.h"
#include "tlsan/plan.h"
#include "tlsan/tvm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct tally {
    const char *name;
    size_t whole; /* a valid case's bytes up to its last that is not white space; else 0 */
    FILE *sink;
    size_t read, refused;
} tally;

static void render(const tlsan_report *r, FILE *sink)
{
    report_text_options text = {0};
    const char *label = "case.json";
    assert_int_equal(report_write_text(r, label, &text, sink), 0);
    assert_int_equal(report_write_json(r, label, sink), 0);
    assert_int_equal(report_write_sarif(&r, &label, NULL, 1, sink), 0);
}

static void try_variant(const uint8_t *b, size_t n, const char *what, void *ctx)
{
    tally *t = ctx;
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    tlsan_status st = tlsan_read_buffer((const char *)b, n, "case.json", &plan, &cache, &err);
    if (st == TLSAN_ERR_INVALID) {
        if (strcmp(err.file, "case.json") != 0 || !err.what[0])
            fail_msg("%s, %s: refused without naming the file or the fault", t->name, what);
        char line[1024];
        tlsan_error_format(&err, line, sizeof line);
        assert_int_equal(report_write_json_error("case.json", &err, t->sink), 0);
        t->refused++;
        return;
    }
    if (st != TLSAN_OK)
        fail_msg("%s, %s: status %s", t->name, what, tlsan_status_name(st));
    if (n < t->whole && strncmp(what, "cut", 3) == 0)
        fail_msg("%s, %s: a truncated file was read", t->name, what);
    assert_true(!plan != !cache);
    tlsan_report *report = NULL;
    tlsan_check_options opt = {.max_paths = 64};
    st = plan ? tlsan_check(plan, &opt, &report) : tlsan_check_cache(cache, &opt, &report);
    if (st != TLSAN_OK)
        fail_msg("%s, %s: read, but the check gave %s", t->name, what, tlsan_status_name(st));
    render(report, t->sink);
    tlsan_report_free(report);
    tlsan_plan_free(plan);
    tlsan_cache_free(cache);
    t->read++;
}

static void corpus_variants(void **state)
{
    (void)state;
    char **names;
    size_t n = corpus_list_json(corpus_own_cases(), &names);
    assert_true(n > 50);
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    size_t tried = 0, read = 0, refused = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", corpus_own_cases(), names[i]);
        char *json = tcheck_slurp(path);
        assert_non_null(json);
        size_t len = strlen(json), whole = len;
        while (whole && strchr(" \t\r\n", json[whole - 1]))
            whole--;
        /* Only a valid case's cuts must all be refused: an invalid one may be invalid for
         * what follows a valid plan (invalid-trailing-value.json). */
        tlsan_plan *plan = NULL;
        tlsan_cache *cache = NULL;
        tlsan_error err;
        if (tlsan_read_buffer(json, len, "case.json", &plan, &cache, &err) != TLSAN_OK)
            whole = 0;
        tlsan_plan_free(plan);
        tlsan_cache_free(cache);
        tally t = {names[i], whole, sink, 0, 0};
        mutate_plan mp = {.max_cuts = 300, .flips = 100, .swaps = 200, .seed = 0x7157a9 + i};
        tried += mutate_each((const uint8_t *)json, len, &mp, try_variant, &t);
        read += t.read;
        refused += t.refused;
        free(json);
    }
    fclose(sink);
    printf("%zu cases, %zu variants: %zu read, %zu refused\n", n, tried, read, refused);
    assert_int_equal(read + refused, tried);
    corpus_free_list(names, n);
}

static void try_tvm_variant(const uint8_t *b, size_t n, const char *what, void *ctx)
{
    tally *t = ctx;
    tlsan_plan *plan = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    tlsan_status st = tlsan_import_tvm_buffer((const char *)b, n, "graph.json", &plan, &err);
    if (st == TLSAN_ERR_INVALID) {
        if (strcmp(err.file, "graph.json") != 0 || !err.what[0])
            fail_msg("%s, %s: refused without naming the file or the fault", t->name, what);
        t->refused++;
        return;
    }
    if (st != TLSAN_OK)
        fail_msg("%s, %s: status %s", t->name, what, tlsan_status_name(st));
    if (n < t->whole && strncmp(what, "cut", 3) == 0)
        fail_msg("%s, %s: a truncated graph was imported", t->name, what);
    tlsan_report *report = NULL;
    tlsan_check_options opt = {.max_paths = 64};
    if (tlsan_check(plan, &opt, &report) != TLSAN_OK)
        fail_msg("%s, %s: imported, but the check failed", t->name, what);
    tlsan_report_free(report);
    tlsan_plan_free(plan);
    t->read++;
}

static void tvm_variants(void **state)
{
    (void)state;
    char **names;
    size_t n = corpus_list_json(corpus_own_tvm(), &names);
    assert_true(n >= 1);
    size_t tried = 0, read = 0, refused = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", corpus_own_tvm(), names[i]);
        char *json = tcheck_slurp(path);
        assert_non_null(json);
        size_t len = strlen(json), whole = len;
        while (whole && strchr(" \t\r\n", json[whole - 1]))
            whole--;
        tlsan_plan *plan = NULL;
        tlsan_error err;
        assert_int_equal(tlsan_import_tvm_buffer(json, len, "graph.json", &plan, &err), TLSAN_OK);
        tlsan_plan_free(plan);
        tally t = {names[i], whole, NULL, 0, 0};
        mutate_plan mp = {.max_cuts = SIZE_MAX, .flips = 2000, .swaps = 4000, .seed = 0x7a3 + i};
        tried += mutate_each((const uint8_t *)json, len, &mp, try_tvm_variant, &t);
        read += t.read;
        refused += t.refused;
        free(json);
    }
    printf("%zu graphs, %zu variants: %zu imported, %zu refused\n", n, tried, read, refused);
    assert_int_equal(read + refused, tried);
    corpus_free_list(names, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus_variants),
        cmocka_unit_test(tvm_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
