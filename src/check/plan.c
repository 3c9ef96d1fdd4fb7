/* plan: building, validating and resolving the plan model. */
#include "check/plan.h"

#include "core/error.h"
#include "core/utf8.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int vec_reserve_(void **v, size_t *cap, size_t n, size_t extra, size_t elem)
{
    if (n + extra <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n + extra) {
        if (c > SIZE_MAX / 2 / elem)
            return -1;
        c *= 2;
    }
    void *p = realloc(*v, c * elem);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

const char *tlsan_status_name(tlsan_status status)
{
    switch (status) {
    case TLSAN_OK:
        return "ok";
    case TLSAN_ERR_INVALID:
        return "invalid input";
    case TLSAN_ERR_NOMEM:
        return "out of memory";
    case TLSAN_ERR_IO:
        return "input/output error";
    case TLSAN_ERR_ARG:
        return "invalid argument";
    case TLSAN_ERR_STATE:
        return "call not allowed in this state";
    }
    return "unknown status";
}

char *tlsan_error_format(const tlsan_error *err, char *buf, size_t buf_bytes)
{
    if (!buf || buf_bytes == 0)
        return buf;
    if (!err) {
        snprintf(buf, buf_bytes, "unknown error");
        return buf;
    }
    const char *file = err->file[0] ? err->file : "<plan>";
    if (err->line > 0)
        snprintf(buf, buf_bytes, "%s:%d:%d: %s", file, err->line, err->column, err->what);
    else if (err->where[0])
        snprintf(buf, buf_bytes, "%s: %s: %s", file, err->where, err->what);
    else
        snprintf(buf, buf_bytes, "%s: %s", file, err->what);
    utf8_trim_partial(buf);
    return buf;
}

/* ---- dtypes ---- */

static const struct {
    const char *name;
    unsigned bits;
} dtype_table[TLSAN_DTYPE_COUNT_] = {
    [TLSAN_DTYPE_NONE] = {"", 0},      [TLSAN_DTYPE_F64] = {"f64", 64},
    [TLSAN_DTYPE_I64] = {"i64", 64},   [TLSAN_DTYPE_U64] = {"u64", 64},
    [TLSAN_DTYPE_F32] = {"f32", 32},   [TLSAN_DTYPE_I32] = {"i32", 32},
    [TLSAN_DTYPE_U32] = {"u32", 32},   [TLSAN_DTYPE_F16] = {"f16", 16},
    [TLSAN_DTYPE_BF16] = {"bf16", 16}, [TLSAN_DTYPE_I16] = {"i16", 16},
    [TLSAN_DTYPE_U16] = {"u16", 16},   [TLSAN_DTYPE_F8] = {"f8", 8},
    [TLSAN_DTYPE_I8] = {"i8", 8},      [TLSAN_DTYPE_U8] = {"u8", 8},
    [TLSAN_DTYPE_BOOL] = {"bool", 8},  [TLSAN_DTYPE_I4] = {"i4", 4},
    [TLSAN_DTYPE_U4] = {"u4", 4},
};

tlsan_dtype tlsan_dtype_from_name(const char *name)
{
    if (!name)
        return TLSAN_DTYPE_NONE;
    for (int d = 1; d < TLSAN_DTYPE_COUNT_; d++)
        if (strcmp(dtype_table[d].name, name) == 0)
            return (tlsan_dtype)d;
    return TLSAN_DTYPE_NONE;
}

const char *tlsan_dtype_name(tlsan_dtype dtype)
{
    return (unsigned)dtype < TLSAN_DTYPE_COUNT_ ? dtype_table[dtype].name : "";
}

unsigned tlsan_dtype_bits(tlsan_dtype dtype)
{
    return (unsigned)dtype < TLSAN_DTYPE_COUNT_ ? dtype_table[dtype].bits : 0;
}

uint64_t plan_needed_bytes(const tlsan_plan *p, const tensor_rec *t)
{
    if (t->dtype == TLSAN_DTYPE_NONE)
        return 0;
    /* Elements times bits, rounded up to whole bytes over the whole tensor; saturate so
     * an absurd shape reads as "needs more than any byte count". */
    uint64_t elems = 1;
    uint32_t rank = plan_shape_rank(p, t);
    for (uint32_t i = 0; i < rank; i++) {
        uint64_t d = plan_shape_dim(p, t, i);
        if (d == 0)
            return 0;
        if (elems > UINT64_MAX / d)
            return UINT64_MAX;
        elems *= d;
    }
    unsigned bits = tlsan_dtype_bits((tlsan_dtype)t->dtype);
    if (elems > (UINT64_MAX - 7) / bits)
        return UINT64_MAX;
    return (elems * bits + 7) / 8;
}

/* ---- building ---- */

tlsan_plan *tlsan_plan_create(void)
{
    tlsan_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    strtab_init(&p->strings);
    p->name = STRTAB_NONE;
    p->last_arena_ref = p->last_stream_ref = STRTAB_NONE;
    p->schedule = TLSAN_SCHEDULE_SEQUENTIAL;
    return p;
}

void tlsan_plan_free(tlsan_plan *p)
{
    if (!p)
        return;
    strtab_free(&p->strings);
    free(p->arenas);
    free(p->tensors);
    free(p->extras);
    free(p->op_extras);
    free(p->ops);
    free(p->id_pool.v);
    free(p->shape_pool.v);
    free(p->shape_wide.v);
    free(p->arena_by_name.v);
    free(p->tensor_by_name.v);
    free(p->op_by_name.v);
    free(p->tensor_src.v.v);
    free(p->op_src.v.v);
    free(p->src_pairs.v);
    free(p->ifs);
    free(p->loops);
    free(p->op_stream);
    free(p->stream_names.v);
    free(p->stream_by_name.v);
    free(p->root_flags);
    free(p->op_loop);
    free(p);
}

tlsan_status tlsan_plan_set_name(tlsan_plan *p, const char *name)
{
    if (!p || !name)
        return TLSAN_ERR_ARG;
    if (p->finalized)
        return TLSAN_ERR_STATE;
    uint32_t id = strtab_intern_cstr(&p->strings, name);
    if (id == STRTAB_NONE)
        return TLSAN_ERR_NOMEM;
    p->name = id;
    return TLSAN_OK;
}

tlsan_status tlsan_plan_set_schedule(tlsan_plan *p, tlsan_schedule schedule)
{
    if (!p || (schedule != TLSAN_SCHEDULE_SEQUENTIAL && schedule != TLSAN_SCHEDULE_DATAFLOW))
        return TLSAN_ERR_ARG;
    if (p->finalized)
        return TLSAN_ERR_STATE;
    p->schedule = schedule;
    return TLSAN_OK;
}

const tensor_extra *plan_tensor_extra(const tlsan_plan *p, uint32_t index)
{
    size_t lo = 0, hi = p->n_extras;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->extras[mid].tensor <= index)
            lo = mid;
        else
            hi = mid;
    }
    return &p->extras[lo];
}

