/* reader: plan and plan-cache JSON, streamed through yajl into the plan builder.
 *
 * Every open JSON object or list is a frame. A frame knows what it holds (a plan, the
 * tensors list, one op, a list of names, an ignored value, ...), so each yajl event is
 * handled by looking at the innermost frame only. Objects collect their keys so that a
 * repeated key is refused anywhere, also inside ignored values. An arena, tensor or op is
 * gathered into one reused scratch record and handed to the builder when its object ends;
 * lists are in document order, so builder indices equal JSON indices.
 *
 * The top-level object may list its keys in any order, so until "tlsan_plan" or
 * "tlsan_plan_cache" says what it is, plan keys are read into a plan and "plans" into a
 * cache side by side. An error in the content of the side that turns out not to apply is
 * forgotten (such keys are merely unknown there); it is reported once that side is
 * confirmed. */
#include "core/strtab.h"
#include "core/json_error.h"
#include "core/text_pos.h"
#include "core/utf8.h"
#include "import/reader.h"
#include "check/cache.h"
#include "check/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#define DEFAULT_CHUNK_BYTES (64 * 1024)
#define FIELD_LEN_CLASSES   20
#define NO_OFF              SIZE_MAX

typedef enum ctx_kind {
    CTX_SKIP, /* an ignored value: only its keys are checked for repeats */
    CTX_DOC,  /* the top-level object */
    CTX_PLAN, /* a plan inside a cache's "plans" */
    CTX_PLANS,
    CTX_KEY, /* inside a cache plan's "key", at any depth */
    CTX_ARENAS,
    CTX_ARENA,
    CTX_TENSORS,
    CTX_TENSOR,
    CTX_OPS,
    CTX_OP,
    CTX_STRINGS, /* a list of strings; the frame's field says which */
    CTX_SHAPE,
    CTX_LIFETIME,
    CTX_INPLACE,
    CTX_PAIR,
    CTX_BRANCHES,
    CTX_BRANCH,
    CTX_COUNT_
} ctx_kind;

typedef enum field {
    F_UNKNOWN,
    F_TLSAN_PLAN,
    F_TLSAN_PLAN_CACHE,
    F_NAME,
    F_SCHEDULE,
    F_ARENAS,
    F_TENSORS,
    F_OPS,
    F_PLANS,
    F_KEY,
    F_BYTES,
    F_ALIGNMENT,
    F_MEMORY,
    F_ARENA,
    F_OFFSET,
    F_VIEW_OF,
    F_VIEW_OFFSET,
    F_INPUT,
    F_OUTPUT,
    F_CONSTANT,
    F_LIFETIME,
    F_DTYPE,
    F_SHAPE,
    F_STACK,
    F_READS,
    F_WRITES,
    F_INPLACE,
    F_STREAM,
    F_AFTER,
    F_BRANCH,
    F_LOOP,
    F_RECORD,
    F_WAIT,
    F_SYNC,
    F_IF,
    F_ARM,
    F_COUNT_
} field;

static const char *const field_names[F_COUNT_] = {
    [F_UNKNOWN] = "",
    [F_TLSAN_PLAN] = "tlsan_plan",
    [F_TLSAN_PLAN_CACHE] = "tlsan_plan_cache",
    [F_NAME] = "name",
    [F_SCHEDULE] = "schedule",
    [F_ARENAS] = "arenas",
    [F_TENSORS] = "tensors",
    [F_OPS] = "ops",
    [F_PLANS] = "plans",
    [F_KEY] = "key",
    [F_BYTES] = "bytes",
    [F_ALIGNMENT] = "alignment",
    [F_MEMORY] = "memory",
    [F_ARENA] = "arena",
    [F_OFFSET] = "offset",
    [F_VIEW_OF] = "view_of",
    [F_VIEW_OFFSET] = "view_offset",
    [F_INPUT] = "input",
    [F_OUTPUT] = "output",
    [F_CONSTANT] = "constant",
    [F_LIFETIME] = "lifetime",
    [F_DTYPE] = "dtype",
    [F_SHAPE] = "shape",
    [F_STACK] = "stack",
    [F_READS] = "reads",
    [F_WRITES] = "writes",
    [F_INPLACE] = "inplace",
    [F_STREAM] = "stream",
    [F_AFTER] = "after",
    [F_BRANCH] = "branch",
    [F_LOOP] = "loop",
    [F_RECORD] = "record",
    [F_WAIT] = "wait",
    [F_SYNC] = "sync",
    [F_IF] = "if",
    [F_ARM] = "arm",
};

#define FB(f)        (UINT64_C(1) << (f))
#define PLAN_CONTENT (FB(F_NAME) | FB(F_SCHEDULE) | FB(F_ARENAS) | FB(F_TENSORS) | FB(F_OPS))

/* The keys each kind of object knows; any other key is ignored. */
static const uint64_t fields_of[CTX_COUNT_] = {
    [CTX_DOC] = FB(F_TLSAN_PLAN) | FB(F_TLSAN_PLAN_CACHE) | PLAN_CONTENT | FB(F_PLANS),
    [CTX_PLAN] = FB(F_TLSAN_PLAN) | PLAN_CONTENT | FB(F_KEY),
    [CTX_ARENA] = FB(F_NAME) | FB(F_BYTES) | FB(F_ALIGNMENT) | FB(F_MEMORY),
    [CTX_TENSOR] = FB(F_NAME) | FB(F_BYTES) | FB(F_ARENA) | FB(F_OFFSET) | FB(F_VIEW_OF) |
                   FB(F_VIEW_OFFSET) | FB(F_ALIGNMENT) | FB(F_MEMORY) | FB(F_INPUT) | FB(F_OUTPUT) |
                   FB(F_CONSTANT) | FB(F_LIFETIME) | FB(F_DTYPE) | FB(F_SHAPE) | FB(F_STACK),
    [CTX_OP] = FB(F_NAME) | FB(F_READS) | FB(F_WRITES) | FB(F_INPLACE) | FB(F_STREAM) |
               FB(F_AFTER) | FB(F_BRANCH) | FB(F_LOOP) | FB(F_STACK) | FB(F_RECORD) | FB(F_WAIT) |
               FB(F_SYNC),
    [CTX_BRANCH] = FB(F_IF) | FB(F_ARM),
};

typedef enum vkind { V_NULL, V_BOOL, V_NUM, V_STR, V_MAP, V_ARR } vkind;

static const char *const vkind_names[] = {"null",     "a boolean", "a number",
                                          "a string", "an object", "a list"};

typedef struct frame {
    uint8_t kind;  /* ctx_kind */
    uint8_t field; /* map: field of the current key; list of strings: which list */
    bool is_map;
    size_t n_items;   /* list: values begun so far; map: keys so far */
    size_t key_start; /* map: index of its first key in reader.keys */
    uint32_t *slots;  /* map with many keys: open-addressing hash of key index + 1 */
    size_t n_slots;
    uint64_t known_keys; /* map of a fixed key set: FB(field) of the known keys given */
    size_t cur_key;      /* map: the current key's index in reader.keys, or NO_OFF when it is
                            a known field, field_names[field] */
} frame;

typedef struct key_ent {
    size_t off, len;
    uint64_t hash;
} key_ent;

/* Strings of the current object, as offsets into obj.chars (NO_OFF when absent). */
enum {
    S_NAME,
    S_ARENA,
    S_VIEW_OF,
    S_MEMORY,
    S_STREAM,
    S_LOOP,
    S_RECORD,
    S_WAIT,
    S_IF,
    S_ARM,
    S_COUNT_
};
/* Lists of strings of the current object (offsets into obj.chars). */
enum { L_STACK, L_READS, L_WRITES, L_AFTER, L_INPLACE, L_BRANCH, L_COUNT_ };

typedef struct offvec {
    size_t *v;
    size_t n, cap;
} offvec;

/* The arena, tensor or op being read; reused for every object so that its buffers are
 * allocated once for the largest object, not once per object. */
typedef struct obj {
    uint64_t seen;    /* FB(field) of the keys given */
    int line, column; /* where its object begins */
    size_t str[S_COUNT_];
    uint64_t bytes, offset, view_offset, alignment;
    unsigned flags;
    int64_t lifetime[2];
    size_t n_lifetime;
    tlsan_dtype dtype;
    size_t n_sync; /* how many of record, wait, sync=true */
    tlsan_sync_kind sync;
    bool branch_single; /* "branch" was one object, not a list */
    uint64_t branch_seen;
    char *chars;
    size_t n_chars, cap_chars;
    offvec lists[L_COUNT_];
    uint64_t *shape;
    size_t n_shape, cap_shape;
    const char **ptrs; /* lists turned into pointers when the object ends */
    size_t cap_ptrs;
    tlsan_cond *conds;
    size_t cap_conds;
} obj;

typedef struct plan_ctx {
    tlsan_plan *plan;
    uint64_t seen; /* FB(field) of the plan keys given */
    char *key;     /* cache plans: canonical key */
    size_t key_len;
} plan_ctx;

