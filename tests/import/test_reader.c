/* Tests of the streaming plan reader: the case corpora parse (the project's own, and the
 * shared one when present), invalid cases are refused at the stated place, values land in
 * the model exactly, every invalid plan of tests/invalid/ gives its stated error (with any chunking
 * of the input), and allocation failures are reported cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "check/cache.h"
#include "check/plan.h"
#include "import/reader.h"
#include "support/corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file; NULL when it cannot. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (buf)
        buf[n < cap ? n : cap - 1] = '\0';
    *len = n;
    return buf;
}

/* ---- the case corpora ---- */

/* An .expect reading "invalid" marks a case the reader must refuse. */
static bool expects_invalid(const char *dir, const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%.*s.expect", dir, (int)(strlen(name) - 5), name);
    size_t len;
    char *text = slurp(path, &len);
    if (!text)
        fail_msg("%s: cannot read", path);
    bool invalid = strncmp(text, "invalid", 7) == 0;
    free(text);
    return invalid;
}

/* Reads every case of dir: valid ones parse to a plan or a cache, invalid ones are refused
 * naming the file and, where a NAME.where file gives it, the JSON path or line:column. */
static void read_corpus(const char *dir, size_t *n_plans, size_t *n_caches, size_t *n_invalid,
                        size_t *n_where)
{
    char **names;
    size_t n = corpus_list_json(dir, &names);
    *n_plans = *n_caches = *n_invalid = *n_where = 0;
    for (size_t i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        tlsan_plan *p = NULL;
        tlsan_cache *c = NULL;
        tlsan_error err;
        tlsan_status st = tlsan_read_file(path, &p, &c, &err);
        if (expects_invalid(dir, names[i])) {
            if (st != TLSAN_ERR_INVALID)
                fail_msg("%s: accepted, but its .expect says invalid", path);
            assert_string_equal(err.file, path);
            (*n_invalid)++;
            char where_path[2048];
            snprintf(where_path, sizeof where_path, "%.*s.where", (int)(strlen(path) - 5), path);
            size_t len;
            char *want = slurp(where_path, &len);
            if (want) {
                want[strcspn(want, "\n")] = '\0';
                char got[sizeof err.where + 32];
                if (err.line > 0)
                    snprintf(got, sizeof got, "%d:%d", err.line, err.column);
                else
                    snprintf(got, sizeof got, "%s", err.where);
                if (strcmp(got, want) != 0)
                    fail_msg("%s: refused at '%s', want '%s' (%s)", path, got, want, err.what);
                (*n_where)++;
                free(want);
            }
        } else {
            if (st != TLSAN_OK) {
                char buf[1024];
                fail_msg("%s", tlsan_error_format(&err, buf, sizeof buf));
            }
            assert_true((p != NULL) != (c != NULL));
            *n_plans += p != NULL;
            *n_caches += c != NULL;
        }
        tlsan_plan_free(p);
        tlsan_cache_free(c);
    }
    corpus_free_list(names, n);
}

static void test_own_cases_parse(void **state)
{
    (void)state;
    size_t n_plans, n_caches, n_invalid, n_where;
    read_corpus(corpus_own_cases(), &n_plans, &n_caches, &n_invalid, &n_where);
    /* tests/cases as of this writing: 48 plans, 2 caches, 37 invalid plans each with the
     * place of its fault. */
    assert_int_equal(n_plans, 48);
    assert_int_equal(n_caches, 2);
    assert_int_equal(n_invalid, 37);
    assert_int_equal(n_where, 37);

    /* The entry points for a lone plan name what they refuse. */
    char path[2048];
    tlsan_plan *p = NULL;
    tlsan_error err;
    snprintf(path, sizeof path, "%s/invalid-unknown-arena.json", corpus_own_cases());
    assert_int_equal(tlsan_plan_read_file(path, &p, &err), TLSAN_ERR_INVALID);
    assert_null(p);
    assert_string_equal(err.where, "tensors[1].arena");
    assert_string_equal(err.what, "unknown arena 'gpu'");
    snprintf(path, sizeof path, "%s/cache-what-differs.json", corpus_own_cases());
    assert_int_equal(tlsan_plan_read_file(path, &p, &err), TLSAN_ERR_INVALID);
    assert_null(p);
    assert_string_equal(err.where, "tlsan_plan_cache");
    assert_non_null(strstr(err.what, "plan cache"));
}

