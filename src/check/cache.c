/* cache: plan caches, canonical keys and the cache-key-collision check. */
#include "core/json_error.h"
#include "core/strtab.h"
#include "check/cache.h"
#include "check/plan.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* ---- allocator ---- */

static void *std_malloc(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}

static void *std_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return realloc(p, n);
}

static void std_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static const yajl_alloc_funcs std_alloc = {std_malloc, std_realloc, std_free, NULL};

const yajl_alloc_funcs *cache_default_alloc(void)
{
    return &std_alloc;
}

/* Grows *v (elements of elem bytes) to hold n + extra; 0 or -1. */
static int grow(const yajl_alloc_funcs *a, void **v, size_t *cap, size_t n, size_t extra,
                size_t elem)
{
    if (n + extra <= *cap)
        return 0;
    size_t c = *cap ? *cap : 8;
    while (c < n + extra) {
        if (c > SIZE_MAX / 4 / elem)
            return -1;
        c *= 2;
    }
    void *p = a->realloc(a->ctx, *v, c * elem);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

/* ---- canonical keys ---- */

typedef struct ckey_frame {
    bool is_map;
    size_t start;     /* offset in out of the container's opening bracket */
    size_t mem_start; /* map: index of its first member in members */
    size_t n_items;
} ckey_frame;

/* A member of a map: out[start, end) holds its serialized key, ':' and value; `text` and
 * `key_len` are filled when the map closes (out no longer moves then). */
typedef struct ckey_member {
    size_t start, end;
    const char *text;
    size_t key_len;
} ckey_member;

struct ckey {
    yajl_alloc_funcs alloc;
    char *out; /* canonical text of the values in progress */
    size_t n_out, cap_out;
    ckey_frame *frames;
    size_t n_frames, cap_frames;
    ckey_member *members; /* the members of the open maps, innermost last */
    size_t n_members, cap_members;
    char *tmp; /* scratch for reordering a map's members */
    size_t cap_tmp;
    bool done;
};

ckey *ckey_new(const yajl_alloc_funcs *alloc)
{
    if (!alloc)
        alloc = &std_alloc;
    ckey *k = alloc->malloc(alloc->ctx, sizeof *k);
    if (!k)
        return NULL;
    memset(k, 0, sizeof *k);
    k->alloc = *alloc;
    return k;
}

void ckey_free(ckey *k)
{
    if (!k)
        return;
    const yajl_alloc_funcs a = k->alloc;
    a.free(a.ctx, k->out);
    a.free(a.ctx, k->frames);
    a.free(a.ctx, k->members);
    a.free(a.ctx, k->tmp);
    a.free(a.ctx, k);
}

void ckey_reset(ckey *k)
{
    k->n_out = k->n_frames = k->n_members = 0;
    k->done = false;
}

static int put(ckey *k, const char *s, size_t n)
{
    if (grow(&k->alloc, (void **)&k->out, &k->cap_out, k->n_out, n + 1, 1) != 0)
        return -1;
    memcpy(k->out + k->n_out, s, n);
    k->n_out += n;
    return 0;
}

/* Called before every value: separates array elements; a map member's key is already out. */
static int begin_value(ckey *k)
{
    if (k->n_frames == 0) {
        k->n_out = 0;
        return 0;
    }
    ckey_frame *f = &k->frames[k->n_frames - 1];
    if (!f->is_map && f->n_items++ > 0)
        return put(k, ",", 1);
    return 0;
}

static void end_value(ckey *k)
{
    if (k->n_frames == 0)
        k->done = true;
}

/* Appends s as a JSON string, escaped one fixed way so equal strings give equal text. */
static int put_string(ckey *k, const char *s, size_t len)
{
    if (put(k, "\"", 1) != 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            if (put(k, esc, 2) != 0)
                return -1;
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            if (put(k, esc, 6) != 0)
                return -1;
        } else if (put(k, (const char *)&s[i], 1) != 0) {
            return -1;
        }
    }
    return put(k, "\"", 1);
}

int ckey_null(ckey *k)
{
    if (begin_value(k) != 0 || put(k, "null", 4) != 0)
        return -1;
    end_value(k);
    return 0;
}

int ckey_bool(ckey *k, bool v)
{
    if (begin_value(k) != 0 || put(k, v ? "true" : "false", v ? 4 : 5) != 0)
        return -1;
    end_value(k);
    return 0;
}

/* Writes the canonical form of a number literal. An integer literal stays plain decimal
 * (only "-0" changes); any literal with a fraction or exponent becomes d[.ddd]eN with no
 * leading or trailing zero digits, so it compares by value but never equals an integer. */
