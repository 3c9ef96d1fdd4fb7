/* Tests of the report module and its writers. Reports are built by hand with report_new()
 * and report_add() over plans made with the builder API, so nothing here depends on the
 * checker: the writers' output is asserted exactly (text), field by field after parsing
 * it back (JSON), and by structure (SARIF). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/report.h"
#include "support/tcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

/* ---- fixtures ---- */

static void add_tensor(tlsan_plan *p, tlsan_tensor_desc d)
{
    tlsan_error err;
    assert_int_equal(tlsan_plan_add_tensor(p, &d, &err), TLSAN_OK);
}

static void add_op(tlsan_plan *p, const char *name, const char *const *reads, size_t n_reads,
                   const char *const *writes, size_t n_writes)
{
    tlsan_op_desc o = {0};
    o.name = name;
    o.reads = reads;
    o.n_reads = n_reads;
    o.writes = writes;
    o.n_writes = n_writes;
    tlsan_error err;
    assert_int_equal(tlsan_plan_add_op(p, &o, &err), TLSAN_OK);
}

/* Tensor indices of the demo plan. */
enum { T_X, T_A, T_C, T_Y, T_B, T_M, T_H, T_V };

/* A small plan with one tensor per situation the writers describe:
 *   x  input, [0, 4096) of a0, one stack frame
 *   a  [4096, 8192) of a0, two frames          } share [4096, 8192)
 *   c  [4096, 12288) of a0, no stack           }
 *   y  output, [12288, 16384) of a0
 *   b  [14336, 18432) of a0: past the arena's 16384 bytes
 *   m  [100, 164) of a0: misaligned (arena alignment 64)
 *   h  f16 [2, 128, 64] in a1 with 16384 bytes: needs 32768
 *   v  view of c at +0, needs cuda:0 memory (a0 is host)
 * ops: f reads x writes a; g reads a writes v; k reads c writes y. */
static tlsan_plan *demo_plan(const char *name)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    if (name)
        assert_int_equal(tlsan_plan_set_name(p, name), TLSAN_OK);
    tlsan_error err;
    tlsan_arena_desc a0 = {"a0", 16384, 64, "host"};
    tlsan_arena_desc a1 = {"a1", 65536, 1, "cuda:0"};
    assert_int_equal(tlsan_plan_add_arena(p, &a0, &err), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_arena(p, &a1, &err), TLSAN_OK);

    static const char *const x_stack[] = {"load_inputs model.py:12"};
    static const char *const a_stack[] = {"place_a planner.cc:40", "plan_graph planner.cc:90"};
    static const uint64_t h_shape[] = {2, 128, 64};
    add_tensor(p, (tlsan_tensor_desc){.name = "x",
                                      .bytes = 4096,
                                      .arena = "a0",
                                      .offset_bytes = 0,
                                      .flags = TLSAN_TENSOR_INPUT,
                                      .stack = x_stack,
                                      .n_stack = 1});
    add_tensor(p, (tlsan_tensor_desc){.name = "a",
                                      .bytes = 4096,
                                      .arena = "a0",
                                      .offset_bytes = 4096,
                                      .stack = a_stack,
                                      .n_stack = 2});
    add_tensor(
        p, (tlsan_tensor_desc){.name = "c", .bytes = 8192, .arena = "a0", .offset_bytes = 4096});
    add_tensor(p, (tlsan_tensor_desc){.name = "y",
                                      .bytes = 4096,
                                      .arena = "a0",
                                      .offset_bytes = 12288,
                                      .flags = TLSAN_TENSOR_OUTPUT});
    add_tensor(
        p, (tlsan_tensor_desc){.name = "b", .bytes = 4096, .arena = "a0", .offset_bytes = 14336});
    add_tensor(p,
               (tlsan_tensor_desc){.name = "m", .bytes = 64, .arena = "a0", .offset_bytes = 100});
    add_tensor(p, (tlsan_tensor_desc){.name = "h",
                                      .bytes = 16384,
                                      .arena = "a1",
                                      .offset_bytes = 0,
                                      .dtype = TLSAN_DTYPE_F16,
                                      .shape = h_shape,
                                      .n_shape = 3});
    add_tensor(p,
               (tlsan_tensor_desc){.name = "v", .bytes = 8192, .view_of = "c", .memory = "cuda:0"});
    static const char *const rx[] = {"x"}, *const wa[] = {"a"}, *const ra[] = {"a"},
                             *const wv[] = {"v"}, *const rc[] = {"c"}, *const wy[] = {"y"};
    add_op(p, "f", rx, 1, wa, 1);
    add_op(p, "g", ra, 1, wv, 1);
    add_op(p, "k", rc, 1, wy, 1);
    assert_int_equal(tlsan_plan_finalize(p, &err), TLSAN_OK);
    return p;
}

/* A finding template: no steps, bytes, lifetimes, path or ops. */
static tlsan_finding blank(tlsan_kind kind)
{
    tlsan_finding f = {0};
    f.kind = kind;
    f.tensor_index[0] = f.tensor_index[1] = -1;
    f.plan_index = -1;
    f.other_plan_index = -1;
    f.op_index = f.op_index2 = -1;
    return f;
}

static const tlsan_cond demo_path[] = {{"c0", "then"}, {"c1", "else"}};

/* live-overlap of a and c on a path, with steps, bytes and lifetimes. */
static void add_overlap(tlsan_report *r, const tlsan_plan *p, bool approximate)
{
    const char *names[2] = {tlsan_plan_tensor_name(p, T_A), tlsan_plan_tensor_name(p, T_C)};
    tlsan_finding f = blank(TLSAN_KIND_LIVE_OVERLAP);
    f.tensors = names;
    f.n_tensors = 2;
    f.tensor_index[0] = T_A;
    f.tensor_index[1] = T_C;
    f.has_steps = true;
    f.steps[0] = 1;
    f.steps[1] = 1;
    f.has_bytes = true;
    f.bytes[0] = 4096;
    f.bytes[1] = 8192;
    f.has_lifetimes = true;
    f.lifetimes[0][0] = 0;
    f.lifetimes[0][1] = 1;
    f.lifetimes[1][0] = 1;
    f.lifetimes[1][1] = 2;
    f.path = demo_path;
    f.n_path = 2;
    f.approximate = approximate;
    assert_int_equal(
        report_add(r, &f, "'%s' and '%s' share %d bytes while both are live", "a", "c", 4096), 0);
}