static void test_shared_cases_parse(void **state)
{
    (void)state;
    char dir[1024];
    assert_true(corpus_shared_sub("cases", dir, sizeof dir));
    size_t n_plans, n_caches, n_invalid, n_where;
    read_corpus(dir, &n_plans, &n_caches, &n_invalid, &n_where);
    assert_true(n_plans >= 26);
    assert_int_equal(n_caches, 1);
    assert_int_equal(n_invalid, 1);

    /* The one invalid case names the unknown tensor exactly. */
    char path[2048];
    snprintf(path, sizeof path, "%s/invalid-unknown-tensor.json", dir);
    tlsan_plan *p = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_plan_read_file(path, &p, &err), TLSAN_ERR_INVALID);
    assert_null(p);
    assert_string_equal(err.where, "ops[0].writes[0]");
    assert_string_equal(err.what, "unknown tensor 'nope'");

    /* A cache through the plan-only entry point is refused. */
    snprintf(path, sizeof path, "%s/cache-collision.json", dir);
    assert_int_equal(tlsan_plan_read_file(path, &p, &err), TLSAN_ERR_INVALID);
    assert_null(p);
    assert_string_equal(err.where, "tlsan_plan_cache");
    assert_non_null(strstr(err.what, "plan cache"));
}

/* ---- values land in the model ---- */

static const char full_plan[] =
    "{\"name\": \"full\", \"schedule\": \"dataflow\", \"comment\": {\"any\": [1, {\"x\": null}]},\n"
    " \"plans\": 7, \"key\": \"ignored in a lone plan\",\n"
    " \"arenas\": [{\"name\": \"a0\", \"bytes\": 9223372036854775807, \"alignment\": 64,"
    "              \"memory\": \"cuda:0\"},\n"
    "            {\"name\": \"a1\", \"bytes\": 0}],\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"bytes\": 4096, \"arena\": \"a0\", \"offset\": 0, \"input\": true,"
    "   \"output\": false, \"dtype\": \"f16\", \"shape\": [2, 1024], \"stack\": [\"m.py:3\","
    "   \"m.py:1\"], \"memory\": \"cuda:0\"},\n"
    "  {\"name\": \"h\", \"bytes\": 8192, \"arena\": \"a0\", \"offset\": 9223372036854771712,"
    "   \"alignment\": 4096, \"lifetime\": [-1, 4], \"constant\": false},\n"
    "  {\"name\": \"hv\", \"bytes\": 16, \"view_of\": \"h\", \"view_offset\": 32, \"output\": "
    "true},\n"
    "  {\"name\": \"u4s\", \"bytes\": 1, \"arena\": \"a1\", \"offset\": 0, \"dtype\": \"u4\","
    "   \"shape\": [], \"constant\": true}\n"
    " ],\n"
    " \"ops\": [\n"
    "  {\"name\": \"f\", \"reads\": [\"x\"], \"writes\": [\"h\"], \"inplace\": [[\"h\", \"x\"]],"
    "   \"stream\": \"s1\", \"loop\": \"L0\", \"stack\": [\"run.py:9\"], \"sync\": false},\n"
    "  {\"name\": \"ev\", \"record\": \"e1\", \"stream\": \"s1\", \"loop\": \"L0\"},\n"
    "  {\"name\": \"w\", \"wait\": \"e1\", \"after\": [\"f\"]},\n"
    "  {\"name\": \"g\", \"reads\": [\"hv\", \"u4s\"], \"writes\": [],"
    "   \"branch\": [{\"if\": \"c0\", \"arm\": \"then\"}, {\"if\": \"c1\", \"arm\": \"b\"}]},\n"
    "  {\"name\": \"k\", \"branch\": {\"if\": \"c0\", \"arm\": \"else\", \"note\": 1}, \"sync\": "
    "true,"
    "   \"unknown\": [[], {}]}\n"
    " ],\n"
    " \"tlsan_plan\": 1}\n";

