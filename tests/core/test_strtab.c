/* strtab: interning gives one dense id per distinct string, across table growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/strtab.h"

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

/* Numbered names go to a dense array per prefix, the others, numbers with a leading zero,
 * numbers too sparse for an array and names of a 65th prefix to the hash table; every name
 * is found again wherever it went, and nothing is found twice. */
static void numbered_and_other_names_mix(void **state)
{
    (void)state;
    strtab t;
    strtab_init(&t);
    static const char *const names[] = {"t0",
                                        "t1",
                                        "t007",
                                        "t7",
                                        "x",
                                        "t",
                                        "0",
                                        "12",
                                        "012",
                                        "t999999999",
                                        "t2",
                                        "t1x",
                                        "t-3",
                                        "t12345",
                                        "u1",
                                        "t4294967295",
                                        "t5_v2",
                                        "t5_v",
                                        "t5_v3",
                                        "t6_v2",
                                        "a1b22",
                                        "a1b2",
                                        "blk.12.attn_q",
                                        "blk.3.attn_q",
                                        "12x",
                                        "t5_v02"};
    size_t n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++)
        assert_int_equal(strtab_intern_cstr(&t, names[i]), (uint32_t)i);
    /* t999999999 made prefix "t" mixed: later numbers still go on working */
    assert_int_equal(strtab_intern_cstr(&t, "t3"), (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(strtab_intern_cstr(&t, names[i]), (uint32_t)i);
        assert_int_equal(strtab_find(&t, names[i], strlen(names[i])), (uint32_t)i);
        assert_string_equal(strtab_str(&t, (uint32_t)i), names[i]);
    }
    assert_int_equal(strtab_find(&t, "t3", 2), (uint32_t)n);
    assert_int_equal(strtab_find(&t, "t4", 2), STRTAB_NONE);
    assert_int_equal(strtab_find(&t, "t0007", 5), STRTAB_NONE);
    assert_int_equal(strtab_find(&t, "v1", 2), STRTAB_NONE);
    /* more prefixes than the dense arrays take */
    char buf[32];
    uint32_t first = t.n;
    for (int p = 0; p < 2 * STRTAB_PREFIXES; p++)
        for (int k = 0; k < 3; k++) {
            snprintf(buf, sizeof buf, "p%c%c_%d", 'a' + p / 26, 'a' + p % 26, k);
            assert_int_equal(strtab_intern_cstr(&t, buf), first + (uint32_t)(3 * p + k));
        }
    for (int p = 0; p < 2 * STRTAB_PREFIXES; p++)
        for (int k = 0; k < 3; k++) {
            snprintf(buf, sizeof buf, "p%c%c_%d", 'a' + p / 26, 'a' + p % 26, k);
            assert_int_equal(strtab_find(&t, buf, strlen(buf)), first + (uint32_t)(3 * p + k));
        }
    assert_int_equal(t.n_prefixes, STRTAB_PREFIXES); /* the later ones were hashed */
    snprintf(buf, sizeof buf, "p%c%c_%d", 'a' + (2 * STRTAB_PREFIXES - 1) / 26,
             'a' + (2 * STRTAB_PREFIXES - 1) % 26, 3);
    assert_int_equal(strtab_find(&t, buf, strlen(buf)), STRTAB_NONE);
    strtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_are_dense_and_stable),
        cmocka_unit_test(numbered_and_other_names_mix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
