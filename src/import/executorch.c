/* executorch: ExecuTorch programs (.pte) to finalized plans, one per method (mapping in
 * tlsan/executorch.h and docs/executorch.md).
 *
 * The file's framing (identifier, extended header, data segments) is checked here, the
 * FlatBuffer is verified and copied by executorch_fb.cc, and every index, enum and size of
 * the copy is checked below before it is used: the verifier guarantees only that the bytes
 * it read lie inside the file, not that they make sense. */
#include "core/error.h"
#include "import/executorch.h"
#include "import/executorch_fb.h"
#include "check/plan.h"
#include "import/plan_write.h"
#include "core/utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

/* FlatBuffers addresses a buffer with 32-bit signed offsets. */
#define MAX_FLATBUFFER_BYTES 0x7FFFFFFFu
/* An op in more forward jumps than this is refused: real programs nest a few levels, and
 * the cap keeps a hostile program's branch lists linear in its size. */
#define MAX_JUMP_NESTING 64
/* The tensors one value may hold after moves on different branch arms. */
#define MAX_SOURCES 8
/* Accesses one method may expand to (tensor lists count each member at each use): real
 * programs have thousands; the cap keeps a hostile program's import time bounded. */
#define MAX_ACCESSES (1u << 26)

/* ---- the file's framing ---- */

static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const uint8_t *b)
{
    return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32;
}

/* The extended header ExecuTorch writes after the root offset and identifier when the
 * program has data segments: "eh00", its length, the FlatBuffer's size and where the
 * segments start. */
typedef struct framing {
    bool has_header;
    uint64_t program_bytes, segment_base;
} framing;

static tlsan_status read_framing(const uint8_t *b, size_t len, framing *fr, tlsan_error *err)
{
    memset(fr, 0, sizeof *fr);
    fr->program_bytes = len;
    if (len < 8)
        return error_failf(err, "",
                           "not an ExecuTorch program: %zu bytes, too short for a "
                           "FlatBuffer (at least 8)",
                           len);
    if (memcmp(b + 4, "ET12", 4) != 0)
        return error_failf(err, "",
                           "not an ExecuTorch program: the FlatBuffer file identifier (bytes "
                           "4-7) is not \"ET12\"");
    if (len < 12 || memcmp(b + 8, "eh00", 4) != 0)
        return TLSAN_OK;
    if (len < 32)
        return error_failf(err, "extended header",
                           "truncated: the file ends inside the extended header (%zu bytes)", len);
    uint32_t header_len = le32(b + 12);
    if (header_len < 24 || header_len > len - 8)
        return error_failf(err, "extended header",
                           "damaged: its length %" PRIu32 " is not between 24 and the %zu "
                           "bytes after the identifier",
                           header_len, len - 8);
    fr->has_header = true;
    fr->program_bytes = le64(b + 16);
    fr->segment_base = le64(b + 24);
    if (fr->program_bytes > len)
        return error_failf(err, "extended header",
                           "truncated: the program's FlatBuffer is %" PRIu64
                           " bytes, the file has %zu",
                           fr->program_bytes, len);
    if (fr->program_bytes < 8 + (uint64_t)header_len)
        return error_failf(err, "extended header",
                           "damaged: the program size %" PRIu64 " is smaller than the header",
                           fr->program_bytes);
    return TLSAN_OK;
}

/* Segments are read by the runtime at load time; one past the end means a truncated file. */
static tlsan_status check_segments(const et_program *p, const framing *fr, size_t len,
                                   tlsan_error *err)
{
    if (!fr->has_header)
        return TLSAN_OK;
    for (size_t i = 0; i < p->n_segments; i++) {
        uint64_t end = p->segment_ends[i];
        if (end > UINT64_MAX - fr->segment_base || fr->segment_base + end > len)
            return error_failf(
                err, "segments",
                "truncated: data segment %zu ends at byte %s%" PRIu64 " (segment base %" PRIu64
                " + %" PRIu64 "), past the end of the file (%zu bytes)",
                i, end > UINT64_MAX - fr->segment_base ? "> " : "",
                end > UINT64_MAX - fr->segment_base ? UINT64_MAX : fr->segment_base + end,
                fr->segment_base, end, len);
    }
    return TLSAN_OK;
}

/* ---- scalar types ---- */

typedef struct scalar_info {
    const char *name;
    unsigned bytes; /* ExecuTorch's elementSize(); 0: not a type the runtime has */
    tlsan_dtype dtype;
} scalar_info;

/* Indexed by the format's ScalarType values. The packed 4- and 2-bit types take one byte per
 * element in ExecuTorch's accounting, as do the float8 types. */
static const scalar_info scalar_types[] = {
    [0] = {"BYTE", 1, TLSAN_DTYPE_U8},
    [1] = {"CHAR", 1, TLSAN_DTYPE_I8},
    [2] = {"SHORT", 2, TLSAN_DTYPE_I16},
    [3] = {"INT", 4, TLSAN_DTYPE_I32},
    [4] = {"LONG", 8, TLSAN_DTYPE_I64},
    [5] = {"HALF", 2, TLSAN_DTYPE_F16},
    [6] = {"FLOAT", 4, TLSAN_DTYPE_F32},
    [7] = {"DOUBLE", 8, TLSAN_DTYPE_F64},
    [11] = {"BOOL", 1, TLSAN_DTYPE_BOOL},
    [12] = {"QINT8", 1, TLSAN_DTYPE_I8},
    [13] = {"QUINT8", 1, TLSAN_DTYPE_U8},
    [14] = {"QINT32", 4, TLSAN_DTYPE_I32},
    [15] = {"BFLOAT16", 2, TLSAN_DTYPE_BF16},
    [16] = {"QUINT4X2", 1, TLSAN_DTYPE_U8},
    [17] = {"QUINT2X4", 1, TLSAN_DTYPE_U8},
    [22] = {"BITS16", 2, TLSAN_DTYPE_U16},
    [23] = {"FLOAT8E5M2", 1, TLSAN_DTYPE_F8},
    [24] = {"FLOAT8E4M3FN", 1, TLSAN_DTYPE_F8},
    [25] = {"FLOAT8E5M2FNUZ", 1, TLSAN_DTYPE_F8},
    [26] = {"FLOAT8E4M3FNUZ", 1, TLSAN_DTYPE_F8},
    [27] = {"UINT16", 2, TLSAN_DTYPE_U16},
    [28] = {"UINT32", 4, TLSAN_DTYPE_U32},
    [29] = {"UINT64", 8, TLSAN_DTYPE_U64},
};

static const scalar_info *scalar_of(int8_t t)
{
    if (t < 0 || (size_t)t >= sizeof scalar_types / sizeof scalar_types[0] ||
        !scalar_types[t].bytes)
        return NULL;
    return &scalar_types[t];
}

/* ---- one method ---- */

enum { ROLE_NONE = 0, ROLE_READ = 1, ROLE_WRITE = 2 };