static void test_values_land_in_model(void **state)
{
    (void)state;
    tlsan_plan *p = NULL;
    tlsan_error err;
    tlsan_status st = tlsan_plan_read_buffer(full_plan, strlen(full_plan), "full", &p, &err);
    if (st != TLSAN_OK) {
        char buf[1024];
        fail_msg("%s", tlsan_error_format(&err, buf, sizeof buf));
    }
    assert_string_equal(tlsan_plan_name(p), "full");
    assert_int_equal(p->schedule, TLSAN_SCHEDULE_DATAFLOW);
    assert_int_equal(p->n_arenas, 2);
    assert_int_equal(p->arenas[0].bytes, INT64_MAX);
    assert_int_equal(p->arenas[0].alignment_bytes, 64);
    assert_string_equal(plan_str(p, p->arenas[0].memory), "cuda:0");
    assert_string_equal(plan_str(p, p->arenas[1].memory), "host");
    assert_int_equal(p->arenas[1].alignment_bytes, 1);

    assert_int_equal(p->n_tensors, 4);
    const tensor_rec *x = &p->tensors[0], *h = &p->tensors[1], *hv = &p->tensors[2],
                     *u = &p->tensors[3];
    assert_string_equal(tlsan_plan_tensor_name(p, 0), "x");
    assert_int_equal(x->arena, 0);
    assert_int_equal(x->bytes, 4096);
    assert_int_equal(x->flags & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT), TLSAN_TENSOR_INPUT);
    assert_int_equal(x->dtype, TLSAN_DTYPE_F16);
    assert_int_equal(plan_shape_rank(p, x), 2);
    assert_int_equal(plan_shape_dim(p, x, 0), 2);
    assert_int_equal(plan_shape_dim(p, x, 1), 1024);
    assert_int_equal(tensor_x(p, x)->n_stack, 2);
    assert_string_equal(plan_str(p, p->id_pool.v[tensor_x(p, x)->stack_start]), "m.py:3");
    assert_string_equal(plan_str(p, p->id_pool.v[tensor_x(p, x)->stack_start + 1]), "m.py:1");
    assert_string_equal(plan_str(p, tensor_x(p, x)->memory), "cuda:0");

    assert_int_equal(h->offset_bytes, UINT64_C(9223372036854771712));
    assert_int_equal(tensor_x(p, h)->alignment_bytes, 4096);
    assert_true(h->flags & TREC_HAS_LIFETIME);
    assert_int_equal(tensor_x(p, h)->lifetime[0], -1);
    assert_int_equal(tensor_x(p, h)->lifetime[1], 4);
    assert_int_equal(h->flags & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT), 0);
    assert_int_equal(tensor_x(p, h)->memory, STRTAB_NONE);

    assert_int_equal(hv->arena, NO_INDEX);
    assert_int_equal(hv->view_of, 1);
    assert_int_equal(hv->root, 1);
    assert_int_equal(hv->offset_bytes, 32);
    assert_int_equal(hv->flags & TLSAN_TENSOR_OUTPUT, TLSAN_TENSOR_OUTPUT);

    assert_int_equal(u->dtype, TLSAN_DTYPE_U4);
    assert_int_equal(plan_shape_rank(p, u), 0);
    assert_int_equal(u->flags & (TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT),
                     TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT);

    assert_int_equal(p->n_ops, 5);
    const op_rec *f = &p->ops[0], *ev = &p->ops[1], *w = &p->ops[2], *g = &p->ops[3],
                 *k = &p->ops[4];
    assert_string_equal(tlsan_plan_op_name(p, 0), "f");
    assert_int_equal(f->sync, TLSAN_SYNC_NONE);
    assert_int_equal(f->n_reads, 1);
    assert_int_equal(p->id_pool.v[f->reads_start], 0);
    assert_int_equal(f->n_writes, 1);
    assert_int_equal(p->id_pool.v[f->writes_start], 1);
    assert_int_equal(op_x(p, f)->n_inplace, 1);
    assert_int_equal(p->id_pool.v[op_x(p, f)->inplace_start], 1);
    assert_int_equal(p->id_pool.v[op_x(p, f)->inplace_start + 1], 0);
    assert_string_equal(plan_str(p, plan_op_stream_name(p, 0)), "s1");
    assert_int_equal(plan_op_loop(p, 0), 0);
    assert_int_equal(plan_op_loop(p, 1), 0);
    assert_int_equal(plan_op_loop(p, 2), NO_INDEX);
    assert_int_equal(op_x(p, f)->n_stack, 1);
    assert_string_equal(plan_str(p, p->id_pool.v[op_x(p, f)->stack_start]), "run.py:9");

    assert_int_equal(ev->sync, TLSAN_SYNC_RECORD);
    assert_string_equal(plan_str(p, ev->event), "e1");
    assert_int_equal(w->sync, TLSAN_SYNC_WAIT);
    assert_string_equal(plan_str(p, w->event), "e1");
    assert_string_equal(plan_str(p, plan_op_stream_name(p, 2)), "main");
    assert_int_equal(op_x(p, w)->n_after, 1);
    assert_int_equal(p->id_pool.v[op_x(p, w)->after_start], 0);

    assert_int_equal(g->n_reads, 2);
    assert_int_equal(p->id_pool.v[g->reads_start + 1], 3);
    assert_int_equal(g->n_writes, 0);
    assert_int_equal(op_x(p, g)->n_cond, 2);
    assert_int_equal(p->n_ifs, 2);
    /* c0 has arms then (0) and else (1); g takes then, k takes else. */
    assert_string_equal(plan_str(p, p->ifs[0].name), "c0");
    assert_int_equal(p->id_pool.v[op_x(p, g)->cond_start], 0);
    assert_int_equal(p->id_pool.v[op_x(p, g)->cond_start + 1], 0);
    assert_int_equal(op_x(p, k)->n_cond, 1);
    assert_int_equal(p->id_pool.v[op_x(p, k)->cond_start + 1], 1);
    assert_int_equal(k->sync, TLSAN_SYNC_ALL);
    tlsan_plan_free(p);
}