static void add_single(tlsan_report *r, const tlsan_plan *p, tlsan_kind kind, int tensor,
                       const char *message)
{
    const char *names[1] = {tlsan_plan_tensor_name(p, (size_t)tensor)};
    tlsan_finding f = blank(kind);
    f.tensors = names;
    f.n_tensors = 1;
    f.tensor_index[0] = tensor;
    /* A single tensor's bytes and steps are its own: the text gives them once, in its
     * detail lines. */
    f.has_bytes = true;
    f.bytes[0] = 0;
    f.bytes[1] = 64;
    f.has_steps = true;
    f.steps[0] = 0;
    f.steps[1] = 1;
    assert_int_equal(report_add(r, &f, "%s", message), 0);
}

/* Runs a writer into a memory buffer; returns the malloc'd output. */
static char *text_of(const tlsan_report *r, const char *label, const char *pid_prefix)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    report_text_options opt = {pid_prefix, false};
    assert_int_equal(report_write_text(r, label, &opt, f), 0);
    fclose(f);
    return buf;
}

static char *json_of(const tlsan_report *r, const char *label)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(report_write_json(r, label, f), 0);
    fclose(f);
    return buf;
}

static yajl_val parse(const char *text)
{
    char errbuf[256];
    yajl_val v = yajl_tree_parse(text, errbuf, sizeof errbuf);
    if (!v)
        fail_msg("not JSON (%s): %s", errbuf, text);
    return v;
}

static yajl_val get(yajl_val v, const char *k1, const char *k2)
{
    const char *path[3] = {k1, k2, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

static void assert_json_str(yajl_val v, const char *key, const char *want)
{
    yajl_val s = get(v, key, NULL);
    assert_non_null(s);
    assert_true(YAJL_IS_STRING(s));
    assert_string_equal(YAJL_GET_STRING(s), want);
}

static void assert_json_pair(yajl_val arr, long long a, long long b)
{
    assert_non_null(arr);
    assert_true(YAJL_IS_ARRAY(arr));
    assert_int_equal(YAJL_GET_ARRAY(arr)->len, 2);
    assert_true(YAJL_IS_INTEGER(YAJL_GET_ARRAY(arr)->values[0]));
    assert_int_equal(YAJL_GET_INTEGER(YAJL_GET_ARRAY(arr)->values[0]), a);
    assert_int_equal(YAJL_GET_INTEGER(YAJL_GET_ARRAY(arr)->values[1]), b);
}

/* ---- kinds ---- */

static void test_kinds(void **state)
{
    (void)state;
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_LIVE_OVERLAP), "live-overlap");
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_CACHE_KEY_COLLISION), "cache-key-collision");
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_MEMORY_KIND_MISMATCH), "memory-kind-mismatch");
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_COUNT_), "unknown");
    assert_string_equal(tlsan_kind_name((tlsan_kind)-1), "unknown");
    assert_int_equal(tlsan_kind_severity(TLSAN_KIND_LIFETIME_TOO_SHORT), TLSAN_SEVERITY_WARNING);
    assert_int_equal(tlsan_kind_severity(TLSAN_KIND_OUT_OF_BOUNDS), TLSAN_SEVERITY_ERROR);
    assert_string_equal(tlsan_kind_description(TLSAN_KIND_SIZE_MISMATCH),
                        "a tensor's bytes are fewer than its dtype and shape need");
    /* The run-time kinds come after the checker's, in the same table. */
    assert_int_equal(TLSAN_KIND_CHECKER_COUNT_, 10);
    assert_int_equal(TLSAN_KIND_COUNT_, 20);
    assert_int_equal(TLSAN_KIND_HEAP_WRITE_AFTER_FREE, 10);
    assert_int_equal(TLSAN_KIND_ALLOC_DEALLOC_MISMATCH, 15);
    assert_int_equal(TLSAN_KIND_SLOT_OVERFLOW, 19);
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_ALLOC_DEALLOC_MISMATCH),
                        "alloc-dealloc-mismatch");
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_HEAP_WRITE_AFTER_FREE), "heap-write-after-free");
    assert_string_equal(tlsan_kind_name(TLSAN_KIND_SLOT_OVERFLOW), "slot-overflow");
    assert_string_equal(tlsan_kind_description(TLSAN_KIND_LIVE_CORRUPTION),
                        "a live tensor changed with no write of its own");
    assert_int_equal(tlsan_kind_severity(TLSAN_KIND_DOUBLE_FREE), TLSAN_SEVERITY_ERROR);
    assert_int_equal(tlsan_kind_finder(TLSAN_KIND_CACHE_KEY_COLLISION), TLSAN_FOUND_BY_CHECKER);
    assert_int_equal(tlsan_kind_finder(TLSAN_KIND_INVALID_FREE), TLSAN_FOUND_BY_HEAP);
    assert_int_equal(tlsan_kind_finder(TLSAN_KIND_LIVE_CORRUPTION), TLSAN_FOUND_BY_TENSOR_RUNTIME);
    assert_int_equal(tlsan_kind_finder(TLSAN_KIND_COUNT_), 0);
    assert_int_equal(tlsan_kind_from_name("stale-write"), TLSAN_KIND_STALE_WRITE);
    assert_int_equal(tlsan_kind_from_name("live-overlap"), TLSAN_KIND_LIVE_OVERLAP);
    assert_int_equal(tlsan_kind_from_name("live"), TLSAN_KIND_COUNT_);
    assert_int_equal(tlsan_kind_from_name(NULL), TLSAN_KIND_COUNT_);
    /* Every kind has a distinct, non-empty name and a description; the checker's come first. */
    for (int i = 0; i < TLSAN_KIND_COUNT_; i++) {
        assert_true(strlen(tlsan_kind_name((tlsan_kind)i)) > 0);
        assert_true(strlen(tlsan_kind_description((tlsan_kind)i)) > 0);
        assert_int_equal(tlsan_kind_from_name(tlsan_kind_name((tlsan_kind)i)), i);
        assert_int_equal(tlsan_kind_finder((tlsan_kind)i) == TLSAN_FOUND_BY_CHECKER,
                         i < TLSAN_KIND_CHECKER_COUNT_);
        for (int k = 0; k < i; k++)
            assert_string_not_equal(tlsan_kind_name((tlsan_kind)i), tlsan_kind_name((tlsan_kind)k));
    }
}

