/* Tests of the plan writer (src/import/plan_write.c): exact output for plans built with the
 * builder API, defaults left out, escaping, stream errors, and the round trip
 * read -> write -> read over every case of the corpora (the project's own, and the shared
 * one when present) and every TVM graph, compared model to model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check/plan.h"
#include "import/plan_write.h"
#include "support/corpus.h"
#include "tlsan/plan.h"
#include "tlsan/tvm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

/* ---- helpers ---- */

/* Writes a plan to a string (caller frees). */
static char *write_to_string(const tlsan_plan *p, bool pretty)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(tlsan_plan_write(p, f, pretty), TLSAN_OK);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void add_arena(tlsan_plan *p, const char *name, uint64_t bytes, uint64_t align,
                      const char *memory)
{
    tlsan_arena_desc a = {name, bytes, align, memory};
    tlsan_error err;
    assert_int_equal(tlsan_plan_add_arena(p, &a, &err), TLSAN_OK);
}

static void add_tensor(tlsan_plan *p, const tlsan_tensor_desc *t)
{
    tlsan_error err;
    assert_int_equal(tlsan_plan_add_tensor(p, t, &err), TLSAN_OK);
}

static void add_op(tlsan_plan *p, const tlsan_op_desc *o)
{
    tlsan_error err;
    assert_int_equal(tlsan_plan_add_op(p, o, &err), TLSAN_OK);
}

static void finalize(tlsan_plan *p)
{
    tlsan_error err;
    char msg[1024];
    tlsan_status st = tlsan_plan_finalize(p, &err);
    if (st != TLSAN_OK)
        fail_msg("finalize: %s", tlsan_error_format(&err, msg, sizeof msg));
}

/* A plan using every key of the format, with non-default values. */
static tlsan_plan *full_plan(void)
{
    tlsan_plan *p = tlsan_plan_create();
    assert_non_null(p);
    assert_int_equal(tlsan_plan_set_name(p, "demo"), TLSAN_OK);
    assert_int_equal(tlsan_plan_set_schedule(p, TLSAN_SCHEDULE_DATAFLOW), TLSAN_OK);
    add_arena(p, "a0", 65536, 64, "host");
    add_arena(p, "g0", 4096, 0, "cuda:0");

    static const uint64_t x_shape[] = {2, 1024};
    static const char *const x_stack[] = {"load_x", "main"};
    add_tensor(p, &(tlsan_tensor_desc){.name = "x",
                                       .bytes = 4096,
                                       .arena = "a0",
                                       .offset_bytes = 0,
                                       .flags = TLSAN_TENSOR_INPUT,
                                       .dtype = TLSAN_DTYPE_F16,
                                       .shape = x_shape,
                                       .n_shape = 2,
                                       .stack = x_stack,
                                       .n_stack = 2});
    add_tensor(p, &(tlsan_tensor_desc){.name = "w",
                                       .bytes = 256,
                                       .arena = "a0",
                                       .offset_bytes = 4096,
                                       .flags = TLSAN_TENSOR_CONSTANT,
                                       .has_lifetime = true,
                                       .lifetime = {-1, 4}});
    add_tensor(p, &(tlsan_tensor_desc){.name = "h",
                                       .bytes = 4096,
                                       .arena = "a0",
                                       .offset_bytes = 8192,
                                       .alignment_bytes = 128,
                                       .has_lifetime = true,
                                       .lifetime = {0, 3}});
    add_tensor(p, &(tlsan_tensor_desc){.name = "hv",
                                       .bytes = 2048,
                                       .view_of = "h",
                                       .view_offset_bytes = 2048,
                                       .flags = TLSAN_TENSOR_OUTPUT});
    add_tensor(p, &(tlsan_tensor_desc){
                      .name = "hv0", .bytes = 1024, .view_of = "hv", .dtype = TLSAN_DTYPE_BOOL});
    add_tensor(p, &(tlsan_tensor_desc){.name = "d",
                                       .bytes = 64,
                                       .arena = "g0",
                                       .offset_bytes = 0,
                                       .memory = "cuda:0",
                                       .flags = TLSAN_TENSOR_OUTPUT});

    static const char *const mul_reads[] = {"x", "w"}, *const mul_writes[] = {"h"};
    static const char *const mul_inplace[] = {"h", "x"}, *const mul_stack[] = {"mul.py:3"};
    add_op(p, &(tlsan_op_desc){.name = "mul",
                               .reads = mul_reads,
                               .n_reads = 2,
                               .writes = mul_writes,
                               .n_writes = 1,
                               .inplace = mul_inplace,
                               .n_inplace = 1,
                               .stack = mul_stack,
                               .n_stack = 1});
    add_op(p, &(tlsan_op_desc){
                  .name = "ev", .stream = "s1", .sync = TLSAN_SYNC_RECORD, .event = "e1"});
    add_op(p, &(tlsan_op_desc){
                  .name = "wt", .stream = "main", .sync = TLSAN_SYNC_WAIT, .event = "e1"});
    static const char *const body_reads[] = {"h"}, *const body_writes[] = {"hv"};
    static const char *const body_after[] = {"mul"};
    static const tlsan_cond c0_then[] = {{"c0", "then"}};
    add_op(p, &(tlsan_op_desc){.name = "body",
                               .reads = body_reads,
                               .n_reads = 1,
                               .writes = body_writes,
                               .n_writes = 1,
                               .after = body_after,
                               .n_after = 1,
                               .branch = c0_then,
                               .n_branch = 1,
                               .loop = "L0"});
    static const char *const body2_reads[] = {"hv"}, *const body2_writes[] = {"hv0"};
    static const tlsan_cond two_conds[] = {{"c0", "then"}, {"c1", "else"}};
    add_op(p, &(tlsan_op_desc){.name = "body2",
                               .reads = body2_reads,
                               .n_reads = 1,
                               .writes = body2_writes,
                               .n_writes = 1,
                               .stream = "s1",
                               .branch = two_conds,
                               .n_branch = 2,
                               .loop = "L0"});
    add_op(p, &(tlsan_op_desc){.name = "bar", .sync = TLSAN_SYNC_ALL});
    static const char *const out_reads[] = {"hv0"}, *const out_writes[] = {"d"};
    add_op(
        p,
        &(tlsan_op_desc){
            .name = "out", .reads = out_reads, .n_reads = 1, .writes = out_writes, .n_writes = 1});
    finalize(p);
    return p;
}