/* The plan of the n bytes of json, which must read without an error. */
static tlsan_plan *read_ok(const char *json, size_t n, const char *name)
{
    tlsan_plan *p = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_plan_read_buffer(json, n, name, &p, &err), TLSAN_OK);
    return p;
}

/* Extents past 2^32-1 keep their exact value (a tensor with one keeps all of its own in
 * 8-byte entries) beside the 4-byte ones of every other tensor. */
static void test_wide_shape_extents(void **state)
{
    (void)state;
    static const char plan[] =
        "{\"tlsan_plan\": 1, \"arenas\": [{\"name\": \"a\", \"bytes\": 4096}],\n"
        " \"tensors\": [\n"
        "  {\"name\": \"s\", \"bytes\": 8, \"arena\": \"a\", \"offset\": 0,"
        " \"dtype\": \"u8\", \"shape\": [2, 4]},\n"
        "  {\"name\": \"w\", \"bytes\": 8, \"arena\": \"a\", \"offset\": 64,"
        " \"dtype\": \"u8\", \"shape\": [3, 4294967296, 4294967295]},\n"
        "  {\"name\": \"t\", \"bytes\": 8, \"arena\": \"a\", \"offset\": 128,"
        " \"dtype\": \"u8\", \"shape\": [4294967295, 0]},\n"
        "  {\"name\": \"v\", \"bytes\": 8, \"arena\": \"a\", \"offset\": 192,"
        " \"dtype\": \"u8\", \"shape\": [4294967297]}\n"
        " ],\n"
        " \"ops\": []}\n";
    tlsan_plan *p = read_ok(plan, strlen(plan), "wide");
    const tensor_rec *s = &p->tensors[0], *w = &p->tensors[1], *t = &p->tensors[2];
    assert_int_equal(plan_shape_rank(p, s), 2);
    assert_int_equal(plan_shape_dim(p, s, 0), 2);
    assert_int_equal(plan_shape_dim(p, s, 1), 4);
    assert_int_equal(plan_shape_rank(p, w), 3);
    assert_int_equal(plan_shape_dim(p, w, 0), 3);
    assert_int_equal(plan_shape_dim(p, w, 1), UINT64_C(4294967296));
    assert_int_equal(plan_shape_dim(p, w, 2), UINT64_C(4294967295));
    assert_int_equal(plan_shape_rank(p, t), 2);
    assert_int_equal(plan_shape_dim(p, t, 0), UINT64_C(4294967295));
    assert_int_equal(plan_shape_dim(p, t, 1), 0);
    assert_int_equal(plan_needed_bytes(p, s), 8);
    /* 3 * 2^32 * (2^32-1) elements: past 2^64-1 bytes, saturated */
    assert_int_equal(plan_needed_bytes(p, w), UINT64_MAX);
    assert_int_equal(plan_needed_bytes(p, t), 0);
    assert_int_equal(plan_needed_bytes(p, &p->tensors[3]), UINT64_C(4294967297));
    tlsan_plan_free(p);
}

