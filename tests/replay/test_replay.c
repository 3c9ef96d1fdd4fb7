/* Tests of replay: a hand-written trace becomes exactly the plan the run performed, and the
 * checker then finds what the run did wrong. */
#include "replay/replay.h"
#include "support/tracegen.h"
#include "tlsan/check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define U(x) ((uint64_t)(x))

/* A run on two streams: x and y share bytes while x is still read (the bug), x is bound
 * again after its release (a second tenant of the same name), v views x#2, and stream 1
 * hands its result to the host through event 3. */
static void build_run(tracegen *g)
{
    tg_header(g, 7);
    const char *strings[] = {"a0", "x", "y", "w1", "w2", "r", "v"};
    for (unsigned i = 0; i < 7; i++)
        tg_rec(g, TRACE_STRING, "us", U(i + 1), strings[i]);
    tg_rec(g, TRACE_MODULE, "uuus", U(1), U(0), U(0x1000), "/nonexistent/engine");
    tg_rec(g, TRACE_STACK, "uuuu", U(1), U(1), U(1), U(0x123));
    tg_rec(g, TRACE_ARENA, "uuuuu", U(1), U(1), U(0x10000), U(4096), U(0));
    tg_rec(g, TRACE_BIND, "uuuuuuu", U(2), U(1), U(0), U(128), U(1), U(1), U(9));  /* x, input */
    tg_rec(g, TRACE_BIND, "uuuuuuu", U(3), U(1), U(64), U(128), U(0), U(0), U(9)); /* y on x */
    tg_rec(g, TRACE_OP, "uuuuuuuuuu", U(1), U(4), U(0), U(1), U(2), U(1), U(3), U(0), U(0), U(9));
    tg_rec(g, TRACE_OP_END, "u", U(1));
    tg_rec(g, TRACE_OP, "uuuuuuuuuu", U(2), U(6), U(0), U(1), U(2), U(0), U(0), U(0), U(0), U(9));
    tg_rec(g, TRACE_RELEASE, "uuu", U(2), U(0), U(0));
    tg_rec(g, TRACE_BIND, "uuuuuuu", U(2), U(1), U(512), U(256), U(2), U(0),
           U(9));                                                    /* x#2, output */
    tg_rec(g, TRACE_VIEW, "uuuuu", U(7), U(2), U(128), U(64), U(0)); /* v of x#2 */
    tg_rec(g, TRACE_OP, "uuuuuuuuuu", U(3), U(5), U(1), U(0), U(1), U(7), U(0), U(1), U(0), U(9));
    tg_rec(g, TRACE_RECORD, "uuu", U(3), U(1), U(0));
    tg_rec(g, TRACE_WAIT, "uuu", U(0), U(3), U(0));
    tg_rec(g, TRACE_SYNC, "u", U(0));
    tg_rec(g, TRACE_END, "u", U(0));
}

static char *plan_json(const tlsan_plan *plan)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(tlsan_plan_write(plan, f, false), TLSAN_OK);
    fclose(f);
    return text;
}

