/* gen_shapes: plans shaped like a long run of an engine on several streams (the shape of
 * `tlsan export` of examples/engine --exec pool): a ring of S streams, each stage of a run
 * a chain of 4 ops on one stream, handing its last tensor to the next stream's stage through
 * an event. Each stream owns two byte slots of one small arena, so every slot is reused by
 * a tenant of every run: many tenants per byte. Tensor sizes vary within a slot, so the
 * slots are cut into several byte segments.
 *
 *   stage (j, r), stream j of run r:  [wait e<j-1>]  x1 = f(prev x4)  x2 = f(x1)
 *                                      x3 = f(x2)  x4 = f(x3)  record e<j>
 *   x1, x3 in slot 2j;  x2, x4 in slot 2j+1
 *
 * The plan is clean by construction: the only cross-stream reader of a slot's tenant (x4 of
 * stage q, read by stage q+1) is ordered before the tenants after it (x2 and x4 of stage
 * q+S, the next run of that stream) by the waits of stages q+2 .. q+S. Dropping the wait of
 * stage d leaves exactly the pairs (x4 of q, x2 of q+S) and (x4 of q, x4 of q+S) for q in
 * d-S .. d-2 unordered: 2(S-1) unordered-reuse findings (later runs are ordered again
 * through the program order of stream q+1).
 *
 * `branchy` adds, to about 30 % of the stages, an if c<stage>: on its `then` arm two ops on
 * the stage's stream write and read a scratch tensor y in slot 2j between x2 and x3 (a
 * tenant that exists on some paths only); on its `else` arm the next stage reads x4 once
 * more (a tenant whose last access is conditional). Neither changes the expected findings. */
#include "gen_shapes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support/splitmix.h"

#define N_STREAMS  3
#define SLOT_BYTES 256u

/* x<i> (i = 1..4) of stage s is tensor t<4s + i - 1>; y of stage s is y<s>. */
static uint64_t xid(uint64_t stage, unsigned i)
{
    return 4 * stage + i - 1;
}

static void put_pair(FILE *e, uint64_t a, uint64_t b)
{
    char x[32], y[32];
    snprintf(x, sizeof x, "t%" PRIu64, a);
    snprintf(y, sizeof y, "t%" PRIu64, b);
    if (strcmp(x, y) < 0)
        fprintf(e, "unordered-reuse %s %s\n", x, y);
    else
        fprintf(e, "unordered-reuse %s %s\n", y, x);
}

