/* Tests of plan caches: canonical keys compare as JSON values, and cache-key-collision
 * names exactly the plans and tensors that differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "check/cache.h"
#include "check/plan.h"
#include "report/report.h"
#include "support/corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A finalized one-tensor plan for key tests. */
static tlsan_plan *tiny_plan(void)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    tlsan_arena_desc a = {"a", 64, 0, NULL};
    tlsan_tensor_desc t = {0};
    t.name = "t";
    t.bytes = 8;
    t.arena = "a";
    assert_int_equal(tlsan_plan_add_arena(p, &a, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_tensor(p, &t, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    return p;
}

/* The canonical text of a key (copied), via the public tlsan_cache_add(). */
static char *canon(const char *key_json)
{
    tlsan_cache *c = tlsan_cache_create();
    tlsan_plan *p = tiny_plan();
    tlsan_error err;
    tlsan_status st = tlsan_cache_add(c, p, key_json, &err);
    if (st != TLSAN_OK)
        fail_msg("key %s refused: %s", key_json, err.what);
    char *s = strdup(cache_key(c, 0));
    tlsan_cache_free(c);
    return s;
}

static bool keys_equal(const char *a, const char *b)
{
    char *x = canon(a), *y = canon(b);
    bool eq = strcmp(x, y) == 0;
    free(x);
    free(y);
    return eq;
}

static void test_canonical_keys(void **state)
{
    (void)state;
    /* Object members are unordered, at every depth; arrays keep their order. */
    assert_true(keys_equal("{\"batch\": 1, \"seq\": 128}", "{\"seq\":128,\"batch\":1}"));
    assert_true(keys_equal("{\"a\": {\"y\": [1, 2], \"x\": null}}",
                           "{\"a\": {\"x\": null, \"y\": [1, 2]}}"));
    assert_false(keys_equal("{\"a\": [1, 2]}", "{\"a\": [2, 1]}"));
    /* Numbers by value, but an integer literal never equals a fractional one. */
    assert_false(keys_equal("{\"b\": 1}", "{\"b\": 1.0}"));
    assert_true(keys_equal("{\"b\": 1.0}", "{\"b\": 1.00}"));
    assert_true(keys_equal("{\"b\": 1.5}", "{\"b\": 15e-1}"));
    assert_true(keys_equal("{\"b\": 100.0}", "{\"b\": 1e2}"));
    assert_true(keys_equal("{\"b\": 0.001}", "{\"b\": 1E-3}"));
    assert_false(keys_equal("{\"b\": 100}", "{\"b\": 1e2}"));
    assert_true(keys_equal("{\"b\": -0}", "{\"b\": 0}"));
    assert_true(keys_equal("{\"b\": -0.0}", "{\"b\": 0.000}"));
    assert_false(keys_equal("{\"b\": 0}", "{\"b\": 0.0}"));
    assert_false(keys_equal("{\"b\": 2}", "{\"b\": 3}"));
    assert_false(keys_equal("{\"b\": 1.5}", "{\"b\": -1.5}"));
    assert_true(keys_equal("{\"b\": 123456789012345678901234567890}",
                           "{\"b\": 123456789012345678901234567890}"));
    assert_false(keys_equal("{\"b\": 123456789012345678901234567890}",
                            "{\"b\": 123456789012345678901234567891}"));
    /* true is no number, strings are exact. */
    assert_false(keys_equal("{\"b\": true}", "{\"b\": 1}"));
    assert_false(keys_equal("{\"b\": false}", "{\"b\": null}"));
    assert_false(keys_equal("{\"b\": \"1\"}", "{\"b\": 1}"));
    assert_false(keys_equal("{\"d\": \"f16\"}", "{\"d\": \"F16\"}"));
    assert_true(keys_equal("{\"d\": \"A\\\"\"}", "{\"d\": \"\\u0041\\\"\"}"));
    assert_false(keys_equal("{\"d\": \"a b\"}", "{\"d\": \"a  b\"}"));
    /* Extra or missing members differ. */
    assert_false(keys_equal("{\"b\": 1}", "{\"b\": 1, \"s\": 2}"));
    assert_false(keys_equal("{}", "{\"b\": {}}"));

    char *s = canon("{\"seq\": 128, \"batch\": 1.50, \"x\": [true, null, \"q\"]}");
    assert_string_equal(s, "{\"batch\":1.5e0,\"seq\":128,\"x\":[true,null,\"q\"]}");
    free(s);
}

static void test_cache_add_errors(void **state)
{
    (void)state;
    tlsan_cache *c = tlsan_cache_create();
    tlsan_plan *p = tiny_plan();
    tlsan_error err;
    assert_int_equal(tlsan_cache_add(c, p, "[1]", &err), TLSAN_ERR_INVALID);
    assert_string_equal(err.where, "key");
    assert_int_equal(tlsan_cache_add(c, p, "{\"a\": 1, \"a\": 2}", &err), TLSAN_ERR_INVALID);
    assert_non_null(strstr(err.what, "repeats"));
    assert_int_equal(tlsan_cache_add(c, p, "{\"a\": {\"b\": 1, \"b\": 1}}", &err),
                     TLSAN_ERR_INVALID);
    assert_int_equal(tlsan_cache_add(c, p, "{\"a\": ", &err), TLSAN_ERR_INVALID);
    assert_non_null(strstr(err.what, "not valid JSON"));
    assert_int_equal(tlsan_cache_add(c, p, "{\"a\": 1} 2", &err), TLSAN_ERR_INVALID);
    assert_int_equal(tlsan_cache_n_plans(c), 0);
    tlsan_plan *unfinished = tlsan_plan_create();
    assert_int_equal(tlsan_cache_add(c, unfinished, "{}", &err), TLSAN_ERR_STATE);
    tlsan_plan_free(unfinished);
    assert_int_equal(tlsan_cache_add(c, p, "{\"a\": 1}", &err), TLSAN_OK);
    assert_int_equal(tlsan_cache_n_plans(c), 1);
    assert_ptr_equal(tlsan_cache_plan(c, 0), p);
    tlsan_cache_free(c);
}

/* ---- collisions ---- */

static tlsan_report *collisions_of(const tlsan_cache *c)
{
    tlsan_report *r = report_new((const tlsan_plan *const *)c->plans, c->n_plans, true);
    assert_non_null(r);
    assert_int_equal(cache_collisions(c, r), 0);
    return r;
}

static void assert_finding(const tlsan_report *r, size_t i, int64_t plan, int64_t other,
                           const char *const *tensors, size_t n)
{
    const tlsan_finding *f = tlsan_report_finding(r, i);
    assert_non_null(f);
    assert_int_equal(f->kind, TLSAN_KIND_CACHE_KEY_COLLISION);
    assert_int_equal(f->plan_index, plan);
    assert_int_equal(f->other_plan_index, other);
    assert_int_equal(f->n_tensors, n);
    for (size_t k = 0; k < n; k++)
        assert_string_equal(f->tensors[k], tensors[k]);
    assert_non_null(f->message);
}

/* The index of the finding whose first plan is `plan` (the report's order is not the
 * cache's). */
static size_t finding_of_plan(const tlsan_report *r, int64_t plan)
{
    for (size_t i = 0; i < tlsan_report_count(r); i++)
        if (tlsan_report_finding(r, i)->plan_index == plan)
            return i;
    fail_msg("no finding for plans[%lld]", (long long)plan);
    return 0;
}

static tlsan_cache *read_own_case(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", corpus_own_cases(), name);
    tlsan_plan *p = NULL;
    tlsan_cache *c = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_read_file(path, &p, &c, &err), TLSAN_OK);
    assert_null(p);
    assert_non_null(c);
    return c;
}

/* tests/cases/cache-key-equality.json: keys compare as JSON values. Equal: members in
 * another order (plans 0, 1), 2.5 and 2.50 (plans 2, 3). Different: 3 and 3.0 (4, 5), true
 * and 1 (6, 7), arrays in another order (8, 9), though each of those pairs differs in a. */
static void test_own_key_equality_case(void **state)
{
    (void)state;
    tlsan_cache *c = read_own_case("cache-key-equality.json");
    assert_int_equal(tlsan_cache_n_plans(c), 10);
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 2);
    static const char *const a[] = {"a"}, *const scratch[] = {"scratch"};
    assert_finding(r, finding_of_plan(r, 0), 0, 1, a, 1);
    assert_finding(r, finding_of_plan(r, 2), 2, 3, scratch, 1);
    const tlsan_finding *f = tlsan_report_finding(r, finding_of_plan(r, 0));
    assert_non_null(strstr(f->message, "'s1' (plans[0]) and 's1-moved' (plans[1])"));
    assert_non_null(strstr(f->message, "{\"dt\":\"f32\",\"seq\":1}"));
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

/* tests/cases/cache-what-differs.json: what makes two plans of one key differ. Plans 0, 1:
 * the op that reads a and writes y is named differently (a and y differ, x does not);
 * plans 2, 3: only flags, dtype, stack and the arena's alignment differ (no collision);
 * plans 4, 5: the view v starts elsewhere in its base. */
static void test_own_what_differs_case(void **state)
{
    (void)state;
    tlsan_cache *c = read_own_case("cache-what-differs.json");
    assert_int_equal(tlsan_cache_n_plans(c), 6);
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 2);
    static const char *const ay[] = {"a", "y"}, *const v[] = {"v"};
    assert_finding(r, finding_of_plan(r, 0), 0, 1, ay, 2);
    assert_finding(r, finding_of_plan(r, 4), 4, 5, v, 1);
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

static void test_shared_cache_case(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    assert_true(corpus_shared_sub("cases", dir, sizeof dir));
    snprintf(path, sizeof path, "%s/cache-collision.json", dir);
    tlsan_plan *p = NULL;
    tlsan_cache *c = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_read_file(path, &p, &c, &err), TLSAN_OK);
    assert_non_null(c);
    assert_int_equal(tlsan_cache_n_plans(c), 3);
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 1);
    static const char *const names[] = {"a", "x", "y"};
    assert_finding(r, 0, 0, 1, names, 3);
    const tlsan_finding *f = tlsan_report_finding(r, 0);
    assert_non_null(strstr(f->message, "'b1-s128' (plans[0])"));
    assert_non_null(strstr(f->message, "'b1-s128-f16' (plans[1])"));
    assert_non_null(strstr(f->message, "{\"batch\":1,\"seq\":128}"));
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

