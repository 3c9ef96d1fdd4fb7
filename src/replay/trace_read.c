/* trace_read: decoding a libtlsan.so trace (docs/trace-format.md). */
#include "replay/trace_read.h"

#include "core/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A growable array of fixed-size items. */
typedef struct vec {
    void *data;
    size_t n, cap, item_bytes;
} vec;

static bool vec_reserve(vec *v, size_t extra)
{
    if (v->n + extra <= v->cap)
        return true;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < v->n + extra)
        cap *= 2;
    void *d = realloc(v->data, cap * v->item_bytes);
    if (!d)
        return false;
    v->data = d;
    v->cap = cap;
    return true;
}

/* Appends one item; returns its slot, NULL when out of memory. */
static void *vec_push(vec *v)
{
    if (!vec_reserve(v, 1))
        return NULL;
    return (char *)v->data + v->item_bytes * v->n++;
}

struct trace_data {
    uint32_t pid, parent_pid;
    bool truncated;
    vec strings; /* char *, index = id - 1 */
    vec modules; /* trace_module */
    vec stacks;  /* trace_stack */
    vec events;  /* trace_event */
    vec blocks;  /* void *: every other allocation, freed at the end */
    uint64_t n_arenas, n_ops;
};

/* A cursor over one payload. */
typedef struct cursor {
    const unsigned char *p, *end;
    bool bad;
} cursor;

static uint64_t get_u(cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 7 * TRACE_VARINT_MAX_BYTES; shift += 7) {
        if (c->p >= c->end) {
            c->bad = true;
            return 0;
        }
        unsigned char byte = *c->p++;
        if (shift == 63 && byte > 1) {
            c->bad = true;
            return 0;
        }
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    c->bad = true;
    return 0;
}

/* A str field: returns a pointer into the payload and its length. */
static const char *get_str(cursor *c, size_t *len)
{
    uint64_t n = get_u(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        c->bad = true;
        *len = 0;
        return "";
    }
    const char *s = (const char *)c->p;
    c->p += n;
    *len = (size_t)n;
    return s;
}

static void *keep(trace_data *t, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        return NULL;
    void **slot = vec_push(&t->blocks);
    if (!slot) {
        free(p);
        return NULL;
    }
    *slot = p;
    return p;
}

