/* plan_write: a finalized plan back to JSON in the plan format.
 *
 * The writer walks the resolved model (indices) and prints names, so what it writes reads
 * back into the same model. Every key whose value equals the format's default is left out,
 * which keeps generated plans (e.g. from the TVM importer) as small as hand-written ones. */
#include "import/plan_write.h"

#include <string.h>

/* A generator plus a sticky failure flag: once a yajl call fails, later calls do nothing and
 * the caller learns of it once, at the end. This keeps each emitter a flat list of keys. */
typedef struct writer {
    yajl_gen g;
    const tlsan_plan *p;
    bool failed;
} writer;

static void check(writer *w, yajl_gen_status s)
{
    if (s != yajl_gen_status_ok)
        w->failed = true;
}

static void put_str(writer *w, const char *s)
{
    if (!w->failed)
        check(w, yajl_gen_string(w->g, (const unsigned char *)s, strlen(s)));
}

/* A string from the plan's string table. */
static void put_id(writer *w, uint32_t id)
{
    if (!w->failed)
        check(w, yajl_gen_string(w->g, (const unsigned char *)strtab_str(&w->p->strings, id),
                                 strtab_len(&w->p->strings, id)));
}

static void put_int(writer *w, int64_t v)
{
    if (!w->failed)
        check(w, yajl_gen_integer(w->g, (long long)v));
}

static void put_bool(writer *w, bool v)
{
    if (!w->failed)
        check(w, yajl_gen_bool(w->g, v));
}

static void open_map(writer *w)
{
    if (!w->failed)
        check(w, yajl_gen_map_open(w->g));
}

static void close_map(writer *w)
{
    if (!w->failed)
        check(w, yajl_gen_map_close(w->g));
}

static void open_array(writer *w)
{
    if (!w->failed)
        check(w, yajl_gen_array_open(w->g));
}

static void close_array(writer *w)
{
    if (!w->failed)
        check(w, yajl_gen_array_close(w->g));
}

/* "key": [names of the n tensors (or ops) whose indices start at pool[start]]. */
static void put_index_list(writer *w, const char *key, uint32_t start, uint32_t n, bool ops)
{
    if (n == 0)
        return;
    put_str(w, key);
    open_array(w);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t idx = w->p->id_pool.v[start + k];
        put_id(w, ops ? w->p->ops[idx].name : w->p->tensors[idx].name);
    }
    close_array(w);
}

/* "stack": [frames], strtab ids in the pool. */
static void put_stack(writer *w, uint32_t start, uint32_t n)
{
    if (n == 0)
        return;
    put_str(w, "stack");
    open_array(w);
    for (uint32_t k = 0; k < n; k++)
        put_id(w, w->p->id_pool.v[start + k]);
    close_array(w);
}

static void put_arena(writer *w, const arena_rec *a)
{
    open_map(w);
    put_str(w, "name");
    put_id(w, a->name);
    put_str(w, "bytes");
    put_int(w, (int64_t)a->bytes);
    if (a->alignment_bytes != 1) {
        put_str(w, "alignment");
        put_int(w, (int64_t)a->alignment_bytes);
    }
    if (strcmp(strtab_str(&w->p->strings, a->memory), "host") != 0) {
        put_str(w, "memory");
        put_id(w, a->memory);
    }
    close_map(w);
}

static void put_tensor(writer *w, const tensor_rec *t)
{
    const tlsan_plan *p = w->p;
    open_map(w);
    put_str(w, "name");
    put_id(w, t->name);
    put_str(w, "bytes");
    put_int(w, (int64_t)t->bytes);
    if (t->arena != NO_INDEX) {
        put_str(w, "arena");
        put_id(w, p->arenas[t->arena].name);
        put_str(w, "offset");
        put_int(w, (int64_t)t->offset_bytes);
    } else {
        put_str(w, "view_of");
        put_id(w, p->tensors[t->view_of].name);
        if (t->offset_bytes != 0) {
            put_str(w, "view_offset");
            put_int(w, (int64_t)t->offset_bytes);
        }
    }
    if (t->flags & TREC_HAS_ALIGNMENT) {
        put_str(w, "alignment");
        put_int(w, (int64_t)tensor_x(p, t)->alignment_bytes);
    }
    if (tensor_x(p, t)->memory != STRTAB_NONE) {
        put_str(w, "memory");
        put_id(w, tensor_x(p, t)->memory);
    }
    /* The builder ORs input|output into a constant's flags; "constant" alone says both. */
    if (t->flags & TLSAN_TENSOR_CONSTANT) {
        put_str(w, "constant");
        put_bool(w, true);
    } else {
        if (t->flags & TLSAN_TENSOR_INPUT) {
            put_str(w, "input");
            put_bool(w, true);
        }
        if (t->flags & TLSAN_TENSOR_OUTPUT) {
            put_str(w, "output");
            put_bool(w, true);
        }
    }
    if (t->flags & TREC_HAS_LIFETIME) {
        put_str(w, "lifetime");
        open_array(w);
        put_int(w, tensor_x(p, t)->lifetime[0]);
        put_int(w, tensor_x(p, t)->lifetime[1]);
        close_array(w);
    }
    if (t->dtype != TLSAN_DTYPE_NONE) {
        put_str(w, "dtype");
        put_str(w, tlsan_dtype_name((tlsan_dtype)t->dtype));
        put_str(w, "shape");
        open_array(w);
        for (uint32_t k = 0; k < plan_shape_rank(p, t); k++)
            put_int(w, (int64_t)plan_shape_dim(p, t, k));
        close_array(w);
    }
    put_stack(w, tensor_x(p, t)->stack_start, tensor_x(p, t)->n_stack);
    close_map(w);
}