/* ---- building ---- */

static void test_add_copies(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    assert_non_null(r);
    const char *names[2] = {"a", "c"};
    tlsan_cond path[1] = {{"c0", "then"}};
    tlsan_finding f = blank(TLSAN_KIND_BAD_INPLACE);
    f.tensors = names;
    f.n_tensors = 2;
    f.path = path;
    f.n_path = 1;
    f.op_index = 1;
    assert_int_equal(report_add(r, &f, "pair %s/%s at step %d", "a", "c", 7), 0);
    /* The caller's arrays may change or die after report_add. */
    names[0] = "zzz";
    path[0].arm = "else";
    const tlsan_finding *got = tlsan_report_finding(r, 0);
    assert_non_null(got);
    assert_string_equal(got->tensors[0], "a");
    assert_string_equal(got->tensors[1], "c");
    assert_int_equal(got->n_path, 1);
    assert_string_equal(got->path[0].arm, "then");
    assert_string_equal(got->message, "pair a/c at step 7");
    assert_int_equal(got->op_index, 1);
    assert_null(tlsan_report_finding(r, 1));
    assert_int_equal(tlsan_report_count(r), 1);
    assert_int_equal(tlsan_report_count(NULL), 0);
    tlsan_report_free(r);
    tlsan_report_free(NULL);
    tlsan_plan_free(p);
}

