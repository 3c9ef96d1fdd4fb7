/* state.h - the engine annotation runtime's state and the helpers every module uses (the
 * tlsan_rt_* entry points of tlsan.h are split along their concerns in the files of shim/engine/).
 *
 * State, all under one mutex:
 * - names: every tensor, op and arena name is interned once (struct name), so records and
 *   findings hold plain pointers that stay valid for the life of the process; a name also
 *   carries its tensor (one struct per name, reused by each new tenant: `gen` counts them);
 * - arenas (by base): the live roots in each, the ranges known to hold the sentinel (an
 *   interval list; each interval remembers the tenant that released it, for stale-write
 *   reports) and, for checksum=shared, every distinct placement ever bound;
 * - ops in flight (by token), with their reads and writes resolved to root byte ranges.
 *
 * Checks. Clobbers are tracked at op_end from the declared writes: every other live root
 * whose bytes the write covers is marked, and a later read of it is live-corruption. Roots
 * are hashed (checksum.h) when their last in-flight writer ends and verified when an op
 * reads them, at release and at arena destroy (and, under checksum=all, all of them at every
 * op's end, to name the op that ran): a mismatch is a change nobody declared.
 * Released bytes get the sentinel; bind verifies it (stale-write), op_end verifies the
 * bytes just past each written root (slot-overflow). Each root keeps the bytes declared
 * written since its bind; op_begin reports a read outside them (read-before-write).
 *
 * Hashing, verifying and filling run outside the mutex (the engine's threads run ops in
 * parallel): each root has an `epoch` bumped by everything that may change its bytes or its
 * state (a writer beginning, a release, a bind); a hash computed outside is applied only if
 * the epoch did not move meanwhile. Findings are collected under the mutex and reported
 * after it is dropped, so a report (which may symbolize, or exit under halt_on_error) never
 * runs with the engine locked. */
#ifndef TLSAN_SHIM_ENGINE_STATE_H
#define TLSAN_SHIM_ENGINE_STATE_H

#define TLSAN_DISABLE /* only the types and flags: the engine defines the tlsan_rt_* */
#include "tlsan/tlsan.h"

#include "engine/engine.h"
#include "engine/finding.h"
#include "lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USAGE_MAX      50 /* usage warnings printed before they are suppressed */
#define OVERFLOW_CHECK 64 /* bytes past a written root checked for the sentinel */

typedef unsigned long long ull; /* out.h formats %llu / %llx */

struct tensor;

struct name {
    struct name *next;
    uint64_t hash;
    struct tensor *tensor; /* the tensor of this name, NULL when never bound */
    bool plan_shared;      /* shares bytes with another root in a loaded plan */
    uint32_t handle_slot;  /* handle.c's slot of this name, 0 when it has none yet */
    char text[];
};

/* A released tenant whose bytes got the sentinel (referenced by sentinel intervals). */
struct released_tenant {
    const char *name;
    uint64_t lo, hi;
    uint32_t bind_stack, release_stack;
    int refs;
    struct released_tenant *next_free;
};

/* [lo, hi) arena offsets holding the sentinel; released NULL: filled at arena create. */
struct sentinel_range {
    uint64_t lo, hi;
    struct released_tenant *released;
};

/* One byte range some tensor was bound to, with the first name seen there and how many
 * names were: grouping by range keeps the walk over distinct ranges, which a planner keeps
 * few, however many names (runs, tokens) pass through them. */
struct placement {
    const char *name;
    uint64_t lo, hi;
    size_t n_names;
};

struct arena {
    struct arena *next;
    const char *name;
    uintptr_t base;
    uint64_t size;
    uint64_t trace_id;
    bool dead;
    atomic_bool gone; /* its memory was freed before tlsan_arena_destroy (the heap hook) */
    struct sentinel_range *sentinel; /* sorted, disjoint; never covers a live root's bytes */
    size_t n_sentinel, cap_sentinel;
    struct tensor **live; /* live roots */
    size_t n_live, cap_live;
    struct placement *placements; /* checksum=shared: the ranges ever bound */
    size_t n_placements, cap_placements;
};