static void test_rebuilds_the_run(void **state)
{
    (void)state;
    tracegen g = {0};
    build_run(&g);
    trace_data *t = NULL;
    tlsan_error err = {0};
    assert_int_equal(trace_read_buffer(g.buf, g.n, "t", &t, &err), TLSAN_OK);
    tlsan_plan *plan = NULL;
    assert_int_equal(replay_build(t, "run of pid 7", false, NULL, &plan, &err), TLSAN_OK);
    char *json = plan_json(plan);
    assert_string_equal(
        json,
        "{\"tlsan_plan\":1,\"name\":\"run of pid 7\",\"arenas\":[{\"name\":\"a0\",\"bytes\":4096}],"
        "\"tensors\":[{\"name\":\"x\",\"bytes\":128,\"arena\":\"a0\",\"offset\":0,"
        "\"stack\":[\"engine+0x123\"]},{\"name\":\"y\",\"bytes\":128,\"arena\":\"a0\",\"offset\":"
        "64},"
        "{\"name\":\"x#2\",\"bytes\":256,\"arena\":\"a0\",\"offset\":512,\"output\":true},"
        "{\"name\":\"v\",\"bytes\":64,\"view_of\":\"x#2\",\"view_offset\":128}],"
        "\"ops\":[{\"name\":\"bind x @1\",\"writes\":[\"x\"],\"stack\":[\"engine+0x123\"]},"
        "{\"name\":\"w1\",\"reads\":[\"x\"],\"writes\":[\"y\"]},{\"name\":\"r\",\"reads\":"
        "[\"x\"]},"
        "{\"name\":\"w2\",\"writes\":[\"v\"],\"stream\":\"s1\",\"stack\":[\"engine+0x123\"]},"
        "{\"name\":\"record e3 on s1#1\",\"stream\":\"s1\",\"record\":\"e3\"},"
        "{\"name\":\"wait e3 on main#2\",\"wait\":\"e3\"},{\"name\":\"sync#3\",\"sync\":true}]}\n");
    free(json);

    tlsan_report *report = NULL;
    assert_int_equal(tlsan_check(plan, NULL, &report), TLSAN_OK);
    assert_int_equal(tlsan_report_count(report), 1);
    const tlsan_finding *f = tlsan_report_finding(report, 0);
    assert_int_equal(f->kind, TLSAN_KIND_LIVE_OVERLAP);
    assert_int_equal(f->n_tensors, 2);
    assert_string_equal(f->tensors[0], "x");
    assert_string_equal(f->tensors[1], "y");
    tlsan_report_free(report);
    tlsan_plan_free(plan);
    trace_data_free(t);
    tg_free(&g);
}

/* Runs one graph twice in one arena: the output y of each run is placed where t of the same
 * run later goes. With y given back (released) before t is bound, nothing overlaps; without
 * the release, the output stays live and t overwrites it. */
static size_t findings_of_two_runs(bool release_output, const char **first_kind)
{
    tracegen g = {0};
    tg_header(&g, 9);
    const char *strings[] = {"a0", "y", "t", "mk", "use"};
    for (unsigned i = 0; i < 5; i++)
        tg_rec(&g, TRACE_STRING, "us", U(i + 1), strings[i]);
    tg_rec(&g, TRACE_ARENA, "uuuuu", U(1), U(1), U(0x10000), U(256), U(0));
    for (int run = 0; run < 2; run++) {
        tg_rec(&g, TRACE_BIND, "uuuuuuu", U(2), U(1), U(0), U(64), U(2), U(0),
               U(1)); /* y, output */
        tg_rec(&g, TRACE_OP, "uuuuuuuuuu", U(run * 2 + 1), U(4), U(0), U(0), U(1), U(2), U(0), U(0),
               U(0), U(1));
        if (release_output)
            tg_rec(&g, TRACE_RELEASE, "uuu", U(2), U(0), U(0));
        tg_rec(&g, TRACE_BIND, "uuuuuuu", U(3), U(1), U(0), U(64), U(0), U(0), U(1)); /* t on y */
        tg_rec(&g, TRACE_OP, "uuuuuuuuu", U(run * 2 + 2), U(5), U(0), U(0), U(1), U(3), U(0), U(0),
               U(1));
        tg_rec(&g, TRACE_RELEASE, "uuu", U(3), U(0), U(0));
    }
    tg_rec(&g, TRACE_ARENA_END, "uu", U(1), U(0));
    tg_rec(&g, TRACE_END, "u", U(0));
    trace_data *t = NULL;
    tlsan_error err = {0};
    assert_int_equal(trace_read_buffer(g.buf, g.n, "t", &t, &err), TLSAN_OK);
    tlsan_plan *plan = NULL;
    assert_int_equal(replay_build(t, NULL, false, NULL, &plan, &err), TLSAN_OK);
    tlsan_report *report = NULL;
    assert_int_equal(tlsan_check(plan, NULL, &report), TLSAN_OK);
    size_t n = tlsan_report_count(report);
    if (getenv("TLSAN_TEST_DEBUG")) {
        tlsan_plan_write(plan, stderr, true);
        tlsan_report_write(report, TLSAN_FORMAT_TEXT, NULL, stderr);
    }
    *first_kind = n ? tlsan_kind_name(tlsan_report_finding(report, 0)->kind) : "";
    tlsan_report_free(report);
    tlsan_plan_free(plan);
    trace_data_free(t);
    tg_free(&g);
    return n;
}

