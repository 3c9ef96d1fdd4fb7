/* strtab: interning gives one dense id per distinct string, across table growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/strtab.h"
#include "support/splitmix.h"

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

/* Brute-force twin: random names of digits, two letters and '_' (so that prefixes, suffixes
 * and runs of digits of every length meet, and the latest prefix's quick match is tried on
 * names it must not take), each id checked against a linear search of the names so far. */
static void random_names_match_a_linear_search(void **state)
{
    (void)state;
    enum { N_NAMES = 4000, MAX_LEN = 16 };
    static char names[N_NAMES][MAX_LEN + 1];
    static const char alphabet[] = "0123456789012tv_";
    for (uint64_t seed = 1; seed <= 8; seed++) {
        uint64_t rng = seed;
        strtab t;
        strtab_init(&t);
        uint32_t n_distinct = 0;
        char name[MAX_LEN + 1];
        for (int k = 0; k < N_NAMES; k++) {
            /* mostly PREFIX + number + SUFFIX, with runs of digits of every length in all
             * three parts, so that the latest prefix's quick match meets names it must not
             * take (t12_v22 is t12_v + 22 while t123_v22 is t + 123 + _v22) */
            static const char *const parts[] = {"",     "t",   "_v",  "_v2",
                                                "_v22", "a1b", ".x1", "t12_v"};
            size_t n_parts = sizeof parts / sizeof parts[0], len = 0;
            if (splitmix_next(&rng) % 4) {
                const char *pre = parts[splitmix_next(&rng) % n_parts];
                const char *suf = parts[splitmix_next(&rng) % n_parts];
                static const unsigned below[] = {10, 100, 1000, 10000};
                unsigned number = (unsigned)(splitmix_next(&rng) % below[splitmix_next(&rng) % 4]);
                len = (size_t)snprintf(name, sizeof name, "%s%u%s", pre, number, suf);
            } else {
                len = 1 + (size_t)(splitmix_next(&rng) % MAX_LEN);
                for (size_t i = 0; i < len; i++)
                    name[i] = alphabet[splitmix_next(&rng) % (sizeof alphabet - 1)];
            }
            name[len] = '\0';
            uint32_t want = STRTAB_NONE;
            for (uint32_t i = 0; i < n_distinct && want == STRTAB_NONE; i++)
                if (strcmp(names[i], name) == 0)
                    want = i;
            assert_int_equal(strtab_find(&t, name, len), want);
            if (want == STRTAB_NONE) {
                want = n_distinct;
                memcpy(names[n_distinct++], name, len + 1);
            }
            assert_int_equal(strtab_intern(&t, name, len), want);
        }
        for (uint32_t i = 0; i < n_distinct; i++) {
            assert_int_equal(strtab_find(&t, names[i], strlen(names[i])), i);
            assert_string_equal(strtab_str(&t, i), names[i]);
        }
        strtab_free(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_are_dense_and_stable),
        cmocka_unit_test(numbered_and_other_names_mix),
        cmocka_unit_test(random_names_match_a_linear_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