static char *keep_str(trace_data *t, const char *s, size_t len)
{
    char *copy = keep(t, len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

void trace_data_free(trace_data *t)
{
    if (!t)
        return;
    void **blocks = t->blocks.data;
    for (size_t i = 0; i < t->blocks.n; i++)
        free(blocks[i]);
    free(t->blocks.data);
    free(t->strings.data);
    free(t->modules.data);
    free(t->stacks.data);
    free(t->events.data);
    free(t);
}

static uint64_t le(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

typedef struct decoder {
    trace_data *t;
    tlsan_error *err;
    size_t offset; /* of the record being decoded, for errors */
} decoder;

static tlsan_status bad(decoder *d, const char *what)
{
    return error_fail(d->err, what, "offset %zu", d->offset);
}

/* A reference to an id must name one defined before. */
static bool check_id(uint64_t id, uint64_t n_defined, bool zero_ok)
{
    return (id == 0 && zero_ok) || (id >= 1 && id <= n_defined);
}

/* Name lists may hold 0 (a NULL name the engine passed); replay leaves those out. */
static tlsan_status read_names(decoder *d, cursor *c, uint64_t n, uint64_t *out)
{
    for (uint64_t i = 0; i < n; i++) {
        out[i] = get_u(c);
        if (c->bad)
            return bad(d, "record shorter than its fields");
        if (!check_id(out[i], d->t->strings.n, true))
            return bad(d, "reference to an undefined string id");
    }
    return TLSAN_OK;
}

/* Bounds a count read from the payload by what the remaining bytes can hold (one byte per
 * varint at least), so a hostile count cannot make us allocate without limit. */
static bool count_fits(const cursor *c, uint64_t n, uint64_t bytes_each)
{
    return !c->bad && n <= (uint64_t)(c->end - c->p) / bytes_each;
}

static tlsan_status decode_record(decoder *d, unsigned tag, cursor *c)
{
    trace_data *t = d->t;
    size_t len;
    if (tag == TRACE_STRING) {
        uint64_t id = get_u(c);
        const char *s = get_str(c, &len);
        if (c->bad)
            return bad(d, "record shorter than its fields");
        if (id != t->strings.n + 1)
            return bad(d, "string ids must be 1, 2, 3, ... in order");
        if (memchr(s, '\0', len))
            return bad(d, "string holds a NUL byte");
        char *copy = keep_str(t, s, len);
        char **slot = copy ? vec_push(&t->strings) : NULL;
        if (!slot)
            return error_nomem(d->err);
        *slot = copy;
        return TLSAN_OK;
    }
    if (tag == TRACE_MODULE) {
        uint64_t id = get_u(c);
        uint64_t base = get_u(c), size = get_u(c);
        const char *s = get_str(c, &len);
        if (c->bad)
            return bad(d, "record shorter than its fields");
        if (id != t->modules.n + 1)
            return bad(d, "module ids must be 1, 2, 3, ... in order");
        char *path = keep_str(t, s, len);
        trace_module *m = path ? vec_push(&t->modules) : NULL;
        if (!m)
            return error_nomem(d->err);
        *m = (trace_module){.base = base, .size_bytes = size, .path = path};
        return TLSAN_OK;
    }
    if (tag == TRACE_STACK) {
        uint64_t id = get_u(c);
        uint64_t n = get_u(c);
        if (!count_fits(c, n, 2))
            return bad(d, "record shorter than its fields");
        if (id != t->stacks.n + 1)
            return bad(d, "stack ids must be 1, 2, 3, ... in order");
        trace_frame *frames = keep(t, (size_t)n * sizeof *frames);
        if (!frames)
            return error_nomem(d->err);
        for (uint64_t i = 0; i < n; i++) {
            frames[i].module = get_u(c);
            frames[i].offset = get_u(c);
            if (c->bad)
                return bad(d, "record shorter than its fields");
            if (!check_id(frames[i].module, t->modules.n, true))
                return bad(d, "frame names an undefined module id");
        }
        trace_stack *s = vec_push(&t->stacks);
        if (!s)
            return error_nomem(d->err);
        *s = (trace_stack){.frames = frames, .n_frames = (size_t)n};
        return TLSAN_OK;
    }
    if (tag < TRACE_ARENA || tag > TRACE_END)
        return TLSAN_OK; /* a later version's record: skipped by its size */

    trace_event ev = {.tag = (enum trace_tag)tag};
    switch (tag) {
    case TRACE_ARENA:
        ev.id = get_u(c);
        ev.name = get_u(c);
        ev.a = get_u(c);
        ev.b = get_u(c);
        ev.stack = get_u(c);
        if (!c->bad && ev.id != t->n_arenas + 1)
            return bad(d, "arena ids must be 1, 2, 3, ... in order");
        t->n_arenas = ev.id;
        break;
    case TRACE_ARENA_END:
        ev.id = get_u(c);
        ev.stack = get_u(c);
        if (!c->bad && !check_id(ev.id, t->n_arenas, false))
            return bad(d, "reference to an undefined arena id");
        break;
    case TRACE_BIND:
        ev.name = get_u(c);
        ev.arena = get_u(c);
        ev.a = get_u(c);
        ev.b = get_u(c);
        ev.flags = get_u(c);
        ev.stack = get_u(c);
        (void)get_u(c); /* thread id */
        if (!c->bad && !check_id(ev.arena, t->n_arenas, false))
            return bad(d, "reference to an undefined arena id");
        break;
    case TRACE_VIEW:
        ev.name = get_u(c);
        ev.base_name = get_u(c);
        ev.a = get_u(c);
        ev.b = get_u(c);
        ev.stack = get_u(c);
        if (!c->bad && !check_id(ev.base_name, t->strings.n, false))
            return bad(d, "reference to an undefined string id");
        break;
    case TRACE_RELEASE:
        ev.name = get_u(c);
        ev.flags = get_u(c);
        ev.stack = get_u(c);
        break;
    case TRACE_OP: {
        ev.id = get_u(c);
        ev.name = get_u(c);
        ev.a = get_u(c);
        uint64_t counts[3];
        uint64_t *names[3];
        for (int k = 0; k < 3; k++) {
            counts[k] = get_u(c);
            if (c->bad || counts[k] > UINT32_MAX)
                return bad(d, "record shorter than its fields");
            uint64_t n = k == 2 ? counts[k] * 2 : counts[k];
            if (!count_fits(c, n, 1))
                return bad(d, "record shorter than its fields");
            names[k] = keep(t, (size_t)n * sizeof(uint64_t));
            if (!names[k])
                return error_nomem(d->err);
            tlsan_status st = read_names(d, c, n, names[k]);
            if (st != TLSAN_OK)
                return st;
        }
        uint64_t total = counts[0] + counts[1] + 2 * counts[2];
        uint64_t *all = keep(t, (size_t)total * sizeof(uint64_t));
        if (!all)
            return error_nomem(d->err);
        memcpy(all, names[0], counts[0] * sizeof(uint64_t));
        memcpy(all + counts[0], names[1], counts[1] * sizeof(uint64_t));
        memcpy(all + counts[0] + counts[1], names[2], 2 * counts[2] * sizeof(uint64_t));
        ev.names = all;
        ev.n_reads = (size_t)counts[0];
        ev.n_writes = (size_t)counts[1];
        ev.n_inplace = (size_t)counts[2];
        ev.stack = get_u(c);
        (void)get_u(c); /* thread id */
        t->n_ops++;
        break;
    }
    case TRACE_OP_END:
        ev.id = get_u(c);
        break;
    case TRACE_RECORD:
        ev.a = get_u(c); /* event */
        ev.b = get_u(c); /* stream */
        ev.stack = get_u(c);
        break;
    case TRACE_WAIT:
        ev.b = get_u(c); /* stream */
        ev.a = get_u(c); /* event */
        ev.stack = get_u(c);
        break;
    case TRACE_SYNC:
        ev.stack = get_u(c);
        break;
    case TRACE_PLAN: {
        const char *s = get_str(c, &len);
        ev.stack = get_u(c);
        if (c->bad)
            break;
        char *copy = keep_str(t, s, len);
        if (!copy)
            return error_nomem(d->err);
        ev.text = copy;
        ev.text_bytes = len;
        break;
    }
    case TRACE_FINDING: {
        const char *kind = get_str(c, &len);
        char *kind_copy = c->bad ? NULL : keep_str(t, kind, len);
        size_t mlen;
        const char *msg = get_str(c, &mlen);
        char *msg_copy = c->bad ? NULL : keep_str(t, msg, mlen);
        if (c->bad)
            break;
        if (!kind_copy || !msg_copy)
            return error_nomem(d->err);
        ev.text = kind_copy;
        ev.text_bytes = len;
        ev.message = msg_copy;
        uint64_t n = get_u(c);
        if (!count_fits(c, n, 1))
            return bad(d, "record shorter than its fields");
        uint64_t *tensors = keep(t, (size_t)n * sizeof(uint64_t));
        if (!tensors)
            return error_nomem(d->err);
        tlsan_status st = read_names(d, c, n, tensors);
        if (st != TLSAN_OK)
            return st;
        ev.names = tensors;
        ev.n_reads = (size_t)n;
        uint64_t n_roles = get_u(c);
        if (!count_fits(c, n_roles, 2))
            return bad(d, "record shorter than its fields");
        const char **roles = keep(t, (size_t)n_roles * sizeof(char *));
        uint64_t *stacks = keep(t, (size_t)n_roles * sizeof(uint64_t));
        if (!roles || !stacks)
            return error_nomem(d->err);
        for (uint64_t i = 0; i < n_roles; i++) {
            const char *r = get_str(c, &len);
            stacks[i] = get_u(c);
            if (c->bad)
                return bad(d, "record shorter than its fields");
            if (!check_id(stacks[i], t->stacks.n, true))
                return bad(d, "reference to an undefined stack id");
            if (!(roles[i] = keep_str(t, r, len)))
                return error_nomem(d->err);
        }
        ev.roles = roles;
        ev.role_stacks = stacks;
        ev.n_roles = (size_t)n_roles;
        /* Added later in version 1: absent from older traces. */
        if (c->p < c->end)
            ev.fault_stacks = get_u(c);
        if (c->p < c->end)
            ev.suppressed = (get_u(c) & TRACE_FINDING_SUPPRESSED) != 0;
        break;
    }
    case TRACE_END:
        ev.a = get_u(c);
        break;
    }
    if (c->bad)
        return bad(d, "record shorter than its fields");
    if (ev.name && !check_id(ev.name, t->strings.n, false))
        return bad(d, "reference to an undefined string id");
    if (!check_id(ev.stack, t->stacks.n, true))
        return bad(d, "reference to an undefined stack id");
    trace_event *slot = vec_push(&t->events);
    if (!slot)
        return error_nomem(d->err);
    *slot = ev;
    return TLSAN_OK;
}

tlsan_status trace_read_buffer(const void *data, size_t n_bytes, const char *label,
                               trace_data **out, tlsan_error *err)
{
    *out = NULL;
    const unsigned char *p = data;
    tlsan_status st = TLSAN_OK;
    trace_data *t = calloc(1, sizeof *t);
    if (!t)
        return error_nomem(err);
    t->strings.item_bytes = sizeof(char *);
    t->modules.item_bytes = sizeof(trace_module);
    t->stacks.item_bytes = sizeof(trace_stack);
    t->events.item_bytes = sizeof(trace_event);
    t->blocks.item_bytes = sizeof(void *);
    decoder d = {.t = t, .err = err, .offset = 0};

    if (n_bytes < TRACE_HEADER_BYTES || memcmp(p, TRACE_MAGIC, TRACE_MAGIC_BYTES) != 0) {
        st = bad(&d, "not a tlsan trace (no TLSANTRC header)");
        goto fail;
    }
    if (le(p + TRACE_HEADER_AT_VERSION, 2) != TRACE_VERSION) {
        st = error_failf(err, "offset 8", "trace version %u is not supported (this tlsan reads %u)",
                         (unsigned)le(p + TRACE_HEADER_AT_VERSION, 2), (unsigned)TRACE_VERSION);
        goto fail;
    }
    /* Every field is little-endian or a varint whatever machine recorded it, and addresses
     * are varints, so either byte order and 4- or 8-byte pointers read the same way; other
     * values are not a trace this reader understands (a damaged header, or a later format). */
    unsigned pointer_bytes = p[TRACE_HEADER_AT_POINTER_SIZE];
    if (pointer_bytes != 4 && pointer_bytes != 8) {
        st = error_failf(err, "offset 10", "pointer size %u is not 4 or 8", pointer_bytes);
        goto fail;
    }
    unsigned byte_order = p[TRACE_HEADER_AT_BYTE_ORDER];
    if (byte_order != TRACE_LITTLE_ENDIAN && byte_order != TRACE_BIG_ENDIAN) {
        st = error_failf(err, "offset 11",
                         "byte order %u is not %u (little-endian) or %u (big-endian)", byte_order,
                         (unsigned)TRACE_LITTLE_ENDIAN, (unsigned)TRACE_BIG_ENDIAN);
        goto fail;
    }
    uint64_t header_bytes = le(p + TRACE_HEADER_AT_HEADER_BYTES, 4);
    if (header_bytes < TRACE_HEADER_BYTES || header_bytes > n_bytes) {
        st = error_fail(err, "header size out of range", "offset 12");
        goto fail;
    }
    t->pid = (uint32_t)le(p + TRACE_HEADER_AT_PID, 4);
    t->parent_pid = (uint32_t)le(p + TRACE_HEADER_AT_PARENT_PID, 4);

    bool ended = false;
    size_t pos = (size_t)header_bytes;
    while (pos < n_bytes) {
        d.offset = pos;
        unsigned tag = p[pos];
        if (tag == 0)
            break; /* the unwritten tail of a trace whose process died */
        cursor hdr = {.p = p + pos + 1, .end = p + n_bytes};
        uint64_t payload = get_u(&hdr);
        if (hdr.bad || payload > (uint64_t)(hdr.end - hdr.p)) {
            t->truncated = true; /* a torn last record */
            break;
        }
        cursor c = {.p = hdr.p, .end = hdr.p + payload};
        st = decode_record(&d, tag, &c);
        if (st != TLSAN_OK)
            goto fail;
        if (tag == TRACE_END)
            ended = true;
        pos = (size_t)(c.end - p);
    }
    if (!ended)
        t->truncated = true;
    *out = t;
    return TLSAN_OK;
fail:
    trace_data_free(t);
    snprintf(err->file, sizeof err->file, "%s", label ? label : "");
    return st;
}

tlsan_status trace_read_file(const char *path, trace_data **out, tlsan_error *err)
{
    *out = NULL;
    tlsan_status st = TLSAN_OK;
    unsigned char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        error_failf(err, "", "cannot open: %s", strerror(errno));
        snprintf(err->file, sizeof err->file, "%s", path);
        return TLSAN_ERR_IO;
    }
    /* A trace is a file: a device or a FIFO could feed bytes without end. */
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        error_fail(err, "not a regular file", "%s", "offset 0");
        snprintf(err->file, sizeof err->file, "%s", path);
        return TLSAN_ERR_INVALID;
    }
    size_t cap = 1 << 16, n = 0;
    buf = malloc(cap);
    if (!buf) {
        st = error_nomem(err);
        goto done;
    }
    for (;;) {
        if (n == cap) {
            unsigned char *b = realloc(buf, cap * 2);
            if (!b) {
                st = error_nomem(err);
                goto done;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        error_failf(err, "", "cannot read: %s", strerror(errno));
        snprintf(err->file, sizeof err->file, "%s", path);
        st = TLSAN_ERR_IO;
        goto done;
    }
    st = trace_read_buffer(buf, n, path, out, err);
done:
    free(buf);
    fclose(f);
    return st;
}

uint32_t trace_pid(const trace_data *t)
{
    return t->pid;
}

uint32_t trace_parent_pid(const trace_data *t)
{
    return t->parent_pid;
}

bool trace_truncated(const trace_data *t)
{
    return t->truncated;
}

size_t trace_n_events(const trace_data *t)
{
    return t->events.n;
}

const trace_event *trace_event_at(const trace_data *t, size_t index)
{
    return index < t->events.n ? (const trace_event *)t->events.data + index : NULL;
}

const char *trace_str(const trace_data *t, uint64_t id)
{
    return id >= 1 && id <= t->strings.n ? ((char **)t->strings.data)[id - 1] : NULL;
}

trace_stack trace_stack_get(const trace_data *t, uint64_t id)
{
    if (id >= 1 && id <= t->stacks.n)
        return ((const trace_stack *)t->stacks.data)[id - 1];
    return (trace_stack){0};
}

const trace_module *trace_module_get(const trace_data *t, uint64_t id)
{
    return id >= 1 && id <= t->modules.n ? (const trace_module *)t->modules.data + id - 1 : NULL;
}

size_t trace_n_modules(const trace_data *t)
{
    return t->modules.n;
}

size_t trace_n_strings(const trace_data *t)
{
    return t->strings.n;
}

size_t trace_n_stacks(const trace_data *t)
{
    return t->stacks.n;
}
