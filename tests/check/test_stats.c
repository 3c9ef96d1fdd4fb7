/* stats: required bytes and the live-bytes lower bound, per path and beyond 64 paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/stats.h"
#include "support/tcheck.h"

static plan_stats stats_of(tlsan_plan *p)
{
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    uint32_t *arm = calloc(p->n_ifs ? p->n_ifs : 1, sizeof *arm);
    path_state ps = {.plan = p, .arm = arm};
    if_set set;
    assert_int_equal(if_set_init(&set, p->n_ifs), 0);
    plan_stats s = {0};
    assert_int_equal(stats_compute(p, &ix, &ps, &set, &s), 0);
    if_set_free(&set);
    free(arm);
    access_index_free(&ix);
    return s;
}

/* Two exclusive arms: 300 bytes live together on one path, 500 on the other. The bound is
 * the larger, not the 800 of both arms at once. */
static void lower_bound_is_the_worst_path(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(
        "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':4096}],'tensors':["
        "{'name':'x','bytes':100,'arena':'a','offset':0,'input':true},"
        "{'name':'p','bytes':200,'arena':'a','offset':128},"
        "{'name':'q','bytes':400,'arena':'a','offset':512},"
        "{'name':'y','bytes':10,'arena':'a','offset':1024,'output':true}],'ops':["
        "{'name':'f','reads':['x'],'writes':['p'],'branch':{'if':'c','arm':'then'}},"
        "{'name':'g','reads':['x'],'writes':['q'],'branch':{'if':'c','arm':'else'}},"
        "{'name':'h','reads':['p'],'writes':['y'],'branch':{'if':'c','arm':'then'}},"
        "{'name':'k','reads':['q'],'writes':['y'],'branch':{'if':'c','arm':'else'}}]}");
    plan_stats s = stats_of(p);
    assert_int_equal(s.n_arenas, 1);
    assert_int_equal(s.arenas[0].required_bytes, 1034);
    assert_int_equal(s.arenas[0].lower_bound_bytes, 500); /* x + q at step 1 */
    assert_false(s.arenas[0].approximate);
    free(s.arenas);
    tlsan_plan_free(p);
}

/* An in-place op writes its output over the input it reads last: at that step the pair needs
 * its bytes once. x (100) -> a (200) -> relu in place -> b (200) -> y (10): the worst step
 * holds x and a (300) or a/b and y (210), never a and b apart, so the bound stays within the
 * 310-byte arena that shares a and b. */
static void inplace_pair_counts_once(void **state)
{
    (void)state;
    tlsan_plan *p =
        tcheck_plan_q("{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':310}],'tensors':["
                      "{'name':'x','bytes':100,'arena':'a0','offset':0,'input':true},"
                      "{'name':'a','bytes':200,'arena':'a0','offset':100},"
                      "{'name':'b','bytes':200,'arena':'a0','offset':100},"
                      "{'name':'y','bytes':10,'arena':'a0','offset':300,'output':true}],'ops':["
                      "{'name':'f','reads':['x'],'writes':['a']},"
                      "{'name':'relu','reads':['a'],'writes':['b'],'inplace':[['b','a']]},"
                      "{'name':'g','reads':['b'],'writes':['y']}]}");
    plan_stats s = stats_of(p);
    assert_int_equal(s.arenas[0].required_bytes, 310);
    assert_int_equal(s.arenas[0].lower_bound_bytes, 300); /* x + a at step 0 */
    free(s.arenas);
    tlsan_plan_free(p);
}

/* 7 ifs (128 paths): the bound comes from the spans live on every path, and says so. */
static void beyond_64_paths(void **state)
{
    (void)state;
    char j[4096];
    size_t n = (size_t)snprintf(j, sizeof j,
                                "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':4096}],'tensors':["
                                "{'name':'x','bytes':100,'arena':'a','offset':0,'input':true},"
                                "{'name':'t','bytes':50,'arena':'a','offset':128},"
                                "{'name':'y','bytes':10,'arena':'a','offset':256,'output':true}],"
                                "'ops':[{'name':'f','reads':['x'],'writes':['t']}");
    for (int i = 0; i < 7; i++)
        n += (size_t)snprintf(j + n, sizeof j - n,
                              ",{'name':'c%d','reads':['t'],'branch':{'if':'c%d','arm':'then'}}", i,
                              i);
    snprintf(j + n, sizeof j - n, ",{'name':'g','reads':['t'],'writes':['y']}]}");
    tlsan_plan *p = tcheck_plan_q(j);
    plan_stats s = stats_of(p);
    assert_true(s.arenas[0].approximate);
    /* x (input) and t share step 0: 150 bytes are live on every path */
    assert_int_equal(s.arenas[0].lower_bound_bytes, 150);
    free(s.arenas);
    tlsan_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lower_bound_is_the_worst_path),
        cmocka_unit_test(inplace_pair_counts_once),
        cmocka_unit_test(beyond_64_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