static void test_outputs_end_at_release(void **state)
{
    (void)state;
    const char *kind = NULL;
    assert_int_equal(findings_of_two_runs(true, &kind), 0);
    /* Without the release, each run's y is live until the next y is bound (the first run's)
     * or the arena ends (the second's): both overlap their run's t. */
    assert_int_equal(findings_of_two_runs(false, &kind), 2);
    assert_string_equal(kind, "live-overlap");
}

/* What an engine may pass but a plan cannot hold: a name that is not UTF-8 is written with
 * \xNN escapes, an empty op name becomes "(unnamed)", a view past 2^63 is left out with a
 * warning, and the rest still replays. */
static void test_odd_annotations(void **state)
{
    (void)state;
    tracegen g = {0};
    tg_header(&g, 10);
    tg_rec(&g, TRACE_STRING, "us", U(1), "a0");
    tg_rec(&g, TRACE_STRING, "us", U(2), "bad\xff\xc3name");
    tg_rec(&g, TRACE_STRING, "us", U(3), "");
    tg_rec(&g, TRACE_STRING, "us", U(4), "v");
    tg_rec(&g, TRACE_ARENA, "uuuuu", U(1), U(1), U(0x10000), U(256), U(0));
    tg_rec(&g, TRACE_BIND, "uuuuuuu", U(2), U(1), U(0), U(64), U(0), U(0), U(1));
    tg_rec(&g, TRACE_VIEW, "uuuuu", U(4), U(2), U(UINT64_MAX), U(8), U(0));
    tg_rec(&g, TRACE_OP, "uuuuuuuuuu", U(1), U(3), U(0), U(1), U(4), U(1), U(2), U(0), U(0), U(1));
    tg_rec(&g, TRACE_END, "u", U(0));
    trace_data *t = NULL;
    tlsan_error err = {0};
    assert_int_equal(trace_read_buffer(g.buf, g.n, "t", &t, &err), TLSAN_OK);
    char *warn = NULL;
    size_t len = 0;
    FILE *w = open_memstream(&warn, &len);
    tlsan_plan *plan = NULL;
    assert_int_equal(replay_build(t, NULL, false, w, &plan, &err), TLSAN_OK);
    fclose(w);
    assert_string_equal(
        warn, "tlsan: replay: view 'v' has an offset or size past 2^63, or no arena; "
              "left out\n"
              "tlsan: replay: op '(unnamed)' reads 'v', which was never bound; left out\n");
    char *json = plan_json(plan);
    assert_non_null(strstr(json, "\"name\":\"bad\\\\xff\\\\xc3name\""));
    assert_non_null(
        strstr(json, "{\"name\":\"(unnamed)\",\"writes\":[\"bad\\\\xff\\\\xc3name\"]}"));
    /* the exported plan reads back */
    tlsan_plan *again = NULL;
    assert_int_equal(tlsan_plan_read_buffer(json, strlen(json), "j", &again, &err), TLSAN_OK);
    tlsan_plan_free(again);
    free(json);
    free(warn);
    tlsan_plan_free(plan);
    trace_data_free(t);
    tg_free(&g);
}

