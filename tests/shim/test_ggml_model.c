/* ggml_model: a ggml graph as allocated, read as a plan (shim/ggml/ggml_model.h), on hand-made
 * graphs of real struct ggml_tensor (ggml's headers, no ggml library): the in-place reuse
 * ggml_gallocr makes is declared and accepted, and refused when the parent is read later;
 * view nodes compute nothing; a view whose data is elsewhere is taken where it is; a leaf
 * ggml_gallocr allocates lazily starts at its first consumer; a CPY does not read the tensor
 * it writes (ggml_cast, ggml_cpy); ggml's automatic names give way
 * to OP#NODE; the graph key follows the data addresses; inject values parse. Skipped when
 * the shim was built without ggml's headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ggml/ggml_hooks.h"

#include <stdio.h>

#ifdef TLSAN_HAVE_GGML

#include "ggml/ggml_model.h"
#include "tlsan/check.h"

#include <string.h>

/* ---- a fake ggml: a graph is a node list, a buffer a base and a size ---- */

struct fake_graph {
    struct ggml_tensor *nodes[32];
    int n;
};

struct fake_buffer {
    char *base;
    size_t size;
    const char *name;
};

static int f_n_nodes(struct ggml_cgraph *g)
{
    return ((struct fake_graph *)(void *)g)->n;
}

static struct ggml_tensor *f_node(struct ggml_cgraph *g, int i)
{
    return ((struct fake_graph *)(void *)g)->nodes[i];
}

static void *f_base(ggml_backend_buffer_t b)
{
    return ((struct fake_buffer *)(void *)b)->base;
}

static size_t f_size(ggml_backend_buffer_t b)
{
    return ((struct fake_buffer *)(void *)b)->size;
}

static const char *f_name(ggml_backend_buffer_t b)
{
    return ((struct fake_buffer *)(void *)b)->name;
}

static size_t f_nbytes(const struct ggml_tensor *t)
{
    return (size_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]) * 4;
}

static const char *f_op(const struct ggml_tensor *t)
{
    switch (t->op) {
    case GGML_OP_NONE:
        return "NONE";
    case GGML_OP_ADD:
        return "ADD";
    case GGML_OP_MUL_MAT:
        return "MUL_MAT";
    case GGML_OP_VIEW:
        return "VIEW";
    case GGML_OP_CPY:
        return "CPY";
    default:
        return "OTHER";
    }
}

static const struct gm_api api = {f_n_nodes, f_node, f_base, f_size, f_name, f_nbytes, f_op};

static char compute_mem[4096], weight_mem[4096];
static struct fake_buffer compute_buf = {compute_mem, sizeof compute_mem, "CPU"};
static struct fake_buffer weight_buf = {weight_mem, sizeof weight_mem, "CPU"};
#define COMPUTE ((ggml_backend_buffer_t)(void *)&compute_buf)
#define WEIGHTS ((ggml_backend_buffer_t)(void *)&weight_buf)

static struct ggml_tensor pool[64];
static int n_pool;

