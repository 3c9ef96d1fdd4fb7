/* check: scenarios beyond the shared cases, each with its exact findings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/tcheck.h"

#define HEAD "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':65536,'alignment':64}],"

static void expect(const char *json_q, const char *want)
{
    char *got = tcheck_q(json_q, 0);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "got:\n%s\nwant:\n%s\n", got, want);
    assert_string_equal(got, want);
    free(got);
}

/* 40 independent ifs, each with two exclusive arms sharing one slot, plus one real bug:
 * z lives across everything on the bytes of p5. Paths must not multiply. */
static void forty_independent_ifs(void **state)
{
    (void)state;
    size_t cap = 1 << 16, len = 0;
    char *j = malloc(cap);
    len += (size_t)snprintf(j + len, cap - len,
                            "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':1048576}],'tensors':["
                            "{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
                            "{'name':'z','bytes':64,'arena':'a0','offset':%d},"
                            "{'name':'out','bytes':64,'arena':'a0','offset':64,'output':true}",
                            128 + 5 * 192);
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(j + len, cap - len,
                                ",{'name':'p%d','bytes':64,'arena':'a0','offset':%d}"
                                ",{'name':'q%d','bytes':64,'arena':'a0','offset':%d}"
                                ",{'name':'y%d','bytes':64,'arena':'a0','offset':%d,'output':true}",
                                i, 128 + i * 192, i, 128 + i * 192, i, 128 + i * 192 + 64);
    len += (size_t)snprintf(j + len, cap - len,
                            "],'ops':[{'name':'mkz','reads':['x'],'writes':['z']}");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(
            j + len, cap - len,
            ",{'name':'t%d','reads':['x'],'writes':['p%d'],'branch':{'if':'c%d','arm':'then'}}"
            ",{'name':'t%db','reads':['p%d'],'writes':['y%d'],'branch':{'if':'c%d','arm':'then'}}"
            ",{'name':'e%d','reads':['x'],'writes':['q%d'],'branch':{'if':'c%d','arm':'else'}}"
            ",{'name':'e%db','reads':['q%d'],'writes':['y%d'],'branch':{'if':'c%d','arm':'else'}}",
            i, i, i, i, i, i, i, i, i, i, i, i, i, i);
    len += (size_t)snprintf(j + len, cap - len, ",{'name':'fin','reads':['z'],'writes':['out']}]}");
    assert_true(len < cap);
    clock_t t0 = clock();
    char *got = tcheck_q(j, 0);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_string_equal(got, "live-overlap p5 z\nlive-overlap q5 z");
    assert_true(s < 1.0);
    free(got);
    free(j);
}

/* When a question has more paths than allowed, it is judged on the union of all paths:
 * conservatively, so nothing is missed, and every finding so judged says so. Here the
 * union makes p and q collide, and a write that may be skipped no longer covers the read. */
static void too_many_paths_is_approximate(void **state)
{
    (void)state;
    const char *plan =
        HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
             "{'name':'p','bytes':64,'arena':'a0','offset':64},"
             "{'name':'q','bytes':64,'arena':'a0','offset':64},"
             "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
             "{'name':'a','reads':['x'],'writes':['p'],'branch':{'if':'c','arm':'then'}},"
             "{'name':'b','reads':['x'],'writes':['q'],'branch':{'if':'c','arm':'else'}},"
             "{'name':'c','reads':['p'],'writes':['y'],'branch':{'if':'c','arm':'then'}},"
             "{'name':'d','reads':['q'],'writes':['y'],'branch':{'if':'c','arm':'else'}}]}";
    char *exact = tcheck_q(plan, 0);
    assert_string_equal(exact, "");
    free(exact);
    char *approx = tcheck_q(plan, 1);
    assert_string_equal(approx, "live-overlap p q\nread-before-write p\nread-before-write q");
    free(approx);
    tlsan_plan *p = tcheck_plan_q(plan);
    tlsan_check_options opt = {.max_paths = 1};
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, &opt, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), 3);
    for (size_t i = 0; i < 3; i++)
        assert_true(tlsan_report_finding(r, i)->approximate);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

