/* replay: a trace's run as a plan. */
#include "replay/replay.h"

#include "core/error.h"
#include "replay/symbolize.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>

/* Per string id: the tensor or op name it stands for right now in the plan. */
typedef struct names {
    char **current;  /* by string id: the current tenant's plan name, NULL: never bound */
    uint32_t *count; /* by string id: tenants (or ops) named so far */
    size_t n;
} names;

/* A tensor of the rebuilt plan. Tensors are added to the plan at the end, once it is known
 * how long each output stayed with the caller. */
typedef struct tenant {
    char *name;
    char *view_of; /* NULL for a storage root */
    uint64_t bytes, offset, arena, stack;
    unsigned flags;
    bool open_output; /* an output the caller still holds */
} tenant;

typedef struct builder {
    const trace_data *t;
    tlsan_plan *plan;
    tlsan_error *err;
    FILE *warn;
    symbolizer *sym;
    names tensors, ops, arenas;
    char **arena_names; /* by arena id */
    size_t n_arenas;
    char ***stacks; /* by stack id: symbolized frames, built on first use */
    size_t *stack_len;
    size_t n_stacks;
    uint64_t n_sync, n_host;
    /* The order a real queue gives (docs/runtime.md "Order of queues"): work the host
     * enqueues on a stream runs after what the host did before. The host's progress is
     * recorded as event "host" on main, each stream op first waits for the latest one. */
    uint64_t host_records;     /* records of event "host" added so far */
    uint64_t *stream_waited;   /* by stream id: the host record it last waited for */
    uint64_t n_streams_waited; /* entries of stream_waited */
    uint64_t main_open;        /* op id of the main op begun and not ended, 0: none */
    bool host_pending;         /* the host finished something since the last record */
    bool saw_stream;           /* an op ran on a stream other than main */
    tenant *tenants;
    size_t n_tenants, cap_tenants;
    size_t *tenant_of; /* by string id: index of its current tenant, SIZE_MAX: none */
} builder;

static bool names_init(names *nm, size_t n)
{
    nm->n = n;
    nm->current = calloc(n + 1, sizeof *nm->current);
    nm->count = calloc(n + 1, sizeof *nm->count);
    return nm->current && nm->count;
}

static void names_free(names *nm)
{
    if (nm->current)
        for (size_t i = 0; i <= nm->n; i++)
            free(nm->current[i]);
    free(nm->current);
    free(nm->count);
}

/* Appends `len` bytes of `s` to out (capacity cap, NUL-terminated), writing each byte that
 * is not part of valid UTF-8 as the text "\xNN": names in a trace are whatever the engine
 * passed, and a plan must be UTF-8. Returns the length written. */
static size_t copy_utf8(char *out, size_t cap, const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 5 < cap;) {
        size_t k = 1;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
            if (k == 0 || i + k > len || !utf8_valid_text(s + i, k))
                k = 0;
        }
        if (k == 0) {
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
            i++;
            continue;
        }
        memcpy(out + n, s + i, k);
        n += k;
        i += k;
    }
    out[n] = '\0';
    return n;
}

/* A new plan name for string `base`: "base" the first time, then "base#2", "base#3", ...
 * An empty or missing name becomes "(unnamed)". */
static char *fresh_name(const char *base, uint32_t k)
{
    if (!base || !base[0])
        base = "(unnamed)";
    size_t cap = 4 * strlen(base) + 24;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t n = copy_utf8(s, cap, base, strlen(base));
    if (k > 1)
        snprintf(s + n, cap - n, "#%u", k);
    return s;
}

/* Starts a new tenant (or op) of string id `id`; returns its plan name. */
static const char *names_next(builder *b, names *nm, uint64_t id)
{
    char *s = fresh_name(trace_str(b->t, id), ++nm->count[id]);
    if (!s)
        return NULL;
    free(nm->current[id]);
    nm->current[id] = s;
    return s;
}

static bool is_shim_module(const char *path)
{
    size_t n = strlen(path);
    return n >= 11 && strcmp(path + n - 11, "libtlsan.so") == 0;
}