/* ---- model comparison: names, numbers and lists, resolved through each plan ---- */

static void same_str(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* Two lists of tensor (or op, or string) references compared by name. */
typedef enum { REF_TENSOR, REF_OP, REF_STRING } ref_kind;

static const char *ref_name(const tlsan_plan *p, ref_kind k, uint32_t v)
{
    switch (k) {
    case REF_TENSOR:
        return plan_str(p, p->tensors[v].name);
    case REF_OP:
        return plan_str(p, p->ops[v].name);
    case REF_STRING:
        return plan_str(p, v);
    }
    return NULL;
}

static void same_refs(const tlsan_plan *a, uint32_t sa, uint32_t na, const tlsan_plan *b,
                      uint32_t sb, uint32_t nb, ref_kind k)
{
    assert_int_equal(na, nb);
    for (uint32_t i = 0; i < na; i++)
        same_str(ref_name(a, k, a->id_pool.v[sa + i]), ref_name(b, k, b->id_pool.v[sb + i]));
}

static const char *cond_if(const tlsan_plan *p, const op_extra *o, uint32_t k)
{
    return plan_str(p, p->ifs[p->id_pool.v[o->cond_start + 2 * k]].name);
}

static const char *cond_arm(const tlsan_plan *p, const op_extra *o, uint32_t k)
{
    const if_rec *f = &p->ifs[p->id_pool.v[o->cond_start + 2 * k]];
    return plan_str(p, p->id_pool.v[f->arms_start + p->id_pool.v[o->cond_start + 2 * k + 1]]);
}

/* Fails the test unless both finalized plans describe the same model. */
static void assert_same_plan(const tlsan_plan *a, const tlsan_plan *b)
{
    same_str(plan_str(a, a->name), plan_str(b, b->name));
    assert_int_equal(a->schedule, b->schedule);
    assert_int_equal(a->n_arenas, b->n_arenas);
    for (size_t i = 0; i < a->n_arenas; i++) {
        const arena_rec *x = &a->arenas[i], *y = &b->arenas[i];
        same_str(plan_str(a, x->name), plan_str(b, y->name));
        assert_int_equal(x->bytes, y->bytes);
        assert_int_equal(x->alignment_bytes, y->alignment_bytes);
        same_str(plan_str(a, x->memory), plan_str(b, y->memory));
    }
    assert_int_equal(a->n_tensors, b->n_tensors);
    for (size_t i = 0; i < a->n_tensors; i++) {
        const tensor_rec *x = &a->tensors[i], *y = &b->tensors[i];
        same_str(plan_str(a, x->name), plan_str(b, y->name));
        assert_int_equal(x->bytes, y->bytes);
        assert_int_equal(x->arena == NO_INDEX, y->arena == NO_INDEX);
        if (x->arena != NO_INDEX)
            same_str(plan_str(a, a->arenas[x->arena].name), plan_str(b, b->arenas[y->arena].name));
        else
            same_str(plan_str(a, a->tensors[x->view_of].name),
                     plan_str(b, b->tensors[y->view_of].name));
        assert_int_equal(x->offset_bytes, y->offset_bytes);
        assert_int_equal(x->abs_offset_bytes, y->abs_offset_bytes);
        assert_int_equal(x->flags, y->flags);
        same_str(plan_str(a, tensor_x(a, x)->memory), plan_str(b, tensor_x(b, y)->memory));
        if (x->flags & TREC_HAS_ALIGNMENT)
            assert_int_equal(tensor_x(a, x)->alignment_bytes, tensor_x(b, y)->alignment_bytes);
        if (x->flags & TREC_HAS_LIFETIME) {
            assert_int_equal(tensor_x(a, x)->lifetime[0], tensor_x(b, y)->lifetime[0]);
            assert_int_equal(tensor_x(a, x)->lifetime[1], tensor_x(b, y)->lifetime[1]);
        }
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(plan_shape_rank(a, x), plan_shape_rank(b, y));
        for (uint32_t k = 0; k < plan_shape_rank(a, x); k++)
            assert_int_equal(plan_shape_dim(a, x, k), plan_shape_dim(b, y, k));
        same_refs(a, tensor_x(a, x)->stack_start, tensor_x(a, x)->n_stack, b,
                  tensor_x(b, y)->stack_start, tensor_x(b, y)->n_stack, REF_STRING);
    }
    assert_int_equal(a->n_ops, b->n_ops);
    for (size_t i = 0; i < a->n_ops; i++) {
        const op_rec *x = &a->ops[i], *y = &b->ops[i];
        const op_extra *xx = op_x(a, x), *yx = op_x(b, y);
        same_str(plan_str(a, x->name), plan_str(b, y->name));
        same_str(plan_str(a, plan_op_stream_name(a, (uint32_t)i)),
                 plan_str(b, plan_op_stream_name(b, (uint32_t)i)));
        assert_int_equal(x->sync, y->sync);
        same_str(plan_str(a, x->event), plan_str(b, y->event));
        same_refs(a, x->reads_start, x->n_reads, b, y->reads_start, y->n_reads, REF_TENSOR);
        same_refs(a, x->writes_start, x->n_writes, b, y->writes_start, y->n_writes, REF_TENSOR);
        same_refs(a, xx->inplace_start, 2 * xx->n_inplace, b, yx->inplace_start, 2 * yx->n_inplace,
                  REF_TENSOR);
        same_refs(a, xx->after_start, xx->n_after, b, yx->after_start, yx->n_after, REF_OP);
        assert_int_equal(xx->n_cond, yx->n_cond);
        for (uint32_t k = 0; k < xx->n_cond; k++) {
            same_str(cond_if(a, xx, k), cond_if(b, yx, k));
            same_str(cond_arm(a, xx, k), cond_arm(b, yx, k));
        }
        assert_int_equal(plan_op_loop(a, i) == NO_INDEX, plan_op_loop(b, i) == NO_INDEX);
        if (plan_op_loop(a, i) != NO_INDEX)
            same_str(plan_str(a, a->loops[plan_op_loop(a, i)].name),
                     plan_str(b, b->loops[plan_op_loop(b, i)].name));
        same_refs(a, xx->stack_start, xx->n_stack, b, yx->stack_start, yx->n_stack, REF_STRING);
    }
}

/* Writes a plan, reads the text back and fails unless the model is unchanged. */
static void assert_round_trip(const tlsan_plan *p, bool pretty)
{
    char *text = write_to_string(p, pretty);
    tlsan_plan *back = NULL;
    tlsan_error err;
    char msg[1024];
    tlsan_status st = tlsan_plan_read_buffer(text, strlen(text), "written", &back, &err);
    if (st != TLSAN_OK)
        fail_msg("reading the written plan back: %s\n%s", tlsan_error_format(&err, msg, sizeof msg),
                 text);
    assert_same_plan(p, back);
    tlsan_plan_free(back);
    free(text);
}

/* ---- exact output ---- */

static void test_full_plan_exact(void **state)
{
    (void)state;
    tlsan_plan *p = full_plan();
    char *s = write_to_string(p, false);
    const char *expected =
        "{\"tlsan_plan\":1,\"name\":\"demo\",\"schedule\":\"dataflow\","
        "\"arenas\":[{\"name\":\"a0\",\"bytes\":65536,\"alignment\":64},"
        "{\"name\":\"g0\",\"bytes\":4096,\"memory\":\"cuda:0\"}],"
        "\"tensors\":["
        "{\"name\":\"x\",\"bytes\":4096,\"arena\":\"a0\",\"offset\":0,\"input\":true,"
        "\"dtype\":\"f16\",\"shape\":[2,1024],\"stack\":[\"load_x\",\"main\"]},"
        "{\"name\":\"w\",\"bytes\":256,\"arena\":\"a0\",\"offset\":4096,\"constant\":true,"
        "\"lifetime\":[-1,4]},"
        "{\"name\":\"h\",\"bytes\":4096,\"arena\":\"a0\",\"offset\":8192,\"alignment\":128,"
        "\"lifetime\":[0,3]},"
        "{\"name\":\"hv\",\"bytes\":2048,\"view_of\":\"h\",\"view_offset\":2048,"
        "\"output\":true},"
        "{\"name\":\"hv0\",\"bytes\":1024,\"view_of\":\"hv\",\"dtype\":\"bool\",\"shape\":[]},"
        "{\"name\":\"d\",\"bytes\":64,\"arena\":\"g0\",\"offset\":0,\"memory\":\"cuda:0\","
        "\"output\":true}],"
        "\"ops\":["
        "{\"name\":\"mul\",\"reads\":[\"x\",\"w\"],\"writes\":[\"h\"],"
        "\"inplace\":[[\"h\",\"x\"]],\"stack\":[\"mul.py:3\"]},"
        "{\"name\":\"ev\",\"stream\":\"s1\",\"record\":\"e1\"},"
        "{\"name\":\"wt\",\"wait\":\"e1\"},"
        "{\"name\":\"body\",\"reads\":[\"h\"],\"writes\":[\"hv\"],\"after\":[\"mul\"],"
        "\"branch\":{\"if\":\"c0\",\"arm\":\"then\"},\"loop\":\"L0\"},"
        "{\"name\":\"body2\",\"reads\":[\"hv\"],\"writes\":[\"hv0\"],\"stream\":\"s1\","
        "\"branch\":[{\"if\":\"c0\",\"arm\":\"then\"},{\"if\":\"c1\",\"arm\":\"else\"}],"
        "\"loop\":\"L0\"},"
        "{\"name\":\"bar\",\"sync\":true},"
        "{\"name\":\"out\",\"reads\":[\"hv0\"],\"writes\":[\"d\"]}]}\n";
    assert_string_equal(s, expected);
    free(s);
    tlsan_plan_free(p);
}

/* Every key with its default value is left out; the three lists are always there. */
static void test_defaults_omitted(void **state)
{
    (void)state;
    tlsan_plan *p = tlsan_plan_create();
    finalize(p);
    char *s = write_to_string(p, false);
    assert_string_equal(s, "{\"tlsan_plan\":1,\"arenas\":[],\"tensors\":[],\"ops\":[]}\n");
    free(s);
    tlsan_plan_free(p);

    p = tlsan_plan_create();
    add_arena(p, "a", 16, 1, NULL);
    add_tensor(p, &(tlsan_tensor_desc){.name = "t", .bytes = 16, .arena = "a"});
    add_tensor(p, &(tlsan_tensor_desc){.name = "v", .bytes = 8, .view_of = "t"});
    add_tensor(p, &(tlsan_tensor_desc){.name = "io",
                                       .bytes = 0,
                                       .arena = "a",
                                       .offset_bytes = 16,
                                       .flags = TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT});
    add_op(p, &(tlsan_op_desc){.name = "nop"});
    finalize(p);
    s = write_to_string(p, false);
    assert_string_equal(s, "{\"tlsan_plan\":1,\"arenas\":[{\"name\":\"a\",\"bytes\":16}],"
                           "\"tensors\":[{\"name\":\"t\",\"bytes\":16,\"arena\":\"a\","
                           "\"offset\":0},{\"name\":\"v\",\"bytes\":8,\"view_of\":\"t\"},"
                           "{\"name\":\"io\",\"bytes\":0,\"arena\":\"a\",\"offset\":16,"
                           "\"input\":true,\"output\":true}],"
                           "\"ops\":[{\"name\":\"nop\"}]}\n");
    free(s);
    tlsan_plan_free(p);
}

/* Names are JSON-escaped; non-ASCII UTF-8 passes through unchanged. */
static void test_escaping(void **state)
{
    (void)state;
    tlsan_plan *p = tlsan_plan_create();
    assert_int_equal(tlsan_plan_set_name(p, "a\"b\\c\n"), TLSAN_OK);
    add_arena(p, "\xc3\xa9t\xc3\xa9", 8, 1, NULL);
    finalize(p);
    char *s = write_to_string(p, false);
    assert_string_equal(s, "{\"tlsan_plan\":1,\"name\":\"a\\\"b\\\\c\\n\",\"arenas\":[{\"name\":"
                           "\"\xc3\xa9t\xc3\xa9\",\"bytes\":8}],\"tensors\":[],\"ops\":[]}\n");
    free(s);
    tlsan_plan_free(p);
}

/* Pretty output is the same document, indented, ending in exactly one newline. */
static void test_pretty(void **state)
{
    (void)state;
    tlsan_plan *p = full_plan();
    char *pretty = write_to_string(p, true);
    char *compact = write_to_string(p, false);
    size_t len = strlen(pretty);
    assert_true(len > 2);
    assert_int_equal(pretty[len - 1], '\n');
    assert_int_not_equal(pretty[len - 2], '\n');
    assert_non_null(strstr(pretty, "\n  \"arenas\": [\n    {\n      \"name\": \"a0\",\n"));
    /* Removing the layout whitespace (names here hold no spaces) gives the compact text. */
    char *squeezed = malloc(len + 1);
    size_t n = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = pretty[i];
        if (c == '"' && (i == 0 || pretty[i - 1] != '\\'))
            in_string = !in_string;
        if (!in_string && (c == ' ' || c == '\n'))
            continue;
        squeezed[n++] = c;
    }
    squeezed[n] = '\0';
    compact[strlen(compact) - 1] = '\0';
    assert_string_equal(squeezed, compact);
    free(squeezed);
    free(pretty);
    free(compact);
    tlsan_plan_free(p);
}