static void test_sort_and_counts(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan(NULL);
    const tlsan_plan *plans[] = {p, p};
    tlsan_report *r = report_new(plans, 2, true);
    assert_non_null(r);
    struct {
        tlsan_kind kind;
        int64_t plan;
        const char *t0, *t1;
    } add[] = {
        {TLSAN_KIND_MISALIGNED, 0, "m", NULL},    {TLSAN_KIND_LIVE_OVERLAP, 1, "a", "c"},
        {TLSAN_KIND_LIVE_OVERLAP, 0, "b", "c"},   {TLSAN_KIND_LIVE_OVERLAP, 0, "a", "y"},
        {TLSAN_KIND_OUT_OF_BOUNDS, 0, "b", NULL}, {TLSAN_KIND_LIVE_OVERLAP, 0, "a", "c"},
    };
    for (size_t i = 0; i < sizeof add / sizeof add[0]; i++) {
        const char *names[2] = {add[i].t0, add[i].t1};
        tlsan_finding f = blank(add[i].kind);
        f.tensors = names;
        f.n_tensors = add[i].t1 ? 2 : 1;
        f.plan_index = add[i].plan;
        assert_int_equal(report_add(r, &f, "finding %zu", i), 0);
    }
    report_sort(r);
    const char *want[] = {"finding 5", "finding 3", "finding 2",
                          "finding 4", "finding 0", "finding 1"};
    assert_int_equal(tlsan_report_count(r), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(tlsan_report_finding(r, i)->message, want[i]);
    assert_int_equal(tlsan_report_count_kind(r, TLSAN_KIND_LIVE_OVERLAP), 4);
    assert_int_equal(tlsan_report_count_kind(r, TLSAN_KIND_OUT_OF_BOUNDS), 1);
    assert_int_equal(tlsan_report_count_kind(r, TLSAN_KIND_SIZE_MISMATCH), 0);

    /* Labels: unnamed plans of a cache are "plans[I]". */
    char buf[32];
    assert_string_equal(report_plan_label(r, 1, buf, sizeof buf), "plans[1]");

    /* Arena stats belong to the report once set. */
    r->stats[1].arenas = calloc(1, sizeof *r->stats[1].arenas);
    assert_non_null(r->stats[1].arenas);
    r->stats[1].n_arenas = 1;
    r->stats[1].arenas[0] = (tlsan_arena_stats){"a0", 16384, 16384, 8192, 0.5, false};
    assert_int_equal(tlsan_report_n_arena_stats(r, 0), 0);
    assert_int_equal(tlsan_report_n_arena_stats(r, 1), 1);
    assert_int_equal(tlsan_report_n_arena_stats(r, 2), 0);
    const tlsan_arena_stats *as = tlsan_report_arena_stats(r, 1, 0);
    assert_non_null(as);
    assert_int_equal(as->lower_bound_bytes, 8192);
    assert_null(tlsan_report_arena_stats(r, 1, 1));
    assert_null(tlsan_report_arena_stats(r, 2, 0));
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_plan_label(void **state)
{
    (void)state;
    tlsan_plan *named = demo_plan("decoder-b1"), *unnamed = demo_plan(NULL);
    char buf[32];
    const tlsan_plan *one[] = {unnamed};
    tlsan_report *r = report_new(one, 1, false);
    assert_null(report_plan_label(r, 0, buf, sizeof buf));
    tlsan_report_free(r);
    const tlsan_plan *two[] = {named, unnamed};
    r = report_new(two, 2, true);
    assert_string_equal(report_plan_label(r, 0, buf, sizeof buf), "decoder-b1");
    assert_string_equal(report_plan_label(r, 1, buf, sizeof buf), "plans[1]");
    tlsan_report_free(r);
    tlsan_plan_free(named);
    tlsan_plan_free(unnamed);
}

/* ---- text ---- */

static const char overlap_text[] =
    "=================================================================\n"
    "ERROR: tlsan: live-overlap between 'a' and 'c' in plan 'demo'\n"
    "'a' and 'c' share 4096 bytes while both are live\n"
    "  shared bytes: [4096, 8192) (4096 bytes)\n"
    "  step 1: op 'g' reads 'a', writes 'c' (through view 'v')\n"
    "  path: c0=then, c1=else\n"
    "  tensor 'a': arena 'a0', bytes [4096, 8192) (4096 bytes), lifetime [0, 1]\n"
    "    #0 place_a planner.cc:40\n"
    "    #1 plan_graph planner.cc:90\n"
    "  tensor 'c': arena 'a0', bytes [4096, 12288) (8192 bytes), lifetime [1, 2]\n"
    "    (no stack recorded)\n";

static void test_text_overlap(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    add_overlap(r, p, false);
    char *got = text_of(r, "plans/demo.json", NULL);
    char want[4096];
    snprintf(want, sizeof want, "%s\nSUMMARY: tlsan: 1 finding (live-overlap x1) in %s\n",
             overlap_text, "plans/demo.json");
    assert_string_equal(got, want);
    free(got);

    /* With the runtime shim's prefix, the headline carries it as AddressSanitizer's does. */
    got = text_of(r, "plans/demo.json", "==4242==");
    assert_non_null(strstr(got, "\n==4242==ERROR: tlsan: live-overlap between 'a' and 'c'"));
    free(got);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_text_steps_inputs_outputs(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan(NULL);
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    const char *names[2] = {"x", "y"};
    tlsan_finding f = blank(TLSAN_KIND_LIVE_OVERLAP);
    f.tensors = names;
    f.n_tensors = 2;
    f.tensor_index[0] = T_X;
    f.tensor_index[1] = T_Y;
    f.has_steps = true;
    f.steps[0] = -1;
    f.steps[1] = 3;
    assert_int_equal(report_add(r, &f, "x and y"), 0);
    char *got = text_of(r, "p.json", NULL);
    assert_string_equal(got, "=================================================================\n"
                             "ERROR: tlsan: live-overlap between 'x' and 'y' in p.json\n"
                             "x and y\n"
                             "  step -1 (the graph-input step, before the first op: 'x' is "
                             "an input)\n"
                             "  step 3 (the graph-output step, after the last op: 'y' is an "
                             "output)\n"
                             "  tensor 'x': arena 'a0', bytes [0, 4096) (4096 bytes)\n"
                             "    #0 load_inputs model.py:12\n"
                             "  tensor 'y': arena 'a0', bytes [12288, 16384) (4096 bytes)\n"
                             "    (no stack recorded)\n"
                             "\n"
                             "SUMMARY: tlsan: 1 finding (live-overlap x1) in p.json\n");
    free(got);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_text_layout_kinds(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    add_single(r, p, TLSAN_KIND_OUT_OF_BOUNDS, T_B, "'b' ends past its arena");
    add_single(r, p, TLSAN_KIND_MISALIGNED, T_M, "'m' is misaligned");
    add_single(r, p, TLSAN_KIND_SIZE_MISMATCH, T_H, "'h' is too small");
    add_single(r, p, TLSAN_KIND_MEMORY_KIND_MISMATCH, T_V, "'v' needs other memory");
    report_sort(r);
    char *got = text_of(r, "demo.json", NULL);
    assert_string_equal(
        got,
        "=================================================================\n"
        "ERROR: tlsan: out-of-bounds on 'b' in plan 'demo'\n"
        "'b' ends past its arena\n"
        "  tensor 'b': arena 'a0', bytes [14336, 18432) (4096 bytes)\n"
        "    (no stack recorded)\n"
        "  arena 'a0' has 16384 bytes; the tensor ends at 18432, 2048 bytes past its end\n"
        "=================================================================\n"
        "ERROR: tlsan: misaligned on 'm' in plan 'demo'\n"
        "'m' is misaligned\n"
        "  tensor 'm': arena 'a0', bytes [100, 164) (64 bytes)\n"
        "    (no stack recorded)\n"
        "  offset 100 in arena 'a0' is not a multiple of the arena's alignment 64 (remainder "
        "36)\n"
        "=================================================================\n"
        "ERROR: tlsan: memory-kind-mismatch on 'v' in plan 'demo'\n"
        "'v' needs other memory\n"
        "  tensor 'v': view of 'c' at +0, arena 'a0', bytes [4096, 12288) (8192 bytes)\n"
        "    (no stack recorded)\n"
        "  the tensor needs memory 'cuda:0'; arena 'a0' is 'host'\n"
        "=================================================================\n"
        "ERROR: tlsan: size-mismatch on 'h' in plan 'demo'\n"
        "'h' is too small\n"
        "  tensor 'h': arena 'a1', bytes [0, 16384) (16384 bytes)\n"
        "    (no stack recorded)\n"
        "  dtype f16, shape [2, 128, 64]: needs 32768 bytes, has 16384 (16384 short)\n"
        "\n"
        "SUMMARY: tlsan: 4 findings (out-of-bounds x1, misaligned x1, memory-kind-mismatch x1, "
        "size-mismatch x1) in demo.json\n");
    free(got);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_text_no_findings_and_approximate(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    char *got = text_of(r, "clean.json", NULL);
    assert_string_equal(got, "SUMMARY: tlsan: no findings in clean.json\n");
    free(got);

    add_overlap(r, p, true);
    r->stats[0].paths_approximate = true;
    got = text_of(r, "wide.json", NULL);
    char want[4096];
    snprintf(want, sizeof want,
             "%s"
             "  note: too many branch paths to enumerate; judged on the union of all paths "
             "(conservative)\n"
             "\n"
             "NOTE: tlsan: too many branch paths in plan 'demo': some pairs were judged on the "
             "union of all paths (conservative: findings there may not occur on any single "
             "path)\n"
             "SUMMARY: tlsan: 1 finding (live-overlap x1) in wide.json\n",
             overlap_text);
    assert_string_equal(got, want);
    free(got);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_text_ops_and_collision(void **state)
{
    (void)state;
    tlsan_plan *p0 = demo_plan("b1"), *p1 = demo_plan(NULL);
    const tlsan_plan *plans[] = {p0, p1};
    tlsan_report *r = report_new(plans, 2, true);
    const char *names[2] = {"a", "c"};
    tlsan_finding f = blank(TLSAN_KIND_UNORDERED_REUSE);
    f.tensors = names;
    f.n_tensors = 2;
    f.tensor_index[0] = T_A;
    f.tensor_index[1] = T_C;
    f.plan_index = 1;
    f.op_index = 1;
    f.op_index2 = 2;
    assert_int_equal(report_add(r, &f, "reuse"), 0);
    const char *diff[3] = {"a", "gone", "x"};
    f = blank(TLSAN_KIND_CACHE_KEY_COLLISION);
    f.tensors = diff;
    f.n_tensors = 3;
    f.plan_index = 0;
    f.other_plan_index = 1;
    assert_int_equal(report_add(r, &f, "same key"), 0);
    const char *rb[1] = {"a"};
    f = blank(TLSAN_KIND_READ_BEFORE_WRITE);
    f.tensors = rb;
    f.n_tensors = 1;
    f.tensor_index[0] = T_A;
    f.plan_index = 0;
    f.op_index = 1;
    assert_int_equal(report_add(r, &f, "early read"), 0);
    report_sort(r);
    char *got = text_of(r, "cache.json", NULL);
    assert_string_equal(
        got, "=================================================================\n"
             "ERROR: tlsan: read-before-write on 'a' in plan 'b1'\n"
             "early read\n"
             "  tensor 'a': arena 'a0', bytes [4096, 8192) (4096 bytes)\n"
             "    #0 place_a planner.cc:40\n"
             "    #1 plan_graph planner.cc:90\n"
             "  suggestion: the planner probably missed that 'a' is a graph input (\"input\": "
             "true), or an earlier op's write of it\n"
             "=================================================================\n"
             "ERROR: tlsan: cache-key-collision between plans 'b1' and 'plans[1]' in cache.json\n"
             "same key\n"
             "  tensor 'a': in 'b1' arena 'a0' bytes [4096, 8192); in 'plans[1]' arena 'a0' "
             "bytes [4096, 8192)\n"
             "  tensor 'gone': in 'b1' absent; in 'plans[1]' absent\n"
             "  tensor 'x': in 'b1' arena 'a0' bytes [0, 4096); in 'plans[1]' arena 'a0' bytes "
             "[0, 4096)\n"
             "=================================================================\n"
             "ERROR: tlsan: unordered-reuse between 'a' and 'c' in plans[1] of cache.json\n"
             "reuse\n"
             "  op 'k' (step 2) is not ordered before op 'g' (step 1), the later tenant's first "
             "access\n"
             "  tensor 'a': arena 'a0', bytes [4096, 8192) (4096 bytes)\n"
             "    #0 place_a planner.cc:40\n"
             "    #1 plan_graph planner.cc:90\n"
             "  tensor 'c': arena 'a0', bytes [4096, 12288) (8192 bytes)\n"
             "    (no stack recorded)\n"
             "  suggestion: the planner probably missed an event (recorded after the last "
             "access of 'a', from op 'k' on, and waited for before op 'g') or a sync between "
             "the streams\n"
             "\n"
             "SUMMARY: tlsan: 3 findings (unordered-reuse x1, read-before-write x1, "
             "cache-key-collision x1) in cache.json\n");
    free(got);
    tlsan_report_free(r);
    tlsan_plan_free(p0);
    tlsan_plan_free(p1);
}

/* ---- JSON ---- */

static void test_json_findings(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    add_overlap(r, p, true);
    const char *names[2] = {"a", "c"};
    tlsan_finding f = blank(TLSAN_KIND_UNORDERED_REUSE);
    f.tensors = names;
    f.n_tensors = 2;
    f.tensor_index[0] = T_A;
    f.tensor_index[1] = T_C;
    f.op_index = 1;
    f.op_index2 = 2;
    assert_int_equal(report_add(r, &f, "reuse \"quoted\"\n"), 0);
    r->stats[0].n_tensors = 8;
    r->stats[0].n_ops = 3;
    r->stats[0].n_arenas = 1;
    r->stats[0].arenas = calloc(1, sizeof *r->stats[0].arenas);
    assert_non_null(r->stats[0].arenas);
    /* A byte count above 2^53 must come out exactly. */
    r->stats[0].arenas[0] =
        (tlsan_arena_stats){"a0", 9007199254740993ull, 12288, 8192, 8192.0 / 12288, false};

    char *text = json_of(r, "dir/demo.json");
    /* One object on one line. */
    size_t len = strlen(text);
    assert_true(len > 2 && text[len - 1] == '\n');
    assert_null(memchr(text, '\n', len - 1));
    yajl_val v = parse(text);
    assert_json_str(v, "file", "dir/demo.json");
    assert_json_str(v, "plan", "demo");
    yajl_val fs = get(v, "findings", NULL);
    assert_true(YAJL_IS_ARRAY(fs));
    assert_int_equal(YAJL_GET_ARRAY(fs)->len, 2);

    yajl_val f0 = YAJL_GET_ARRAY(fs)->values[0];
    assert_json_str(f0, "kind", "live-overlap");
    assert_json_str(f0, "message", "'a' and 'c' share 4096 bytes while both are live");
    assert_json_str(f0, "plan", "demo");
    yajl_val ts = get(f0, "tensors", NULL);
    assert_int_equal(YAJL_GET_ARRAY(ts)->len, 2);
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(ts)->values[0]), "a");
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(ts)->values[1]), "c");
    assert_json_pair(get(f0, "steps", NULL), 1, 1);
    assert_json_pair(get(f0, "bytes", NULL), 4096, 8192);
    assert_json_str(get(f0, "path", NULL), "c0", "then");
    assert_json_str(get(f0, "path", NULL), "c1", "else");
    assert_int_equal(YAJL_GET_OBJECT(get(f0, "path", NULL))->len, 2);
    assert_json_pair(get(f0, "lifetimes", "a"), 0, 1);
    assert_json_pair(get(f0, "lifetimes", "c"), 1, 2);
    yajl_val stack_a = get(f0, "stacks", "a");
    assert_true(YAJL_IS_ARRAY(stack_a));
    assert_int_equal(YAJL_GET_ARRAY(stack_a)->len, 2);
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(stack_a)->values[0]),
                        "place_a planner.cc:40");
    assert_null(get(f0, "stacks", "c")); /* no stack recorded: not listed */
    assert_true(YAJL_IS_TRUE(get(f0, "approximate", NULL)));
    assert_null(get(f0, "ops", NULL));

    yajl_val f1 = YAJL_GET_ARRAY(fs)->values[1];
    assert_json_str(f1, "kind", "unordered-reuse");
    assert_json_str(f1, "message", "reuse \"quoted\"\n");
    yajl_val ops = get(f1, "ops", NULL);
    assert_int_equal(YAJL_GET_ARRAY(ops)->len, 2);
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(ops)->values[0]), "g");
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(ops)->values[1]), "k");
    assert_null(get(f1, "steps", NULL));
    assert_null(get(f1, "bytes", NULL));
    assert_null(get(f1, "path", NULL));
    assert_null(get(f1, "approximate", NULL));

    yajl_val st = get(v, "stats", NULL);
    assert_int_equal(YAJL_GET_INTEGER(get(st, "tensors", NULL)), 8);
    assert_int_equal(YAJL_GET_INTEGER(get(st, "ops", NULL)), 3);
    yajl_val a0 = get(get(st, "arenas", NULL), "a0", NULL);
    assert_non_null(a0);
    assert_int_equal(YAJL_GET_INTEGER(get(a0, "required_bytes", NULL)), 12288);
    assert_int_equal(YAJL_GET_INTEGER(get(a0, "lower_bound_bytes", NULL)), 8192);
    assert_int_equal(YAJL_GET_INTEGER(get(a0, "bytes", NULL)), 9007199254740993ll);
    assert_true(YAJL_IS_DOUBLE(get(a0, "efficiency", NULL)));
    assert_non_null(strstr(text, "\"efficiency\":0.6667"));
    yajl_tree_free(v);
    free(text);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_json_cache(void **state)
{
    (void)state;
    tlsan_plan *p0 = demo_plan("b1"), *p1 = demo_plan(NULL);
    const tlsan_plan *plans[] = {p0, p1};
    tlsan_report *r = report_new(plans, 2, true);
    const char *diff[2] = {"a", "x"};
    tlsan_finding f = blank(TLSAN_KIND_CACHE_KEY_COLLISION);
    f.tensors = diff;
    f.n_tensors = 2;
    f.plan_index = 0;
    f.other_plan_index = 1;
    assert_int_equal(report_add(r, &f, "same key, other layout"), 0);
    add_single(r, p1, TLSAN_KIND_MISALIGNED, T_M, "m");
    r->findings[1].plan_index = 1;
    r->stats[0].n_tensors = 8;
    r->stats[1].n_tensors = 8;
    r->stats[1].n_ops = 3;

    char *text = json_of(r, "cache.json");
    yajl_val v = parse(text);
    assert_json_str(v, "file", "cache.json");
    assert_null(get(v, "plan", NULL));
    yajl_val fs = get(v, "findings", NULL);
    yajl_val f0 = YAJL_GET_ARRAY(fs)->values[0];
    assert_json_str(f0, "kind", "cache-key-collision");
    assert_json_str(f0, "plan", "b1");
    yajl_val pl = get(f0, "plans", NULL);
    assert_int_equal(YAJL_GET_ARRAY(pl)->len, 2);
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(pl)->values[0]), "b1");
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(pl)->values[1]), "plans[1]");
    /* x has a stack in plans[0] (the finding's plan). */
    assert_non_null(get(f0, "stacks", "x"));
    yajl_val f1 = YAJL_GET_ARRAY(fs)->values[1];
    assert_json_str(f1, "plan", "plans[1]");
    assert_null(get(f1, "plans", NULL));

    yajl_val sp = get(get(v, "stats", NULL), "plans", NULL);
    assert_true(YAJL_IS_ARRAY(sp));
    assert_int_equal(YAJL_GET_ARRAY(sp)->len, 2);
    assert_json_str(YAJL_GET_ARRAY(sp)->values[0], "plan", "b1");
    assert_json_str(YAJL_GET_ARRAY(sp)->values[1], "plan", "plans[1]");
    assert_int_equal(YAJL_GET_INTEGER(get(YAJL_GET_ARRAY(sp)->values[1], "ops", NULL)), 3);
    assert_true(YAJL_IS_OBJECT(get(YAJL_GET_ARRAY(sp)->values[1], "arenas", NULL)));
    yajl_tree_free(v);
    free(text);
    tlsan_report_free(r);
    tlsan_plan_free(p0);
    tlsan_plan_free(p1);
}

