/* randplan: the random plan generator of randplan.h. */
#include "support/randplan.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "splitmix.h"

#define MAX_ROOTS   8
#define MAX_VIEWS   4
#define MAX_TENSORS (MAX_ROOTS + MAX_VIEWS)
#define MAX_OPS     16
#define MAX_IFS     6
#define SLOT_BYTES  64

static const char *const root_names[MAX_ROOTS] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
static const char *const view_names[MAX_VIEWS] = {"v0", "v1", "v2", "v3"};
static const char *const op_names[MAX_OPS] = {"op0",  "op1",  "op2",  "op3", "op4",  "op5",
                                              "op6",  "op7",  "op8",  "op9", "op10", "op11",
                                              "op12", "op13", "op14", "op15"};
static const char *const if_names[MAX_IFS] = {"c0", "c1", "c2", "c3", "c4", "c5"};
static const char *const arm_names[3] = {"then", "else", "third"};
static const char *const stream_names[3] = {"main", "s1", "s2"};
static const char *const event_names[2] = {"e0", "e1"};
static const char *const memory_names[2] = {"host", "cuda:0"};

typedef struct gen_tensor {
    const char *name;
    int arena; /* arena index (a view: its root's) */
    int base;  /* views: index of the base in the tensor table; roots: -1 */
    int depth; /* 0 for roots */
    uint64_t bytes;
    uint64_t offset; /* first byte in the arena (a view's: through its chain) */
    int root;        /* index of its storage root */
} gen_tensor;

static tlsan_plan *refuse(tlsan_plan *p, const tlsan_error *err, char *why, size_t why_bytes)
{
    if (why && why_bytes) {
        char buf[1024];
        snprintf(why, why_bytes, "%s", tlsan_error_format(err, buf, sizeof buf));
    }
    tlsan_plan_free(p);
    return NULL;
}

/* Draws up to `max` distinct tensors of the table into out; returns how many. */
static size_t pick_tensors(uint64_t *s, size_t n_tensors, size_t max, int *out)
{
    size_t want = (unsigned)splitmix_below(s, (unsigned)max + 1), got = 0;
    for (size_t tries = 0; got < want && tries < 8; tries++) {
        int t = (int)(unsigned)splitmix_below(s, (unsigned)n_tensors);
        bool dup = false;
        for (size_t i = 0; i < got; i++)
            dup = dup || out[i] == t;
        if (!dup)
            out[got++] = t;
    }
    return got;
}