enum { DOC_UNKNOWN, DOC_PLAN, DOC_CACHE };

typedef struct reader {
    json_escape_scan escapes;   /* surrogate pairing of unicode escapes, on the raw text */
    size_t field_len[F_COUNT_]; /* strlen of each field name */
    /* FB(field) of the field names of each first byte and of each length (longer names in
     * the last entry), so that a key is compared with one or two names, not all */
    uint64_t fields_by_first[128];
    uint64_t fields_by_len[FIELD_LEN_CLASSES];
    /* The last dtype read, by its text: most tensors of a plan share one or two */
    char dtype_text[8];
    size_t dtype_len; /* 0: none yet */
    tlsan_dtype dtype;
    /* The string value being read holds a NUL (\u0000): cb_string() found it not valid text,
     * which every other string is, so get_str() need not scan it again */
    bool str_nul;
    yajl_alloc_funcs af;
    reader_options opt;
    yajl_handle h;
    const char *label;

    tlsan_status st; /* first final error, TLSAN_OK while all is well */
    tlsan_error e;
    tlsan_error tmp; /* the error being raised */

    frame *frames;
    size_t n_frames, cap_frames;
    key_ent *keys;
    size_t n_keys, cap_keys;
    char *keychars;
    size_t n_keychars, cap_keychars;

    int doc_kind;
    tlsan_status plan_st, cache_st; /* errors of a side not yet confirmed */
    tlsan_error plan_err, cache_err;

    plan_ctx doc; /* the top-level plan */
    plan_ctx sub; /* the cache plan being read */
    plan_ctx *cur;
    size_t plan_index; /* index of sub in "plans" */
    tlsan_cache *cache;
    ckey *key;
    obj o;

    int line, column; /* position of the next byte fed to yajl, 1-based */
    /* A cursor in the chunk yajl is parsing, moved forward only, so that finding where each
     * object begins costs one pass over the text: byte offset and its line and column. */
    const unsigned char *chunk;
    size_t cur_off;
    int cur_line, cur_column;
    int map_line, map_column; /* where the object just opened begins */
    bool done;
} reader;

/* ---- memory ---- */

static int rgrow(reader *r, void **v, size_t *cap, size_t n, size_t extra, size_t elem)
{
    if (n + extra <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n + extra) {
        if (c > SIZE_MAX / 4 / elem)
            return -1;
        c *= 2;
    }
    void *p = r->af.realloc(r->af.ctx, *v, c * elem);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

#define RGROW(r, ptr, cap, n, extra)                                                               \
    rgrow((r), (void **)&(ptr), &(cap), (n), (extra), sizeof *(ptr))

static void rfree(reader *r, void *p)
{
    if (p)
        r->af.free(r->af.ctx, p);
}

/* ---- errors ---- */

/* Writes the JSON path of the value in the innermost `depth` frames (each contributing its
 * current key or index), then `.suffix` when given. */
static void build_where(const reader *r, size_t depth, const char *suffix, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < depth && used < n; i++) {
        const frame *f = &r->frames[i];
        int w;
        if (f->is_map) {
            if (f->n_items == 0)
                continue;
            if (f->cur_key == NO_OFF) {
                w = snprintf(buf + used, n - used, "%s%s", used ? "." : "", field_names[f->field]);
            } else {
                const key_ent *k = &r->keys[f->cur_key];
                w = snprintf(buf + used, n - used, "%s%.*s", used ? "." : "", (int)k->len,
                             r->keychars + k->off);
            }
        } else {
            if (f->n_items == 0)
                continue;
            w = snprintf(buf + used, n - used, "[%zu]", f->n_items - 1);
        }
        if (w < 0)
            return;
        used += (size_t)w;
    }
    if (suffix && used < n)
        snprintf(buf + used, n - used, "%s%s", used ? "." : "", suffix);
}

/* Drops every partial result of the side an error belongs to and turns the frames inside
 * the top-level object into ignored values, so that the rest of that key is only checked
 * for syntax and repeated keys. */
static void abandon_side(reader *r, bool cache_side)
{
    for (size_t i = 1; i < r->n_frames; i++)
        r->frames[i].kind = CTX_SKIP;
    if (cache_side) {
        tlsan_plan_free(r->sub.plan);
        rfree(r, r->sub.key);
        memset(&r->sub, 0, sizeof r->sub);
        if (r->key)
            ckey_reset(r->key);
    }
    r->cur = &r->doc;
}

/* Raises the error in r->tmp, found at `depth` frames. Returns true when reading goes on:
 * the error belongs to a side of the top-level object that is not confirmed yet. */
static bool raise_error(reader *r, size_t depth, tlsan_status st, bool any_side)
{
    snprintf(r->tmp.file, sizeof r->tmp.file, "%s", r->label);
    if (!any_side && st == TLSAN_ERR_INVALID && depth >= 1 && r->doc_kind == DOC_UNKNOWN &&
        r->n_frames >= 1 && r->frames[0].kind == CTX_DOC) {
        uint8_t top = r->frames[0].field;
        bool cache_side = top == F_PLANS;
        if (cache_side || (FB(top) & PLAN_CONTENT)) {
            tlsan_status *sst = cache_side ? &r->cache_st : &r->plan_st;
            if (*sst == TLSAN_OK) {
                *sst = st;
                *(cache_side ? &r->cache_err : &r->plan_err) = r->tmp;
            }
            abandon_side(r, cache_side);
            return true;
        }
    }
    if (r->st == TLSAN_OK) {
        r->st = st;
        r->e = r->tmp;
    }
    return false;
}

static bool fail_at(reader *r, size_t depth, const char *suffix, bool any_side, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));

static bool fail_at(reader *r, size_t depth, const char *suffix, bool any_side, const char *fmt,
                    ...)
{
    memset(&r->tmp, 0, sizeof r->tmp);
    build_where(r, depth, suffix, r->tmp.where, sizeof r->tmp.where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->tmp.what, sizeof r->tmp.what, fmt, ap);
    va_end(ap);
    utf8_trim_partial(r->tmp.where);
    utf8_trim_partial(r->tmp.what);
    raise_error(r, depth, TLSAN_ERR_INVALID, any_side);
    return false;
}

/* An error in the value being read (its path ends with the current key or index). */
#define FAIL_VALUE(r, ...) fail_at((r), (r)->n_frames, NULL, false, __VA_ARGS__)
/* An error in the object being closed (the innermost frame), at its key `suffix`. */
#define FAIL_OBJECT(r, suffix, ...) fail_at((r), (r)->n_frames - 1, (suffix), false, __VA_ARGS__)

static bool nomem(reader *r)
{
    memset(&r->tmp, 0, sizeof r->tmp);
    snprintf(r->tmp.what, sizeof r->tmp.what, "out of memory");
    raise_error(r, 0, TLSAN_ERR_NOMEM, true);
    return false;
}

/* Passes on an error of the plan builder, whose `where` is relative to the plan; a plan
 * inside a cache gets "plans[I]." in front. `depth` places it for raise_error(). */
static bool fail_builder(reader *r, tlsan_status st, const tlsan_error *be, size_t depth)
{
    if (st == TLSAN_ERR_NOMEM)
        return nomem(r);
    memset(&r->tmp, 0, sizeof r->tmp);
    if (r->cur == &r->sub)
        snprintf(r->tmp.where, sizeof r->tmp.where, "plans[%zu]%s%.200s", r->plan_index,
                 be->where[0] ? "." : "", be->where);
    else
        snprintf(r->tmp.where, sizeof r->tmp.where, "%s", be->where);
    snprintf(r->tmp.what, sizeof r->tmp.what, "%s",
             st == TLSAN_ERR_INVALID ? be->what : tlsan_status_name(st));
    raise_error(r, depth, st == TLSAN_ERR_INVALID ? st : TLSAN_ERR_INVALID, false);
    return false;
}

/* ---- frames and keys ---- */

static frame *top(reader *r)
{
    return &r->frames[r->n_frames - 1];
}

static bool push(reader *r, ctx_kind kind, bool is_map, uint8_t field_id)
{
    if (RGROW(r, r->frames, r->cap_frames, r->n_frames, 1) != 0)
        return nomem(r);
    r->frames[r->n_frames++] =
        (frame){(uint8_t)kind, field_id, is_map, 0, r->n_keys, NULL, 0, 0, NO_OFF};
    return true;
}

static void pop(reader *r)
{
    frame *f = top(r);
    rfree(r, f->slots);
    if (f->is_map) {
        if (f->key_start < r->n_keys)
            r->n_keychars = r->keys[f->key_start].off;
        r->n_keys = f->key_start;
    }
    r->n_frames--;
}

static bool key_equal(const reader *r, size_t i, const char *s, size_t len, uint64_t h)
{
    const key_ent *k = &r->keys[i];
    return k->hash == h && k->len == len && memcmp(r->keychars + k->off, s, len) == 0;
}

