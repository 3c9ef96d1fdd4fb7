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

/* An importer of JSON bytes: a plan reader gives a plan or a cache, the TVM importer a plan. */
typedef tlsan_status (*importer)(const uint8_t *b, size_t n, const char *label, tlsan_plan **plan,
                                 tlsan_cache **cache, tlsan_error *err);

static tlsan_status read_plan_file(const uint8_t *b, size_t n, const char *label, tlsan_plan **plan,
                                   tlsan_cache **cache, tlsan_error *err)
{
    return tlsan_read_buffer((const char *)b, n, label, plan, cache, err);
}

static tlsan_status import_tvm(const uint8_t *b, size_t n, const char *label, tlsan_plan **plan,
                               tlsan_cache **cache, tlsan_error *err)
{
    *cache = NULL;
    return tlsan_import_tvm_buffer((const char *)b, n, label, plan, err);
}

typedef struct tally {
    importer import;
    const char *name;
    size_t whole; /* a valid file's bytes up to its last that is not white space; else 0 */
    FILE *sink;   /* where a plan's report is written in every format */
    size_t read, refused;
} tally;

static void render(const tlsan_report *r, FILE *sink)
{
    report_text_options text = {0};
    const char *label = "in.json";
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
    tlsan_status st = t->import(b, n, "in.json", &plan, &cache, &err);
    if (st == TLSAN_ERR_INVALID) {
        if (strcmp(err.file, "in.json") != 0 || !err.what[0])
            fail_msg("%s, %s: refused without naming the file or the fault", t->name, what);
        char line[1024];
        tlsan_error_format(&err, line, sizeof line);
        assert_int_equal(report_write_json_error("in.json", &err, t->sink), 0);
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

/* The variants of every *.json of `dir` (at least `min_files`), the i-th file's positions
 * from mp->seed + i. */
static void folder_variants(const char *dir, size_t min_files, importer import,
                            const mutate_plan *mp)
{
    char **names;
    size_t n = corpus_list_json(dir, &names);
    assert_true(n >= min_files);
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    size_t tried = 0, read = 0, refused = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *json = tcheck_slurp(path);
        assert_non_null(json);
        size_t len = strlen(json), whole = len;
        while (whole && strchr(" \t\r\n", json[whole - 1]))
            whole--;
        /* Only a valid file's cuts must all be refused: an invalid one may be invalid for
         * what follows a valid plan (invalid-trailing-value.json). */
        tlsan_plan *plan = NULL;
        tlsan_cache *cache = NULL;
        tlsan_error err;
        if (import((const uint8_t *)json, len, "in.json", &plan, &cache, &err) != TLSAN_OK)
            whole = 0;
        tlsan_plan_free(plan);
        tlsan_cache_free(cache);
        tally t = {import, names[i], whole, sink, 0, 0};
        mutate_plan file_mp = *mp;
        file_mp.seed += i;
        tried += mutate_each((const uint8_t *)json, len, &file_mp, try_variant, &t);
        read += t.read;
        refused += t.refused;
        free(json);
    }
    fclose(sink);
    printf("%s: %zu files, %zu variants: %zu read, %zu refused\n", dir, n, tried, read, refused);
    assert_int_equal(read + refused, tried);
    corpus_free_list(names, n);
}

static void corpus_variants(void **state)
{
    (void)state;
    mutate_plan mp = {.max_cuts = 300, .flips = 100, .swaps = 200, .seed = 0x7157a9};
    folder_variants(corpus_own_cases(), 50, read_plan_file, &mp);
}

static void tvm_variants(void **state)
{
    (void)state;
    mutate_plan mp = {.max_cuts = SIZE_MAX, .flips = 2000, .swaps = 4000, .seed = 0x7a3};
    folder_variants(corpus_own_tvm(), 1, import_tvm, &mp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus_variants),
        cmocka_unit_test(tvm_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