static void test_errors(void **state)
{
    (void)state;
    tlsan_plan *p = tlsan_plan_create();
    /* Not finalized: a caller bug, nothing written. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(tlsan_plan_write(p, f, false), TLSAN_ERR_ARG);
    assert_int_equal(tlsan_plan_write(NULL, f, false), TLSAN_ERR_ARG);
    fclose(f);
    assert_int_equal(len, 0);
    free(buf);
    finalize(p);
    assert_int_equal(tlsan_plan_write(p, NULL, false), TLSAN_ERR_ARG);
    tlsan_plan_free(p);

    /* A stream that cannot take the bytes. */
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    p = full_plan();
    assert_int_equal(tlsan_plan_write(p, full, true), TLSAN_ERR_IO);
    fclose(full);
    tlsan_plan_free(p);
}

/* The member writer lets a cache writer wrap plans with a key of its own. */
static void test_members_in_caller_map(void **state)
{
    (void)state;
    tlsan_plan *p = tlsan_plan_create();
    finalize(p);
    yajl_gen g = yajl_gen_alloc(NULL);
    assert_int_equal(yajl_gen_map_open(g), yajl_gen_status_ok);
    assert_int_equal(yajl_gen_string(g, (const unsigned char *)"key", 3), yajl_gen_status_ok);
    assert_int_equal(yajl_gen_integer(g, 7), yajl_gen_status_ok);
    assert_int_equal(plan_write_members(p, g), TLSAN_OK);
    assert_int_equal(yajl_gen_map_close(g), yajl_gen_status_ok);
    const unsigned char *out;
    size_t len;
    assert_int_equal(yajl_gen_get_buf(g, &out, &len), yajl_gen_status_ok);
    assert_string_equal((const char *)out,
                        "{\"key\":7,\"tlsan_plan\":1,\"arenas\":[],\"tensors\":[],\"ops\":[]}");
    yajl_gen_free(g);
    tlsan_plan_free(p);
}

