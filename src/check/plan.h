/* plan: the in-memory plan model behind tlsan/plan.h.
 *
 * Names are interned (strtab.h); records refer to each other by dense indices once
 * tlsan_plan_finalize() has resolved them. Variable-length lists (reads, writes, shapes,
 * stacks, conditions) live in shared pools addressed by (start, count), so a plan of a
 * million tensors is a handful of large arrays rather than millions of small blocks. */
#ifndef TLSAN_PLAN_PRIV_H
#define TLSAN_PLAN_PRIV_H

#include "tlsan/plan.h"
#include "core/strtab.h"

#include <stdbool.h>
#include <stdint.h>

#define NO_INDEX      UINT32_MAX
#define PLAN_SRC_PAIR (UINT32_C(1) << 31)

typedef struct arena_rec {
    uint32_t name;
    uint32_t memory; /* strtab id, defaults to "host" */
    uint64_t bytes;
    uint64_t alignment_bytes; /* >= 1 */
} arena_rec;

enum {
    TREC_HAS_LIFETIME = 1u << 3,
    TREC_HAS_ALIGNMENT = 1u << 4,
    /* a shape of an extent past 2^32-1 or of more than TREC_RANK_MAX extents: its rank and
     * extents are in plan->shape_wide */
    TREC_WIDE_SHAPE = 1u << 5,
    TREC_HAS_EXTRA = 1u << 6, /* a tensor_extra in plan->extras */
};

#define TREC_RANK_MAX UINT16_MAX

/* 48 bytes: a views-heavy plan has about two records per storage root. */
typedef struct tensor_rec {
    uint32_t name;
    uint32_t arena;   /* arena index for a root; NO_INDEX for a view (before finalize: name id) */
    uint32_t view_of; /* base tensor index for a view; NO_INDEX for a root (before: name id) */
    uint32_t root;    /* storage root index (itself for a root), set by finalize */
    uint32_t shape_start; /* into plan->shape_pool (plan->shape_wide with TREC_WIDE_SHAPE) */
    uint8_t flags;        /* TLSAN_TENSOR_* | TREC_* as given on this tensor */
    uint8_t dtype;        /* tlsan_dtype */
    uint16_t rank;        /* number of extents, without TREC_WIDE_SHAPE: plan_shape_rank() */
    uint64_t bytes;
    uint64_t offset_bytes;     /* root: in its arena; view: view_offset from its base */
    uint64_t abs_offset_bytes; /* set by finalize: first byte within the root's arena */
} tensor_rec;
_Static_assert(sizeof(tensor_rec) == 48, "a field added to tensor_rec costs every tensor");

/* The fields few tensors carry live beside the records, so that a plan of a million
 * tensors does not pay 36 bytes each for them; in tensor order (TREC_HAS_EXTRA: found by
 * binary search on `tensor`). */
typedef struct tensor_extra {
    int64_t lifetime[2];           /* declared lifetime (TREC_HAS_LIFETIME) */
    uint64_t alignment_bytes;      /* own alignment (TREC_HAS_ALIGNMENT), else 0 */
    uint32_t memory;               /* strtab id or STRTAB_NONE */
    uint32_t stack_start, n_stack; /* into plan->id_pool (strtab ids) */
    uint32_t tensor;               /* the tensor's index */
} tensor_extra;

/* An op; its stream is plan->op_stream[index]. */
typedef struct op_rec {
    uint32_t name;
    uint32_t event; /* strtab id or STRTAB_NONE */
    uint32_t extra; /* index of its op_extra, NO_INDEX when it has none */
    /* Pools: reads/writes hold tensor indices after finalize (names before). */
    uint32_t reads_start, n_reads;
    uint32_t writes_start, n_writes;
    uint8_t sync; /* tlsan_sync_kind */
} op_rec;

/* The fields few ops carry live beside the records (as for tensors), so that a plan of a
 * million ops does not pay 36 bytes each for them. Pools: inplace holds tensor indices
 * after finalize (names before), after holds op indices, cond (if index, arm index) pairs
 * after finalize (names before). */