/* The symbolized frames of a stack id (NULL, 0 for none). */
static tlsan_status get_stack(builder *b, uint64_t id, const char *const **frames, size_t *n)
{
    *frames = NULL;
    *n = 0;
    if (id == 0 || id > b->n_stacks)
        return TLSAN_OK;
    if (!b->stacks[id]) {
        /* The shim's rule for its reports (symbolizer_stack_frames): each raw frame as its
         * inlined functions and the function holding it, leading wrappers dropped. */
        trace_stack st = trace_stack_get(b->t, id);
        size_t max = st.n_frames * 16;
        symbol_raw_frame *raw = calloc(st.n_frames + 1, sizeof *raw);
        symbol_stack_frame *sym = calloc(max + 1, sizeof *sym);
        char **out = calloc(max + 1, sizeof *out);
        if (!raw || !sym || !out) {
            free(raw);
            free(sym);
            free(out);
            return error_nomem(b->err);
        }
        size_t n_raw = 0;
        for (size_t i = 0; i < st.n_frames; i++) {
            const trace_module *m = trace_module_get(b->t, st.frames[i].module);
            if (m && is_shim_module(m->path))
                continue;
            raw[n_raw++] = m ? (symbol_raw_frame){m->path, m->base, st.frames[i].offset}
                             : (symbol_raw_frame){NULL, 0, st.frames[i].offset};
        }
        size_t n_sym = symbolizer_stack_frames(b->sym, raw, n_raw, false, sym, max);
        size_t k = 0;
        for (; k < n_sym; k++) {
            char buf[1024];
            symbol_frame_text(&raw[sym[k].raw], &sym[k].sym, buf, sizeof buf);
            char clean[4 * sizeof buf + 8];
            copy_utf8(clean, sizeof clean, buf, strlen(buf));
            if (!(out[k] = strdup(clean)))
                break;
        }
        free(raw);
        free(sym);
        if (k < n_sym) {
            for (size_t j = 0; j < k; j++)
                free(out[j]);
            free(out);
            return error_nomem(b->err);
        }
        b->stacks[id] = out;
        b->stack_len[id] = k;
    }
    *frames = (const char *const *)b->stacks[id];
    *n = b->stack_len[id];
    return TLSAN_OK;
}

/* Maps trace name ids to the current tenants' plan names, leaving out never-bound ones. */
static tlsan_status map_names(builder *b, const uint64_t *ids, size_t n, const char **out,
                              size_t *n_out, const char *op, const char *role)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == 0)
            continue; /* the engine passed a NULL name; the shim warned at run time */
        size_t ti = b->tenant_of[ids[i]];
        const char *cur = ti == SIZE_MAX ? NULL : b->tenants[ti].name;
        if (!cur) {
            if (b->warn)
                fprintf(b->warn,
                        "tlsan: replay: op '%s' %s '%s', which was never bound; left out\n", op,
                        role, trace_str(b->t, ids[i]));
            continue;
        }
        out[k++] = cur;
    }
    *n_out = k;
    return TLSAN_OK;
}

/* Records event "host" on main if the host finished something since the last record. */
static tlsan_status flush_host(builder *b)
{
    if (!b->host_pending || b->main_open)
        return TLSAN_OK;
    b->host_pending = false;
    char name[48];
    snprintf(name, sizeof name, "host#%llu", (unsigned long long)++b->host_records);
    tlsan_op_desc op = {.name = name, .event = "host", .sync = TLSAN_SYNC_RECORD};
    return tlsan_plan_add_op(b->plan, &op, b->err);
}

/* Before an op on `stream`: it was enqueued after everything the host has finished. */
static tlsan_status enqueue_after_host(builder *b, uint64_t stream, const char *stream_name)
{
    tlsan_status st = flush_host(b);
    if (st != TLSAN_OK || b->host_records == 0)
        return st;
    if (stream >= b->n_streams_waited) {
        uint64_t n = stream * 2 + 8;
        uint64_t *w = realloc(b->stream_waited, n * sizeof *w);
        if (!w)
            return error_nomem(b->err);
        memset(w + b->n_streams_waited, 0, (n - b->n_streams_waited) * sizeof *w);
        b->stream_waited = w;
        b->n_streams_waited = n;
    }
    if (b->stream_waited[stream] == b->host_records)
        return TLSAN_OK;
    b->stream_waited[stream] = b->host_records;
    char name[96];
    snprintf(name, sizeof name, "enqueue on %s after host#%llu", stream_name,
             (unsigned long long)b->host_records);
    tlsan_op_desc op = {
        .name = name, .event = "host", .sync = TLSAN_SYNC_WAIT, .stream = stream_name};
    return tlsan_plan_add_op(b->plan, &op, b->err);
}