static int put_number(ckey *k, const char *s, size_t len)
{
    bool fractional = memchr(s, '.', len) || memchr(s, 'e', len) || memchr(s, 'E', len);
    if (!fractional) {
        if (len == 2 && s[0] == '-' && s[1] == '0')
            return put(k, "0", 1);
        return put(k, s, len);
    }
    size_t i = 0;
    bool neg = false;
    if (i < len && s[i] == '-') {
        neg = true;
        i++;
    }
    /* Digits of the mantissa without its point, and the power of ten of the last one. */
    char digits[64];
    size_t n_digits = 0;
    int64_t exp10 = 0;
    bool big = false;
    bool after_point = false;
    for (; i < len && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '.') {
            after_point = true;
            continue;
        }
        if (after_point)
            exp10--;
        if (n_digits == 0 && s[i] == '0')
            continue; /* leading zero */
        if (n_digits == sizeof digits) {
            big = true;
            break;
        }
        digits[n_digits++] = s[i];
    }
    if (!big && i < len) {
        i++; /* 'e' */
        bool eneg = false;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        int64_t e = 0;
        for (; i < len; i++) {
            if (e > 100000000000000LL) {
                big = true;
                break;
            }
            e = e * 10 + (s[i] - '0');
        }
        exp10 += eneg ? -e : e;
    }
    /* Absurdly long mantissas or exponents: keep the literal, equal only to itself. */
    if (big)
        return put(k, s, len);
    while (n_digits > 0 && digits[n_digits - 1] == '0') {
        n_digits--;
        exp10++;
    }
    if (n_digits == 0)
        return put(k, "0e0", 3);
    char buf[128];
    size_t n = 0;
    if (neg)
        buf[n++] = '-';
    buf[n++] = digits[0];
    if (n_digits > 1) {
        buf[n++] = '.';
        memcpy(buf + n, digits + 1, n_digits - 1);
        n += n_digits - 1;
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "e%lld",
                          (long long)(exp10 + (int64_t)n_digits - 1));
    return put(k, buf, n);
}

int ckey_number(ckey *k, const char *text, size_t len)
{
    if (begin_value(k) != 0 || put_number(k, text, len) != 0)
        return -1;
    end_value(k);
    return 0;
}

int ckey_string(ckey *k, const char *s, size_t len)
{
    if (begin_value(k) != 0 || put_string(k, s, len) != 0)
        return -1;
    end_value(k);
    return 0;
}

static int open_container(ckey *k, bool is_map)
{
    if (begin_value(k) != 0 ||
        grow(&k->alloc, (void **)&k->frames, &k->cap_frames, k->n_frames, 1, sizeof *k->frames))
        return -1;
    ckey_frame f = {is_map, k->n_out, k->n_members, 0};
    if (put(k, is_map ? "{" : "[", 1) != 0)
        return -1;
    k->frames[k->n_frames++] = f;
    return 0;
}

int ckey_start_map(ckey *k)
{
    return open_container(k, true);
}

int ckey_start_array(ckey *k)
{
    return open_container(k, false);
}

int ckey_map_key(ckey *k, const char *s, size_t len)
{
    if (grow(&k->alloc, (void **)&k->members, &k->cap_members, k->n_members, 1,
             sizeof *k->members) != 0)
        return -1;
    k->members[k->n_members++] = (ckey_member){k->n_out, 0, NULL, 0};
    if (put_string(k, s, len) != 0 || put(k, ":", 1) != 0)
        return -1;
    return 0;
}

/* Length of the serialized key at the start of a member: up to its closing quote. */
static size_t key_len(const char *s)
{
    size_t i = 1;
    while (s[i] != '"')
        i += s[i] == '\\' ? 2 : 1;
    return i + 1;
}

