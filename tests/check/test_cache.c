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
#include "support/splitmix.h"

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

/* ---- the brute-force twin: random caches against an oracle of their own descriptions ---- */

/* A key as an abstract value: a batch number (an integer 0..2, or the non-integer 1 or 1.5,
 * which no integer literal equals), an optional device string, an optional array. Two keys
 * are equal exactly when their fields are: the oracle of key equality, known by
 * construction, whatever text each key is written in. */
typedef struct twin_key {
    int batch;  /* 0, 1, 2: integers; 3: the non-integer 1; 4: 1.5 */
    int device; /* -1: absent; 0 "cpu", 1 "gpu" */
    int dims;   /* -1: absent; 0 [1, 2]; 1 [2, 1] */
} twin_key;

/* Writes k as JSON text in one of its many spellings: members in any order, integers zero
 * as "-0", non-integers in any decimal or exponent form, strings with \u escapes, spaces. */
static void twin_key_text(const twin_key *k, uint64_t *rng, char *buf, size_t n)
{
    static const char *const batch_forms[5][5] = {
        {"0", "-0", "0", "-0", "0"},
        {"1", "1", "1", "1", "1"},
        {"2", "2", "2", "2", "2"},
        {"1.0", "1.00", "1e0", "10E-1", "0.1e+1"},
        {"1.5", "1.50", "15e-1", "0.15E1", "150e-2"},
    };
    static const char *const device_forms[2][3] = {
        {"\"cpu\"", "\"\\u0063pu\"", "\"c\\u0070u\""},
        {"\"gpu\"", "\"\\u0067pu\"", "\"gp\\u0075\""},
    };
    static const char *const dims_forms[2][2] = {{"[1,2]", "[ 1 , 2 ]"}, {"[2,1]", "[2, 1]"}};
    char member[3][64];
    size_t m = 0;
    snprintf(member[m++], sizeof member[0], "\"batch\":%s",
             batch_forms[k->batch][splitmix_below(rng, 5)]);
    if (k->device >= 0)
        snprintf(member[m++], sizeof member[0], "\"device\": %s",
                 device_forms[k->device][splitmix_below(rng, 3)]);
    if (k->dims >= 0)
        snprintf(member[m++], sizeof member[0], "\"dims\" :%s",
                 dims_forms[k->dims][splitmix_below(rng, 2)]);
    for (size_t i = m; i > 1; i--) { /* a random order of the members */
        size_t j = (size_t)splitmix_below(rng, i);
        char tmp[64];
        memcpy(tmp, member[i - 1], sizeof tmp);
        memcpy(member[i - 1], member[j], sizeof tmp);
        memcpy(member[j], tmp, sizeof tmp);
    }
    size_t used = (size_t)snprintf(buf, n, "{");
    for (size_t i = 0; i < m; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : " ", member[i]);
    snprintf(buf + used, n - used, " }");
}

static bool twin_key_equal(const twin_key *a, const twin_key *b)
{
    return a->batch == b->batch && a->device == b->device && a->dims == b->dims;
}

#define TWIN_TENSORS 4 /* a, b, c: roots; v: a view of a or b */
#define TWIN_OPS     3
static const char *const twin_names[TWIN_TENSORS] = {"a", "b", "c", "v"};

/* A plan as a description: what each tensor is and which ops read or write it. */
typedef struct twin_plan {
    bool present[TWIN_TENSORS];
    int arena[TWIN_TENSORS]; /* roots: 0 "A", 1 "B" */
    uint64_t offset[TWIN_TENSORS], bytes[TWIN_TENSORS];
    int base;                                /* v: 0 (a) or 1 (b) */
    int op_name[TWIN_OPS];                   /* 0 "op<k>", 1 "alt<k>" */
    unsigned access[TWIN_OPS][TWIN_TENSORS]; /* 1 read, 2 write */
} twin_plan;

/* Makes d valid: a view's base is present, and only present tensors are accessed. */
static void twin_plan_fix(twin_plan *d)
{
    if (!d->present[d->base])
        d->present[3] = false;
    for (int o = 0; o < TWIN_OPS; o++)
        for (int t = 0; t < TWIN_TENSORS; t++)
            if (!d->present[t])
                d->access[o][t] = 0;
}

static void twin_plan_random(twin_plan *d, uint64_t *rng)
{
    memset(d, 0, sizeof *d);
    for (int t = 0; t < 3; t++) {
        d->present[t] = splitmix_chance(rng, 85);
        d->arena[t] = (int)splitmix_below(rng, 2);
        d->offset[t] = 16 * splitmix_below(rng, 2);
        d->bytes[t] = 8 + 8 * splitmix_below(rng, 2);
    }
    d->present[3] = splitmix_chance(rng, 50);
    d->base = (int)splitmix_below(rng, 2);
    d->offset[3] = 4 * splitmix_below(rng, 2);
    d->bytes[3] = 4;
    for (int o = 0; o < TWIN_OPS; o++) {
        d->op_name[o] = splitmix_chance(rng, 10);
        for (int t = 0; t < TWIN_TENSORS; t++)
            d->access[o][t] = (unsigned)splitmix_below(rng, 6) & 3; /* none half the time */
    }
    twin_plan_fix(d);
}