int gen_streams_write(const char *out_path, const char *expected_path, uint64_t n_roots,
                      uint64_t seed, uint64_t k_drop, bool branchy)
{
    int status = 2;
    uint64_t rng = seed ^ 0x73747265616dull;
    uint64_t n_stages = (n_roots + 3) / 4, n_runs = (n_stages + N_STREAMS - 1) / N_STREAMS;
    n_stages = n_runs * N_STREAMS;
    uint8_t *has_if = calloc(n_stages, 1), *dropped = calloc(n_stages, 1);
    uint8_t *size_of = malloc(4 * n_stages); /* x bytes / 64 - 1 */
    FILE *f = fopen(out_path, "w"), *e = fopen(expected_path, "w");
    if (!has_if || !dropped || !size_of || !f || !e) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", out_path, strerror(errno));
        goto cleanup;
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    for (uint64_t s = 0; s < n_stages; s++) {
        has_if[s] = branchy && splitmix_next(&rng) % 10 < 3 && s + 1 < n_stages;
        for (unsigned i = 0; i < 4; i++)
            size_of[4 * s + i] = (uint8_t)(splitmix_next(&rng) % 4);
    }
    /* Dropped waits: runs 1 .. n_runs-2, at least two runs apart. */
    uint64_t n_dropped = 0;
    for (uint64_t tries = 0; n_dropped < k_drop && n_runs >= 4 && tries < 100 * (k_drop + 1);
         tries++) {
        uint64_t r = 1 + splitmix_next(&rng) % (n_runs - 2), j = splitmix_next(&rng) % N_STREAMS;
        uint64_t s = r * N_STREAMS + j;
        bool near = false;
        for (uint64_t d = s >= 2 * N_STREAMS ? s - 2 * N_STREAMS : 0;
             d <= s + 2 * N_STREAMS && d < n_stages; d++)
            near |= dropped[d] != 0;
        if (near)
            continue;
        dropped[s] = 1;
        n_dropped++;
        /* x4 of stage q is read by stage q+1 and ordered before the next run's stage q+S
         * of its stream only through the waits of stages q+2 .. q+S */
        for (uint64_t q = s - N_STREAMS; q + 2 <= s; q++) {
            put_pair(e, xid(q, 4), xid(q + N_STREAMS, 2));
            put_pair(e, xid(q, 4), xid(q + N_STREAMS, 4));
        }
    }

    fprintf(f,
            "{\"tlsan_plan\":1,\"name\":\"%s-%" PRIu64 "-s%" PRIu64 "\",\n"
            "\"arenas\":[{\"name\":\"pool\",\"bytes\":%u,\"alignment\":64}],\n\"tensors\":[\n",
            branchy ? "branchy" : "streams", n_roots, seed, 2 * N_STREAMS * SLOT_BYTES);
    for (uint64_t s = 0; s < n_stages; s++) {
        unsigned j = (unsigned)(s % N_STREAMS);
        for (unsigned i = 1; i <= 4; i++) {
            unsigned slot = 2 * j + (i % 2 == 0 ? 1 : 0);
            fprintf(f,
                    "%s{\"name\":\"t%" PRIu64 "\",\"bytes\":%u,\"arena\":\"pool\",\"offset\":%u}",
                    s || i > 1 ? ",\n" : "", xid(s, i), 64u * (size_of[4 * s + i - 1] + 1u),
                    slot * SLOT_BYTES);
        }
        if (has_if[s])
            fprintf(f,
                    ",\n{\"name\":\"y%" PRIu64 "\",\"bytes\":64,\"arena\":\"pool\",\"offset\":%u}",
                    s, 2 * j * SLOT_BYTES);
    }
    fputs("],\n\"ops\":[\n", f);
    uint64_t op = 0;
#define OP_HEAD()                                                                                  \
    fprintf(f, "%s{\"name\":\"o%" PRIu64 "\",\"stream\":\"s%u\"", op ? ",\n" : "", op, j), op++
    for (uint64_t s = 0; s < n_stages; s++) {
        unsigned j = (unsigned)(s % N_STREAMS), jp = (j + N_STREAMS - 1) % N_STREAMS;
        if (s > 0 && !dropped[s]) {
            OP_HEAD();
            fprintf(f, ",\"wait\":\"e%u\"}", jp);
        }
        OP_HEAD();
        if (s > 0)
            fprintf(f, ",\"reads\":[\"t%" PRIu64 "\"]", xid(s - 1, 4));
        fprintf(f, ",\"writes\":[\"t%" PRIu64 "\"]}", xid(s, 1));
        if (s > 0 && has_if[s - 1]) {
            OP_HEAD();
            fprintf(f,
                    ",\"reads\":[\"t%" PRIu64 "\"],\"branch\":{\"if\":\"c%" PRIu64
                    "\",\"arm\":\"else\"}}",
                    xid(s - 1, 4), s - 1);
        }
        for (unsigned i = 2; i <= 4; i++) {
            OP_HEAD();
            fprintf(f, ",\"reads\":[\"t%" PRIu64 "\"],\"writes\":[\"t%" PRIu64 "\"]}",
                    xid(s, i - 1), xid(s, i));
            if (i == 2 && has_if[s]) {
                OP_HEAD();
                fprintf(f,
                        ",\"reads\":[\"t%" PRIu64 "\"],\"writes\":[\"y%" PRIu64
                        "\"],\"branch\":{\"if\":\"c%" PRIu64 "\",\"arm\":\"then\"}}",
                        xid(s, 2), s, s);
                OP_HEAD();
                fprintf(f,
                        ",\"reads\":[\"y%" PRIu64 "\"],\"writes\":[\"t%" PRIu64
                        "\"],\"branch\":{\"if\":\"c%" PRIu64 "\",\"arm\":\"then\"}}",
                        s, xid(s, 2), s);
            }
        }
        OP_HEAD();
        fprintf(f, ",\"record\":\"e%u\"}", j);
    }
#undef OP_HEAD
    fputs("]}\n", f);
    if (ferror(f) || ferror(e)) {
        fprintf(stderr, "tlsan_gen_plan: cannot write %s: %s\n", out_path, strerror(errno));
        goto cleanup;
    }
    fprintf(stderr,
            "tlsan_gen_plan: %s: %" PRIu64 " roots, %" PRIu64 " ops, %d streams, %" PRIu64
            " waits dropped\n",
            out_path, 4 * n_stages, op, N_STREAMS, n_dropped);
    status = 0;
cleanup:
    if (f && fclose(f) != 0)
        status = 2;
    if (e && fclose(e) != 0)
        status = 2;
    free(has_if);
    free(dropped);
    free(size_of);
    return status;
}
