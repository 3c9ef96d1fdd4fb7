/* test_brute: the brute-force reference checker (tests/support/brute.c) against the case
 * corpora, so that the differential test compares tlsan_check() with something known to
 * agree with the contract.
 *
 * Three parts: a few cases rebuilt by hand with the builder API (no reader involved), every
 * case file of the project's own corpus (tests/cases) read with tlsan_read_file(), and, when
 * the team's shared corpus is present, every case file of it too. */
#include "support/brute.h"
#include "support/corpus.h"

#include "tlsan/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- hand-built plans ---- */

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE       ((const char *const[]){NULL})

static size_t count(const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    return n;
}

static void arena(tlsan_plan *p, const char *name, uint64_t bytes, uint64_t align,
                  const char *memory)
{
    tlsan_arena_desc d = {name, bytes, align, memory};
    assert_int_equal(tlsan_plan_add_arena(p, &d, NULL), TLSAN_OK);
}

static void root(tlsan_plan *p, const char *name, uint64_t bytes, const char *arena_name,
                 uint64_t offset, unsigned flags)
{
    tlsan_tensor_desc d = {0};
    d.name = name;
    d.bytes = bytes;
    d.arena = arena_name;
    d.offset_bytes = offset;
    d.flags = flags;
    assert_int_equal(tlsan_plan_add_tensor(p, &d, NULL), TLSAN_OK);
}

static void add_tensor(tlsan_plan *p, const tlsan_tensor_desc *d)
{
    assert_int_equal(tlsan_plan_add_tensor(p, d, NULL), TLSAN_OK);
}

/* A compute op on the main stream. */
static void op(tlsan_plan *p, const char *name, const char *const *reads, const char *const *writes)
{
    tlsan_op_desc d = {0};
    d.name = name;
    d.reads = reads;
    d.n_reads = count(reads);
    d.writes = writes;
    d.n_writes = count(writes);
    assert_int_equal(tlsan_plan_add_op(p, &d, NULL), TLSAN_OK);
}

static void add_op(tlsan_plan *p, const tlsan_op_desc *d)
{
    assert_int_equal(tlsan_plan_add_op(p, d, NULL), TLSAN_OK);
}

/* The usual frame of the shared cases: arena a0 of 64 KiB aligned to 64, host memory. */
static tlsan_plan *frame(void)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    arena(p, "a0", 65536, 64, "host");
    return p;
}

/* Checks p by brute force and compares with the expected lines ("kind name [name]"),
 * then frees p. */
static void expect(tlsan_plan *p, const char *const *lines)
{
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    brute_findings got = {0}, want = {0};
    char buf[16][128];
    assert_int_equal(brute_check(p, &got), 0);
    for (size_t i = 0; lines[i]; i++) {
        assert_true(i < 16);
        snprintf(buf[i], sizeof buf[i], "%s", lines[i]);
        char *kind = strtok(buf[i], " "), *a = strtok(NULL, " "), *b = strtok(NULL, " ");
        tlsan_kind k = brute_kind_from_name(kind);
        assert_int_not_equal(k, TLSAN_KIND_COUNT_);
        assert_int_equal(brute_findings_add(&want, k, a, b), 0);
    }
    if (!brute_findings_equal(&got, &want)) {
        fprintf(stderr, "want:\n");
        brute_findings_print(&want, stderr);
        fprintf(stderr, "got:\n");
        brute_findings_print(&got, stderr);
        brute_plan_dump(p, stderr);
    }
    assert_true(brute_findings_equal(&got, &want));
    brute_findings_clear(&got);
    brute_findings_clear(&want);
    tlsan_plan_free(p);
}

static void test_overlap_basic(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 4096, "a0", 4096, 0);
    root(p, "b", 4096, "a0", 8192, 0);
    root(p, "c", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 12288, TLSAN_TENSOR_OUTPUT);
    op(p, "f", NAMES("x"), NAMES("a"));
    op(p, "g", NAMES("x"), NAMES("b"));
    op(p, "h", NAMES("b"), NAMES("c"));
    op(p, "k", NAMES("a", "c"), NAMES("y"));
    expect(p, NAMES("live-overlap a c"));
}

/* inplace-ok and inplace-residual-still-read: the exception holds only while the input's
 * root is last accessed at the declaring op. */