/* One small change of d (or none): what makes two plans of one key differ. */
static void twin_plan_mutate(twin_plan *d, uint64_t *rng)
{
    int t = (int)splitmix_below(rng, TWIN_TENSORS), o = (int)splitmix_below(rng, TWIN_OPS);
    switch (splitmix_below(rng, 8)) {
    case 0:
        d->present[t] = !d->present[t];
        break;
    case 1:
        d->arena[t] ^= 1;
        break;
    case 2:
        d->offset[t] = t == 3 ? 4 - d->offset[t] : 16 - d->offset[t];
        break;
    case 3:
        d->bytes[t] = t == 3 ? d->bytes[t] : 24 - d->bytes[t];
        break;
    case 4:
        d->base ^= 1;
        break;
    case 5:
        d->op_name[o] ^= 1;
        break;
    case 6:
        d->access[o][t] = (d->access[o][t] + 1 + (unsigned)splitmix_below(rng, 3)) & 3;
        break;
    default:
        break; /* the same plan again */
    }
    twin_plan_fix(d);
}

static tlsan_plan *twin_plan_build(const twin_plan *d)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    tlsan_arena_desc arenas[2] = {{"A", 64, 0, NULL}, {"B", 64, 0, NULL}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(tlsan_plan_add_arena(p, &arenas[i], NULL), TLSAN_OK);
    for (int t = 0; t < TWIN_TENSORS; t++) {
        if (!d->present[t])
            continue;
        tlsan_tensor_desc td = {0};
        td.name = twin_names[t];
        td.bytes = d->bytes[t];
        if (t == 3) {
            td.view_of = twin_names[d->base];
            td.view_offset_bytes = d->offset[t];
        } else {
            td.arena = arenas[d->arena[t]].name;
            td.offset_bytes = d->offset[t];
        }
        assert_int_equal(tlsan_plan_add_tensor(p, &td, NULL), TLSAN_OK);
    }
    for (int o = 0; o < TWIN_OPS; o++) {
        const char *reads[TWIN_TENSORS], *writes[TWIN_TENSORS];
        size_t nr = 0, nw = 0;
        for (int t = 0; t < TWIN_TENSORS; t++) {
            if (d->access[o][t] & 1)
                reads[nr++] = twin_names[t];
            if (d->access[o][t] & 2)
                writes[nw++] = twin_names[t];
        }
        char name[16];
        snprintf(name, sizeof name, "%s%d", d->op_name[o] ? "alt" : "op", o);
        tlsan_op_desc od = {
            .name = name, .reads = reads, .n_reads = nr, .writes = writes, .n_writes = nw};
        assert_int_equal(tlsan_plan_add_op(p, &od, NULL), TLSAN_OK);
    }
    tlsan_error err;
    if (tlsan_plan_finalize(p, &err) != TLSAN_OK)
        fail_msg("twin plan refused: %s", err.what);
    return p;
}

/* The oracle: whether tensor t differs between descriptions x and y (present in one only,
 * placed elsewhere, or read and written by other ops in another order). */
static bool twin_tensor_differs(const twin_plan *x, const twin_plan *y, int t)
{
    if (x->present[t] != y->present[t])
        return true;
    if (!x->present[t])
        return false;
    if (x->offset[t] != y->offset[t] || x->bytes[t] != y->bytes[t])
        return true;
    if (t == 3 ? x->base != y->base : x->arena[t] != y->arena[t])
        return true;
    /* the accesses in op order, ops that do not touch t left out */
    unsigned ax[TWIN_OPS * 2], ay[TWIN_OPS * 2];
    size_t nx = 0, ny = 0;
    for (int o = 0; o < TWIN_OPS; o++) {
        if (x->access[o][t])
            ax[nx++] = (unsigned)o << 8 | (unsigned)x->op_name[o] << 4 | x->access[o][t];
        if (y->access[o][t])
            ay[ny++] = (unsigned)o << 8 | (unsigned)y->op_name[o] << 4 | y->access[o][t];
    }
    return nx != ny || memcmp(ax, ay, nx * sizeof ax[0]) != 0;
}