/* An op naming a tensor that was never bound: left out, with one warning line. */
static void test_unbound_name_warned(void **state)
{
    (void)state;
    tracegen g = {0};
    tg_header(&g, 8);
    tg_rec(&g, TRACE_STRING, "us", U(1), "ghost");
    tg_rec(&g, TRACE_STRING, "us", U(2), "op");
    tg_rec(&g, TRACE_OP, "uuuuuuuuuu", U(1), U(2), U(0), U(1), U(1), U(0), U(0), U(0), U(0), U(0));
    trace_data *t = NULL;
    tlsan_error err = {0};
    assert_int_equal(trace_read_buffer(g.buf, g.n, "t", &t, &err), TLSAN_OK);
    assert_true(trace_truncated(t)); /* no END record */
    char *warn = NULL;
    size_t len = 0;
    FILE *w = open_memstream(&warn, &len);
    tlsan_plan *plan = NULL;
    assert_int_equal(replay_build(t, NULL, false, w, &plan, &err), TLSAN_OK);
    fclose(w);
    assert_string_equal(warn,
                        "tlsan: replay: op 'op' reads 'ghost', which was never bound; left out\n");
    assert_int_equal(tlsan_plan_n_ops(plan), 1);
    assert_int_equal(tlsan_plan_n_tensors(plan), 0);
    free(warn);
    tlsan_plan_free(plan);
    trace_data_free(t);
    tg_free(&g);
}

/* An engine of real queues, run `runs` times in one arena: the host fills x once (main), then
 * per run binds y, enqueues k1 on stream 1 (reads x, writes y), waits for k1's event and reads
 * y in its host op "post". The next run's y (y#2, ...) takes y's bytes: k1 of that run is
 * enqueued after "post" ended, so a real queue runs it after "post" and nothing is unordered.
 * The bug QUEUE_POST_LATE: the host enqueues the next run's k1 while "post" still reads y.
 * The bug QUEUE_NO_WAIT: the host does not wait for k1's event before "post" reads y. The run
 * is checked as tlsan replay checks it (order_reads). */
enum queue_bug { QUEUE_CORRECT, QUEUE_POST_LATE, QUEUE_NO_WAIT };

static tlsan_report *check_queue_engine(int runs, enum queue_bug bug, bool grouped,
                                        tlsan_plan **plan_out)
{
    tracegen g = {0};
    tg_header(&g, 11);
    const char *strings[] = {"a0", "x", "y", "fill", "k1", "post"};
    for (unsigned i = 0; i < 6; i++)
        tg_rec(&g, 1, "us", U(i + 1), strings[i]);
    tg_rec(&g, 4, "uuuuu", U(1), U(1), U(0x10000), U(256), U(0));
    tg_rec(&g, 6, "uuuuuuu", U(2), U(1), U(0), U(64), U(0), U(0), U(1)); /* x */
    uint64_t id = 1;
    tg_rec(&g, 9, "uuuuuuuuu", U(id), U(4), U(0), U(0), U(1), U(2), U(0), U(0), U(1)); /* fill */
    tg_rec(&g, 10, "u", U(id++));
    uint64_t post_open = 0;
    for (int run = 0; run < runs; run++) {
        tg_rec(&g, 6, "uuuuuuu", U(3), U(1), U(64), U(64), U(0), U(0), U(1)); /* y */
        uint64_t k1 = id++;
        tg_rec(&g, 9, "uuuuuuuuuu", U(k1), U(5), U(1), U(1), U(2), U(1), U(3), U(0), U(0), U(2));
        if (post_open) /* QUEUE_POST_LATE: the previous post ends only now */
            tg_rec(&g, 10, "u", U(post_open));
        tg_rec(&g, 10, "u", U(k1));
        tg_rec(&g, 11, "uuu", U(1), U(1), U(0)); /* record e1 on s1 */
        if (bug != QUEUE_NO_WAIT)
            tg_rec(&g, 12, "uuu", U(0), U(1), U(0)); /* wait e1 on main (stream, event) */
        uint64_t post = id++;
        tg_rec(&g, 9, "uuuuuuuuu", U(post), U(6), U(0), U(1), U(3), U(0), U(0), U(0), U(1));
        post_open = post;
        if (bug != QUEUE_POST_LATE || run == runs - 1) {
            tg_rec(&g, 10, "u", U(post));
            post_open = 0;
        }
        tg_rec(&g, 8, "uuu", U(3), U(0), U(0)); /* release y */
    }
    tg_rec(&g, 5, "uu", U(1), U(0));
    tg_rec(&g, 16, "u", U(0));
    trace_data *t = NULL;
    tlsan_error err = {0};
    assert_int_equal(trace_read_buffer(g.buf, g.n, "t", &t, &err), TLSAN_OK);
    tlsan_plan *plan = NULL;
    assert_int_equal(replay_build(t, NULL, false, NULL, &plan, &err), TLSAN_OK);
    tlsan_report *report = NULL;
    tlsan_check_options options = {.order_reads = true, .group_repeats = grouped};
    assert_int_equal(tlsan_check(plan, &options, &report), TLSAN_OK);
    if (getenv("TLSAN_TEST_DEBUG")) {
        tlsan_plan_write(plan, stderr, true);
        tlsan_report_write(report, TLSAN_FORMAT_TEXT, NULL, stderr);
    }
    *plan_out = plan; /* the report borrows its tensor names */
    trace_data_free(t);
    tg_free(&g);
    return report;
}

