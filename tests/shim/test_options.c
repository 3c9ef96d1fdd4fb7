/* options: TLSAN_OPTIONS parsing of every type, forgiving separators and quotes, one message
 * per bad pair (the rest still applies), and help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "options.h"
#include "out.h"

static void defaults(void **state)
{
    (void)state;
    struct shim_options o;
    memset(&o, 0xAB, sizeof o);
    options_defaults(&o);
    assert_int_equal(o.halt_on_error, SHIM_HALT_NATIVE);
    assert_int_equal(o.exitcode, 1);
    assert_string_equal(o.log_path, "");
    assert_string_equal(o.trace_path, "");
    assert_string_equal(o.trace_dir, "");
    assert_int_equal(o.trace, -1); /* a trace only when a path or directory is given */
    assert_int_equal(o.quarantine_mb, 8);
    assert_true(o.fill);
    assert_int_equal(o.checksum, SHIM_CHECKSUM_SHARED);
    assert_int_equal(o.redzone, 16);
    assert_int_equal(o.stack_depth, 16);
    assert_int_equal(o.verbosity, 0);
    assert_false(o.help);
    assert_string_equal(o.inject, "");
}

static void every_type(void **state)
{
    (void)state;
    struct shim_options o;
    options_defaults(&o);
    char err[256] = "x";
    assert_true(options_parse(&o,
                              "halt_on_error=1:exitcode=-3,log_path=/tmp/l  trace_path='a b:c'"
                              "\tquarantine_mb=18446744073709551615:checksum=all:fill=false"
                              ":trace=1:redzone=0:verbosity=+2:inject=\"x,y\":trace_dir=/r",
                              err, sizeof err));
    assert_string_equal(err, "");
    assert_int_equal(o.halt_on_error, SHIM_HALT_ALWAYS);
    assert_int_equal(o.exitcode, -3);
    assert_string_equal(o.log_path, "/tmp/l");
    assert_string_equal(o.trace_path, "a b:c");
    assert_true(o.quarantine_mb == UINT64_MAX);
    assert_int_equal(o.checksum, SHIM_CHECKSUM_ALL);
    assert_false(o.fill);
    assert_int_equal(o.trace, 1);
    assert_string_equal(o.trace_dir, "/r");
    assert_int_equal(o.redzone, 0);
    assert_int_equal(o.verbosity, 2);
    assert_string_equal(o.inject, "x,y");
    assert_true(options_parse(&o, "halt_on_error=0", err, sizeof err));
    assert_int_equal(o.halt_on_error, SHIM_HALT_NEVER);
    assert_true(options_parse(&o, "halt_on_error=native", err, sizeof err));
    assert_int_equal(o.halt_on_error, SHIM_HALT_NATIVE);
    assert_false(options_parse(&o, "halt_on_error=2", err, sizeof err));
    assert_string_equal(err, "tlsan: TLSAN_OPTIONS: bad value '2' for 'halt_on_error' (want 0, 1 "
                             "or native; ignored)");
    assert_int_equal(o.halt_on_error, SHIM_HALT_NATIVE);
    assert_true(options_parse(&o, "checksum=off,exitcode=-2147483648", err, sizeof err));
    assert_int_equal(o.checksum, SHIM_CHECKSUM_OFF);
    assert_int_equal(o.exitcode, -2147483648);
    assert_true(
        options_parse(&o, "checksum=shared:exitcode=2147483647:log_path=", err, sizeof err));
    assert_int_equal(o.checksum, SHIM_CHECKSUM_SHARED);
    assert_int_equal(o.exitcode, 2147483647);
    assert_string_equal(o.log_path, "");
}

static void separators(void **state)
{
    (void)state;
    struct shim_options o;
    options_defaults(&o);
    assert_true(options_parse(&o, NULL, NULL, 0));
    assert_true(options_parse(&o, "", NULL, 0));
    assert_true(options_parse(&o, " ::,, \n", NULL, 0));
    assert_true(options_parse(&o, ":,redzone=32,, :stack_depth=4::\n", NULL, 0));
    assert_int_equal(o.redzone, 32);
    assert_int_equal(o.stack_depth, 4);
    /* Later pairs win. */
    assert_true(options_parse(&o, "redzone=1:redzone=2", NULL, 0));
    assert_int_equal(o.redzone, 2);
}

