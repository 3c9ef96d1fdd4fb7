/* finding.h - the run-time findings of the engine runtime (shim/engine/) and of the ggml
 * adapter (shim/ggml/): one tagged union with one constructor per kind, and the one report of
 * each kind (finding_report).
 *
 * A finding only borrows: names are interned by the engine (they live as long as the
 * process) or belong to a ggml graph that outlives the report; stacks are depot ids. So a
 * finding can be built under the engine's lock and reported after it is dropped (a report
 * symbolizes, and may exit under halt_on_error). Building one never allocates. */
#ifndef TLSAN_SHIM_ENGINE_FINDING_H
#define TLSAN_SHIM_ENGINE_FINDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FINDING_MAX_TENSORS     4  /* other tensors listed in one report */
#define FINDING_SHOWN_BYTES     16 /* bytes shown in stale-write and slot-overflow reports */
#define FINDING_MAX_NODE_WRITES 16 /* ggml nodes listed as having written over a tensor */

/* A tensor as a report names it: its name, its bytes [lo, hi) (arena offsets) and the stack
 * of the call the report shows it at (its bind, or for a previous tenant its release). */
struct finding_tensor {
    const char *name;
    uint32_t stack;
    uint64_t lo, hi;
};

/* What was happening to the tensor when the finding was seen. */
enum finding_moment {
    MOMENT_READ,
    MOMENT_WRITE,
    MOMENT_RELEASE,
    MOMENT_ARENA_DESTROY,
    MOMENT_OP_END, /* checksum=all: an op's end verifies every live tensor */
};

/* A call a report names: an op (op NULL: a release or an arena destroy, not an op) and the
 * stack it was made at. */
struct finding_call {
    const char *op;
    uint32_t stack;
};

/* An op a report names with its stream. */
struct finding_op {
    struct finding_call call;
    int stream;
};

/* Bytes found where the sentinel was expected, from arena offset `offset` on. */
struct finding_bytes {
    uintptr_t arena_base;
    uint64_t offset;
    unsigned char found[FINDING_SHOWN_BYTES], expected[FINDING_SHOWN_BYTES];
    size_t n_shown;
};

/* An op of a ggml graph that wrote a tensor over bytes [lo, hi) of another. */
struct finding_node_write {
    int node;
    const char *op_desc; /* ggml's name of its op */
    const char *tensor;
    uint64_t lo, hi;
};

enum finding_variant {
    FINDING_USE_AFTER_RELEASE,
    FINDING_LIVE_CORRUPTION,
    FINDING_STALE_WRITE,
    FINDING_SLOT_OVERFLOW,
    FINDING_READ_BEFORE_WRITE,
    FINDING_UNORDERED_REUSE,
};

/* An op read or wrote a released tensor. */
struct use_after_release {
    struct finding_tensor root; /* the released storage root; stack: its bind */
    const char *arena;
    uint32_t release_stack;
    const char *view;           /* the view the op named; NULL when it named the root */
    bool root_rebound;          /* the view's root was released and bound again since the view was
                                   declared */
    enum finding_moment moment; /* MOMENT_READ or MOMENT_WRITE */
    struct finding_call op;
    /* The op was still in flight (on stream `stream`) when the root was released: nothing
     * ordered its end before the release. Otherwise it began after the release. */
    bool in_flight;
    int stream;
};

/* Why a live tensor's bytes changed. */
enum corruption_cause {
    CORRUPTION_OVERWRITTEN,       /* another tensor's declared write covered its bytes */
    CORRUPTION_CONSUMED_IN_PLACE, /* an op consumed it in place (its output took the bytes) */
    CORRUPTION_CHECKSUM,          /* its checksum changed with no write of its own */
    CORRUPTION_GRAPH_CHECKSUM,    /* the same, in a ggml graph computed node by node */
};