static void test_queue_order(void **state)
{
    (void)state;
    /* 4,950 unordered-reuse findings (every pair of y's tenants) without the queue order. */
    tlsan_plan *plan = NULL;
    tlsan_report *report = check_queue_engine(100, QUEUE_CORRECT, false, &plan);
    assert_int_equal(tlsan_report_count(report), 0);
    tlsan_report_free(report);
    tlsan_plan_free(plan);
}

static void test_queue_bugs_found(void **state)
{
    (void)state;
    tlsan_plan *plan = NULL;
    tlsan_report *report = check_queue_engine(3, QUEUE_POST_LATE, false, &plan);
    assert_int_equal(tlsan_report_count(report), 2);
    const char *pairs[2][2] = {{"y", "y#2"}, {"y#2", "y#3"}};
    for (size_t i = 0; i < 2; i++) {
        const tlsan_finding *f = tlsan_report_finding(report, i);
        assert_int_equal(f->kind, TLSAN_KIND_UNORDERED_REUSE);
        assert_int_equal(f->n_tensors, 2);
        assert_string_equal(f->tensors[0], pairs[i][0]);
        assert_string_equal(f->tensors[1], pairs[i][1]);
    }
    tlsan_report_free(report);
    tlsan_plan_free(plan);
}

/* A host op reading what a stream op wrote without waiting for its event: the reuse of the
 * bytes is ordered (by the queue order), the read is not. */
static void test_read_without_wait_found(void **state)
{
    (void)state;
    tlsan_plan *plan = NULL;
    tlsan_report *report = check_queue_engine(3, QUEUE_NO_WAIT, false, &plan);
    assert_int_equal(tlsan_report_count(report), 3);
    const char *names[3] = {"y", "y#2", "y#3"};
    const char *readers[3] = {"post", "post#2", "post#3"};
    const char *writers[3] = {"k1", "k1#2", "k1#3"};
    for (size_t i = 0; i < 3; i++) {
        const tlsan_finding *f = tlsan_report_finding(report, i);
        assert_int_equal(f->kind, TLSAN_KIND_READ_BEFORE_WRITE);
        assert_int_equal(f->n_tensors, 1);
        assert_string_equal(f->tensors[0], names[i]);
        assert_string_equal(tlsan_plan_op_name(plan, (size_t)f->op_index), readers[i]);
        assert_string_equal(tlsan_plan_op_name(plan, (size_t)f->op_index2), writers[i]);
        char want[256];
        snprintf(want, sizeof want,
                 "op '%s' (step %lld) reads '%s', which op '%s' (step %lld) writes, but no "
                 "write of it is ordered before the read (missing event or sync?)",
                 readers[i], (long long)f->op_index, names[i], writers[i], (long long)f->op_index2);
        assert_string_equal(f->message, want);
    }
    tlsan_report_free(report);
    /* as plan-format v1 judges the exported plan (no order_reads): races between the accesses
     * of one root are out of scope there */
    assert_int_equal(tlsan_check(plan, NULL, &report), TLSAN_OK);
    assert_int_equal(tlsan_report_count(report), 0);
    tlsan_report_free(report);
    tlsan_plan_free(plan);
}

