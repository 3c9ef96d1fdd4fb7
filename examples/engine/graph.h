/* graph.h - the engine's graph: tensors (storage roots and views), ops in execution order
 * (compute kernels and the stream synchronisation ops of the pool executor), the loop and the
 * branch, and the bug a run plants. Everything is built once by graph_build() for one executor
 * mode; the planner annotates the roots, the executors run the ops. */
#ifndef ENGINE_GRAPH_H
#define ENGINE_GRAPH_H

#include <stddef.h>

enum { MAX_TENSORS = 96, MAX_OPS = 96, MAX_IO = 6, MAX_DIMS = 4, NAME_LEN = 24 };

/* Model shape: a tiny transformer block (sequence and hidden sizes are set at build time;
 * two heads, an MLP twice as wide as the hidden size, the block run twice). */
enum { HEADS = 2, NCONF = 8, LOOP_ITERS = 2, DEFAULT_SEQ = 8, DEFAULT_HID = 32 };

/* The bug a run plants (--inject). */
enum bug {
    BUG_NONE,
    BUG_LIFETIME_SHORT,
    BUG_VIEW_UNTRACKED,
    BUG_INPLACE_STILL_READ,
    BUG_BRANCH_ONE_ARM,
    BUG_LOOP_CARRIED,
    BUG_MISSING_EVENT,
    BUG_OUTPUT_REUSED,
    BUG_STALE_ASYNC_WRITE,
    BUG_COUNT_
};

enum exec_mode { EXEC_SEQ, EXEC_POOL };

/* Arenas: constants, planned activations, kernel workspaces. */
enum { ARENA_WEIGHTS, ARENA_ACT, ARENA_WS, ARENA_COUNT };

/* Tensor flags (graph truth; the plan carries them whatever the planner assumed). */
enum { TF_INPUT = 1u << 0, TF_OUTPUT = 1u << 1, TF_CONST = TF_INPUT | TF_OUTPUT };

struct tensor {
    char name[NAME_LEN];
    int ndim;
    int shape[MAX_DIMS];
    size_t bytes;
    int view_of;        /* base tensor for a view, -1 for a storage root */
    size_t view_offset; /* bytes into the base */
    int arena;          /* roots only */
    unsigned flags;     /* TF_* */
    /* Planner results (roots). */
    size_t offset;
    int first, last; /* the lifetime the planner assumed, in steps (-1 input, n output) */
    int free_step;   /* step after which the root is released (n: never, by the engine) */
    int inplace_of;  /* root whose bytes it takes over in place, -1 none */
    int inplace_op;  /* the op of that handover */
    int per_iter;    /* lives within one loop iteration: bound and released in each */
    int workspace;   /* a kernel workspace (host-managed under stale-async-write) */
};

enum op_kind {
    K_ADD,       /* y = a + alpha * b (b broadcast over rows when smaller) */
    K_MATMUL,    /* y[M,N] = x[M,K] w[K,N] */
    K_QKV,       /* qkv[3,heads,S,D] = x[S,H] w[H,3H] (head-major layout) */
    K_SCORES,    /* s[S,S] = q[S,D] k[S,D]^T / sqrt(D) */
    K_SOFTMAX,   /* rows of y = softmax(x); ws holds each row's max and sum */
    K_LAYERNORM, /* y = (x - mean) / sqrt(var + eps) * g + b */
    K_GELU,      /* y = gelu(x) */
    K_RELU,      /* y = relu(x) */
    K_CONCAT,    /* writes[i] = reads[i], or writes[0] = reads[0] ++ reads[1] ++ ... */
    K_OPROJ,     /* y[S,H] = cat[heads,S,D] w[H,H] (cat read head-major) */
    K_SYNC_RECORD,
    K_SYNC_WAIT,
    K_SYNC_ALL,
};

/* Branch arms of the one `if` (use_bias). */
enum { ARM_NONE = -1, ARM_BIAS = 0, ARM_PROJ = 1 };

struct op {
    char name[NAME_LEN];
    enum op_kind kind;
    int reads[MAX_IO], n_reads;
    int writes[MAX_IO], n_writes;
    int inplace[2][2], n_inplace; /* [output, input] tensor pairs its schema allows */
    float alpha;
    int stream;  /* 0 main, 1 s1 */
    int arm;     /* ARM_* */
    int event;   /* sync ops: event id (1-based) */
    int dropped; /* missing-event: the executor leaves this sync op out (and the plan too) */
    /* Where the model declares it (graph.c), which reports name: every op runs through the
     * same executor line, so its stack alone does not tell the ops apart. */
    const char *file, *func;
    int line;
};

struct graph {
    enum exec_mode mode;
    enum bug bug;
    int use_bias; /* the arm the run takes */
    int seq, hid, hdim, ffn;
    struct tensor t[MAX_TENSORS];
    int nt;
    struct op ops[MAX_OPS];
    int nops;
    int loop_begin, loop_end; /* body steps [begin, end] */
    size_t arena_bytes[ARENA_COUNT];
};

extern const char *const bug_names[BUG_COUNT_];
extern const char *const event_names[];
extern const char *const arena_names[ARENA_COUNT];

/* Builds the model's graph for `mode` (the pool mode adds streams and events), `seq` tokens
 * of `hid` features (hid even). */
void graph_build(struct graph *g, enum exec_mode mode, enum bug bug, int use_bias, int seq,
                 int hid);
/* The tensor named `name`, -1 when none. */
int graph_find(const struct graph *g, const char *name);
/* The storage root of tensor `t` (itself for a root). */
int graph_root(const struct graph *g, int t);
/* 1 when step `s` is in the loop body. */
int graph_in_loop(const struct graph *g, int s);
/* 1 when op `s` is a synchronisation op. */
int graph_is_sync(const struct op *o);
/* The executor's walk: every op instance in run order (the loop body LOOP_ITERS times).
 * Fills steps[i], iters[i]; returns the count. */
int graph_walk(const struct graph *g, int *steps, int *iters, int max);
/* Number of elements of tensor `t`. */
size_t graph_elems(const struct tensor *t);

#endif