static void inplace_case(bool residual)
{
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 4096, "a0", 4096, 0);
    root(p, "b", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 8192, TLSAN_TENSOR_OUTPUT);
    op(p, "mm", NAMES("x"), NAMES("a"));
    tlsan_op_desc d = {0};
    d.name = "relu";
    d.reads = NAMES("a");
    d.n_reads = 1;
    d.writes = NAMES("b");
    d.n_writes = 1;
    d.inplace = NAMES("b", "a");
    d.n_inplace = 1;
    add_op(p, &d);
    if (residual) {
        op(p, "residual", NAMES("a", "b"), NAMES("y"));
        expect(p, NAMES("bad-inplace a b"));
    } else {
        op(p, "out", NAMES("b"), NAMES("y"));
        expect(p, NONE);
    }
}

static void test_inplace_ok(void **state)
{
    (void)state;
    inplace_case(false);
}

static void test_inplace_residual(void **state)
{
    (void)state;
    inplace_case(true);
}

/* inplace-wider-read and inplace-disjoint-read-ok: `sum` overwrites `lo`, the first half of
 * `cat`, in place; reading all of `cat` at that op is not excused, reading only `lo` and the
 * other half `hi` is. */
static void inplace_concat_case(bool wider)
{
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "cat", 8192, "a0", 4096, 0);
    tlsan_tensor_desc v = {0};
    v.name = "lo";
    v.bytes = 4096;
    v.view_of = "cat";
    add_tensor(p, &v);
    v.name = "hi";
    v.view_offset_bytes = 4096;
    add_tensor(p, &v);
    root(p, "sum", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 12288, TLSAN_TENSOR_OUTPUT);
    op(p, "left", NAMES("x"), NAMES("lo"));
    op(p, "right", NAMES("x"), NAMES("hi"));
    tlsan_op_desc d = {0};
    d.name = "sum_op";
    d.reads = wider ? NAMES("cat", "lo") : NAMES("lo", "hi");
    d.n_reads = 2;
    d.writes = NAMES("sum");
    d.n_writes = 1;
    d.inplace = NAMES("sum", "lo");
    d.n_inplace = 1;
    add_op(p, &d);
    op(p, "out", NAMES("sum"), NAMES("y"));
    expect(p, wider ? NAMES("bad-inplace cat sum") : NONE);
}

static void test_inplace_wider_read(void **state)
{
    (void)state;
    inplace_concat_case(true);
}

static void test_inplace_disjoint_read_ok(void **state)
{
    (void)state;
    inplace_concat_case(false);
}

/* async-missing-event / async-with-event: a copy stream reads `a` while main reuses its
 * bytes for `b`; only the event back to main orders them. */
static void async_case(bool with_event)
{
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 4096, "a0", 4096, 0);
    root(p, "b", 4096, "a0", 4096, 0);
    root(p, "c", 4096, "a0", 8192, 0);
    root(p, "y", 4096, "a0", 12288, TLSAN_TENSOR_OUTPUT);
    op(p, "prod", NAMES("x"), NAMES("a"));
    tlsan_op_desc d = {0};
    d.name = "ev0";
    d.sync = TLSAN_SYNC_RECORD;
    d.event = "e0";
    d.stream = "main";
    add_op(p, &d);
    d.name = "w0";
    d.sync = TLSAN_SYNC_WAIT;
    d.stream = "copy";
    add_op(p, &d);
    tlsan_op_desc c = {0};
    c.name = "copy_out";
    c.reads = NAMES("a");
    c.n_reads = 1;
    c.writes = NAMES("c");
    c.n_writes = 1;
    c.stream = "copy";
    add_op(p, &c);
    if (with_event) {
        d.name = "ev1";
        d.sync = TLSAN_SYNC_RECORD;
        d.event = "e1";
        d.stream = "copy";
        add_op(p, &d);
        d.name = "w1";
        d.sync = TLSAN_SYNC_WAIT;
        d.stream = "main";
        add_op(p, &d);
    }
    op(p, "next", NAMES("x"), NAMES("b"));
    op(p, "fin", NAMES("b", "c"), NAMES("y"));
    if (with_event)
        expect(p, NONE);
    else
        expect(p, NAMES("unordered-reuse a b"));
}

static void test_async_missing_event(void **state)
{
    (void)state;
    async_case(false);
}

static void test_async_with_event(void **state)
{
    (void)state;
    async_case(true);
}

