/* Tests of symbolize: a frame of this very test program becomes its function, file and line. */
#include "replay/symbolize.h"

#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The line of the call inside marker() that the test looks up. */
static int marker_line;
static uintptr_t marker_return;

__attribute__((noinline)) static void marker(void)
{
    marker_return = (uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) static void caller(void)
{
    marker_line = __LINE__ + 1;
    marker();
    __asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
}

static int find_main(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name[0] == '\0') { /* the main program comes first, unnamed */
        *(uintptr_t *)data = info->dlpi_addr;
        return 1;
    }
    return 0;
}

static void test_own_frame(void **state)
{
    (void)state;
    caller();
    uintptr_t bias = 0;
    dl_iterate_phdr(find_main, &bias);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    symbolizer *s = symbolizer_create();
    char buf[1024], want[64];
    symbolizer_frame(s, exe, bias, marker_return - bias, buf, sizeof buf);
    snprintf(want, sizeof want, "at test_symbolize.c:%d (", marker_line);
    assert_non_null(strstr(buf, "caller+0x"));
    assert_non_null(strstr(buf, want));
    /* A file that cannot be read keeps module+offset. */
    symbolizer_frame(s, "/nonexistent/libx.so", 0x1000, 0x42, buf, sizeof buf);
    assert_string_equal(buf, "libx.so+0x42");
    symbolizer_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