/* A shape of more extents than a record's rank field holds keeps them all. */
static void test_high_rank_shape(void **state)
{
    (void)state;
    enum { RANK = TREC_RANK_MAX + 2 };
    static const char head[] = "{\"tlsan_plan\": 1, \"arenas\": [{\"name\": \"a\", \"bytes\": "
                               "64}], \"ops\": [], \"tensors\": [{\"name\": \"s\", \"bytes\": 2,"
                               " \"arena\": \"a\", \"offset\": 0, \"dtype\": \"u8\", \"shape\": [";
    size_t cap = sizeof head + 2 * RANK + 16, n = 0;
    char *json = malloc(cap);
    assert_non_null(json);
    memcpy(json, head, sizeof head - 1);
    n = sizeof head - 1;
    for (int k = 0; k < RANK; k++) {
        json[n++] = k == RANK - 1 ? '2' : '1';
        json[n++] = k == RANK - 1 ? ']' : ',';
    }
    memcpy(json + n, "}]}", 3);
    n += 3;
    tlsan_plan *p = read_ok(json, n, "rank");
    const tensor_rec *s = &p->tensors[0];
    assert_int_equal(plan_shape_rank(p, s), RANK);
    assert_int_equal(plan_shape_dim(p, s, 0), 1);
    assert_int_equal(plan_shape_dim(p, s, RANK - 1), 2);
    assert_int_equal(plan_needed_bytes(p, s), 2);
    tlsan_plan_free(p);
    free(json);
}

/* Numbers are exact 64-bit integers, and the largest and smallest values are accepted. */
static void test_integer_limits(void **state)
{
    (void)state;
    const char *json = "{\"tlsan_plan\": 1, \"arenas\": [{\"name\": \"a\", \"bytes\": "
                       "9223372036854775807, \"alignment\": 9223372036854775807}], "
                       "\"tensors\": [{\"name\": \"t\", \"bytes\": 0, \"arena\": \"a\", "
                       "\"offset\": 9223372036854775807, \"lifetime\": [-1, -0]}], \"ops\": []}";
    tlsan_plan *p = read_ok(json, strlen(json), "lim");
    assert_int_equal(p->arenas[0].alignment_bytes, INT64_MAX);
    assert_int_equal(p->tensors[0].offset_bytes, INT64_MAX);
    assert_int_equal(tensor_x(p, &p->tensors[0])->lifetime[0], -1);
    assert_int_equal(tensor_x(p, &p->tensors[0])->lifetime[1], 0);
    tlsan_plan_free(p);
}

/* ---- allocation failures ---- */

typedef struct counting_alloc {
    long calls;   /* allocations so far (malloc and realloc) */
    long fail_at; /* the call that fails, 0: none */
    long live;    /* blocks allocated and not freed */
} counting_alloc;

static void *c_malloc(void *ctx, size_t n)
{
    counting_alloc *a = ctx;
    if (++a->calls == a->fail_at)
        return NULL;
    void *p = malloc(n);
    if (p)
        a->live++;
    return p;
}

static void *c_realloc(void *ctx, void *old, size_t n)
{
    counting_alloc *a = ctx;
    if (++a->calls == a->fail_at)
        return NULL;
    void *p = realloc(old, n);
    if (p && !old)
        a->live++;
    return p;
}

static void c_free(void *ctx, void *p)
{
    counting_alloc *a = ctx;
    if (p) {
        a->live--;
        free(p);
    }
}

/* ---- the invalid corpus ---- */

typedef struct expected_error {
    char location[256]; /* "where", "LINE:COL", or "" */
    char what[512];     /* a substring of what */
} expected_error;

static void read_expected(const char *path, expected_error *x)
{
    size_t len;
    char *text = slurp(path, &len);
    if (!text)
        fail_msg("no %s", path);
    text[strcspn(text, "\n")] = '\0';
    char *sep = strstr(text, ": ");
    assert_non_null(sep);
    *sep = '\0';
    snprintf(x->location, sizeof x->location, "%s", text);
    snprintf(x->what, sizeof x->what, "%s", sep + 2);
    free(text);
}

/* Checks an error against its expectation. yajl places a lexical error one character
 * differently when the bad token is split across chunks, so with `loose_column` a syntax
 * error's column may be one off (the line must still match). */
