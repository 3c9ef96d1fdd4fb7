/* shapeplan: the generator of shapeplan.h. */
#include "support/shapeplan.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "splitmix.h"

#define MAX_STAGES 8
#define MAX_PER    3 /* compute ops (and tensors) per stage */
#define MAX_T      (MAX_STAGES * (MAX_PER + 1))
#define MAX_NAMES  512 /* tensors, views (3 per tensor), ops, ifs */
#define SLOT       256u

typedef struct gen {
    tlsan_plan *p;
    tlsan_error err;
    char names[MAX_NAMES][16];
    size_t n_names;
    unsigned n_ops;
} gen;

static const char *name(gen *g, const char *fmt, unsigned k)
{
    char *n = g->names[g->n_names++];
    snprintf(n, sizeof g->names[0], fmt, k);
    return n;
}

static bool add_op(gen *g, tlsan_op_desc *d)
{
    d->name = name(g, "o%u", g->n_ops++);
    return tlsan_plan_add_op(g->p, d, &g->err) == TLSAN_OK;
}

/* SHAPEPLAN_ENGINE: a recorded run of an engine as replay rebuilds it (src/replay/replay.c,
 * docs/runtime.md "Order of queues"), run again and again in one small arena: per run the
 * host writes the input x (main), then each worker stream waits for the host's record
 * ("enqueue"), runs 1-2 ops into tenants of its slot and records its event; the host waits
 * for each event, reads the results ("post"), gives them back ("release"), and records
 * "host". Every run's tenants take the same slots with varying offsets and sizes, so each
 * byte has a tenant from every run (names NAME#k as replay gives them). Bugs at random: an
 * enqueue or a host wait dropped, the host's record placed before the post (enqueued while
 * it still ran), a stray host read of an older run's tenant. */
static tlsan_plan *make_engine(gen *g, uint64_t *s)
{
    static const char *const streams[3] = {"s1", "s2", "s3"};
    static const char *const events[3] = {"e1", "e2", "e3"};
    unsigned n_streams = 1 + (unsigned)splitmix_below(s, 3);
    unsigned n_runs = 2 + (unsigned)splitmix_below(s, 7);
    tlsan_arena_desc a = {"act", (1 + 3) * SLOT, 64, NULL};
    if (tlsan_plan_add_arena(g->p, &a, &g->err) != TLSAN_OK)
        return NULL;
    const char *last[3] = {NULL, NULL, NULL}; /* per stream: its latest run's result */
    const char *older = NULL;                 /* a result of an earlier run */
    for (unsigned run = 1; run <= n_runs; run++) {
        tlsan_tensor_desc x = {0};
        x.name = name(g, run == 1 ? "x" : "x#%u", run);
        x.arena = "act";
        x.bytes = SLOT;
        if (tlsan_plan_add_tensor(g->p, &x, &g->err) != TLSAN_OK)
            return NULL;
        const char *xw[1] = {x.name};
        tlsan_op_desc fill = {.writes = xw, .n_writes = 1};
        if (!add_op(g, &fill))
            return NULL;
        tlsan_op_desc host = {.sync = TLSAN_SYNC_RECORD, .event = "host"};
        if (!add_op(g, &host))
            return NULL;
        const char *res[3];
        for (unsigned j = 0; j < n_streams; j++) {
            if (!splitmix_chance(s, 8)) {
                tlsan_op_desc w = {.stream = streams[j], .sync = TLSAN_SYNC_WAIT, .event = "host"};
                if (!add_op(g, &w))
                    return NULL;
            }
            unsigned n_k = 1 + (unsigned)splitmix_below(s, 2);
            const char *prev = x.name;
            for (unsigned i = 0; i < n_k; i++) {
                tlsan_tensor_desc t = {0};
                char fmt[16];
                snprintf(fmt, sizeof fmt, run == 1 ? "%c%u" : "%c%u#%%u", "abc"[j], i);
                t.name = name(g, fmt, run);
                t.arena = "act";
                t.offset_bytes = (1 + j) * SLOT + 64u * (unsigned)splitmix_below(s, 3);
                t.bytes =
                    64u * (1 + (unsigned)splitmix_below(s, (SLOT - t.offset_bytes % SLOT) / 64));
                if (tlsan_plan_add_tensor(g->p, &t, &g->err) != TLSAN_OK)
                    return NULL;
                const char *kr[1] = {prev}, *kw[1] = {t.name};
                tlsan_op_desc k = {
                    .stream = streams[j], .reads = kr, .n_reads = 1, .writes = kw, .n_writes = 1};
                if (!add_op(g, &k))
                    return NULL;
                prev = t.name;
            }
            res[j] = prev;
            tlsan_op_desc rec = {
                .stream = streams[j], .sync = TLSAN_SYNC_RECORD, .event = events[j]};
            if (!add_op(g, &rec))
                return NULL;
        }
        bool late = splitmix_chance(s, 10);
        if (late && !add_op(g, &host))
            return NULL;
        for (unsigned j = 0; j < n_streams; j++) {
            if (!splitmix_chance(s, 8)) {
                tlsan_op_desc w = {.sync = TLSAN_SYNC_WAIT, .event = events[j]};
                if (!add_op(g, &w))
                    return NULL;
            }
            const char *pr[2] = {res[j], older};
            size_t n_pr = older && splitmix_chance(s, 5) ? 2 : 1;
            tlsan_op_desc post = {.reads = pr, .n_reads = n_pr};
            tlsan_op_desc release = {.reads = pr, .n_reads = 1};
            if (!add_op(g, &post) || !add_op(g, &release))
                return NULL;
            if (last[j])
                older = last[j];
            last[j] = res[j];
        }
        if (!late && !add_op(g, &host))
            return NULL;
    }
    return g->p;
}

