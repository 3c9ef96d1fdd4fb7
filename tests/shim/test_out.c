/* out: the allocation-free formatter prints exactly what printf would for the conversions
 * it supports, truncates at the capacity, and writes to the report fd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out.h"

static char g_buf[256];

static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
    struct outbuf b = {g_buf, 0, sizeof g_buf};
    g_buf[0] = '\0';
    va_list ap;
    va_start(ap, f);
    out_vappendf(&b, f, ap);
    va_end(ap);
    assert_int_equal(b.len, strlen(g_buf));
    return g_buf;
}

static void conversions(void **state)
{
    (void)state;
    assert_string_equal(fmt("plain"), "plain");
    assert_string_equal(fmt("%s|%5s|%-5s|%.2s", "ab", "ab", "ab", "abc"), "ab|   ab|ab   |ab");
    assert_string_equal(fmt("%.*s", 3, "abcdef"), "abc");
    assert_string_equal(fmt("%s", (const char *)NULL), "(null)");
    assert_string_equal(fmt("%c%c", 'x', 'y'), "xy");
    assert_string_equal(fmt("%d %i %d", 0, -42, INT_MIN), "0 -42 -2147483648");
    assert_string_equal(fmt("%5d|%-5d|%05d|%05d", 42, 42, 42, -42), "   42|42   |00042|-0042");
    assert_string_equal(fmt("%u %x %08x", 4000000000u, 0xbeefu, 0xbeefu),
                        "4000000000 beef 0000beef");
    assert_string_equal(fmt("%ld %lu %lx", -5L, 5UL, 255UL), "-5 5 ff");
    assert_string_equal(fmt("%lld %llu %llx", LLONG_MIN, ULLONG_MAX, 0x123456789abcdefULL),
                        "-9223372036854775808 18446744073709551615 123456789abcdef");
    assert_string_equal(fmt("%08llx", 0xabcULL), "00000abc");
    assert_string_equal(fmt("%zu %zd %zx", (size_t)7, (ssize_t)-7, (size_t)0x7f), "7 -7 7f");
    assert_string_equal(fmt("%p", (void *)0x7f00dead), "0x7f00dead");
    assert_string_equal(fmt("%p", (void *)0), "0x0");
    assert_string_equal(fmt("100%%"), "100%");
    /* The same results as the C library for a sample. */
    char want[128];
    snprintf(want, sizeof want, "%d|%5u|%-4x|%08llx|%zu", -17, 33u, 0xau, 0xfeedULL, (size_t)9);
    assert_string_equal(fmt("%d|%5u|%-4x|%08llx|%zu", -17, 33u, 0xau, 0xfeedULL, (size_t)9), want);
}

static void truncation(void **state)
{
    (void)state;
    char small[8];
    struct outbuf b = {small, 0, sizeof small};
    out_appendf(&b, "%s", "0123456789");
    assert_int_equal(b.len, 7);
    assert_string_equal(small, "0123456");
    out_appendf(&b, "more");
    assert_int_equal(b.len, 7);
    assert_string_equal(small, "0123456");
    /* Appending continues where the text ends. */
    char big[32];
    struct outbuf c = {big, 0, sizeof big};
    out_appendf(&c, "a=%d", 1);
    out_appendf(&c, ", b=%d", 2);
    assert_string_equal(big, "a=1, b=2");
}

static void report_fd(void **state)
{
    (void)state;
    assert_int_equal(out_fd(), 2);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    out_set_fd(fds[1]);
    out_printf("==%d==hello %s\n", 7, "world");
    out_write("raw\n", 4);
    char got[64] = {0};
    ssize_t n = read(fds[0], got, sizeof got - 1);
    assert_int_equal(n, (ssize_t)strlen("==7==hello world\nraw\n"));
    assert_string_equal(got, "==7==hello world\nraw\n");
    close(fds[0]);
    close(fds[1]);

    /* log_path: PATH.PID, appended, opened by the first write: until then no file, no fd. */
    char dir[] = "/tmp/tlsan_test_out_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char base[128], file[160];
    snprintf(base, sizeof base, "%s/log", dir);
    snprintf(file, sizeof file, "%s.%d", base, (int)getpid());
    int next_fd = dup(0);
    close(next_fd);
    out_open_log(base);
    assert_int_equal(out_fd(), 2);
    assert_int_equal(access(file, F_OK), -1);
    int probe = dup(0);
    assert_int_equal(probe, next_fd); /* the lowest free fd is still the program's */
    close(probe);
    out_printf("line %d\n", 1);
    assert_int_not_equal(out_fd(), 2);
    out_printf("line %d\n", 2);
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char text[64] = {0};
    size_t r = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    assert_int_equal(r, 14);
    assert_string_equal(text, "line 1\nline 2\n");
    /* The log fd sits high, away from the numbers the program's opens get. */
    assert_true(out_fd() >= 100);
    /* An unopenable path (a forked child's PATH.PID) drops the current file: the line
     * saying so, and later reports, go to stderr, not into the file. */
    out_open_log("/nonexistent-dir/x");
    assert_int_equal(out_fd(), 2);
    out_printf("line %d\n", 3);
    f = fopen(file, "r");
    assert_non_null(f);
    memset(text, 0, sizeof text);
    r = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    assert_string_equal(text, "line 1\nline 2\n");
    unlink(file);
    rmdir(dir);
}

/* The program closes the log's fd and the number comes back on a file of its own: the shim
 * must not write into that file, and reports go to stderr from then on. */
static void log_fd_reused(void **state)
{
    (void)state;
    char dir[] = "/tmp/tlsan_test_out_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char base[128], file[160], other[160];
    snprintf(base, sizeof base, "%s/log", dir);
    snprintf(file, sizeof file, "%s.%d", base, (int)getpid());
    snprintf(other, sizeof other, "%s/program-data", dir);
    out_open_log(base);
    out_printf("opened\n");
    int fd = out_fd();
    assert_true(fd > 2);
    int prog = open(other, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(prog >= 0);
    assert_int_equal(dup2(prog, fd), fd); /* what close + the program's next open can do */
    close(prog);
    int saved_err = dup(2), errs[2];
    assert_int_equal(pipe(errs), 0);
    dup2(errs[1], 2);
    out_printf("report\n");
    dup2(saved_err, 2);
    close(saved_err);
    close(errs[1]);
    assert_int_equal(out_fd(), 2);
    char got[256] = {0};
    ssize_t n = read(errs[0], got, sizeof got - 1);
    close(errs[0]);
    assert_true(n > 0);
    assert_string_equal(got, "tlsan: the log_path file's descriptor was closed or reused by the "
                             "program; reporting to stderr\nreport\n");
    struct stat st;
    assert_int_equal(stat(other, &st), 0);
    assert_int_equal(st.st_size, 0);      /* the program's file was not written */
    assert_true(fcntl(fd, F_GETFD) >= 0); /* and its fd not closed */
    close(fd);
    unlink(other);
    unlink(file);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conversions),
        cmocka_unit_test(truncation),
        cmocka_unit_test(report_fd),
        cmocka_unit_test(log_fd_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
