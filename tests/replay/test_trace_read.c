/* Tests of trace_read: decoding hand-written traces, and refusing broken ones. */
#include "support/mutate.h"
#include "support/tracegen.h"
#include "replay/replay.h"
#include "replay/trace_read.h"
#include "tlsan/check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define U(x) ((uint64_t)(x))

static trace_data *decode(const tracegen *g, tlsan_status want, const char *want_what)
{
    trace_data *t = NULL;
    tlsan_error err = {0};
    tlsan_status st = trace_read_buffer(g->buf, g->n, "t", &t, &err);
    assert_int_equal(st, want);
    if (want_what)
        assert_string_equal(err.what, want_what);
    return t;
}

/* A small complete run: strings, a module, a stack, an arena, a bind, an op, a release,
 * a finding and the end. */
static void build_run(tracegen *g)
{
    tg_header(g, 4242);
    tg_rec(g, TRACE_STRING, "us", U(1), "a0");
    tg_rec(g, TRACE_STRING, "us", U(2), "x");
    tg_rec(g, TRACE_STRING, "us", U(3), "mm");
    tg_rec(g, TRACE_MODULE, "uuus", U(1), U(0x400000), U(0x1000), "/bin/engine");
    tg_rec(g, TRACE_STACK, "uuuuuu", U(1), U(2), U(1), U(0x10), U(0), U(0x7f0000001234));
    tg_rec(g, TRACE_ARENA, "uuuuu", U(1), U(1), U(0x1000), U(4096), U(1));
    tg_rec(g, TRACE_BIND, "uuuuuuu", U(2), U(1), U(64), U(128), U(2), U(1), U(77));
    tg_rec(g, TRACE_OP, "uuuuuuuuuu", U(1), U(3), U(1), U(1), U(2), U(1), U(2), U(0), U(1), U(77));
    tg_rec(g, TRACE_OP_END, "u", U(1));
    tg_rec(g, TRACE_RELEASE, "uuu", U(2), U(0), U(0));
    tg_rec(g, TRACE_FINDING, "ssuuusu", "live-corruption", "x changed", U(1), U(2), U(1), "read",
           U(1));
    tg_rec(g, TRACE_END, "u", U(1));
}

static void test_decodes_a_run(void **state)
{
    (void)state;
    tracegen g = {0};
    build_run(&g);
    trace_data *t = decode(&g, TLSAN_OK, NULL);
    assert_int_equal(trace_pid(t), 4242);
    assert_int_equal(trace_parent_pid(t), 1);
    assert_false(trace_truncated(t));
    assert_int_equal(trace_n_strings(t), 3);
    assert_string_equal(trace_str(t, 3), "mm");
    assert_null(trace_str(t, 4));
    const trace_module *m = trace_module_get(t, 1);
    assert_non_null(m);
    assert_int_equal(m->base, 0x400000);
    assert_string_equal(m->path, "/bin/engine");
    trace_stack s = trace_stack_get(t, 1);
    assert_int_equal(s.n_frames, 2);
    assert_int_equal(s.frames[0].module, 1);
    assert_int_equal(s.frames[0].offset, 0x10);
    assert_int_equal(s.frames[1].module, 0);
    assert_int_equal(s.frames[1].offset, 0x7f0000001234);
    assert_int_equal(trace_n_events(t), 7);
    const trace_event *ev = trace_event_at(t, 1);
    assert_int_equal(ev->tag, TRACE_BIND);
    assert_int_equal(ev->name, 2);
    assert_int_equal(ev->arena, 1);
    assert_int_equal(ev->a, 64);
    assert_int_equal(ev->b, 128);
    assert_int_equal(ev->flags, 2);
    ev = trace_event_at(t, 2);
    assert_int_equal(ev->tag, TRACE_OP);
    assert_int_equal(ev->a, 1); /* stream */
    assert_int_equal(ev->n_reads, 1);
    assert_int_equal(ev->n_writes, 1);
    assert_int_equal(ev->n_inplace, 0);
    assert_int_equal(ev->names[0], 2);
    assert_int_equal(ev->names[1], 2);
    ev = trace_event_at(t, 5);
    assert_int_equal(ev->tag, TRACE_FINDING);
    assert_string_equal(ev->text, "live-corruption");
    assert_string_equal(ev->message, "x changed");
    assert_int_equal(ev->n_reads, 1);
    assert_int_equal(ev->n_roles, 1);
    assert_string_equal(ev->roles[0], "read");
    assert_int_equal(ev->role_stacks[0], 1);
    trace_data_free(t);
    tg_free(&g);
}