/* Reads a cache from text (plans separated in the template by the caller). */
static tlsan_cache *read_cache(const char *json)
{
    tlsan_plan *p = NULL;
    tlsan_cache *c = NULL;
    tlsan_error err;
    tlsan_status st = tlsan_read_buffer(json, strlen(json), "test", &p, &c, &err);
    if (st != TLSAN_OK) {
        char buf[1024];
        fail_msg("%s", tlsan_error_format(&err, buf, sizeof buf));
    }
    assert_non_null(c);
    return c;
}

#define PLAN(KEY, TENSORS, OPS)                                                                    \
    "{\"tlsan_plan\": 1, \"key\": " KEY ", \"arenas\": [{\"name\": \"a0\", \"bytes\": 65536}, "    \
    "{\"name\": \"a1\", \"bytes\": 65536}], \"tensors\": [" TENSORS "], \"ops\": [" OPS "]}"
#define ROOT(N, A, OFF, B)                                                                         \
    "{\"name\": \"" N "\", \"arena\": \"" A "\", \"offset\": " #OFF ", \"bytes\": " #B "}"
#define VIEW(N, BASE, OFF, B)                                                                      \
    "{\"name\": \"" N "\", \"view_of\": \"" BASE "\", \"view_offset\": " #OFF ", \"bytes\": " #B "}"
