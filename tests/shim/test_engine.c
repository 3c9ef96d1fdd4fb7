/* engine: the runtime checks of the annotation API, called directly (no LD_PRELOAD):
 * checksum mismatches (a write nobody declared) at a read, a release and an arena destroy;
 * the checksum policy (all / shared by placement or by a loaded plan / off); reads of an
 * in-place input after the in-place op; views of released roots; parallel writers of
 * disjoint views; usage warnings that are not findings; invalid plans. Also prints the
 * checksum throughput and the per-op cost (not asserted: the machine varies). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define TLSAN_DISABLE
#include "tlsan/tlsan.h"

#include "checksum.h"
#include "engine/engine.h"
#include "heap/heap.h"
#include "out.h"
#include "runtime_report.h"
#include "shim.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ARENA 65536

static char dir[64];
static char log_path[128];
static int log_fd = -1;
static unsigned char *arena;
static int serial; /* distinct tensor names per test */

static char *log_text(void)
{
    static char buf[1 << 16];
    ssize_t n = pread(log_fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

static void log_reset(void)
{
    assert_int_equal(ftruncate(log_fd, 0), 0);
    lseek(log_fd, 0, SEEK_SET);
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static const char *nm(const char *base)
{
    static char names[16][64];
    static int k;
    char *s = names[k++ % 16];
    snprintf(s, 64, "%s_%d", base, serial);
    return s;
}

static uint64_t op(const char *name, const char *r0, const char *r1, const char *w0,
                   const char *ip_out, const char *ip_in)
{
    const char *reads[2] = {r0, r1}, *writes[1] = {w0}, *ip[2] = {ip_out, ip_in};
    tlsan_op_info info = {name,   0,          reads, r1 ? 2 : r0 ? 1 : 0,
                          writes, w0 ? 1 : 0, ip,    ip_out ? 1 : 0};
    return tlsan_rt_op_begin(&info);
}

static int setup(void **state)
{
    (void)state;
    serial++;
    log_reset();
    struct shim_options *o = shim_opts_mut();
    o->checksum = SHIM_CHECKSUM_ALL;
    o->fill = 1;
    memset(arena, 0, ARENA);
    tlsan_rt_arena_create("a0", arena, ARENA);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tlsan_rt_arena_destroy(arena);
    return 0;
}

/* A byte of a live tensor changes with no op declaring a write: reported when an op reads
 * it, with the last writer and no overlapping tensor. */
static void an_undeclared_write_is_found_at_the_next_read(void **state)
{
    (void)state;
    const char *t = nm("t"), *u = nm("u");
    tlsan_rt_tensor_bind(arena, t, arena + 0, 256, 0);
    tlsan_rt_tensor_bind(arena, u, arena + 256, 256, 0);
    uint64_t k = op("w_1", NULL, NULL, t, NULL, NULL);
    memset(arena, 1, 256);
    tlsan_rt_op_end(k);
    uint64_t before = report_count();
    arena[17] ^= 0xff; /* nobody declared this */
    k = op("r_2", t, NULL, u, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 1);
    char *log = log_text();
    assert_int_equal(count(log, "ERROR: tlsan: live-corruption on tensor 't_"), 1);
    assert_non_null(strstr(log, "its bytes changed with no write of its own"));
    assert_non_null(strstr(log, "no other live tensor shares its bytes"));
    char want[160];
    snprintf(want, sizeof want,
             "SUMMARY: tlsan: live-corruption %s (last written by op 'w_1', read by 'r_2')\n", t);
    assert_non_null(strstr(log, want));
    /* Reported once: the new value is the reference from now on. */
    k = op("r_3", t, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 1);
    tlsan_rt_tensor_release(arena, t, arena, 0);
    tlsan_rt_tensor_release(arena, u, arena + 256, 0);
    assert_int_equal(report_count(), before + 1);
}

static void an_undeclared_write_is_found_at_release_and_destroy(void **state)
{
    (void)state;
    const char *t = nm("t"), *o = nm("out");
    tlsan_rt_tensor_bind(arena, t, arena + 1024, 64, 0);
    tlsan_rt_tensor_bind(arena, o, arena + 2048, 64, TLSAN_BIND_OUTPUT);
    uint64_t k = op("w_1", NULL, NULL, t, NULL, NULL);
    tlsan_rt_op_end(k);
    k = op("w_2", NULL, NULL, o, NULL, NULL);
    tlsan_rt_op_end(k);
    uint64_t before = report_count();
    arena[1024 + 5] = 9;
    arena[2048 + 63] = 9;
    tlsan_rt_tensor_release(arena, t, arena + 1024, 0);
    assert_int_equal(report_count(), before + 1);
    tlsan_rt_arena_destroy(arena); /* o is still bound: verified here */
    assert_int_equal(report_count(), before + 2);
    char *log = log_text();
    char want[160];
    snprintf(want, sizeof want,
             "SUMMARY: tlsan: live-corruption %s (last written by op 'w_1', at its release)", t);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want,
             "SUMMARY: tlsan: live-corruption %s (last written by op 'w_2', at arena destroy)", o);
    assert_non_null(strstr(log, want));
    tlsan_rt_arena_create("a0", arena, ARENA); /* for teardown */
}

/* checksum=shared hashes only roots whose bytes another root of the arena used; a plan
 * handed over marks its overlapping roots as well. */
static void checksum_shared_follows_placements_and_plans(void **state)
{
    (void)state;
    shim_opts_mut()->checksum = SHIM_CHECKSUM_SHARED;
    const char *lone = nm("lone"), *p = nm("p"), *q = nm("q"), *pl = nm("planned");
    tlsan_rt_tensor_bind(arena, lone, arena + 0, 64, 0);
    tlsan_rt_tensor_bind(arena, p, arena + 4096, 64, 0);
    uint64_t k = op("w_1", NULL, NULL, lone, NULL, NULL);
    tlsan_rt_op_end(k);
    k = op("w_2", NULL, NULL, p, NULL, NULL);
    tlsan_rt_op_end(k);
    tlsan_rt_tensor_release(arena, p, arena + 4096, 0);
    tlsan_rt_tensor_bind(arena, q, arena + 4096 + 32, 64, 0); /* shares p's old bytes */
    k = op("w_3", NULL, NULL, q, NULL, NULL);
    tlsan_rt_op_end(k);
    uint64_t before = report_count();
    arena[3] = 7;         /* lone: not hashed under shared */
    arena[4096 + 40] = 7; /* q: hashed */
    k = op("r_4", lone, q, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 1);
    char want[160];
    snprintf(want, sizeof want, "ERROR: tlsan: live-corruption on tensor '%s'", q);
    assert_non_null(strstr(log_text(), want));

    /* A plan in which `planned` shares bytes with another root (disjoint lifetimes). */
    char plan[1024];
    int n = snprintf(plan, sizeof plan,
                     "{\"tlsan_plan\": 1, \"arenas\": [{\"name\": \"a0\", \"bytes\": 1024}],"
                     " \"tensors\": [{\"name\": \"%s\", \"bytes\": 64, \"arena\": \"a0\", "
                     "\"offset\": 0}, {\"name\": \"other\", \"bytes\": 64, \"arena\": \"a0\", "
                     "\"offset\": 32}], \"ops\": [{\"name\": \"o1\", \"writes\": [\"%s\"]},"
                     " {\"name\": \"o2\", \"reads\": [\"%s\"]}, {\"name\": \"o3\", \"writes\": "
                     "[\"other\"]}, {\"name\": \"o4\", \"reads\": [\"other\"]}]}",
                     pl, pl, pl);
    assert_int_equal(tlsan_rt_plan_load(plan, (size_t)n), 0);
    tlsan_rt_tensor_bind(arena, pl, arena + 8192, 64, 0);
    k = op("w_5", NULL, NULL, pl, NULL, NULL);
    tlsan_rt_op_end(k);
    arena[8192] ^= 1;
    k = op("r_6", pl, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 2);

    /* checksum=off: nothing is hashed. */
    shim_opts_mut()->checksum = SHIM_CHECKSUM_OFF;
    k = op("w_7", NULL, NULL, q, NULL, NULL);
    tlsan_rt_op_end(k);
    arena[4096 + 41] = 8;
    k = op("r_8", q, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 2);
    tlsan_rt_tensor_release(arena, lone, arena, 0);
    tlsan_rt_tensor_release(arena, q, arena + 4096 + 32, 0);
    tlsan_rt_tensor_release(arena, pl, arena + 8192, 0);
}

/* After an in-place op the input's bytes belong to the output: reading the input again is
 * live-corruption; releasing it (handover) is fine. */
static void reading_an_inplace_input_afterwards_is_found(void **state)
{
    (void)state;
    const char *in = nm("in"), *out = nm("out"), *z = nm("z");
    tlsan_rt_tensor_bind(arena, in, arena + 512, 128, 0);
    uint64_t k = op("w_1", NULL, NULL, in, NULL, NULL);
    tlsan_rt_op_end(k);
    tlsan_rt_tensor_bind(arena, out, arena + 512, 128, TLSAN_BIND_INPLACE);
    k = op("relu_2", in, NULL, out, out, in);
    memset(arena + 512, 3, 128);
    tlsan_rt_op_end(k);
    uint64_t before = report_count();
    tlsan_rt_tensor_bind(arena, z, arena + 4096, 64, 0);
    k = op("late_3", in, NULL, z, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 1);
    char *log = log_text();
    assert_non_null(strstr(log, "op 'relu_2' consumed 'in_"));
    char want[200];
    snprintf(want, sizeof want,
             "SUMMARY: tlsan: live-corruption %s (last written by op 'w_1', read by 'late_3', "
             "overlapped by '%s')",
             in, out);
    assert_non_null(strstr(log, want));
    tlsan_rt_tensor_release(arena, in, arena + 512, TLSAN_RELEASE_HANDOVER);
    tlsan_rt_tensor_release(arena, out, arena + 512, 0);
    tlsan_rt_tensor_release(arena, z, arena + 4096, 0);
    assert_int_equal(report_count(), before + 1);
}

/* A view dies with its root: reading it after the release, or after the root's name got a
 * new tenant, is use-after-release. */
static void a_view_of_a_released_root_is_use_after_release(void **state)
{
    (void)state;
    const char *r = nm("root"), *v = nm("view");
    tlsan_rt_tensor_bind(arena, r, arena + 0, 256, 0);
    tlsan_rt_view_bind(v, r, 64, 64);
    uint64_t k = op("w_1", NULL, NULL, v, NULL, NULL);
    tlsan_rt_op_end(k);
    tlsan_rt_tensor_release(arena, r, arena, 0);
    uint64_t before = report_count();
    k = op("r_2", v, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 1);
    char want[200];
    snprintf(want, sizeof want, "SUMMARY: tlsan: use-after-release %s (released, read by op 'r_2')",
             v);
    assert_non_null(strstr(log_text(), want));
    tlsan_rt_tensor_bind(arena, r, arena + 0, 256, 0); /* a new tenant of the root's name */
    k = op("r_3", v, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 2);
    assert_non_null(strstr(log_text(), "whose storage root was released and bound again"));
    tlsan_rt_tensor_release(arena, r, arena, 0);
}

struct writer {
    const char *view;
    unsigned char *p;
    int rounds;
};

static void *write_view(void *arg)
{
    struct writer *w = arg;
    for (int i = 0; i < w->rounds; i++) {
        const char *writes[1] = {w->view};
        tlsan_op_info info = {w->view, 1, NULL, 0, writes, 1, NULL, 0};
        uint64_t k = tlsan_rt_op_begin(&info);
        memset(w->p, i, 1024);
        tlsan_rt_op_end(k);
    }
    return NULL;
}

/* Four threads write disjoint views of one root at once, many times: the root is hashed only
 * when its last writer ends, so a reader afterwards sees no mismatch. */
static void parallel_writers_of_disjoint_views_are_not_findings(void **state)
{
    (void)state;
    const char *r = nm("kv");
    tlsan_rt_tensor_bind(arena, r, arena + 8192, 4096, 0);
    struct writer w[4];
    pthread_t th[4];
    char views[4][32];
    for (int i = 0; i < 4; i++) {
        snprintf(views[i], sizeof views[i], "kv%d_%d", i, serial);
        tlsan_rt_view_bind(views[i], r, (size_t)i * 1024, 1024);
        w[i] = (struct writer){views[i], arena + 8192 + i * 1024, 300};
    }
    uint64_t before = report_count();
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, write_view, &w[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    uint64_t k = op("r_1", r, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    tlsan_rt_tensor_release(arena, r, arena + 8192, 0);
    assert_int_equal(report_count(), before);
    assert_null(strstr(log_text(), "ERROR"));
}

/* A plan cache is checked plan by plan: the findings of each, with the plan's name. */
static void a_plan_cache_is_checked(void **state)
{
    (void)state;
    static const char cache[] =
        "{\"tlsan_plan_cache\": 1, \"plans\": ["
        " {\"tlsan_plan\": 1, \"name\": \"good\", \"key\": {\"batch\": 1},"
        "  \"arenas\": [{\"name\": \"a\", \"bytes\": 64}],"
        "  \"tensors\": [{\"name\": \"x\", \"bytes\": 32, \"arena\": \"a\", \"offset\": 0}],"
        "  \"ops\": [{\"name\": \"o\", \"writes\": [\"x\"]}]},"
        " {\"tlsan_plan\": 1, \"name\": \"bad\", \"key\": {\"batch\": 2},"
        "  \"arenas\": [{\"name\": \"a\", \"bytes\": 64}],"
        "  \"tensors\": [{\"name\": \"x\", \"bytes\": 32, \"arena\": \"a\", \"offset\": 0},"
        "   {\"name\": \"y\", \"bytes\": 32, \"arena\": \"a\", \"offset\": 16}],"
        "  \"ops\": [{\"name\": \"o1\", \"writes\": [\"x\"]}, {\"name\": \"o2\", \"writes\": "
        "[\"y\"]}, {\"name\": \"o3\", \"reads\": [\"x\", \"y\"]}]}]}";
    uint64_t before = report_count();
    assert_int_equal(tlsan_rt_plan_load(cache, strlen(cache)), 1);
    assert_int_equal(report_count(), before + 1);
    char *log = log_text();
    assert_non_null(strstr(log, "ERROR: tlsan: live-overlap between 'x' and 'y' in plan 'bad'\n"));
    assert_non_null(strstr(log, "SUMMARY: tlsan: live-overlap 'x' and 'y' in plan 'bad'\n"));
    assert_non_null(strstr(log, "plan loaded at:\n    #0 "));
}

/* A graph run again repeats its bug with the same names: reported the first time only. A
 * different reader is a different finding. */
static void a_repeated_finding_is_reported_once(void **state)
{
    (void)state;
    const char *t = nm("t");
    uint64_t before = report_count();
    for (int run = 0; run < 3; run++) {
        tlsan_rt_tensor_bind(arena, t, arena + 256, 64, 0);
        tlsan_rt_tensor_release(arena, t, arena + 256, 0);
        uint64_t k = op("late", t, NULL, NULL, NULL, NULL);
        tlsan_rt_op_end(k);
    }
    assert_int_equal(report_count(), before + 1);
    uint64_t k = op("later", t, NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    assert_int_equal(report_count(), before + 2);
}

/* Calls the shim cannot make sense of are one-line warnings, never findings. */
static void misuse_is_a_warning_not_a_finding(void **state)
{
    (void)state;
    uint64_t before = report_count();
    unsigned w0 = engine_usage_warnings();
    const char *t = nm("t");
    tlsan_rt_tensor_release(arena, "never_bound", arena, 0);
    tlsan_rt_tensor_bind(arena, t, arena + 100, 10, 0);
    tlsan_rt_tensor_bind(arena, t, arena + 100, 10, 0);          /* twice */
    tlsan_rt_tensor_release(arena, t, arena + 101, 0);           /* wrong address */
    tlsan_rt_tensor_bind(arena, nm("big"), arena, ARENA + 1, 0); /* past the arena */
    tlsan_rt_tensor_bind(arena + 1, nm("x"), arena, 1, 0);       /* not an arena */
    tlsan_rt_op_end(123456789);
    uint64_t k = op("o_1", "nobody", NULL, NULL, NULL, NULL);
    tlsan_rt_op_end(k);
    tlsan_rt_view_bind(nm("v"), "nobody", 0, 1);
    tlsan_rt_tensor_release(arena, t, arena + 100, 0);
    tlsan_rt_tensor_release(arena, t, arena + 100, 0); /* twice */
    assert_int_equal(report_count(), before);
    assert_int_equal(engine_usage_warnings() - w0, 9);
    char *log = log_text();
    assert_int_equal(count(log, "tlsan: warning: "), 9);
    assert_non_null(strstr(log, "tlsan: warning: tlsan_tensor_release('never_bound'): no tensor "
                                "of this name was bound; ignored\n"));
    assert_non_null(strstr(log, "bound again without a release; ignored"));
    assert_non_null(strstr(log, "op 'o_1' reads 'nobody', which was never bound; ignored"));

    /* An invalid plan: one line, -1. */
    log_reset();
    static const char bad_plan[] = "{\"tlsan_plan\": 1, \"arenas\": 3}";
    assert_int_equal(tlsan_rt_plan_load(bad_plan, strlen(bad_plan)), -1);
    log = log_text();
    assert_int_equal(count(log, "\n"), 1);
    assert_non_null(strstr(log, "tlsan: tlsan_plan_load: invalid plan: tlsan_plan_load: "));
    assert_int_equal(report_count(), before);
}

/* A model of the sentinel bookkeeping: random binds (overlaps allowed), releases (with and
 * without handover), ops writing a root, and stray writes into unowned bytes. The model
 * knows which bytes hold a sentinel the shim can vouch for; a bind must report stale-write
 * exactly when its range holds such a byte that changed (at the first one), an op_end
 * slot-overflow exactly when one lies in the 64 bytes past the root it wrote. */
#define M_BYTES 2048
#define M_NAMES 12

static uint32_t rng = 12345;
static uint32_t next_rand(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

static void sentinel_model_matches_the_shim(void **state)
{
    (void)state;
    shim_opts_mut()->checksum = SHIM_CHECKSUM_OFF;
    /* Thousands of reports: their headlines are what is checked, and symbolizing each one's
     * stacks (libdw) took seconds; the other tests keep symbolized reports. */
    bool symbolize = shim_opts()->symbolize;
    shim_opts_mut()->symbolize = 0;
    tlsan_rt_arena_destroy(arena);
    tlsan_rt_arena_create("m", arena, M_BYTES);
    int live[M_BYTES] = {0};
    bool known[M_BYTES], bad[M_BYTES] = {0};
    for (int i = 0; i < M_BYTES; i++)
        known[i] = true;
    struct {
        bool bound;
        int off, size;
        char name[32];
    } t[M_NAMES] = {{0}};
    int stale = 0, overflow = 0;
    for (int step = 0; step < 20000; step++) {
        int k = (int)(next_rand() % M_NAMES);
        uint32_t what = next_rand() % 10;
        uint64_t before = report_count();
        if (what < 3 && !t[k].bound) {
            int size = 1 + (int)(next_rand() % 300);
            int off = (int)(next_rand() % (M_BYTES - size + 1));
            int first = -1;
            for (int b = off; b < off + size; b++) {
                if (known[b] && bad[b] && first < 0)
                    first = b;
                known[b] = false;
                live[b]++;
            }
            log_reset();
            /* A new name per tenant: the shim reports a repeated finding only once. */
            snprintf(t[k].name, sizeof t[k].name, "m%d_%d_%d", k, serial, step);
            tlsan_rt_tensor_bind(arena, t[k].name, arena + off, (size_t)size, 0);
            t[k].bound = true;
            t[k].off = off;
            t[k].size = size;
            assert_int_equal(report_count() - before, first >= 0);
            if (first >= 0) {
                char want[64];
                snprintf(want, sizeof want, "stale-write at m+%d ", first);
                assert_non_null(strstr(log_text(), want));
                stale++;
            }
        } else if (what < 6 && t[k].bound) {
            bool handover = next_rand() % 4 == 0;
            for (int b = t[k].off; b < t[k].off + t[k].size; b++) {
                live[b]--;
                if (!live[b] && !handover) {
                    known[b] = true;
                    bad[b] = false;
                }
            }
            tlsan_rt_tensor_release(arena, t[k].name, arena + t[k].off,
                                    handover ? TLSAN_RELEASE_HANDOVER : 0);
            t[k].bound = false;
            assert_int_equal(report_count(), before);
        } else if (what < 8 && t[k].bound) {
            int end = t[k].off + t[k].size, stop = end + 64 < M_BYTES ? end + 64 : M_BYTES;
            bool broken = false;
            for (int b = end; b < stop; b++)
                broken |= known[b] && bad[b];
            char opname[32];
            snprintf(opname, sizeof opname, "mw%d", step); /* distinct findings, see above */
            uint64_t tok = op(opname, NULL, NULL, t[k].name, NULL, NULL);
            tlsan_rt_op_end(tok);
            assert_int_equal(report_count() - before, broken);
            for (int b = end; broken && b < stop; b++)
                known[b] = false;
            overflow += broken;
        } else {
            int b = (int)(next_rand() % M_BYTES);
            if (live[b] == 0) {
                arena[b] = (unsigned char)(sentinel_byte((uintptr_t)(arena + b)) ^ 0x5a);
                bad[b] = true;
            }
        }
    }
    for (int i = 0; i < M_NAMES; i++)
        if (t[i].bound)
            tlsan_rt_tensor_release(arena, t[i].name, arena + t[i].off, 0);
    tlsan_rt_arena_destroy(arena);
    tlsan_rt_arena_create("a0", arena, ARENA);
    shim_opts_mut()->symbolize = symbolize;
    printf("# model: %d stale-writes, %d slot-overflows checked\n", stale, overflow);
    assert_true(stale > 10 && overflow > 10);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Numbers for the report (printed, not asserted). */
static void measure(void **state)
{
    (void)state;
    size_t n = 64u << 20;
    unsigned char *big = malloc(n);
    assert_non_null(big);
    memset(big, 1, n);
    uint64_t h = 0;
    double t0 = now();
    for (int i = 0; i < 8; i++)
        h ^= checksum_bytes(big, n);
    double dt = now() - t0;
    double t1 = now();
    for (int i = 0; i < 8; i++)
        memset(big, i, n);
    double dm = now() - t1;
    printf("# checksum: %.1f GB/s on 64 MiB (memset: %.1f GB/s) [%llx]\n", 8.0 * n / dt / 1e9,
           8.0 * n / dm / 1e9, (unsigned long long)(h & 0xf));
    free(big);

    const char *a = nm("pa"), *b = nm("pb");
    tlsan_rt_tensor_bind(arena, a, arena, 4096, 0);
    tlsan_rt_tensor_bind(arena, b, arena + 4096, 4096, 0);
    static const enum shim_checksum modes[] = {SHIM_CHECKSUM_OFF, SHIM_CHECKSUM_ALL,
                                               SHIM_CHECKSUM_OFF};
    for (int m = 0; m < 3; m++) {
        shim_opts_mut()->checksum = modes[m];
        uint64_t depth = shim_opts()->stack_depth;
        if (m == 2)
            shim_opts_mut()->stack_depth = 0;
        int rounds = 20000;
        double s = now();
        for (int i = 0; i < rounds; i++) {
            uint64_t k = op("bench", a, NULL, b, NULL, NULL);
            tlsan_rt_op_end(k);
        }
        double d = now() - s;
        printf("# per op (begin+end, 1 read + 1 write of 4 KiB, checksum=%s%s): %.2f us\n",
               m == 1 ? "all" : "off", m == 2 ? ", stack_depth=0" : "", d / rounds * 1e6);
        shim_opts_mut()->stack_depth = depth;
    }
    tlsan_rt_tensor_release(arena, a, arena, 0);
    tlsan_rt_tensor_release(arena, b, arena + 4096, 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tlsan_test_engine.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    char opts[256];
    snprintf(opts, sizeof opts, "exitcode=0:trace_path=%s/e.trace", dir);
    setenv("TLSAN_OPTIONS", opts, 1);
    shim_init();
    if (!shim_active()) {
        printf("SKIP: the shim did not start\n");
        return 77;
    }
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (log_fd < 0)
        return 1;
    out_set_fd(log_fd);
    arena = aligned_alloc(64, ARENA);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_undeclared_write_is_found_at_the_next_read, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_undeclared_write_is_found_at_release_and_destroy, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(checksum_shared_follows_placements_and_plans, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(reading_an_inplace_input_afterwards_is_found, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_view_of_a_released_root_is_use_after_release, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(parallel_writers_of_disjoint_views_are_not_findings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_plan_cache_is_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(a_repeated_finding_is_reported_once, setup, teardown),
        cmocka_unit_test_setup_teardown(misuse_is_a_warning_not_a_finding, setup, teardown),
        cmocka_unit_test_setup_teardown(sentinel_model_matches_the_shim, setup, teardown),
        cmocka_unit_test_setup_teardown(measure, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    /* The shim's destructor turns findings into the exit status (exitcode=0 here): keep
     * cmocka's instead. */
    fflush(NULL);
    _exit(rc);
}
