/* The documentation's kind lists agree with the one table of kinds (TLSAN_FINDING_KINDS in
 * tlsan/check.h): docs/plan-format.md's findings table lists the checker's kinds and
 * docs/runtime.md's the run-time ones, each kind once and in the table's order, and the
 * README names every run-time kind. A kind added to the table without its documentation,
 * or documented without being in the table, fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tlsan/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LISTED 64

/* The whole file under the source tree, NUL-terminated; fails the test when unreadable. */
static char *read_doc(const char *relative)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TLSAN_SOURCE_DIR, relative);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (int c; (c = fgetc(f)) != EOF;) {
        if (len + 2 > cap) {
            cap = cap ? cap * 2 : 65536;
            text = realloc(text, cap);
            assert_non_null(text);
        }
        text[len++] = (char)c;
    }
    fclose(f);
    assert_non_null(text);
    text[len] = '\0';
    return text;
}

/* The kinds of the table that follows the line `heading` in `doc`: the first cell of
 * each row, "| `kind` |", up to the first line that is not a table row. Returns their count;
 * names are copied into `kinds`. */
static size_t listed_kinds(const char *doc, const char *heading, char kinds[][64])
{
    char needle[256];
    snprintf(needle, sizeof needle, "\n%s\n", heading);
    const char *at = strstr(doc, needle);
    if (!at)
        fail_msg("no heading '%s'", heading);
    size_t n = 0;
    const char *line = strchr(at + 1, '\n');
    bool in_table = false;
    while (line && *++line) {
        const char *end = strchr(line, '\n');
        size_t line_len = end ? (size_t)(end - line) : strlen(line);
        if (line[0] != '|') {
            if (in_table)
                break;
            line = end;
            continue;
        }
        in_table = true;
        if (strncmp(line, "| `", 3) == 0) {
            const char *name = line + 3;
            const char *close = memchr(name, '`', line_len - 3);
            assert_non_null(close);
            assert_true(n < MAX_LISTED && (size_t)(close - name) < 64);
            memcpy(kinds[n], name, (size_t)(close - name));
            kinds[n][close - name] = '\0';
            n++;
        }
        line = end;
    }
    return n;
}

/* The table's kinds that `is_checker` selects, in order. */
static size_t table_kinds(bool is_checker, const char *kinds[])
{
    size_t n = 0;
    for (int k = 0; k < TLSAN_KIND_COUNT_; k++)
        if ((tlsan_kind_finder((tlsan_kind)k) == TLSAN_FOUND_BY_CHECKER) == is_checker)
            kinds[n++] = tlsan_kind_name((tlsan_kind)k);
    return n;
}

static void assert_doc_lists(const char *relative, const char *heading, bool is_checker)
{
    char *doc = read_doc(relative);
    char listed[MAX_LISTED][64];
    const char *want[TLSAN_KIND_COUNT_];
    size_t n_listed = listed_kinds(doc, heading, listed);
    size_t n_want = table_kinds(is_checker, want);
    for (size_t i = 0; i < n_listed || i < n_want; i++) {
        const char *doc_kind = i < n_listed ? listed[i] : "(nothing)";
        const char *table_kind = i < n_want ? want[i] : "(nothing)";
        if (strcmp(doc_kind, table_kind) != 0)
            fail_msg("%s, '%s' row %zu: the doc lists %s where TLSAN_FINDING_KINDS has %s",
                     relative, heading, i + 1, doc_kind, table_kind);
    }
    free(doc);
}

static void test_plan_format_lists_checker_kinds(void **state)
{
    (void)state;
    assert_doc_lists("docs/plan-format.md", "## 4. Findings and reports", true);
}

static void test_runtime_lists_runtime_kinds(void **state)
{
    (void)state;
    assert_doc_lists("docs/runtime.md", "## Findings at run time", false);
}

static void test_readme_names_runtime_kinds(void **state)
{
    (void)state;
    char *readme = read_doc("README.md");
    for (int k = TLSAN_KIND_CHECKER_COUNT_; k < TLSAN_KIND_COUNT_; k++) {
        char quoted[80];
        snprintf(quoted, sizeof quoted, "`%s`", tlsan_kind_name((tlsan_kind)k));
        if (!strstr(readme, quoted))
            fail_msg("README.md does not name the run-time kind %s", quoted);
    }
    free(readme);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_format_lists_checker_kinds),
        cmocka_unit_test(test_runtime_lists_runtime_kinds),
        cmocka_unit_test(test_readme_names_runtime_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
