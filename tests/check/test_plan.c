/* plan: the builder API refuses every invalid plan with where and what, and resolves
 * views, loops, ifs and streams as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "check/plan.h"

static tlsan_plan *base(void)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    tlsan_arena_desc a = {.name = "a0", .bytes = 4096, .alignment_bytes = 64};
    assert_int_equal(tlsan_plan_add_arena(p, &a, NULL), TLSAN_OK);
    tlsan_tensor_desc x = {.name = "x", .bytes = 64, .arena = "a0", .flags = TLSAN_TENSOR_INPUT};
    assert_int_equal(tlsan_plan_add_tensor(p, &x, NULL), TLSAN_OK);
    return p;
}

static void arena_errors(void **state)
{
    (void)state;
    tlsan_plan *p = base();
    tlsan_error e;
    tlsan_arena_desc dup = {.name = "a0", .bytes = 1};
    assert_int_equal(tlsan_plan_add_arena(p, &dup, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "arenas[1].name");
    assert_string_equal(e.what, "duplicate arena name 'a0'");
    tlsan_arena_desc big = {.name = "b", .bytes = (uint64_t)INT64_MAX + 1};
    assert_int_equal(tlsan_plan_add_arena(p, &big, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "arenas[1].bytes");
    tlsan_arena_desc unnamed = {.name = "", .bytes = 1};
    assert_int_equal(tlsan_plan_add_arena(p, &unnamed, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "arenas[1].name");
    assert_int_equal(tlsan_plan_add_arena(NULL, &big, &e), TLSAN_ERR_ARG);
    tlsan_plan_free(p);
}

static void tensor_errors(void **state)
{
    (void)state;
    tlsan_plan *p = base();
    tlsan_error e;
    tlsan_tensor_desc both = {.name = "t", .bytes = 1, .arena = "a0", .view_of = "x"};
    assert_int_equal(tlsan_plan_add_tensor(p, &both, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1]");
    assert_non_null(strstr(e.what, "not both"));
    tlsan_tensor_desc neither = {.name = "t", .bytes = 1};
    assert_int_equal(tlsan_plan_add_tensor(p, &neither, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1]");
    tlsan_tensor_desc dup = {.name = "x", .bytes = 1, .arena = "a0"};
    assert_int_equal(tlsan_plan_add_tensor(p, &dup, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].name");
    assert_string_equal(e.what, "duplicate tensor name 'x'");
    tlsan_tensor_desc rev = {
        .name = "t", .bytes = 1, .arena = "a0", .has_lifetime = true, .lifetime = {3, 1}};
    assert_int_equal(tlsan_plan_add_tensor(p, &rev, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].lifetime");
    tlsan_tensor_desc early = {
        .name = "t", .bytes = 1, .arena = "a0", .has_lifetime = true, .lifetime = {-2, 1}};
    assert_int_equal(tlsan_plan_add_tensor(p, &early, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].lifetime[0]");
    uint64_t shape[1] = {4};
    tlsan_tensor_desc shape_only = {
        .name = "t", .bytes = 1, .arena = "a0", .shape = shape, .n_shape = 1};
    assert_int_equal(tlsan_plan_add_tensor(p, &shape_only, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].shape");
    tlsan_tensor_desc off = {
        .name = "t", .bytes = 1, .arena = "a0", .offset_bytes = (uint64_t)INT64_MAX + 1};
    assert_int_equal(tlsan_plan_add_tensor(p, &off, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].offset");
    tlsan_plan_free(p);
}

static void op_errors(void **state)
{
    (void)state;
    tlsan_plan *p = base();
    tlsan_error e;
    const char *r[] = {"x"};
    tlsan_op_desc sync_with_tensor = {
        .name = "s", .reads = r, .n_reads = 1, .sync = TLSAN_SYNC_ALL};
    assert_int_equal(tlsan_plan_add_op(p, &sync_with_tensor, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[0]");
    tlsan_op_desc record_no_event = {.name = "s", .sync = TLSAN_SYNC_RECORD};
    assert_int_equal(tlsan_plan_add_op(p, &record_no_event, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[0].record");
    const char *later[] = {"later"};
    tlsan_op_desc after_later = {.name = "first", .after = later, .n_after = 1};
    assert_int_equal(tlsan_plan_add_op(p, &after_later, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[0].after[0]");
    assert_string_equal(e.what, "'after' names an unknown or later op 'later'");
    const char *self[] = {"me"};
    tlsan_op_desc after_self = {.name = "me", .after = self, .n_after = 1};
    assert_int_equal(tlsan_plan_add_op(p, &after_self, &e), TLSAN_ERR_INVALID);
    tlsan_cond twice[] = {{"c", "then"}, {"c", "else"}};
    tlsan_op_desc two_conds = {.name = "o", .branch = twice, .n_branch = 2};
    assert_int_equal(tlsan_plan_add_op(p, &two_conds, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[0].branch[1].if");
    assert_string_equal(e.what, "the branch list names if 'c' twice");
    tlsan_op_desc ok = {.name = "o"};
    assert_int_equal(tlsan_plan_add_op(p, &ok, &e), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_op(p, &ok, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[1].name");
    assert_string_equal(e.what, "duplicate op name 'o'");
    tlsan_plan_free(p);
}

static void finalize_errors(void **state)
{
    (void)state;
    tlsan_error e;
    /* unknown arena */
    tlsan_plan *p = base();
    tlsan_tensor_desc t = {.name = "t", .bytes = 1, .arena = "nope"};
    assert_int_equal(tlsan_plan_add_tensor(p, &t, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].arena");
    assert_string_equal(e.what, "unknown arena 'nope'");
    tlsan_plan_free(p);
    /* a cycle of views */
    p = base();
    tlsan_tensor_desc v1 = {.name = "v1", .bytes = 1, .view_of = "v2"};
    tlsan_tensor_desc v2 = {.name = "v2", .bytes = 1, .view_of = "v1"};
    assert_int_equal(tlsan_plan_add_tensor(p, &v1, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_tensor(p, &v2, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, &e), TLSAN_ERR_INVALID);
    assert_non_null(strstr(e.what, "cycle of views"));
    tlsan_plan_free(p);
    /* unknown tensor in an op */
    p = base();
    const char *w[] = {"ghost"};
    tlsan_op_desc o = {.name = "o", .writes = w, .n_writes = 1};
    assert_int_equal(tlsan_plan_add_op(p, &o, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[0].writes[0]");
    assert_string_equal(e.what, "unknown tensor 'ghost'");
    tlsan_plan_free(p);
    /* a loop split in two */
    p = base();
    tlsan_op_desc l1 = {.name = "l1", .loop = "L"}, mid = {.name = "mid"},
                  l2 = {.name = "l2", .loop = "L"};
    assert_int_equal(tlsan_plan_add_op(p, &l1, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_op(p, &mid, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_op(p, &l2, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "ops[2].loop");
    tlsan_plan_free(p);
    /* a lifetime past the output step */
    p = base();
    tlsan_tensor_desc lt = {
        .name = "t", .bytes = 1, .arena = "a0", .has_lifetime = true, .lifetime = {0, 2}};
    assert_int_equal(tlsan_plan_add_tensor(p, &lt, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_op(p, &mid, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[1].lifetime[1]");
    tlsan_plan_free(p);
}

/* Resolution: roots, absolute offsets, flags of view trees, ifs with implicit arms, loops
 * and dense streams; and a finalized plan is read-only. */
static void resolution(void **state)
{
    (void)state;
    tlsan_plan *p = base();
    tlsan_tensor_desc r = {.name = "r", .bytes = 256, .arena = "a0", .offset_bytes = 128};
    tlsan_tensor_desc v = {.name = "v", .bytes = 128, .view_of = "r", .view_offset_bytes = 64};
    tlsan_tensor_desc vv = {.name = "vv",
                            .bytes = 32,
                            .view_of = "v",
                            .view_offset_bytes = 32,
                            .flags = TLSAN_TENSOR_OUTPUT};
    assert_int_equal(tlsan_plan_add_tensor(p, &vv, NULL), TLSAN_OK); /* before its base */
    assert_int_equal(tlsan_plan_add_tensor(p, &v, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_tensor(p, &r, NULL), TLSAN_OK);
    tlsan_cond c1[] = {{"c", "then"}}, c2[] = {{"d", "x"}}, c3[] = {{"d", "y"}};
    tlsan_op_desc o1 = {.name = "o1", .branch = c1, .n_branch = 1, .loop = "L"};
    tlsan_op_desc o2 = {.name = "o2", .branch = c2, .n_branch = 1, .loop = "L", .stream = "s"};
    tlsan_op_desc o3 = {.name = "o3", .branch = c3, .n_branch = 1};
    assert_int_equal(tlsan_plan_add_op(p, &o1, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_op(p, &o2, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_op(p, &o3, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    assert_int_equal(p->tensors[1].root, 3);
    assert_int_equal(p->tensors[1].abs_offset_bytes, 128 + 64 + 32);
    assert_int_equal(p->root_flags[3], TLSAN_TENSOR_OUTPUT);
    assert_int_equal(p->n_ifs, 2);
    assert_int_equal(p->ifs[0].n_named_arms, 1);
    assert_int_equal(p->ifs[0].n_arms, 2); /* implicit empty arm */
    assert_int_equal(p->ifs[1].n_arms, 2);
    assert_int_equal(p->n_loops, 1);
    assert_int_equal(p->loops[0].first_op, 0);
    assert_int_equal(p->loops[0].last_op, 1);
    assert_int_equal(p->n_streams, 2);
    assert_int_equal(p->op_stream[1], 1);
    assert_int_equal(tlsan_plan_n_tensors(p), 4);
    assert_string_equal(tlsan_plan_op_name(p, 2), "o3");
    assert_null(tlsan_plan_op_name(p, 3));
    tlsan_op_desc late = {.name = "late"};
    assert_int_equal(tlsan_plan_add_op(p, &late, NULL), TLSAN_ERR_STATE);
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_ERR_STATE);
    tlsan_plan_free(p);
}

static void dtypes(void **state)
{
    (void)state;
    assert_int_equal(tlsan_dtype_from_name("bf16"), TLSAN_DTYPE_BF16);
    assert_int_equal(tlsan_dtype_from_name("f17"), TLSAN_DTYPE_NONE);
    assert_int_equal(tlsan_dtype_bits(TLSAN_DTYPE_U4), 4);
    assert_string_equal(tlsan_dtype_name(TLSAN_DTYPE_BOOL), "bool");
    tlsan_plan *p = base();
    uint64_t shape[] = {3, 5};
    tlsan_tensor_desc t = {.name = "t",
                           .bytes = 8,
                           .arena = "a0",
                           .dtype = TLSAN_DTYPE_I4,
                           .shape = shape,
                           .n_shape = 2};
    assert_int_equal(tlsan_plan_add_tensor(p, &t, NULL), TLSAN_OK);
    uint64_t huge[] = {UINT64_C(1) << 62, 16};
    tlsan_tensor_desc h = {.name = "h",
                           .bytes = 8,
                           .arena = "a0",
                           .dtype = TLSAN_DTYPE_F64,
                           .shape = huge,
                           .n_shape = 2};
    assert_int_equal(tlsan_plan_add_tensor(p, &h, NULL), TLSAN_OK);
    uint64_t neg[] = {(uint64_t)INT64_MAX + 1};
    tlsan_tensor_desc n = {.name = "n",
                           .bytes = 8,
                           .arena = "a0",
                           .dtype = TLSAN_DTYPE_U8,
                           .shape = neg,
                           .n_shape = 1};
    tlsan_error e;
    assert_int_equal(tlsan_plan_add_tensor(p, &n, &e), TLSAN_ERR_INVALID);
    assert_string_equal(e.where, "tensors[3].shape[0]");
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    /* 15 four-bit elements round up to 8 bytes over the whole tensor */
    assert_int_equal(plan_needed_bytes(p, &p->tensors[1]), 8);
    /* an element count past 2^64 bits saturates instead of wrapping */
    assert_int_equal(plan_needed_bytes(p, &p->tensors[2]), UINT64_MAX);
    tlsan_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arena_errors), cmocka_unit_test(tensor_errors),
        cmocka_unit_test(op_errors),    cmocka_unit_test(finalize_errors),
        cmocka_unit_test(resolution),   cmocka_unit_test(dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