static void check_error(const char *name, const tlsan_error *err, const expected_error *x,
                        bool loose_column)
{
    char loc[300];
    int line = 0, column = 0;
    if (loose_column && err->line > 0 && sscanf(x->location, "%d:%d", &line, &column) == 2 &&
        line == err->line && abs(column - err->column) <= 1)
        snprintf(loc, sizeof loc, "%s", x->location);
    else if (err->line > 0)
        snprintf(loc, sizeof loc, "%d:%d", err->line, err->column);
    else
        snprintf(loc, sizeof loc, "%s", err->where);
    if (strcmp(loc, x->location) != 0 || !strstr(err->what, x->what))
        fail_msg("%s: expected \"%s: %s\", got \"%s: %s\"", name, x->location, x->what, loc,
                 err->what);
}

static void test_invalid_corpus(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/invalid", TLSAN_SOURCE_DIR);
    char **names;
    size_t n = corpus_list_json(dir, &names);
    assert_true(n >= 120);
    static const size_t chunks[] = {1, 3, 7, 64 * 1024};
    for (size_t i = 0; i < n; i++) {
        char path[2048], errpath[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        snprintf(errpath, sizeof errpath, "%.*s.err", (int)strlen(path) - 5, path);
        expected_error x;
        read_expected(errpath, &x);

        tlsan_plan *p = NULL;
        tlsan_cache *c = NULL;
        tlsan_error err;
        tlsan_status st = tlsan_read_file(path, &p, &c, &err);
        if (st != TLSAN_ERR_INVALID)
            fail_msg("%s: status %d, expected invalid", names[i], st);
        assert_null(p);
        assert_null(c);
        assert_string_equal(err.file, path);
        check_error(names[i], &err, &x, false);

        /* The same error whatever the chunking: positions carry across chunk ends. */
        size_t len;
        char *text = slurp(path, &len);
        assert_non_null(text);
        for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
            /* The counting allocator also proves that error paths free everything. */
            counting_alloc a = {0, 0, 0};
            yajl_alloc_funcs af = {c_malloc, c_realloc, c_free, &a};
            reader_options opt = {&af, true, true, chunks[k]};
            tlsan_error e2;
            st = reader_read_buffer(text, len, names[i], &opt, &p, &c, &e2);
            assert_int_equal(st, TLSAN_ERR_INVALID);
            assert_string_equal(e2.file, names[i]);
            check_error(names[i], &e2, &x, chunks[k] < 64 * 1024);
            if (a.live != 0)
                fail_msg("%s: %ld blocks leaked on the error path", names[i], a.live);
        }
        free(text);
    }
    print_message("%zu invalid plans refused with their stated errors\n", n);
    corpus_free_list(names, n);
}

/* ---- positions, entry points, I/O ---- */

static void test_positions_across_lines(void **state)
{
    (void)state;
    /* The bad character is on line 3, column 12 (counted in characters: é is one). */
    const char *json = "{\"tlsan_plan\": 1,\n \"name\": \"\xc3\xa9t\xc3\xa9\",\n \"arenas\": [x]}";
    static const size_t chunks[] = {1, 2, 5, 64 * 1024};
    for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
        reader_options opt = {NULL, true, true, chunks[k]};
        tlsan_plan *p = NULL;
        tlsan_cache *c = NULL;
        tlsan_error err;
        assert_int_equal(reader_read_buffer(json, strlen(json), "pos", &opt, &p, &c, &err),
                         TLSAN_ERR_INVALID);
        assert_int_equal(err.line, 3);
        assert_int_equal(err.column, 13);
        assert_string_equal(err.where, "");
        assert_non_null(strstr(err.what, "malformed JSON"));
        char buf[1024];
        assert_string_equal(tlsan_error_format(&err, buf, sizeof buf),
                            "pos:3:13: malformed JSON: invalid char in json text");
    }
}

/* Where each tensor and op object begins, whatever the chunks yajl is fed in: the cursor
 * that finds them carries over chunk boundaries. Positions are of the '{', in characters. */