/* The union of paths must never lose a finding (these each have 13 ifs, past the default
 * limit of 4096 paths for one question). */
static void approximation_is_conservative(void **state)
{
    (void)state;
    /* 13 optional writes, then a read: on the path where none runs, the read is first. */
    char buf[8192];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                HEAD "'tensors':[{'name':'t','bytes':64,'arena':'a0','offset':0},"
                                     "{'name':'y','bytes':64,'arena':'a0','offset':64,"
                                     "'output':true}],'ops':[");
    for (int k = 0; k < 13; k++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "{'name':'w%d','writes':['t'],'branch':{'if':'c%d','arm':'then'}},",
                              k, k);
    snprintf(buf + n, sizeof buf - n, "{'name':'r','reads':['t'],'writes':['y']}]}");
    char *got = tcheck_q(buf, 0);
    assert_string_equal(got, "read-before-write t");
    free(got);
    /* Record and wait on exclusive arms never pair; 12 more ifs of unrelated ops sit in
     * between, so the pair is judged on the union of paths. */
    n = (size_t)snprintf(buf, sizeof buf,
                         HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,"
                              "'input':true},{'name':'a','bytes':64,'arena':'a0','offset':64},"
                              "{'name':'b','bytes':64,'arena':'a0','offset':64},"
                              "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],"
                              "'ops':[{'name':'pa','reads':['x'],'writes':['a'],'stream':'s1'},"
                              "{'name':'ra','reads':['a'],'writes':['y'],'stream':'s1'},"
                              "{'name':'rec','record':'e','stream':'s1','branch':{'if':'c0',"
                              "'arm':'then'}},");
    for (int k = 1; k <= 12; k++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "{'name':'nop%d','stream':'s3','branch':{'if':'c%d','arm':'then'}},",
                              k, k);
    snprintf(buf + n, sizeof buf - n,
             "{'name':'wt','wait':'e','branch':{'if':'c0','arm':'else'}},"
             "{'name':'pb','reads':['x'],'writes':['b']},"
             "{'name':'rb','reads':['b'],'writes':['y']}]}");
    got = tcheck_q(buf, 0);
    assert_string_equal(got, "unordered-reuse a b");
    free(got);
}

/* In-place inside a loop: fine when the input is born in the body, not when it is carried
 * in from before the loop (then it is live to the loop's end, past the in-place op). */
static void inplace_in_loop(void **state)
{
    (void)state;
    expect(HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
                "{'name':'h','bytes':64,'arena':'a0','offset':64},"
                "{'name':'g','bytes':64,'arena':'a0','offset':64},"
                "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
                "{'name':'mk','reads':['x'],'writes':['h'],'loop':'L'},"
                "{'name':'relu','reads':['h'],'writes':['g'],'inplace':[['g','h']],'loop':'L'},"
                "{'name':'use','reads':['g'],'writes':['y'],'loop':'L'}]}",
           "");
    expect(HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
                "{'name':'h','bytes':64,'arena':'a0','offset':64},"
                "{'name':'g','bytes':64,'arena':'a0','offset':64},"
                "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
                "{'name':'mk','reads':['x'],'writes':['h']},"
                "{'name':'relu','reads':['h'],'writes':['g'],'inplace':[['g','h']],'loop':'L'},"
                "{'name':'use','reads':['g'],'writes':['y'],'loop':'L'}]}",
           "bad-inplace g h");
    /* and the report says which condition of the exception fails */
    tlsan_plan *p = tcheck_plan_q(
        HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
             "{'name':'h','bytes':64,'arena':'a0','offset':64},"
             "{'name':'g','bytes':64,'arena':'a0','offset':64},"
             "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
             "{'name':'mk','reads':['x'],'writes':['h']},"
             "{'name':'relu','reads':['h'],'writes':['g'],'inplace':[['g','h']],'loop':'L'},"
             "{'name':'use','reads':['g'],'writes':['y'],'loop':'L'}]}");
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), 1);
    assert_non_null(strstr(tlsan_report_finding(r, 0)->message,
                           "'h' is still live at step 2 (a loop extension: 'h' is carried "
                           "round loop 'L', so live over all of its steps 1..2), after op "
                           "'relu' (step 1)"));
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