static int cmp_member(const void *a, const void *b)
{
    const ckey_member *x = a, *y = b;
    int c = memcmp(x->text, y->text, x->key_len < y->key_len ? x->key_len : y->key_len);
    if (c)
        return c;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

int ckey_end_map(ckey *k)
{
    ckey_frame f = k->frames[--k->n_frames];
    size_t n = k->n_members - f.mem_start;
    ckey_member *m = n ? k->members + f.mem_start : NULL; /* no arithmetic on a NULL block */
    /* Members are in text order: each ends where the next begins. Sorting them by their
     * serialized key gives the canonical order (any fixed total order would do). */
    for (size_t i = 0; i < n; i++) {
        m[i].end = i + 1 < n ? m[i + 1].start : k->n_out;
        m[i].text = k->out + m[i].start;
        m[i].key_len = key_len(m[i].text);
    }
    if (n > 1)
        qsort(m, n, sizeof *m, cmp_member);
    size_t body = k->n_out - f.start;
    if (grow(&k->alloc, (void **)&k->tmp, &k->cap_tmp, 0, body + n + 2, 1) != 0)
        return -1;
    size_t t = 0;
    k->tmp[t++] = '{';
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            if (cmp_member(&m[i - 1], &m[i]) == 0)
                return 1;
            k->tmp[t++] = ',';
        }
        memcpy(k->tmp + t, m[i].text, m[i].end - m[i].start);
        t += m[i].end - m[i].start;
    }
    k->tmp[t++] = '}';
    k->n_out = f.start;
    k->n_members = f.mem_start;
    if (put(k, k->tmp, t) != 0)
        return -1;
    end_value(k);
    return 0;
}

int ckey_end_array(ckey *k)
{
    k->n_frames--;
    if (put(k, "]", 1) != 0)
        return -1;
    end_value(k);
    return 0;
}

bool ckey_done(const ckey *k)
{
    return k->done;
}

char *ckey_take(ckey *k, size_t *len)
{
    char *s = k->alloc.malloc(k->alloc.ctx, k->n_out + 1);
    if (!s)
        return NULL;
    memcpy(s, k->out, k->n_out);
    s[k->n_out] = '\0';
    *len = k->n_out;
    ckey_reset(k);
    return s;
}

/* ---- the cache ---- */

tlsan_cache *cache_create_with(const yajl_alloc_funcs *alloc)
{
    if (!alloc)
        alloc = &std_alloc;
    tlsan_cache *c = alloc->malloc(alloc->ctx, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->alloc = *alloc;
    return c;
}

tlsan_cache *tlsan_cache_create(void)
{
    return cache_create_with(NULL);
}

void tlsan_cache_free(tlsan_cache *c)
{
    if (!c)
        return;
    const yajl_alloc_funcs a = c->alloc;
    for (size_t i = 0; i < c->n_plans; i++) {
        tlsan_plan_free(c->plans[i]);
        a.free(a.ctx, c->keys[i]);
    }
    a.free(a.ctx, c->plans);
    a.free(a.ctx, c->keys);
    a.free(a.ctx, c->key_lens);
    a.free(a.ctx, c);
}

int cache_push(tlsan_cache *c, tlsan_plan *plan, char *key, size_t key_len)
{
    /* Grow all three arrays to one capacity; cap_plans only moves once all succeeded. */
    if (c->n_plans == c->cap_plans) {
        size_t cap = c->cap_plans ? 2 * c->cap_plans : 4;
        tlsan_plan **p = c->alloc.realloc(c->alloc.ctx, c->plans, cap * sizeof *p);
        if (!p)
            return -1;
        c->plans = p;
        char **k = c->alloc.realloc(c->alloc.ctx, c->keys, cap * sizeof *k);
        if (!k)
            return -1;
        c->keys = k;
        size_t *l = c->alloc.realloc(c->alloc.ctx, c->key_lens, cap * sizeof *l);
        if (!l)
            return -1;
        c->key_lens = l;
        c->cap_plans = cap;
    }
    c->plans[c->n_plans] = plan;
    c->keys[c->n_plans] = key;
    c->key_lens[c->n_plans] = key_len;
    c->n_plans++;
    return 0;
}

const char *cache_key(const tlsan_cache *c, size_t i)
{
    return c && i < c->n_plans ? c->keys[i] : NULL;
}

size_t tlsan_cache_n_plans(const tlsan_cache *c)
{
    return c ? c->n_plans : 0;
}

const tlsan_plan *tlsan_cache_plan(const tlsan_cache *c, size_t i)
{
    return c && i < c->n_plans ? c->plans[i] : NULL;
}

/* yajl callbacks that feed a key builder from JSON text (tlsan_cache_add). */
static int cb_null(void *ctx)
{
    return ckey_null(ctx) == 0;
}
static int cb_bool(void *ctx, int v)
{
    return ckey_bool(ctx, v != 0) == 0;
}
static int cb_number(void *ctx, const char *s, size_t n)
{
    return ckey_number(ctx, s, n) == 0;
}
static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    return ckey_string(ctx, (const char *)s, n) == 0;
}
static int cb_start_map(void *ctx)
{
    return ckey_start_map(ctx) == 0;
}
static int cb_map_key(void *ctx, const unsigned char *s, size_t n)
{
    return ckey_map_key(ctx, (const char *)s, n) == 0;
}
static int cb_end_map(void *ctx)
{
    return ckey_end_map(ctx) == 0;
}
static int cb_start_array(void *ctx)
{
    return ckey_start_array(ctx) == 0;
}
static int cb_end_array(void *ctx)
{
    return ckey_end_array(ctx) == 0;
}