uint32_t plan_lookup(const u32vec *by_name, uint32_t name_id)
{
    if (name_id == STRTAB_NONE || name_id >= by_name->n)
        return NO_INDEX;
    uint32_t v = by_name->v[name_id];
    return v ? v - 1 : NO_INDEX;
}

/* Records index `idx` for name `id` in a lookup table; -1 when out of memory. */
static int set_lookup(u32vec *by_name, uint32_t id, uint32_t idx)
{
    if (id >= by_name->n) {
        size_t need = (size_t)id + 1 - by_name->n;
        if (VEC_RESERVE(*by_name, need) != 0)
            return -1;
        memset(by_name->v + by_name->n, 0, need * sizeof *by_name->v);
        by_name->n = (size_t)id + 1;
    }
    by_name->v[id] = idx + 1;
    return 0;
}

/* Interns a string that may be NULL; *out is STRTAB_NONE for NULL. -1 when out of memory. */
static int intern_opt(tlsan_plan *p, const char *s, uint32_t *out)
{
    if (!s) {
        *out = STRTAB_NONE;
        return 0;
    }
    *out = strtab_intern_cstr(&p->strings, s);
    return *out == STRTAB_NONE ? -1 : 0;
}

/* Interns s, reusing *last when s is that string; *last becomes its id. */
static uint32_t intern_same(tlsan_plan *p, uint32_t *last, const char *s)
{
    if (*last == STRTAB_NONE || strcmp(strtab_str(&p->strings, *last), s) != 0)
        *last = strtab_intern_cstr(&p->strings, s);
    return *last;
}

/* Appends interned names to the id pool; -1 when out of memory. */
static int push_names(tlsan_plan *p, const char *const *names, size_t n, uint32_t *start)
{
    if (p->id_pool.n + n > UINT32_MAX)
        return -1;
    if (VEC_RESERVE(p->id_pool, n) != 0)
        return -1;
    *start = (uint32_t)p->id_pool.n;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = strtab_intern_cstr(&p->strings, names[i] ? names[i] : "");
        if (id == STRTAB_NONE)
            return -1;
        p->id_pool.v[p->id_pool.n++] = id;
    }
    return 0;
}

static bool valid_name(const char *s)
{
    return s && s[0] != '\0';
}

tlsan_status tlsan_plan_add_arena(tlsan_plan *p, const tlsan_arena_desc *a, tlsan_error *err)
{
    if (!p || !a)
        return TLSAN_ERR_ARG;
    if (p->finalized)
        return TLSAN_ERR_STATE;
    size_t i = p->n_arenas;
    if (!valid_name(a->name))
        return error_fail(err, "an arena needs a non-empty name", "arenas[%zu].name", i);
    if (a->bytes > INT64_MAX)
        return error_fail(err, "byte count out of range (0 to 2^63-1)", "arenas[%zu].bytes", i);
    if (a->alignment_bytes > INT64_MAX)
        return error_fail(err, "alignment out of range (1 to 2^63-1)", "arenas[%zu].alignment", i);
    arena_rec r = {0};
    r.bytes = a->bytes;
    r.alignment_bytes = a->alignment_bytes ? a->alignment_bytes : 1;
    r.name = strtab_intern_cstr(&p->strings, a->name);
    if (r.name == STRTAB_NONE || intern_opt(p, a->memory ? a->memory : "host", &r.memory) != 0)
        return error_nomem(err);
    if (plan_lookup(&p->arena_by_name, r.name) != NO_INDEX) {
        error_failf(err, "", "duplicate arena name '%s'", a->name);
        if (err)
            snprintf(err->where, sizeof err->where, "arenas[%zu].name", i);
        return TLSAN_ERR_INVALID;
    }
    if (vec_reserve_((void **)&p->arenas, &p->cap_arenas, p->n_arenas, 1, sizeof *p->arenas) ||
        set_lookup(&p->arena_by_name, r.name, (uint32_t)i) != 0)
        return error_nomem(err);
    p->arenas[p->n_arenas++] = r;
    return TLSAN_OK;
}

