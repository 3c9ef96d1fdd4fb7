/* options: TLSAN_OPTIONS parsing of every type, forgiving separators (newlines too) and quotes,
 * one message per bad pair (the rest still applies, a bad value keeps the earlier one), help,
 * and docs/runtime.md's table against the options table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

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
    /* A newline or a carriage return separates as ':' does (a value ends there). */
    assert_true(options_parse(&o, "verbosity=0\nexitcode=5\r\nlog_path=/l\ntrace=0", NULL, 0));
    assert_int_equal(o.verbosity, 0);
    assert_int_equal(o.exitcode, 5);
    assert_string_equal(o.log_path, "/l");
    assert_int_equal(o.trace, 0);
    /* Inside quotes a separator is part of the value. */
    assert_true(options_parse(&o, "log_path='a\nb':exitcode=6", NULL, 0));
    assert_string_equal(o.log_path, "a\nb");
    assert_int_equal(o.exitcode, 6);
    /* An unterminated quote takes the rest of the text. */
    assert_true(options_parse(&o, "log_path=\"x:exitcode=7", NULL, 0));
    assert_string_equal(o.log_path, "x:exitcode=7");
    assert_int_equal(o.exitcode, 6);
}

static void repeated_names(void **state)
{
    (void)state;
    struct shim_options o;
    options_defaults(&o);
    char err[256];
    /* A bad repeat keeps the last good value, not the default. */
    assert_false(options_parse(&o, "exitcode=5:exitcode=x", err, sizeof err));
    assert_int_equal(o.exitcode, 5);
    assert_string_equal(err, "tlsan: TLSAN_OPTIONS: bad value 'x' for 'exitcode' (want an integer; "
                             "ignored)");
    /* A bad value alone keeps the default. */
    options_defaults(&o);
    assert_false(options_parse(&o, "exitcode=x", err, sizeof err));
    assert_int_equal(o.exitcode, 1);
    /* The last of good repeats wins, whatever came between. */
    assert_false(options_parse(&o, "checksum=all:checksum=bad:checksum=off:foo", err, sizeof err));
    assert_int_equal(o.checksum, SHIM_CHECKSUM_OFF);
    /* Parses apply over each other: the environment's text, then tlsan run's additions. */
    options_defaults(&o);
    assert_true(options_parse(&o, "trace_dir=/a:exitcode=3", NULL, 0));
    assert_true(options_parse(&o, "trace_dir=/b", NULL, 0));
    assert_string_equal(o.trace_dir, "/b");
    assert_int_equal(o.exitcode, 3);
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

/* The help text, read back line by line. */
static void help(void **state)
{
    (void)state;
    char text[OPTIONS_HELP_BYTES];
    size_t len = options_help_text(text, sizeof text);
    assert_int_equal(len, strlen(text));
    assert_true(len + 1 < sizeof text); /* never cut */
    unsigned lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 21); /* a heading and the 20 options */
    assert_non_null(strstr(text, "\n  sample_rate=1000         guard one allocation in N (up to a "
                                 "page) with a page of its own; 1: every one; 0: none\n"));
    assert_non_null(strstr(text, "\n  halt_on_error=native     1: exit with `exitcode` at the "
                                 "first finding; native: die where glibc would; 0: never\n"));
    assert_non_null(strstr(text, "\n  quarantine_mb=8          megabytes of memory the quarantine "
                                 "of freed blocks may hold (0: none)\n"));
    assert_non_null(strstr(text, "\n  checksum=shared "));
    assert_non_null(strstr(text, "\n  log_path=''              write reports to PATH.PID instead "
                                 "of stderr\n"));
    /* A pair longer than the column still gets one space. */
    assert_non_null(strstr(text, "\n  ggml_plan_path=''        ggml: "));

    /* A small buffer is cut, NUL-terminated. */
    char small[8];
    assert_int_equal(options_help_text(small, sizeof small), 7);
    assert_string_equal(small, "tlsan: ");

    struct shim_options o;
    options_defaults(&o);
    char pair[64];
    assert_true(options_format_pair(&o, "redzone", pair, sizeof pair));
    assert_string_equal(pair, "redzone=16");
    assert_true(options_format_pair(&o, "checksum", pair, sizeof pair));
    assert_string_equal(pair, "checksum=shared");
    assert_true(
        options_parse(&o, "exitcode=-7:trace_dir=/r:halt_on_error=1:log_format=json", NULL, 0));
    assert_true(options_format_pair(&o, "exitcode", pair, sizeof pair));
    assert_string_equal(pair, "exitcode=-7");
    assert_true(options_format_pair(&o, "trace_dir", pair, sizeof pair));
    assert_string_equal(pair, "trace_dir='/r'");
    assert_true(options_format_pair(&o, "halt_on_error", pair, sizeof pair));
    assert_string_equal(pair, "halt_on_error=1");
    assert_true(options_format_pair(&o, "log_format", pair, sizeof pair));
    assert_string_equal(pair, "log_format=json");
    assert_false(options_format_pair(&o, "nonesuch", pair, sizeof pair));
    assert_string_equal(pair, "");
}

/* docs/runtime.md's options table is the table: one row per option, in table order,
 * "| `name` | `default` | doc |" with the default as help=1 prints it. */
static void docs_table(void **state)
{
    (void)state;
    static const char *const names[] = {
#define X(type, name, def, doc) #name,
        SHIM_OPTIONS(X)
#undef X
    };
    static const char *const docs[] = {
#define X(type, name, def, doc) doc,
        SHIM_OPTIONS(X)
#undef X
    };
    const size_t n_options = sizeof names / sizeof names[0];
    FILE *f = fopen(TLSAN_SOURCE_DIR "/docs/runtime.md", "r");
    assert_non_null(f);
    char line[1024];
    bool in_section = false;
    size_t row = 0, header_lines = 0;
    struct shim_options defaults;
    options_defaults(&defaults);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "## ", 3) == 0) {
            in_section = strcmp(line, "## Options (`TLSAN_OPTIONS`)") == 0;
            continue;
        }
        if (!in_section || line[0] != '|')
            continue;
        if (header_lines < 2) { /* "| option | default | meaning |" and the rule */
            header_lines++;
            continue;
        }
        assert_true(row < n_options); /* no row for an option the table lacks */
        char pair[OPTIONS_STR_MAX_BYTES + 32];
        assert_true(options_format_pair(&defaults, names[row], pair, sizeof pair));
        char want[1024];
        snprintf(want, sizeof want, "| `%s` | `%s` | %s |", names[row],
                 pair + strlen(names[row]) + 1, docs[row]);
        assert_string_equal(line, want);
        row++;
    }
    fclose(f);
    assert_int_equal(header_lines, 2);
    assert_int_equal(row, n_options); /* every option has its row */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),   cmocka_unit_test(every_type),
        cmocka_unit_test(separators), cmocka_unit_test(repeated_names),
        cmocka_unit_test(errors),     cmocka_unit_test(help),
        cmocka_unit_test(docs_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