#define OP(N, R, W) "{\"name\": \"" N "\", \"reads\": [" R "], \"writes\": [" W "]}"

static void test_three_plans_two_collide(void **state)
{
    (void)state;
    /* Plans 0 and 2 share a key (members in another order, 1.0 == 1.00) and differ in
     * the arena of t (and its view v's bytes); plan 1 has key 1 (integer): no collision. */
    const char *json = "{\"tlsan_plan_cache\": 1, \"plans\": [" PLAN(
        "{\"b\": 1.0, \"s\": \"x\"}", ROOT("t", "a0", 0, 64) "," VIEW("v", "t", 0, 32),
        OP("f", "", "\"t\"")) "," PLAN("{\"b\": 1, \"s\": \"x\"}",
                                       ROOT("t", "a1", 0, 64) "," VIEW("v", "t", 0, 16),
                                       OP("f", "", "\"t\"")) "," PLAN("{\"s\": \"x\", \"b\": 1.00}",
                                                                      ROOT("t", "a1", 0,
                                                                           64) "," VIEW("v", "t", 0,
                                                                                        16),
                                                                      OP("f", "", "\"t\"")) "]}";
    tlsan_cache *c = read_cache(json);
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 1);
    static const char *const names[] = {"t", "v"};
    assert_finding(r, 0, 0, 2, names, 2);
    assert_non_null(strstr(tlsan_report_finding(r, 0)->message, "plans[0] and plans[2]"));
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