tlsan_status tlsan_plan_add_tensor(tlsan_plan *p, const tlsan_tensor_desc *t, tlsan_error *err)
{
    if (!p || !t)
        return TLSAN_ERR_ARG;
    if (p->finalized)
        return TLSAN_ERR_STATE;
    size_t i = p->n_tensors;
    if (i >= UINT32_MAX - 1)
        return error_fail(err, "too many tensors", "tensors[%zu]", i);
    if (!valid_name(t->name))
        return error_fail(err, "a tensor needs a non-empty name", "tensors[%zu].name", i);
    if (t->bytes > INT64_MAX)
        return error_fail(err, "byte count out of range (0 to 2^63-1)", "tensors[%zu].bytes", i);
    if (t->arena && t->view_of)
        return error_fail(err,
                          "a tensor has either 'arena' (a storage root) or 'view_of' (a view), "
                          "not both",
                          "tensors[%zu]", i);
    if (!t->arena && !t->view_of)
        return error_fail(err,
                          "a tensor needs 'arena' with 'offset' (a storage root) or 'view_of' (a "
                          "view)",
                          "tensors[%zu]", i);
    if (t->arena && !valid_name(t->arena))
        return error_fail(err, "empty arena name", "tensors[%zu].arena", i);
    if (t->view_of && !valid_name(t->view_of))
        return error_fail(err, "empty tensor name", "tensors[%zu].view_of", i);
    if (t->offset_bytes > INT64_MAX)
        return error_fail(err, "offset out of range (0 to 2^63-1)", "tensors[%zu].offset", i);
    if (t->view_offset_bytes > INT64_MAX)
        return error_fail(err, "offset out of range (0 to 2^63-1)", "tensors[%zu].view_offset", i);
    if (t->alignment_bytes > INT64_MAX)
        return error_fail(err, "alignment out of range (1 to 2^63-1)", "tensors[%zu].alignment", i);
    if (t->flags & ~(unsigned)(TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT | TLSAN_TENSOR_CONSTANT))
        return error_fail(err, "unknown tensor flag", "tensors[%zu]", i);
    if (t->has_lifetime) {
        if (t->lifetime[0] < -1)
            return error_fail(err, "lifetime starts before step -1", "tensors[%zu].lifetime[0]", i);
        if (t->lifetime[0] > t->lifetime[1])
            return error_fail(err, "reversed lifetime (first_write after last_read)",
                              "tensors[%zu].lifetime", i);
    }
    if ((unsigned)t->dtype >= TLSAN_DTYPE_COUNT_)
        return error_fail(err, "unknown dtype", "tensors[%zu].dtype", i);
    if (t->n_shape && t->dtype == TLSAN_DTYPE_NONE)
        return error_fail(err, "'shape' needs 'dtype'", "tensors[%zu].shape", i);
    for (size_t k = 0; k < t->n_shape; k++)
        if (t->shape[k] > INT64_MAX)
            return error_fail(err, "extent out of range (0 to 2^63-1)", "tensors[%zu].shape[%zu]",
                              i, k);

    tensor_rec r = {0};
    r.flags = (uint8_t)t->flags;
    if (r.flags & TLSAN_TENSOR_CONSTANT)
        r.flags |= TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT;
    r.bytes = t->bytes;
    r.name = strtab_intern_cstr(&p->strings, t->name);
    if (r.name == STRTAB_NONE)
        return error_nomem(err);
    if (plan_lookup(&p->tensor_by_name, r.name) != NO_INDEX) {
        error_failf(err, "", "duplicate tensor name '%s'", t->name);
        if (err)
            snprintf(err->where, sizeof err->where, "tensors[%zu].name", i);
        return TLSAN_ERR_INVALID;
    }
    /* References are kept as name ids until finalize, since JSON may list them later. */
    if (t->arena) {
        r.arena = intern_same(p, &p->last_arena_ref, t->arena);
        r.view_of = NO_INDEX;
        r.offset_bytes = t->offset_bytes;
        if (r.arena == STRTAB_NONE)
            return error_nomem(err);
    } else {
        r.arena = NO_INDEX;
        /* a view is most often one of the tensor just before it (a chain of reshapes and
         * permutes): its id is then that tensor's name, with no lookup */
        uint32_t prev = p->n_tensors ? p->tensors[p->n_tensors - 1].name : STRTAB_NONE;
        r.view_of = intern_same(p, &prev, t->view_of);
        r.offset_bytes = t->view_offset_bytes;
        if (r.view_of == STRTAB_NONE)
            return error_nomem(err);
    }
    r.root = NO_INDEX;
    if (t->memory || t->alignment_bytes || t->has_lifetime || t->n_stack) {
        tensor_extra x = {{0, 0}, 0, STRTAB_NONE, 0, 0, (uint32_t)i};
        if (intern_opt(p, t->memory, &x.memory) != 0 ||
            push_names(p, t->stack, t->n_stack, &x.stack_start) != 0)
            return error_nomem(err);
        x.n_stack = (uint32_t)t->n_stack;
        if (t->alignment_bytes) {
            r.flags |= TREC_HAS_ALIGNMENT;
            x.alignment_bytes = t->alignment_bytes;
        }
        if (t->has_lifetime) {
            r.flags |= TREC_HAS_LIFETIME;
            x.lifetime[0] = t->lifetime[0];
            x.lifetime[1] = t->lifetime[1];
        }
        if (vec_reserve_((void **)&p->extras, &p->cap_extras, p->n_extras, 1, sizeof *p->extras))
            return error_nomem(err);
        r.flags |= TREC_HAS_EXTRA;
        p->extras[p->n_extras++] = x;
    }
    r.dtype = (uint8_t)t->dtype;
    if (t->dtype != TLSAN_DTYPE_NONE) {
        bool wide = t->n_shape > TREC_RANK_MAX;
        for (size_t k = 0; k < t->n_shape; k++)
            wide |= t->shape[k] > UINT32_MAX;
        if (wide) {
            r.flags |= TREC_WIDE_SHAPE;
            if (p->shape_wide.n + t->n_shape + 1 > UINT32_MAX ||
                VEC_RESERVE(p->shape_wide, t->n_shape + 1))
                return error_nomem(err);
            r.shape_start = (uint32_t)p->shape_wide.n;
            p->shape_wide.v[p->shape_wide.n++] = t->n_shape;
            memcpy(p->shape_wide.v + p->shape_wide.n, t->shape, t->n_shape * sizeof(uint64_t));
            p->shape_wide.n += t->n_shape;
        } else {
            r.rank = (uint16_t)t->n_shape;
            if (p->shape_pool.n + t->n_shape > UINT32_MAX || VEC_RESERVE(p->shape_pool, t->n_shape))
                return error_nomem(err);
            r.shape_start = (uint32_t)p->shape_pool.n;
            for (size_t k = 0; k < t->n_shape; k++)
                p->shape_pool.v[p->shape_pool.n + k] = (uint32_t)t->shape[k];
            p->shape_pool.n += t->n_shape;
        }
    }
    if (vec_reserve_((void **)&p->tensors, &p->cap_tensors, p->n_tensors, 1, sizeof *p->tensors) ||
        set_lookup(&p->tensor_by_name, r.name, (uint32_t)i) != 0)
        return error_nomem(err);
    p->tensors[p->n_tensors++] = r;
    return TLSAN_OK;
}