/* Not inlined: GCC 12 at -O3 takes open_memstream's hold on &text for a dangling pointer
 * in the callers (-Wdangling-pointer), although fclose has ended it. */
__attribute__((noinline)) static char *report_text(const tlsan_report *report, tlsan_format format)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(tlsan_report_write(report, format, "t", f), TLSAN_OK);
    fclose(f);
    return text;
}

static size_t count_of(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *s = strstr(text, what); s; s = strstr(s + 1, what))
        n++;
    return n;
}

/* One finding per cause: the bug of every run (1,000 runs) is one finding with its count and
 * its first and last run, in every format, and the text report stays a few lines long. */
static void test_repeats_grouped(void **state)
{
    (void)state;
    tlsan_plan *plan = NULL;
    tlsan_report *report = check_queue_engine(1000, QUEUE_POST_LATE, true, &plan);
    assert_int_equal(tlsan_report_count(report), 1);
    const tlsan_finding *f = tlsan_report_finding(report, 0);
    assert_int_equal(f->kind, TLSAN_KIND_UNORDERED_REUSE);
    assert_string_equal(f->tensors[0], "y");
    assert_string_equal(f->tensors[1], "y#2");
    assert_int_equal(f->repeats, 999); /* y and y#2, ..., y#999 and y#1000 */
    assert_int_equal(f->first_run, 2);
    assert_int_equal(f->last_run, 1000);
    char *text = report_text(report, TLSAN_FORMAT_TEXT);
    assert_non_null(strstr(text, "\n  repeated: 999 findings of this kind on tenants of the same "
                                 "names (NAME#k: the k-th bind), from run 2 to run 1000; the "
                                 "first is shown\n"));
    assert_non_null(strstr(text, "SUMMARY: tlsan: 1 finding (unordered-reuse x1) in t\n"));
    assert_true(count_of(text, "\n") < 40);
    free(text);
    char *json = report_text(report, TLSAN_FORMAT_JSON);
    assert_int_equal(
        count_of(json, "\"repeats\":{\"count\":999,\"first_run\":2,\"last_run\":1000}"), 1);
    free(json);
    char *sarif = report_text(report, TLSAN_FORMAT_SARIF);
    assert_int_equal(count_of(sarif, "\"ruleId\""), 1);
    assert_int_equal(
        count_of(sarif, "\"repeats\":{\"count\":999,\"first_run\":2,\"last_run\":1000}"), 1);
    free(sarif);
    tlsan_report_free(report);
    tlsan_plan_free(plan);

    /* single-tensor findings: the read without a wait in each of 500 runs */
    report = check_queue_engine(500, QUEUE_NO_WAIT, true, &plan);
    assert_int_equal(tlsan_report_count(report), 1);
    f = tlsan_report_finding(report, 0);
    assert_int_equal(f->kind, TLSAN_KIND_READ_BEFORE_WRITE);
    assert_string_equal(f->tensors[0], "y");
    assert_int_equal(f->repeats, 500);
    assert_int_equal(f->first_run, 1);
    assert_int_equal(f->last_run, 500);
    tlsan_report_free(report);
    tlsan_plan_free(plan);

    /* a clean run stays clean; a finding alone has repeats 1 */
    report = check_queue_engine(1, QUEUE_NO_WAIT, true, &plan);
    assert_int_equal(tlsan_report_count(report), 1);
    f = tlsan_report_finding(report, 0);
    assert_int_equal(f->repeats, 1);
    assert_int_equal(f->first_run, 1);
    assert_int_equal(f->last_run, 1);
    text = report_text(report, TLSAN_FORMAT_TEXT);
    assert_null(strstr(text, "repeated"));
    free(text);
    tlsan_report_free(report);
    tlsan_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rebuilds_the_run),
        cmocka_unit_test(test_unbound_name_warned),
        cmocka_unit_test(test_outputs_end_at_release),
        cmocka_unit_test(test_odd_annotations),
        cmocka_unit_test(test_queue_order),
        cmocka_unit_test(test_queue_bugs_found),
        cmocka_unit_test(test_read_without_wait_found),
        cmocka_unit_test(test_repeats_grouped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