static void test_identical_plans_do_not_collide(void **state)
{
    (void)state;
    const char *json = "{\"tlsan_plan_cache\": 1, \"plans\": [" PLAN(
        "{\"b\": 1}", ROOT("t", "a0", 0, 64) "," ROOT("u", "a0", 64, 64),
        OP("f", "", "\"t\"") "," OP(
            "g", "\"t\"",
            "\"u\"")) "," PLAN("{\"b\": 1}", ROOT("u", "a0", 64, 64) "," ROOT("t", "a0", 0, 64),
                               OP("f", "", "\"t\"") "," OP("g", "\"t\"", "\"u\"")) "]}";
    tlsan_cache *c = read_cache(json);
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 0);
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

static void test_collision_by_access_order_only(void **state)
{
    (void)state;
    /* Same tensors, same placement, same ops by name; only the order in which g and h read
     * t differs, so t (and nothing else) is reported. */
    const char *json = "{\"tlsan_plan_cache\": 1, \"plans\": [" PLAN(
        "{\"b\": 2}",
        ROOT("t", "a0", 0, 64) "," ROOT("u", "a0", 64, 64) "," ROOT("w", "a0", 128, 64),
        OP("f", "", "\"t\"") "," OP("g", "\"t\"", "\"u\"") "," OP(
            "h", "\"t\"",
            "\"w\"")) "," PLAN("{\"b\": 2}",
                               ROOT("t", "a0", 0, 64) "," ROOT("u", "a0", 64,
                                                               64) "," ROOT("w", "a0", 128, 64),
                               OP("f", "", "\"t\"") "," OP("h", "\"t\"", "\"w\"") "," OP(
                                   "g", "\"t\"", "\"u\"")) "]}";
    tlsan_cache *c = read_cache(json);
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 1);
    static const char *const names[] = {"t"};
    assert_finding(r, 0, 0, 1, names, 1);
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