/* In-place over part of a concat: excused when the op reads only the declared input and
 * bytes outside the output, not when it also reads the output's bytes through the whole
 * concat or through a shifted view (plan-format.md's in-place amendment). */
#define CONCAT_PLAN(READS)                                                                         \
    HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"                \
         "{'name':'cat','bytes':128,'arena':'a0','offset':64},"                                    \
         "{'name':'lo','bytes':64,'view_of':'cat','view_offset':0},"                               \
         "{'name':'mid','bytes':64,'view_of':'cat','view_offset':32},"                             \
         "{'name':'hi','bytes':64,'view_of':'cat','view_offset':64},"                              \
         "{'name':'s','bytes':64,'arena':'a0','offset':64},"                                       \
         "{'name':'y','bytes':64,'arena':'a0','offset':192,'output':true}],'ops':["                \
         "{'name':'l','reads':['x'],'writes':['lo']},{'name':'r','reads':['x'],'writes':['hi']},"  \
         "{'name':'k','reads':[" READS "],'writes':['s'],'inplace':[['s','lo']]},"                 \
         "{'name':'out','reads':['s'],'writes':['y']}]}"
static void inplace_reads_output_bytes_elsewhere(void **state)
{
    (void)state;
    expect(CONCAT_PLAN("'lo','hi'"), "");
    expect(CONCAT_PLAN("'hi','lo'"), "");
    expect(CONCAT_PLAN("'cat','lo'"), "bad-inplace cat s");
    expect(CONCAT_PLAN("'lo','mid'"), "bad-inplace cat s");
    tlsan_plan *p = tcheck_plan_q(CONCAT_PLAN("'lo','mid'"));
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), 1);
    assert_non_null(strstr(tlsan_report_finding(r, 0)->message,
                           "op 'k' reads bytes of 's' through 'mid', which is not 'lo'"));
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

/* Written on one arm only, read on both: the other arm reads garbage. */
static void read_before_write_on_one_arm(void **state)
{
    (void)state;
    expect(HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
                "{'name':'t','bytes':64,'arena':'a0','offset':64},"
                "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
                "{'name':'w','reads':['x'],'writes':['t'],'branch':{'if':'c','arm':'then'}},"
                "{'name':'r','reads':['t'],'writes':['y']}]}",
           "read-before-write t");
}

#define ASYNC_TENSORS                                                                              \
    "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"                     \
    "{'name':'a','bytes':64,'arena':'a0','offset':64},"                                            \
    "{'name':'b','bytes':64,'arena':'a0','offset':64},"                                            \
    "{'name':'c','bytes':64,'arena':'a0','offset':128},"                                           \
    "{'name':'y','bytes':64,'arena':'a0','offset':192,'output':true}],"

/* A barrier orders the copy stream's read before the main stream's reuse. */
static void sync_orders_streams(void **state)
{
    (void)state;
    expect(HEAD ASYNC_TENSORS "'ops':[{'name':'prod','reads':['x'],'writes':['a']},"
                              "{'name':'ev','record':'e0'},"
                              "{'name':'w','wait':'e0','stream':'copy'},"
                              "{'name':'cp','reads':['a'],'writes':['c'],'stream':'copy'},"
                              "{'name':'bar','sync':true},"
                              "{'name':'next','reads':['x'],'writes':['b']},"
                              "{'name':'fin','reads':['b','c'],'writes':['y']}]}",
           "");
    /* `after` is an explicit edge too. */
    expect(HEAD ASYNC_TENSORS "'ops':[{'name':'prod','reads':['x'],'writes':['a']},"
                              "{'name':'ev','record':'e0'},"
                              "{'name':'w','wait':'e0','stream':'copy'},"
                              "{'name':'cp','reads':['a'],'writes':['c'],'stream':'copy'},"
                              "{'name':'next','reads':['x'],'writes':['b'],'after':['cp']},"
                              "{'name':'fin','reads':['b','c'],'writes':['y']}]}",
           "");
}