/* A float tensor of `n` elements at `offset` in `buf`, named (NULL: unnamed). */
static struct ggml_tensor *tensor(const char *name, ggml_backend_buffer_t buf, size_t offset,
                                  int64_t n, enum ggml_op op, struct ggml_tensor *s0,
                                  struct ggml_tensor *s1)
{
    struct ggml_tensor *t = &pool[n_pool++];
    memset(t, 0, sizeof *t);
    t->type = GGML_TYPE_F32;
    t->buffer = buf;
    t->ne[0] = n;
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = 4;
    t->op = op;
    t->src[0] = s0;
    t->src[1] = s1;
    t->data = ((struct fake_buffer *)(void *)buf)->base + offset;
    if (name)
        snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

static struct ggml_tensor *view_of(const char *name, struct ggml_tensor *base, size_t offs,
                                   int64_t n, enum ggml_op op, struct ggml_tensor *s1)
{
    struct ggml_tensor *t = tensor(name, base->buffer, 0, n, op, base, s1);
    t->view_src = base;
    t->view_offs = offs;
    t->data = (char *)base->data + offs;
    return t;
}

static struct fake_graph graph;

static void add_node(struct ggml_tensor *t)
{
    graph.nodes[graph.n++] = t;
}

static int setup(void **state)
{
    (void)state;
    n_pool = 0;
    memset(&graph, 0, sizeof graph);
    return 0;
}

/* The findings of the graph as "kind a b" lines, names in report order. */
static void check(struct gm_model *m, char *out, size_t cap)
{
    assert_int_equal(gm_build(m, &api, (struct ggml_cgraph *)(void *)&graph), 0);
    tlsan_error err;
    memset(&err, 0, sizeof err);
    tlsan_plan *p = gm_plan(m, &api, "test", &err);
    if (!p)
        fail_msg("plan: %s: %s", err.where, err.what);
    tlsan_report *rep;
    assert_int_equal(tlsan_check(p, NULL, &rep), TLSAN_OK);
    out[0] = 0;
    size_t len = 0;
    for (size_t i = 0; i < tlsan_report_count(rep); i++) {
        const tlsan_finding *f = tlsan_report_finding(rep, i);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "; " : "",
                                tlsan_kind_name(f->kind));
        for (size_t k = 0; k < f->n_tensors; k++)
            len += (size_t)snprintf(out + len, cap - len, " %s", f->tensors[k]);
    }
    tlsan_report_free(rep);
    tlsan_plan_free(p);
}

/* x -> mul_mat(w, x) = a at 256 -> add(a, b) = c over a's bytes (gallocr's in-place reuse)
 * -> mul_mat(w, c) = d at 0, over x (dead by then). */
