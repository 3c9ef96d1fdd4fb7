/* trace_dir: which files of a directory are traces, and their order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "replay/trace_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void touch(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tlsan_test_trace_dir.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void lists_traces_in_process_order(void **state)
{
    (void)state;
    const char *names[] = {"tlsan.100.trace", "tlsan.99.2.trace", "zz.trace",
                           "tlsan.99.trace",  "a10.trace",        "a9.trace",
                           "notes.txt",       ".hidden.trace",    "tlsan.5.trace.7",
                           ".trace",          "tlsan.99.10.trace"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        touch(names[i]);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub.trace", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    trace_list l;
    assert_int_equal(trace_dir_list(dir, &l), 0);
    const char *want[] = {"tlsan.99.trace",  "tlsan.99.2.trace", "tlsan.99.10.trace",
                          "tlsan.100.trace", "a9.trace",         "a10.trace",
                          "zz.trace"};
    assert_int_equal(l.n, sizeof want / sizeof *want);
    for (size_t i = 0; i < l.n; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/%s", dir, want[i]);
        assert_string_equal(l.paths[i], p);
    }
    trace_list_free(&l);
    assert_int_equal(l.n, 0);
    assert_null(l.paths);
    trace_list_free(NULL);
}

static void empty_missing_and_not_a_directory(void **state)
{
    (void)state;
    trace_list l;
    assert_int_equal(trace_dir_list(dir, &l), 0);
    assert_int_equal(l.n, 0);
    trace_list_free(&l);
    assert_true(trace_dir_is(dir));

    char p[128];
    snprintf(p, sizeof p, "%s/missing", dir);
    errno = 0;
    assert_int_equal(trace_dir_list(p, &l), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(l.n, 0);
    assert_false(trace_dir_is(p));

    touch("file.trace");
    snprintf(p, sizeof p, "%s/file.trace", dir);
    errno = 0;
    assert_int_equal(trace_dir_list(p, &l), -1);
    assert_int_equal(errno, ENOTDIR);
    assert_false(trace_dir_is(p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lists_traces_in_process_order, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_missing_and_not_a_directory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
