/* depot and modules: equal stacks get equal ids, captured frames start at the caller, the
 * frames are formatted as module+offset (and function names when symbolizing), concurrent
 * interning agrees, and modules are found (and found again after a dlopen). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "depot.h"
#include "modules.h"
#include "out.h"
#include "shim.h"

static void put_get(void **state)
{
    (void)state;
    uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[3] = {0x1000, 0x2000, 0x3001};
    uint32_t ia = depot_put(a, 3), ib = depot_put(b, 3), ia2 = depot_put(a, 3);
    assert_int_not_equal(ia, 0);
    assert_int_not_equal(ib, 0);
    assert_int_not_equal(ia, ib);
    assert_int_equal(ia, ia2);
    /* A prefix is another stack. */
    uint32_t ip = depot_put(a, 2);
    assert_int_not_equal(ip, ia);
    const uintptr_t *f;
    assert_int_equal(depot_get(ia, &f), 3);
    assert_memory_equal(f, a, sizeof a);
    assert_int_equal(depot_get(ip, &f), 2);
    assert_int_equal(f[1], 0x2000);
    assert_int_equal(depot_put(a, 0), 0);
    assert_int_equal(depot_get(0, &f), 0);
    assert_int_equal(depot_get(999999, &f), 0);
    /* More than DEPOT_MAX_FRAMES frames are cut to the innermost ones. */
    uintptr_t many[DEPOT_MAX_FRAMES + 10];
    for (unsigned i = 0; i < DEPOT_MAX_FRAMES + 10; i++)
        many[i] = 0x5000 + i;
    uint32_t im = depot_put(many, DEPOT_MAX_FRAMES + 10);
    assert_int_equal(depot_get(im, &f), DEPOT_MAX_FRAMES);
    assert_int_equal(im, depot_put(many, DEPOT_MAX_FRAMES));
}

__attribute__((noinline)) uint32_t capture_here(void)
{
    uint32_t id = depot_capture(0);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return id;
}

__attribute__((noinline)) uint32_t capture_skip_one(void)
{
    uint32_t id = capture_here();
    __asm__ volatile("" ::: "memory");
    return id;
}

__attribute__((noinline)) static uint32_t capture_skipping(void)
{
    uint32_t id = depot_capture(1); /* drops this function: frame 0 is its caller */
    __asm__ volatile("" ::: "memory");
    return id;
}

static void capture(void **state)
{
    (void)state;
    uint32_t ids[3];
    volatile int count = 3; /* not a constant: the loop is not unrolled into 3 call sites */
    for (int i = 0; i < count; i++)
        ids[i] = capture_here(); /* one call site: one stack */
    assert_int_not_equal(ids[0], 0);
    assert_int_equal(ids[0], ids[1]);
    assert_int_equal(ids[1], ids[2]);
    uint32_t other = capture_here(); /* another call site */
    assert_int_not_equal(other, ids[0]);

    const uintptr_t *f;
    unsigned n = depot_get(ids[0], &f);
    assert_true(n >= 3);
    /* Frame 0 is inside capture_here, frame 1 in this function. */
    assert_true(f[0] > (uintptr_t)capture_here && f[0] < (uintptr_t)capture_here + 64);
    assert_true(f[1] > (uintptr_t)capture && f[1] < (uintptr_t)capture + 4096);
    n = depot_get(capture_skip_one(), &f);
    assert_true(f[0] > (uintptr_t)capture_here && f[0] < (uintptr_t)capture_here + 64);
    assert_true(f[1] > (uintptr_t)capture_skip_one && f[1] < (uintptr_t)capture_skip_one + 64);
    n = depot_get(capture_skipping(), &f);
    assert_true(f[0] > (uintptr_t)capture && f[0] < (uintptr_t)capture + 4096);

    /* stack_depth bounds the frames; 0 turns capture off. */
    struct shim_options *o = shim_opts_mut();
    o->stack_depth = 2;
    assert_int_equal(depot_get(capture_here(), &f), 2);
    o->stack_depth = 0;
    assert_int_equal(capture_here(), 0);
    o->stack_depth = 16;
}