static void errors(void **state)
{
    (void)state;
    struct shim_options o;
    options_defaults(&o);
    char err[1024];
    assert_false(options_parse(&o, "foo=1:exitcode=5", err, sizeof err));
    assert_string_equal(err, "tlsan: TLSAN_OPTIONS: unknown option 'foo' (ignored)");
    assert_int_equal(o.exitcode, 5); /* the good pair after it still applies */

    assert_int_equal(o.log_format, SHIM_LOG_TEXT);
    assert_true(options_parse(&o, "log_format=json:symbolize=0", err, sizeof err));
    assert_int_equal(o.log_format, SHIM_LOG_JSON);
    assert_false(o.symbolize);
    assert_false(options_parse(&o, "log_format=xml", err, sizeof err));
    assert_string_equal(err, "tlsan: TLSAN_OPTIONS: bad value 'xml' for 'log_format' (want text or "
                             "json; ignored)");
    assert_int_equal(o.log_format, SHIM_LOG_JSON); /* kept */

    assert_false(options_parse(&o, "exitcode=x", err, sizeof err));
    assert_string_equal(err, "tlsan: TLSAN_OPTIONS: bad value 'x' for 'exitcode' (want an integer; "
                             "ignored)");
    assert_int_equal(o.exitcode, 5); /* kept */

    /* One line per bad pair, in order. */
    assert_false(options_parse(&o,
                               "fill=2:exitcode=2147483648:quarantine_mb=18446744073709551616:"
                               "checksum=some:redzone=-1:verbosity=:stack_depth=9:nokey",
                               err, sizeof err));
    assert_string_equal(
        err, "tlsan: TLSAN_OPTIONS: bad value '2' for 'fill' (want 0, 1, true or false; ignored)\n"
             "tlsan: TLSAN_OPTIONS: bad value '2147483648' for 'exitcode' (want an integer; "
             "ignored)\n"
             "tlsan: TLSAN_OPTIONS: bad value '18446744073709551616' for 'quarantine_mb' (want "
             "an unsigned integer; ignored)\n"
             "tlsan: TLSAN_OPTIONS: bad value 'some' for 'checksum' (want all, shared or off; "
             "ignored)\n"
             "tlsan: TLSAN_OPTIONS: bad value '-1' for 'redzone' (want an unsigned integer; "
             "ignored)\n"
             "tlsan: TLSAN_OPTIONS: bad value '' for 'verbosity' (want an integer; ignored)\n"
             "tlsan: TLSAN_OPTIONS: 'nokey' has no '=value' (ignored)");
    assert_true(o.fill);
    assert_int_equal(o.quarantine_mb, 8);
    assert_int_equal(o.checksum, SHIM_CHECKSUM_SHARED);
    assert_int_equal(o.redzone, 16);
    assert_int_equal(o.stack_depth, 9);

    /* A string of 256 bytes is one too many. */
    char text[300] = "log_path=";
    memset(text + 9, 'a', 256);
    text[9 + 256] = '\0';
    assert_false(options_parse(&o, text, NULL, 0)); /* err may be NULL */
    assert_string_equal(o.log_path, "");
    text[9 + 255] = '\0';
    assert_true(options_parse(&o, text, NULL, 0));
    assert_int_equal(strlen(o.log_path), 255);

    /* A small err buffer truncates, still NUL-terminated. */
    char tiny[16];
    assert_false(options_parse(&o, "foo=1", tiny, sizeof tiny));
    assert_string_equal(tiny, "tlsan: TLSAN_OP");
}

static void help(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    options_print_help(fds[1]);
    close(fds[1]);
    char text[8192] = {0};
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], text + len, sizeof text - 1 - len)) > 0)
        len += (size_t)n;
    close(fds[0]);
    unsigned lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 19); /* a heading and the 18 options */
    assert_non_null(strstr(text, "\n  halt_on_error=native     1: exit with `exitcode` at the "
                                 "first finding; native: die where glibc would; 0: never\n"));
    assert_non_null(strstr(text, "\n  quarantine_mb=8 "));
    assert_non_null(strstr(text, "\n  checksum=shared "));
    assert_non_null(strstr(text, "\n  log_path='' "));

    struct shim_options o;
    options_defaults(&o);
    char buf[64];
    struct outbuf b = {buf, 0, sizeof buf};
    options_append(&b, &o, "redzone");
    out_appendf(&b, " ");
    options_append(&b, &o, "checksum");
    options_append(&b, &o, "nonesuch");
    assert_string_equal(buf, "redzone=16 checksum=shared");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults), cmocka_unit_test(every_type), cmocka_unit_test(separators),
        cmocka_unit_test(errors),   cmocka_unit_test(help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