/* dataflow-reorder / dataflow-with-after. */
static void dataflow_case(bool with_after)
{
    tlsan_plan *p = frame();
    assert_int_equal(tlsan_plan_set_schedule(p, TLSAN_SCHEDULE_DATAFLOW), TLSAN_OK);
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 4096, "a0", 4096, 0);
    root(p, "b", 4096, "a0", 4096, 0);
    root(p, "c", 4096, "a0", 8192, 0);
    root(p, "d", 4096, "a0", 12288, 0);
    root(p, "y", 4096, "a0", 16384, TLSAN_TENSOR_OUTPUT);
    op(p, "f", NAMES("x"), NAMES("a"));
    op(p, "g", NAMES("a"), NAMES("c"));
    tlsan_op_desc d = {0};
    d.name = "h";
    d.reads = NAMES("x");
    d.n_reads = 1;
    d.writes = NAMES("b");
    d.n_writes = 1;
    const char *const *after = NAMES("g"); /* outlives the if below */
    if (with_after) {
        d.after = after;
        d.n_after = 1;
    }
    add_op(p, &d);
    op(p, "k", NAMES("b"), NAMES("d"));
    op(p, "fin", NAMES("c", "d"), NAMES("y"));
    if (with_after)
        expect(p, NONE);
    else
        expect(p, NAMES("unordered-reuse a b"));
}

static void test_dataflow_reorder(void **state)
{
    (void)state;
    dataflow_case(false);
}

static void test_dataflow_with_after(void **state)
{
    (void)state;
    dataflow_case(true);
}

/* branch-union-needed: h is needed on the else path until step 3. */
static void test_branch_union_needed(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    tlsan_tensor_desc h = {0};
    h.name = "h";
    h.bytes = 4096;
    h.arena = "a0";
    h.offset_bytes = 4096;
    h.has_lifetime = true;
    h.lifetime[0] = 0;
    h.lifetime[1] = 2;
    add_tensor(p, &h);
    root(p, "u", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 8192, TLSAN_TENSOR_OUTPUT);
    op(p, "pre", NAMES("x"), NAMES("h"));
    static const char *const names[3] = {"then1", "else1", "else2"};
    const char *const *reads[3] = {NAMES("h"), NAMES("x"), NAMES("u", "h")};
    const char *const *writes[3] = {NAMES("y"), NAMES("u"), NAMES("y")};
    for (int i = 0; i < 3; i++) {
        tlsan_cond c = {"c0", i == 0 ? "then" : "else"};
        tlsan_op_desc d = {0};
        d.name = names[i];
        d.reads = reads[i];
        d.n_reads = count(reads[i]);
        d.writes = writes[i];
        d.n_writes = count(writes[i]);
        d.branch = &c;
        d.n_branch = 1;
        add_op(p, &d);
    }
    expect(p, NAMES("lifetime-too-short h", "live-overlap h u"));
}

/* loop-carried (acc is read first in the body, so it is live over the whole body) and
 * loop-local-ok (nothing is carried). */
static void test_loop_carried(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "acc", 4096, "a0", 4096, 0);
    root(p, "tmp", 4096, "a0", 4096, 0);
    root(p, "h", 4096, "a0", 8192, 0);
    root(p, "y", 4096, "a0", 12288, TLSAN_TENSOR_OUTPUT);
    op(p, "init", NAMES("x"), NAMES("acc"));
    static const char *const names[3] = {"body_read", "body_tmp", "body_upd"};
    const char *const *reads[3] = {NAMES("acc", "x"), NAMES("h"), NAMES("tmp", "h")};
    const char *const *writes[3] = {NAMES("h"), NAMES("tmp"), NAMES("acc")};
    for (int i = 0; i < 3; i++) {
        tlsan_op_desc d = {0};
        d.name = names[i];
        d.reads = reads[i];
        d.n_reads = count(reads[i]);
        d.writes = writes[i];
        d.n_writes = count(writes[i]);
        d.loop = "L0";
        add_op(p, &d);
    }
    op(p, "fin", NAMES("acc"), NAMES("y"));
    expect(p, NAMES("live-overlap acc tmp"));
}

static void test_loop_local_ok(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "p", 4096, "a0", 4096, 0);
    root(p, "q", 4096, "a0", 8192, 0);
    root(p, "r", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 12288, TLSAN_TENSOR_OUTPUT);
    static const char *const names[4] = {"b1", "b2", "b3", "b4"};
    const char *const *reads[4] = {NAMES("x"), NAMES("p"), NAMES("q"), NAMES("r", "x")};
    const char *const *writes[4] = {NAMES("p"), NAMES("q"), NAMES("r"), NAMES("y")};
    for (int i = 0; i < 4; i++) {
        tlsan_op_desc d = {0};
        d.name = names[i];
        d.reads = reads[i];
        d.n_reads = count(reads[i]);
        d.writes = writes[i];
        d.n_writes = count(writes[i]);
        d.loop = "L0";
        add_op(p, &d);
    }
    expect(p, NONE);
}

