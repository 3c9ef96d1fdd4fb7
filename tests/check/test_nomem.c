/* Every out-of-memory path of the builder and the checker: a fault-injecting allocator
 * (after SQLite's test harness) fails the Nth allocation for N = 1, 2, ... until a run
 * completes; each failing run must return TLSAN_ERR_NOMEM (or NULL), leave no block behind
 * and never crash, and the completing run must give the exact findings.
 *
 * The allocator replaces malloc/calloc/realloc/free in this test executable only; it is off
 * under AddressSanitizer, which owns the allocator there. The reader's own error paths are
 * covered by tests/import/test_reader.c through its allocator hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tcheck.h"

#if defined(__SANITIZE_ADDRESS__)
#define NOMEM_TESTABLE 0
int main(void)
{
    fprintf(stderr, "test_nomem: skipped: AddressSanitizer owns the allocator in this build\n");
    return 77;
}
#else
#define NOMEM_TESTABLE 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static long fail_at;  /* fail the allocation with this number; 0 = never */
static long n_allocs; /* allocations attempted while armed */
static long live;     /* blocks outstanding */

static int should_fail(void)
{
    if (fail_at == 0)
        return 0;
    return ++n_allocs == fail_at;
}

void *malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __libc_malloc(n);
    if (p)
        live++;
    return p;
}

void *calloc(size_t a, size_t b)
{
    if (should_fail())
        return NULL;
    void *p = __libc_calloc(a, b);
    if (p)
        live++;
    return p;
}

void *realloc(void *q, size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __libc_realloc(q, n);
    if (p && !q)
        live++;
    return p;
}

void free(void *p)
{
    if (p)
        live--;
    __libc_free(p);
}

/* Branches, a loop, views, in-place, two streams with events, declared lifetimes and a
 * layout error: every module of the checker allocates on this plan. */
static const char *rich_plan =
    "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':1024,'alignment':64}],'tensors':["
    "{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
    "{'name':'a','bytes':128,'arena':'a0','offset':64,'lifetime':[0,1]},"
    "{'name':'av','bytes':64,'view_of':'a','view_offset':64,'lifetime':[1,1]},"
    "{'name':'b','bytes':128,'arena':'a0','offset':64},"
    "{'name':'c','bytes':64,'arena':'a0','offset':192},"
    "{'name':'d','bytes':64,'arena':'a0','offset':192},"
    "{'name':'e','bytes':64,'arena':'a0','offset':256,'dtype':'f32','shape':[32]},"
    "{'name':'y','bytes':64,'arena':'a0','offset':1000,'output':true}],'ops':["
    "{'name':'f','reads':['x'],'writes':['a']},"
    "{'name':'g','reads':['av'],'writes':['c'],'branch':{'if':'k','arm':'then'}},"
    "{'name':'h','reads':['a'],'writes':['b'],'inplace':[['b','a']],'stream':'s2'},"
    "{'name':'r','record':'ev','stream':'s2'},"
    "{'name':'w','wait':'ev'},"
    "{'name':'l1','reads':['b'],'writes':['d'],'loop':'L'},"
    "{'name':'l2','reads':['d','c'],'writes':['e'],'loop':'L'},"
    "{'name':'o','reads':['e'],'writes':['y']}]}";

static void checker_out_of_memory(void **state)
{
    (void)state;
    char *lines = tcheck_q(rich_plan, 0);
    assert_string_equal(lines, "lifetime-too-short a\nlive-overlap c d\nmisaligned y\n"
                               "out-of-bounds y\nread-before-write c\nsize-mismatch e");
    free(lines);
    tlsan_plan *p = tcheck_plan_q(rich_plan);
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    size_t want = tlsan_report_count(r);
    assert_int_equal(want, 6);
    tlsan_report_free(r);
    long n;
    for (n = 1;; n++) {
        long before = live;
        n_allocs = 0;
        fail_at = n;
        tlsan_status st = tlsan_check(p, NULL, &r);
        fail_at = 0;
        if (st == TLSAN_OK) {
            assert_int_equal(tlsan_report_count(r), want);
            tlsan_report_free(r);
            assert_int_equal(live, before);
            break;
        }
        assert_int_equal(st, TLSAN_ERR_NOMEM);
        assert_null(r);
        assert_int_equal(live, before);
    }
    print_message("checker: %ld allocation failures injected, each handled\n", n - 1);
    assert_true(n > 10);
    tlsan_plan_free(p);
}

/* Builds a small plan through the API; returns the first failing status. */
static tlsan_status build(tlsan_plan **out)
{
    tlsan_plan *p = tlsan_plan_create();
    *out = p;
    if (!p)
        return TLSAN_ERR_NOMEM;
    tlsan_status st = tlsan_plan_set_name(p, "nomem");
    tlsan_arena_desc a = {.name = "a0", .bytes = 4096};
    if (st == TLSAN_OK)
        st = tlsan_plan_add_arena(p, &a, NULL);
    const char *frames[] = {"planner.c:1", "planner.c:2"};
    uint64_t shape[] = {4, 4};
    for (int i = 0; st == TLSAN_OK && i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        tlsan_tensor_desc t = {.name = name,
                               .bytes = 64,
                               .arena = "a0",
                               .offset_bytes = (uint64_t)(i % 8) * 64,
                               .dtype = TLSAN_DTYPE_F32,
                               .shape = shape,
                               .n_shape = 2,
                               .stack = frames,
                               .n_stack = 2};
        st = tlsan_plan_add_tensor(p, &t, NULL);
    }
    for (int i = 0; st == TLSAN_OK && i < 39; i++) {
        char name[16], rn[16], wn[16];
        /* names without a number, so that the string table's hash table is built too */
        snprintf(name, sizeof name, "op_%c%c", 'a' + i / 26, 'a' + i % 26);
        snprintf(rn, sizeof rn, "t%d", i);
        snprintf(wn, sizeof wn, "t%d", i + 1);
        const char *rd[] = {rn}, *wr[] = {wn};
        tlsan_cond c[] = {{"c", i % 2 ? "then" : "else"}};
        tlsan_op_desc o = {.name = name,
                           .reads = rd,
                           .n_reads = 1,
                           .writes = wr,
                           .n_writes = 1,
                           .branch = c,
                           .n_branch = i % 3 == 0,
                           .loop = i > 30 ? "L" : NULL};
        st = tlsan_plan_add_op(p, &o, NULL);
    }
    if (st == TLSAN_OK)
        st = tlsan_plan_finalize(p, NULL);
    return st;
}

static void builder_out_of_memory(void **state)
{
    (void)state;
    long n;
    for (n = 1;; n++) {
        long before = live;
        n_allocs = 0;
        fail_at = n;
        tlsan_plan *p = NULL;
        tlsan_status st = build(&p);
        fail_at = 0;
        if (st == TLSAN_OK) {
            assert_int_equal(tlsan_plan_n_tensors(p), 40);
            assert_int_equal(tlsan_plan_n_ops(p), 39);
            tlsan_plan_free(p);
            assert_int_equal(live, before);
            break;
        }
        assert_int_equal(st, TLSAN_ERR_NOMEM);
        tlsan_plan_free(p);
        assert_int_equal(live, before);
    }
    print_message("builder: %ld allocation failures injected, each handled\n", n - 1);
    assert_true(n > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checker_out_of_memory),
        cmocka_unit_test(builder_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif /* NOMEM_TESTABLE */
