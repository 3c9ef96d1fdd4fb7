/* plan_query: the roots that share bytes with another root, against a brute-force twin (every
 * pair compared) on random plans, and exactly on a small one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/plan.h"
#include "check/plan_query.h"

#define MAX_ROOTS 24

struct marks {
    const tlsan_plan *plan;
    bool shared[MAX_ROOTS + 4];
};

static void mark(void *ctx, const char *name)
{
    struct marks *m = ctx;
    for (size_t i = 0; i < m->plan->n_tensors; i++)
        if (strcmp(plan_str(m->plan, m->plan->tensors[i].name), name) == 0)
            m->shared[i] = true;
}

/* The twin: roots i and j share bytes when they are in one arena and their ranges meet. */
static bool brute_shared(const tlsan_plan *p, size_t i)
{
    const tensor_rec *a = &p->tensors[i];
    if (a->view_of != NO_INDEX || !a->bytes)
        return false;
    for (size_t j = 0; j < p->n_tensors; j++) {
        const tensor_rec *b = &p->tensors[j];
        if (j == i || b->view_of != NO_INDEX || !b->bytes || b->arena != a->arena)
            continue;
        if (a->offset_bytes < b->offset_bytes + b->bytes &&
            b->offset_bytes < a->offset_bytes + a->bytes)
            return true;
    }
    return false;
}

static tlsan_plan *add_root(tlsan_plan *p, const char *name, const char *arena, uint64_t off,
                            uint64_t bytes)
{
    tlsan_tensor_desc t = {.name = name, .bytes = bytes, .arena = arena, .offset_bytes = off};
    assert_int_equal(tlsan_plan_add_tensor(p, &t, NULL), TLSAN_OK);
    return p;
}

static tlsan_plan *new_plan(void)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    tlsan_arena_desc a0 = {.name = "a0", .bytes = 1 << 20}, a1 = {.name = "a1", .bytes = 1 << 20};
    assert_int_equal(tlsan_plan_add_arena(p, &a0, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_add_arena(p, &a1, NULL), TLSAN_OK);
    return p;
}

/* x and y meet; z only touches y (end == start is no sharing); w has the same offsets as x in
 * another arena; e has no bytes; v is a view inside x. */
static void names_exactly_the_roots_that_meet(void **state)
{
    (void)state;
    tlsan_plan *p = new_plan();
    add_root(p, "x", "a0", 0, 64);
    add_root(p, "y", "a0", 32, 64);
    add_root(p, "z", "a0", 96, 16);
    add_root(p, "w", "a1", 0, 64);
    add_root(p, "e", "a0", 40, 0);
    tlsan_tensor_desc v = {.name = "v", .bytes = 16, .view_of = "x", .view_offset_bytes = 8};
    assert_int_equal(tlsan_plan_add_tensor(p, &v, NULL), TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    struct marks m = {.plan = p};
    assert_int_equal(plan_query_shared_roots(p, mark, &m), 0);
    const bool want[] = {true, true, false, false, false, false};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(m.shared[i], want[i]);
    tlsan_plan_free(p);
}

/* Random layouts in two arenas: the sweep names what every pair compared says. */
static void agrees_with_all_pairs_on_random_plans(void **state)
{
    (void)state;
    srand(12345);
    for (int round = 0; round < 3000; round++) {
        tlsan_plan *p = new_plan();
        size_t n = 1 + (size_t)(rand() % MAX_ROOTS);
        for (size_t i = 0; i < n; i++) {
            char name[32];
            snprintf(name, sizeof name, "t%zu", i);
            add_root(p, name, rand() % 3 ? "a0" : "a1", (uint64_t)(rand() % 256),
                     (uint64_t)(rand() % 5 == 0 ? 0 : 1 + rand() % 48));
        }
        assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
        struct marks m = {.plan = p};
        assert_int_equal(plan_query_shared_roots(p, mark, &m), 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(m.shared[i], brute_shared(p, i));
        tlsan_plan_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_exactly_the_roots_that_meet),
        cmocka_unit_test(agrees_with_all_pairs_on_random_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