enum { CLOBBER_NONE, CLOBBER_WRITE, CLOBBER_INPLACE };

/* Bytes [lo, hi), arena offsets. */
struct span {
    uint64_t lo, hi;
};

struct tensor {
    const char *name;
    struct name *interned;
    bool is_view;
    uint64_t size;
    uint32_t bind_stack;
    /* view */
    struct tensor *root;
    uint64_t root_gen, view_offset; /* view_offset: from the root's first byte */
    /* root */
    struct arena *arena;
    uint64_t off;
    unsigned flags;
    bool bound;
    uint64_t gen, epoch;
    uint32_t release_stack;
    bool shared; /* checksum=shared: shares bytes with another placement */
    bool has_hash;
    uint64_t hash;
    int writers; /* ops in flight writing it */
    const char *last_op;
    uint32_t last_op_stack;
    const char *released_reader_op; /* the last op reported reading it after its release */
    int clobber;
    bool clobber_reported;
    const char *clobber_by, *clobber_op;
    uint32_t clobber_op_stack, clobber_by_bind_stack;
    uint64_t clobber_lo, clobber_hi;
    struct arena *placed_arena;
    uint64_t placed_lo, placed_hi;
    /* The bytes an op declared a write to since its bind (all of them for an input or an
     * in-place output), sorted, disjoint and merged: one span once it is written whole. A
     * declared read of bytes outside them is read-before-write, reported once per tenant. */
    struct span *written;
    size_t n_written, cap_written;
    bool read_before_write_reported;
};

enum { RESOLVE_OK, RESOLVE_UNKNOWN, RESOLVE_RELEASED, RESOLVE_STALE_VIEW };

struct access {
    const char *name; /* as the op named it */
    struct tensor *named, *root;
    uint64_t gen, lo, hi; /* root tenant and the bytes accessed (arena offsets) */
    int status;
    /* The tenant as the op saw it (RESOLVE_OK), for a report made after its release or a new
     * bind of the name: its arena and bind stack, and its release stack once it was released
     * while the op was in flight. */
    struct arena *arena;
    uint32_t bind_stack, release_stack;
    bool in_flight_reported; /* its release or reuse while the op ran was reported */
};

/* Ops are recycled through a free list (with their arrays), so that an op costs no
 * allocation in the steady state: every malloc here goes through the shim's tracked heap. */
struct op {
    struct op *next;
    uint64_t id;
    const char *name;
    uint32_t stack;
    int stream;
    pthread_t thread; /* the thread that began it: its own releases and binds are ordered */
    struct access *reads, *writes; /* both in accesses */
    size_t n_reads, n_writes;
    struct tensor **inplace_inputs; /* roots of its in-place inputs */
    size_t n_inplace;
    struct access *accesses;
    size_t cap_accesses, cap_inplace;
};

/* The findings themselves (their variants, constructors and reports) are engine/finding.h's,
 * shared with the ggml adapter. */

/* A hash to compute outside the lock. verify: compare with expect; else store. */
struct job {
    struct tensor *tensor;
    uint64_t gen, epoch;
    const unsigned char *bytes;
    size_t n_bytes;
    bool verify;
    uint64_t expect, got;
    enum finding_moment moment;
    const char *op, *via;
    uint32_t op_stack;
};

struct byte_range {
    uint64_t lo, hi;
    struct released_tenant *released;
};

/* Per-call scratch: jobs, findings, ranges; small inline arrays first (no allocation for
 * the common call). */
#define WORK_INLINE 8
struct work {
    struct job *jobs;
    size_t n_jobs, cap_jobs;
    struct finding *findings, **tail;
    struct byte_range *ranges;
    size_t n_ranges, cap_ranges;
    struct job jobs_in[WORK_INLINE];
    struct byte_range ranges_inline[WORK_INLINE];
};