static void test_object_sources(void **state)
{
    (void)state;
    const char *json =
        "{\"tlsan_plan\": 1, \"name\": \"\xc3\xa9\",\n"
        " \"arenas\": [{\"name\": \"a0\", \"bytes\": 64}],\n"
        " \"tensors\": [\n"
        "   {\"name\": \"x\", \"bytes\": 8, \"arena\": \"a0\", \"offset\": 0,"
        " \"input\": true},\n"
        "  {\"name\": \"\xc3\xa9\", \"bytes\": 8, \"view_of\": \"x\"}, {\"name\": \"y\","
        " \"bytes\": 8, \"arena\": \"a0\", \"offset\": 8, \"output\": true}],\n"
        " \"ops\": [{\"name\": \"f\", \"reads\": [\"x\"], \"writes\": [\"y\"]},\n"
        "\t{\"name\": \"g\", \"reads\": [\"y\"]}]}";
    /* x at 4:4, the view at 5:3, y at 5:46 (the view's name is one character), f at 6:10,
     * g at 7:2 */
    static const int tensors[3][2] = {{4, 4}, {5, 3}, {5, 46}}, ops[2][2] = {{6, 10}, {7, 2}};
    static const size_t chunks[] = {1, 2, 3, 7, 64 * 1024};
    for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
        reader_options opt = {NULL, true, true, chunks[k]};
        tlsan_plan *p = NULL;
        tlsan_cache *c = NULL;
        tlsan_error err;
        assert_int_equal(reader_read_buffer(json, strlen(json), "src", &opt, &p, &c, &err),
                         TLSAN_OK);
        for (size_t i = 0; i < 3; i++) {
            int line = 0, column = 0;
            assert_true(tlsan_plan_tensor_source(p, i, &line, &column));
            assert_int_equal(line, tensors[i][0]);
            assert_int_equal(column, tensors[i][1]);
        }
        for (size_t i = 0; i < 2; i++) {
            int line = 0, column = 0;
            assert_true(tlsan_plan_op_source(p, i, &line, &column));
            assert_int_equal(line, ops[i][0]);
            assert_int_equal(column, ops[i][1]);
        }
        assert_false(tlsan_plan_tensor_source(p, 3, NULL, NULL));
        assert_false(tlsan_plan_op_source(p, 2, NULL, NULL));
        tlsan_plan_free(p);
    }
    /* a plan built with the API has no sources */
    tlsan_plan *b = tlsan_plan_create();
    assert_int_equal(tlsan_plan_add_arena(b, &(tlsan_arena_desc){.name = "a", .bytes = 8}, NULL),
                     TLSAN_OK);
    assert_int_equal(
        tlsan_plan_add_tensor(b, &(tlsan_tensor_desc){.name = "t", .bytes = 8, .arena = "a"}, NULL),
        TLSAN_OK);
    assert_int_equal(tlsan_plan_finalize(b, NULL), TLSAN_OK);
    assert_false(tlsan_plan_tensor_source(b, 0, NULL, NULL));
    tlsan_plan_free(b);
}

static void test_entry_points(void **state)
{
    (void)state;
    const char *plan = "{\"tlsan_plan\": 1, \"arenas\": [], \"tensors\": [], \"ops\": []}";
    const char *cache = "{\"tlsan_plan_cache\": 1, \"plans\": [{\"key\": {\"b\": 1}, "
                        "\"tlsan_plan\": 1, \"arenas\": [], \"tensors\": [], \"ops\": []}]}";
    tlsan_plan *p = NULL;
    tlsan_cache *c = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_read_buffer(plan, strlen(plan), "p", &p, &c, &err), TLSAN_OK);
    assert_non_null(p);
    assert_null(c);
    tlsan_plan_free(p);
    assert_int_equal(tlsan_read_buffer(cache, strlen(cache), "c", &p, &c, &err), TLSAN_OK);
    assert_null(p);
    assert_int_equal(tlsan_cache_n_plans(c), 1);
    assert_string_equal(cache_key(c, 0), "{\"b\":1}");
    assert_non_null(tlsan_cache_plan(c, 0));
    assert_null(tlsan_cache_plan(c, 1));
    tlsan_cache_free(c);
    assert_int_equal(tlsan_plan_read_buffer(cache, strlen(cache), "c", &p, &err),
                     TLSAN_ERR_INVALID);
    assert_null(p);
    assert_string_equal(err.file, "c");
    assert_int_equal(tlsan_plan_read_buffer(plan, strlen(plan), "p", NULL, &err), TLSAN_ERR_ARG);
    assert_int_equal(tlsan_read_buffer(NULL, 3, "p", &p, &c, &err), TLSAN_ERR_ARG);

    assert_int_equal(tlsan_plan_read_file("/nonexistent/dir/plan.json", &p, &err), TLSAN_ERR_IO);
    assert_null(p);
    assert_string_equal(err.file, "/nonexistent/dir/plan.json");
    assert_non_null(strstr(err.what, "cannot open"));
}