/* Small maps are scanned; a map with many keys gets a hash index, so that a huge ignored
 * object costs linear time, not quadratic. */
#define SCAN_KEYS 8

static void slots_insert(reader *r, frame *f, size_t idx)
{
    size_t mask = f->n_slots - 1;
    size_t s = (size_t)r->keys[idx].hash & mask;
    while (f->slots[s])
        s = (s + 1) & mask;
    f->slots[s] = (uint32_t)(idx - f->key_start + 1);
}

/* Records key s in map f. Returns 1 when it repeats a key of f, 0 when added, -1 when out
 * of memory. */
static int add_key(reader *r, frame *f, const char *s, size_t len)
{
    uint64_t h = strtab_hash(s, len);
    size_t n = r->n_keys - f->key_start;
    if (f->slots) {
        size_t mask = f->n_slots - 1;
        for (size_t i = (size_t)h & mask; f->slots[i]; i = (i + 1) & mask)
            if (key_equal(r, f->key_start + f->slots[i] - 1, s, len, h))
                return 1;
    } else {
        for (size_t i = f->key_start; i < r->n_keys; i++)
            if (key_equal(r, i, s, len, h))
                return 1;
    }
    if (n + 1 >= UINT32_MAX || RGROW(r, r->keys, r->cap_keys, r->n_keys, 1) != 0 ||
        RGROW(r, r->keychars, r->cap_keychars, r->n_keychars, len + 1) != 0)
        return -1;
    memcpy(r->keychars + r->n_keychars, s, len);
    r->keys[r->n_keys++] = (key_ent){r->n_keychars, len, h};
    r->n_keychars += len;
    n++;
    if (n > SCAN_KEYS) {
        if (!f->slots || 2 * n > f->n_slots) {
            size_t ns = f->n_slots ? 2 * f->n_slots : 64;
            while (2 * n > ns)
                ns *= 2;
            uint32_t *sl = r->af.malloc(r->af.ctx, ns * sizeof *sl);
            if (!sl)
                return -1;
            memset(sl, 0, ns * sizeof *sl);
            rfree(r, f->slots);
            f->slots = sl;
            f->n_slots = ns;
            for (size_t i = f->key_start; i < r->n_keys; i++)
                slots_insert(r, f, i);
        } else {
            slots_insert(r, f, r->n_keys - 1);
        }
    }
    return 0;
}

/* Whether n bytes at a and b are equal: a field name is a few bytes, which a loop compares
 * in fewer instructions than a call to memcmp (1.9 % of views' instructions went there). */
static bool same_bytes(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static field lookup_field(const reader *r, ctx_kind kind, const char *s, size_t len)
{
    if (len == 0)
        return F_UNKNOWN;
    uint64_t allowed = fields_of[kind];
    if (kind == CTX_DOC) {
        /* Once the document says what it is, the other side's keys are unknown keys. */
        if (r->doc_kind == DOC_PLAN || r->cache_st != TLSAN_OK)
            allowed &= ~FB(F_PLANS);
        if (r->doc_kind == DOC_CACHE || r->plan_st != TLSAN_OK)
            allowed &= ~PLAN_CONTENT;
    }
    if ((unsigned char)s[0] >= 128)
        return F_UNKNOWN;
    uint64_t candidates = allowed & r->fields_by_first[(unsigned char)s[0]] &
                          r->fields_by_len[len < FIELD_LEN_CLASSES ? len : FIELD_LEN_CLASSES - 1];
    for (; candidates; candidates &= candidates - 1) {
        int f = __builtin_ctzll(candidates);
        if (r->field_len[f] == len && same_bytes(field_names[f], s, len))
            return (field)f;
    }
    return F_UNKNOWN;
}

/* ---- scalar values ---- */

enum { NUM_INT, NUM_FRACTION, NUM_BIG };

/* Classifies a JSON number literal; stores an integer that fits int64 in *out. One pass: a
 * plan holds a number or two per tensor. yajl hands over only well-formed literals, so the
 * first byte that is not a digit (after the sign) starts a fraction or an exponent. */
static int parse_int(const char *s, size_t len, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    size_t i = neg;
    /* 18 digits cannot reach the limit: only longer numbers are checked digit by digit */
    size_t unchecked = len - i < 18 ? len : i + 18;
    for (; i < unchecked; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return NUM_FRACTION;
        v = v * 10 + d;
    }
    bool big = false;
    for (; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return NUM_FRACTION;
        if (big || v > (limit - d) / 10) {
            big = true; /* still looking for a fraction or exponent */
            continue;
        }
        v = v * 10 + d;
    }
    if (big)
        return NUM_BIG;
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return NUM_INT;
}

/* What a value is, for messages: its type, or for a number its literal. */
static void describe(vkind vk, const char *s, size_t len, char *buf, size_t n)
{
    if (vk == V_NUM)
        snprintf(buf, n, "%.*s%s", (int)(len > 40 ? 40 : len), s, len > 40 ? "..." : "");
    else
        snprintf(buf, n, "%s", vkind_names[vk]);
}

/* Reads an integer in [min, 2^63-1] for key `label`. */
static bool get_count(reader *r, vkind vk, const char *s, size_t len, const char *label,
                      uint64_t min, const char *range_what, uint64_t *out)
{
    int64_t v = 0;
    int k = vk == V_NUM ? parse_int(s, len, &v) : -1;
    if (k == NUM_INT && v >= 0 && (uint64_t)v >= min) {
        *out = (uint64_t)v;
        return true;
    }
    char d[64];
    describe(vk, s, len, d, sizeof d);
    if (vk != V_NUM)
        return FAIL_VALUE(r, "'%s' must be an integer, not %s", label, d);
    if (k == NUM_FRACTION)
        return FAIL_VALUE(r, "'%s' must be an integer: %s is not an integer", label, d);
    return FAIL_VALUE(r, "%s: %s", range_what, d);
}

static bool check_text(reader *r, const char *label)
{
    if (r->str_nul)
        return FAIL_VALUE(r, "'%s' contains a NUL character (\\u0000); names are C strings here",
                          label);
    return true;
}

/* Copies a string value into the object's scratch; *off is where it starts. */
static bool get_str(reader *r, vkind vk, const char *s, size_t len, const char *label,
                    bool nonempty, size_t *off)
{
    if (vk != V_STR)
        return FAIL_VALUE(r, "'%s' must be a string, not %s", label, vkind_names[vk]);
    if (nonempty && len == 0)
        return FAIL_VALUE(r, "'%s' must be a non-empty string", label);
    if (!check_text(r, label))
        return false;
    obj *o = &r->o;
    if (RGROW(r, o->chars, o->cap_chars, o->n_chars, len + 1) != 0)
        return nomem(r);
    memcpy(o->chars + o->n_chars, s, len);
    o->chars[o->n_chars + len] = '\0';
    *off = o->n_chars;
    o->n_chars += len + 1;
    return true;
}

static bool get_bool(reader *r, vkind vk, bool b, const char *label, bool *out)
{
    if (vk != V_BOOL)
        return FAIL_VALUE(r, "'%s' must be true or false, not %s", label, vkind_names[vk]);
    *out = b;
    return true;
}

static bool push_off(reader *r, int list, size_t off)
{
    offvec *v = &r->o.lists[list];
    if (RGROW(r, v->v, v->cap, v->n, 1) != 0)
        return nomem(r);
    v->v[v->n++] = off;
    return true;
}

static void obj_reset(obj *o)
{
    o->seen = 0;
    for (int i = 0; i < S_COUNT_; i++)
        o->str[i] = NO_OFF;
    o->bytes = o->offset = o->view_offset = o->alignment = 0;
    o->flags = 0;
    o->n_lifetime = 0;
    o->dtype = TLSAN_DTYPE_NONE;
    o->n_sync = 0;
    o->sync = TLSAN_SYNC_NONE;
    o->branch_single = false;
    o->branch_seen = 0;
    o->n_chars = 0;
    for (int i = 0; i < L_COUNT_; i++)
        o->lists[i].n = 0;
    o->n_shape = 0;
}

static const char *ostr(const obj *o, int s)
{
    return o->str[s] == NO_OFF ? NULL : o->chars + o->str[s];
}

/* Turns list `l` of the scratch into pointers starting at o->ptrs[*used]. */
static const char *const *olist(obj *o, int l, size_t *used)
{
    const char **p = o->ptrs + *used;
    for (size_t i = 0; i < o->lists[l].n; i++)
        p[i] = o->chars + o->lists[l].v[i];
    *used += o->lists[l].n;
    return p;
}

static bool prepare_ptrs(reader *r)
{
    size_t total = 0;
    for (int l = 0; l < L_COUNT_; l++)
        total += r->o.lists[l].n;
    if (RGROW(r, r->o.ptrs, r->o.cap_ptrs, 0, total + 1) != 0)
        return nomem(r);
    return true;
}

/* ---- plan-level keys ---- */

static bool confirm_kind(reader *r, int kind)
{
    if (r->doc_kind != DOC_UNKNOWN && r->doc_kind != kind)
        return fail_at(r, r->n_frames, NULL, true,
                       "a file holds a plan ('tlsan_plan') or a plan cache ('tlsan_plan_cache'), "
                       "not both");
    r->doc_kind = kind;
    if (kind == DOC_CACHE && !r->opt.allow_cache)
        return fail_at(r, r->n_frames, NULL, true,
                       "this file is a plan cache, where a single plan was expected");
    if (kind == DOC_PLAN && !r->opt.allow_plan)
        return fail_at(r, r->n_frames, NULL, true,
                       "this file is a single plan, where a plan cache was expected");
    tlsan_status held = kind == DOC_PLAN ? r->plan_st : r->cache_st;
    if (held != TLSAN_OK) {
        r->st = held;
        r->e = kind == DOC_PLAN ? r->plan_err : r->cache_err;
        return false;
    }
    return true;
}

static bool get_version(reader *r, vkind vk, const char *s, size_t len, const char *label)
{
    char d[64];
    describe(vk, s, len, d, sizeof d);
    int64_t v = 0;
    if (vk != V_NUM || parse_int(s, len, &v) != NUM_INT || v != 1) {
        if (vk == V_NUM && parse_int(s, len, &v) == NUM_INT)
            return fail_at(r, r->n_frames, NULL, true,
                           "unsupported format version %s: '%s' must be the integer 1", d, label);
        return fail_at(r, r->n_frames, NULL, true, "'%s' must be the integer 1, not %s", label, d);
    }
    return true;
}

static bool plan_key(reader *r, frame *f, vkind vk, const char *s, size_t len, bool b)
{
    plan_ctx *pc = f->kind == CTX_DOC ? &r->doc : &r->sub;
    (void)b;
    switch ((field)f->field) {
    case F_TLSAN_PLAN:
        if (!get_version(r, vk, s, len, "tlsan_plan"))
            return false;
        return f->kind == CTX_DOC ? confirm_kind(r, DOC_PLAN) : true;
    case F_TLSAN_PLAN_CACHE:
        if (!get_version(r, vk, s, len, "tlsan_plan_cache"))
            return false;
        return confirm_kind(r, DOC_CACHE);
    case F_NAME: {
        size_t off;
        r->o.n_chars = 0;
        if (!get_str(r, vk, s, len, "name", true, &off))
            return false;
        tlsan_status st = tlsan_plan_set_name(pc->plan, r->o.chars + off);
        return st == TLSAN_OK ? true : nomem(r);
    }
    case F_SCHEDULE:
        if (vk != V_STR)
            return FAIL_VALUE(r, "'schedule' must be a string, not %s", vkind_names[vk]);
        if (len == 10 && memcmp(s, "sequential", 10) == 0)
            tlsan_plan_set_schedule(pc->plan, TLSAN_SCHEDULE_SEQUENTIAL);
        else if (len == 8 && memcmp(s, "dataflow", 8) == 0)
            tlsan_plan_set_schedule(pc->plan, TLSAN_SCHEDULE_DATAFLOW);
        else
            return FAIL_VALUE(r,
                              "unknown schedule '%.*s' (expected \"sequential\" or \"dataflow\")",
                              (int)(len > 64 ? 64 : len), s);
        return true;
    case F_ARENAS:
    case F_TENSORS:
    case F_OPS:
        if (vk != V_ARR)
            return FAIL_VALUE(r, "'%s' must be a list, not %s", field_names[f->field],
                              vkind_names[vk]);
        return push(r,
                    f->field == F_ARENAS    ? CTX_ARENAS
                    : f->field == F_TENSORS ? CTX_TENSORS
                                            : CTX_OPS,
                    false, F_UNKNOWN);
    case F_PLANS:
        if (vk != V_ARR)
            return FAIL_VALUE(r, "'plans' must be a list, not %s", vkind_names[vk]);
        if (!r->cache && !(r->cache = cache_create_with(&r->af)))
            return nomem(r);
        return push(r, CTX_PLANS, false, F_UNKNOWN);
    case F_KEY:
        if (vk != V_MAP)
            return FAIL_VALUE(r, "'key' must be an object, not %s", vkind_names[vk]);
        if (!r->key && !(r->key = ckey_new(&r->af)))
            return nomem(r);
        ckey_reset(r->key);
        if (ckey_start_map(r->key) != 0)
            return nomem(r);
        return push(r, CTX_KEY, true, F_UNKNOWN);
    default:
        return vk == V_MAP || vk == V_ARR ? push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) : true;
    }
}