static void test_round_trip_builder(void **state)
{
    (void)state;
    tlsan_plan *p = full_plan();
    assert_round_trip(p, false);
    assert_round_trip(p, true);
    tlsan_plan_free(p);
}

/* Every case of dir: read -> write -> read gives the same model. Invalid cases must stay
 * refused; a cache's plans are round-tripped one by one. Counts what it saw. */
static void round_trip_cases(const char *dir, size_t *n_invalid, size_t *n_caches, size_t *n_plans)
{
    char **names;
    size_t n = corpus_list_json(dir, &names);
    *n_invalid = *n_caches = *n_plans = 0;
    for (size_t k = 0; k < n; k++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        tlsan_plan *plan = NULL;
        tlsan_cache *cache = NULL;
        tlsan_error err;
        tlsan_status st = tlsan_read_file(path, &plan, &cache, &err);
        if (st == TLSAN_ERR_INVALID) {
            (*n_invalid)++;
            continue;
        }
        assert_int_equal(st, TLSAN_OK);
        if (plan) {
            assert_round_trip(plan, *n_plans % 2 == 0);
            (*n_plans)++;
        } else {
            (*n_caches)++;
            for (size_t i = 0; i < tlsan_cache_n_plans(cache); i++) {
                assert_round_trip(tlsan_cache_plan(cache, i), false);
                (*n_plans)++;
            }
        }
        tlsan_plan_free(plan);
        tlsan_cache_free(cache);
    }
    corpus_free_list(names, n);
}