/* A wait pairs with the latest earlier record of its event: recorded before the copy ran,
 * it does not cover the copy. */
static void wait_pairs_with_latest_record(void **state)
{
    (void)state;
    expect(HEAD ASYNC_TENSORS "'ops':[{'name':'prod','reads':['x'],'writes':['a']},"
                              "{'name':'ev','record':'e0'},"
                              "{'name':'w0','wait':'e0','stream':'copy'},"
                              "{'name':'early','record':'e1','stream':'copy'},"
                              "{'name':'cp','reads':['a'],'writes':['c'],'stream':'copy'},"
                              "{'name':'w1','wait':'e1'},"
                              "{'name':'next','reads':['x'],'writes':['b']},"
                              "{'name':'fin','reads':['b','c'],'writes':['y']}]}",
           "unordered-reuse a b");
}

/* Under dataflow, order may come through another root's dependency chain. */
static void dataflow_chain(void **state)
{
    (void)state;
    expect("{'tlsan_plan':1,'schedule':'dataflow','arenas':[{'name':'a0','bytes':65536}]"
           "," ASYNC_TENSORS "'ops':[{'name':'f','reads':['x'],'writes':['a']},"
           "{'name':'g','reads':['a'],'writes':['c']},"
           "{'name':'h','reads':['c'],'writes':['b']},"
           "{'name':'k','reads':['b','c'],'writes':['y']}]}",
           "");
}

/* Views: past their base's end, misaligned by their own alignment, and a declared
 * lifetime on a view judged by the view's own accesses. */
static void view_layout_and_lifetime(void **state)
{
    (void)state;
    expect(HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
                "{'name':'a','bytes':256,'arena':'a0','offset':64},"
                "{'name':'v','bytes':128,'view_of':'a','view_offset':192,'alignment':512},"
                "{'name':'w','bytes':64,'view_of':'a','view_offset':0,'lifetime':[1,1]},"
                "{'name':'y','bytes':64,'arena':'a0','offset':512,'output':true}],'ops':["
                "{'name':'f','reads':['x'],'writes':['a']},"
                "{'name':'g','reads':['w'],'writes':['y']},"
                "{'name':'h','reads':['w','y'],'writes':['y']}]}",
           "lifetime-too-short w\nmisaligned v\nout-of-bounds v");
}

/* A chain of views, view i accessed by op i, each declaring [i, n_ops] (its own access
 * and those of the views below it, up to the last op), except view k, which declares
 * [k, k] though the views below it are used later. */
static char *view_chain(int n, int k)
{
    size_t cap = (size_t)n * 200 + 1024, len = 0;
    char *j = malloc(cap);
    len += (size_t)snprintf(j, cap,
                            "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':64}],'tensors':["
                            "{'name':'r','bytes':64,'arena':'a','offset':0,'input':true}");
    for (int i = 0; i < n; i++) {
        char base[16] = "r";
        if (i)
            snprintf(base, sizeof base, "v%d", i - 1);
        len += (size_t)snprintf(j + len, cap - len,
                                ",{'name':'v%d','bytes':64,'view_of':'%s','lifetime':[%d,%d]}", i,
                                base, i, i == k ? k : n);
    }
    len += (size_t)snprintf(j + len, cap - len, "],'ops':[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(j + len, cap - len, "%s{'name':'o%d','reads':['v%d']}",
                                i ? "," : "", i, i);
    snprintf(j + len, cap - len, "]}");
    return j;
}

/* Deep chains of views that declare lifetimes: exact when small, and a linear-time hull
 * (never missing a finding, marked approximate) when the exact lists would be quadratic. */
static void deep_view_chains(void **state)
{
    (void)state;
    char *small = view_chain(50, 20);
    char *got = tcheck_q(small, 0);
    assert_string_equal(got, "lifetime-too-short v20");
    free(got);
    free(small);
    char *big = view_chain(4000, 1234);
    clock_t t0 = clock();
    got = tcheck_q(big, 0);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_string_equal(got, "lifetime-too-short v1234");
    assert_true(secs < 2.0);
    free(got);
    tlsan_plan *p = tcheck_plan_q(big);
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), 1);
    assert_true(tlsan_report_finding(r, 0)->approximate);
    assert_int_equal(tlsan_report_finding(r, 0)->lifetimes[0][0], 1234);
    assert_int_equal(tlsan_report_finding(r, 0)->lifetimes[0][1], 3999);
    tlsan_report_free(r);
    tlsan_plan_free(p);
    free(big);
}