tlsan_status tlsan_plan_add_op(tlsan_plan *p, const tlsan_op_desc *o, tlsan_error *err)
{
    if (!p || !o)
        return TLSAN_ERR_ARG;
    if (p->finalized)
        return TLSAN_ERR_STATE;
    size_t i = p->n_ops;
    if (i >= INT32_MAX)
        return error_fail(err, "too many ops", "ops[%zu]", i);
    if (!valid_name(o->name))
        return error_fail(err, "an op needs a non-empty name", "ops[%zu].name", i);
    if ((unsigned)o->sync > TLSAN_SYNC_ALL)
        return error_fail(err, "unknown synchronisation kind", "ops[%zu]", i);
    if (o->sync != TLSAN_SYNC_NONE && (o->n_reads || o->n_writes))
        return error_fail(err, "a synchronisation op lists no tensor in 'reads' or 'writes'",
                          "ops[%zu]", i);
    if (o->sync != TLSAN_SYNC_NONE && o->n_inplace)
        return error_fail(err, "a synchronisation op declares no in-place pair", "ops[%zu].inplace",
                          i);
    if ((o->sync == TLSAN_SYNC_RECORD || o->sync == TLSAN_SYNC_WAIT) && !valid_name(o->event))
        return error_fail(err, "a record or wait op needs a non-empty event name",
                          o->sync == TLSAN_SYNC_RECORD ? "ops[%zu].record" : "ops[%zu].wait", i);
    if (o->stream && !valid_name(o->stream))
        return error_fail(err, "empty stream name", "ops[%zu].stream", i);
    if (o->loop && !valid_name(o->loop))
        return error_fail(err, "empty loop name", "ops[%zu].loop", i);
    for (size_t k = 0; k < o->n_reads; k++)
        if (!valid_name(o->reads[k]))
            return error_fail(err, "empty tensor name", "ops[%zu].reads[%zu]", i, k);
    for (size_t k = 0; k < o->n_writes; k++)
        if (!valid_name(o->writes[k]))
            return error_fail(err, "empty tensor name", "ops[%zu].writes[%zu]", i, k);
    for (size_t k = 0; k < 2 * o->n_inplace; k++)
        if (!valid_name(o->inplace[k]))
            return error_fail(err, "empty tensor name", "ops[%zu].inplace[%zu][%zu]", i, k / 2,
                              k % 2);
    for (size_t k = 0; k < o->n_branch; k++) {
        if (!valid_name(o->branch[k].if_name))
            return error_fail(err, "a branch needs a non-empty 'if'", "ops[%zu].branch[%zu].if", i,
                              k);
        if (!valid_name(o->branch[k].arm))
            return error_fail(err, "a branch needs a non-empty 'arm'", "ops[%zu].branch[%zu].arm",
                              i, k);
        for (size_t m = 0; m < k; m++)
            if (strcmp(o->branch[m].if_name, o->branch[k].if_name) == 0) {
                error_failf(err, "", "the branch list names if '%s' twice", o->branch[k].if_name);
                if (err)
                    snprintf(err->where, sizeof err->where, "ops[%zu].branch[%zu].if", i, k);
                return TLSAN_ERR_INVALID;
            }
    }

    op_rec r = {0};
    r.name = strtab_intern_cstr(&p->strings, o->name);
    if (r.name == STRTAB_NONE)
        return error_nomem(err);
    if (plan_lookup(&p->op_by_name, r.name) != NO_INDEX) {
        error_failf(err, "", "duplicate op name '%s'", o->name);
        if (err)
            snprintf(err->where, sizeof err->where, "ops[%zu].name", i);
        return TLSAN_ERR_INVALID;
    }
    op_extra x = {STRTAB_NONE, 0, 0, 0, 0, 0, 0, 0, 0};
    r.sync = (uint8_t)o->sync;
    r.extra = NO_INDEX;
    uint32_t stream = intern_same(p, &p->last_stream_ref, o->stream ? o->stream : "main");
    if (stream == STRTAB_NONE || intern_opt(p, o->loop, &x.loop) != 0 ||
        intern_opt(p, o->sync == TLSAN_SYNC_RECORD || o->sync == TLSAN_SYNC_WAIT ? o->event : NULL,
                   &r.event) != 0)
        return error_nomem(err);

    /* `after` must name an earlier op: resolve now, while "earlier" means "already added". */
    if (VEC_RESERVE(p->id_pool, o->n_after) != 0)
        return error_nomem(err);
    x.after_start = (uint32_t)p->id_pool.n;
    for (size_t k = 0; k < o->n_after; k++) {
        const char *an = o->after[k];
        uint32_t id = an ? strtab_find(&p->strings, an, strlen(an)) : STRTAB_NONE;
        uint32_t idx = plan_lookup(&p->op_by_name, id);
        if (idx == NO_INDEX) {
            p->id_pool.n = x.after_start;
            bool is_self = an && strcmp(an, o->name) == 0;
            error_failf(err, "", "'after' names %s op '%s'",
                        is_self ? "the op itself, not an earlier" : "an unknown or later",
                        an ? an : "");
            if (err)
                snprintf(err->where, sizeof err->where, "ops[%zu].after[%zu]", i, k);
            return TLSAN_ERR_INVALID;
        }
        p->id_pool.v[p->id_pool.n++] = idx;
    }
    x.n_after = (uint32_t)o->n_after;
    if (push_names(p, o->reads, o->n_reads, &r.reads_start) != 0 ||
        push_names(p, o->writes, o->n_writes, &r.writes_start) != 0 ||
        push_names(p, o->inplace, 2 * o->n_inplace, &x.inplace_start) != 0 ||
        push_names(p, o->stack, o->n_stack, &x.stack_start) != 0)
        return error_nomem(err);
    r.n_reads = (uint32_t)o->n_reads;
    r.n_writes = (uint32_t)o->n_writes;
    x.n_inplace = (uint32_t)o->n_inplace;
    x.n_stack = (uint32_t)o->n_stack;
    if (VEC_RESERVE(p->id_pool, 2 * o->n_branch) != 0)
        return error_nomem(err);
    x.cond_start = (uint32_t)p->id_pool.n;
    for (size_t k = 0; k < o->n_branch; k++) {
        uint32_t a = strtab_intern_cstr(&p->strings, o->branch[k].if_name);
        uint32_t b = strtab_intern_cstr(&p->strings, o->branch[k].arm);
        if (a == STRTAB_NONE || b == STRTAB_NONE)
            return error_nomem(err);
        p->id_pool.v[p->id_pool.n++] = a;
        p->id_pool.v[p->id_pool.n++] = b;
    }
    x.n_cond = (uint32_t)o->n_branch;
    if (x.loop != STRTAB_NONE || x.n_after || x.n_inplace || x.n_cond || x.n_stack) {
        if (p->n_op_extras >= NO_INDEX || vec_reserve_((void **)&p->op_extras, &p->cap_op_extras,
                                                       p->n_op_extras, 1, sizeof *p->op_extras))
            return error_nomem(err);
        r.extra = (uint32_t)p->n_op_extras;
        p->op_extras[p->n_op_extras++] = x;
    }
    /* Streams become dense indices for per-stream program order. */
    uint32_t s = plan_lookup(&p->stream_by_name, stream);
    if (s == NO_INDEX) {
        s = p->n_streams;
        if (VEC_PUSH(p->stream_names, stream) != 0 ||
            set_lookup(&p->stream_by_name, stream, s) != 0)
            return error_nomem(err);
        p->n_streams++;
    }
    if (vec_reserve_((void **)&p->ops, &p->cap_ops, p->n_ops, 1, sizeof *p->ops) ||
        vec_reserve_((void **)&p->op_stream, &p->cap_op_stream, p->n_ops, 1,
                     sizeof *p->op_stream) ||
        set_lookup(&p->op_by_name, r.name, (uint32_t)i) != 0)
        return error_nomem(err);
    p->op_stream[p->n_ops] = s;
    p->ops[p->n_ops++] = r;
    return TLSAN_OK;
}

