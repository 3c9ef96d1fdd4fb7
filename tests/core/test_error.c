/* error: refusals say where and what, and never end in half a character. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/error.h"

static void fields(void **state)
{
    (void)state;
    tlsan_error e;
    assert_int_equal(error_fail(&e, "offset out of range", "tensors[%d].offset", 3),
                     TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[3].offset");
    assert_string_equal(e.what, "offset out of range");
    assert_int_equal(e.line, 0);
    assert_int_equal(error_failf(&e, "ops[0]", "unknown tensor '%s'", "t"), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[0]");
    assert_string_equal(e.what, "unknown tensor 't'");
    assert_int_equal(error_nomem(&e), TLSAN_ERR_NOMEM);
    assert_string_equal(e.what, "out of memory");
    assert_string_equal(e.where, "");
    assert_int_equal(error_fail(NULL, "x", "y"), TLSAN_ERR_INVALID); /* err may be NULL */
}

/* A long name of two-byte characters is cut at a character boundary. */
static void cut_at_characters(void **state)
{
    (void)state;
    char name[1200] = "x";
    for (int i = 0; i < 500; i++)
        strcat(name, "\xc3\xa9");
    tlsan_error e;
    error_failf(&e, "tensors[1].name", "duplicate tensor name '%s'", name);
    size_t len = strlen(e.what);
    assert_true(len < sizeof e.what);
    /* the text ends with a whole e-acute, not with its first byte */
    assert_int_equal((unsigned char)e.what[len - 1], 0xa9);
    char buf[64];
    tlsan_error_format(&e, buf, sizeof buf);
    size_t bl = strlen(buf);
    unsigned char last = (unsigned char)buf[bl - 1];
    assert_true(last < 0x80 || last == 0xa9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fields),
        cmocka_unit_test(cut_at_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
