/* utf8: the well-formed sequences of RFC 3629, and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "utf8.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(well_formed),
        cmocka_unit_test(ill_formed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