/* view-keeps-base-alive: a read through a view extends its root's lifetime. */
static void test_view_keeps_base_alive(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 8192, "a0", 4096, 0);
    tlsan_tensor_desc v = {0};
    v.name = "a_r";
    v.bytes = 8192;
    v.view_of = "a";
    add_tensor(p, &v);
    root(p, "b", 4096, "a0", 12288, 0);
    root(p, "c", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 16384, TLSAN_TENSOR_OUTPUT);
    op(p, "f", NAMES("x"), NAMES("a"));
    op(p, "g", NAMES("x"), NAMES("b"));
    op(p, "h", NAMES("b"), NAMES("c"));
    op(p, "k", NAMES("a_r", "c"), NAMES("y"));
    expect(p, NAMES("live-overlap a c"));
}

static void test_read_before_write(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 4096, "a0", 4096, 0);
    root(p, "y", 4096, "a0", 8192, TLSAN_TENSOR_OUTPUT);
    op(p, "f", NAMES("a", "x"), NAMES("y"));
    op(p, "g", NAMES("x"), NAMES("a"));
    expect(p, NAMES("read-before-write a"));
}

static void test_layout_errors(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    root(p, "x", 4096, "a0", 0, TLSAN_TENSOR_INPUT);
    root(p, "a", 4096, "a0", 100, 0);
    root(p, "b", 4096, "a0", 64512, TLSAN_TENSOR_OUTPUT);
    tlsan_tensor_desc c = {0};
    c.name = "c";
    c.bytes = 4096;
    c.arena = "a0";
    c.offset_bytes = 8192;
    c.memory = "cuda:0";
    add_tensor(p, &c);
    op(p, "f", NAMES("x"), NAMES("a"));
    op(p, "g", NAMES("a"), NAMES("c"));
    op(p, "h", NAMES("c"), NAMES("b"));
    expect(p,
           NAMES("live-overlap a x", "memory-kind-mismatch c", "misaligned a", "out-of-bounds b"));
}

static void test_size_undersized(void **state)
{
    (void)state;
    tlsan_plan *p = frame();
    static const uint64_t shape[1] = {1024};
    static const char *const names[4] = {"x", "packed", "unpacked", "y"};
    static const uint64_t bytes[4] = {1024, 512, 512, 1024};
    static const uint64_t offsets[4] = {0, 1024, 2048, 4096};
    static const tlsan_dtype dtypes[4] = {TLSAN_DTYPE_U8, TLSAN_DTYPE_U4, TLSAN_DTYPE_U8,
                                          TLSAN_DTYPE_U8};
    static const unsigned flags[4] = {TLSAN_TENSOR_INPUT, 0, 0, TLSAN_TENSOR_OUTPUT};
    for (int i = 0; i < 4; i++) {
        tlsan_tensor_desc d = {0};
        d.name = names[i];
        d.bytes = bytes[i];
        d.arena = "a0";
        d.offset_bytes = offsets[i];
        d.flags = flags[i];
        d.dtype = dtypes[i];
        d.shape = shape;
        d.n_shape = 1;
        add_tensor(p, &d);
    }
    op(p, "pack", NAMES("x"), NAMES("packed"));
    op(p, "unpack", NAMES("packed"), NAMES("unpacked"));
    op(p, "copy", NAMES("unpacked"), NAMES("y"));
    expect(p, NAMES("size-mismatch unpacked"));
}

/* ---- the shared case files ---- */

/* Reads a whole small file into a NUL-terminated buffer (caller frees); NULL on failure. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* One case: returns 0 when brute_check gives exactly the .expect set (cache-key-collision
 * lines aside: brute does not judge caches; each cached plan is checked on its own and the
 * union of their findings compared). */