typedef struct method_ctx {
    const et_program *p;
    const et_method *m;
    const char *prefix; /* "execution_plan[I]" */
    const et_value *values;
    size_t n_values;
    char (*names)[24]; /* "v<INDEX>" per value */
    uint64_t *bytes;   /* per planned tensor value */
    /* What each value holds: itself at first; after a move, the move source's contents
     * (and, after a move that runs only on some paths, its own too). */
    size_t (*alias)[MAX_SOURCES];
    uint8_t *n_alias;
    bool *has_value;  /* per value: holds data when the current instruction runs */
    bool *written;    /* per value: some instruction may write it (for constant jumps) */
    size_t *first_at; /* scratch per value: first position in an instruction's args */
    uint8_t *role;    /* scratch per value: ROLE_* bits within the current instruction */
    size_t *touched;  /* the values whose role is set, to reset them */
    size_t n_touched;
    uint64_t *shape; /* scratch for one tensor's extents */
    /* Placements: planned tensors with equal memory id, offset and bytes form a group;
     * latest[group] is the value its bytes were last written through. */
    size_t *group, *latest;
    size_t *view_of; /* per value: the tensor it is an elided view of, SIZE_MAX for none */
    bool *is_ret;    /* scratch per value: a return of the current kernel call */
    size_t work;     /* accesses expanded so far, against MAX_ACCESSES */
} method_ctx;

/* Op and if names carry their chain only when the method has several. */
static bool chain_prefixed(const method_ctx *c)
{
    return c->m->n_chains > 1;
}

static const et_tensor *tensor_of(const method_ctx *c, size_t v)
{
    const et_value *val = &c->values[v];
    return val->type == ET_VAL_TENSOR ? &c->p->tensors[val->tensor] : NULL;
}

static bool is_planned(const method_ctx *c, size_t v)
{
    const et_tensor *t = tensor_of(c, v);
    return t && t->planned;
}

static tlsan_status check_text(const et_str *s, bool required, tlsan_error *err, const char *where,
                               const char *what)
{
    if (!s->s || s->len == 0) {
        if (!required)
            return TLSAN_OK;
        return error_failf(err, where, "%s is missing or empty", what);
    }
    if (!utf8_valid_text(s->s, s->len))
        return error_failf(err, where, "%s is not UTF-8 text (or holds a NUL)", what);
    return TLSAN_OK;
}

/* A value index from the file (any int64) that must name one of the method's values. */
static tlsan_status check_index(const method_ctx *c, int64_t v, tlsan_error *err, const char *where)
{
    if (v < 0 || (uint64_t)v >= c->n_values)
        return error_failf(err, where, "value index %" PRId64 " is out of range (%zu values)", v,
                           c->n_values);
    return TLSAN_OK;
}

/* Every value: a known type with its table, lists naming existing values, and for each
 * planned tensor a known scalar type, sizes that count in bytes and a planned buffer. */
static tlsan_status check_values(method_ctx *c, size_t n_buffers, tlsan_error *err)
{
    char where[200];
    for (size_t v = 0; v < c->n_values; v++) {
        const et_value *val = &c->values[v];
        snprintf(where, sizeof where, "%s.values[%zu]", c->prefix, v);
        if (val->type == ET_VAL_NONE || val->type > ET_VAL_OPTIONAL_TENSOR_LIST)
            return error_failf(err, where, "unknown value type %u (KernelTypes is 1..11)",
                               (unsigned)val->type);
        if (!val->has_payload)
            return error_failf(err, where, "the value's table is missing");
        if (val->type == ET_VAL_TENSOR_LIST || val->type == ET_VAL_OPTIONAL_TENSOR_LIST) {
            bool optional = val->type == ET_VAL_OPTIONAL_TENSOR_LIST;
            for (size_t k = 0; k < val->items.n; k++) {
                int64_t item = c->p->ints[val->items.start + k];
                char sub[240];
                snprintf(sub, sizeof sub, "%s.val.items[%zu]", where, k);
                if (optional && item == -1)
                    continue; /* None */
                tlsan_status st = check_index(c, item, err, sub);
                if (st != TLSAN_OK)
                    return st;
                uint8_t t = c->values[item].type;
                if (t != ET_VAL_TENSOR && !(optional && t == ET_VAL_NULL))
                    return error_failf(err, sub,
                                       "value %" PRId64 " is not a tensor%s (a %s list holds "
                                       "tensors)",
                                       item, optional ? " or None" : "",
                                       optional ? "optional tensor" : "tensor");
            }
        }
        const et_tensor *t = tensor_of(c, v);
        if (!t || !t->planned)
            continue;
        const scalar_info *si = scalar_of(t->scalar_type);
        if (!si)
            return error_failf(err, where, "unknown scalar_type %d", (int)t->scalar_type);
        if (t->storage_offset != 0)
            return error_failf(err, where,
                               "storage_offset %" PRId32 " (the runtime supports only 0)",
                               t->storage_offset);
        uint64_t bytes = si->bytes;
        for (size_t k = 0; k < t->sizes.n; k++) {
            int64_t d = c->p->ints[t->sizes.start + k];
            if (d < 0)
                return error_failf(err, where, "sizes[%zu] is negative (%" PRId64 ")", k, d);
            if (d != 0 && bytes > (uint64_t)INT64_MAX / (uint64_t)d)
                return error_failf(err, where, "the tensor needs more than 2^63-1 bytes");
            bytes *= (uint64_t)d;
        }
        c->bytes[v] = bytes;
        snprintf(where, sizeof where, "%s.values[%zu].allocation_info", c->prefix, v);
        if (t->memory_id == 0 || t->memory_id >= n_buffers)
            return error_failf(err, where,
                               "memory_id %" PRIu32 " names no planned buffer (the method has "
                               "%zu: memory ids 1..%zu; 0 is reserved)",
                               t->memory_id, n_buffers ? n_buffers - 1 : 0,
                               n_buffers ? n_buffers - 1 : 0);
        if (t->offset > (uint64_t)INT64_MAX)
            return error_failf(err, where, "the offset %" PRIu64 " exceeds 2^63-1", t->offset);
    }
    return TLSAN_OK;
}

/* "host" for CPU, "cuda:I" for CUDA; NULL for a device type the schema does not have. */
static const char *memory_kind(int8_t type, int8_t index, char *buf, size_t buf_bytes)
{
    if (type == 0)
        return "host";
    if (type == 1 && index >= 0) {
        snprintf(buf, buf_bytes, "cuda:%d", (int)index);
        return buf;
    }
    return NULL;
}

/* A growable list of value indices (one op's reads or writes). */
typedef struct vlist {
    size_t *v;
    size_t n, cap;
} vlist;