/* Every TVM graph of dir, imported, written and read back: what `tlsan import tvm -o` gives
 * `tlsan check` is the model the importer built. Returns the number of graphs. */
static size_t round_trip_tvm(const char *dir)
{
    char **names;
    size_t n = corpus_list_json(dir, &names);
    for (size_t k = 0; k < n; k++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        tlsan_plan *plan = NULL;
        tlsan_error err;
        char msg[1024];
        if (tlsan_import_tvm_file(path, &plan, &err) != TLSAN_OK)
            fail_msg("%s", tlsan_error_format(&err, msg, sizeof msg));
        assert_round_trip(plan, k % 2 == 0);
        tlsan_plan_free(plan);
    }
    corpus_free_list(names, n);
    return n;
}

static void test_round_trip_own_corpus(void **state)
{
    (void)state;
    size_t n_invalid, n_caches, n_plans;
    round_trip_cases(corpus_own_cases(), &n_invalid, &n_caches, &n_plans);
    /* tests/cases as of this writing: 37 invalid, 48 plans and two caches of 10 and 6. */
    assert_int_equal(n_invalid, 37);
    assert_int_equal(n_caches, 2);
    assert_int_equal(n_plans, 48 + 16);
    assert_int_equal(round_trip_tvm(corpus_own_tvm()), 1);
}

