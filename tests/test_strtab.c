/* strtab: interning gives one dense id per distinct string, across table growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "strtab.h"

static void ids_are_dense_and_stable(void **state)
{
    (void)state;
    strtab t;
    strtab_init(&t);
    assert_int_equal(strtab_find(&t, "a", 1), STRTAB_NONE);
    char buf[32];
    /* enough strings to force several rehashes and buffer moves */
    for (uint32_t i = 0; i < 100000; i++) {
        int n = snprintf(buf, sizeof buf, "tensor_%u", i);
        assert_int_equal(strtab_intern(&t, buf, (size_t)n), i);
    }
    for (uint32_t i = 0; i < 100000; i += 997) {
        int n = snprintf(buf, sizeof buf, "tensor_%u", i);
        assert_int_equal(strtab_intern(&t, buf, (size_t)n), i);
        assert_int_equal(strtab_find(&t, buf, (size_t)n), i);
        assert_string_equal(strtab_str(&t, i), buf);
        assert_int_equal(strtab_len(&t, i), (uint32_t)n);
    }
    assert_int_equal(t.n, 100000);
    /* prefixes and the empty string are distinct strings */
    uint32_t e = strtab_intern(&t, "", 0);
    assert_int_equal(e, 100000);
    assert_int_equal(strtab_intern(&t, "tensor_1", 7), 100001); /* "tensor_" */
    assert_int_equal(strtab_len(&t, 100001), 7);
    assert_string_equal(strtab_str(&t, 100001), "tensor_");
    assert_int_equal(strtab_intern_cstr(&t, "tensor_1"), 1);
    strtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_are_dense_and_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
