/* order: happens-before queries on small plans, against hand-derived answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "check/order.h"
#include "support/tcheck.h"

/* Three streams: s1 records after writing a, s2 waits and reads a, s3 never syncs. */
#define STREAMS_PLAN                                                                               \
    "{'tlsan_plan':1,'arenas':[{'name':'m','bytes':4096}],'tensors':["                             \
    "{'name':'x','bytes':64,'arena':'m','offset':0,'input':true},"                                 \
    "{'name':'a','bytes':64,'arena':'m','offset':64},"                                             \
    "{'name':'b','bytes':64,'arena':'m','offset':128},"                                            \
    "{'name':'c','bytes':64,'arena':'m','offset':192}],'ops':["                                    \
    "{'name':'wa','reads':['x'],'writes':['a'],'stream':'s1'},"                        /* 0 */     \
    "{'name':'rec','record':'e','stream':'s1'},"                                       /* 1 */     \
    "{'name':'other','reads':['x'],'writes':['c'],'stream':'s3'},"                     /* 2 */     \
    "{'name':'wt','wait':'e','stream':'s2'},"                                          /* 3 */     \
    "{'name':'rb','reads':['a'],'writes':['b'],'stream':'s2'},"                        /* 4 */     \
    "{'name':'after_c','reads':['c'],'writes':['b'],'stream':'s2','after':['other']}," /* 5 */     \
    "{'name':'bar','sync':true},"                                                      /* 6 */     \
    "{'name':'late','reads':['x'],'writes':['c'],'stream':'s3'}]}"                     /* 7 */

static void sequential_edges(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(STREAMS_PLAN);
    access_index ix;
    order_ctx oc;
    assert_int_equal(access_index_build(&ix, p), 0);
    assert_int_equal(order_init(&oc, p, &ix), 0);
    assert_false(oc.total);
    path_state ps = {.plan = p};
    uint32_t bad = 0;
    /* a's accesses (0 write, 4 read) before 5? 0 -> rec -> wt -> 4 -> 5 by program order */
    assert_true(order_forces(&oc, &ps, tcheck_tensor(p, "a"), 5, &bad));
    /* c's write at 2 (stream s3) before 4 (s2)? no edge from s3 into s2 before step 5 */
    assert_false(order_forces(&oc, &ps, tcheck_tensor(p, "c"), 4, &bad));
    assert_int_equal(bad, 2);
    /* ... but `after` makes 2 happen before 5 */
    assert_true(order_forces(&oc, &ps, tcheck_tensor(p, "c"), 5, &bad));
    /* and the barrier orders everything before 7 */
    assert_true(order_forces(&oc, &ps, tcheck_tensor(p, "b"), 7, &bad));
    order_free(&oc);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

static void single_stream_is_total(void **state)
{
    (void)state;
    tlsan_plan *p =
        tcheck_plan_q("{'tlsan_plan':1,'arenas':[{'name':'m','bytes':64}],'tensors':["
                      "{'name':'x','bytes':64,'arena':'m','offset':0,'input':true}],'ops':["
                      "{'name':'o','reads':['x'],'stream':'only'}]}");
    access_index ix;
    order_ctx oc;
    assert_int_equal(access_index_build(&ix, p), 0);
    assert_int_equal(order_init(&oc, p, &ix), 0);
    assert_true(oc.total);
    order_free(&oc);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

/* Dataflow: reads wait for the latest write; writes wait for the reads since. */
static void dataflow_edges(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(
        "{'tlsan_plan':1,'schedule':'dataflow','arenas':[{'name':'m','bytes':4096}],'tensors':["
        "{'name':'x','bytes':64,'arena':'m','offset':0,'input':true},"
        "{'name':'a','bytes':64,'arena':'m','offset':64},"
        "{'name':'b','bytes':64,'arena':'m','offset':128},"
        "{'name':'c','bytes':64,'arena':'m','offset':192},"
        "{'name':'d','bytes':64,'arena':'m','offset':256}],'ops':["
        "{'name':'w1','reads':['x'],'writes':['a']},"   /* 0 */
        "{'name':'r1','reads':['a'],'writes':['b']},"   /* 1 */
        "{'name':'r2','reads':['a'],'writes':['c']},"   /* 2 */
        "{'name':'w2','reads':['x'],'writes':['a']},"   /* 3: after both reads of a */
        "{'name':'u','reads':['b'],'writes':['d']}]}"); /* 4: after r1 (b) only */
    access_index ix;
    order_ctx oc;
    assert_int_equal(access_index_build(&ix, p), 0);
    assert_int_equal(order_init(&oc, p, &ix), 0);
    path_state ps = {.plan = p};
    uint32_t bad = 0;
    /* c (written at 2) before 3? 2 reads a, 3 writes a: read -> later write */
    assert_true(order_forces(&oc, &ps, tcheck_tensor(p, "c"), 3, &bad));
    /* c before 4? 4 depends on 1 (the write of b) and transitively on 0; not on 2 */
    assert_false(order_forces(&oc, &ps, tcheck_tensor(p, "c"), 4, &bad));
    assert_int_equal(bad, 2);
    order_free(&oc);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sequential_edges),
        cmocka_unit_test(single_stream_is_total),
        cmocka_unit_test(dataflow_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