/* An element of arenas, tensors, ops or plans. */
static bool list_item(reader *r, frame *f, vkind vk)
{
    static const struct {
        const char *list, *what;
        ctx_kind item;
    } kinds[] = {
        [CTX_ARENAS] = {"arenas", "an arena", CTX_ARENA},
        [CTX_TENSORS] = {"tensors", "a tensor", CTX_TENSOR},
        [CTX_OPS] = {"ops", "an op", CTX_OP},
        [CTX_PLANS] = {"plans", "a plan", CTX_PLAN},
    };
    if (vk != V_MAP)
        return FAIL_VALUE(r, "each element of '%s' must be an object (%s), not %s",
                          kinds[f->kind].list, kinds[f->kind].what, vkind_names[vk]);
    if (f->kind == CTX_PLANS) {
        tlsan_plan_free(r->sub.plan);
        rfree(r, r->sub.key);
        memset(&r->sub, 0, sizeof r->sub);
        if (!(r->sub.plan = tlsan_plan_create()))
            return nomem(r);
        r->cur = &r->sub;
        r->plan_index = f->n_items - 1;
    } else {
        obj_reset(&r->o);
        r->o.line = r->map_line;
        r->o.column = r->map_column;
    }
    return push(r, kinds[f->kind].item, true, F_UNKNOWN);
}

static bool list_field(reader *r, vkind vk, uint8_t fld)
{
    if (vk != V_ARR)
        return FAIL_VALUE(r, "'%s' must be a list, not %s", field_names[fld], vkind_names[vk]);
    ctx_kind k = fld == F_SHAPE      ? CTX_SHAPE
                 : fld == F_LIFETIME ? CTX_LIFETIME
                 : fld == F_INPLACE  ? CTX_INPLACE
                                     : CTX_STRINGS;
    return push(r, k, false, fld);
}

static bool arena_key(reader *r, frame *f, vkind vk, const char *s, size_t len)
{
    obj *o = &r->o;
    switch ((field)f->field) {
    case F_NAME:
        return get_str(r, vk, s, len, "name", true, &o->str[S_NAME]);
    case F_BYTES:
        return get_count(r, vk, s, len, "bytes", 0, "byte count out of range (0 to 2^63-1)",
                         &o->bytes);
    case F_ALIGNMENT:
        return get_count(r, vk, s, len, "alignment", 1, "alignment out of range (1 to 2^63-1)",
                         &o->alignment);
    case F_MEMORY:
        return get_str(r, vk, s, len, "memory", true, &o->str[S_MEMORY]);
    default:
        return vk == V_MAP || vk == V_ARR ? push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) : true;
    }
}

static bool tensor_key(reader *r, frame *f, vkind vk, const char *s, size_t len, bool b)
{
    obj *o = &r->o;
    bool flag = false;
    unsigned bit = 0;
    switch ((field)f->field) {
    case F_NAME:
        return get_str(r, vk, s, len, "name", true, &o->str[S_NAME]);
    case F_BYTES:
        return get_count(r, vk, s, len, "bytes", 0, "byte count out of range (0 to 2^63-1)",
                         &o->bytes);
    case F_ARENA:
        return get_str(r, vk, s, len, "arena", true, &o->str[S_ARENA]);
    case F_OFFSET:
        return get_count(r, vk, s, len, "offset", 0, "offset out of range (0 to 2^63-1)",
                         &o->offset);
    case F_VIEW_OF:
        return get_str(r, vk, s, len, "view_of", true, &o->str[S_VIEW_OF]);
    case F_VIEW_OFFSET:
        return get_count(r, vk, s, len, "view_offset", 0, "offset out of range (0 to 2^63-1)",
                         &o->view_offset);
    case F_ALIGNMENT:
        return get_count(r, vk, s, len, "alignment", 1, "alignment out of range (1 to 2^63-1)",
                         &o->alignment);
    case F_MEMORY:
        return get_str(r, vk, s, len, "memory", true, &o->str[S_MEMORY]);
    case F_INPUT:
        bit = TLSAN_TENSOR_INPUT;
        break;
    case F_OUTPUT:
        bit = TLSAN_TENSOR_OUTPUT;
        break;
    case F_CONSTANT:
        bit = TLSAN_TENSOR_CONSTANT;
        break;
    case F_DTYPE: {
        if (vk != V_STR)
            return FAIL_VALUE(r, "'dtype' must be a string, not %s", vkind_names[vk]);
        tlsan_dtype d = TLSAN_DTYPE_NONE;
        if (len > 0 && len == r->dtype_len && memcmp(s, r->dtype_text, len) == 0) {
            d = r->dtype;
        } else if (len < sizeof r->dtype_text && !memchr(s, '\0', len)) {
            char name[sizeof r->dtype_text];
            memcpy(name, s, len);
            name[len] = '\0';
            d = tlsan_dtype_from_name(name);
            if (d != TLSAN_DTYPE_NONE) {
                memcpy(r->dtype_text, s, len);
                r->dtype_len = len;
                r->dtype = d;
            }
        }
        if (d == TLSAN_DTYPE_NONE)
            return FAIL_VALUE(r, "unknown dtype '%.*s'", (int)(len > 64 ? 64 : len), s);
        o->dtype = d;
        return true;
    }
    case F_LIFETIME:
    case F_SHAPE:
    case F_STACK:
        return list_field(r, vk, f->field);
    default:
        return vk == V_MAP || vk == V_ARR ? push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) : true;
    }
    if (!get_bool(r, vk, b, field_names[f->field], &flag))
        return false;
    if (flag)
        o->flags |= bit;
    return true;
}