static void inplace_accepted(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    x->flags = GGML_TENSOR_FLAG_INPUT;
    struct ggml_tensor *w = tensor("w", WEIGHTS, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *b = tensor("b", WEIGHTS, 256, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("a", COMPUTE, 256, 64, GGML_OP_MUL_MAT, w, x);
    struct ggml_tensor *c = tensor(NULL, COMPUTE, 256, 64, GGML_OP_ADD, a, b);
    struct ggml_tensor *d = tensor("d", COMPUTE, 0, 64, GGML_OP_MUL_MAT, w, c);
    add_node(a);
    add_node(c);
    add_node(d);
    struct gm_model m;
    char got[512];
    check(&m, got, sizeof got);
    assert_string_equal(got, "");
    assert_int_equal(m.n_arenas, 2);
    assert_true(m.arenas[0].compute);
    assert_false(m.arenas[1].compute);
    /* Unnamed node 1 is ADD#1; w is an input (its buffer holds no node); d is the output. */
    assert_string_equal(m.tensors[m.node_index[1]].name, "ADD#1");
    long iw = gm_find(&m, w), id = gm_find(&m, d);
    assert_true(m.tensors[iw].flags & TLSAN_TENSOR_INPUT);
    assert_true(m.tensors[id].flags & TLSAN_TENSOR_OUTPUT);
    assert_int_equal(m.tensors[gm_find(&m, a)].first, 0);
    assert_int_equal(m.tensors[gm_find(&m, a)].last, 1);
    gm_free(&m);
}

/* The same reuse while a is read again after c: bad-inplace. */
static void inplace_refused(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    x->flags = GGML_TENSOR_FLAG_INPUT;
    struct ggml_tensor *b = tensor("b", WEIGHTS, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("a", COMPUTE, 256, 64, GGML_OP_ADD, x, b);
    struct ggml_tensor *c = tensor("c", COMPUTE, 256, 64, GGML_OP_ADD, a, b);
    struct ggml_tensor *d = tensor("d", COMPUTE, 512, 64, GGML_OP_ADD, a, c);
    add_node(a);
    add_node(c);
    add_node(d);
    struct gm_model m;
    char got[512];
    check(&m, got, sizeof got);
    assert_string_equal(got, "bad-inplace a c");
    gm_free(&m);
}

/* View nodes read and write nothing; a view node whose op computes (an in-place add) writes
 * its source's root; a view whose data is not at view_src + view_offs is its own root (which
 * nothing writes: reading it is read-before-write). */
static void views(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    x->flags = GGML_TENSOR_FLAG_INPUT;
    struct ggml_tensor *b = tensor("b", WEIGHTS, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("a", COMPUTE, 256, 64, GGML_OP_ADD, x, b);
    struct ggml_tensor *v = view_of("a (view)", a, 128, 32, GGML_OP_VIEW, NULL);
    struct ggml_tensor *ai = view_of("a (inplace)", a, 0, 64, GGML_OP_ADD, b);
    struct ggml_tensor *moved = view_of("moved", a, 0, 16, GGML_OP_VIEW, NULL);
    moved->data = compute_mem + 1024;
    struct ggml_tensor *d = tensor("d", COMPUTE, 512, 32, GGML_OP_ADD, v, moved);
    d->src[2] = ai;
    add_node(a);
    add_node(v);
    add_node(ai);
    add_node(moved);
    add_node(d);
    struct gm_model m;
    char got[512];
    check(&m, got, sizeof got);
    assert_string_equal(got, "read-before-write moved");
    long iv = gm_find(&m, v), im = gm_find(&m, moved), ia = gm_find(&m, a);
    assert_true(m.tensors[iv].view);
    assert_int_equal(m.tensors[iv].root, ia);
    assert_int_equal(m.tensors[iv].offset_bytes, 128);
    assert_false(m.tensors[im].view);
    assert_int_equal(m.tensors[im].offset_bytes, 1024);
    /* a: written at 0 and (in place) at 2, read through its views by d at 4. */
    assert_int_equal(m.tensors[ia].first, 0);
    assert_int_equal(m.tensors[ia].last, 4);
    gm_free(&m);
}

/* A leaf in the compute buffer without the input flag (a ggml_cpy destination) is allocated
 * when its first consumer runs: placed over a tensor dead by then, it is no overlap, and its
 * first access is that consumer's write, not a read before any write. */
static void lazy_leaf(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    x->flags = GGML_TENSOR_FLAG_INPUT;
    struct ggml_tensor *b = tensor("b", WEIGHTS, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("a", COMPUTE, 256, 64, GGML_OP_ADD, x, b);
    struct ggml_tensor *dst = tensor("dst", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *cpy = view_of("cpy", dst, 0, 64, GGML_OP_CPY, NULL);
    cpy->src[0] = a;
    cpy->src[1] = dst;
    add_node(a);
    add_node(cpy);
    struct gm_model m;
    char got[512];
    check(&m, got, sizeof got);
    assert_string_equal(got, "");
    long id = gm_find(&m, dst);
    assert_false(m.tensors[id].flags & TLSAN_TENSOR_INPUT);
    assert_int_equal(m.tensors[id].first_writer, 1);
    assert_int_equal(m.tensors[id].first, 1);
    gm_free(&m);

    /* Flagged as an input, the same leaf is live from before the graph: it overlaps x. */
    dst->flags = GGML_TENSOR_FLAG_INPUT;
    check(&m, got, sizeof got);
    assert_string_equal(got, "live-overlap dst x");
    gm_free(&m);
}

/* A CPY does not read the tensor it writes: ggml_cast's node lists itself as src[1]
 * (whisper.cpp's encoder casts to f16 this way), ggml_cpy's src[1] is its destination. Read,
 * either would be read before any write. */
static void cast_and_copy(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    x->flags = GGML_TENSOR_FLAG_INPUT;
    struct ggml_tensor *w = tensor("w", WEIGHTS, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("a", COMPUTE, 256, 64, GGML_OP_ADD, x, w);
    struct ggml_tensor *cast = tensor("cast", COMPUTE, 512, 64, GGML_OP_CPY, a, NULL);
    cast->src[1] = cast;
    struct ggml_tensor *e = tensor("e", COMPUTE, 768, 64, GGML_OP_ADD, cast, w);
    struct ggml_tensor *cpy = view_of("cpy", e, 0, 64, GGML_OP_CPY, NULL);
    cpy->src[0] = a;
    cpy->src[1] = e;
    struct ggml_tensor *out = tensor("out", COMPUTE, 1024, 64, GGML_OP_ADD, cpy, w);
    add_node(a);
    add_node(cast);
    add_node(e);
    add_node(cpy);
    add_node(out);
    assert_false(gm_reads_src(&api, cast, 1));
    assert_true(gm_reads_src(&api, cast, 0));
    assert_false(gm_reads_src(&api, cpy, 1));
    assert_true(gm_reads_src(&api, cpy, 0));
    assert_true(gm_reads_src(&api, e, 1));
    assert_false(gm_reads_src(&api, e, 2));
    struct gm_model m;
    char got[512];
    check(&m, got, sizeof got);
    assert_string_equal(got, "");
    /* The cast is read by e only, so it is no output; e's last access is the cpy's write. */
    long c = gm_find(&m, cast), k = gm_find(&m, e);
    assert_false(m.tensors[c].flags & TLSAN_TENSOR_OUTPUT);
    assert_int_equal(m.tensors[c].first, 1);
    assert_int_equal(m.tensors[c].last, 2);
    assert_int_equal(m.tensors[k].first, 2);
    assert_int_equal(m.tensors[k].last, 4);
    gm_free(&m);
}

/* ggml's own names for unnamed tensors give way to OP#NODE; a name taken twice gets @NODE. */
static void names(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    x->flags = GGML_TENSOR_FLAG_INPUT;
    struct ggml_tensor *b = tensor("leaf_3", WEIGHTS, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("node_0", COMPUTE, 256, 64, GGML_OP_ADD, x, b);
    struct ggml_tensor *c = tensor("same", COMPUTE, 512, 64, GGML_OP_MUL_MAT, a, b);
    struct ggml_tensor *d = tensor("same", COMPUTE, 768, 64, GGML_OP_ADD, c, b);
    add_node(a);
    add_node(c);
    add_node(d);
    struct gm_model m;
    assert_int_equal(gm_build(&m, &api, (struct ggml_cgraph *)(void *)&graph), 0);
    assert_string_equal(m.tensors[gm_find(&m, a)].name, "ADD#0");
    assert_string_equal(m.tensors[gm_find(&m, c)].name, "same");
    assert_string_equal(m.tensors[gm_find(&m, d)].name, "same@2");
    assert_string_equal(m.tensors[gm_find(&m, b)].name, "leaf#1");
    gm_free(&m);
}

/* The key follows what the check depends on. */
static void key(void **state)
{
    (void)state;
    struct ggml_tensor *x = tensor("x", COMPUTE, 0, 64, GGML_OP_NONE, NULL, NULL);
    struct ggml_tensor *a = tensor("a", COMPUTE, 256, 64, GGML_OP_ADD, x, x);
    add_node(a);
    struct ggml_cgraph *g = (struct ggml_cgraph *)(void *)&graph;
    uint64_t k0 = gm_key(&api, g);
    assert_int_equal(gm_key(&api, g), k0);
    a->data = compute_mem + 512;
    uint64_t k1 = gm_key(&api, g);
    assert_int_not_equal(k1, k0);
    x->data = compute_mem + 64;
    assert_int_not_equal(gm_key(&api, g), k1);
    a->ne[0] = 32;
    assert_int_not_equal(gm_key(&api, g), k1);
}

static void inject_values(void **state)
{
    (void)state;
    struct ggml_inject in;
    assert_true(ggml_inject_parse("", &in));
    assert_int_equal(in.kind, GGML_INJECT_NONE);
    assert_true(ggml_inject_parse("move@12", &in));
    assert_int_equal(in.kind, GGML_INJECT_MOVE);
    assert_int_equal(in.node, 12);
    assert_int_equal(in.victim, -1);
    assert_true(ggml_inject_parse("move@3@0", &in));
    assert_int_equal(in.node, 3);
    assert_int_equal(in.victim, 0);
    assert_false(ggml_inject_parse("move@", &in));
    assert_false(ggml_inject_parse("move@3@", &in));
    assert_false(ggml_inject_parse("move@3x", &in));
    assert_false(ggml_inject_parse("swap@1", &in));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(inplace_accepted, setup),
        cmocka_unit_test_setup(inplace_refused, setup),
        cmocka_unit_test_setup(views, setup),
        cmocka_unit_test_setup(lazy_leaf, setup),
        cmocka_unit_test_setup(cast_and_copy, setup),
        cmocka_unit_test_setup(names, setup),
        cmocka_unit_test_setup(key, setup),
        cmocka_unit_test(inject_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
    printf("SKIP: the shim was built without ggml's headers (run .ci/fetch-ggml.sh)\n");
    return 77;
}

#endif