static tlsan_status add_op(builder *b, const trace_event *ev)
{
    const char *name = names_next(b, &b->ops, ev->name);
    if (!name)
        return error_nomem(b->err);
    size_t total = ev->n_reads + ev->n_writes + 2 * ev->n_inplace;
    const char **buf = calloc(total + 1, sizeof *buf);
    if (!buf)
        return error_nomem(b->err);
    tlsan_op_desc op = {.name = name};
    const char **reads = buf, **writes = buf + ev->n_reads;
    const char **inplace = writes + ev->n_writes;
    map_names(b, ev->names, ev->n_reads, reads, &op.n_reads, name, "reads");
    map_names(b, ev->names + ev->n_reads, ev->n_writes, writes, &op.n_writes, name, "writes");
    /* An in-place pair is kept only when both of its tensors are known. */
    size_t k = 0;
    for (size_t i = 0; i < ev->n_inplace; i++) {
        const uint64_t *pair = ev->names + ev->n_reads + ev->n_writes + 2 * i;
        size_t to = pair[0] ? b->tenant_of[pair[0]] : SIZE_MAX;
        size_t tin = pair[1] ? b->tenant_of[pair[1]] : SIZE_MAX;
        const char *o = to == SIZE_MAX ? NULL : b->tenants[to].name;
        const char *in = tin == SIZE_MAX ? NULL : b->tenants[tin].name;
        if (o && in) {
            inplace[2 * k] = o;
            inplace[2 * k + 1] = in;
            k++;
        }
    }
    op.reads = reads;
    op.writes = writes;
    op.inplace = inplace;
    op.n_inplace = k;
    char stream[32];
    tlsan_status st = TLSAN_OK;
    if (ev->a != 0) {
        snprintf(stream, sizeof stream, "s%llu", (unsigned long long)ev->a);
        op.stream = stream;
        b->saw_stream = true;
        st = enqueue_after_host(b, ev->a, stream);
    } else {
        if (b->saw_stream)
            st = flush_host(b);
        b->main_open = ev->id ? ev->id : UINT64_MAX;
    }
    if (st == TLSAN_OK)
        st = get_stack(b, ev->stack, &op.stack, &op.n_stack);
    if (st == TLSAN_OK)
        st = tlsan_plan_add_op(b->plan, &op, b->err);
    free(buf);
    return st;
}

static tlsan_status add_sync(builder *b, const trace_event *ev)
{
    char name[96], event[32], stream[32];
    tlsan_op_desc op = {.name = name};
    b->n_sync++;
    if (ev->tag == TRACE_SYNC) {
        snprintf(name, sizeof name, "sync#%llu", (unsigned long long)b->n_sync);
        op.sync = TLSAN_SYNC_ALL;
    } else {
        snprintf(event, sizeof event, "e%llu", (unsigned long long)ev->a);
        if (ev->b != 0) {
            snprintf(stream, sizeof stream, "s%llu", (unsigned long long)ev->b);
            op.stream = stream;
        }
        op.event = event;
        op.sync = ev->tag == TRACE_RECORD ? TLSAN_SYNC_RECORD : TLSAN_SYNC_WAIT;
        snprintf(name, sizeof name, "%s %s on %s#%llu", ev->tag == TRACE_RECORD ? "record" : "wait",
                 event, op.stream ? stream : "main", (unsigned long long)b->n_sync);
    }
    tlsan_status st = get_stack(b, ev->stack, &op.stack, &op.n_stack);
    if (st == TLSAN_OK)
        st = tlsan_plan_add_op(b->plan, &op, b->err);
    return st;
}

/* A host op at this point of the run, touching one tensor: "bind x @3" writes a graph input
 * when it is bound (so an input bound again in a later run of the graph starts there, not at
 * step -1), "release y @7" reads an output when the caller gives it back (so it ends there,
 * not at the last step). Numbered by a counter of host ops, so names stay unique. */
static tlsan_status add_host_op(builder *b, const char *what, const char *tensor, bool write,
                                uint64_t stack)
{
    size_t len = strlen(what) + strlen(tensor) + 32;
    char *name = malloc(len);
    if (!name)
        return error_nomem(b->err);
    snprintf(name, len, "%s %s @%llu", what, tensor, (unsigned long long)++b->n_host);
    const char *tensor_names[1] = {tensor};
    tlsan_op_desc op = {.name = name};
    if (write) {
        op.writes = tensor_names;
        op.n_writes = 1;
    } else {
        op.reads = tensor_names;
        op.n_reads = 1;
    }
    tlsan_status st = b->saw_stream ? flush_host(b) : TLSAN_OK;
    if (st == TLSAN_OK)
        st = get_stack(b, stack, &op.stack, &op.n_stack);
    if (st == TLSAN_OK)
        st = tlsan_plan_add_op(b->plan, &op, b->err);
    b->host_pending = true;
    free(name);
    return st;
}