static bool op_key(reader *r, frame *f, vkind vk, const char *s, size_t len, bool b)
{
    obj *o = &r->o;
    switch ((field)f->field) {
    case F_NAME:
        return get_str(r, vk, s, len, "name", true, &o->str[S_NAME]);
    case F_READS:
    case F_WRITES:
    case F_AFTER:
    case F_STACK:
    case F_INPLACE:
        return list_field(r, vk, f->field);
    case F_STREAM:
        return get_str(r, vk, s, len, "stream", true, &o->str[S_STREAM]);
    case F_LOOP:
        return get_str(r, vk, s, len, "loop", true, &o->str[S_LOOP]);
    case F_RECORD:
        o->n_sync++;
        o->sync = TLSAN_SYNC_RECORD;
        return get_str(r, vk, s, len, "record", true, &o->str[S_RECORD]);
    case F_WAIT:
        o->n_sync++;
        o->sync = TLSAN_SYNC_WAIT;
        return get_str(r, vk, s, len, "wait", true, &o->str[S_WAIT]);
    case F_SYNC: {
        bool v = false;
        if (!get_bool(r, vk, b, "sync", &v))
            return false;
        if (v) { /* "sync": false is the same as no "sync" */
            o->n_sync++;
            o->sync = TLSAN_SYNC_ALL;
        }
        return true;
    }
    case F_BRANCH:
        if (vk == V_MAP) {
            o->branch_single = true;
            o->branch_seen = 0;
            o->str[S_IF] = o->str[S_ARM] = NO_OFF;
            return push(r, CTX_BRANCH, true, F_UNKNOWN);
        }
        if (vk == V_ARR)
            return push(r, CTX_BRANCHES, false, F_UNKNOWN);
        return FAIL_VALUE(r,
                          "'branch' must be an object {\"if\": ..., \"arm\": ...} or a list "
                          "of them, not %s",
                          vkind_names[vk]);
    default:
        return vk == V_MAP || vk == V_ARR ? push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) : true;
    }
}

static bool branch_key(reader *r, frame *f, vkind vk, const char *s, size_t len)
{
    obj *o = &r->o;
    switch ((field)f->field) {
    case F_IF:
        o->branch_seen |= FB(F_IF);
        return get_str(r, vk, s, len, "if", true, &o->str[S_IF]);
    case F_ARM:
        o->branch_seen |= FB(F_ARM);
        return get_str(r, vk, s, len, "arm", true, &o->str[S_ARM]);
    default:
        return vk == V_MAP || vk == V_ARR ? push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) : true;
    }
}

/* An element of a list that belongs to the current object. */
static bool element(reader *r, frame *f, vkind vk, const char *s, size_t len)
{
    obj *o = &r->o;
    char d[64] = ""; /* the value in words, formatted only on the error paths */
    switch ((ctx_kind)f->kind) {
    case CTX_STRINGS: {
        int l = f->field == F_STACK    ? L_STACK
                : f->field == F_READS  ? L_READS
                : f->field == F_WRITES ? L_WRITES
                                       : L_AFTER;
        size_t off;
        if (vk != V_STR)
            return FAIL_VALUE(r, "each element of '%s' must be a string, not %s",
                              field_names[f->field], vkind_names[vk]);
        return get_str(r, vk, s, len, field_names[f->field], false, &off) && push_off(r, l, off);
    }
    case CTX_SHAPE: {
        if (vk != V_NUM) {
            describe(vk, s, len, d, sizeof d);
            return FAIL_VALUE(r, "each extent in 'shape' must be an integer, not %s", d);
        }
        uint64_t v;
        if (!get_count(r, vk, s, len, "shape", 0, "extent out of range (0 to 2^63-1)", &v))
            return false;
        if (RGROW(r, o->shape, o->cap_shape, o->n_shape, 1) != 0)
            return nomem(r);
        o->shape[o->n_shape++] = v;
        return true;
    }
    case CTX_LIFETIME: {
        if (f->n_items > 2)
            return FAIL_VALUE(r, "'lifetime' is [first_write, last_read]: exactly 2 steps");
        int64_t v = 0;
        int k = vk == V_NUM ? parse_int(s, len, &v) : -1;
        if (k == NUM_INT) {
            o->lifetime[o->n_lifetime++] = v;
            return true;
        }
        describe(vk, s, len, d, sizeof d);
        if (k != NUM_INT && k != NUM_BIG)
            return FAIL_VALUE(r, "each step in 'lifetime' must be an integer, not %s", d);
        if (k == NUM_BIG)
            return FAIL_VALUE(r, "lifetime step out of range: %s", d);
        o->lifetime[o->n_lifetime++] = v;
        return true;
    }
    case CTX_INPLACE:
        if (vk != V_ARR)
            return FAIL_VALUE(r, "each element of 'inplace' must be a list [output, input], not %s",
                              vkind_names[vk]);
        return push(r, CTX_PAIR, false, F_INPLACE);
    case CTX_PAIR: {
        size_t off;
        if (f->n_items > 2)
            return FAIL_VALUE(r, "an in-place pair is [output, input]: exactly 2 tensor names");
        if (vk != V_STR)
            return FAIL_VALUE(r, "an in-place pair holds tensor names (strings), not %s",
                              vkind_names[vk]);
        return get_str(r, vk, s, len, "inplace", false, &off) && push_off(r, L_INPLACE, off);
    }
    case CTX_BRANCHES:
        if (vk != V_MAP)
            return FAIL_VALUE(r,
                              "each element of 'branch' must be an object {\"if\": ..., "
                              "\"arm\": ...}, not %s",
                              vkind_names[vk]);
        o->branch_seen = 0;
        o->str[S_IF] = o->str[S_ARM] = NO_OFF;
        return push(r, CTX_BRANCH, true, F_UNKNOWN);
    default:
        return true;
    }
}

/* A value inside a cache plan's key: only its canonical form is kept. */
static bool key_value(reader *r, vkind vk, const char *s, size_t len, bool b)
{
    int rc;
    switch (vk) {
    case V_NULL:
        rc = ckey_null(r->key);
        break;
    case V_BOOL:
        rc = ckey_bool(r->key, b);
        break;
    case V_NUM:
        rc = ckey_number(r->key, s, len);
        break;
    case V_STR:
        rc = ckey_string(r->key, s, len);
        break;
    case V_MAP:
        rc = ckey_start_map(r->key);
        break;
    default:
        rc = ckey_start_array(r->key);
        break;
    }
    if (rc != 0)
        return nomem(r);
    return vk == V_MAP || vk == V_ARR ? push(r, CTX_KEY, vk == V_MAP, F_UNKNOWN) : true;
}

/* Every value event: dispatched on the innermost frame. */
static int on_value(reader *r, vkind vk, const char *s, size_t len, bool b)
{
    if (r->n_frames == 0) {
        if (vk != V_MAP) {
            fail_at(r, 0, NULL, true,
                    "the top level must be a JSON object (a plan or a plan "
                    "cache), not %s",
                    vkind_names[vk]);
            return 0;
        }
        return push(r, CTX_DOC, true, F_UNKNOWN) ? 1 : 0;
    }
    frame *f = top(r);
    if (!f->is_map)
        f->n_items++;
    bool ok;
    switch ((ctx_kind)f->kind) {
    case CTX_SKIP:
        ok = vk == V_MAP || vk == V_ARR ? push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) : true;
        break;
    case CTX_KEY:
        ok = key_value(r, vk, s, len, b);
        break;
    case CTX_DOC:
    case CTX_PLAN:
        ok = plan_key(r, f, vk, s, len, b);
        break;
    case CTX_ARENAS:
    case CTX_TENSORS:
    case CTX_OPS:
    case CTX_PLANS:
        ok = list_item(r, f, vk);
        break;
    case CTX_ARENA:
        ok = arena_key(r, f, vk, s, len);
        break;
    case CTX_TENSOR:
        ok = tensor_key(r, f, vk, s, len, b);
        break;
    case CTX_OP:
        ok = op_key(r, f, vk, s, len, b);
        break;
    case CTX_BRANCH:
        ok = branch_key(r, f, vk, s, len);
        break;
    default:
        ok = element(r, f, vk, s, len);
        break;
    }
    if (ok)
        return 1;
    if (r->st != TLSAN_OK)
        return 0;
    /* The error was set aside (a side not yet confirmed): skip the rest of this value. */
    return vk == V_MAP || vk == V_ARR ? (push(r, CTX_SKIP, vk == V_MAP, F_UNKNOWN) ? 1 : 0) : 1;
}