static void format(void **state)
{
    (void)state;
    char text[2048];
    struct outbuf b = {text, 0, sizeof text};
    depot_format(&b, 0, 1);
    assert_string_equal(text, "    (no stack)\n");

    /* A frame in libc: module+offset; with symbolize its function too. */
    uintptr_t pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid") + 5;
    uintptr_t frames[2] = {pc, 0x10};
    uint32_t id = depot_put(frames, 2);
    const struct shim_module *m = modules_find(pc);
    assert_non_null(m);
    assert_non_null(strstr(m->path, "libc.so"));
    char want[1024];
    snprintf(want, sizeof want, "    #0 %p (%s+0x%zx)\n    #1 0x10 (<unknown module>)\n",
             (void *)pc, m->path, (size_t)(pc - m->base));
    b = (struct outbuf){text, 0, sizeof text};
    depot_format(&b, id, 0);
    assert_string_equal(text, want);
    b = (struct outbuf){text, 0, sizeof text};
    depot_format(&b, id, 1);
    Dl_info info;
    assert_true(dladdr((void *)(pc - 1), &info) && info.dli_sname);
    snprintf(want, sizeof want, "    #0 %p in %s+0x5 (%s+0x%zx)\n    #1 0x10 (<unknown module>)\n",
             (void *)pc, info.dli_sname, m->path, (size_t)(pc - m->base));
    assert_string_equal(text, want);
}

/* Enough stacks that the hash table (4,096 slots at first) doubles three times while four
 * threads intern the same ones at once. */
#define MANY 20000u

static void many_frames(unsigned i, uintptr_t f[4])
{
    f[0] = 0x100000 + i;
    f[1] = 0x200000 + i;
    f[2] = 0x300000;
    f[3] = i % 7;
}

static void *intern_many(void *arg)
{
    uint32_t *ids = arg;
    for (unsigned i = 0; i < MANY; i++) {
        uintptr_t f[4];
        many_frames(i, f);
        ids[i] = depot_put(f, 4);
    }
    return NULL;
}

static void concurrent(void **state)
{
    (void)state;
    static uint32_t ids[4][MANY];
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, intern_many, ids[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < MANY; i++) {
        assert_int_not_equal(ids[0][i], 0);
        for (int k = 1; k < 4; k++)
            assert_int_equal(ids[k][i], ids[0][i]);
        if (i)
            assert_int_not_equal(ids[0][i], ids[0][i - 1]);
        /* the record is the stack, and the grown table finds it again */
        uintptr_t f[4];
        many_frames(i, f);
        const uintptr_t *got;
        assert_int_equal(depot_get(ids[0][i], &got), 4);
        assert_memory_equal(got, f, sizeof f);
        assert_int_equal(depot_put(f, 4), ids[0][i]);
    }
}

static void modules(void **state)
{
    (void)state;
    const struct shim_module *self = modules_find((uintptr_t)modules);
    assert_non_null(self);
    assert_non_null(strstr(self->path, "shim_test_depot"));
    assert_ptr_equal(modules_get(self->id), self);
    assert_null(modules_get(0));
    assert_null(modules_get(100000));
    assert_null(modules_find(0x10));
    uint32_t before = modules_count();
    assert_true(before >= 2);
    /* A module loaded later is found by a rescan. */
    void *h = dlopen("libm.so.6", RTLD_NOW);
    assert_non_null(h);
    void *cosp = dlsym(h, "cos");
    const struct shim_module *m = modules_find((uintptr_t)cosp);
    assert_non_null(m);
    assert_non_null(strstr(m->path, "libm.so.6"));
    assert_true((uintptr_t)cosp >= m->base && (uintptr_t)cosp < m->base + m->size_bytes);
    assert_true(modules_count() >= before);
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_get),    cmocka_unit_test(capture), cmocka_unit_test(format),
        cmocka_unit_test(concurrent), cmocka_unit_test(modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