static int vlist_push(vlist *l, size_t v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        size_t *g = realloc(l->v, cap * sizeof *g);
        if (!g)
            return -1;
        l->v = g;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

/* Gives planned tensor t (a value's content) the role bits `role`. */
static void mark_tensor(method_ctx *c, size_t t, uint8_t role)
{
    c->work++;
    if (!is_planned(c, t))
        return;
    if (!c->role[t])
        c->touched[c->n_touched++] = t;
    c->role[t] |= role;
}

/* Gives the planned tensors value v may hold (itself, a move's sources, or a list's
 * members) the role bits `role`. A list's members are looked up when it is used, as the
 * runtime's boxed lists do; a member holding a list then (which the runtime would refuse)
 * stands for nothing. */
static void mark(method_ctx *c, size_t v, uint8_t role)
{
    for (size_t i = 0; i < c->n_alias[v]; i++) {
        const et_value *val = &c->values[c->alias[v][i]];
        if (val->type != ET_VAL_TENSOR_LIST && val->type != ET_VAL_OPTIONAL_TENSOR_LIST) {
            mark_tensor(c, c->alias[v][i], role);
            continue;
        }
        for (size_t k = 0; k < val->items.n && c->work <= MAX_ACCESSES; k++) {
            int64_t item = c->p->ints[val->items.start + k];
            for (size_t j = 0; item >= 0 && j < c->n_alias[item]; j++)
                mark_tensor(c, c->alias[item][j], role);
        }
    }
}

/* Whether value v holds data now: every planned tensor it may hold does. */
static bool holds_value(method_ctx *c, size_t v)
{
    for (size_t i = 0; i < c->n_alias[v]; i++) {
        size_t t = c->alias[v][i];
        const et_value *val = &c->values[t];
        if (val->type != ET_VAL_TENSOR_LIST && val->type != ET_VAL_OPTIONAL_TENSOR_LIST) {
            if (!c->has_value[t])
                return false;
            continue;
        }
        for (size_t k = 0; k < val->items.n && c->work <= MAX_ACCESSES; k++, c->work++) {
            int64_t item = c->p->ints[val->items.start + k];
            for (size_t j = 0; item >= 0 && j < c->n_alias[item]; j++)
                if (!c->has_value[c->alias[item][j]])
                    return false;
        }
    }
    return true;
}

/* A MoveCall copies the EValue: `to` holds what `from` holds. One that runs on every path
 * replaces what `to` held; one in a branch arm or loop adds to it (on other paths `to` keeps
 * its old contents). Returns false when a value would hold more than MAX_SOURCES tensors. */
static bool move_value(method_ctx *c, size_t from, size_t to, bool everywhere)
{
    size_t merged[2 * MAX_SOURCES], n = 0;
    for (size_t i = 0; i < c->n_alias[from]; i++)
        merged[n++] = c->alias[from][i];
    for (size_t i = 0; !everywhere && i < c->n_alias[to]; i++) {
        bool dup = false;
        for (size_t k = 0; k < n && !dup; k++)
            dup = merged[k] == c->alias[to][i];
        if (!dup)
            merged[n++] = c->alias[to][i];
    }
    if (n > MAX_SOURCES)
        return false;
    memcpy(c->alias[to], merged, n * sizeof *merged);
    c->n_alias[to] = (uint8_t)n;
    return true;
}

/* The tensor a value holds when it holds exactly one, else SIZE_MAX. */
static size_t content_of(const method_ctx *c, size_t v)
{
    return c->n_alias[v] == 1 ? c->alias[v][0] : SIZE_MAX;
}

/* The role of an argument that is no output of its call: read when it holds data. One that
 * holds none is either a view whose op the exporter elided (ExecuTorch gives a static view
 * its base's placement and runs no instruction for it: the argument is a tensor of the same
 * memory id, offset, bytes and scalar type as the tensor last written there, and reads what
 * that one wrote), or scratch memory the call writes (cortex_m kernels take scratch tensors
 * of bytes, often empty ones). */
static uint8_t unset_arg_role(method_ctx *c, size_t v)
{
    if (holds_value(c, v))
        return ROLE_READ;
    size_t t = content_of(c, v);
    if (t != SIZE_MAX && is_planned(c, t) &&
        c->bytes[t] > 0) { /* an empty tensor shows no data: scratch */
        size_t w = c->latest[c->group[t]];
        if (w != SIZE_MAX && w != t &&
            tensor_of(c, w)->scalar_type == tensor_of(c, t)->scalar_type) {
            c->view_of[t] = w;
            c->has_value[t] = true;
            return ROLE_READ;
        }
    }
    return ROLE_WRITE;
}

/* The roles of a kernel call's arguments. ExecuTorch's emitter appends the call's return
 * values to `args`; an out-variant returns its out arguments, so the returns are the longest
 * tail of `args` whose every value also occurs before that tail. A call whose last argument
 * occurs nowhere else returns that one value. Returns are written, other arguments read; an
 * argument that is no return and holds no value yet is scratch memory the kernel writes. */
static void kernel_roles(method_ctx *c, const int64_t *args, size_t n)
{
    if (n == 0)
        return;
    for (size_t k = n; k-- > 0;)
        c->first_at[args[k]] = k;
    size_t r = 0, max_first = 0;
    while (r + 1 < n) {
        size_t first = c->first_at[args[n - 1 - r]];
        if (first > max_first)
            max_first = first;
        if (max_first >= n - 1 - r)
            break;
        r++;
    }
    if (r == 0)
        r = 1;
    for (size_t k = n - r; k < n; k++) {
        size_t v = (size_t)args[k], t = content_of(c, v);
        mark(c, v, ROLE_WRITE);
        c->is_ret[v] = true;
        if (t != SIZE_MAX)
            c->is_ret[t] = true;
    }
    for (size_t k = 0; k < n - r; k++) {
        size_t v = (size_t)args[k], t = content_of(c, v);
        if (!c->is_ret[v] && !(t != SIZE_MAX && c->is_ret[t]))
            mark(c, v, unset_arg_role(c, v));
    }
    for (size_t k = n - r; k < n; k++) {
        size_t v = (size_t)args[k], t = content_of(c, v);
        c->is_ret[v] = false;
        if (t != SIZE_MAX)
            c->is_ret[t] = false;
    }
}

/* A delegate is opaque: ExecuTorch passes it its inputs, then its outputs. The outputs are
 * the trailing arguments that hold no data yet; the other arguments are read (one that
 * holds no data is an elided view or scratch, as for kernels). */
static void delegate_roles(method_ctx *c, const int64_t *args, size_t n)
{
    size_t outputs = n;
    while (outputs > 0 && !holds_value(c, (size_t)args[outputs - 1]))
        outputs--;
    for (size_t k = 0; k < n; k++)
        mark(c, (size_t)args[k], k >= outputs ? ROLE_WRITE : unset_arg_role(c, (size_t)args[k]));
}

/* ---- control flow ---- */

/* Per op: the forward jumps whose skipped ops it is in, and the loop it belongs to. */
typedef struct flow {
    size_t *cond_start, *n_conds; /* per op, into conds */
    tlsan_cond *conds;
    char (*if_names)[64]; /* per op that is a conditional jump: its if's name */
    char (*loop_names)[64];
    ptrdiff_t *loop_of; /* per op: index into loop_names, -1 for none */
    bool *ends_then;    /* per op: a conditional forward jump lands right after it */
} flow;

static void flow_free(flow *f)
{
    free(f->cond_start);
    free(f->n_conds);
    free(f->conds);
    free(f->if_names);
    free(f->loop_names);
    free(f->loop_of);
    free(f->ends_then);
}

typedef struct interval {
    size_t start, end; /* ops start..end, global steps */
} interval;

static int cmp_interval(const void *a, const void *b)
{
    const interval *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* A jump whose condition is a Bool false that nothing writes always jumps (the emitter's
 * "goto" at the end of a then-branch). */
static bool always_jumps(const method_ctx *c, size_t cond)
{
    const et_value *v = &c->values[cond];
    return v->type == ET_VAL_BOOL && !v->bool_val && !c->written[cond];
}

static tlsan_status build_flow(method_ctx *c, size_t n_ops, flow *f, tlsan_error *err)
{
    memset(f, 0, sizeof *f);
    f->cond_start = calloc(n_ops + 1, sizeof *f->cond_start);
    f->n_conds = calloc(n_ops + 1, sizeof *f->n_conds);
    f->if_names = calloc(n_ops + 1, sizeof *f->if_names);
    f->loop_names = calloc(n_ops + 1, sizeof *f->loop_names);
    f->loop_of = malloc((n_ops + 1) * sizeof *f->loop_of);
    f->ends_then = calloc(n_ops + 1, sizeof *f->ends_then);
    interval *loops = malloc((n_ops + 1) * sizeof *loops);
    tlsan_status st = TLSAN_OK;
    if (!f->cond_start || !f->n_conds || !f->if_names || !f->loop_names || !f->loop_of ||
        !f->ends_then || !loops) {
        st = error_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n_ops; i++)
        f->loop_of[i] = -1;
    for (size_t ch = 0, base = 0; ch < c->m->n_chains; ch++) {
        const et_chain *chain = &c->p->chains[c->m->chain_start + ch];
        for (size_t q = 0; q < chain->n_instr; q++) {
            const et_instr *o = &c->p->instrs[chain->instr_start + q];
            size_t d = (size_t)o->b;
            if (o->type == ET_INSTR_JUMP_FALSE && d > q + 1 && !always_jumps(c, (size_t)o->a))
                f->ends_then[base + d - 1] = true;
        }
        base += chain->n_instr;
    }
    /* Pass 1 counts the conditions per op (and refuses deep nesting), pass 2 fills them. */
    size_t n_loops = 0, total = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t base = 0;
        for (size_t ch = 0; ch < c->m->n_chains; ch++) {
            const et_chain *chain = &c->p->chains[c->m->chain_start + ch];
            for (size_t pc = 0; pc < chain->n_instr; pc++) {
                const et_instr *in = &c->p->instrs[chain->instr_start + pc];
                if (in->type != ET_INSTR_JUMP_FALSE)
                    continue;
                size_t dest = (size_t)in->b, at = base + pc;
                if (dest <= pc) {
                    if (pass == 0)
                        loops[n_loops++] = (interval){base + dest, at};
                    continue;
                }
                bool uncond = always_jumps(c, (size_t)in->a);
                /* An unconditional jump that ends the "true" ops of a conditional one is
                 * that if's "false" arm; it is handled with the conditional jump. */
                size_t from = pc + 1, to = dest, else_to = dest;
                if (uncond) {
                    if (f->ends_then[at])
                        continue;
                } else if (dest > 0 && dest - 1 > pc) {
                    const et_instr *last = &c->p->instrs[chain->instr_start + dest - 1];
                    if (last->type == ET_INSTR_JUMP_FALSE && (size_t)last->b > dest &&
                        always_jumps(c, (size_t)last->a))
                        else_to = (size_t)last->b;
                }
                if (pass == 1) {
                    if (chain_prefixed(c))
                        snprintf(f->if_names[at], sizeof f->if_names[at], "c%zu.jump_false@%zu", ch,
                                 pc);
                    else
                        snprintf(f->if_names[at], sizeof f->if_names[at], "jump_false@%zu", pc);
                }
                for (size_t q = from; q < else_to && q < chain->n_instr; q++) {
                    size_t op = base + q;
                    if (pass == 0) {
                        if (++f->n_conds[op] > MAX_JUMP_NESTING) {
                            char where[200];
                            snprintf(where, sizeof where, "%s.chains[%zu].instructions[%zu]",
                                     c->prefix, ch, q);
                            st = error_failf(err, where,
                                             "the instruction is skipped by more than %d "
                                             "jumps",
                                             MAX_JUMP_NESTING);
                            goto out;
                        }
                        total++;
                    } else {
                        const char *arm = uncond ? "reached" : q < to ? "true" : "false";
                        f->conds[f->cond_start[op] + f->n_conds[op]++] =
                            (tlsan_cond){f->if_names[at], arm};
                    }
                }
            }
            base += chain->n_instr;
        }
        if (pass == 0) {
            f->conds = malloc((total ? total : 1) * sizeof *f->conds);
            if (!f->conds) {
                st = error_nomem(err);
                goto out;
            }
            size_t at = 0;
            for (size_t i = 0; i < n_ops; i++) {
                f->cond_start[i] = at;
                at += f->n_conds[i];
                f->n_conds[i] = 0;
            }
        }
    }
    /* Loops: backward jumps; overlapping bodies become one loop (the plan format's loops do
     * not nest, and a longer body only lengthens lifetimes). */
    qsort(loops, n_loops, sizeof *loops, cmp_interval);
    size_t n_merged = 0;
    for (size_t i = 0; i < n_loops;) {
        interval cur = loops[i++];
        while (i < n_loops && loops[i].start <= cur.end) {
            if (loops[i].end > cur.end)
                cur.end = loops[i].end;
            i++;
        }
        snprintf(f->loop_names[n_merged], sizeof f->loop_names[n_merged], "loop@%zu", cur.start);
        for (size_t op = cur.start; op <= cur.end; op++)
            f->loop_of[op] = (ptrdiff_t)n_merged;
        n_merged++;
    }
out:
    free(loops);
    return st;
}

/* ---- instructions ---- */

static tlsan_status check_instrs(method_ctx *c, tlsan_error *err)
{
    char where[200];
    for (size_t ch = 0; ch < c->m->n_chains; ch++) {
        const et_chain *chain = &c->p->chains[c->m->chain_start + ch];
        for (size_t pc = 0; pc < chain->n_instr; pc++) {
            const et_instr *in = &c->p->instrs[chain->instr_start + pc];
            snprintf(where, sizeof where, "%s.chains[%zu].instructions[%zu]", c->prefix, ch, pc);
            if (in->type == ET_INSTR_NONE || in->type > ET_INSTR_FREE)
                return error_failf(err, where,
                                   "unknown instruction type %u (InstructionArguments is 1..5)",
                                   (unsigned)in->type);
            if (!in->has_payload)
                return error_failf(err, where, "the instruction's table is missing");
            tlsan_status st = TLSAN_OK;
            char sub[240];
            switch (in->type) {
            case ET_INSTR_KERNEL:
                if (in->a < 0 || (size_t)in->a >= c->m->n_operators)
                    return error_failf(err, where,
                                       "op_index %" PRId32 " is out of range (%zu operators)",
                                       in->a, c->m->n_operators);
                __attribute__((fallthrough)); /* both calls have args */
            case ET_INSTR_DELEGATE:
                if (in->type == ET_INSTR_DELEGATE &&
                    (in->a < 0 || (size_t)in->a >= c->m->n_delegates))
                    return error_failf(err, where,
                                       "delegate_index %" PRId32 " is out of range (%zu "
                                       "delegates)",
                                       in->a, c->m->n_delegates);
                for (size_t k = 0; k < in->args.n && st == TLSAN_OK; k++) {
                    snprintf(sub, sizeof sub, "%s.instr_args.args[%zu]", where, k);
                    st = check_index(c, c->p->ints[in->args.start + k], err, sub);
                }
                break;
            case ET_INSTR_MOVE:
                snprintf(sub, sizeof sub, "%s.instr_args.move_from", where);
                if ((st = check_index(c, in->a, err, sub)) == TLSAN_OK) {
                    snprintf(sub, sizeof sub, "%s.instr_args.move_to", where);
                    st = check_index(c, in->b, err, sub);
                }
                break;
            case ET_INSTR_JUMP_FALSE:
                snprintf(sub, sizeof sub, "%s.instr_args.cond_value_index", where);
                st = check_index(c, in->a, err, sub);
                if (st == TLSAN_OK && (in->b < 0 || (size_t)in->b > chain->n_instr)) {
                    snprintf(sub, sizeof sub, "%s.instr_args.destination_instruction", where);
                    st = error_failf(err, sub,
                                     "destination %" PRId32 " is outside the chain (0..%zu)", in->b,
                                     chain->n_instr);
                }
                break;
            case ET_INSTR_FREE:
                snprintf(sub, sizeof sub, "%s.instr_args.value_index", where);
                st = check_index(c, in->a, err, sub);
                break;
            }
            if (st != TLSAN_OK)
                return st;
        }
    }
    return TLSAN_OK;
}

/* Values some instruction may write: kernel returns, delegate arguments, move targets. */
static void find_written(method_ctx *c)
{
    for (size_t i = 0; i < c->m->n_chains; i++) {
        const et_chain *chain = &c->p->chains[c->m->chain_start + i];
        for (size_t pc = 0; pc < chain->n_instr; pc++) {
            const et_instr *in = &c->p->instrs[chain->instr_start + pc];
            const int64_t *args = c->p->ints + in->args.start;
            if (in->type == ET_INSTR_KERNEL && in->args.n)
                c->written[args[in->args.n - 1]] = true;
            else if (in->type == ET_INSTR_DELEGATE)
                for (size_t k = 0; k < in->args.n; k++)
                    c->written[args[k]] = true;
            else if (in->type == ET_INSTR_MOVE)
                c->written[in->b] = true;
        }
    }
}

/* Flags a method input or output (a tensor, or each tensor of a list) with `flag`. */
static tlsan_status flag_io(method_ctx *c, et_span list, const char *key, unsigned *flags,
                            unsigned flag, tlsan_error *err)
{
    for (size_t k = 0; k < list.n; k++) {
        int64_t v = c->p->ints[list.start + k];
        char where[200];
        snprintf(where, sizeof where, "%s.%s[%zu]", c->prefix, key, k);
        tlsan_status st = check_index(c, v, err, where);
        if (st != TLSAN_OK)
            return st;
        const et_value *val = &c->values[v];
        if (val->type == ET_VAL_TENSOR_LIST || val->type == ET_VAL_OPTIONAL_TENSOR_LIST) {
            for (size_t j = 0; j < val->items.n; j++) {
                int64_t item = c->p->ints[val->items.start + j];
                if (item >= 0)
                    flags[item] |= flag;
            }
        } else {
            flags[v] |= flag;
        }
    }
    return TLSAN_OK;
}

/* The op's name: OPERATOR[.OVERLOAD]@I, delegate:ID@I, move@I, jump_false@I or free@I, with
 * "cK." in front when the method has several chains. Returns a malloc'd string. */
static char *op_name(const method_ctx *c, size_t ch, size_t pc, const et_instr *in)
{
    char chain[32] = "";
    if (chain_prefixed(c))
        snprintf(chain, sizeof chain, "c%zu.", ch);
    const char *kind = "", *a = "", *dot = "", *b = "";
    int alen = 0, blen = 0;
    switch (in->type) {
    case ET_INSTR_KERNEL: {
        const et_operator *o = &c->p->operators[c->m->operator_start + (size_t)in->a];
        a = o->name.s;
        alen = (int)o->name.len;
        if (o->overload.s && o->overload.len) {
            dot = ".";
            b = o->overload.s;
            blen = (int)o->overload.len;
        }
        break;
    }
    case ET_INSTR_DELEGATE: {
        const et_str *id = &c->p->delegate_ids[c->m->delegate_start + (size_t)in->a];
        kind = "delegate:";
        a = id->s ? id->s : "";
        alen = id->s ? (int)id->len : 0;
        break;
    }
    case ET_INSTR_MOVE:
        kind = "move";
        break;
    case ET_INSTR_JUMP_FALSE:
        kind = "jump_false";
        break;
    default:
        kind = "free";
        break;
    }
    int n = snprintf(NULL, 0, "%s%s%.*s%s%.*s@%zu", chain, kind, alen, a, dot, blen, b, pc);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        snprintf(s, (size_t)n + 1, "%s%s%.*s%s%.*s@%zu", chain, kind, alen, a, dot, blen, b, pc);
    return s;
}

static tlsan_status check_names(const method_ctx *c, tlsan_error *err)
{
    char where[200];
    for (size_t i = 0; i < c->m->n_operators; i++) {
        const et_operator *o = &c->p->operators[c->m->operator_start + i];
        snprintf(where, sizeof where, "%s.operators[%zu]", c->prefix, i);
        tlsan_status st = check_text(&o->name, true, err, where, "the operator's name");
        if (st == TLSAN_OK)
            st = check_text(&o->overload, false, err, where, "the operator's overload");
        if (st != TLSAN_OK)
            return st;
    }
    for (size_t i = 0; i < c->m->n_delegates; i++) {
        snprintf(where, sizeof where, "%s.delegates[%zu].id", c->prefix, i);
        tlsan_status st = check_text(&c->p->delegate_ids[c->m->delegate_start + i], false, err,
                                     where, "the delegate's id");
        if (st != TLSAN_OK)
            return st;
    }
    return TLSAN_OK;
}

/* The arenas: planned buffers 1..N-1 with their devices. */
static tlsan_status add_arenas(method_ctx *c, tlsan_plan *plan, const int64_t *sizes,
                               size_t n_buffers, char (*memory)[32], tlsan_error *err)
{
    for (size_t b = 0; b < n_buffers; b++)
        snprintf(memory[b], sizeof memory[b], "host");
    for (size_t i = 0; i < c->m->n_devices; i++) {
        const et_buffer_device *d = &c->p->devices[c->m->device_start + i];
        char where[200], kind[32];
        snprintf(where, sizeof where, "%s.non_const_buffer_device[%zu]", c->prefix, i);
        if (d->buffer_idx < 0 || (size_t)d->buffer_idx >= n_buffers)
            return error_failf(err, where,
                               "buffer_idx %" PRId32 " is out of range (%zu buffer sizes)",
                               d->buffer_idx, n_buffers);
        const char *m = memory_kind(d->device_type, d->device_index, kind, sizeof kind);
        if (!m)
            return error_failf(err, where, "unknown device (type %d, index %d)",
                               (int)d->device_type, (int)d->device_index);
        snprintf(memory[d->buffer_idx], sizeof memory[d->buffer_idx], "%s", m);
    }
    for (size_t b = 1; b < n_buffers; b++) {
        char name[32], where[200];
        snprintf(name, sizeof name, "mem%zu", b);
        if (sizes[b] < 0) {
            snprintf(where, sizeof where, "%s.non_const_buffer_sizes[%zu]", c->prefix, b);
            return error_failf(err, where, "a buffer size is negative (%" PRId64 ")", sizes[b]);
        }
        tlsan_arena_desc a = {name, (uint64_t)sizes[b], 1, memory[b]};
        tlsan_status st = tlsan_plan_add_arena(plan, &a, err);
        if (st != TLSAN_OK)
            return st;
    }
    return TLSAN_OK;
}

/* A builder refusal can only come from something the checks above let through; it is
 * reported against the method, with the builder's own reason. */
static tlsan_status builder_failed(const method_ctx *c, tlsan_error *err, tlsan_status st)
{
    if (st == TLSAN_ERR_INVALID && err) {
        char what[sizeof err->what + sizeof err->where + 64];
        snprintf(what, sizeof what, "cannot be expressed as a plan: %s (%s)", err->what,
                 err->where);
        return error_failf(err, c->prefix, "%s", what);
    }
    return st;
}

static tlsan_status add_tensors(method_ctx *c, tlsan_plan *plan, const unsigned *flags,
                                tlsan_error *err)
{
    for (size_t v = 0; v < c->n_values; v++) {
        const et_tensor *t = tensor_of(c, v);
        if (!t || !t->planned)
            continue;
        char arena[32], kind[32];
        snprintf(arena, sizeof arena, "mem%" PRIu32, t->memory_id);
        for (size_t k = 0; k < t->sizes.n; k++)
            c->shape[k] = (uint64_t)c->p->ints[t->sizes.start + k];
        tlsan_tensor_desc d = {0};
        d.name = c->names[v];
        d.bytes = c->bytes[v];
        if (c->view_of[v] != SIZE_MAX) {
            d.view_of = c->names[c->view_of[v]];
        } else {
            d.arena = arena;
            d.offset_bytes = t->offset;
        }
        d.flags = flags[v];
        if (t->data_buffer_idx > 0)
            d.flags |= TLSAN_TENSOR_CONSTANT; /* a mutable buffer: its state outlives a run */
        d.dtype = scalar_of(t->scalar_type)->dtype;
        d.shape = c->shape;
        d.n_shape = t->sizes.n;
        if (t->has_device) {
            d.memory = memory_kind(t->device_type, t->device_index, kind, sizeof kind);
            if (!d.memory) {
                char where[200];
                snprintf(where, sizeof where, "%s.values[%zu].extra_tensor_info", c->prefix, v);
                return error_failf(err, where, "unknown device (type %d, index %d)",
                                   (int)t->device_type, (int)t->device_index);
            }
        }
        tlsan_status st = tlsan_plan_add_tensor(plan, &d, err);
        if (st != TLSAN_OK)
            return builder_failed(c, err, st);
    }
    return TLSAN_OK;
}

/* One op per instruction, in chain order. */
static tlsan_status add_ops(method_ctx *c, tlsan_plan *plan, const flow *f, tlsan_error *err)
{
    tlsan_status st = TLSAN_OK;
    vlist reads = {0}, writes = {0};
    const char **rnames = NULL, **wnames = NULL;
    size_t cap_names = 0;
    size_t step = 0;
    for (size_t ch = 0; ch < c->m->n_chains; ch++) {
        const et_chain *chain = &c->p->chains[c->m->chain_start + ch];
        for (size_t pc = 0; pc < chain->n_instr; pc++, step++) {
            const et_instr *in = &c->p->instrs[chain->instr_start + pc];
            const int64_t *args = c->p->ints + in->args.start;
            if (in->type == ET_INSTR_KERNEL)
                kernel_roles(c, args, in->args.n);
            else if (in->type == ET_INSTR_DELEGATE)
                delegate_roles(c, args, in->args.n);
            else if (in->type == ET_INSTR_MOVE || in->type == ET_INSTR_JUMP_FALSE)
                mark(c, (size_t)in->a, ROLE_READ);
            if (c->work > MAX_ACCESSES) {
                st = error_failf(err, c->prefix,
                                 "the method's instructions touch more than %u tensors in "
                                 "all (tensor lists counted at each use)",
                                 MAX_ACCESSES);
                goto out;
            }
            reads.n = writes.n = 0;
            for (size_t k = 0; k < c->n_touched; k++) {
                size_t v = c->touched[k];
                if ((c->role[v] & ROLE_READ) && vlist_push(&reads, v) != 0) {
                    st = error_nomem(err);
                    goto out;
                }
                if ((c->role[v] & ROLE_WRITE) && vlist_push(&writes, v) != 0) {
                    st = error_nomem(err);
                    goto out;
                }
                if (c->role[v] & ROLE_WRITE) {
                    c->has_value[v] = true;
                    c->latest[c->group[v]] = v;
                }
                c->role[v] = 0;
            }
            c->n_touched = 0;
            if (in->type == ET_INSTR_MOVE &&
                !move_value(c, (size_t)in->a, (size_t)in->b,
                            f->n_conds[step] == 0 && f->loop_of[step] < 0)) {
                char where[200];
                snprintf(where, sizeof where, "%s.chains[%zu].instructions[%zu]", c->prefix, ch,
                         pc);
                st = error_failf(err, where,
                                 "value %" PRId32 " would hold one of more than %d tensors "
                                 "(moves on different branch arms)",
                                 in->b, MAX_SOURCES);
                goto out;
            }
            size_t need = reads.n > writes.n ? reads.n : writes.n;
            if (need > cap_names) {
                const char **r = realloc(rnames, need * sizeof *r);
                if (r)
                    rnames = r;
                const char **w = r ? realloc(wnames, need * sizeof *w) : NULL;
                if (!r || !w) {
                    st = error_nomem(err);
                    goto out;
                }
                wnames = w;
                cap_names = need;
            }
            for (size_t k = 0; k < reads.n; k++)
                rnames[k] = c->names[reads.v[k]];
            for (size_t k = 0; k < writes.n; k++)
                wnames[k] = c->names[writes.v[k]];
            char *name = op_name(c, ch, pc, in);
            if (!name) {
                st = error_nomem(err);
                goto out;
            }
            tlsan_op_desc o = {0};
            o.name = name;
            o.reads = rnames;
            o.n_reads = reads.n;
            o.writes = wnames;
            o.n_writes = writes.n;
            o.branch = f->conds + f->cond_start[step];
            o.n_branch = f->n_conds[step];
            o.loop = f->loop_of[step] >= 0 ? f->loop_names[f->loop_of[step]] : NULL;
            st = tlsan_plan_add_op(plan, &o, err);
            free(name);
            if (st != TLSAN_OK) {
                st = builder_failed(c, err, st);
                goto out;
            }
        }
    }
out:
    free(reads.v);
    free(writes.v);
    free(rnames);
    free(wnames);
    return st;
}

static void method_ctx_free(method_ctx *c)
{
    free(c->names);
    free(c->bytes);
    free(c->alias);
    free(c->n_alias);
    free(c->has_value);
    free(c->written);
    free(c->first_at);
    free(c->role);
    free(c->touched);
    free(c->shape);
    free(c->group);
    free(c->latest);
    free(c->view_of);
    free(c->is_ret);
}

typedef struct placement {
    uint32_t memory_id;
    uint64_t offset, bytes;
    size_t value;
} placement;

static int cmp_placement(const void *a, const void *b)
{
    const placement *x = a, *y = b;
    if (x->memory_id != y->memory_id)
        return x->memory_id < y->memory_id ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* Groups the planned tensors by placement (c->group, c->latest). -1 when out of memory. */
static int group_placements(method_ctx *c)
{
    placement *pl = malloc((c->n_values ? c->n_values : 1) * sizeof *pl);
    if (!pl)
        return -1;
    size_t n = 0;
    for (size_t v = 0; v < c->n_values; v++) {
        c->latest[v] = SIZE_MAX;
        c->view_of[v] = SIZE_MAX;
        c->group[v] = v;
        const et_tensor *t = tensor_of(c, v);
        if (t && t->planned)
            pl[n++] = (placement){t->memory_id, t->offset, c->bytes[v], v};
    }
    qsort(pl, n, sizeof *pl, cmp_placement);
    for (size_t i = 0, g = 0; i < n; i++) {
        if (i > 0 && cmp_placement(&(placement){pl[i].memory_id, pl[i].offset, pl[i].bytes, 0},
                                   &(placement){pl[i - 1].memory_id, pl[i - 1].offset,
                                                pl[i - 1].bytes, 0}) != 0)
            g = i;
        c->group[pl[i].value] = pl[g].value;
    }
    free(pl);
    return 0;
}

/* Builds the plan of method `mi`, named "BASE:NAME" (NAME alone without a base). */
static tlsan_status build_method(const et_program *p, size_t mi, const char *base, tlsan_plan **out,
                                 tlsan_error *err)
{
    *out = NULL;
    const et_method *m = &p->methods[mi];
    char prefix[64];
    snprintf(prefix, sizeof prefix, "execution_plan[%zu]", mi);
    method_ctx c = {.p = p, .m = m, .prefix = prefix};
    c.values = p->values + m->value_start;
    c.n_values = m->n_values;
    size_t nv = c.n_values ? c.n_values : 1, max_rank = 1;
    for (size_t v = 0; v < c.n_values; v++) {
        const et_tensor *t = tensor_of(&c, v);
        if (t && t->sizes.n > max_rank)
            max_rank = t->sizes.n;
    }
    c.names = malloc(nv * sizeof *c.names);
    c.bytes = calloc(nv, sizeof *c.bytes);
    c.alias = malloc(nv * sizeof *c.alias);
    c.n_alias = malloc(nv * sizeof *c.n_alias);
    c.has_value = calloc(nv, sizeof *c.has_value);
    c.written = calloc(nv, sizeof *c.written);
    c.first_at = malloc(nv * sizeof *c.first_at);
    c.role = calloc(nv, sizeof *c.role);
    c.touched = malloc(nv * sizeof *c.touched);
    c.shape = malloc(max_rank * sizeof *c.shape);
    c.group = malloc(nv * sizeof *c.group);
    c.latest = malloc(nv * sizeof *c.latest);
    c.view_of = malloc(nv * sizeof *c.view_of);
    c.is_ret = calloc(nv, sizeof *c.is_ret);
    const int64_t *sizes = p->ints + m->buffer_sizes.start;
    size_t n_buffers = m->buffer_sizes.n;
    unsigned *flags = calloc(nv, sizeof *flags);
    char(*memory)[32] = calloc(n_buffers ? n_buffers : 1, sizeof *memory);
    flow f = {0};
    tlsan_plan *plan = tlsan_plan_create();
    char *plan_name = NULL;
    tlsan_status st = TLSAN_OK;
    if (!c.names || !c.bytes || !c.alias || !c.n_alias || !c.has_value || !c.written ||
        !c.first_at || !c.role || !c.touched || !c.shape || !c.group || !c.latest || !c.view_of ||
        !c.is_ret || !flags || !memory || !plan) {
        st = error_nomem(err);
        goto out;
    }
    for (size_t v = 0; v < c.n_values; v++) {
        snprintf(c.names[v], sizeof c.names[v], "v%zu", v);
        c.alias[v][0] = v;
        c.n_alias[v] = 1;
    }
    if ((st = check_values(&c, n_buffers, err)) || (st = check_instrs(&c, err)) ||
        (st = check_names(&c, err)) ||
        (st = flag_io(&c, m->inputs, "inputs", flags, TLSAN_TENSOR_INPUT, err)) ||
        (st = flag_io(&c, m->outputs, "outputs", flags, TLSAN_TENSOR_OUTPUT, err)))
        goto out;
    /* What holds data before the first instruction: every value that is not a tensor,
     * tensors with data in the file (constants, mutable buffers), and the method's inputs. */
    for (size_t v = 0; v < c.n_values; v++) {
        const et_tensor *t = tensor_of(&c, v);
        c.has_value[v] =
            !t || !t->planned || t->data_buffer_idx > 0 || (flags[v] & TLSAN_TENSOR_INPUT);
    }
    find_written(&c);
    if (group_placements(&c) != 0) {
        st = error_nomem(err);
        goto out;
    }
    for (size_t v = 0; v < c.n_values; v++)
        if (c.has_value[v] && is_planned(&c, v))
            c.latest[c.group[v]] = v;
    size_t n_ops = 0;
    for (size_t ch = 0; ch < m->n_chains; ch++)
        n_ops += p->chains[m->chain_start + ch].n_instr;
    if ((st = build_flow(&c, n_ops, &f, err)))
        goto out;
    const char *method = m->name.s;
    size_t name_len = (base ? strlen(base) + 1 : 0) + m->name.len + 1;
    if (!(plan_name = malloc(name_len))) {
        st = error_nomem(err);
        goto out;
    }
    snprintf(plan_name, name_len, "%s%s%.*s", base ? base : "", base ? ":" : "", (int)m->name.len,
             method);
    if (tlsan_plan_set_name(plan, plan_name) != TLSAN_OK) {
        st = error_nomem(err);
        goto out;
    }
    /* Ops first: they find the elided views, which the tensors then declare (the builder
     * resolves names at finalize, so the order of the calls does not matter to it). */
    if ((st = add_arenas(&c, plan, sizes, n_buffers, memory, err)) ||
        (st = add_ops(&c, plan, &f, err)) || (st = add_tensors(&c, plan, flags, err)))
        goto out;
    if ((st = tlsan_plan_finalize(plan, err)) != TLSAN_OK) {
        st = builder_failed(&c, err, st);
        goto out;
    }
    *out = plan;
    plan = NULL;
out:
    tlsan_plan_free(plan);
    free(plan_name);
    free(flags);
    free(memory);
    flow_free(&f);
    method_ctx_free(&c);
    return st;
}

/* ---- entry points ---- */

/* The plans' BASE: the label's file name without ".pte", ':' replaced by '_' so that the
 * first ':' of a plan name always ends it. NULL in *out when the label gives none. */
static int base_of(const char *label, char **out)
{
    if (plan_name_from_label(label, ".pte", out) != 0)
        return -1;
    for (char *c = *out; c && *c; c++)
        if (*c == ':')
            *c = '_';
    return 0;
}

static tlsan_status check_methods(const et_program *p, const char *method, size_t *only,
                                  tlsan_error *err)
{
    *only = SIZE_MAX;
    char where[64];
    for (size_t i = 0; i < p->n_methods; i++) {
        const et_str *n = &p->methods[i].name;
        snprintf(where, sizeof where, "execution_plan[%zu].name", i);
        tlsan_status st = check_text(n, true, err, where, "the method's name");
        if (st != TLSAN_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (p->methods[j].name.len == n->len && memcmp(p->methods[j].name.s, n->s, n->len) == 0)
                return error_failf(err, where, "two methods are named '%s' (%zu and %zu)", n->s, j,
                                   i);
        if (method && strlen(method) == n->len && memcmp(method, n->s, n->len) == 0)
            *only = i;
    }
    if (p->n_methods == 0)
        return error_failf(err, "execution_plan", "the program has no method");
    if (method && *only == SIZE_MAX) {
        char list[400] = "";
        size_t at = 0;
        for (size_t i = 0; i < p->n_methods && at + 4 < sizeof list; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
                                   p->methods[i].name.s);
        return error_failf(err, "", "the program has no method '%s' (it has: %s)", method, list);
    }
    return TLSAN_OK;
}

static tlsan_status apply_overrides(et_program *p, const et_import_options *opt, tlsan_error *err)
{
    if (!opt)
        return TLSAN_OK;
    for (size_t k = 0; k < opt->n_overrides; k++) {
        const et_placement_override *o = &opt->overrides[k];
        const et_value *v = o->method < p->n_methods && o->value < p->methods[o->method].n_values
                                ? &p->values[p->methods[o->method].value_start + o->value]
                                : NULL;
        if (!v || v->type != ET_VAL_TENSOR || !v->has_payload || !p->tensors[v->tensor].planned) {
            error_status(err, TLSAN_ERR_ARG, "");
            if (err)
                snprintf(err->what, sizeof err->what,
                         "override %zu: method %zu value %zu is not a planned tensor", k, o->method,
                         o->value);
            return TLSAN_ERR_ARG;
        }
        p->tensors[v->tensor].memory_id = o->memory_id;
        p->tensors[v->tensor].offset = o->offset;
    }
    return TLSAN_OK;
}

void tlsan_executorch_plans_free(tlsan_plan **plans, size_t n_plans)
{
    if (!plans)
        return;
    for (size_t i = 0; i < n_plans; i++)
        tlsan_plan_free(plans[i]);
    free(plans);
}

tlsan_status et_import_buffer_ex(const void *data, size_t bytes, const char *label,
                                 const char *method, const et_import_options *opt,
                                 tlsan_plan ***plans, size_t *n_plans, tlsan_error *err)
{
    if (plans)
        *plans = NULL;
    if (n_plans)
        *n_plans = 0;
    if ((!data && bytes) || !plans || !n_plans || (opt && opt->n_overrides && !opt->overrides))
        return TLSAN_ERR_ARG;
    const uint8_t *b = data;
    framing fr;
    uint8_t *copy = NULL;
    et_program *prog = NULL;
    char *base = NULL;
    tlsan_plan **out = NULL;
    size_t n_out = 0;
    tlsan_status st = read_framing(b, bytes, &fr, err);
    if (st != TLSAN_OK)
        goto out;
    if (fr.program_bytes > MAX_FLATBUFFER_BYTES) {
        st = error_failf(err, "",
                         "the FlatBuffer is %" PRIu64 " bytes, more than FlatBuffers "
                         "can address (2^31-1)",
                         fr.program_bytes);
        goto out;
    }
    /* The verifier checks alignment relative to the buffer's start and the accessors read
     * through typed pointers, so the FlatBuffer is copied to malloc's alignment. */
    if (!(copy = malloc(fr.program_bytes ? fr.program_bytes : 1))) {
        st = error_nomem(err);
        goto out;
    }
    memcpy(copy, b, fr.program_bytes);
    char why[256];
    et_fb_status fs = et_fb_read(copy, fr.program_bytes, &prog, why, sizeof why);
    if (fs == ET_FB_NOMEM) {
        st = error_nomem(err);
        goto out;
    }
    if (fs != ET_FB_OK) {
        st = error_failf(err, "", "%s", why);
        goto out;
    }
    size_t only;
    if ((st = check_segments(prog, &fr, bytes, err)) ||
        (st = check_methods(prog, method, &only, err)) || (st = apply_overrides(prog, opt, err)))
        goto out;
    if (base_of(label, &base) != 0 || !(out = calloc(prog->n_methods, sizeof *out))) {
        st = error_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < prog->n_methods; i++) {
        if (only != SIZE_MAX && i != only)
            continue;
        if ((st = build_method(prog, i, base, &out[n_out], err)) != TLSAN_OK)
            goto out;
        n_out++;
    }
    *plans = out;
    *n_plans = n_out;
    out = NULL;
out:
    tlsan_executorch_plans_free(out, n_out);
    if (st != TLSAN_OK && err && label)
        snprintf(err->file, sizeof err->file, "%s", label);
    free(base);
    free(copy);
    et_program_free(prog);
    return st;
}

tlsan_status tlsan_import_executorch_buffer(const void *data, size_t bytes, const char *label,
                                            const char *method, tlsan_plan ***plans,
                                            size_t *n_plans, tlsan_error *err)
{
    return et_import_buffer_ex(data, bytes, label, method, NULL, plans, n_plans, err);
}

tlsan_status tlsan_import_executorch_file(const char *path, const char *method, tlsan_plan ***plans,
                                          size_t *n_plans, tlsan_error *err)
{
    if (plans)
        *plans = NULL;
    if (n_plans)
        *n_plans = 0;
    if (!path || !plans || !n_plans)
        return TLSAN_ERR_ARG;
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    int saved_errno = f ? 0 : errno;
    while (f && !saved_errno) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            uint8_t *g = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!g) {
                free(buf);
                if (!is_stdin)
                    fclose(f);
                return error_nomem(err);
            }
            buf = g;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                saved_errno = errno ? errno : EIO;
            break;
        }
    }
    if (f && !is_stdin)
        fclose(f);
    if (saved_errno) {
        free(buf);
        error_status(err, TLSAN_ERR_IO, "");
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->what, sizeof err->what, "cannot read: %s", strerror(saved_errno));
        }
        return TLSAN_ERR_IO;
    }
    tlsan_status st = tlsan_import_executorch_buffer(buf, len, path, method, plans, n_plans, err);
    free(buf);
    return st;
}