/* A trace of a 32-bit or a big-endian process reads the same: its fields are little-endian
 * or varints whatever recorded them. */
static void test_header_of_other_machines(void **state)
{
    (void)state;
    tracegen g = {0};
    build_run(&g);
    g.buf[TRACE_HEADER_AT_POINTER_SIZE] = 4;
    g.buf[TRACE_HEADER_AT_BYTE_ORDER] = TRACE_BIG_ENDIAN;
    trace_data *t = decode(&g, TLSAN_OK, NULL);
    assert_int_equal(trace_pid(t), 4242);
    assert_int_equal(trace_n_events(t), 7);
    assert_int_equal(trace_event_at(t, 1)->b, 128);
    trace_data_free(t);
    tg_free(&g);
}

static void test_crash_prefix(void **state)
{
    (void)state;
    tracegen g = {0};
    build_run(&g);
    /* Cut inside the last record but one: the prefix survives, marked truncated. */
    size_t full = g.n;
    g.n = full - 4;
    trace_data *t = decode(&g, TLSAN_OK, NULL);
    assert_true(trace_truncated(t));
    assert_int_equal(trace_n_events(t), 5);
    trace_data_free(t);
    /* A zero-filled tail (the mapping of a process that died) ends the trace. */
    g.n = full - 3; /* drop END (3 bytes: tag, size, count) */
    unsigned char zeros[64] = {0};
    tg_raw(&g, zeros, sizeof zeros);
    t = decode(&g, TLSAN_OK, NULL);
    assert_true(trace_truncated(t));
    assert_int_equal(trace_n_events(t), 6);
    trace_data_free(t);
    tg_free(&g);
}

static void test_unknown_tag_skipped(void **state)
{
    (void)state;
    tracegen g = {0};
    tg_header(&g, 1);
    tg_rec(&g, 99, "us", U(5), "future");
    tg_rec(&g, TRACE_STRING, "us", U(1), "a");
    tg_rec(&g, TRACE_END, "uu", U(0), U(12345)); /* an extra field of a later version */
    trace_data *t = decode(&g, TLSAN_OK, NULL);
    assert_false(trace_truncated(t));
    assert_int_equal(trace_n_strings(t), 1);
    assert_int_equal(trace_n_events(t), 1);
    trace_data_free(t);
    tg_free(&g);
}

static void test_refuses_broken(void **state)
{
    (void)state;
    tracegen g = {0};
    tg_raw(&g, "NOTATRACE-------------------------------", 40);
    assert_null(decode(&g, TLSAN_ERR_INVALID, "not a tlsan trace (no TLSANTRC header)"));
    tg_free(&g);

    tg_header(&g, 1);
    g.buf[8] = 2;
    assert_null(
        decode(&g, TLSAN_ERR_INVALID, "trace version 2 is not supported (this tlsan reads 1)"));
    tg_free(&g);

    tg_header(&g, 1);
    g.buf[TRACE_HEADER_AT_POINTER_SIZE] = 16;
    assert_null(decode(&g, TLSAN_ERR_INVALID, "pointer size 16 is not 4 or 8"));
    tg_free(&g);

    tg_header(&g, 1);
    g.buf[TRACE_HEADER_AT_BYTE_ORDER] = 0;
    assert_null(
        decode(&g, TLSAN_ERR_INVALID, "byte order 0 is not 1 (little-endian) or 2 (big-endian)"));
    tg_free(&g);

    tg_header(&g, 1);
    tg_rec(&g, TRACE_STRING, "us", U(2), "skips id 1");
    assert_null(decode(&g, TLSAN_ERR_INVALID, "string ids must be 1, 2, 3, ... in order"));
    tg_free(&g);

    tg_header(&g, 1);
    tg_rec(&g, TRACE_RELEASE, "uuu", U(7), U(0), U(0)); /* release of string 7, never defined */
    assert_null(decode(&g, TLSAN_ERR_INVALID, "reference to an undefined string id"));
    tg_free(&g);

    tg_header(&g, 1);
    tg_rec(&g, TRACE_STRING, "us", U(1), "x");
    tg_rec(&g, TRACE_BIND, "uuuuuuu", U(1), U(3), U(0), U(8), U(0), U(0), U(1)); /* arena 3 */
    assert_null(decode(&g, TLSAN_ERR_INVALID, "reference to an undefined arena id"));
    tg_free(&g);

    tg_header(&g, 1);
    tg_rec(&g, TRACE_SYNC, ""); /* SYNC without its stack field */
    assert_null(decode(&g, TLSAN_ERR_INVALID, "record shorter than its fields"));
    tg_free(&g);

    tg_header(&g, 1);
    tg_rec(&g, TRACE_STACK, "uuuu", U(1), U(1), U(5), U(0)); /* frame in module 5 */
    assert_null(decode(&g, TLSAN_ERR_INVALID, "frame names an undefined module id"));
    tg_free(&g);

    tg_header(&g, 1);
    tg_rec(&g, TRACE_SYNC, "u", U(9)); /* stack 9 */
    assert_null(decode(&g, TLSAN_ERR_INVALID, "reference to an undefined stack id"));
    tg_free(&g);

    /* An op claiming more names than its payload can hold. */
    tg_header(&g, 1);
    tg_rec(&g, TRACE_STRING, "us", U(1), "x");
    tg_rec(&g, TRACE_OP, "uuuu", U(1), U(1), U(0), U(1000000));
    assert_null(decode(&g, TLSAN_ERR_INVALID, "record shorter than its fields"));
    tg_free(&g);

    /* An 11-byte varint. */
    tg_header(&g, 1);
    unsigned char rec[] = {13, 11, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0};
    tg_raw(&g, rec, sizeof rec);
    assert_null(decode(&g, TLSAN_ERR_INVALID, "record shorter than its fields"));
    tg_free(&g);
}