/* ---- ends of objects ---- */

static bool require(reader *r, uint64_t seen, field fld)
{
    if (seen & FB(fld))
        return true;
    return FAIL_OBJECT(r, field_names[fld], "missing required key '%s'", field_names[fld]);
}

static bool finish_arena(reader *r)
{
    obj *o = &r->o;
    if (!require(r, o->seen, F_NAME) || !require(r, o->seen, F_BYTES))
        return false;
    tlsan_arena_desc a = {ostr(o, S_NAME), o->bytes, o->alignment, ostr(o, S_MEMORY)};
    tlsan_error be;
    tlsan_status st = tlsan_plan_add_arena(r->cur->plan, &a, &be);
    return st == TLSAN_OK ? true : fail_builder(r, st, &be, r->n_frames - 1);
}

static bool finish_tensor(reader *r)
{
    obj *o = &r->o;
    if (!require(r, o->seen, F_NAME) || !require(r, o->seen, F_BYTES))
        return false;
    bool has_arena = o->seen & FB(F_ARENA), has_view = o->seen & FB(F_VIEW_OF);
    if (has_arena && !has_view && !(o->seen & FB(F_OFFSET)))
        return FAIL_OBJECT(r, "offset", "a storage root (a tensor with 'arena') needs 'offset'");
    if (has_view && !has_arena && (o->seen & FB(F_OFFSET)))
        return FAIL_OBJECT(r, "offset",
                           "a view (a tensor with 'view_of') is placed by "
                           "'view_offset', not 'offset'");
    if (has_arena && !has_view && (o->seen & FB(F_VIEW_OFFSET)))
        return FAIL_OBJECT(r, "view_offset",
                           "'view_offset' belongs to a view (a tensor with "
                           "'view_of'), not to a storage root");
    bool has_dtype = o->seen & FB(F_DTYPE), has_shape = o->seen & FB(F_SHAPE);
    if (has_dtype != has_shape)
        return FAIL_OBJECT(r, has_dtype ? "dtype" : "shape",
                           "'dtype' and 'shape' are given together: '%s' without '%s'",
                           has_dtype ? "dtype" : "shape", has_dtype ? "shape" : "dtype");
    if (!prepare_ptrs(r))
        return false;
    size_t used = 0;
    tlsan_tensor_desc t = {0};
    t.name = ostr(o, S_NAME);
    t.bytes = o->bytes;
    t.arena = ostr(o, S_ARENA);
    t.offset_bytes = o->offset;
    t.view_of = ostr(o, S_VIEW_OF);
    t.view_offset_bytes = o->view_offset;
    t.alignment_bytes = o->alignment;
    t.memory = ostr(o, S_MEMORY);
    t.flags = o->flags;
    t.has_lifetime = o->seen & FB(F_LIFETIME);
    t.lifetime[0] = o->lifetime[0];
    t.lifetime[1] = o->lifetime[1];
    t.dtype = o->dtype;
    t.shape = o->shape;
    t.n_shape = o->n_shape;
    t.stack = olist(o, L_STACK, &used);
    t.n_stack = o->lists[L_STACK].n;
    tlsan_error be;
    tlsan_status st = tlsan_plan_add_tensor(r->cur->plan, &t, &be);
    if (st == TLSAN_OK &&
        plan_set_source(r->cur->plan, false, (uint32_t)o->line, (uint32_t)o->column) != 0)
        return nomem(r);
    return st == TLSAN_OK ? true : fail_builder(r, st, &be, r->n_frames - 1);
}

static bool finish_op(reader *r)
{
    obj *o = &r->o;
    if (!require(r, o->seen, F_NAME))
        return false;
    if (o->n_sync > 1)
        return FAIL_OBJECT(r, NULL,
                           "a synchronisation op has exactly one of 'record', 'wait' "
                           "and 'sync'");
    if (!prepare_ptrs(r))
        return false;
    size_t n_branch = o->lists[L_BRANCH].n / 2;
    if (RGROW(r, o->conds, o->cap_conds, 0, n_branch + 1) != 0)
        return nomem(r);
    for (size_t k = 0; k < n_branch; k++)
        o->conds[k] = (tlsan_cond){o->chars + o->lists[L_BRANCH].v[2 * k],
                                   o->chars + o->lists[L_BRANCH].v[2 * k + 1]};
    size_t used = 0;
    tlsan_op_desc d = {0};
    d.name = ostr(o, S_NAME);
    d.reads = olist(o, L_READS, &used);
    d.n_reads = o->lists[L_READS].n;
    d.writes = olist(o, L_WRITES, &used);
    d.n_writes = o->lists[L_WRITES].n;
    d.inplace = olist(o, L_INPLACE, &used);
    d.n_inplace = o->lists[L_INPLACE].n / 2;
    d.stream = ostr(o, S_STREAM);
    d.after = olist(o, L_AFTER, &used);
    d.n_after = o->lists[L_AFTER].n;
    d.branch = o->conds;
    d.n_branch = n_branch;
    d.loop = ostr(o, S_LOOP);
    d.sync = o->n_sync ? o->sync : TLSAN_SYNC_NONE;
    d.event = o->sync == TLSAN_SYNC_RECORD ? ostr(o, S_RECORD)
              : o->sync == TLSAN_SYNC_WAIT ? ostr(o, S_WAIT)
                                           : NULL;
    d.stack = olist(o, L_STACK, &used);
    d.n_stack = o->lists[L_STACK].n;
    tlsan_error be;
    tlsan_status st = tlsan_plan_add_op(r->cur->plan, &d, &be);
    if (st == TLSAN_OK &&
        plan_set_source(r->cur->plan, true, (uint32_t)o->line, (uint32_t)o->column) != 0)
        return nomem(r);
    return st == TLSAN_OK ? true : fail_builder(r, st, &be, r->n_frames - 1);
}

static bool finish_branch(reader *r)
{
    obj *o = &r->o;
    if (!require(r, o->branch_seen, F_IF) || !require(r, o->branch_seen, F_ARM))
        return false;
    return push_off(r, L_BRANCH, o->str[S_IF]) && push_off(r, L_BRANCH, o->str[S_ARM]);
}

/* Checks a plan's required keys and finalizes it; `where_prefix` frames place errors. */
static bool finish_plan(reader *r, plan_ctx *pc, bool in_cache)
{
    static const field required[] = {F_ARENAS, F_TENSORS, F_OPS};
    if (in_cache && !require(r, pc->seen, F_TLSAN_PLAN))
        return false;
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!require(r, pc->seen, required[i]))
            return false;
    if (in_cache && !require(r, pc->seen, F_KEY))
        return false;
    tlsan_error be;
    tlsan_status st = tlsan_plan_finalize(pc->plan, &be);
    if (st != TLSAN_OK)
        return fail_builder(r, st, &be, r->n_frames - 1);
    return true;
}

static bool finish_doc(reader *r)
{
    if (r->doc_kind == DOC_UNKNOWN)
        return fail_at(r, 0, "tlsan_plan", true,
                       "missing required key 'tlsan_plan' (the format version, 1; a plan cache "
                       "has 'tlsan_plan_cache' instead)");
    if (r->doc_kind == DOC_CACHE)
        return require(r, r->doc.seen, F_PLANS);
    return finish_plan(r, &r->doc, false);
}

static bool finish_sub_plan(reader *r)
{
    if (!finish_plan(r, &r->sub, true))
        return false;
    if (cache_push(r->cache, r->sub.plan, r->sub.key, r->sub.key_len) != 0)
        return nomem(r);
    memset(&r->sub, 0, sizeof r->sub);
    return true;
}

/* ---- yajl callbacks ---- */

static int cb_null(void *ctx)
{
    return on_value(ctx, V_NULL, NULL, 0, false);
}

static int cb_boolean(void *ctx, int v)
{
    return on_value(ctx, V_BOOL, NULL, 0, v != 0);
}