typedef struct op_extra {
    uint32_t loop;                     /* strtab id or STRTAB_NONE */
    uint32_t inplace_start, n_inplace; /* 2*n_inplace entries: out, in */
    uint32_t after_start, n_after;
    uint32_t cond_start, n_cond; /* 2*n_cond entries */
    uint32_t stack_start, n_stack;
} op_extra;

/* A conditional: its arms (strtab ids). One named arm gets an implicit empty second arm,
 * so n_arms is at least 2. */
typedef struct if_rec {
    uint32_t name;
    uint32_t arms_start; /* into plan->id_pool */
    uint32_t n_named_arms;
    uint32_t n_arms; /* n_named_arms, or 2 when only one is named */
} if_rec;

typedef struct loop_rec {
    uint32_t name;
    uint32_t first_op, last_op; /* body is steps first_op..last_op */
} loop_rec;

#define DEFINE_VEC(name, type)                                                                     \
    typedef struct name {                                                                          \
        type *v;                                                                                   \
        size_t n, cap;                                                                             \
    } name;
DEFINE_VEC(u32vec, uint32_t)
DEFINE_VEC(u64vec, uint64_t)

/* Where the records of one kind begin in their file, by index. While records 0 .. n_seq-1
 * begin at column 1 of consecutive lines from `base` on (a generated or exported plan: one
 * object per line), nothing is stored per record. Past the first record that breaks that,
 * v holds per record its line when it begins at column 1 (4 bytes a record), else
 * PLAN_SRC_PAIR | the index of a (line, column) pair in the plan's src_pairs; 0 or absent
 * for records not read from a file. Lines and columns are 1-based. */
typedef struct plan_src {
    u32vec v;
    uint32_t base, n_seq;
} plan_src;

/* Grows a vector so that it holds room for `extra` more elements. 0 on success. */
int vec_reserve_(void **v, size_t *cap, size_t n, size_t extra, size_t elem);
#define VEC_RESERVE(vec, extra)                                                                    \
    vec_reserve_((void **)&(vec).v, &(vec).cap, (vec).n, (extra), sizeof *(vec).v)
#define VEC_PUSH(vec, val) (VEC_RESERVE(vec, 1) == 0 ? ((vec).v[(vec).n++] = (val), 0) : -1)

struct tlsan_plan {
    strtab strings;
    uint32_t name; /* STRTAB_NONE when unnamed */
    tlsan_schedule schedule;
    bool finalized;

    tensor_extra *extras;
    size_t n_extras, cap_extras;
    op_extra *op_extras;
    size_t n_op_extras, cap_op_extras;
    arena_rec *arenas;
    size_t n_arenas, cap_arenas;
    tensor_rec *tensors;
    size_t n_tensors, cap_tensors;
    op_rec *ops;
    size_t n_ops, cap_ops;

    u32vec id_pool; /* tensor/op indices, strtab ids, cond pairs */
    /* Shape extents: 4 bytes each, as almost every extent fits (half the memory of the
     * shapes of a views-heavy plan); a tensor with a larger extent has all of its own in
     * shape_wide. Read them with plan_shape_dim(). */
    u32vec shape_pool;
    u64vec shape_wide; /* per wide shape: its rank, then its extents */

    /* Where each tensor and op object begins in the file it was read from. */
    plan_src tensor_src, op_src;
    u32vec src_pairs;

    /* The arena name of the last root added and the stream of the last op (strtab ids or
     * STRTAB_NONE): consecutive records mostly name the same one, and a name that is not
     * numbered is interned by hashing it (strtab.h). */
    uint32_t last_arena_ref, last_stream_ref;

    /* Name lookups: strtab id -> index + 1 (0 = none), grown with the string table. */
    u32vec arena_by_name, tensor_by_name, op_by_name;

