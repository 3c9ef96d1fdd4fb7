/* lifetime: who touches each storage root when, and a root's live range on a branch path.
 *
 * The access index lists, per storage root, every op that reads or writes it (through any
 * of its views), in step order. A branch path fixes one arm per `if`; lifetimes are judged
 * per path (plan-format.md, "Semantics"). Enumerating every path is exponential in the
 * number of ifs, so each question only enumerates the ifs that can change its answer:
 * an access can only move a root's first or last step when it lies outside the span of the
 * root's unconditional accesses (or in a loop that straddles that span). Those accesses are
 * marked "relevant" and only their ifs are enumerated. */
#ifndef TLSAN_LIFETIME_H
#define TLSAN_LIFETIME_H

#include "check/plan.h"

#include <stdbool.h>
#include <stdint.h>

enum {
    ACC_READ = 1u << 0,
    ACC_WRITE = 1u << 1,
    ACC_COND = 1u << 2,     /* the op has branch conditions */
    ACC_RELEVANT = 1u << 3, /* conditional and able to move the root's first/last step */
};

#define LIFE_NONE_FIRST INT32_MAX
#define LIFE_NONE_LAST  INT32_MIN

typedef struct life {
    int32_t first, last; /* steps; empty when first > last */
} life;

static inline bool life_empty(life l)
{
    return l.first > l.last;
}

static inline bool life_intersect(life a, life b)
{
    return !life_empty(a) && !life_empty(b) && a.first <= b.last && b.first <= a.last;
}

typedef struct access_index {
    uint32_t *start; /* n_tensors + 1 offsets; only roots have entries */
    uint32_t *op;    /* op of each access, ascending per root */
    uint8_t *rw;     /* ACC_* bits of each access */
    life *hull;      /* per root: union of its lifetimes over all paths (loop rule included
                        conservatively: every loop it touches is assumed carried) */
    /* The conditional ops: a bit per step, and per word of 64 steps how many are before it,
     * so that counting those before a step is a word lookup and a popcount (0.2 bytes per
     * op instead of a 4-byte prefix count). */
    uint64_t *cond_bits; /* n_ops / 64 + 1 words */
    uint32_t *cond_rank;
    uint32_t *cond_ops; /* the conditional ops in step order */
    /* Per conditional op k (in that order), its conditions: if cond_ifs[c] takes arm
     * cond_arms[c] for c in cond_if_start[k] .. cond_if_start[k+1]-1, contiguous, so that
     * collecting the ifs of a range of steps, or asking whether an op runs, does not visit
     * the op records. */
    uint32_t *cond_if_start;
    uint32_t *cond_ifs, *cond_arms;
} access_index;

/* How many conditional ops are before step `step` (0 .. n_ops). */
/* The bits set in x. The build targets baseline x86-64, where __builtin_popcountll is a
 * call into libgcc (1.2 % of branchy's instructions); this is its dozen instructions inline. */
static inline uint32_t bits_set(uint64_t x)
{
    x -= (x >> 1) & UINT64_C(0x5555555555555555);
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (uint32_t)((x * UINT64_C(0x0101010101010101)) >> 56);
}

static inline uint32_t cond_ops_before(const access_index *ix, uint32_t step)
{
    uint64_t below = ix->cond_bits[step / 64] & ((UINT64_C(1) << (step % 64)) - 1);
    return ix->cond_rank[step / 64] + bits_set(below);
}

/* The span of a root's unconditional accesses and flags (step -1 for an input, n_ops for an
 * output): its lifetime on every path contains it. Empty for a view. Computed from the
 * index (it is read rarely: not kept per tensor). */
life root_must(const access_index *ix, const tlsan_plan *p, uint32_t r);

/* Builds the index for a finalized plan. 0 on success, -1 when out of memory (the index is
 * then freed). */
int access_index_build(access_index *ix, const tlsan_plan *p);
void access_index_free(access_index *ix);

/* Which arm each `if` takes on the path being judged. */
typedef struct path_state {
    const tlsan_plan *plan;
    const access_index *ix; /* the plan's index, when built (op_runs() reads it), or NULL */
    uint32_t *arm;          /* per if: the current arm; only the enumerated ifs are meaningful */
    bool all_run; /* approximation: every op runs and every loop a root touches is carried,
                     so each lifetime contains the lifetime of every path */
} path_state;

/* True when op `op` runs on the path: each of its conditions names the current arm. */
bool op_runs(const path_state *ps, uint32_t op);

/* A set of ifs to enumerate, with a stamp array for O(1) membership. */
typedef struct if_set {
    uint32_t *ifs;
    size_t n;
    uint32_t *stamp; /* per if: generation when added */
    uint32_t gen;
} if_set;

int if_set_init(if_set *s, size_t n_ifs);
void if_set_free(if_set *s);
void if_set_clear(if_set *s);
/* Adds the ifs of op's conditions. */
void if_set_add_op(if_set *s, const tlsan_plan *p, uint32_t op);
/* Adds the ifs of conditional op k (the k-th of ix->cond_ops). */
void if_set_add_cond(if_set *s, const access_index *ix, uint32_t k);
/* Adds the ifs of the relevant (path-dependent) accesses of a root. */
void if_set_add_root(if_set *s, const tlsan_plan *p, const access_index *ix, uint32_t root);
/* Adds the ifs of every conditional op in steps lo..hi, in step order, stopping once the
 * set holds IF_SET_SATURATED ifs: the paths then number at least 2^64, more than any
 * question enumerates, so the rest cannot change the answer and are not visited. */
#define IF_SET_SATURATED 64
void if_set_add_range(if_set *s, const tlsan_plan *p, const access_index *ix, int32_t lo,
                      int32_t hi);
/* Number of paths over the set, saturating at UINT64_MAX. */
uint64_t if_set_paths(const if_set *s, const tlsan_plan *p);

/* Path enumeration over an if_set: path_first sets every enumerated if to arm 0, path_next
 * advances like an odometer and returns false after the last path. */
void path_first(path_state *ps, const if_set *s);
bool path_next(path_state *ps, const if_set *s);

/* The root's lifetime on the current path: first..last access (its views' included), step
 * -1 for inputs, n_ops for outputs, and the loop rule. Accesses that are not relevant and
 * conditional are skipped: they lie within the unconditional span and cannot move it. */
life root_life(const access_index *ix, const tlsan_plan *p, uint32_t root, const path_state *ps);

/* The same rule over an explicit access list (ops ascending, ACC_* bits) and flags: used for
 * the derived lifetime of a view, whose accesses are its own and those of views below it. */
life accesses_life(const tlsan_plan *p, const uint32_t *ops, const uint8_t *rw, size_t n,
                   unsigned flags, const path_state *ps);

/* The name of arm `arm` of if `f` for reports (an implicit arm gets a synthetic name). */
const char *arm_name(const tlsan_plan *p, uint32_t f, uint32_t arm);

#endif
