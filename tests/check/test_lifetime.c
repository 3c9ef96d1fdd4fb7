/* lifetime: the access index, relevant accesses and per-path live ranges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "check/lifetime.h"
#include "support/tcheck.h"

/* Accesses through views land on the root, merged per op, in step order. */
static void index_merges_views(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(
        "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':1024}],'tensors':["
        "{'name':'x','bytes':64,'arena':'a','offset':0,'input':true},"
        "{'name':'r','bytes':128,'arena':'a','offset':64},"
        "{'name':'v','bytes':64,'view_of':'r','view_offset':64},"
        "{'name':'vv','bytes':32,'view_of':'v','view_offset':32,'output':true}],'ops':["
        "{'name':'f','reads':['x'],'writes':['r']},"
        "{'name':'g','reads':['v','r'],'writes':['vv']}]}");
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    uint32_t r = tcheck_tensor(p, "r");
    assert_int_equal(ix.start[r + 1] - ix.start[r], 2);
    assert_int_equal(ix.op[ix.start[r]], 0);
    assert_int_equal(ix.rw[ix.start[r]], ACC_WRITE);
    assert_int_equal(ix.op[ix.start[r] + 1], 1);
    assert_int_equal(ix.rw[ix.start[r] + 1], ACC_READ | ACC_WRITE);
    /* the output flag of vv holds for r: live to step n = 2 */
    assert_int_equal(root_must(&ix, p, r).first, 0);
    assert_int_equal(root_must(&ix, p, r).last, 2);
    assert_true(life_empty(root_must(&ix, p, tcheck_tensor(p, "v"))));
    assert_int_equal(p->tensors[tcheck_tensor(p, "vv")].abs_offset_bytes, 64 + 64 + 32);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

/* Per path: one arm keeps t alive to step 3, the other ends it at step 1; the read at
 * step 2 lies inside the must span and is not relevant. */
static void per_path_lifetimes(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(
        "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':1024}],'tensors':["
        "{'name':'x','bytes':64,'arena':'a','offset':0,'input':true},"
        "{'name':'t','bytes':64,'arena':'a','offset':64},"
        "{'name':'y','bytes':64,'arena':'a','offset':128,'output':true}],'ops':["
        "{'name':'w','reads':['x'],'writes':['t']},"
        "{'name':'m','reads':['t'],'writes':['y'],'branch':{'if':'c','arm':'a'}},"
        "{'name':'r','reads':['t'],'writes':['y']},"
        "{'name':'late','reads':['t'],'writes':['y'],'branch':{'if':'c','arm':'b'}}]}");
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    uint32_t t = tcheck_tensor(p, "t");
    uint32_t a = ix.start[t];
    assert_false(ix.rw[a + 1] & ACC_RELEVANT); /* m at step 1: inside [0, 2] */
    assert_true(ix.rw[a + 3] & ACC_RELEVANT);  /* late at step 3 */
    uint32_t arm[1] = {0};
    path_state ps = {.plan = p, .arm = arm};
    life l = root_life(&ix, p, t, &ps);
    assert_int_equal(l.first, 0);
    assert_int_equal(l.last, 2);
    arm[0] = 1;
    l = root_life(&ix, p, t, &ps);
    assert_int_equal(l.last, 3);
    assert_int_equal(ix.hull[t].first, 0);
    assert_int_equal(ix.hull[t].last, 3);
    if_set s;
    assert_int_equal(if_set_init(&s, p->n_ifs), 0);
    if_set_add_root(&s, p, &ix, t);
    assert_int_equal(s.n, 1);
    assert_int_equal(if_set_paths(&s, p), 2);
    if_set_free(&s);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

/* The loop rule: carried (first body access reads) or alive before the loop. */
static void loop_rule(void **state)
{
    (void)state;
    tlsan_plan *p =
        tcheck_plan_q("{'tlsan_plan':1,'arenas':[{'name':'a','bytes':1024}],'tensors':["
                      "{'name':'x','bytes':64,'arena':'a','offset':0,'input':true},"
                      "{'name':'carried','bytes':64,'arena':'a','offset':64},"
                      "{'name':'local','bytes':64,'arena':'a','offset':128},"
                      "{'name':'pre','bytes':64,'arena':'a','offset':192},"
                      "{'name':'y','bytes':64,'arena':'a','offset':256,'output':true}],'ops':["
                      "{'name':'p0','reads':['x'],'writes':['pre']},"
                      "{'name':'b0','reads':['x'],'writes':['local']},"
                      "{'name':'b1','reads':['carried','local'],'writes':['y'],'loop':'L'},"
                      "{'name':'b2','reads':['pre'],'writes':['local'],'loop':'L'},"
                      "{'name':'b3','reads':['local'],'writes':['carried'],'loop':'L'},"
                      "{'name':'b4','reads':['x'],'writes':['y'],'loop':'L'}]}");
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    path_state ps = {.plan = p};
    life c = root_life(&ix, p, tcheck_tensor(p, "carried"), &ps);
    assert_int_equal(c.first, 2);
    assert_int_equal(c.last, 5);
    life lo = root_life(&ix, p, tcheck_tensor(p, "local"), &ps);
    assert_int_equal(lo.first, 1); /* accessed before the loop: the whole body */
    assert_int_equal(lo.last, 5);
    life pr = root_life(&ix, p, tcheck_tensor(p, "pre"), &ps);
    assert_int_equal(pr.first, 0);
    assert_int_equal(pr.last, 5);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_merges_views),
        cmocka_unit_test(per_path_lifetimes),
        cmocka_unit_test(loop_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