/* yajl prints straight into the stream. */
static void print_to_file(void *ctx, const char *s, size_t len)
{
    fwrite(s, 1, len, (FILE *)ctx);
}

#define GEN_OK(call) ((call) == yajl_gen_status_ok)

tlsan_status tlsan_executorch_write(tlsan_plan *const *plans, size_t n_plans, FILE *out,
                                    bool pretty)
{
    if (!plans || !n_plans || !out)
        return TLSAN_ERR_ARG;
    if (n_plans == 1)
        return tlsan_plan_write(plans[0], out, pretty);
    yajl_gen g = yajl_gen_alloc(NULL);
    if (!g)
        return TLSAN_ERR_NOMEM;
    tlsan_status st = TLSAN_ERR_NOMEM;
    if (!yajl_gen_config(g, yajl_gen_print_callback, print_to_file, (void *)out) ||
        (pretty && (!yajl_gen_config(g, yajl_gen_beautify, 1) ||
                    !yajl_gen_config(g, yajl_gen_indent_string, "  "))))
        goto out;
    st = TLSAN_ERR_IO;
    static const char k_cache[] = "tlsan_plan_cache", k_plans[] = "plans", k_key[] = "key",
                      k_method[] = "method";
#define KEY(s) yajl_gen_string(g, (const unsigned char *)(s), sizeof(s) - 1)
    if (!GEN_OK(yajl_gen_map_open(g)) || !GEN_OK(KEY(k_cache)) || !GEN_OK(yajl_gen_integer(g, 1)) ||
        !GEN_OK(KEY(k_plans)) || !GEN_OK(yajl_gen_array_open(g)))
        goto out;
    for (size_t i = 0; i < n_plans; i++) {
        const char *name = tlsan_plan_name(plans[i]);
        const char *colon = name ? strchr(name, ':') : NULL;
        const char *m = colon ? colon + 1 : name ? name : "";
        if (!GEN_OK(yajl_gen_map_open(g)) || !GEN_OK(KEY(k_key)) || !GEN_OK(yajl_gen_map_open(g)) ||
            !GEN_OK(KEY(k_method)) ||
            !GEN_OK(yajl_gen_string(g, (const unsigned char *)m, strlen(m))) ||
            !GEN_OK(yajl_gen_map_close(g)))
            goto out;
        if ((st = plan_write_members(plans[i], g)) != TLSAN_OK)
            goto out;
        st = TLSAN_ERR_IO;
        if (!GEN_OK(yajl_gen_map_close(g)))
            goto out;
    }
#undef KEY
    if (!GEN_OK(yajl_gen_array_close(g)) || !GEN_OK(yajl_gen_map_close(g)))
        goto out;
    if (!pretty)
        fputc('\n', out);
    st = fflush(out) != 0 || ferror(out) ? TLSAN_ERR_IO : TLSAN_OK;
out:
    yajl_gen_free(g);
    return st;
}