/* The caller gives back an output (release, a new tenant of its name, its arena's end). */
static tlsan_status end_output(builder *b, size_t index, uint64_t stack)
{
    tenant *tn = &b->tenants[index];
    if (!tn->open_output)
        return TLSAN_OK;
    tn->open_output = false;
    tn->flags &= ~(unsigned)TLSAN_TENSOR_OUTPUT;
    return add_host_op(b, "release", tn->name, false, stack);
}

static tlsan_status add_tenant(builder *b, const trace_event *ev)
{
    const char *base = NULL;
    if (ev->tag == TRACE_VIEW) {
        size_t bi = b->tenant_of[ev->base_name];
        if (bi == SIZE_MAX) {
            if (b->warn)
                fprintf(b->warn,
                        "tlsan: replay: view '%s' of '%s', which was never bound; left out\n",
                        trace_str(b->t, ev->name), trace_str(b->t, ev->base_name));
            return TLSAN_OK;
        }
        base = b->tenants[bi].name;
    }
    if (ev->a > INT64_MAX || ev->b > INT64_MAX ||
        (ev->tag == TRACE_BIND && !b->arena_names[ev->arena])) {
        /* The shim records what the engine said; a plan cannot hold it. */
        if (b->warn)
            fprintf(b->warn,
                    "tlsan: replay: %s '%s' has an offset or size past 2^63, or no arena; left "
                    "out\n",
                    ev->tag == TRACE_VIEW ? "view" : "tensor", trace_str(b->t, ev->name));
        b->tenant_of[ev->name] = SIZE_MAX;
        return TLSAN_OK;
    }
    size_t prev = b->tenant_of[ev->name];
    if (prev != SIZE_MAX) {
        tlsan_status st = end_output(b, prev, ev->stack);
        if (st != TLSAN_OK)
            return st;
    }
    if (b->n_tenants == b->cap_tenants) {
        size_t cap = b->cap_tenants ? 2 * b->cap_tenants : 64;
        tenant *grown = realloc(b->tenants, cap * sizeof *grown);
        if (!grown)
            return error_nomem(b->err);
        b->tenants = grown;
        b->cap_tenants = cap;
    }
    const char *fresh = names_next(b, &b->tensors, ev->name);
    tenant tn = {.bytes = ev->b, .offset = ev->a, .stack = ev->stack};
    tn.name = fresh ? strdup(fresh) : NULL;
    tn.view_of = base ? strdup(base) : NULL;
    if (!tn.name || (base && !tn.view_of)) {
        free(tn.name);
        free(tn.view_of);
        return error_nomem(b->err);
    }
    if (ev->tag == TRACE_BIND) {
        tn.arena = ev->arena;
        if (ev->flags & 2u) {
            tn.flags |= TLSAN_TENSOR_OUTPUT;
            tn.open_output = true;
        }
    }
    b->tenant_of[ev->name] = b->n_tenants;
    b->tenants[b->n_tenants++] = tn;
    if (ev->tag == TRACE_BIND && (ev->flags & 1u))
        return add_host_op(b, "bind", tn.name, true, ev->stack);
    return TLSAN_OK;
}

/* Adds every tenant to the plan, in bind order. */
static tlsan_status add_tenants(builder *b)
{
    for (size_t i = 0; i < b->n_tenants; i++) {
        const tenant *tn = &b->tenants[i];
        tlsan_tensor_desc td = {.name = tn->name, .bytes = tn->bytes, .flags = tn->flags};
        if (tn->view_of) {
            td.view_of = tn->view_of;
            td.view_offset_bytes = tn->offset;
        } else {
            td.arena = b->arena_names[tn->arena];
            td.offset_bytes = tn->offset;
        }
        tlsan_status st = get_stack(b, tn->stack, &td.stack, &td.n_stack);
        if (st == TLSAN_OK)
            st = tlsan_plan_add_tensor(b->plan, &td, b->err);
        if (st != TLSAN_OK)
            return st;
    }
    return TLSAN_OK;
}