/* ---- finalize ---- */

/* Resolves n tensor names starting at pool[start] in place; reports the first unknown. */
static tlsan_status resolve_tensors(tlsan_plan *p, uint32_t start, uint32_t n, size_t op,
                                    const char *field, bool pairs, tlsan_error *err)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t name = p->id_pool.v[start + k];
        uint32_t idx = plan_lookup(&p->tensor_by_name, name);
        if (idx == NO_INDEX) {
            error_failf(err, "", "unknown tensor '%s'", strtab_str(&p->strings, name));
            if (err) {
                if (pairs)
                    snprintf(err->where, sizeof err->where, "ops[%zu].%s[%u][%u]", op, field, k / 2,
                             k % 2);
                else
                    snprintf(err->where, sizeof err->where, "ops[%zu].%s[%u]", op, field, k);
            }
            return TLSAN_ERR_INVALID;
        }
        p->id_pool.v[start + k] = idx;
    }
    return TLSAN_OK;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Resolves view chains to their storage roots; refuses cycles. */
static tlsan_status resolve_views(tlsan_plan *p, tlsan_error *err)
{
    size_t n = p->n_tensors;
    /* state: 0 unvisited, 1 on the current chain, 2 resolved */
    uint8_t *state = calloc(n ? n : 1, 1);
    uint32_t *chain = malloc((n ? n : 1) * sizeof *chain);
    tlsan_status st = TLSAN_OK;
    if (!state || !chain) {
        st = error_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (state[i] == 2)
            continue;
        size_t len = 0;
        uint32_t cur = (uint32_t)i;
        while (state[cur] == 0 && p->tensors[cur].view_of != NO_INDEX) {
            state[cur] = 1;
            chain[len++] = cur;
            cur = p->tensors[cur].view_of;
        }
        if (state[cur] == 1) {
            st = error_failf(err, "", "a cycle of views through tensor '%s'",
                             strtab_str(&p->strings, p->tensors[cur].name));
            if (err)
                snprintf(err->where, sizeof err->where, "tensors[%u].view_of", cur);
            goto out;
        }
        /* cur is a root or already resolved; unwind the chain from its end. */
        if (state[cur] == 0) {
            p->tensors[cur].root = cur;
            p->tensors[cur].abs_offset_bytes = p->tensors[cur].offset_bytes;
            state[cur] = 2;
        }
        while (len > 0) {
            uint32_t v = chain[--len];
            tensor_rec *t = &p->tensors[v];
            const tensor_rec *b = &p->tensors[t->view_of];
            t->root = b->root;
            t->abs_offset_bytes = sat_add(b->abs_offset_bytes, t->offset_bytes);
            state[v] = 2;
        }
    }
out:
    free(state);
    free(chain);
    return st;
}