static void test_round_trip_shared_cases(void **state)
{
    (void)state;
    char dir[1024];
    assert_true(corpus_shared_sub("cases", dir, sizeof dir));
    size_t n_invalid, n_caches, n_plans;
    round_trip_cases(dir, &n_invalid, &n_caches, &n_plans);
    /* The shared corpus as of this writing: one invalid case (invalid-unknown-tensor), one
     * cache of 3 plans (cache-collision), and at least 28 lone plans. */
    assert_int_equal(n_invalid, 1);
    assert_int_equal(n_caches, 1);
    assert_true(n_plans >= 28 + 3);
}

static void test_round_trip_tvm(void **state)
{
    (void)state;
    char dir[1024];
    assert_true(corpus_shared_sub("real/tvm", dir, sizeof dir));
    assert_int_equal(round_trip_tvm(dir), 22);
}

int main(void)
{
    const struct CMUnitTest self_contained[] = {
        cmocka_unit_test(test_full_plan_exact),
        cmocka_unit_test(test_defaults_omitted),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_pretty),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_members_in_caller_map),
        cmocka_unit_test(test_round_trip_builder),
        cmocka_unit_test(test_round_trip_own_corpus),
    };
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_round_trip_shared_cases),
        cmocka_unit_test(test_round_trip_tvm),
    };
    int rc = cmocka_run_group_tests_name("plan_write", self_contained, NULL, NULL);
    if (rc != 0)
        return rc;
    if (!corpus_have_shared("cases"))
        return 0;
    return cmocka_run_group_tests_name("plan_write_shared", shared, NULL, NULL);
}