static tlsan_status add_event(builder *b, const trace_event *ev)
{
    tlsan_status st = TLSAN_OK;
    switch (ev->tag) {
    case TRACE_ARENA: {
        if (ev->b > INT64_MAX) {
            if (b->warn)
                fprintf(b->warn, "tlsan: replay: arena '%s' is larger than 2^63 bytes; left out\n",
                        trace_str(b->t, ev->name));
            return TLSAN_OK;
        }
        /* An engine that creates its arena again gets "a0#2" for the second one. */
        const char *fresh = names_next(b, &b->arenas, ev->name);
        char *name = fresh ? strdup(fresh) : NULL;
        if (!name)
            return error_nomem(b->err);
        b->arena_names[ev->id] = name;
        tlsan_arena_desc a = {.name = name, .bytes = ev->b};
        return tlsan_plan_add_arena(b->plan, &a, b->err);
    }
    case TRACE_BIND:
    case TRACE_VIEW:
        return add_tenant(b, ev);
    case TRACE_RELEASE:
        if (b->tenant_of[ev->name] != SIZE_MAX)
            return end_output(b, b->tenant_of[ev->name], ev->stack);
        return TLSAN_OK;
    case TRACE_ARENA_END:
        for (size_t i = 0; i < b->n_tenants && st == TLSAN_OK; i++)
            if (b->tenants[i].arena == ev->id)
                st = end_output(b, i, ev->stack);
        return st;
    case TRACE_OP:
        return add_op(b, ev);
    case TRACE_OP_END:
        if (b->main_open && (ev->id == b->main_open || b->main_open == UINT64_MAX)) {
            b->main_open = 0;
            b->host_pending = true;
        }
        return TLSAN_OK;
    case TRACE_RECORD:
    case TRACE_WAIT:
    case TRACE_SYNC:
        return add_sync(b, ev);
    default:
        return TLSAN_OK;
    }
}

tlsan_status replay_build(const trace_data *t, const char *name, bool symbolize, FILE *warn,
                          tlsan_plan **out, tlsan_error *err)
{
    *out = NULL;
    tlsan_status st = TLSAN_OK;
    builder b = {.t = t, .err = err, .warn = warn};
    size_t n_strings = trace_n_strings(t);
    size_t n_arenas = 0;
    for (size_t i = 0; i < trace_n_events(t); i++)
        if (trace_event_at(t, i)->tag == TRACE_ARENA)
            n_arenas++;
    b.n_arenas = n_arenas;
    b.n_stacks = trace_n_stacks(t);
    b.arena_names = calloc(n_arenas + 1, sizeof *b.arena_names);
    b.stacks = calloc(b.n_stacks + 1, sizeof *b.stacks);
    b.stack_len = calloc(b.n_stacks + 1, sizeof *b.stack_len);
    b.plan = tlsan_plan_create();
    b.tenant_of = malloc((n_strings + 1) * sizeof *b.tenant_of);
    if (b.tenant_of)
        for (size_t i = 0; i <= n_strings; i++)
            b.tenant_of[i] = SIZE_MAX;
    if (!b.tenant_of || !b.arena_names || !b.stacks || !b.stack_len || !b.plan ||
        !names_init(&b.tensors, n_strings) || !names_init(&b.ops, n_strings) ||
        !names_init(&b.arenas, n_strings)) {
        st = error_nomem(err);
        goto done;
    }
    if (symbolize && !(b.sym = symbolizer_create())) {
        st = error_nomem(err);
        goto done;
    }
    if (name && (st = tlsan_plan_set_name(b.plan, name)) != TLSAN_OK)
        goto done;
    for (size_t i = 0; i < trace_n_events(t); i++) {
        st = add_event(&b, trace_event_at(t, i));
        if (st != TLSAN_OK)
            goto done;
    }
    st = add_tenants(&b);
    if (st == TLSAN_OK)
        st = tlsan_plan_finalize(b.plan, err);
    if (st == TLSAN_OK) {
        *out = b.plan;
        b.plan = NULL;
    }
done:
    tlsan_plan_free(b.plan);
    names_free(&b.tensors);
    names_free(&b.ops);
    names_free(&b.arenas);
    for (size_t i = 0; i < b.n_tenants; i++) {
        free(b.tenants[i].name);
        free(b.tenants[i].view_of);
    }
    free(b.tenants);
    free(b.tenant_of);
    free(b.stream_waited);
    if (b.arena_names)
        for (size_t i = 0; i <= n_arenas; i++)
            free(b.arena_names[i]);
    free(b.arena_names);
    if (b.stacks)
        for (size_t i = 0; i <= b.n_stacks; i++) {
            if (b.stacks[i])
                for (size_t j = 0; j < b.stack_len[i]; j++)
                    free(b.stacks[i][j]);
            free(b.stacks[i]);
        }
    free(b.stacks);
    free(b.stack_len);
    symbolizer_free(b.sym);
    return st;
}