static void test_collision_kinds_of_difference(void **state)
{
    (void)state;
    /* Plan 1 vs plan 0: "only" exists only in plan 0, "extra" only in plan 1, "v" has
     * another view_offset, "r" is read and written by one op instead of only read, and
     * "k" is the same. Three plans with one key: one finding per differing pair. */
    const char *json = "{\"tlsan_plan_cache\": 1, \"plans\": [" PLAN(
        "{}",
        ROOT("k", "a0", 0, 8) "," ROOT("only", "a0", 8, 8) "," VIEW("v", "k", 0,
                                                                    4) "," ROOT("r", "a0", 16, 8),
        OP("f", "\"r\"",
           "\"k\"")) "," PLAN("{}",
                              ROOT("k", "a0", 0, 8) "," ROOT("extra", "a0", 8, 8) "," VIEW(
                                  "v", "k", 4, 4) "," ROOT("r", "a0", 16, 8),
                              OP("f", "\"r\"",
                                 "\"k\", \"r\"")) "," PLAN("{}",
                                                           ROOT("k", "a0", 0, 8) "," ROOT(
                                                               "only", "a0", 8,
                                                               8) "," VIEW("v", "k", 0,
                                                                           4) "," ROOT("r", "a0",
                                                                                       16, 8),
                                                           OP("f", "\"r\", \"r\"", "\"k\"")) "]}";
    tlsan_cache *c = read_cache(json);
    tlsan_report *r = collisions_of(c);
    /* 0-1 and 1-2 differ; 0-2 are equal (a tensor listed twice by one op is one access). */
    assert_int_equal(tlsan_report_count(r), 2);
    static const char *const names[] = {"extra", "only", "r", "v"};
    size_t i01 = tlsan_report_finding(r, 0)->plan_index == 0 ? 0 : 1;
    assert_finding(r, i01, 0, 1, names, 4);
    assert_finding(r, 1 - i01, 1, 2, names, 4);
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

/* Many plans, all keys distinct but a few: grouping by hash keeps this fast. */
static void test_many_plans(void **state)
{
    (void)state;
    tlsan_cache *c = tlsan_cache_create();
    size_t n = 20000;
    for (size_t i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "{\"batch\": %zu}", i % (n - 3));
        tlsan_plan *p = tlsan_plan_create();
        tlsan_arena_desc a = {"a", 64, 0, NULL};
        tlsan_tensor_desc t = {0};
        t.name = "t";
        t.bytes = 8;
        t.arena = "a";
        t.offset_bytes = i < 3 ? 0 : 8;
        assert_int_equal(tlsan_plan_add_arena(p, &a, NULL), TLSAN_OK);
        assert_int_equal(tlsan_plan_add_tensor(p, &t, NULL), TLSAN_OK);
        assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
        assert_int_equal(tlsan_cache_add(c, p, key, NULL), TLSAN_OK);
    }
    /* Plans 0,1,2 collide with n-3, n-2, n-1 (offset 0 vs 8). */
    tlsan_report *r = collisions_of(c);
    assert_int_equal(tlsan_report_count(r), 3);
    for (size_t i = 0; i < 3; i++) {
        const tlsan_finding *f = tlsan_report_finding(r, i);
        assert_int_equal(f->other_plan_index, f->plan_index + (int64_t)(n - 3));
    }
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

/* Many plans under one key, in two layouts: every pair across the layouts collides, no
 * pair within one does, and the plans that match are found without comparing every pair
 * (10,000 identical plans would be 5*10^7 comparisons). */
static void test_one_key_two_layouts(void **state)
{
    (void)state;
    tlsan_cache *c = tlsan_cache_create();
    size_t n = 10000;
    for (size_t i = 0; i < n; i++) {
        tlsan_plan *p = tlsan_plan_create();
        tlsan_arena_desc a = {"a", 64, 0, NULL};
        tlsan_tensor_desc t = {0};
        t.name = "t";
        t.bytes = 8;
        t.arena = "a";
        t.offset_bytes = i == 7 || i == 4242 ? 8 : 0; /* two plans differ from the rest */
        assert_int_equal(tlsan_plan_add_arena(p, &a, NULL), TLSAN_OK);
        assert_int_equal(tlsan_plan_add_tensor(p, &t, NULL), TLSAN_OK);
        assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
        assert_int_equal(tlsan_cache_add(c, p, "{\"batch\": 1}", NULL), TLSAN_OK);
    }
    clock_t t0 = clock();
    tlsan_report *r = collisions_of(c);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    /* plans 7 and 4242 each collide with the 9998 others, and not with each other */
    assert_int_equal(tlsan_report_count(r), 2 * (n - 2));
    for (size_t i = 0; i < tlsan_report_count(r); i++) {
        const tlsan_finding *f = tlsan_report_finding(r, i);
        bool odd_a = f->plan_index == 7 || f->plan_index == 4242;
        bool odd_b = f->other_plan_index == 7 || f->other_plan_index == 4242;
        assert_true(odd_a != odd_b);
        assert_int_equal(f->n_tensors, 1);
        assert_string_equal(f->tensors[0], "t");
    }
    assert_true(secs < 2.0);
    tlsan_report_free(r);
    tlsan_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical_keys),
        cmocka_unit_test(test_cache_add_errors),
        cmocka_unit_test(test_own_key_equality_case),
        cmocka_unit_test(test_own_what_differs_case),
        cmocka_unit_test(test_three_plans_two_collide),
        cmocka_unit_test(test_identical_plans_do_not_collide),
        cmocka_unit_test(test_collision_by_access_order_only),
        cmocka_unit_test(test_collision_kinds_of_difference),
        cmocka_unit_test(test_many_plans),
        cmocka_unit_test(test_one_key_two_layouts),
    };
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_shared_cache_case),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed != 0)
        return failed;
    if (!corpus_have_shared("cases"))
        return 0;
    return cmocka_run_group_tests(shared, NULL, NULL);
}