tlsan_plan *randplan_make(uint64_t seed, const randplan_opts *opt, char *why, size_t why_bytes)
{
    randplan_opts o = {0, 0, 0, 0};
    if (opt)
        o = *opt;
    unsigned max_ops = o.max_ops ? o.max_ops : 10;
    unsigned max_roots = o.max_roots ? o.max_roots : 8;
    if (max_ops > MAX_OPS)
        max_ops = MAX_OPS;
    if (max_ops < 2)
        max_ops = 2;
    if (max_roots > MAX_ROOTS)
        max_roots = MAX_ROOTS;
    if (max_roots < 2)
        max_roots = 2;
    unsigned max_ifs = o.max_ifs ? o.max_ifs : 3;
    if (max_ifs > MAX_IFS)
        max_ifs = MAX_IFS;
    bool layout = !(o.disable & RANDPLAN_NO_LAYOUT);

    uint64_t st = seed ^ 0x5eed0f7157a11ull;
    uint64_t *s = &st;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    tlsan_plan *p = tlsan_plan_create();
    if (!p)
        return NULL;

    unsigned n_ops = 2 + (unsigned)splitmix_below(s, max_ops - 1);
    bool dataflow = !(o.disable & RANDPLAN_NO_DATAFLOW) && splitmix_chance(s, 25);
    if (dataflow && tlsan_plan_set_schedule(p, TLSAN_SCHEDULE_DATAFLOW) != TLSAN_OK)
        return refuse(p, &err, why, why_bytes);

    /* Arenas: a few 64-byte slots each, so roots land on each other often. */
    unsigned n_arenas = 1 + (unsigned)splitmix_below(s, 2);
    unsigned n_slots = 2 + (unsigned)splitmix_below(s, 3);
    uint64_t arena_bytes[2];
    for (unsigned a = 0; a < n_arenas; a++) {
        static const uint64_t aligns[3] = {1, 16, 64};
        tlsan_arena_desc d = {0};
        d.name = a == 0 ? "a0" : "a1";
        d.bytes = (uint64_t)n_slots * SLOT_BYTES;
        if (layout && splitmix_chance(s, 10))
            d.bytes -= SLOT_BYTES / 2; /* the last slot sticks out */
        d.alignment_bytes = aligns[(unsigned)splitmix_below(s, 3)];
        d.memory = layout && splitmix_chance(s, 15) ? memory_names[1] : NULL;
        arena_bytes[a] = d.bytes;
        if (tlsan_plan_add_arena(p, &d, &err) != TLSAN_OK)
            return refuse(p, &err, why, why_bytes);
    }
    (void)arena_bytes;

    /* Roots, then views (depth at most 2). */
    gen_tensor tens[MAX_TENSORS];
    bool ready[MAX_TENSORS] = {false}; /* input, or written by an earlier op (any path) */
    /* Two tensors of different roots on exactly the same bytes of one arena. */
    bool same_place[MAX_TENSORS][MAX_TENSORS];
    size_t n_tensors = 0;
    unsigned n_roots = 2 + (unsigned)splitmix_below(s, max_roots - 1);
    unsigned n_views =
        (o.disable & RANDPLAN_NO_VIEWS) ? 0 : (unsigned)splitmix_below(s, MAX_VIEWS + 1);
    for (unsigned i = 0; i < n_roots + n_views; i++) {
        static const uint64_t sizes[6] = {64, 64, 64, 128, 32, 0};
        tlsan_tensor_desc d = {0};
        gen_tensor g = {0};
        if (i < n_roots) {
            g.name = d.name = root_names[i];
            g.arena = (int)(unsigned)splitmix_below(s, n_arenas);
            g.base = -1;
            d.arena = g.arena == 0 ? "a0" : "a1";
            d.offset_bytes = (uint64_t)(unsigned)splitmix_below(s, n_slots) * SLOT_BYTES;
            if (layout && splitmix_chance(s, 5))
                d.offset_bytes += 8; /* misaligned for 16 and 64 */
            d.bytes = sizes[(unsigned)splitmix_below(s, layout ? 6 : 5)];
            if (!layout && d.bytes == 0)
                d.bytes = 64;
            if (!layout && d.offset_bytes + d.bytes > (uint64_t)n_slots * SLOT_BYTES)
                d.bytes = SLOT_BYTES;
        } else {
            /* A base that is a root or a view of a root, so chains stay at most 2 deep. */
            int base;
            do
                base = (int)(unsigned)splitmix_below(s, (unsigned)n_tensors);
            while (tens[base].depth >= 2);
            g.name = d.name = view_names[i - n_roots];
            g.arena = -1;
            g.base = base;
            g.depth = tens[base].depth + 1;
            d.view_of = tens[base].name;
            uint64_t bb = tens[base].bytes;
            d.view_offset_bytes = splitmix_chance(s, 30) ? bb / 2 : 0;
            d.bytes = bb - d.view_offset_bytes;
            if (splitmix_chance(s, 30))
                d.bytes /= 2;
            if (layout && splitmix_chance(s, 5))
                d.bytes += 16; /* sticks out of its base */
        }
        g.bytes = d.bytes;
        unsigned fl = 0;
        if (splitmix_chance(s, i < n_roots ? 20 : 8))
            fl |= TLSAN_TENSOR_INPUT;
        if (splitmix_chance(s, i < n_roots ? 20 : 8))
            fl |= TLSAN_TENSOR_OUTPUT;
        if (splitmix_chance(s, 4))
            fl |= TLSAN_TENSOR_CONSTANT;
        d.flags = fl;
        if (layout && splitmix_chance(s, 8))
            d.memory = memory_names[(unsigned)splitmix_below(s, 2)];
        if (layout && splitmix_chance(s, 8)) {
            static const uint64_t aligns[3] = {16, 64, 128};
            d.alignment_bytes = aligns[(unsigned)splitmix_below(s, 3)];
        }
        if (splitmix_chance(s, 25)) {
            d.has_lifetime = true;
            d.lifetime[0] = (int64_t)(unsigned)splitmix_below(s, n_ops + 2) - 1;
            d.lifetime[1] = d.lifetime[0] + (int64_t)(unsigned)splitmix_below(
                                                s, (unsigned)(n_ops - d.lifetime[0]) + 1);
        }
        uint64_t shape[2];
        if (layout && splitmix_chance(s, 10)) {
            static const tlsan_dtype dts[4] = {TLSAN_DTYPE_F32, TLSAN_DTYPE_U4, TLSAN_DTYPE_U8,
                                               TLSAN_DTYPE_BF16};
            d.dtype = dts[(unsigned)splitmix_below(s, 4)];
            d.n_shape = (unsigned)splitmix_below(s, 3);
            shape[0] = 1 + (unsigned)splitmix_below(s, 40);
            shape[1] = (unsigned)splitmix_below(s, 5);
            d.shape = shape;
        }
        if (tlsan_plan_add_tensor(p, &d, &err) != TLSAN_OK)
            return refuse(p, &err, why, why_bytes);
        if (i < n_roots) {
            g.offset = d.offset_bytes;
            g.root = (int)i;
        } else {
            g.offset = tens[g.base].offset + d.view_offset_bytes;
            g.root = tens[g.base].root;
            g.arena = tens[g.root].arena;
        }
        ready[n_tensors] = (fl & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_CONSTANT)) != 0;
        tens[n_tensors++] = g;
    }

    for (size_t x = 0; x < n_tensors; x++)
        for (size_t y = 0; y < n_tensors; y++)
            same_place[x][y] = tens[x].root != tens[y].root && tens[x].arena == tens[y].arena &&
                               tens[x].offset == tens[y].offset && tens[x].bytes == tens[y].bytes;

    /* Control structure: streams, ifs with their named arms, loops (contiguous, disjoint). */
    unsigned n_streams = (o.disable & RANDPLAN_NO_STREAMS) || splitmix_chance(s, 50)
                             ? 1
                             : 2 + (unsigned)splitmix_below(s, 2);
    unsigned n_ifs =
        (o.disable & RANDPLAN_NO_BRANCHES) ? 0 : (unsigned)splitmix_below(s, max_ifs + 1);
    unsigned if_arms[MAX_IFS];
    for (unsigned f = 0; f < n_ifs; f++)
        if_arms[f] = 1 + (unsigned)splitmix_below(s, 3);
    int loop_of_op[MAX_OPS];
    for (unsigned i = 0; i < MAX_OPS; i++)
        loop_of_op[i] = -1;
    if (!(o.disable & RANDPLAN_NO_LOOPS)) {
        unsigned n_loops = splitmix_chance(s, 40) ? 1 + (splitmix_chance(s, 30) ? 1 : 0) : 0;
        unsigned from = 0;
        for (unsigned L = 0; L < n_loops && from < n_ops; L++) {
            unsigned start = from + (unsigned)splitmix_below(s, n_ops - from);
            unsigned len = 1 + (unsigned)splitmix_below(s, n_ops - start);
            for (unsigned k = start; k < start + len; k++)
                loop_of_op[k] = (int)L;
            from = start + len + 1; /* a gap keeps the two loops apart */
        }
    }

    for (unsigned i = 0; i < n_ops; i++) {
        tlsan_op_desc d = {0};
        const char *reads[3], *writes[3], *inplace[4], *after[2];
        tlsan_cond conds[MAX_IFS];
        bool inplace_friendly = false;
        d.name = op_names[i];
        d.stream = stream_names[(unsigned)splitmix_below(s, n_streams)];
        if (d.stream == stream_names[0] && splitmix_chance(s, 50))
            d.stream = NULL; /* the default stream, spelt out or not */
        if (n_streams > 1 && splitmix_chance(s, 30)) {
            unsigned what = (unsigned)splitmix_below(s, 5);
            d.sync = what < 2 ? TLSAN_SYNC_RECORD : what < 4 ? TLSAN_SYNC_WAIT : TLSAN_SYNC_ALL;
            if (d.sync != TLSAN_SYNC_ALL)
                d.event = event_names[(unsigned)splitmix_below(s, 2)];
        } else if (dataflow && splitmix_chance(s, 8)) {
            d.sync = TLSAN_SYNC_ALL;
        } else {
            int r[3], w[3];
            size_t nr = pick_tensors(s, n_tensors, 2, r);
            size_t nw = pick_tensors(s, n_tensors, 2, w);
            /* Mostly read what is already there, so that read-before-write does not drown
             * the other findings. */
            for (size_t k = 0; k < nr; k++)
                if (!ready[r[k]] && splitmix_chance(s, 70)) {
                    int t = (int)(unsigned)splitmix_below(s, (unsigned)n_tensors);
                    for (size_t m = 0; m < n_tensors && !ready[t]; m++)
                        t = (t + 1) % (int)n_tensors;
                    bool dup = false;
                    for (size_t m = 0; m < nr; m++)
                        dup = dup || r[m] == t;
                    if (ready[t] && !dup)
                        r[k] = t;
                }
            /* An in-place friendly op: read a root, write another root on the same bytes. */
            if (!(o.disable & RANDPLAN_NO_INPLACE) && nr > 0 && splitmix_chance(s, 20)) {
                int in = r[0];
                for (int t = 0; t < (int)n_tensors; t++)
                    if (t != in && same_place[in][t] && splitmix_chance(s, 60)) {
                        w[0] = t;
                        nw = nw ? nw : 1;
                        if (nw > 1 && w[1] == t)
                            nw = 1;
                        inplace_friendly = true;
                        break;
                    }
            }
            if (nr > 0 && nw < 2 && splitmix_chance(s, 15)) {
                bool dup = false;
                for (size_t k = 0; k < nw; k++)
                    dup = dup || w[k] == r[0];
                if (!dup)
                    w[nw++] = r[0]; /* reads and writes the same tensor */
            }
            for (size_t k = 0; k < nr; k++)
                reads[k] = tens[r[k]].name;
            for (size_t k = 0; k < nw; k++)
                writes[k] = tens[w[k]].name;
            d.reads = reads;
            d.n_reads = nr;
            d.writes = writes;
            d.n_writes = nw;
            for (size_t k = 0; k < nw; k++)
                ready[w[k]] = true;
            if (!(o.disable & RANDPLAN_NO_INPLACE)) {
                if (inplace_friendly && splitmix_chance(s, 80)) {
                    inplace[0] = writes[0];
                    inplace[1] = reads[0];
                    d.n_inplace = 1;
                    /* Sometimes name another tensor of the same root than the one accessed
                     * (the root itself, or a view): the pair still matches through the
                     * roots, but the op no longer lists the declared tensor. */
                    for (int side = 0; side < 2; side++)
                        if (splitmix_chance(s, 15)) {
                            int of = side == 0 ? w[0] : r[0];
                            int t = (int)(unsigned)splitmix_below(s, (unsigned)n_tensors);
                            if (tens[t].root == tens[of].root)
                                inplace[side] = tens[t].name;
                        }
                } else if (nr > 0 && nw > 0 && splitmix_chance(s, 30)) {
                    inplace[0] = writes[(unsigned)splitmix_below(s, (unsigned)nw)];
                    inplace[1] = reads[(unsigned)splitmix_below(s, (unsigned)nr)];
                    d.n_inplace = 1;
                } else if (splitmix_chance(s, 5)) {
                    inplace[0] = tens[(unsigned)splitmix_below(s, (unsigned)n_tensors)].name;
                    inplace[1] = tens[(unsigned)splitmix_below(s, (unsigned)n_tensors)].name;
                    d.n_inplace = 1;
                }
                d.inplace = inplace;
            }
        }
        if (!(o.disable & RANDPLAN_NO_AFTER) && i > 0 && splitmix_chance(s, 20)) {
            after[0] = op_names[(unsigned)splitmix_below(s, i)];
            d.n_after = 1;
            if (i > 1 && splitmix_chance(s, 30)) {
                after[1] = op_names[(unsigned)splitmix_below(s, i)];
                d.n_after = after[1] == after[0] ? 1 : 2;
            }
            d.after = after;
        }
        for (unsigned f = 0; f < n_ifs; f++)
            if (splitmix_chance(s, 35)) {
                conds[d.n_branch].if_name = if_names[f];
                conds[d.n_branch].arm = arm_names[(unsigned)splitmix_below(s, if_arms[f])];
                d.n_branch++;
            }
        d.branch = conds;
        if (loop_of_op[i] >= 0)
            d.loop = loop_of_op[i] == 0 ? "L0" : "L1";
        if (tlsan_plan_add_op(p, &d, &err) != TLSAN_OK)
            return refuse(p, &err, why, why_bytes);
    }
    if (tlsan_plan_finalize(p, &err) != TLSAN_OK)
        return refuse(p, &err, why, why_bytes);
    return p;
}