static void fault_injection_on(const char *json, const char *label)
{
    counting_alloc a = {0, 0, 0};
    yajl_alloc_funcs af = {c_malloc, c_realloc, c_free, &a};
    reader_options opt = {&af, true, true, 5};
    tlsan_plan *p = NULL;
    tlsan_cache *c = NULL;
    tlsan_error err;
    assert_int_equal(reader_read_buffer(json, strlen(json), label, &opt, &p, &c, &err), TLSAN_OK);
    tlsan_plan_free(p);
    tlsan_cache_free(c);
    assert_int_equal(a.live, 0);
    long total = a.calls;
    assert_true(total >= 5);
    for (long k = 1; k <= total; k++) {
        a = (counting_alloc){0, k, 0};
        p = NULL;
        c = NULL;
        tlsan_status st = reader_read_buffer(json, strlen(json), label, &opt, &p, &c, &err);
        if (st != TLSAN_ERR_NOMEM)
            fail_msg("%s: allocation %ld of %ld failed, status %d", label, k, total, st);
        assert_null(p);
        assert_null(c);
        assert_string_equal(err.what, "out of memory");
        if (a.live != 0)
            fail_msg("%s: allocation %ld failed, %ld blocks leaked", label, k, a.live);
    }
    print_message("%s: each of %ld allocations failed in turn, cleanly\n", label, total);
}

static void test_fault_injection(void **state)
{
    (void)state;
    fault_injection_on(full_plan, "full plan");
    const char *cache =
        "{\"tlsan_plan_cache\": 1, \"plans\": ["
        "{\"key\": {\"b\": 1, \"s\": [1.50, {\"z\": true, \"a\": null}]}, \"tlsan_plan\": 1,"
        " \"arenas\": [{\"name\": \"a\", \"bytes\": 64}], \"tensors\": [{\"name\": \"t\", "
        "\"bytes\": 8, \"arena\": \"a\", \"offset\": 0}], \"ops\": [{\"name\": \"o\", "
        "\"writes\": [\"t\"]}]},"
        "{\"tlsan_plan\": 1, \"arenas\": [], \"tensors\": [], \"ops\": [], \"key\": {\"b\": 2}}]}";
    fault_injection_on(cache, "cache");
    /* Keys before the version: both readings of the top level are kept for a while. */
    const char *late = "{\"plans\": [], \"arenas\": [], \"tensors\": [], \"ops\": [], "
                       "\"x\": {\"k1\": 1, \"k2\": 2, \"k3\": 3, \"k4\": 4, \"k5\": 5, \"k6\": 6, "
                       "\"k7\": 7, \"k8\": 8, \"k9\": 9, \"k10\": 10}, \"tlsan_plan\": 1}";
    fault_injection_on(late, "late version");
}

/* A huge ignored object: repeated keys are still found, in linear time. */
static void test_many_keys(void **state)
{
    (void)state;
    size_t n = 200000, cap = n * 24 + 200;
    char *json = malloc(cap);
    assert_non_null(json);
    size_t at = (size_t)snprintf(json, cap,
                                 "{\"tlsan_plan\": 1, \"arenas\": [], \"tensors\": "
                                 "[], \"ops\": [], \"x\": {");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(json + at, cap - at, "%s\"k%zu\": 0", i ? ", " : "", i);
    size_t body = at;
    at += (size_t)snprintf(json + at, cap - at, "}}");
    tlsan_plan *p = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_plan_read_buffer(json, at, "many", &p, &err), TLSAN_OK);
    tlsan_plan_free(p);
    snprintf(json + body, cap - body, ", \"k123456\": 1}}");
    assert_int_equal(tlsan_plan_read_buffer(json, strlen(json), "many", &p, &err),
                     TLSAN_ERR_INVALID);
    assert_string_equal(err.where, "x.k123456");
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_cases_parse),        cmocka_unit_test(test_values_land_in_model),
        cmocka_unit_test(test_integer_limits),         cmocka_unit_test(test_wide_shape_extents),
        cmocka_unit_test(test_high_rank_shape),        cmocka_unit_test(test_invalid_corpus),
        cmocka_unit_test(test_positions_across_lines), cmocka_unit_test(test_entry_points),
        cmocka_unit_test(test_fault_injection),        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_object_sources),
    };
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_shared_cases_parse),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed != 0)
        return failed;
    if (!corpus_have_shared("cases"))
        return 0;
    return cmocka_run_group_tests(shared, NULL, NULL);
}