tlsan_plan *shapeplan_make(uint64_t seed, shapeplan_kind kind, char *why, size_t why_bytes)
{
    static const char *const streams[3] = {"s0", "s1", "s2"};
    static const char *const events[3] = {"e0", "e1", "e2"};
    static const char *const arms[2] = {"then", "else"};
    uint64_t st = seed ^ 0x5a4e9e71a11ull;
    uint64_t *s = &st;
    gen *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->p = tlsan_plan_create();
    if (!g->p)
        goto fail;
    if (kind == SHAPEPLAN_ENGINE) {
        if (!make_engine(g, s))
            goto fail;
        goto finalize;
    }
    bool dataflow = kind == SHAPEPLAN_DATAFLOW, branchy = kind == SHAPEPLAN_BRANCHY;
    bool views = kind == SHAPEPLAN_VIEWS;
    unsigned n_streams = dataflow ? 1 : 1 + (unsigned)splitmix_below(s, 3);
    unsigned n_stages = 2 + (unsigned)splitmix_below(s, MAX_STAGES - 1);
    unsigned per = 1 + (unsigned)splitmix_below(s, MAX_PER);
    unsigned n_ifs = branchy ? 1 + (unsigned)splitmix_below(s, 4) : 0;
    if (dataflow && tlsan_plan_set_schedule(g->p, TLSAN_SCHEDULE_DATAFLOW) != TLSAN_OK)
        goto fail;
    tlsan_arena_desc a = {"pool", 2 * 3 * SLOT, 64, NULL};
    if (tlsan_plan_add_arena(g->p, &a, &g->err) != TLSAN_OK)
        goto fail;

    /* Tensors: stage k's i-th in slot 2*stream + i%2 (dataflow: one of 3 slots), sizes and
     * offsets varying within the slot so that tenants share some segments only. A branchy
     * stage may have a scratch tensor y in its first slot. */
    const char *tn[MAX_STAGES][MAX_PER + 1]; /* [k][per] is the scratch tensor */
    const char *rd[MAX_STAGES][MAX_PER + 1]; /* the name an op reads it by (a view or it) */
    int cond_if[MAX_STAGES];
    for (unsigned k = 0; k < n_stages; k++) {
        unsigned j = k % n_streams;
        cond_if[k] = n_ifs && splitmix_chance(s, 50) ? (int)(unsigned)splitmix_below(s, n_ifs) : -1;
        for (unsigned i = 0; i <= per; i++) {
            if (i == per && cond_if[k] < 0) {
                tn[k][i] = NULL;
                continue;
            }
            unsigned slot =
                dataflow ? (unsigned)splitmix_below(s, 3) : 2 * j + (i == per ? 0 : i % 2);
            tlsan_tensor_desc d = {0};
            d.name = tn[k][i] = name(g, i == per ? "y%u" : "t%u", k * (MAX_PER + 1) + i);
            d.arena = "pool";
            d.offset_bytes = slot * SLOT + (splitmix_chance(s, 20) ? 64 : 0);
            d.bytes =
                64u *
                (1 + (unsigned)splitmix_below(s, (unsigned)(SLOT - d.offset_bytes % SLOT) / 64));
            if (splitmix_chance(s, 3))
                d.flags = TLSAN_TENSOR_OUTPUT;
            if (tlsan_plan_add_tensor(g->p, &d, &g->err) != TLSAN_OK)
                goto fail;
            rd[k][i] = tn[k][i];
            /* views: a chain of up to three (reshape, permute, slice) read instead */
            for (unsigned v = 0, nv = views ? (unsigned)splitmix_below(s, 4) : 0; v < nv; v++) {
                tlsan_tensor_desc w = {0};
                w.name = name(g, "v%u", (unsigned)g->n_names);
                w.view_of = rd[k][i];
                w.bytes = d.bytes;
                if (v == 2 && d.bytes > 64 && splitmix_chance(s, 50)) {
                    w.view_offset_bytes = 64;
                    w.bytes -= 64;
                }
                if (tlsan_plan_add_tensor(g->p, &w, &g->err) != TLSAN_OK)
                    goto fail;
                rd[k][i] = w.name;
                d.bytes = w.bytes;
            }
        }
    }

    /* Ops. Stage k on stream k % n_streams: wait for the previous stage's event (sometimes
     * dropped), a chain of `per` ops, the first reading the previous stage's last tensor,
     * a record. */
    for (unsigned k = 0; k < n_stages; k++) {
        unsigned j = k % n_streams, jp = (k + n_streams - 1) % n_streams;
        tlsan_cond cond[2];
        if (k > 0 && n_streams > 1 && !splitmix_chance(s, 20)) {
            tlsan_op_desc d = {0};
            d.stream = streams[j];
            d.sync = TLSAN_SYNC_WAIT;
            d.event = events[jp];
            if (branchy && splitmix_chance(s, 10)) { /* a wait on one arm only */
                cond[0] = (tlsan_cond){name(g, "c%u", (unsigned)splitmix_below(s, n_ifs)),
                                       arms[(unsigned)splitmix_below(s, 2)]};
                d.branch = cond;
                d.n_branch = 1;
            }
            if (!add_op(g, &d))
                goto fail;
        }
        for (unsigned i = 0; i < per; i++) {
            tlsan_op_desc d = {0};
            const char *reads[3], *writes[1], *after[1];
            d.stream = n_streams > 1 ? streams[j] : NULL;
            if (i > 0)
                reads[d.n_reads++] = rd[k][i - 1];
            else if (k > 0 &&
                     (!dataflow || !splitmix_chance(s, 15))) /* dataflow: the chain may break */
                reads[d.n_reads++] = rd[k - 1][per - 1];
            if (k > 0 && splitmix_chance(s, 10)) { /* a stray read of an older tensor */
                const char *t =
                    rd[(unsigned)splitmix_below(s, k)][(unsigned)splitmix_below(s, per)];
                if (d.n_reads == 0 || strcmp(reads[0], t) != 0)
                    reads[d.n_reads++] = t;
            }
            writes[d.n_writes++] = tn[k][i];
            d.reads = reads;
            d.writes = writes;
            if (g->n_ops > 0 && splitmix_chance(s, 5)) { /* an explicit order edge */
                after[0] = name(g, "o%u", (unsigned)splitmix_below(s, g->n_ops));
                d.after = after;
                d.n_after = 1;
            }
            if (branchy && splitmix_chance(s, 8)) {
                cond[0] = (tlsan_cond){name(g, "c%u", (unsigned)splitmix_below(s, n_ifs)),
                                       arms[(unsigned)splitmix_below(s, 2)]};
                d.branch = cond;
                d.n_branch = 1;
            }
            if (!add_op(g, &d))
                goto fail;
            if (i == 0 && cond_if[k] >= 0) {
                /* then: a scratch tenant written and read; else: the previous stage's
                 * last tensor read once more (a conditional last access) */
                const char *c = name(g, "c%u", (unsigned)cond_if[k]);
                tlsan_op_desc x = {0}, y = {0}, z = {0};
                const char *xr[1] = {rd[k][0]}, *xw[1] = {tn[k][per]};
                const char *yr[1] = {rd[k][per]}, *yw[1] = {tn[k][0]};
                tlsan_cond then_c = {c, "then"}, else_c = {c, "else"};
                x.stream = y.stream = z.stream = d.stream;
                x.reads = xr, x.n_reads = 1, x.writes = xw, x.n_writes = 1;
                x.branch = &then_c, x.n_branch = 1;
                y.reads = yr, y.n_reads = 1, y.writes = yw, y.n_writes = 1;
                y.branch = &then_c, y.n_branch = 1;
                if (!add_op(g, &x) || !add_op(g, &y))
                    goto fail;
                if (k > 0) {
                    const char *zr[1] = {rd[k - 1][per - 1]};
                    z.reads = zr, z.n_reads = 1;
                    z.branch = &else_c, z.n_branch = 1;
                    if (!add_op(g, &z))
                        goto fail;
                }
            }
        }
        if (n_streams > 1 || (dataflow && splitmix_chance(s, 10))) {
            tlsan_op_desc d = {0};
            d.stream = n_streams > 1 ? streams[j] : NULL;
            if (dataflow || splitmix_chance(s, 5)) {
                d.sync = TLSAN_SYNC_ALL;
            } else {
                d.sync = TLSAN_SYNC_RECORD;
                d.event = events[j];
            }
            if (branchy && splitmix_chance(s, 10)) { /* a record on one arm only */
                cond[0] = (tlsan_cond){name(g, "c%u", (unsigned)splitmix_below(s, n_ifs)),
                                       arms[(unsigned)splitmix_below(s, 2)]};
                d.branch = cond;
                d.n_branch = 1;
            }
            if (!add_op(g, &d))
                goto fail;
        }
    }
finalize:
    if (tlsan_plan_finalize(g->p, &g->err) != TLSAN_OK)
        goto fail;
    tlsan_plan *p = g->p;
    free(g);
    return p;
fail:
    if (g && why && why_bytes) {
        char buf[1024];
        snprintf(why, why_bytes, "%s", tlsan_error_format(&g->err, buf, sizeof buf));
    }
    if (g)
        tlsan_plan_free(g->p);
    free(g);
    return NULL;
}