/* A live tensor's bytes changed with no write of its own. */
struct live_corruption {
    enum corruption_cause cause;
    struct finding_tensor victim; /* stack: its bind */
    const char *arena;
    enum finding_moment moment; /* what found it: a read, its release, its arena's destroy, the
                                   end of an op (MOMENT_OP_END) */
    struct finding_call by;     /* the op that read it (or whose end found it), or the release /
                                   destroy call */
    const char *via;            /* the view the op read it through, or NULL */
    struct finding_call last_writer; /* op NULL: not written by an op since its bind */
    /* CORRUPTION_OVERWRITTEN, CORRUPTION_CONSUMED_IN_PLACE */
    struct finding_tensor overwriter; /* the tensor written over it; stack: its bind */
    struct finding_call overwriting_op;
    /* CORRUPTION_CHECKSUM, CORRUPTION_GRAPH_CHECKSUM */
    uint64_t checksum_before, checksum_after;
    /* MOMENT_OP_END: the stream of the op `by` that ran when the bytes changed, and the other
     * ops in flight at its end, which may have written them too. */
    int by_stream;
    struct finding_op in_flight[FINDING_MAX_TENSORS];
    size_t n_in_flight;
    /* The engine's: the other live roots sharing its bytes. */
    struct finding_tensor sharers[FINDING_MAX_TENSORS];
    size_t n_sharers;
    /* CORRUPTION_GRAPH_CHECKSUM */
    struct {
        const char *name; /* how reports name the graph */
        int n_nodes;
        int reader_node;       /* the node about to read it; n_nodes: after the graph */
        bool hashed_at_inputs; /* hashed when the graph's inputs were set, not after a write */
        struct finding_node_write last_write; /* node < 0: none to name */
        struct finding_node_write overwrites[FINDING_MAX_NODE_WRITES];
        size_t n_overwrites, n_overwrites_total;
    } graph;
};

/* Released bytes changed before their next tenant was bound. */
struct stale_write {
    struct finding_tensor new_tenant; /* stack: its bind */
    const char *arena;
    struct finding_bytes bytes;
    /* The released tenants of the changed bytes; name NULL: bytes [lo, hi) had no tenant since
     * the arena was created. stack: the release. */
    struct finding_tensor previous[FINDING_MAX_TENSORS];
    size_t n_previous;
};

/* An op wrote past the end of a tensor's planned bytes. */
struct slot_overflow {
    struct finding_tensor tensor; /* stack: its bind */
    const char *arena;
    struct finding_call writer;
    struct finding_bytes bytes; /* offset: the first changed byte past the end */
};

/* An op declared a read of bytes no op declared a write to since the tensor was bound (and it
 * is not an input): they still hold the previous tenant's bytes or the sentinel. */
struct read_before_write {
    struct finding_tensor root; /* the storage root read; stack: its bind */
    const char *arena;
    const char *view;       /* the view the op named; NULL when it named the root */
    uint64_t lo, hi;        /* the bytes read (arena offsets) */
    struct finding_call op; /* the reading op */
};

/* Bytes of a released tenant were bound to a new tensor while an op that accesses the old
 * tenant was still in flight: no event or sync ordered the op's end before the reuse (the
 * checker's unordered-reuse, seen as it happens). */
struct unordered_reuse {
    struct finding_tensor old_tenant; /* the root the op accesses; bytes: those it accesses;
                                         stack: its bind */
    uint32_t old_release_stack;       /* 0 when not known */
    struct finding_tensor new_tenant; /* stack: its bind */
    const char *arena;
    const char *view;           /* the view the op named; NULL when it named the root */
    enum finding_moment moment; /* MOMENT_READ or MOMENT_WRITE */
    struct finding_call op;     /* the op in flight */
    int stream;                 /* its stream */
};

struct finding {
    struct finding *next; /* the engine's list of findings to report */
    bool repeated;        /* reported before by this process: not again */
    enum finding_variant variant;
    union {
        struct use_after_release use_after_release;
        struct live_corruption live_corruption;
        struct stale_write stale_write;
        struct slot_overflow slot_overflow;
        struct read_before_write read_before_write;
        struct unordered_reuse unordered_reuse;
    };
};

/* The constructors: each sets the variant and its members given here, zeroes the others
 * (the caller fills the optional ones through the pointer returned), and leaves next and
 * repeated alone. */
struct use_after_release *finding_use_after_release(struct finding *f, struct finding_tensor root,
                                                    const char *arena, uint32_t release_stack,
                                                    enum finding_moment moment,
                                                    struct finding_call op);
struct live_corruption *finding_live_corruption(struct finding *f, enum corruption_cause cause,
                                                struct finding_tensor victim, const char *arena,
                                                enum finding_moment moment, struct finding_call by);
struct stale_write *finding_stale_write(struct finding *f, struct finding_tensor new_tenant,
                                        const char *arena, const struct finding_bytes *bytes);
struct slot_overflow *finding_slot_overflow(struct finding *f, struct finding_tensor tensor,
                                            const char *arena, struct finding_call writer,
                                            const struct finding_bytes *bytes);
struct read_before_write *finding_read_before_write(struct finding *f, struct finding_tensor root,
                                                    const char *arena, struct finding_call op);
struct unordered_reuse *finding_unordered_reuse(struct finding *f, struct finding_tensor old_tenant,
                                                struct finding_tensor new_tenant, const char *arena,
                                                enum finding_moment moment, struct finding_call op,
                                                int stream);

/* Writes f's report (runtime_report.h), symbolized. Call with no lock held. */
void finding_report(const struct finding *f);

#endif