/* Gives back the slack of the growing arrays (up to half of each): a finalized plan does
 * not grow again, and at a million tensors the slack is tens of megabytes. A failed shrink
 * keeps the larger block. */
static void shrink_to_fit(tlsan_plan *p)
{
#define SHRINK(ptr, n, cap)                                                                        \
    do {                                                                                           \
        if ((n) > 0 && (n) < (cap)) {                                                              \
            void *q_ = realloc((ptr), (n) * sizeof *(ptr));                                        \
            if (q_) {                                                                              \
                (ptr) = q_;                                                                        \
                (cap) = (n);                                                                       \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    SHRINK(p->tensors, p->n_tensors, p->cap_tensors);
    SHRINK(p->ops, p->n_ops, p->cap_ops);
    SHRINK(p->op_stream, p->n_ops, p->cap_op_stream);
    SHRINK(p->extras, p->n_extras, p->cap_extras);
    SHRINK(p->op_extras, p->n_op_extras, p->cap_op_extras);
    SHRINK(p->arenas, p->n_arenas, p->cap_arenas);
    SHRINK(p->id_pool.v, p->id_pool.n, p->id_pool.cap);
    SHRINK(p->shape_pool.v, p->shape_pool.n, p->shape_pool.cap);
    SHRINK(p->shape_wide.v, p->shape_wide.n, p->shape_wide.cap);
    SHRINK(p->strings.chars, p->strings.chars_len, p->strings.chars_cap);
#undef SHRINK
    /* Names of arenas and ops are only looked up while building. */
    free(p->arena_by_name.v);
    free(p->op_by_name.v);
    free(p->stream_by_name.v);
    memset(&p->arena_by_name, 0, sizeof p->arena_by_name);
    memset(&p->op_by_name, 0, sizeof p->op_by_name);
    memset(&p->stream_by_name, 0, sizeof p->stream_by_name);
}

tlsan_status tlsan_plan_finalize(tlsan_plan *p, tlsan_error *err)
{
    if (!p)
        return TLSAN_ERR_ARG;
    if (p->finalized)
        return TLSAN_ERR_STATE;
    tlsan_status st = TLSAN_OK;
    uint32_t *if_of_name = NULL, *loop_of_name = NULL;
    u32vec arms = {0};
    size_t n_str = p->strings.n;

    /* Tensors: arena and base references. */
    for (size_t i = 0; i < p->n_tensors; i++) {
        tensor_rec *t = &p->tensors[i];
        if (t->arena != NO_INDEX) {
            uint32_t a = plan_lookup(&p->arena_by_name, t->arena);
            if (a == NO_INDEX) {
                error_failf(err, "", "unknown arena '%s'", strtab_str(&p->strings, t->arena));
                if (err)
                    snprintf(err->where, sizeof err->where, "tensors[%zu].arena", i);
                return TLSAN_ERR_INVALID;
            }
            t->arena = a;
        } else {
            uint32_t b = plan_lookup(&p->tensor_by_name, t->view_of);
            if (b == NO_INDEX) {
                error_failf(err, "", "unknown tensor '%s'", strtab_str(&p->strings, t->view_of));
                if (err)
                    snprintf(err->where, sizeof err->where, "tensors[%zu].view_of", i);
                return TLSAN_ERR_INVALID;
            }
            t->view_of = b;
        }
        if ((t->flags & TREC_HAS_LIFETIME) && tensor_x(p, t)->lifetime[1] > (int64_t)p->n_ops)
            return error_fail(err, "lifetime ends after the output step (the number of ops)",
                              "tensors[%zu].lifetime[1]", i);
    }
    st = resolve_views(p, err);
    if (st != TLSAN_OK)
        return st;

    p->root_flags = calloc(p->n_tensors ? p->n_tensors : 1, 1);
    p->op_loop = malloc((p->n_ops ? p->n_ops : 1) * sizeof *p->op_loop);
    if_of_name = malloc((n_str ? n_str : 1) * sizeof *if_of_name);
    loop_of_name = malloc((n_str ? n_str : 1) * sizeof *loop_of_name);
    if (!p->root_flags || !p->op_loop || !if_of_name || !loop_of_name) {
        st = error_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < p->n_tensors; i++)
        p->root_flags[p->tensors[i].root] |=
            p->tensors[i].flags & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT);
    for (size_t s = 0; s < n_str; s++)
        if_of_name[s] = loop_of_name[s] = NO_INDEX;

    for (size_t i = 0; i < p->n_ops; i++) {
        op_rec *o = &p->ops[i];
        const op_extra *x = op_x(p, o);
        if ((st = resolve_tensors(p, o->reads_start, o->n_reads, i, "reads", false, err)) ||
            (st = resolve_tensors(p, o->writes_start, o->n_writes, i, "writes", false, err)) ||
            (st = resolve_tensors(p, x->inplace_start, 2 * x->n_inplace, i, "inplace", true, err)))
            goto out;
        /* Loops: a body is one contiguous run of ops. */
        p->op_loop[i] = NO_INDEX;
        if (x->loop != STRTAB_NONE) {
            uint32_t l = loop_of_name[x->loop];
            if (l == NO_INDEX) {
                loop_rec *nl = realloc(p->loops, (p->n_loops + 1) * sizeof *nl);
                if (!nl) {
                    st = error_nomem(err);
                    goto out;
                }
                p->loops = nl;
                l = (uint32_t)p->n_loops++;
                loop_of_name[x->loop] = l;
                p->loops[l] = (loop_rec){x->loop, (uint32_t)i, (uint32_t)i};
            } else if (p->loops[l].last_op != i - 1) {
                error_failf(err, "", "the ops of loop '%s' are not contiguous",
                            strtab_str(&p->strings, x->loop));
                if (err)
                    snprintf(err->where, sizeof err->where, "ops[%zu].loop", i);
                st = TLSAN_ERR_INVALID;
                goto out;
            } else {
                p->loops[l].last_op = (uint32_t)i;
            }
            p->op_loop[i] = l;
        }
        /* Conditions: (if name, arm name) become (if index, arm index). */
        for (uint32_t k = 0; k < x->n_cond; k++) {
            uint32_t *c = &p->id_pool.v[x->cond_start + 2 * k];
            uint32_t f = if_of_name[c[0]];
            if (f == NO_INDEX) {
                if_rec *ni = realloc(p->ifs, (p->n_ifs + 1) * sizeof *ni);
                if (!ni) {
                    st = error_nomem(err);
                    goto out;
                }
                p->ifs = ni;
                f = (uint32_t)p->n_ifs++;
                if_of_name[c[0]] = f;
                p->ifs[f] = (if_rec){c[0], 0, 0, 0};
            }
            c[0] = f;
        }
    }
    /* Collect each if's named arms (few per if: a linear scan per condition is fine). */
    {
        /* First pass: count conditions per if to lay their arm lists out contiguously. */
        size_t n_ifs = p->n_ifs;
        uint32_t *count = calloc(n_ifs ? n_ifs : 1, sizeof *count);
        uint32_t *fill = calloc(n_ifs ? n_ifs : 1, sizeof *fill);
        if (!count || !fill) {
            free(count);
            free(fill);
            st = error_nomem(err);
            goto out;
        }
        for (size_t i = 0; i < p->n_op_extras; i++)
            for (uint32_t k = 0; k < p->op_extras[i].n_cond; k++)
                count[p->id_pool.v[p->op_extras[i].cond_start + 2 * k]]++;
        size_t total = 0;
        for (size_t f = 0; f < n_ifs; f++) {
            p->ifs[f].arms_start = (uint32_t)total;
            total += count[f];
        }
        if (VEC_RESERVE(arms, total ? total : 1) != 0) {
            free(count);
            free(fill);
            st = error_nomem(err);
            goto out;
        }
        for (size_t i = 0; i < p->n_ops; i++)
            for (uint32_t k = 0; k < op_x(p, &p->ops[i])->n_cond; k++) {
                uint32_t *c = &p->id_pool.v[op_x(p, &p->ops[i])->cond_start + 2 * k];
                if_rec *f = &p->ifs[c[0]];
                uint32_t *list = arms.v + f->arms_start;
                uint32_t a = 0;
                while (a < fill[c[0]] && list[a] != c[1])
                    a++;
                if (a == fill[c[0]])
                    list[fill[c[0]]++] = c[1];
                c[1] = a;
            }
        /* Move the arm lists into the id pool, compacted. */
        if (VEC_RESERVE(p->id_pool, total) != 0) {
            free(count);
            free(fill);
            st = error_nomem(err);
            goto out;
        }
        for (size_t f = 0; f < n_ifs; f++) {
            uint32_t start = (uint32_t)p->id_pool.n;
            memcpy(p->id_pool.v + p->id_pool.n, arms.v + p->ifs[f].arms_start,
                   fill[f] * sizeof(uint32_t));
            p->id_pool.n += fill[f];
            p->ifs[f].arms_start = start;
            p->ifs[f].n_named_arms = fill[f];
            p->ifs[f].n_arms = fill[f] < 2 ? 2 : fill[f];
        }
        free(count);
        free(fill);
    }
    if (p->n_loops == 0) {
        free(p->op_loop);
        p->op_loop = NULL;
    }
    p->finalized = true;
    shrink_to_fit(p);
out:
    free(arms.v);
    free(if_of_name);
    free(loop_of_name);
    return st;
}

size_t tlsan_plan_n_arenas(const tlsan_plan *p)
{
    return p ? p->n_arenas : 0;
}

size_t tlsan_plan_n_tensors(const tlsan_plan *p)
{
    return p ? p->n_tensors : 0;
}

size_t tlsan_plan_n_ops(const tlsan_plan *p)
{
    return p ? p->n_ops : 0;
}

const char *tlsan_plan_name(const tlsan_plan *p)
{
    return p ? plan_str(p, p->name) : NULL;
}

const char *tlsan_plan_tensor_name(const tlsan_plan *p, size_t i)
{
    return p && i < p->n_tensors ? strtab_str(&p->strings, p->tensors[i].name) : NULL;
}

const char *tlsan_plan_op_name(const tlsan_plan *p, size_t i)
{
    return p && i < p->n_ops ? strtab_str(&p->strings, p->ops[i].name) : NULL;
}

int plan_set_source(tlsan_plan *p, bool is_op, uint32_t line, uint32_t column)
{
    plan_src *s = is_op ? &p->op_src : &p->tensor_src;
    u32vec *v = &s->v;
    size_t n = is_op ? p->n_ops : p->n_tensors;
    if (n == 0)
        return -1;
    if (v->n == 0) {
        if (s->n_seq == n - 1 && column == 1 && line < PLAN_SRC_PAIR &&
            (s->n_seq == 0 || line == s->base + s->n_seq)) {
            if (s->n_seq == 0)
                s->base = line;
            s->n_seq++;
            return 0;
        }
        /* the lines are not consecutive (or a record has none): store them */
        if (VEC_RESERVE(*v, n) != 0)
            return -1;
        for (uint32_t i = 0; i < s->n_seq; i++)
            v->v[v->n++] = s->base + i;
    }
    if (VEC_RESERVE(*v, n - v->n) != 0)
        return -1;
    uint32_t entry = line;
    if (column != 1 || line >= PLAN_SRC_PAIR) {
        if (p->src_pairs.n / 2 >= PLAN_SRC_PAIR - 1 || VEC_RESERVE(p->src_pairs, 2) != 0)
            return -1;
        entry = PLAN_SRC_PAIR | (uint32_t)(p->src_pairs.n / 2);
        p->src_pairs.v[p->src_pairs.n++] = line;
        p->src_pairs.v[p->src_pairs.n++] = column;
    }
    while (v->n < n - 1)
        v->v[v->n++] = 0; /* records added without a position */
    v->v[v->n++] = entry;
    return 0;
}

static bool source_of(const tlsan_plan *p, const plan_src *s, size_t i, int *line, int *column)
{
    const u32vec *v = &s->v;
    uint32_t entry;
    if (v->n == 0 && i < s->n_seq)
        entry = s->base + (uint32_t)i;
    else if (i < v->n && v->v[i] != 0)
        entry = v->v[i];
    else
        return false;
    uint32_t at_line = entry, at_column = 1;
    if (entry & PLAN_SRC_PAIR) {
        size_t k = 2 * (size_t)(entry & ~PLAN_SRC_PAIR);
        at_line = p->src_pairs.v[k];
        at_column = p->src_pairs.v[k + 1];
    }
    if (line)
        *line = (int)at_line;
    if (column)
        *column = (int)at_column;
    return true;
}

bool tlsan_plan_tensor_source(const tlsan_plan *p, size_t index, int *line, int *column)
{
    return p && index < p->n_tensors && source_of(p, &p->tensor_src, index, line, column);
}

bool tlsan_plan_op_source(const tlsan_plan *p, size_t index, int *line, int *column)
{
    return p && index < p->n_ops && source_of(p, &p->op_src, index, line, column);
}

int plan_name_from_label(const char *label, const char *ext, char **out)
{
    *out = NULL;
    if (!label || strcmp(label, "-") == 0)
        return 0;
    const char *base = strrchr(label, '/');
    base = base ? base + 1 : label;
    size_t len = strlen(base), n_ext = strlen(ext);
    if (len > n_ext && strcmp(base + len - n_ext, ext) == 0)
        len -= n_ext;
    if (len == 0)
        return 0;
    if (!(*out = malloc(len + 1)))
        return -1;
    memcpy(*out, base, len);
    (*out)[len] = '\0';
    return 0;
}
