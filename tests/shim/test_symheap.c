/* Tests of symheap: the symbolizer's own heap. Random allocations, frees and reallocations
 * against a brute-force model (every live block's bytes and extent kept aside): no two live
 * blocks overlap, each keeps its bytes, alignment is honoured, ownership is by address. */
#include "symheap.h"
#include "../support/splitmix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define LIVE_MAX 256

struct model {
    unsigned char *p;
    size_t size_bytes;
    unsigned char fill;
};

static void check_block(const struct model *m)
{
    for (size_t i = 0; i < m->size_bytes; i++)
        if (m->p[i] != m->fill)
            fail_msg("block %p of %zu bytes lost byte %zu", (void *)m->p, m->size_bytes, i);
}

static void check_disjoint(const struct model *live, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            uintptr_t a = (uintptr_t)live[i].p, b = (uintptr_t)live[j].p;
            if (a < b + live[j].size_bytes && b < a + live[i].size_bytes)
                fail_msg("blocks %p and %p overlap", (void *)live[i].p, (void *)live[j].p);
        }
}

static void test_random_against_model(void **state)
{
    (void)state;
    assert_true(symheap_enter());
    uint64_t rng = 42;
    struct model live[LIVE_MAX];
    size_t n = 0;
    for (int step = 0; step < 20000; step++) {
        unsigned op = (unsigned)splitmix_below(&rng, 4);
        if (n && (op == 0 || n == LIVE_MAX)) { /* free */
            size_t k = (size_t)splitmix_below(&rng, n);
            check_block(&live[k]);
            assert_true(symheap_owns(live[k].p));
            symheap_free(live[k].p);
            live[k] = live[--n];
        } else if (n && op == 1) { /* realloc: the bytes kept, the rest filled anew */
            size_t k = (size_t)splitmix_below(&rng, n);
            size_t size = (size_t)splitmix_below(&rng, 5000);
            check_block(&live[k]);
            unsigned char *q = symheap_realloc(live[k].p, size);
            assert_non_null(q);
            size_t kept = live[k].size_bytes < size ? live[k].size_bytes : size;
            for (size_t i = 0; i < kept; i++)
                assert_int_equal(q[i], live[k].fill);
            memset(q, live[k].fill, size);
            live[k].p = q;
            live[k].size_bytes = size;
        } else { /* alloc, aligned or zeroed */
            size_t size = (size_t)splitmix_below(&rng, 3000);
            size_t align = (size_t)1 << splitmix_below(&rng, 13);
            unsigned char *p = op == 3 ? symheap_calloc(1, size) : symheap_alloc(size, align);
            assert_non_null(p);
            if (op == 3) {
                for (size_t i = 0; i < size; i++)
                    assert_int_equal(p[i], 0);
            } else {
                assert_int_equal((uintptr_t)p % align, 0);
            }
            assert_true(symheap_size(p) >= size);
            unsigned char fill = (unsigned char)(step & 0xff);
            memset(p, fill, size);
            live[n++] = (struct model){p, size, fill};
        }
        if (step % 1000 == 0)
            check_disjoint(live, n);
    }
    check_disjoint(live, n);
    for (size_t i = 0; i < n; i++) {
        check_block(&live[i]);
        symheap_free(live[i].p);
    }
    symheap_leave();
}

static void test_ownership_and_limits(void **state)
{
    (void)state;
    assert_true(symheap_enter());
    assert_int_equal(symheap_t_active, 1);
    void *own = symheap_alloc(10, 0);
    void *other = malloc(10);
    assert_true(symheap_owns(own));
    assert_false(symheap_owns(other));
    assert_false(symheap_owns(NULL));
    free(other);
    /* Beyond the largest class: refused, not crashed. */
    assert_null(symheap_alloc((size_t)1 << 40, 0));
    assert_null(symheap_calloc(SIZE_MAX / 2, 4));
    symheap_free(own);
    symheap_free(NULL);
    symheap_leave();
    assert_int_equal(symheap_t_active, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_against_model),
        cmocka_unit_test(test_ownership_and_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