static const yajl_callbacks key_callbacks = {
    cb_null,      cb_bool,    NULL,       NULL,           cb_number,    cb_string,
    cb_start_map, cb_map_key, cb_end_map, cb_start_array, cb_end_array,
};

static tlsan_status key_error(tlsan_error *err, tlsan_status st, const char *what)
{
    if (err) {
        memset(err, 0, sizeof *err);
        snprintf(err->where, sizeof err->where, "key");
        snprintf(err->what, sizeof err->what, "%s", what);
    }
    return st;
}

tlsan_status tlsan_cache_add(tlsan_cache *c, tlsan_plan *plan, const char *key_json,
                             tlsan_error *err)
{
    if (!c || !plan || !key_json)
        return TLSAN_ERR_ARG;
    if (!plan->finalized)
        return TLSAN_ERR_STATE;
    tlsan_status st = TLSAN_OK;
    char *text = NULL;
    size_t len = 0;
    ckey *k = ckey_new(&c->alloc);
    yajl_handle h = k ? yajl_alloc(&key_callbacks, &c->alloc, k) : NULL;
    if (!h) {
        st = key_error(err, TLSAN_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* A key's first character tells whether it is an object; checking it up front keeps
     * the builder free of a "root must be a map" rule. */
    const char *p = key_json;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p != '{') {
        st = key_error(err, TLSAN_ERR_INVALID, "a cache key must be a JSON object");
        goto out;
    }
    yajl_status ys = yajl_parse(h, (const unsigned char *)key_json, strlen(key_json));
    if (ys == yajl_status_ok)
        ys = yajl_complete_parse(h);
    if (ys != yajl_status_ok) {
        char syntax[200], what[512];
        json_syntax_message(h, syntax, sizeof syntax);
        snprintf(what, sizeof what, "the key is not valid JSON: %s", syntax);
        if (ys == yajl_status_client_canceled)
            snprintf(what, sizeof what, "the key repeats a member name, or memory ran out");
        st = key_error(err, TLSAN_ERR_INVALID, what);
        goto out;
    }
    text = ckey_take(k, &len);
    if (!text) {
        st = key_error(err, TLSAN_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (cache_push(c, plan, text, len) != 0) {
        c->alloc.free(c->alloc.ctx, text);
        st = key_error(err, TLSAN_ERR_NOMEM, "out of memory");
    }
out:
    if (h)
        yajl_free(h);
    ckey_free(k);
    return st;
}

/* ---- cache-key-collision ---- */

/* Per plan: each tensor's accesses in op order, as (op << 2 | 1 read | 2 write), in
 * [begin[t], end[t]) of acc. Ends are kept apart from starts because merging an op's
 * repeated mentions of one tensor leaves gaps. */
typedef struct plan_access {
    size_t *begin, *end;
    uint64_t *acc;
} plan_access;

static void pa_free(plan_access *a)
{
    free(a->begin);
    free(a->end);
    free(a->acc);
    memset(a, 0, sizeof *a);
}

static int pa_build(const tlsan_plan *p, plan_access *a)
{
    size_t nt = p->n_tensors;
    a->begin = malloc((nt ? nt : 1) * sizeof *a->begin);
    a->end = malloc((nt ? nt : 1) * sizeof *a->end);
    if (!a->begin || !a->end)
        return -1;
    size_t total = 0;
    for (size_t i = 0; i < p->n_ops; i++)
        total += p->ops[i].n_reads + p->ops[i].n_writes;
    size_t *count = calloc(nt ? nt : 1, sizeof *count);
    a->acc = malloc((total ? total : 1) * sizeof *a->acc);
    if (!count || !a->acc) {
        free(count);
        return -1;
    }
    for (size_t i = 0; i < p->n_ops; i++) {
        const op_rec *o = &p->ops[i];
        for (uint32_t k = 0; k < o->n_reads; k++)
            count[p->id_pool.v[o->reads_start + k]]++;
        for (uint32_t k = 0; k < o->n_writes; k++)
            count[p->id_pool.v[o->writes_start + k]]++;
    }
    size_t pos = 0;
    for (size_t t = 0; t < nt; t++) {
        a->begin[t] = a->end[t] = pos;
        pos += count[t];
    }
    free(count);
    for (size_t i = 0; i < p->n_ops; i++) {
        const op_rec *o = &p->ops[i];
        for (int w = 0; w < 2; w++) {
            uint32_t s = w ? o->writes_start : o->reads_start;
            uint32_t n = w ? o->n_writes : o->n_reads;
            uint64_t bit = w ? 2 : 1;
            for (uint32_t k = 0; k < n; k++) {
                uint32_t t = p->id_pool.v[s + k];
                if (a->end[t] > a->begin[t] && (a->acc[a->end[t] - 1] >> 2) == i)
                    a->acc[a->end[t] - 1] |= bit;
                else
                    a->acc[a->end[t]++] = ((uint64_t)i << 2) | bit;
            }
        }
    }
    return 0;
}

/* True when tensor tp of p and tq of q differ in placement or in the ops using them. */
static bool tensor_differs(const tlsan_plan *p, const plan_access *pa, size_t tp,
                           const tlsan_plan *q, const plan_access *qa, size_t tq)
{
    const tensor_rec *a = &p->tensors[tp], *b = &q->tensors[tq];
    bool a_root = a->arena != NO_INDEX, b_root = b->arena != NO_INDEX;
    if (a_root != b_root || a->bytes != b->bytes || a->offset_bytes != b->offset_bytes)
        return true;
    if (a_root) {
        if (strcmp(strtab_str(&p->strings, p->arenas[a->arena].name),
                   strtab_str(&q->strings, q->arenas[b->arena].name)) != 0)
            return true;
    } else if (strcmp(strtab_str(&p->strings, p->tensors[a->view_of].name),
                      strtab_str(&q->strings, q->tensors[b->view_of].name)) != 0) {
        return true;
    }
    size_t n = pa->end[tp] - pa->begin[tp];
    if (n != qa->end[tq] - qa->begin[tq])
        return true;
    for (size_t k = 0; k < n; k++) {
        uint64_t x = pa->acc[pa->begin[tp] + k], y = qa->acc[qa->begin[tq] + k];
        if ((x & 3) != (y & 3))
            return true;
        if (strcmp(strtab_str(&p->strings, p->ops[x >> 2].name),
                   strtab_str(&q->strings, q->ops[y >> 2].name)) != 0)
            return true;
    }
    return false;
}

static uint32_t find_tensor(const tlsan_plan *q, const tlsan_plan *p, uint32_t name_id)
{
    uint32_t id = strtab_find(&q->strings, strtab_str(&p->strings, name_id),
                              strtab_len(&p->strings, name_id));
    return plan_lookup(&q->tensor_by_name, id);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void plan_label(const tlsan_cache *c, size_t i, char *buf, size_t n)
{
    const char *name = tlsan_plan_name(c->plans[i]);
    if (name)
        snprintf(buf, n, "'%s' (plans[%zu])", name, i);
    else
        snprintf(buf, n, "plans[%zu]", i);
}

/* Compares plans i < j with equal keys; appends a finding when tensors differ. */
static int compare_pair(const tlsan_cache *c, size_t i, size_t j, const plan_access *ai,
                        const plan_access *aj, tlsan_report *report)
{
    const tlsan_plan *p = c->plans[i], *q = c->plans[j];
    const char **names = malloc((p->n_tensors + q->n_tensors + 1) * sizeof *names);
    if (!names)
        return -1;
    size_t n = 0;
    for (size_t t = 0; t < p->n_tensors; t++) {
        uint32_t u = find_tensor(q, p, p->tensors[t].name);
        if (u == NO_INDEX || tensor_differs(p, ai, t, q, aj, u))
            names[n++] = strtab_str(&p->strings, p->tensors[t].name);
    }
    for (size_t u = 0; u < q->n_tensors; u++)
        if (find_tensor(p, q, q->tensors[u].name) == NO_INDEX)
            names[n++] = strtab_str(&q->strings, q->tensors[u].name);
    int rc = 0;
    if (n > 0) {
        qsort(names, n, sizeof *names, cmp_names);
        char list[256];
        size_t used = 0;
        list[0] = '\0';
        for (size_t k = 0; k < n && used < sizeof list - 8; k++) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", names[k]);
            if (w < 0 || (size_t)w >= sizeof list - used) {
                snprintf(list + used, sizeof list - used, ", ...");
                break;
            }
            used += (size_t)w;
        }
        char li[300], lj[300];
        plan_label(c, i, li, sizeof li);
        plan_label(c, j, lj, sizeof lj);
        tlsan_finding f;
        memset(&f, 0, sizeof f);
        f.kind = TLSAN_KIND_CACHE_KEY_COLLISION;
        f.tensors = names;
        f.n_tensors = n;
        f.tensor_index[0] = f.tensor_index[1] = -1;
        f.plan_index = (int64_t)i;
        f.other_plan_index = (int64_t)j;
        f.op_index = f.op_index2 = -1;
        rc = report_add(report, &f,
                        "plans %s and %s have the same key %.200s but differ in %zu "
                        "tensor%s: %s",
                        li, lj, c->keys[i], n, n == 1 ? "" : "s", list);
    }
    free(names);
    return rc;
}

/* True when plans i and j have the same tensors, laid out and used the same way: the
 * relation "no tensor differs", which is an equivalence. */
static bool plans_same(const tlsan_cache *c, size_t i, size_t j, const plan_access *ai,
                       const plan_access *aj)
{
    const tlsan_plan *p = c->plans[i], *q = c->plans[j];
    if (p->n_tensors != q->n_tensors)
        return false;
    for (size_t t = 0; t < p->n_tensors; t++) {
        uint32_t u = find_tensor(q, p, p->tensors[t].name);
        if (u == NO_INDEX || tensor_differs(p, ai, t, q, aj, u))
            return false;
    }
    return true; /* same count and every tensor of p found in q: no tensor only in q */
}

typedef struct key_ref {
    uint64_t hash;
    size_t plan;
    const char *key;
    size_t len;
} key_ref;

static int cmp_key_ref(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    int c = memcmp(x->key, y->key, x->len);
    if (c)
        return c;
    return x->plan < y->plan ? -1 : x->plan > y->plan;
}

int cache_collisions(const tlsan_cache *c, tlsan_report *report)
{
    if (!c || !report)
        return -1;
    size_t n = c->n_plans;
    if (n < 2)
        return 0;
    int rc = -1;
    key_ref *refs = malloc(n * sizeof *refs);
    plan_access *acc = calloc(n, sizeof *acc);
    size_t *rep = malloc(n * sizeof *rep);     /* per class: its first plan (a refs index) */
    size_t *klass = malloc(n * sizeof *klass); /* per refs index: its class */
    if (!refs || !acc || !rep || !klass)
        goto out;
    for (size_t i = 0; i < n; i++)
        refs[i] = (key_ref){strtab_hash(c->keys[i], c->key_lens[i]), i, c->keys[i], c->key_lens[i]};
    /* Sorting by hash puts equal keys next to each other (ordered by plan within a group),
     * so only the members of one group are ever compared with each other. */
    qsort(refs, n, sizeof *refs, cmp_key_ref);
    for (size_t g = 0; g < n;) {
        size_t e = g + 1;
        while (e < n && refs[e].hash == refs[g].hash && refs[e].len == refs[g].len &&
               memcmp(refs[e].key, refs[g].key, refs[g].len) == 0)
            e++;
        if (e - g >= 2) {
            for (size_t a = g; a < e; a++)
                if (!acc[refs[a].plan].begin &&
                    pa_build(c->plans[refs[a].plan], &acc[refs[a].plan]) != 0)
                    goto out;
            /* Plans that match a class's first plan have the same layout as all of it, so
             * pairs inside a class need no comparison: a cache of thousands of identical
             * plans costs one comparison per plan, not one per pair. */
            size_t n_classes = 0;
            for (size_t a = g; a < e; a++) {
                size_t k = 0;
                while (k < n_classes && !plans_same(c, refs[a].plan, refs[rep[k]].plan,
                                                    &acc[refs[a].plan], &acc[refs[rep[k]].plan]))
                    k++;
                if (k == n_classes)
                    rep[n_classes++] = a;
                klass[a] = k;
            }
            for (size_t a = g; a < e && n_classes > 1; a++)
                for (size_t b = a + 1; b < e; b++)
                    if (klass[a] != klass[b] &&
                        compare_pair(c, refs[a].plan, refs[b].plan, &acc[refs[a].plan],
                                     &acc[refs[b].plan], report) != 0)
                        goto out;
        }
        g = e;
    }
    rc = 0;
out:
    if (acc)
        for (size_t i = 0; i < n; i++)
            pa_free(&acc[i]);
    free(acc);
    free(refs);
    free(rep);
    free(klass);
    return rc;
}