#define WORK_INIT(w)                                                                               \
    {                                                                                              \
        .jobs = (w).jobs_in, .cap_jobs = WORK_INLINE, .tail = &(w).findings,                       \
        .ranges = (w).ranges_inline, .cap_ranges = WORK_INLINE                                     \
    }

/* Everything the engine knows, under lock. */
struct engine_state {
    pthread_mutex_t lock;
    struct name **names;
    size_t names_cap, names_n;
    struct arena *arenas;
    struct op *ops;
    struct op *free_ops;
    struct released_tenant *free_released_tenants;
    uint64_t next_op;
    uint64_t *seen; /* keys of the findings reported */
    size_t seen_n, seen_cap;
};
extern struct engine_state g_engine;

/* The live arenas' byte ranges, sorted and disjoint, for the free hook: a heap block freed
 * with an arena inside it takes the arena with it (engine_heap_block_freed). The hook cannot
 * take the engine's mutex (the engine frees while holding it), so the ranges have their own
 * lock, taken under the mutex or alone and never held across a call that may allocate; the
 * array is mmap'd. */
struct arena_range {
    uintptr_t lo, hi;
    struct arena *a;
};
struct arena_range_table {
    shim_lock lock;
    struct arena_range *v;
    size_t n, cap;
};
extern struct arena_range_table g_arena_ranges;
/* Some arena was freed under the engine: reap it at the next lock. */
extern atomic_bool g_arena_freed;

/* Grows *v (capacity *cap elements of elem bytes) to hold need; an array still at inl (a
 * work array's inline storage) moves to the heap. False when out of memory. */
bool engine_grow_from(void **v, size_t *cap, size_t need, size_t elem, const void *inl);
/* engine_grow_from for an array that never was inline. */
bool engine_grow(void **v, size_t *cap, size_t need, size_t elem);
/* "tlsan: warning: ..." for a misused annotation; the first USAGE_MAX only. */
void usage_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The engine's mutex; taking it first drops the arenas freed under the engine. */
void engine_lock(void);
void engine_unlock(void);
/* True while the shim is active (every entry point is a no-op otherwise); installs the fork
 * handlers on first use. */
bool engine_active(void);
/* FNV-1a of a NUL-terminated string. */
uint64_t hash_str(const char *s);
/* The interned name s; NULL when absent and !add, or out of memory. */
struct name *engine_name(const char *s, bool add);
/* s interned (NULL: "?"); "?" when out of memory. */
const char *engine_intern(const char *s);
/* Whether root t is checksummed under the checksum= option. */
bool hash_wanted(const struct tensor *t);
/* [a0, a1) and [b0, b1) share a byte. */
bool ranges_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1);
/* The live arena of this base, or NULL. Lock held. */
struct arena *arena_find(uintptr_t base);
/* Root t's bytes [lo, hi) were declared written (or hold data from its bind). Lock held. */
void tensor_written(struct tensor *t, uint64_t lo, uint64_t hi);
/* Whether some byte of [lo, hi) of root t was not written since its bind. Lock held. */
bool tensor_has_unwritten(const struct tensor *t, uint64_t lo, uint64_t hi);
/* Takes t off a's live roots. Lock held. */
void live_remove(struct arena *a, struct tensor *t);

#define PUSH(arr, n, cap, ...)                                                                     \
    (engine_grow((void **)&(arr), &(cap), (n) + 1, sizeof *(arr))                                  \
         ? ((arr)[(n)++] = (__VA_ARGS__), true)                                                    \
         : false)

/* PUSH for the work arrays, which start inline. */
#define WORK_PUSH(w, arr, n, cap, inl, ...)                                                        \
    (engine_grow_from((void **)&(w)->arr, &(w)->cap, (w)->n + 1, sizeof *(w)->arr, (w)->inl)       \
         ? ((w)->arr[(w)->n++] = (__VA_ARGS__), true)                                              \
         : false)

#endif