    /* Set by finalize. */
    if_rec *ifs;
    size_t n_ifs;
    loop_rec *loops;
    size_t n_loops;
    /* Streams, numbered as ops first name them (set as ops are added) */
    uint32_t n_streams;  /* distinct streams used by ops */
    uint32_t *op_stream; /* op index -> dense stream index */
    size_t cap_op_stream;
    u32vec stream_names;   /* dense stream index -> strtab id */
    u32vec stream_by_name; /* strtab id -> dense stream index + 1 (0 = none), while building */
    uint8_t *root_flags;   /* tensor index -> TLSAN_TENSOR_* of its whole view tree (roots) */
    uint32_t *op_loop;     /* op index -> loop index or NO_INDEX; NULL when there is no loop */
};

/* Index of a name in one of the lookup tables, NO_INDEX when absent. */
uint32_t plan_lookup(const u32vec *by_name, uint32_t name_id);

static inline const char *plan_str(const tlsan_plan *p, uint32_t id)
{
    return id == STRTAB_NONE ? NULL : strtab_str(&p->strings, id);
}

/* A name every valid plan has (a tensor's, an op's, an arena's): plan_str, never NULL, so a
 * report's "%s" is defined even on a record the import left unnamed. */
static inline const char *plan_name(const tlsan_plan *p, uint32_t id)
{
    const char *s = plan_str(p, id);
    return s ? s : "";
}

/* The tensor_extra of tensor `index` (which has TREC_HAS_EXTRA). */
const tensor_extra *plan_tensor_extra(const tlsan_plan *p, uint32_t index);

/* The rare fields of tensor t, a record of p->tensors (a shared all-absent record when it has
 * none). */
static inline const tensor_extra *tensor_x(const tlsan_plan *p, const tensor_rec *t)
{
    static const tensor_extra none = {{0, 0}, 0, STRTAB_NONE, 0, 0, NO_INDEX};
    return (t->flags & TREC_HAS_EXTRA) ? plan_tensor_extra(p, (uint32_t)(t - p->tensors)) : &none;
}

/* The number of extents of tensor t's shape. */
static inline uint32_t plan_shape_rank(const tlsan_plan *p, const tensor_rec *t)
{
    return (t->flags & TREC_WIDE_SHAPE) ? (uint32_t)p->shape_wide.v[t->shape_start] : t->rank;
}

/* Extent k (0 .. plan_shape_rank()-1) of tensor t's shape. */
static inline uint64_t plan_shape_dim(const tlsan_plan *p, const tensor_rec *t, uint32_t k)
{
    return (t->flags & TREC_WIDE_SHAPE) ? p->shape_wide.v[t->shape_start + 1 + k]
                                        : p->shape_pool.v[t->shape_start + k];
}

/* The name (strtab id) of the stream of op `op`. */
static inline uint32_t plan_op_stream_name(const tlsan_plan *p, uint32_t op)
{
    return p->stream_names.v[p->op_stream[op]];
}

/* The loop whose body holds op `op`, or NO_INDEX. */
static inline uint32_t plan_op_loop(const tlsan_plan *p, uint32_t op)
{
    return p->op_loop ? p->op_loop[op] : NO_INDEX;
}

/* The rare fields of an op (a shared all-absent record when it has none). */
static inline const op_extra *op_x(const tlsan_plan *p, const op_rec *o)
{
    static const op_extra none = {STRTAB_NONE, 0, 0, 0, 0, 0, 0, 0, 0};
    return o->extra == NO_INDEX ? &none : &p->op_extras[o->extra];
}

/* Records where the object of the last tensor (is_op false) or op added begins in its
 * file: line and column, 1-based. 0, or -1 when out of memory. */
int plan_set_source(tlsan_plan *p, bool is_op, uint32_t line, uint32_t column);

/* Bytes the dtype and shape of tensor t need (saturating at UINT64_MAX); 0 when none. */
uint64_t plan_needed_bytes(const tlsan_plan *p, const tensor_rec *t);

/* An importer's plan name from its input's label (a path): the file name without the
 * extension `ext` (".json", ".pte"), malloc'd in *out; NULL in *out when the label gives none
 * ("-", "", a directory path). Returns -1 when out of memory, else 0. */
int plan_name_from_label(const char *label, const char *ext, char **out);

#endif
