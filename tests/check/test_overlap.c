/* overlap: the sweep with an interval treap, and the byte segments, must give exactly the
 * pairs an all-pairs comparison gives, on thousands of random layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/overlap.h"

typedef struct pairset {
    uint8_t *m; /* n*n bits as bytes: m[a*n+b] counts reports of (a,b) unordered */
    size_t n;
} pairset;

static int record(void *ctx, uint32_t a, uint32_t b)
{
    pairset *s = ctx;
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    s->m[lo * s->n + hi]++;
    return 0;
}

/* Byte-sharing pairs from the segments: each pair counted in the segment where its shared
 * bytes begin, so exactly once; the lists must come sorted by first step. */
typedef struct seg_ctx {
    pairset *set;
    const tlsan_plan *p;
    const life *hull;
} seg_ctx;

static int record_segment(void *ctx, uint64_t start, const uint32_t *r, size_t m)
{
    seg_ctx *s = ctx;
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && (s->hull[r[i - 1]].first > s->hull[r[i]].first ||
                      (s->hull[r[i - 1]].first == s->hull[r[i]].first && r[i - 1] > r[i])))
            return 9; /* not sorted */
        for (size_t j = 0; j < i; j++) {
            uint64_t a = s->p->tensors[r[i]].offset_bytes, b = s->p->tensors[r[j]].offset_bytes;
            if ((a > b ? a : b) == start)
                record(s->set, r[i], r[j]);
        }
    }
    return 0;
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A plan with n_roots roots in n_arenas arenas and n_ops empty ops. */
static tlsan_plan *layout(uint64_t *seed, size_t n_roots, size_t n_arenas, size_t n_ops)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    char name[32];
    for (size_t a = 0; a < n_arenas; a++) {
        snprintf(name, sizeof name, "a%zu", a);
        tlsan_arena_desc d = {.name = name, .bytes = 1u << 20};
        assert_int_equal(tlsan_plan_add_arena(p, &d, NULL), TLSAN_OK);
    }
    for (size_t t = 0; t < n_roots; t++) {
        char an[32];
        snprintf(name, sizeof name, "t%zu", t);
        snprintf(an, sizeof an, "a%zu", (size_t)(rng(seed) % n_arenas));
        tlsan_tensor_desc d = {.name = name, .arena = an};
        /* few distinct offsets and sizes, so that overlaps and touching ends are common */
        d.offset_bytes = (rng(seed) % 8) * 16;
        d.bytes = (rng(seed) % 5) * 16;
        assert_int_equal(tlsan_plan_add_tensor(p, &d, NULL), TLSAN_OK);
    }
    for (size_t o = 0; o < n_ops; o++) {
        snprintf(name, sizeof name, "op%zu", o);
        tlsan_op_desc d = {.name = name};
        assert_int_equal(tlsan_plan_add_op(p, &d, NULL), TLSAN_OK);
    }
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    return p;
}

static void random_layouts(void **state)
{
    (void)state;
    uint64_t seed = 42;
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = 1 + rng(&seed) % 40, n_ops = rng(&seed) % 12;
        tlsan_plan *p = layout(&seed, n, 1 + rng(&seed) % 3, n_ops);
        access_index ix;
        memset(&ix, 0, sizeof ix);
        ix.hull = malloc(n * sizeof *ix.hull);
        assert_non_null(ix.hull);
        for (size_t t = 0; t < n; t++) {
            if (rng(&seed) % 6 == 0) {
                ix.hull[t] = (life){LIFE_NONE_FIRST, LIFE_NONE_LAST};
                continue;
            }
            int32_t a = (int32_t)(rng(&seed) % (n_ops + 2)) - 1;
            int32_t b = (int32_t)(rng(&seed) % (n_ops + 2)) - 1;
            ix.hull[t] = (life){a < b ? a : b, a < b ? b : a};
        }
        pairset live = {calloc(n * n, 1), n}, bytes = {calloc(n * n, 1), n};
        assert_int_equal(overlap_live_pairs(p, &ix, record, &live), 0);
        seg_ctx sc = {&bytes, p, ix.hull};
        assert_int_equal(overlap_segments(p, &ix, record_segment, &sc), 0);
        for (size_t a = 0; a < n; a++)
            for (size_t b = a + 1; b < n; b++) {
                const tensor_rec *ta = &p->tensors[a], *tb = &p->tensors[b];
                bool part =
                    ta->bytes && tb->bytes && !life_empty(ix.hull[a]) && !life_empty(ix.hull[b]);
                bool share = part && ta->arena == tb->arena && ta->offset_bytes < root_end(tb) &&
                             tb->offset_bytes < root_end(ta);
                bool live_too = share && life_intersect(ix.hull[a], ix.hull[b]);
                if (bytes.m[a * n + b] != (share ? 1 : 0) || live.m[a * n + b] != live_too) {
                    fprintf(stderr, "iteration %d pair (%zu,%zu): bytes %d live %d, want %d %d\n",
                            iter, a, b, bytes.m[a * n + b], live.m[a * n + b], share, live_too);
                    fail();
                }
            }
        free(live.m);
        free(bytes.m);
        free(ix.hull);
        tlsan_plan_free(p);
    }
}

static int stop_at_first(void *ctx, uint32_t a, uint32_t b)
{
    (void)a;
    (void)b;
    (*(int *)ctx)++;
    return 7;
}

static int stop_at_first_segment(void *ctx, uint64_t start, const uint32_t *r, size_t m)
{
    (void)start;
    (void)r;
    (void)m;
    (*(int *)ctx)++;
    return 7;
}

/* A callback's non-zero status stops the sweep and comes back to the caller. */
static void callback_stops(void **state)
{
    (void)state;
    uint64_t seed = 1;
    tlsan_plan *p = tlsan_plan_create();
    tlsan_arena_desc a = {.name = "a", .bytes = 100};
    assert_int_equal(tlsan_plan_add_arena(p, &a, NULL), TLSAN_OK);
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "t%d", i);
        tlsan_tensor_desc d = {.name = name, .arena = "a", .bytes = 10};
        assert_int_equal(tlsan_plan_add_tensor(p, &d, NULL), TLSAN_OK);
    }
    assert_int_equal(tlsan_plan_finalize(p, NULL), TLSAN_OK);
    (void)seed;
    life h[3] = {{-1, 0}, {-1, 0}, {-1, 0}};
    access_index ix = {.hull = h};
    int calls = 0;
    assert_int_equal(overlap_live_pairs(p, &ix, stop_at_first, &calls), 7);
    assert_int_equal(calls, 1);
    calls = 0;
    assert_int_equal(overlap_segments(p, &ix, stop_at_first_segment, &calls), 7);
    assert_int_equal(calls, 1);
    tlsan_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_layouts),
        cmocka_unit_test(callback_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
