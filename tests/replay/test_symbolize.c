/* Tests of symbolize: a frame of this very test program becomes its function, file and line. */
#include "replay/symbolize.h"

#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* An inlined function: the return address of its call to marker() is inside it, in its
 * caller's code. */
static int inlined_marker_line, inlined_call_line;

static inline __attribute__((always_inline)) void inlined_helper(void)
{
    inlined_marker_line = __LINE__ + 1;
    marker();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void inline_caller(void)
{
    inlined_call_line = __LINE__ + 1;
    inlined_helper();
    __asm__ volatile("" ::: "memory");
}

/* One raw frame in one line: the function holding the code at its own line (for an address
 * inside inlined code, the line of the outermost inlined call), as symbol_frame_text. */
static char *frame_line(symbolizer *s, const char *path, uint64_t bias, uint64_t offset, char *buf,
                        size_t buf_bytes)
{
    symbol_frame frames[16];
    size_t n = symbolizer_lookup(s, path, bias, offset, frames, sizeof frames / sizeof frames[0]);
    symbol_raw_frame raw = {path, bias, offset};
    symbol_frame none = {0};
    return symbol_frame_text(&raw, n ? &frames[n - 1] : &none, buf, buf_bytes);
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
    frame_line(s, exe, bias, marker_return - bias, buf, sizeof buf);
    snprintf(want, sizeof want, "at test_symbolize.c:%d (", marker_line);
    assert_non_null(strstr(buf, "caller+0x"));
    assert_non_null(strstr(buf, want));
    /* A file that cannot be read keeps module+offset. */
    frame_line(s, "/nonexistent/libx.so", 0x1000, 0x42, buf, sizeof buf);
    assert_string_equal(buf, "libx.so+0x42");
    symbolizer_free(s);
}

static void test_inlined_frames(void **state)
{
    (void)state;
    inline_caller();
    uintptr_t bias = 0;
    dl_iterate_phdr(find_main, &bias);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    symbolizer *s = symbolizer_create();
    symbol_frame frames[8];
    size_t count = symbolizer_lookup(s, exe, bias, marker_return - bias, frames, 8);
    /* The inlined function at its call of marker(), then its caller at the inlined call. */
    assert_int_equal(count, 2);
    assert_string_equal(frames[0].function, "inlined_helper");
    assert_true(frames[0].inlined);
    assert_int_equal(frames[0].line, inlined_marker_line);
    assert_string_equal(symbolize_base_name(frames[0].file), "test_symbolize.c");
    assert_string_equal(frames[1].function, "inline_caller");
    assert_false(frames[1].inlined);
    assert_int_equal(frames[1].line, inlined_call_line);
    assert_string_equal(symbolize_base_name(frames[1].file), "test_symbolize.c");
    /* In one line: the function holding the code at its own line, the inlined call's (not
     * the inlined function's line beside its caller's name). */
    char buf[1024], want[64];
    frame_line(s, exe, bias, marker_return - bias, buf, sizeof buf);
    snprintf(want, sizeof want, "at test_symbolize.c:%d (", inlined_call_line);
    if (!strstr(buf, "inline_caller+0x") || !strstr(buf, want))
        fail_msg("one line for an inlined call: %s", buf);
    /* Each frame as text: an inlined one has no offset of its own, and says so. */
    symbol_raw_frame raw = {"/opt/m/libm.so", 0x1000, 0x42};
    symbol_frame_text(&raw, &frames[0], buf, sizeof buf);
    snprintf(want, sizeof want, "inlined_helper at test_symbolize.c:%d (libm.so+0x42, inlined)",
             inlined_marker_line);
    assert_string_equal(buf, want);
    symbol_frame none = {0};
    assert_string_equal(symbol_frame_text(&raw, &none, buf, sizeof buf), "libm.so+0x42");
    /* Room for one frame: the function holding the code, at the innermost line. */
    assert_int_equal(symbolizer_lookup(s, exe, bias, marker_return - bias, frames, 1), 1);
    assert_string_equal(frames[0].function, "inline_caller");
    /* Nothing known: no frames. */
    assert_int_equal(symbolizer_lookup(s, "/nonexistent/libx.so", 0x1000, 0x42, frames, 8), 0);
    symbolizer_free(s);
}

/* A program without .debug_aranges (clang writes none by default, and libdw 0.188 finds a
 * unit only through it): this test program's copy with the section removed gives the same
 * function, file and line, found through the units' own ranges. */
static void test_no_aranges(void **state)
{
    (void)state;
    caller();
    uintptr_t bias = 0;
    dl_iterate_phdr(find_main, &bias);
    char exe[4096], copy[] = "/tmp/tlsan-noaranges-XXXXXX", cmd[8400];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    int fd = mkstemp(copy);
    assert_true(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "objcopy --remove-section=.debug_aranges '%s' '%s'", exe, copy);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "readelf -S '%s' | grep -q debug_aranges", copy);
    assert_int_not_equal(system(cmd), 0); /* the section is gone */
    symbolizer *s = symbolizer_create();
    char buf[1024], want[64];
    frame_line(s, copy, bias, marker_return - bias, buf, sizeof buf);
    snprintf(want, sizeof want, "caller+0x");
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof want, "at test_symbolize.c:%d (", marker_line);
    if (!strstr(buf, want))
        fail_msg("no file and line without .debug_aranges: %s", buf);
    /* and the inlined frames, from the unit found the same way */
    inline_caller();
    symbol_frame frames[8];
    assert_int_equal(symbolizer_lookup(s, copy, bias, marker_return - bias, frames, 8), 2);
    assert_string_equal(frames[0].function, "inlined_helper");
    assert_int_equal(frames[0].line, inlined_marker_line);
    assert_string_equal(frames[1].function, "inline_caller");
    assert_int_equal(frames[1].line, inlined_call_line);
    symbolizer_free(s);
    unlink(copy);
}

static void test_wrappers(void **state)
{
    (void)state;
    symbol_frame api = {"tlsan_tensor_bind", "/usr/include/tlsan/tlsan.h", 179, 0, true};
    symbol_frame engine = {"eng_bind", "/src/engine.c", 40, 0x87, false};
    symbol_frame aligned = {"posix_memalign", NULL, 0, 0x10, false};
    assert_true(symbol_frame_is_wrapper(&api, "/opt/engine"));
    assert_false(symbol_frame_is_wrapper(&engine, "/opt/engine"));
    assert_true(symbol_frame_is_wrapper(&aligned, "/lib/x86_64-linux-gnu/libc.so.6"));
    /* The program's own function of that name is its call. */
    assert_false(symbol_frame_is_wrapper(&aligned, "/opt/engine"));
    assert_int_equal(symbol_name_length("__libc_start_main@@GLIBC_2.34"), 17);
    assert_int_equal(symbol_name_length("main"), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_frame),
        cmocka_unit_test(test_inlined_frames),
        cmocka_unit_test(test_no_aranges),
        cmocka_unit_test(test_wrappers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