/* "i j names" of one collision, as text, for comparing the two sides as sorted lists. */
static int cmp_text(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

#define TWIN_MAX_PLANS 10
#define TWIN_LINE      48

/* Thousands of random caches of up to 10 plans under 2 or 3 keys, written each in other
 * spellings, the plans of one key mostly one plan with small changes: cache_collisions
 * (hash-sorted key groups, classes of identical plans) must name exactly the pairs and
 * tensors the oracle does, which compares every pair of descriptions directly. */
static void test_random_caches_twin(void **state)
{
    (void)state;
    const char *env = getenv("TLSAN_DIFF_SEEDS");
    unsigned long seeds = env && *env ? strtoul(env, NULL, 10) : 3000;
    unsigned long collisions = 0, grouped = 0, bad = 0;
    for (unsigned long seed = 1; seed <= seeds; seed++) {
        uint64_t rng = seed * 0x2545f4914f6cdd1dull;
        size_t n = 2 + (size_t)splitmix_below(&rng, TWIN_MAX_PLANS - 1);
        twin_key base_keys[3];
        twin_plan base_plans[3];
        size_t n_keys = 2 + (size_t)splitmix_below(&rng, 2);
        for (size_t k = 0; k < n_keys; k++) {
            base_keys[k] =
                (twin_key){(int)splitmix_below(&rng, 5), (int)splitmix_below(&rng, 3) - 1,
                           (int)splitmix_below(&rng, 3) - 1};
            twin_plan_random(&base_plans[k], &rng);
        }
        twin_key keys[TWIN_MAX_PLANS];
        twin_plan plans[TWIN_MAX_PLANS];
        tlsan_cache *c = tlsan_cache_create();
        assert_non_null(c);
        for (size_t i = 0; i < n; i++) {
            size_t k = (size_t)splitmix_below(&rng, n_keys);
            keys[i] = base_keys[k];
            plans[i] = base_plans[k];
            if (splitmix_chance(&rng, 50))
                twin_plan_mutate(&plans[i], &rng);
            char text[256];
            twin_key_text(&keys[i], &rng, text, sizeof text);
            tlsan_error err;
            tlsan_plan *p = twin_plan_build(&plans[i]);
            if (tlsan_cache_add(c, p, text, &err) != TLSAN_OK)
                fail_msg("seed %lu: key %s refused: %s", seed, text, err.what);
        }
        char want[TWIN_MAX_PLANS * TWIN_MAX_PLANS][TWIN_LINE],
            got[TWIN_MAX_PLANS * TWIN_MAX_PLANS][TWIN_LINE];
        size_t n_want = 0, n_got = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++) {
                if (!twin_key_equal(&keys[i], &keys[j]))
                    continue;
                grouped++;
                int used = snprintf(want[n_want], TWIN_LINE, "%zu %zu", i, j);
                bool any = false;
                for (int t = 0; t < TWIN_TENSORS; t++)
                    if (twin_tensor_differs(&plans[i], &plans[j], t)) {
                        used += snprintf(want[n_want] + used, TWIN_LINE - (size_t)used, " %s",
                                         twin_names[t]);
                        any = true;
                    }
                n_want += any;
            }
        tlsan_report *r = collisions_of(c);
        for (size_t f = 0; f < tlsan_report_count(r); f++) {
            const tlsan_finding *x = tlsan_report_finding(r, f);
            assert_int_equal(x->kind, TLSAN_KIND_CACHE_KEY_COLLISION);
            assert_true(n_got < TWIN_MAX_PLANS * TWIN_MAX_PLANS);
            int used = snprintf(got[n_got], TWIN_LINE, "%lld %lld", (long long)x->plan_index,
                                (long long)x->other_plan_index);
            for (size_t t = 0; t < x->n_tensors; t++)
                used += snprintf(got[n_got] + used, TWIN_LINE - (size_t)used, " %s", x->tensors[t]);
            n_got++;
        }
        qsort(want, n_want, TWIN_LINE, cmp_text);
        qsort(got, n_got, TWIN_LINE, cmp_text);
        bool same = n_want == n_got;
        for (size_t i = 0; same && i < n_want; i++)
            same = strcmp(want[i], got[i]) == 0;
        if (!same) {
            if (bad < 5) {
                fprintf(stderr, "seed %lu: %zu collisions expected, %zu reported\n", seed, n_want,
                        n_got);
                for (size_t i = 0; i < n_want; i++)
                    fprintf(stderr, "  want %s\n", want[i]);
                for (size_t i = 0; i < n_got; i++)
                    fprintf(stderr, "  got  %s\n", got[i]);
            }
            bad++;
        }
        collisions += n_want;
        tlsan_report_free(r);
        tlsan_cache_free(c);
    }
    fprintf(stderr,
            "caches twin: %lu caches, %lu pairs under one key, %lu collisions, %lu disagreements\n",
            seeds, grouped, collisions, bad);
    assert_int_equal(bad, 0);
    /* the sweep holds both outcomes often: equal keys whose plans collide, and whose do not */
    assert_true(collisions > seeds);
    assert_true(grouped > collisions);
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
        cmocka_unit_test(test_random_caches_twin),
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