static int check_case(const char *dir, const char *json_name)
{
    char path[1024], expect_path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    snprintf(expect_path, sizeof expect_path, "%.*s.expect", (int)(strlen(path) - 5), path);
    char *text = slurp(expect_path);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", expect_path);
        return 1;
    }
    int bad = 0;
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    tlsan_status st = tlsan_read_file(path, &plan, &cache, &err);
    brute_findings got = {0}, want = {0};
    if (strncmp(text, "invalid", 7) == 0) {
        if (st != TLSAN_ERR_INVALID) {
            fprintf(stderr, "%s: expected the reader to refuse it, got status %d\n", path, st);
            bad = 1;
        }
        goto done;
    }
    if (st != TLSAN_OK) {
        char buf[1024];
        fprintf(stderr, "%s: reader refused it: %s\n", path,
                tlsan_error_format(&err, buf, sizeof buf));
        bad = 1;
        goto done;
    }
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *kind = line, *a = NULL, *b = NULL;
        char *sp = strchr(kind, ' ');
        if (sp) {
            *sp = '\0';
            a = sp + 1;
            sp = strchr(a, ' ');
            if (sp) {
                *sp = '\0';
                b = sp + 1;
            }
        }
        if (strcmp(kind, "cache-key-collision") == 0)
            continue;
        tlsan_kind k = brute_kind_from_name(kind);
        if (k == TLSAN_KIND_COUNT_ || (b && strchr(b, ' '))) {
            fprintf(stderr, "%s: unexpected line '%s'\n", expect_path, line);
            bad = 1;
            goto done;
        }
        if (brute_findings_add(&want, k, a, b) != 0)
            bad = 1;
    }
    if (plan) {
        if (brute_check(plan, &got) != 0)
            bad = 1;
    } else {
        for (size_t i = 0; i < tlsan_cache_n_plans(cache); i++)
            if (brute_check(tlsan_cache_plan(cache, i), &got) != 0)
                bad = 1;
    }
    if (!bad && !brute_findings_equal(&got, &want)) {
        fprintf(stderr, "%s: brute gives\n", path);
        brute_findings_print(&got, stderr);
        fprintf(stderr, "but .expect lists\n");
        brute_findings_print(&want, stderr);
        bad = 1;
    }
done:
    brute_findings_clear(&got);
    brute_findings_clear(&want);
    tlsan_plan_free(plan);
    tlsan_cache_free(cache);
    free(text);
    return bad;
}

/* Every case of a corpus folder; returns how many there are, fails on any difference. */
static size_t check_corpus(const char *dir)
{
    char **names;
    size_t n = corpus_list_json(dir, &names);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += (size_t)check_case(dir, names[i]);
    corpus_free_list(names, n);
    fprintf(stderr, "%s: %zu cases, %zu differ\n", dir, n, failed);
    assert_int_equal(failed, 0);
    return n;
}

static void test_own_cases(void **state)
{
    (void)state;
    /* The corpus as of this writing; fewer means the folder was not found or lost files. */
    assert_true(check_corpus(corpus_own_cases()) >= 87);
}

static void test_shared_cases(void **state)
{
    (void)state;
    char dir[1024];
    assert_true(corpus_shared_sub("cases", dir, sizeof dir));
    assert_true(check_corpus(dir) >= 28);
}

int main(void)
{
    const struct CMUnitTest hand_built[] = {
        cmocka_unit_test(test_overlap_basic),
        cmocka_unit_test(test_inplace_ok),
        cmocka_unit_test(test_inplace_residual),
        cmocka_unit_test(test_inplace_wider_read),
        cmocka_unit_test(test_inplace_disjoint_read_ok),
        cmocka_unit_test(test_async_missing_event),
        cmocka_unit_test(test_async_with_event),
        cmocka_unit_test(test_dataflow_reorder),
        cmocka_unit_test(test_dataflow_with_after),
        cmocka_unit_test(test_branch_union_needed),
        cmocka_unit_test(test_loop_carried),
        cmocka_unit_test(test_loop_local_ok),
        cmocka_unit_test(test_view_keeps_base_alive),
        cmocka_unit_test(test_read_before_write),
        cmocka_unit_test(test_layout_errors),
        cmocka_unit_test(test_size_undersized),
    };
    const struct CMUnitTest own[] = {
        cmocka_unit_test(test_own_cases),
    };
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_shared_cases),
    };
    int rc = cmocka_run_group_tests(hand_built, NULL, NULL);
    if (rc == 0)
        rc = cmocka_run_group_tests(own, NULL, NULL);
    if (rc != 0)
        return rc;
    if (!corpus_have_shared("cases"))
        return 0;
    return cmocka_run_group_tests(shared, NULL, NULL);
}