/* One slot reused by 20000 tenants that alternate between two streams, each handed over by
 * an event, except the wait between t5 and t6. Only that reuse is unordered; the checker
 * must find it without asking about the 2*10^8 pairs of tenants, also when an unrelated op
 * elsewhere has a branch condition. */
static char *reuse_chain(int n, bool with_branch)
{
    size_t cap = (size_t)n * 400 + 1024, len = 0;
    char *j = malloc(cap);
    len += (size_t)snprintf(j, cap,
                            "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':128}],"
                            "'tensors':[{'name':'x','bytes':64,'arena':'a','offset':64,"
                            "'input':true}");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(j + len, cap - len,
                                ",{'name':'t%d','bytes':64,'arena':'a','offset':0}", i);
    len += (size_t)snprintf(j + len, cap - len, "],'ops':[");
    if (with_branch)
        len += (size_t)snprintf(j + len, cap - len,
                                "{'name':'aside','branch':{'if':'c','arm':'then'}},");
    for (int i = 0; i < n; i++) {
        int s = i % 2;
        if (i > 0 && i != 6)
            len += (size_t)snprintf(j + len, cap - len,
                                    "{'name':'w%d','wait':'e%d','stream':'s%d'},", i, i - 1, s);
        len += (size_t)snprintf(j + len, cap - len,
                                "{'name':'mk%d','reads':['x'],'writes':['t%d'],'stream':'s%d'},"
                                "{'name':'use%d','reads':['t%d'],'stream':'s%d'},"
                                "{'name':'r%d','record':'e%d','stream':'s%d'}%s",
                                i, i, s, i, i, s, i, i, s, i + 1 < n ? "," : "");
    }
    snprintf(j + len, cap - len, "]}");
    return j;
}

static void long_reuse_chain_on_two_streams(void **state)
{
    (void)state;
    for (int branch = 0; branch < 2; branch++) {
        char *j = reuse_chain(20000, branch);
        clock_t t0 = clock();
        char *got = tcheck_q(j, 0);
        double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
        assert_string_equal(got, "unordered-reuse t5 t6");
        assert_true(secs < 2.0);
        free(got);
        free(j);
    }
}

/* A run repeated n times on two streams, as replay rebuilds it, where each run's y is read
 * on the host after the host's record that lets the next run start (enqueued while the host
 * still reads): each y is unordered with the next run's, and only with it. */
static char *late_host_runs(unsigned n)
{
    char *j = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&j, &len);
    assert_non_null(f);
    fprintf(f, "{\"tlsan_plan\":1,\"arenas\":[{\"name\":\"a0\",\"bytes\":256}],\"tensors\":["
               "{\"name\":\"x\",\"bytes\":64,\"arena\":\"a0\",\"offset\":0,\"input\":true}");
    for (unsigned r = 1; r <= n; r++)
        fprintf(f, ",{\"name\":\"y#%u\",\"bytes\":64,\"arena\":\"a0\",\"offset\":64}", r);
    fprintf(f, "],\"ops\":[");
    for (unsigned r = 1; r <= n; r++) {
        if (r >= 3)
            fprintf(f, "{\"name\":\"enqueue#%u\",\"wait\":\"host\",\"stream\":\"s1\"},", r);
        fprintf(f,
                "{\"name\":\"k1#%u\",\"reads\":[\"x\"],\"writes\":[\"y#%u\"],\"stream\":\"s1\"},"
                "{\"name\":\"rec#%u\",\"record\":\"e1\",\"stream\":\"s1\"},"
                "{\"name\":\"wait#%u\",\"wait\":\"e1\"},"
                "{\"name\":\"host#%u\",\"record\":\"host\"},"
                "{\"name\":\"post#%u\",\"reads\":[\"y#%u\"]}%s",
                r, r, r, r, r, r, r, r == n ? "" : ",");
    }
    fprintf(f, "]}");
    fclose(f);
    return j;
}