/* One branch condition as {"if": ..., "arm": ...}; pool holds (if index, arm index). */
static void put_cond(writer *w, const uint32_t *c)
{
    const if_rec *f = &w->p->ifs[c[0]];
    open_map(w);
    put_str(w, "if");
    put_id(w, f->name);
    put_str(w, "arm");
    put_id(w, w->p->id_pool.v[f->arms_start + c[1]]);
    close_map(w);
}

static void put_op(writer *w, size_t i)
{
    const tlsan_plan *p = w->p;
    const op_rec *o = &p->ops[i];
    const op_extra *x = op_x(p, o);
    open_map(w);
    put_str(w, "name");
    put_id(w, o->name);
    put_index_list(w, "reads", o->reads_start, o->n_reads, false);
    put_index_list(w, "writes", o->writes_start, o->n_writes, false);
    if (x->n_inplace) {
        put_str(w, "inplace");
        open_array(w);
        for (uint32_t k = 0; k < x->n_inplace; k++) {
            const uint32_t *pair = &p->id_pool.v[x->inplace_start + 2 * k];
            open_array(w);
            put_id(w, p->tensors[pair[0]].name);
            put_id(w, p->tensors[pair[1]].name);
            close_array(w);
        }
        close_array(w);
    }
    uint32_t stream = plan_op_stream_name(p, (uint32_t)i);
    if (strcmp(strtab_str(&p->strings, stream), "main") != 0) {
        put_str(w, "stream");
        put_id(w, stream);
    }
    switch ((tlsan_sync_kind)o->sync) {
    case TLSAN_SYNC_RECORD:
        put_str(w, "record");
        put_id(w, o->event);
        break;
    case TLSAN_SYNC_WAIT:
        put_str(w, "wait");
        put_id(w, o->event);
        break;
    case TLSAN_SYNC_ALL:
        put_str(w, "sync");
        put_bool(w, true);
        break;
    case TLSAN_SYNC_NONE:
        break;
    }
    put_index_list(w, "after", x->after_start, x->n_after, true);
    if (x->n_cond == 1) {
        put_str(w, "branch");
        put_cond(w, &p->id_pool.v[x->cond_start]);
    } else if (x->n_cond > 1) {
        put_str(w, "branch");
        open_array(w);
        for (uint32_t k = 0; k < x->n_cond; k++)
            put_cond(w, &p->id_pool.v[x->cond_start + 2 * k]);
        close_array(w);
    }
    if (plan_op_loop(p, i) != NO_INDEX) {
        put_str(w, "loop");
        put_id(w, p->loops[plan_op_loop(p, i)].name);
    }
    put_stack(w, x->stack_start, x->n_stack);
    close_map(w);
}

tlsan_status plan_write_members(const tlsan_plan *p, yajl_gen g)
{
    if (!p || !g || !p->finalized)
        return TLSAN_ERR_ARG;
    writer w = {g, p, false};
    put_str(&w, "tlsan_plan");
    put_int(&w, 1);
    if (p->name != STRTAB_NONE) {
        put_str(&w, "name");
        put_id(&w, p->name);
    }
    if (p->schedule == TLSAN_SCHEDULE_DATAFLOW) {
        put_str(&w, "schedule");
        put_str(&w, "dataflow");
    }
    put_str(&w, "arenas");
    open_array(&w);
    for (size_t i = 0; i < p->n_arenas; i++)
        put_arena(&w, &p->arenas[i]);
    close_array(&w);
    put_str(&w, "tensors");
    open_array(&w);
    for (size_t i = 0; i < p->n_tensors; i++)
        put_tensor(&w, &p->tensors[i]);
    close_array(&w);
    put_str(&w, "ops");
    open_array(&w);
    for (size_t i = 0; i < p->n_ops; i++)
        put_op(&w, i);
    close_array(&w);
    return w.failed ? TLSAN_ERR_IO : TLSAN_OK;
}

tlsan_status plan_write_gen(const tlsan_plan *p, yajl_gen g)
{
    if (!p || !g || !p->finalized)
        return TLSAN_ERR_ARG;
    if (yajl_gen_map_open(g) != yajl_gen_status_ok)
        return TLSAN_ERR_IO;
    tlsan_status st = plan_write_members(p, g);
    if (st != TLSAN_OK)
        return st;
    return yajl_gen_map_close(g) == yajl_gen_status_ok ? TLSAN_OK : TLSAN_ERR_IO;
}

/* yajl prints through this callback straight into the stream, so a plan of millions of
 * tensors never sits in memory as text. */
static void print_to_file(void *ctx, const char *s, size_t len)
{
    fwrite(s, 1, len, (FILE *)ctx);
}

tlsan_status tlsan_plan_write(const tlsan_plan *plan, FILE *out, bool pretty)
{
    if (!plan || !out || !plan->finalized)
        return TLSAN_ERR_ARG;
    yajl_gen g = yajl_gen_alloc(NULL);
    if (!g)
        return TLSAN_ERR_NOMEM;
    tlsan_status st = TLSAN_ERR_NOMEM;
    if (!yajl_gen_config(g, yajl_gen_print_callback, print_to_file, (void *)out))
        goto out;
    if (pretty && (!yajl_gen_config(g, yajl_gen_beautify, 1) ||
                   !yajl_gen_config(g, yajl_gen_indent_string, "  ")))
        goto out;
    st = plan_write_gen(plan, g);
    if (st != TLSAN_OK)
        goto out;
    /* yajl ends a beautified document with a newline but a compact one without; a file
     * should end with one either way. */
    if (!pretty)
        fputc('\n', out);
    if (fflush(out) != 0 || ferror(out))
        st = TLSAN_ERR_IO;
out:
    yajl_gen_free(g);
    return st;
}