static void test_json_error_line(void **state)
{
    (void)state;
    tlsan_error err = {0};
    snprintf(err.where, sizeof err.where, "tensors[3].offset");
    snprintf(err.what, sizeof err.what, "expected an integer");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(report_write_json_error("bad.json", &err, f), 0);
    fclose(f);
    assert_string_equal(buf, "{\"file\":\"bad.json\",\"error\":{\"where\":\"tensors[3].offset\","
                             "\"line\":0,\"column\":0,\"what\":\"expected an integer\"}}\n");
    free(buf);
}

/* Names given through the builder API are not checked for UTF-8: the output must stay
 * valid JSON anyway. */
static void test_json_invalid_utf8(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    const char *names[1] = {"bad\xff"};
    tlsan_finding f = blank(TLSAN_KIND_READ_BEFORE_WRITE);
    f.tensors = names;
    f.n_tensors = 1;
    assert_int_equal(report_add(r, &f, "x"), 0);
    char *text = json_of(r, "u.json");
    yajl_val v = parse(text);
    yajl_val ts = get(YAJL_GET_ARRAY(get(v, "findings", NULL))->values[0], "tensors", NULL);
    assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(ts)->values[0]), "bad?");
    yajl_tree_free(v);
    free(text);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_write_failure(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    add_overlap(r, p, false);
    FILE *ro = fopen("/dev/null", "r"); /* every write fails */
    assert_non_null(ro);
    assert_int_equal(report_write_text(r, "x.json", NULL, ro), -1);
    clearerr(ro);
    assert_int_equal(report_write_json(r, "x.json", ro), -1);
    clearerr(ro);
    const tlsan_report *reports[] = {r};
    const char *labels[] = {"x.json"};
    assert_int_equal(report_write_sarif(reports, labels, NULL, 1, ro), -1);
    fclose(ro);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

/* ---- SARIF ---- */

static void test_sarif(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    add_overlap(r, p, false);
    const char *names[1] = {"a"};
    tlsan_finding f = blank(TLSAN_KIND_LIFETIME_TOO_SHORT);
    f.tensors = names;
    f.n_tensors = 1;
    f.tensor_index[0] = T_A;
    assert_int_equal(report_add(r, &f, "declared too short"), 0);
    report_sort(r);

    tlsan_error err = {0};
    snprintf(err.file, sizeof err.file, "broken plan.json");
    err.line = 3;
    err.column = 7;
    snprintf(err.what, sizeof err.what, "unexpected '}'");
    const tlsan_report *reports[] = {r, NULL};
    const char *labels[] = {"/abs/demo.json", "broken plan.json"};
    const tlsan_error *errors[] = {NULL, &err};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(report_write_sarif(reports, labels, errors, 2, out), 0);
    fclose(out);

    yajl_val v = parse(buf);
    assert_json_str(v, "version", "2.1.0");
    assert_json_str(v, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    yajl_val runs = get(v, "runs", NULL);
    assert_int_equal(YAJL_GET_ARRAY(runs)->len, 1);
    yajl_val run = YAJL_GET_ARRAY(runs)->values[0];
    yajl_val driver = get(get(run, "tool", NULL), "driver", NULL);
    assert_json_str(driver, "name", "tlsan");
    assert_non_null(get(driver, "version", NULL));
    yajl_val rules = get(driver, "rules", NULL);
    /* A plan's SARIF has the checker's kinds as rules; run-time kinds cannot show. */
    assert_int_equal(YAJL_GET_ARRAY(rules)->len, TLSAN_KIND_CHECKER_COUNT_);
    for (int k = 0; k < TLSAN_KIND_CHECKER_COUNT_; k++) {
        yajl_val rule = YAJL_GET_ARRAY(rules)->values[k];
        assert_json_str(rule, "id", tlsan_kind_name((tlsan_kind)k));
        assert_json_str(get(rule, "shortDescription", NULL), "text",
                        tlsan_kind_description((tlsan_kind)k));
        assert_json_str(get(rule, "defaultConfiguration", NULL), "level",
                        k == TLSAN_KIND_LIFETIME_TOO_SHORT ? "warning" : "error");
    }

    yajl_val results = get(run, "results", NULL);
    assert_int_equal(YAJL_GET_ARRAY(results)->len, 2);
    yajl_val r0 = YAJL_GET_ARRAY(results)->values[0];
    assert_json_str(r0, "ruleId", "live-overlap");
    assert_int_equal(YAJL_GET_INTEGER(get(r0, "ruleIndex", NULL)), TLSAN_KIND_LIVE_OVERLAP);
    assert_json_str(r0, "level", "error");
    assert_json_str(get(r0, "message", NULL), "text",
                    "'a' and 'c' share 4096 bytes while both are live");
    yajl_val loc = YAJL_GET_ARRAY(get(r0, "locations", NULL))->values[0];
    const char *uri_path[] = {"physicalLocation", "artifactLocation", "uri", NULL};
    assert_string_equal(YAJL_GET_STRING(yajl_tree_get(loc, uri_path, yajl_t_string)),
                        "file:///abs/demo.json");
    yajl_val logical = get(loc, "logicalLocations", NULL);
    assert_int_equal(YAJL_GET_ARRAY(logical)->len, 2);
    assert_json_str(YAJL_GET_ARRAY(logical)->values[0], "name", "a");
    assert_json_str(YAJL_GET_ARRAY(logical)->values[0], "kind", "variable");
    assert_json_str(YAJL_GET_ARRAY(logical)->values[1], "fullyQualifiedName", "demo/c");
    yajl_val props = get(r0, "properties", NULL);
    assert_json_pair(get(props, "steps", NULL), 1, 1);
    assert_json_pair(get(props, "bytes", NULL), 4096, 8192);
    assert_json_str(get(props, "path", NULL), "c0", "then");
    assert_json_str(props, "plan", "demo");
    yajl_val r1 = YAJL_GET_ARRAY(results)->values[1];
    assert_json_str(r1, "ruleId", "lifetime-too-short");
    assert_json_str(r1, "level", "warning");

    /* The refused input is a notification on an unsuccessful invocation. */
    yajl_val inv = YAJL_GET_ARRAY(get(run, "invocations", NULL))->values[0];
    assert_true(YAJL_IS_FALSE(get(inv, "executionSuccessful", NULL)));
    yajl_val notes = get(inv, "toolExecutionNotifications", NULL);
    assert_int_equal(YAJL_GET_ARRAY(notes)->len, 1);
    yajl_val note = YAJL_GET_ARRAY(notes)->values[0];
    assert_json_str(get(note, "message", NULL), "text", "broken plan.json:3:7: unexpected '}'");
    loc = YAJL_GET_ARRAY(get(note, "locations", NULL))->values[0];
    assert_string_equal(YAJL_GET_STRING(yajl_tree_get(loc, uri_path, yajl_t_string)),
                        "broken%20plan.json");
    yajl_tree_free(v);
    free(buf);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

/* Findings a traced process reported at run time take their severity, SARIF rule and rule
 * index from the one table of kinds; a name the table lacks is shown as recorded. */
static void test_runtime_kinds(void **state)
{
    (void)state;
    tlsan_plan *p = demo_plan("demo");
    const tlsan_plan *plans[] = {p};
    tlsan_report *r = report_new(plans, 1, false);
    static const char *const tensors[] = {"a"};
    static const runtime_finding runtime[] = {
        {.kind = "heap-write-after-free", .message = "at offset 8 of a 64-byte block"},
        {.kind = "lifetime-too-short",
         .message = "on 'a' in plan 'demo'",
         .tensors = tensors,
         .n_tensors = 1},
        {.kind = "future-kind", .message = "from a newer shim"},
    };
    report_set_runtime(r, runtime, 3, "pid 7");

    char *text = text_of(r, "t.trace", NULL);
    assert_non_null(strstr(text, "\nERROR: tlsan: heap-write-after-free at offset 8 of a 64-byte "
                                 "block (reported at run time by pid 7 of t.trace)\n"));
    assert_non_null(strstr(text, "\nWARNING: tlsan: lifetime-too-short on 'a' in plan 'demo' "
                                 "(reported at run time by pid 7 of t.trace)\n"));
    assert_non_null(strstr(text, "\nERROR: tlsan: future-kind from a newer shim "));
    free(text);

    char *json = json_of(r, "t.trace");
    yajl_val v = parse(json);
    yajl_val findings = get(v, "findings", NULL);
    assert_int_equal(YAJL_GET_ARRAY(findings)->len, 3);
    const char *const severities[] = {"error", "warning", "error"};
    for (size_t i = 0; i < 3; i++) {
        assert_json_str(YAJL_GET_ARRAY(findings)->values[i], "kind", runtime[i].kind);
        assert_json_str(YAJL_GET_ARRAY(findings)->values[i], "severity", severities[i]);
    }
    yajl_tree_free(v);
    free(json);

    const tlsan_report *reports[] = {r};
    const char *labels[] = {"t.trace"};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(report_write_sarif(reports, labels, NULL, 1, out), 0);
    fclose(out);
    v = parse(buf);
    yajl_val run = YAJL_GET_ARRAY(get(v, "runs", NULL))->values[0];
    yajl_val rules = get(get(run, "tool", NULL), "driver", NULL);
    rules = get(rules, "rules", NULL);
    assert_int_equal(YAJL_GET_ARRAY(rules)->len, TLSAN_KIND_COUNT_);
    for (int k = 0; k < TLSAN_KIND_COUNT_; k++) {
        yajl_val rule = YAJL_GET_ARRAY(rules)->values[k];
        assert_json_str(rule, "id", tlsan_kind_name((tlsan_kind)k));
        assert_json_str(get(rule, "shortDescription", NULL), "text",
                        tlsan_kind_description((tlsan_kind)k));
    }
    yajl_val results = get(run, "results", NULL);
    assert_int_equal(YAJL_GET_ARRAY(results)->len, 3);
    const int64_t rule_index[] = {TLSAN_KIND_HEAP_WRITE_AFTER_FREE, TLSAN_KIND_LIFETIME_TOO_SHORT,
                                  -1};
    for (size_t i = 0; i < 3; i++) {
        yajl_val res = YAJL_GET_ARRAY(results)->values[i];
        assert_json_str(res, "ruleId", runtime[i].kind);
        assert_json_str(res, "level", severities[i]);
        yajl_val index = get(res, "ruleIndex", NULL);
        if (rule_index[i] < 0)
            assert_null(index);
        else
            assert_int_equal(YAJL_GET_INTEGER(index), rule_index[i]);
    }
    yajl_tree_free(v);
    free(buf);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

/* Pairs grouped under one missed access (a tensor missing from an op): h is kept live past
 * step 1 only by op 'late' (step 4), through a view; c and d take its bytes at steps 2..4.
 * `extra_tensor` adds keys to h, `late_reads` what op late reads besides d; n_want findings,
 * n_grouped of them grouped with an earlier access at step `previous`. */
static void assert_access_group(const char *extra_tensor, const char *late_reads, size_t n_want,
                                size_t n_grouped, int64_t previous)
{
    char q[2048];
    snprintf(q, sizeof q,
             "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':1024}],'tensors':["
             "{'name':'x','bytes':256,'arena':'a0','offset':0,'input':true},"
             "{'name':'h','bytes':256,'arena':'a0','offset':256%s},"
             "{'name':'h_tail','bytes':128,'view_of':'h','view_offset':128},"
             "{'name':'t','bytes':256,'arena':'a0','offset':512},"
             "{'name':'c','bytes':128,'arena':'a0','offset':256},"
             "{'name':'d','bytes':128,'arena':'a0','offset':384},"
             "{'name':'y','bytes':256,'arena':'a0','offset':768,'output':true}],'ops':["
             "{'name':'embed','reads':['x'],'writes':['h']},"
             "{'name':'norm','reads':['h'],'writes':['t']},"
             "{'name':'proj','reads':['t'],'writes':['c']},"
             "{'name':'gate','reads':['c'],'writes':['d']},"
             "{'name':'late','reads':[%s'd'],'writes':['y']}]}",
             extra_tensor, late_reads);
    tlsan_plan *p = tcheck_plan_q(q);
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    assert_int_equal(tlsan_report_count(r), n_want);
    size_t grouped = 0;
    for (size_t i = 0; i < tlsan_report_count(r); i++) {
        const access_cause *c = report_access_cause_of(r, i);
        if (!c)
            continue;
        grouped++;
        assert_string_equal(tlsan_plan_op_name(p, c->op), "late");
        assert_int_equal(c->previous_step, previous);
        assert_int_equal(c->n_findings, n_grouped);
    }
    assert_int_equal(grouped, n_grouped);
    tlsan_report_free(r);
    tlsan_plan_free(p);
}

static void test_access_causes(void **state)
{
    (void)state;
    /* Read through the view at step 4: both overlaps follow from that access. */
    assert_access_group("", "'h_tail',", 2, 2, 1);
    /* The root read directly: the same cause. */
    assert_access_group("", "'h',", 2, 2, 1);
    /* h an output: live to the output step by its flag, not by an op; not grouped. */
    assert_access_group(",'output':true", "'h_tail',", 2, 0, 0);
    /* late does not read h: h dies at step 1 and nothing collides. */
    assert_access_group("", "", 0, 0, 0);
    /* A declared lifetime too short is the cause instead (grouped by it, not here). */
    assert_access_group(",'lifetime':[0,1]", "'h_tail',", 3, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_add_copies),
        cmocka_unit_test(test_sort_and_counts),
        cmocka_unit_test(test_plan_label),
        cmocka_unit_test(test_text_overlap),
        cmocka_unit_test(test_text_steps_inputs_outputs),
        cmocka_unit_test(test_text_layout_kinds),
        cmocka_unit_test(test_text_no_findings_and_approximate),
        cmocka_unit_test(test_text_ops_and_collision),
        cmocka_unit_test(test_json_findings),
        cmocka_unit_test(test_json_cache),
        cmocka_unit_test(test_json_error_line),
        cmocka_unit_test(test_json_invalid_utf8),
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_sarif),
        cmocka_unit_test(test_runtime_kinds),
        cmocka_unit_test(test_access_causes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
