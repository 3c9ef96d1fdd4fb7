/* views: the access lists behind a view's declared lifetime, and the hull beyond budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tcheck.h"
#include "check/view_access.h"

/* r <- v (declares) <- w (declares) <- z; v2 (declares) is another view of r. The list of
 * v holds the accesses of v, w and z merged per op; w's those of w and z. */
static void lists_of_a_view_tree(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(
        "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':256}],'tensors':["
        "{'name':'r','bytes':256,'arena':'a','offset':0},"
        "{'name':'v','bytes':128,'view_of':'r','lifetime':[0,4]},"
        "{'name':'w','bytes':64,'view_of':'v','lifetime':[0,4],'output':true},"
        "{'name':'z','bytes':32,'view_of':'w'},"
        "{'name':'v2','bytes':64,'view_of':'r','view_offset':128,'lifetime':[0,4]}],'ops':["
        "{'name':'o0','writes':['r']},"
        "{'name':'o1','reads':['z'],'writes':['v']},"
        "{'name':'o2','reads':['w']},"
        "{'name':'o3','reads':['v2']}]}");
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    view_access va = {0};
    assert_int_equal(view_access_build(&va, p, &ix), 0);
    assert_null(va.hull);
    uint32_t v = tcheck_tensor(p, "v"), w = tcheck_tensor(p, "w"), v2 = tcheck_tensor(p, "v2");
    assert_int_equal(va.start[v + 1] - va.start[v], 2); /* o1 (read z, write v), o2 */
    assert_int_equal(va.op[va.start[v]], 1);
    assert_int_equal(va.rw[va.start[v]], ACC_READ | ACC_WRITE);
    assert_int_equal(va.op[va.start[v] + 1], 2);
    assert_int_equal(va.start[w + 1] - va.start[w], 2); /* o1 (read z), o2 */
    assert_int_equal(va.rw[va.start[w]], ACC_READ);
    assert_int_equal(va.start[v2 + 1] - va.start[v2], 1);
    assert_int_equal(va.op[va.start[v2]], 3);
    /* the output flag of w holds for w and v, not for v2 */
    assert_int_equal(va.flags[w], TLSAN_TENSOR_OUTPUT);
    assert_int_equal(va.flags[v], TLSAN_TENSOR_OUTPUT);
    assert_int_equal(va.flags[v2], 0);
    view_access_free(&va);
    access_index_free(&ix);
    tlsan_plan_free(p);
}

/* Past the budget, a hull per tensor: the span of every access below it. */
static void hull_beyond_budget(void **state)
{
    (void)state;
    const int n = 4000;
    size_t cap = (size_t)n * 120 + 256, len = 0;
    char *j = malloc(cap);
    len += (size_t)snprintf(j, cap,
                            "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':64}],"
                            "'tensors':[{'name':'r','bytes':64,'arena':'a','offset':0}");
    for (int i = 0; i < n; i++) {
        char base[16] = "r";
        if (i)
            snprintf(base, sizeof base, "v%d", i - 1);
        len +=
            (size_t)snprintf(j + len, cap - len,
                             ",{'name':'v%d','bytes':8,'view_of':'%s','lifetime':[0,0]}", i, base);
    }
    len += (size_t)snprintf(j + len, cap - len, "],'ops':[{'name':'w','writes':['r']}");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(j + len, cap - len, ",{'name':'o%d','reads':['v%d']}", i, i);
    snprintf(j + len, cap - len, "]}");
    tlsan_plan *p = tcheck_plan_q(j);
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    view_access va = {0};
    assert_int_equal(view_access_build(&va, p, &ix), 0);
    assert_non_null(va.hull); /* 4000*4001/2 entries would exceed the budget */
    uint32_t v0 = tcheck_tensor(p, "v0"), v100 = tcheck_tensor(p, "v100");
    assert_int_equal(va.hull[v0].first, 1);
    assert_int_equal(va.hull[v0].last, n);
    assert_int_equal(va.hull[v100].first, 101);
    assert_int_equal(va.hull[v100].last, n);
    view_access_free(&va);
    access_index_free(&ix);
    tlsan_plan_free(p);
    free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_of_a_view_tree),
        cmocka_unit_test(hull_beyond_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