static void test_file_errors(void **state)
{
    (void)state;
    trace_data *t = NULL;
    tlsan_error err = {0};
    assert_int_equal(trace_read_file("/nonexistent/trace", &t, &err), TLSAN_ERR_IO);
    assert_null(t);
    assert_string_equal(err.what, "cannot open: No such file or directory");
    /* A device would feed bytes without end: refused before reading. */
    assert_int_equal(trace_read_file("/dev/zero", &t, &err), TLSAN_ERR_INVALID);
    assert_string_equal(err.what, "not a regular file");
}

/* ---- hostile bytes: any trace decodes (a cut one marked truncated) or is refused ---- */

typedef struct tally {
    size_t full;
    size_t decoded, refused, replayed;
} tally;

static void try_variant(const uint8_t *b, size_t n, const char *what, void *ctx)
{
    tally *c = ctx;
    trace_data *t = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    tlsan_status st = trace_read_buffer(b, n, "t", &t, &err);
    if (st == TLSAN_ERR_INVALID) {
        if (strcmp(err.file, "t") != 0 || !err.what[0])
            fail_msg("%s: refused without naming the file or the fault", what);
        c->refused++;
        return;
    }
    if (st != TLSAN_OK)
        fail_msg("%s: status %s", what, tlsan_status_name(st));
    if (n < c->full && !trace_truncated(t))
        fail_msg("%s: a cut trace is not marked truncated", what);
    c->decoded++;
    tlsan_plan *plan = NULL;
    st = replay_build(t, "run", false, NULL, &plan, &err);
    if (st == TLSAN_OK) {
        tlsan_report *report = NULL;
        tlsan_check_options opt = {.max_paths = 64};
        if (tlsan_check(plan, &opt, &report) != TLSAN_OK)
            fail_msg("%s: replayed, but the check failed", what);
        tlsan_report_free(report);
        tlsan_plan_free(plan);
        c->replayed++;
    } else if (st != TLSAN_ERR_INVALID || !err.what[0]) {
        fail_msg("%s: replay gave %s", what, tlsan_status_name(st));
    }
    trace_data_free(t);
}

static void test_hostile_variants(void **state)
{
    (void)state;
    tracegen g = {0};
    build_run(&g);
    tally c = {g.n, 0, 0, 0};
    mutate_plan mp = {.max_cuts = SIZE_MAX, .flips = 4000, .swaps = 4000, .seed = 0x7ace};
    size_t tried = mutate_each(g.buf, g.n, &mp, try_variant, &c);
    printf("%zu variants of a %zu-byte trace: %zu decoded (%zu replayed), %zu refused\n", tried,
           g.n, c.decoded, c.replayed, c.refused);
    assert_int_equal(c.decoded + c.refused, tried);
    assert_true(c.replayed > 0);
    tg_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decodes_a_run),    cmocka_unit_test(test_header_of_other_machines),
        cmocka_unit_test(test_crash_prefix),     cmocka_unit_test(test_unknown_tag_skipped),
        cmocka_unit_test(test_refuses_broken),   cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_hostile_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