static int cb_number(void *ctx, const char *s, size_t len)
{
    return on_value(ctx, V_NUM, s, len, false);
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
    /* \u0000 gets its own message from the value's use (names are C strings) */
    reader *r = ctx;
    r->str_nul = !utf8_valid_text((const char *)s, len);
    if (r->str_nul && !memchr(s, '\0', len))
        return FAIL_VALUE(r, "a string that is not valid UTF-8 (an overlong form, a surrogate or "
                             "a code point past U+10FFFF)"),
               0;
    return on_value(ctx, V_STR, (const char *)s, len, false);
}

/* Moves the cursor to byte `off` of the chunk being parsed. */
static void cursor_to(reader *r, size_t off)
{
    if (off <= r->cur_off)
        return;
    text_pos at = text_pos_advance((text_pos){r->cur_line, r->cur_column},
                                   (const char *)r->chunk + r->cur_off, off - r->cur_off);
    r->cur_line = at.line;
    r->cur_column = at.column;
    r->cur_off = off;
}

static int cb_start_map(void *ctx)
{
    reader *r = ctx;
    /* yajl has consumed the '{' itself: it is the byte before. */
    size_t consumed = yajl_get_bytes_consumed(r->h);
    if (r->chunk && consumed > 0) {
        cursor_to(r, consumed - 1);
        r->map_line = r->cur_line;
        r->map_column = r->cur_column;
    }
    return on_value(ctx, V_MAP, NULL, 0, false);
}

static int cb_start_array(void *ctx)
{
    return on_value(ctx, V_ARR, NULL, 0, false);
}

/* Whether a map's keys are checked for repeats by field bits alone: an object of a fixed key
 * set, whose known keys are told apart by their field (the top-level object's set changes
 * once it says what it is, so it keeps the general check). */
static bool fixed_key_set(ctx_kind kind)
{
    return kind == CTX_PLAN || kind == CTX_ARENA || kind == CTX_TENSOR || kind == CTX_OP ||
           kind == CTX_BRANCH;
}

/* Whether key s is one of the fields in `known` (a map whose fixed key set was given up for an
 * ignored value keeps the fields it saw). */
static bool is_known_key(const reader *r, uint64_t known, const char *s, size_t len)
{
    for (; known; known &= known - 1) {
        int fld = __builtin_ctzll(known);
        if (r->field_len[fld] == len && memcmp(field_names[fld], s, len) == 0)
            return true;
    }
    return false;
}

static bool fail_repeated_key(reader *r, const char *s, size_t len)
{
    char key[80];
    snprintf(key, sizeof key, "%.*s", (int)(len > 64 ? 64 : len), s);
    return fail_at(r, r->n_frames - 1, key, true,
                   "repeated key '%s' (a key appears once per object)", key);
}

static int cb_map_key(void *ctx, const unsigned char *us, size_t len)
{
    reader *r = ctx;
    const char *s = (const char *)us;
    frame *f = top(r);
    ctx_kind kind = (ctx_kind)f->kind;
    f->field = F_UNKNOWN;
    if (kind == CTX_DOC || fixed_key_set(kind))
        f->field = (uint8_t)lookup_field(r, kind, s, len);
    if (f->field != F_UNKNOWN && fixed_key_set(kind)) {
        /* a known key is a field name (ASCII, so valid text): its bit tells a repeat, with no
         * hashing nor copying of the key */
        if (f->known_keys & FB(f->field))
            return fail_repeated_key(r, s, len), 0;
        f->known_keys |= FB(f->field);
        f->cur_key = NO_OFF;
    } else {
        if (!utf8_valid_text(s, len) && !memchr(s, '\0', len)) {
            /* the key itself cannot name the place: point at its object */
            fail_at(r, r->n_frames - 1, "(a key)", false,
                    "a key that is not valid UTF-8 (an overlong form, a surrogate or a code "
                    "point past U+10FFFF)");
            return 0;
        }
        if (f->known_keys && is_known_key(r, f->known_keys, s, len))
            return fail_repeated_key(r, s, len), 0;
        int rc = add_key(r, f, s, len);
        if (rc < 0)
            return nomem(r), 0;
        if (rc > 0)
            return fail_repeated_key(r, s, len), 0;
        f->cur_key = r->n_keys - 1;
    }
    f->n_items++;
    switch (kind) {
    case CTX_KEY:
        if (ckey_map_key(r->key, s, len) != 0)
            return nomem(r), 0;
        break;
    case CTX_DOC:
    case CTX_PLAN:
        (kind == CTX_DOC ? &r->doc : &r->sub)->seen |= FB(f->field);
        break;
    case CTX_ARENA:
    case CTX_TENSOR:
    case CTX_OP:
        r->o.seen |= FB(f->field);
        break;
    default:
        break;
    }
    return 1;
}

static int cb_end_map(void *ctx)
{
    reader *r = ctx;
    frame *f = top(r);
    bool ok = true;
    switch ((ctx_kind)f->kind) {
    case CTX_KEY:
        if (ckey_end_map(r->key) != 0)
            ok = nomem(r);
        else if (r->n_frames >= 2 && r->frames[r->n_frames - 2].kind == CTX_PLAN) {
            rfree(r, r->sub.key);
            r->sub.key = ckey_take(r->key, &r->sub.key_len);
            if (!r->sub.key)
                ok = nomem(r);
        }
        break;
    case CTX_ARENA:
        ok = finish_arena(r);
        break;
    case CTX_TENSOR:
        ok = finish_tensor(r);
        break;
    case CTX_OP:
        ok = finish_op(r);
        break;
    case CTX_BRANCH:
        ok = finish_branch(r);
        break;
    case CTX_PLAN:
        ok = finish_sub_plan(r);
        break;
    case CTX_DOC:
        ok = finish_doc(r);
        r->done = ok;
        break;
    default:
        break;
    }
    bool was_plan = f->kind == CTX_PLAN;
    pop(r);
    if (was_plan) {
        tlsan_plan_free(r->sub.plan);
        rfree(r, r->sub.key);
        memset(&r->sub, 0, sizeof r->sub);
        r->cur = &r->doc;
    }
    return ok || r->st == TLSAN_OK ? 1 : 0;
}

static int cb_end_array(void *ctx)
{
    reader *r = ctx;
    frame *f = top(r);
    bool ok = true;
    if (f->kind == CTX_KEY) {
        if (ckey_end_array(r->key) != 0)
            ok = nomem(r);
    } else if (f->kind == CTX_LIFETIME && f->n_items != 2) {
        ok = FAIL_OBJECT(r, NULL,
                         "'lifetime' is [first_write, last_read]: exactly 2 steps, "
                         "not %zu",
                         f->n_items);
    } else if (f->kind == CTX_PAIR && f->n_items != 2) {
        ok = FAIL_OBJECT(r, NULL,
                         "an in-place pair is [output, input]: exactly 2 tensor names, "
                         "not %zu",
                         f->n_items);
    }
    pop(r);
    return ok || r->st == TLSAN_OK ? 1 : 0;
}

static const yajl_callbacks callbacks = {
    cb_null,      cb_boolean, NULL,       NULL,           cb_number,    cb_string,
    cb_start_map, cb_map_key, cb_end_map, cb_start_array, cb_end_array,
};

/* ---- driving yajl ---- */

/* Moves the line/column position over n bytes just parsed (core/text_pos.h: columns count
 * characters). */
static void advance(reader *r, const unsigned char *p, size_t n)
{
    text_pos at = text_pos_advance((text_pos){r->line, r->column}, (const char *)p, n);
    r->line = at.line;
    r->column = at.column;
}

/* Turns yajl's message into one sentence for `what`. */
static void syntax_error(reader *r)
{
    char text[200];
    json_syntax_message(r->h, text, sizeof text);
    memset(&r->tmp, 0, sizeof r->tmp);
    snprintf(r->tmp.file, sizeof r->tmp.file, "%s", r->label);
    r->tmp.line = r->line;
    r->tmp.column = r->column;
    snprintf(r->tmp.what, sizeof r->tmp.what, "malformed JSON: %s", text);
    r->st = TLSAN_ERR_INVALID;
    r->e = r->tmp;
}

/* Places a syntax error yajl found after consuming n bytes of p (core/text_pos.h). */
static void place_error(reader *r, const unsigned char *p, size_t n)
{
    text_pos at = text_pos_of_error((text_pos){r->line, r->column}, (const char *)p, n);
    r->line = at.line;
    r->column = at.column;
}

static bool feed(reader *r, const unsigned char *p, size_t n)
{
    size_t bad = json_escapes_feed(&r->escapes, (const char *)p, n);
    if (bad != SIZE_MAX) {
        place_error(r, p, bad + 1);
        memset(&r->tmp, 0, sizeof r->tmp);
        snprintf(r->tmp.file, sizeof r->tmp.file, "%s", r->label);
        r->tmp.line = r->line;
        r->tmp.column = r->column;
        snprintf(r->tmp.what, sizeof r->tmp.what,
                 "a \\u escape with an unpaired UTF-16 surrogate (not a character)");
        r->st = TLSAN_ERR_INVALID;
        r->e = r->tmp;
        return false;
    }
    r->chunk = p;
    r->cur_off = 0;
    r->cur_line = r->line;
    r->cur_column = r->column;
    yajl_status ys = yajl_parse(r->h, p, n);
    r->chunk = NULL;
    if (ys == yajl_status_ok) {
        /* on from the cursor: the text before it was counted already */
        r->line = r->cur_line;
        r->column = r->cur_column;
        advance(r, p + r->cur_off, n - r->cur_off);
        return true;
    }
    if (ys == yajl_status_client_canceled && r->st != TLSAN_OK)
        return false;
    place_error(r, p, yajl_get_bytes_consumed(r->h));
    syntax_error(r);
    return false;
}

