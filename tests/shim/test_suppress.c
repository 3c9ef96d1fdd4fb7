/* Tests of suppress: the glob matcher against a brute-force twin (every split of the text
 * tried) on random patterns and texts, and rules read from a file matched against frames. */
#include "out.h"
#include "suppress.h"
#include "../support/splitmix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The twin: '*' tries every length, recursively. */
static bool brute_glob(const char *p, const char *s, size_t n)
{
    if (*p == '\0')
        return n == 0;
    if (*p == '*') {
        for (size_t k = 0; k <= n; k++)
            if (brute_glob(p + 1, s + k, n - k))
                return true;
        return false;
    }
    return n > 0 && *p == *s && brute_glob(p + 1, s + 1, n - 1);
}

static void test_glob_against_brute_force(void **state)
{
    (void)state;
    uint64_t rng = 7;
    static const char alphabet[] = "ab*";
    for (int i = 0; i < 20000; i++) {
        char pattern[10], text[12];
        size_t np = (size_t)splitmix_below(&rng, sizeof pattern);
        size_t nt = (size_t)splitmix_below(&rng, sizeof text);
        for (size_t k = 0; k < np; k++)
            pattern[k] = alphabet[splitmix_below(&rng, 3)];
        pattern[np] = '\0';
        for (size_t k = 0; k < nt; k++)
            text[k] = alphabet[splitmix_below(&rng, 2)];
        text[nt] = '\0';
        if (suppress_glob(pattern, text, nt) != brute_glob(pattern, text, nt))
            fail_msg("'%s' against '%s': %d, brute force %d", pattern, text,
                     suppress_glob(pattern, text, nt), brute_glob(pattern, text, nt));
    }
    assert_true(suppress_glob("lib*.so*", "libfoo.so.1", 11));
    assert_false(suppress_glob("lib*.so", "libfoo.so.1", 11));
    assert_true(suppress_glob("*", "", 0));
}

static void test_rules_match_frames(void **state)
{
    (void)state;
    char path[] = "/tmp/tlsan_test_suppress.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char text[] = "# comment\n"
                               "\n"
                               "  double-free:decode_*  \n"
                               "heap-buffer-overflow:third_party.c\n"
                               "*:libvendor.so*\n"
                               "missing colon\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    out_set_fd(pipe_fds[1]);
    suppress_load(path);
    out_set_fd(2);
    close(pipe_fds[1]);
    char said[512] = {0};
    assert_true(read(pipe_fds[0], said, sizeof said - 1) > 0);
    close(pipe_fds[0]);
    unlink(path);
    char want[256];
    snprintf(want, sizeof want,
             "tlsan: suppressions %s:6: no ':' between KIND and PATTERN (line ignored): missing "
             "colon\n",
             path);
    assert_string_equal(said, want);

    struct shim_frame f0 = {0x10, "/opt/app", 0x10, {"decode_frame@@V1", "/src/app.c", 3, 0, 0}};
    struct shim_frame f1 = {0x20, "/opt/app", 0x20, {"main", "/src/third_party.c", 9, 0, 0}};
    struct shim_frame f2 = {0x30, "/usr/lib/libvendor.so.2", 0x30, {NULL, NULL, 0, 0, 0}};
    const struct shim_frame s0[] = {f0}, s1[] = {f1}, s2[] = {f2};
    const struct shim_frame *by_function[] = {s0}, *by_file[] = {s1}, *by_module[] = {s2};
    size_t one = 1;
    unsigned long before = suppress_count();
    assert_int_equal(suppress_match("double-free", by_function, &one, 1), 0);
    assert_int_equal(suppress_match("invalid-free", by_function, &one, 1), -1);
    assert_int_equal(suppress_match("heap-buffer-overflow", by_file, &one, 1), 1);
    assert_int_equal(suppress_match("double-free", by_file, &one, 1), -1);
    assert_int_equal(suppress_match("stale-write", by_module, &one, 1), 2);
    assert_int_equal(suppress_count() - before, 3);
    suppress_load("");
    assert_int_equal(suppress_match("stale-write", by_module, &one, 1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glob_against_brute_force),
        cmocka_unit_test(test_rules_match_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