/* The segment of that slot fails a link at every tenant: each later tenant is judged by the
 * clocks' range-max trees, and exactly the n - 1 pairs of consecutive runs are found. */
static void reuse_bug_in_every_run(void **state)
{
    (void)state;
    const unsigned n = 5000;
    char *j = late_host_runs(n);
    tlsan_plan *p = tcheck_plan(j);
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), n - 1);
    assert_int_equal(tlsan_report_count_kind(r, TLSAN_KIND_UNORDERED_REUSE), n - 1);
    for (size_t i = 0; i < n - 1; i++) {
        const tlsan_finding *f = tlsan_report_finding(r, i);
        unsigned a = (unsigned)strtoul(f->tensors[0] + 2, NULL, 10);
        unsigned b = (unsigned)strtoul(f->tensors[1] + 2, NULL, 10);
        assert_int_equal(a > b ? a - b : b - a, 1);
    }
    tlsan_report_free(r);
    tlsan_plan_free(p);
    free(j);
}

/* A constant is live from before the first op to after the last. */
static void constant_is_live_throughout(void **state)
{
    (void)state;
    expect(HEAD "'tensors':[{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
                "{'name':'w','bytes':64,'arena':'a0','offset':64,'constant':true},"
                "{'name':'t','bytes':64,'arena':'a0','offset':64},"
                "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
                "{'name':'f','reads':['x'],'writes':['t']},"
                "{'name':'g','reads':['t'],'writes':['y']}]}",
           "live-overlap t w");
}

/* Stats: required = largest end offset; lower bound = peak of live bytes at one step. */
static void arena_stats(void **state)
{
    (void)state;
    tlsan_plan *p = tcheck_plan_q(
        HEAD "'tensors':[{'name':'x','bytes':100,'arena':'a0','offset':0,'input':true},"
             "{'name':'a','bytes':200,'arena':'a0','offset':128},"
             "{'name':'b','bytes':300,'arena':'a0','offset':384},"
             "{'name':'c','bytes':200,'arena':'a0','offset':128},"
             "{'name':'y','bytes':50,'arena':'a0','offset':704,'output':true}],'ops':["
             "{'name':'f','reads':['x'],'writes':['a']},"
             "{'name':'g','reads':['a'],'writes':['b']},"
             "{'name':'h','reads':['b'],'writes':['c']},"
             "{'name':'k','reads':['c'],'writes':['y']}]}");
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), 0);
    assert_int_equal(tlsan_report_n_arena_stats(r, 0), 1);
    const tlsan_arena_stats *s = tlsan_report_arena_stats(r, 0, 0);
    assert_string_equal(s->name, "a0");
    assert_int_equal(s->bytes, 65536);
    assert_int_equal(s->required_bytes, 754);
    /* x lives -1..0, a 0..1, b 1..2, c 2..3, y 3..4: the peak is a+b or b+c = 500 */
    assert_int_equal(s->lower_bound_bytes, 500);
    assert_true(s->efficiency > 0.663 && s->efficiency < 0.664);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forty_independent_ifs),
        cmocka_unit_test(too_many_paths_is_approximate),
        cmocka_unit_test(approximation_is_conservative),
        cmocka_unit_test(inplace_in_loop),
        cmocka_unit_test(inplace_reads_output_bytes_elsewhere),
        cmocka_unit_test(read_before_write_on_one_arm),
        cmocka_unit_test(sync_orders_streams),
        cmocka_unit_test(wait_pairs_with_latest_record),
        cmocka_unit_test(dataflow_chain),
        cmocka_unit_test(view_layout_and_lifetime),
        cmocka_unit_test(constant_is_live_throughout),
        cmocka_unit_test(long_reuse_chain_on_two_streams),
        cmocka_unit_test(reuse_bug_in_every_run),
        cmocka_unit_test(deep_view_chains),
        cmocka_unit_test(arena_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
