/* utf8: the well-formed sequences of RFC 3629, and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/utf8.h"

static bool ok(const char *s)
{
    return utf8_valid_text(s, strlen(s));
}

static void well_formed(void **state)
{
    (void)state;
    assert_true(ok(""));
    assert_true(ok("tensor_0"));
    assert_true(ok("\xc3\xa9"));         /* U+00E9 */
    assert_true(ok("\xe2\x82\xac"));     /* U+20AC */
    assert_true(ok("\xed\x9f\xbf"));     /* U+D7FF, just below the surrogates */
    assert_true(ok("\xee\x80\x80"));     /* U+E000, just above them */
    assert_true(ok("\xf0\x90\x80\x80")); /* U+10000 */
    assert_true(ok("\xf4\x8f\xbf\xbf")); /* U+10FFFF */
}

static void ill_formed(void **state)
{
    (void)state;
    assert_false(ok("\xc0\xaf"));         /* overlong '/' */
    assert_false(ok("\xc1\xbf"));         /* overlong */
    assert_false(ok("\xe0\x9f\xbf"));     /* overlong 3-byte */
    assert_false(ok("\xf0\x8f\xbf\xbf")); /* overlong 4-byte */
    assert_false(ok("\xed\xa0\x80"));     /* U+D800, a surrogate */
    assert_false(ok("\xed\xbf\xbf"));     /* U+DFFF */
    assert_false(ok("\xf4\x90\x80\x80")); /* U+110000 */
    assert_false(ok("\xf5\x80\x80\x80"));
    assert_false(ok("\xff\xfe"));
    assert_false(ok("\x80")); /* a lone continuation byte */
    assert_false(ok("\xc3")); /* truncated */
    assert_false(ok("\xe2\x82"));
    assert_false(ok("\xe2\x28\xa1"));         /* bad continuation */
    assert_false(utf8_valid_text("a\0b", 3)); /* NUL is no text here */
}

/* Feeds text in chunks of `step` bytes; returns the absolute offset of the reported byte. */
static size_t scan(const char *text, size_t step)
{
    json_escape_scan s = {0};
    size_t len = strlen(text);
    for (size_t at = 0; at < len; at += step) {
        size_t n = len - at < step ? len - at : step;
        size_t bad = json_escapes_feed(&s, text + at, n);
        if (bad != SIZE_MAX)
            return at + bad;
    }
    return SIZE_MAX;
}

static void surrogate_escapes(void **state)
{
    (void)state;
    for (size_t step = 1; step <= 64; step++) {
        assert_int_equal(scan("{\"a\":\"\\ud83d\\ude00\"}", step), SIZE_MAX); /* a pair */
        assert_int_equal(scan("{\"a\":\"\\u0041\\n\\\"\"}", step), SIZE_MAX);
        assert_int_equal(scan("[\"\\ud800\"]", step), 8);         /* ends unpaired */
        assert_int_equal(scan("[\"\\udc00\"]", step), 7);         /* a low one alone */
        assert_int_equal(scan("[\"\\ud800\\u0041\"]", step), 13); /* high, then no low */
        assert_int_equal(scan("[\"\\ud800\\n\"]", step), 9);      /* high, then \\n */
        assert_int_equal(scan("[\"\\ud800x\"]", step), 8);        /* high, then a char */
        /* outside strings nothing is an escape */
        assert_int_equal(scan("[1, 2]", step), SIZE_MAX);
    }
}

static void trim_partial(void **state)
{
    (void)state;
    char a[] = "x\xc3\xa9\xc3"; /* a complete e-acute, then a cut one */
    utf8_trim_partial(a);
    assert_string_equal(a, "x\xc3\xa9");
    char b[] = "x\xe2\x82"; /* a cut euro sign */
    utf8_trim_partial(b);
    assert_string_equal(b, "x");
    char c[] = "x\xf0\x9f\x98\x80"; /* complete: unchanged */
    utf8_trim_partial(c);
    assert_string_equal(c, "x\xf0\x9f\x98\x80");
    char d[] = "plain";
    utf8_trim_partial(d);
    assert_string_equal(d, "plain");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(well_formed),
        cmocka_unit_test(ill_formed),
        cmocka_unit_test(surrogate_escapes),
        cmocka_unit_test(trim_partial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