static bool complete(reader *r)
{
    yajl_status ys = yajl_complete_parse(r->h);
    if (ys == yajl_status_ok)
        return true;
    if (ys == yajl_status_client_canceled && r->st != TLSAN_OK)
        return false;
    syntax_error(r);
    return false;
}

static tlsan_status reader_init(reader *r, const char *label, const reader_options *opt)
{
    memset(r, 0, sizeof *r);
    r->opt = *opt;
    r->af = opt->alloc ? *opt->alloc : *cache_default_alloc();
    if (!r->opt.chunk_bytes)
        r->opt.chunk_bytes = DEFAULT_CHUNK_BYTES;
    r->label = label ? label : "";
    r->line = r->column = 1;
    r->cur = &r->doc;
    for (int f = 0; f < F_COUNT_; f++) {
        r->field_len[f] = strlen(field_names[f]);
        if (f == F_UNKNOWN)
            continue;
        size_t len = r->field_len[f];
        r->fields_by_first[(unsigned char)field_names[f][0]] |= FB(f);
        r->fields_by_len[len < FIELD_LEN_CLASSES ? len : FIELD_LEN_CLASSES - 1] |= FB(f);
    }
    /* yajl 2.1 does not check its own allocations, so it always gets the real malloc;
     * a failing test allocator would only crash it. */
    r->h = yajl_alloc(&callbacks, NULL, r);
    r->doc.plan = tlsan_plan_create();
    if (!r->h || !r->doc.plan) {
        nomem(r);
        return TLSAN_ERR_NOMEM;
    }
    return TLSAN_OK;
}

static void obj_free(reader *r, obj *o)
{
    rfree(r, o->chars);
    for (int i = 0; i < L_COUNT_; i++)
        rfree(r, o->lists[i].v);
    rfree(r, o->shape);
    rfree(r, o->ptrs);
    rfree(r, o->conds);
}

/* Hands the result over (or the error) and frees everything else. */
static tlsan_status reader_finish(reader *r, tlsan_plan **plan_out, tlsan_cache **cache_out,
                                  tlsan_error *err)
{
    if (r->st == TLSAN_OK && !r->done) {
        memset(&r->e, 0, sizeof r->e);
        snprintf(r->e.file, sizeof r->e.file, "%s", r->label);
        snprintf(r->e.what, sizeof r->e.what, "malformed JSON: no JSON value");
        r->e.line = r->line;
        r->e.column = r->column;
        r->st = TLSAN_ERR_INVALID;
    }
    if (r->st == TLSAN_OK) {
        if (r->doc_kind == DOC_PLAN) {
            *plan_out = r->doc.plan;
            r->doc.plan = NULL;
        } else {
            *cache_out = r->cache;
            r->cache = NULL;
        }
    }
    if (err) {
        if (r->st == TLSAN_OK)
            memset(err, 0, sizeof *err);
        else
            *err = r->e;
    }
    if (r->h)
        yajl_free(r->h);
    while (r->n_frames > 0)
        pop(r);
    rfree(r, r->frames);
    rfree(r, r->keys);
    rfree(r, r->keychars);
    tlsan_plan_free(r->doc.plan);
    tlsan_plan_free(r->sub.plan);
    rfree(r, r->sub.key);
    tlsan_cache_free(r->cache);
    ckey_free(r->key);
    obj_free(r, &r->o);
    return r->st;
}

static bool check_args(const char *label, tlsan_plan **plan_out, tlsan_cache **cache_out,
                       tlsan_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (plan_out)
        *plan_out = NULL;
    if (cache_out)
        *cache_out = NULL;
    (void)label;
    return plan_out || cache_out;
}

tlsan_status reader_read_buffer(const char *json, size_t json_bytes, const char *label,
                                const reader_options *opt, tlsan_plan **plan_out,
                                tlsan_cache **cache_out, tlsan_error *err)
{
    if (!check_args(label, plan_out, cache_out, err) || (!json && json_bytes) || !opt)
        return TLSAN_ERR_ARG;
    reader_options o = *opt;
    o.allow_plan = o.allow_plan && plan_out;
    o.allow_cache = o.allow_cache && cache_out;
    reader r;
    if (reader_init(&r, label, &o) == TLSAN_OK) {
        const unsigned char *p = (const unsigned char *)json;
        bool ok = true;
        for (size_t at = 0; ok && at < json_bytes; at += r.opt.chunk_bytes) {
            size_t n = json_bytes - at < r.opt.chunk_bytes ? json_bytes - at : r.opt.chunk_bytes;
            ok = feed(&r, p + at, n);
        }
        if (ok)
            complete(&r);
    }
    return reader_finish(&r, plan_out, cache_out, err);
}

tlsan_status reader_read_stream(FILE *in, const char *label, const reader_options *opt,
                                tlsan_plan **plan_out, tlsan_cache **cache_out, tlsan_error *err)
{
    if (!check_args(label, plan_out, cache_out, err) || !in || !opt)
        return TLSAN_ERR_ARG;
    reader_options o = *opt;
    o.allow_plan = o.allow_plan && plan_out;
    o.allow_cache = o.allow_cache && cache_out;
    reader r;
    unsigned char *buf = NULL;
    if (reader_init(&r, label, &o) == TLSAN_OK) {
        buf = r.af.malloc(r.af.ctx, r.opt.chunk_bytes);
        bool ok = buf != NULL;
        if (!buf)
            nomem(&r);
        while (ok) {
            size_t n = fread(buf, 1, r.opt.chunk_bytes, in);
            if (n > 0)
                ok = feed(&r, buf, n);
            if (n < r.opt.chunk_bytes) {
                if (ok && ferror(in)) {
                    memset(&r.e, 0, sizeof r.e);
                    snprintf(r.e.file, sizeof r.e.file, "%s", r.label);
                    snprintf(r.e.what, sizeof r.e.what, "cannot read: %s", strerror(errno));
                    r.st = TLSAN_ERR_IO;
                    ok = false;
                }
                break;
            }
        }
        if (ok)
            complete(&r);
    }
    rfree(&r, buf);
    return reader_finish(&r, plan_out, cache_out, err);
}

/* ---- public entry points ---- */

static tlsan_status read_path(const char *path, const reader_options *opt, tlsan_plan **plan_out,
                              tlsan_cache **cache_out, tlsan_error *err)
{
    if (!path) {
        check_args(path, plan_out, cache_out, err);
        return TLSAN_ERR_ARG;
    }
    if (strcmp(path, "-") == 0)
        return reader_read_stream(stdin, path, opt, plan_out, cache_out, err);
    FILE *in = fopen(path, "rb");
    if (!in) {
        int e = errno;
        check_args(path, plan_out, cache_out, err);
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->what, sizeof err->what, "cannot open: %s", strerror(e));
        }
        return TLSAN_ERR_IO;
    }
    tlsan_status st = reader_read_stream(in, path, opt, plan_out, cache_out, err);
    fclose(in);
    return st;
}

tlsan_status tlsan_plan_read_file(const char *path, tlsan_plan **out, tlsan_error *err)
{
    reader_options opt = {NULL, true, false, 0};
    return out ? read_path(path, &opt, out, NULL, err) : TLSAN_ERR_ARG;
}

tlsan_status tlsan_plan_read_buffer(const char *json, size_t json_bytes, const char *label,
                                    tlsan_plan **out, tlsan_error *err)
{
    reader_options opt = {NULL, true, false, 0};
    return out ? reader_read_buffer(json, json_bytes, label, &opt, out, NULL, err) : TLSAN_ERR_ARG;
}

tlsan_status tlsan_read_file(const char *path, tlsan_plan **plan_out, tlsan_cache **cache_out,
                             tlsan_error *err)
{
    reader_options opt = {NULL, true, true, 0};
    if (!plan_out || !cache_out)
        return TLSAN_ERR_ARG;
    return read_path(path, &opt, plan_out, cache_out, err);
}

tlsan_status tlsan_read_buffer(const char *json, size_t json_bytes, const char *label,
                               tlsan_plan **plan_out, tlsan_cache **cache_out, tlsan_error *err)
{
    reader_options opt = {NULL, true, true, 0};
    if (!plan_out || !cache_out)
        return TLSAN_ERR_ARG;
    return reader_read_buffer(json, json_bytes, label, &opt, plan_out, cache_out, err);
}
