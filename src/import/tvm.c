/* tvm: TVM graph-executor JSON to a finalized plan (mapping documented in tlsan/tvm.h).
 *
 * TVM graphs are small (hundreds to a few thousand nodes), so the file is read whole and
 * parsed into a yajl document tree; the streaming reader is kept for plans, which can hold
 * millions of tensors. A first pass with yajl's event parser finds the line and column of a
 * syntax error, which yajl_tree does not report. */
#include "core/error.h"
#include "core/json_error.h"
#include "core/text_pos.h"
#include "core/utf8.h"
#include "import/tvm.h"
#include "check/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#define ARENA_NAME       "storage"
#define SLOT_ALIGN_BYTES 64u
/* Caps a node's num_outputs so entry counts cannot overflow; real kernels have a handful. */
#define MAX_NODE_OUTPUTS 65536u

typedef struct tvm_node {
    const char *name; /* borrowed from the document tree */
    bool is_op;       /* "tvm_op"; false for "null" (graph input or parameter) */
    bool is_nop;      /* func_name "__nop": TVM runs it as an alias of its input */
    bool dup_name;    /* the name occurs on another node too: entries become NAME@INDEX */
    size_t n_outputs;
    size_t first_entry;
    size_t inputs_start, n_inputs; /* into graph.inputs (entry ids) */
} tvm_node;

typedef struct tvm_entry {
    size_t node, output;
    int64_t storage_id;
    tlsan_dtype dtype;
    uint64_t bytes;
    size_t shape_start, n_shape; /* into graph.shapes */
    unsigned flags;              /* TLSAN_TENSOR_* */
    size_t view_of;              /* base entry of a __nop alias, SIZE_MAX for a root */
    size_t slot;                 /* index of its storage id among the sorted distinct ids */
    char *name;                  /* owned */
} tvm_entry;

typedef struct graph {
    yajl_val root;
    tvm_node *nodes;
    size_t n_nodes;
    tvm_entry *entries;
    size_t n_entries;
    size_t *inputs; /* entry ids read by the nodes, node by node */
    size_t n_inputs;
    uint64_t *shapes;
    size_t n_shapes;
    uint64_t *slot_offset; /* bytes from the arena's start */
    size_t n_slots;
    uint64_t arena_bytes;
    /* Where each node's object starts in the file ('{', line and column in characters, the
     * plan reader's rule), found by the syntax pass: the source of the node's entries and op,
     * so reports point at the node (SARIF regions). n_node_pos may be short of n_nodes. */
    text_pos *node_pos;
    size_t n_node_pos;
} graph;

/* ---- errors ---- */

/* ---- JSON helpers ---- */

/* The first member named `key` of an object, NULL when absent or not an object. */
static yajl_val member(yajl_val obj, const char *key)
{
    if (!YAJL_IS_OBJECT(obj))
        return NULL;
    for (size_t i = 0; i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], key) == 0)
            return obj->u.object.values[i];
    return NULL;
}

/* The text of a value already known to be a string. */
static const char *str_of(yajl_val v)
{
    return v->u.string;
}

/* A JSON integer >= 0. */
static bool get_u64(yajl_val v, uint64_t *out)
{
    if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0)
        return false;
    *out = (uint64_t)YAJL_GET_INTEGER(v);
    return true;
}

/* A count in TVM's attrs: NNVM writes them as decimal strings ("2"), some writers as
 * integers; both are accepted. */
static bool get_count(yajl_val v, uint64_t *out)
{
    if (YAJL_IS_INTEGER(v))
        return get_u64(v, out);
    if (!YAJL_IS_STRING(v))
        return false;
    const char *s = str_of(v);
    size_t len = strlen(s);
    if (len == 0 || len > 18)
        return false;
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        n = n * 10 + (uint64_t)(s[i] - '0');
    }
    *out = n;
    return true;
}

/* ---- reading the graph ---- */

static tlsan_status read_nodes(graph *g, tlsan_error *err)
{
    yajl_val nodes = member(g->root, "nodes");
    if (!nodes)
        return error_fail(err, "a TVM graph needs 'nodes' (an array)", "nodes");
    if (!YAJL_IS_ARRAY(nodes))
        return error_fail(err, "'nodes' must be an array", "nodes");
    g->n_nodes = nodes->u.array.len;
    g->nodes = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *g->nodes);
    if (!g->nodes)
        return error_nomem(err);
    size_t n_inputs = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        yajl_val v = nodes->u.array.values[i];
        tvm_node *nd = &g->nodes[i];
        if (!YAJL_IS_OBJECT(v))
            return error_fail(err, "a node must be an object", "nodes[%zu]", i);
        yajl_val op = member(v, "op");
        if (!YAJL_IS_STRING(op))
            return error_fail(err, "a node needs 'op' (a string)", "nodes[%zu].op", i);
        if (strcmp(str_of(op), "tvm_op") == 0)
            nd->is_op = true;
        else if (strcmp(str_of(op), "null") != 0)
            return error_fail(err, "unknown op (expected \"null\" or \"tvm_op\")", "nodes[%zu].op",
                              i);
        yajl_val name = member(v, "name");
        if (!YAJL_IS_STRING(name) || str_of(name)[0] == '\0')
            return error_fail(err, "a node needs 'name' (a non-empty string)", "nodes[%zu].name",
                              i);
        nd->name = str_of(name);

        yajl_val attrs = member(v, "attrs");
        if (attrs && !YAJL_IS_OBJECT(attrs))
            return error_fail(err, "'attrs' must be an object", "nodes[%zu].attrs", i);
        if (nd->is_op && !attrs)
            return error_fail(err, "a tvm_op node needs 'attrs' (an object with func_name)",
                              "nodes[%zu].attrs", i);
        if (nd->is_op) {
            yajl_val func = member(attrs, "func_name");
            if (!YAJL_IS_STRING(func))
                return error_fail(err, "a tvm_op node needs 'func_name' (a string)",
                                  "nodes[%zu].attrs.func_name", i);
            nd->is_nop = strcmp(str_of(func), "__nop") == 0;
        }
        uint64_t n_out = 1;
        yajl_val num_out = member(attrs, "num_outputs");
        if (num_out && (!get_count(num_out, &n_out) || n_out > MAX_NODE_OUTPUTS))
            return error_fail(err,
                              "'num_outputs' must be a count (a decimal string or integer, at "
                              "most 65536)",
                              "nodes[%zu].attrs.num_outputs", i);
        nd->n_outputs = (size_t)n_out;

        yajl_val inputs = member(v, "inputs");
        if (nd->is_op && !inputs)
            return error_fail(err, "a tvm_op node needs 'inputs' (an array)", "nodes[%zu].inputs",
                              i);
        if (inputs && !YAJL_IS_ARRAY(inputs))
            return error_fail(err, "'inputs' must be an array", "nodes[%zu].inputs", i);
        nd->n_inputs = inputs ? inputs->u.array.len : 0;
        if (!nd->is_op && nd->n_inputs)
            return error_fail(err, "a null node (graph input or parameter) takes no inputs",
                              "nodes[%zu].inputs", i);
        uint64_t n_in;
        yajl_val num_in = member(attrs, "num_inputs");
        if (num_in && !get_count(num_in, &n_in))
            return error_fail(err, "'num_inputs' must be a count (a decimal string or integer)",
                              "nodes[%zu].attrs.num_inputs", i);
        if (num_in && n_in != nd->n_inputs) {
            char where[64];
            snprintf(where, sizeof where, "nodes[%zu].inputs", i);
            return error_failf(err, where, "%zu inputs listed but attrs.num_inputs is %" PRIu64,
                               nd->n_inputs, n_in);
        }
        nd->inputs_start = n_inputs;
        n_inputs += nd->n_inputs;
    }
    g->n_inputs = n_inputs;
    g->inputs = malloc((n_inputs ? n_inputs : 1) * sizeof *g->inputs);
    return g->inputs ? TLSAN_OK : error_nomem(err);
}

/* Entry ids: from node_row_ptr when given (it must agree with num_outputs), else computed. */
static tlsan_status read_row_ptr(graph *g, tlsan_error *err)
{
    yajl_val rp = member(g->root, "node_row_ptr");
    if (rp && !YAJL_IS_ARRAY(rp))
        return error_fail(err, "'node_row_ptr' must be an array", "node_row_ptr");
    if (rp && rp->u.array.len != g->n_nodes + 1) {
        return error_failf(err, "node_row_ptr",
                           "%zu values for %zu nodes (expected one per node "
                           "plus one)",
                           rp->u.array.len, g->n_nodes);
    }
    size_t next = 0;
    for (size_t i = 0; i <= g->n_nodes; i++) {
        if (rp) {
            uint64_t v;
            if (!get_u64(rp->u.array.values[i], &v))
                return error_fail(err, "node_row_ptr values must be integers >= 0",
                                  "node_row_ptr[%zu]", i);
            if (v != next) {
                char where[64];
                snprintf(where, sizeof where, "node_row_ptr[%zu]", i);
                if (i == 0)
                    return error_failf(err, where, "the first entry id must be 0, not %" PRIu64, v);
                return error_failf(
                    err, where, "node %zu has %zu outputs, so its entries end at %zu, not %" PRIu64,
                    i - 1, g->nodes[i - 1].n_outputs, next, v);
            }
        }
        if (i < g->n_nodes) {
            g->nodes[i].first_entry = next;
            next += g->nodes[i].n_outputs;
        }
    }
    g->n_entries = next;
    g->entries = calloc(next ? next : 1, sizeof *g->entries);
    if (!g->entries)
        return error_nomem(err);
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < g->nodes[i].n_outputs; k++) {
            tvm_entry *e = &g->entries[g->nodes[i].first_entry + k];
            e->node = i;
            e->output = k;
            e->view_of = SIZE_MAX;
        }
    return TLSAN_OK;
}

/* A reference [node_id, output_index(, version)] to an entry of a node before `limit`.
 * `where` is its JSON path. */
static tlsan_status read_ref(const graph *g, yajl_val ref, size_t limit, const char *where,
                             size_t *entry, tlsan_error *err)
{
    char sub[300];
    if (!YAJL_IS_ARRAY(ref) || ref->u.array.len < 2 || ref->u.array.len > 3)
        return error_failf(err, where, "an entry reference is [node_id, output_index, version]");
    for (size_t k = 0; k < ref->u.array.len; k++) {
        uint64_t v;
        if (!get_u64(ref->u.array.values[k], &v)) {
            snprintf(sub, sizeof sub, "%s[%zu]", where, k);
            return error_failf(err, sub, "must be an integer >= 0");
        }
    }
    uint64_t nid = (uint64_t)YAJL_GET_INTEGER(ref->u.array.values[0]);
    uint64_t out = (uint64_t)YAJL_GET_INTEGER(ref->u.array.values[1]);
    if (nid >= limit) {
        snprintf(sub, sizeof sub, "%s[0]", where);
        if (limit == g->n_nodes)
            return error_failf(err, sub,
                               "node id %" PRIu64 " is out of range (the graph has %zu nodes)", nid,
                               g->n_nodes);
        return error_failf(err, sub,
                           "node id %" PRIu64
                           " is not an earlier node (nodes run in order; expected "
                           "0..%zu)",
                           nid, limit - 1);
    }
    if (out >= g->nodes[nid].n_outputs) {
        snprintf(sub, sizeof sub, "%s[1]", where);
        return error_failf(err, sub, "node %" PRIu64 " has %zu outputs, no output %" PRIu64, nid,
                           g->nodes[nid].n_outputs, out);
    }
    *entry = g->nodes[nid].first_entry + (size_t)out;
    return TLSAN_OK;
}

static tlsan_status read_inputs_and_heads(graph *g, tlsan_error *err)
{
    char where[128];
    yajl_val nodes = member(g->root, "nodes");
    for (size_t i = 0; i < g->n_nodes; i++) {
        tvm_node *nd = &g->nodes[i];
        yajl_val inputs = member(nodes->u.array.values[i], "inputs");
        for (size_t k = 0; k < nd->n_inputs; k++) {
            snprintf(where, sizeof where, "nodes[%zu].inputs[%zu]", i, k);
            tlsan_status st = read_ref(g, inputs->u.array.values[k], i, where,
                                       &g->inputs[nd->inputs_start + k], err);
            if (st != TLSAN_OK)
                return st;
        }
    }
    yajl_val heads = member(g->root, "heads");
    if (!heads)
        return error_fail(err, "a TVM graph needs 'heads' (an array of outputs)", "heads");
    if (!YAJL_IS_ARRAY(heads))
        return error_fail(err, "'heads' must be an array", "heads");
    for (size_t k = 0; k < heads->u.array.len; k++) {
        size_t e;
        snprintf(where, sizeof where, "heads[%zu]", k);
        tlsan_status st = read_ref(g, heads->u.array.values[k], g->n_nodes, where, &e, err);
        if (st != TLSAN_OK)
            return st;
        g->entries[e].flags |= TLSAN_TENSOR_OUTPUT;
    }
    return TLSAN_OK;
}

/* attrs.KEY = ["TAG", [one value per entry]]: returns the inner array. */
static tlsan_status read_entry_list(const graph *g, yajl_val attrs, const char *key,
                                    const char *tag, yajl_val *out, tlsan_error *err)
{
    yajl_val v = member(attrs, key);
    if (!v)
        return error_failf(err, "attrs", "a TVM graph needs attrs.%s ([\"%s\", [...]])", key, tag);
    if (!YAJL_IS_ARRAY(v) || v->u.array.len != 2 || !YAJL_IS_STRING(v->u.array.values[0]) ||
        !YAJL_IS_ARRAY(v->u.array.values[1])) {
        char where[64];
        snprintf(where, sizeof where, "attrs.%s", key);
        return error_failf(err, where, "expected [\"%s\", [...]]", tag);
    }
    if (strcmp(str_of(v->u.array.values[0]), tag) != 0) {
        char where[64];
        snprintf(where, sizeof where, "attrs.%s[0]", key);
        return error_failf(err, where, "expected the tag \"%s\"", tag);
    }
    yajl_val list = v->u.array.values[1];
    if (list->u.array.len != g->n_entries) {
        char where[64];
        snprintf(where, sizeof where, "attrs.%s[1]", key);
        return error_failf(err, where, "%zu values for %zu entries (one per node output)",
                           list->u.array.len, g->n_entries);
    }
    *out = list;
    return TLSAN_OK;
}

/* TVM's dltype names and the plan's dtypes. */
static const struct {
    const char *dltype;
    tlsan_dtype dtype;
} dltypes[] = {
    {"float64", TLSAN_DTYPE_F64},   {"float32", TLSAN_DTYPE_F32}, {"float16", TLSAN_DTYPE_F16},
    {"bfloat16", TLSAN_DTYPE_BF16}, {"int64", TLSAN_DTYPE_I64},   {"int32", TLSAN_DTYPE_I32},
    {"int16", TLSAN_DTYPE_I16},     {"int8", TLSAN_DTYPE_I8},     {"int4", TLSAN_DTYPE_I4},
    {"uint64", TLSAN_DTYPE_U64},    {"uint32", TLSAN_DTYPE_U32},  {"uint16", TLSAN_DTYPE_U16},
    {"uint8", TLSAN_DTYPE_U8},      {"uint4", TLSAN_DTYPE_U4},    {"bool", TLSAN_DTYPE_BOOL},
    {"uint1", TLSAN_DTYPE_BOOL},
};

static tlsan_dtype dtype_of_dltype(const char *s)
{
    for (size_t i = 0; i < sizeof dltypes / sizeof dltypes[0]; i++)
        if (strcmp(dltypes[i].dltype, s) == 0)
            return dltypes[i].dtype;
    return TLSAN_DTYPE_NONE;
}

static tlsan_status read_attrs(graph *g, tlsan_error *err)
{
    yajl_val attrs = member(g->root, "attrs");
    if (!attrs)
        return error_fail(err, "a TVM graph needs 'attrs' (storage_id, shape, dltype)", "attrs");
    if (!YAJL_IS_OBJECT(attrs))
        return error_fail(err, "'attrs' must be an object", "attrs");
    yajl_val sids, shapes, dlts;
    tlsan_status st;
    if ((st = read_entry_list(g, attrs, "storage_id", "list_int", &sids, err)) ||
        (st = read_entry_list(g, attrs, "shape", "list_shape", &shapes, err)) ||
        (st = read_entry_list(g, attrs, "dltype", "list_str", &dlts, err)))
        return st;
    size_t n_extents = 0;
    for (size_t e = 0; e < g->n_entries; e++) {
        yajl_val s = shapes->u.array.values[e];
        if (!YAJL_IS_ARRAY(s))
            return error_fail(err, "a shape must be an array of extents", "attrs.shape[1][%zu]", e);
        n_extents += s->u.array.len;
    }
    g->shapes = malloc((n_extents ? n_extents : 1) * sizeof *g->shapes);
    if (!g->shapes)
        return error_nomem(err);
    for (size_t e = 0; e < g->n_entries; e++) {
        tvm_entry *en = &g->entries[e];
        uint64_t sid;
        if (!get_u64(sids->u.array.values[e], &sid) || sid > INT64_MAX)
            return error_fail(err, "a storage id must be an integer >= 0",
                              "attrs.storage_id[1][%zu]", e);
        en->storage_id = (int64_t)sid;

        yajl_val dl = dlts->u.array.values[e];
        if (!YAJL_IS_STRING(dl))
            return error_fail(err, "a dltype must be a string", "attrs.dltype[1][%zu]", e);
        en->dtype = dtype_of_dltype(str_of(dl));
        if (en->dtype == TLSAN_DTYPE_NONE) {
            char where[64];
            snprintf(where, sizeof where, "attrs.dltype[1][%zu]", e);
            return error_failf(err, where, "unknown dltype '%s'", str_of(dl));
        }

        yajl_val s = shapes->u.array.values[e];
        en->shape_start = g->n_shapes;
        en->n_shape = s->u.array.len;
        /* TVM sizes a buffer as elements times whole bytes per element. */
        uint64_t bytes = (tlsan_dtype_bits(en->dtype) + 7) / 8;
        for (size_t k = 0; k < s->u.array.len; k++) {
            uint64_t d;
            if (!get_u64(s->u.array.values[k], &d) || d > INT64_MAX)
                return error_fail(err, "an extent must be an integer >= 0",
                                  "attrs.shape[1][%zu][%zu]", e, k);
            g->shapes[g->n_shapes++] = d;
            if (d != 0 && bytes > INT64_MAX / d)
                return error_fail(err, "the shape needs more than 2^63-1 bytes",
                                  "attrs.shape[1][%zu]", e);
            bytes *= d;
        }
        en->bytes = bytes;
    }
    return TLSAN_OK;
}

/* ---- names ---- */

typedef struct name_ref {
    const char *name;
    size_t index;
} name_ref;

static int cmp_name_ref(const void *a, const void *b)
{
    const name_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* NAME, NAME@NODE or either with :K for output K >= 1; NULL when out of memory. */
static char *entry_name(const tvm_node *nd, size_t node, size_t output)
{
    char suffix[64] = "";
    size_t len = 0;
    if (nd->dup_name)
        len += (size_t)snprintf(suffix + len, sizeof suffix - len, "@%zu", node);
    if (output >= 1)
        snprintf(suffix + len, sizeof suffix - len, ":%zu", output);
    size_t bytes = strlen(nd->name) + strlen(suffix) + 1;
    char *s = malloc(bytes);
    if (s)
        snprintf(s, bytes, "%s%s", nd->name, suffix);
    return s;
}

/* Marks repeated node names, names every entry, and refuses names that still collide
 * (a node literally named "a@3" or "a:1" next to the generated one). */
static tlsan_status name_entries(graph *g, tlsan_error *err)
{
    size_t n = g->n_nodes > g->n_entries ? g->n_nodes : g->n_entries;
    name_ref *refs = malloc((n ? n : 1) * sizeof *refs);
    if (!refs)
        return error_nomem(err);
    for (size_t i = 0; i < g->n_nodes; i++)
        refs[i] = (name_ref){g->nodes[i].name, i};
    qsort(refs, g->n_nodes, sizeof *refs, cmp_name_ref);
    for (size_t i = 1; i < g->n_nodes; i++)
        if (strcmp(refs[i - 1].name, refs[i].name) == 0)
            g->nodes[refs[i - 1].index].dup_name = g->nodes[refs[i].index].dup_name = true;

    tlsan_status st = TLSAN_OK;
    for (size_t e = 0; e < g->n_entries; e++) {
        tvm_entry *en = &g->entries[e];
        en->name = entry_name(&g->nodes[en->node], en->node, en->output);
        if (!en->name) {
            st = error_nomem(err);
            goto out;
        }
        refs[e] = (name_ref){en->name, e};
    }
    qsort(refs, g->n_entries, sizeof *refs, cmp_name_ref);
    for (size_t i = 1; i < g->n_entries; i++)
        if (strcmp(refs[i - 1].name, refs[i].name) == 0) {
            const tvm_entry *a = &g->entries[refs[i - 1].index];
            const tvm_entry *b = &g->entries[refs[i].index];
            char where[64];
            snprintf(where, sizeof where, "nodes[%zu].name", b->node);
            st = error_failf(
                err, where,
                "entry name '%s' (output %zu of node %zu) is also the name of output %zu "
                "of node %zu",
                b->name, b->output, b->node, a->output, a->node);
            goto out;
        }
out:
    free(refs);
    return st;
}

/* ---- layout ---- */

typedef struct sid_ref {
    int64_t storage_id;
    size_t entry;
} sid_ref;

static int cmp_sid_ref(const void *a, const void *b)
{
    const sid_ref *x = a, *y = b;
    if (x->storage_id != y->storage_id)
        return x->storage_id < y->storage_id ? -1 : 1;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* Aliases of __nop kernels, then one slot per storage id laid end to end. */
static tlsan_status lay_out(graph *g, tlsan_error *err)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tvm_node *nd = &g->nodes[i];
        if (!nd->is_nop || nd->n_inputs == 0 || nd->n_outputs == 0)
            continue;
        tvm_entry *out = &g->entries[nd->first_entry];
        size_t in = g->inputs[nd->inputs_start];
        if (out->storage_id == g->entries[in].storage_id)
            out->view_of = in;
    }

    sid_ref *refs = malloc((g->n_entries ? g->n_entries : 1) * sizeof *refs);
    g->slot_offset = malloc((g->n_entries ? g->n_entries : 1) * sizeof *g->slot_offset);
    if (!refs || !g->slot_offset) {
        free(refs);
        return error_nomem(err);
    }
    for (size_t e = 0; e < g->n_entries; e++)
        refs[e] = (sid_ref){g->entries[e].storage_id, e};
    qsort(refs, g->n_entries, sizeof *refs, cmp_sid_ref);
    /* Each run of equal storage ids is one slot, as large as its largest entry (views
     * included: TVM sizes the buffer over every entry that uses it). */
    uint64_t offset = 0;
    tlsan_status st = TLSAN_OK;
    for (size_t i = 0; i < g->n_entries;) {
        size_t j = i;
        uint64_t bytes = 0;
        while (j < g->n_entries && refs[j].storage_id == refs[i].storage_id) {
            const tvm_entry *en = &g->entries[refs[j].entry];
            if (en->bytes > bytes)
                bytes = en->bytes;
            g->entries[refs[j].entry].slot = g->n_slots;
            j++;
        }
        g->slot_offset[g->n_slots++] = offset;
        uint64_t padded = (bytes + SLOT_ALIGN_BYTES - 1) / SLOT_ALIGN_BYTES * SLOT_ALIGN_BYTES;
        if (bytes > INT64_MAX - SLOT_ALIGN_BYTES || offset > INT64_MAX - padded) {
            st = error_fail(err, "the storage buffers together exceed 2^63-1 bytes", "attrs.shape");
            goto out;
        }
        offset += padded;
        i = j;
    }
    g->arena_bytes = offset;
out:
    free(refs);
    return st;
}

/* ---- building the plan ---- */

/* A builder refusal can only come from something the checks above let through; it is
 * reported against the node it concerns, with the builder's own reason. */
static tlsan_status builder_failed(tlsan_error *err, tlsan_status st, size_t node)
{
    if (st == TLSAN_ERR_INVALID && err) {
        char what[sizeof err->what + sizeof err->where + 64];
        snprintf(what, sizeof what, "cannot be expressed as a plan: %s (%s)", err->what,
                 err->where);
        char where[64];
        snprintf(where, sizeof where, "nodes[%zu]", node);
        return error_failf(err, where, "%s", what);
    }
    return st;
}

/* Gives the tensor or op just added the position of node `node`; 0, or -1 when out of
 * memory. Nothing when the syntax pass did not place the node. */
static int set_node_source(const graph *g, tlsan_plan *p, bool is_op, size_t node)
{
    if (node >= g->n_node_pos)
        return 0;
    return plan_set_source(p, is_op, (uint32_t)g->node_pos[node].line,
                           (uint32_t)g->node_pos[node].column);
}

static tlsan_status build_plan(const graph *g, const char *label, tlsan_plan **out,
                               tlsan_error *err)
{
    tlsan_status st = TLSAN_OK;
    tlsan_plan *p = tlsan_plan_create();
    char *name = NULL;
    int name_status = plan_name_from_label(label, ".json", &name);
    size_t max_names = 1;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].n_inputs + g->nodes[i].n_outputs > max_names)
            max_names = g->nodes[i].n_inputs + g->nodes[i].n_outputs;
    const char **names = malloc(max_names * sizeof *names);
    if (!p || !names || name_status != 0) {
        st = error_nomem(err);
        goto out;
    }
    if (name && (st = tlsan_plan_set_name(p, name)) != TLSAN_OK) {
        st = error_nomem(err);
        goto out;
    }
    tlsan_arena_desc arena = {ARENA_NAME, g->arena_bytes, SLOT_ALIGN_BYTES, NULL};
    if ((st = tlsan_plan_add_arena(p, &arena, err)) != TLSAN_OK)
        goto out;
    for (size_t e = 0; e < g->n_entries; e++) {
        const tvm_entry *en = &g->entries[e];
        tlsan_tensor_desc t = {0};
        t.name = en->name;
        t.bytes = en->bytes;
        if (en->view_of != SIZE_MAX) {
            t.view_of = g->entries[en->view_of].name;
        } else {
            t.arena = ARENA_NAME;
            t.offset_bytes = g->slot_offset[en->slot];
        }
        t.flags = en->flags;
        t.dtype = en->dtype;
        t.shape = g->shapes + en->shape_start;
        t.n_shape = en->n_shape;
        if ((st = tlsan_plan_add_tensor(p, &t, err)) != TLSAN_OK) {
            st = builder_failed(err, st, en->node);
            goto out;
        }
        if (set_node_source(g, p, false, en->node) != 0) {
            st = error_nomem(err);
            goto out;
        }
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tvm_node *nd = &g->nodes[i];
        if (!nd->is_op)
            continue;
        for (size_t k = 0; k < nd->n_inputs; k++)
            names[k] = g->entries[g->inputs[nd->inputs_start + k]].name;
        for (size_t k = 0; k < nd->n_outputs; k++)
            names[nd->n_inputs + k] = g->entries[nd->first_entry + k].name;
        tlsan_op_desc o = {0};
        /* The op is named like the node: its first entry's name without ":0". */
        char *op_name = entry_name(nd, i, 0);
        if (!op_name) {
            st = error_nomem(err);
            goto out;
        }
        o.name = op_name;
        o.reads = names;
        o.n_reads = nd->n_inputs;
        o.writes = names + nd->n_inputs;
        o.n_writes = nd->n_outputs;
        st = tlsan_plan_add_op(p, &o, err);
        free(op_name);
        if (st != TLSAN_OK) {
            st = builder_failed(err, st, i);
            goto out;
        }
        if (set_node_source(g, p, true, i) != 0) {
            st = error_nomem(err);
            goto out;
        }
    }
    if ((st = tlsan_plan_finalize(p, err)) != TLSAN_OK) {
        st = builder_failed(err, st, 0);
        goto out;
    }
    *out = p;
    p = NULL;
out:
    tlsan_plan_free(p);
    free(name);
    free(names);
    return st;
}

/* ---- entry points ---- */

/* yajl_tree frees a document recursively, so a hostile nesting depth would overflow the C
 * stack; TVM graphs nest six levels deep. */
#define MAX_DEPTH 256

typedef struct syntax_pass {
    unsigned depth;
    bool too_deep;
    bool bad_text; /* a string or key that is not UTF-8 text (or holds a NUL) */
    bool nomem;
    /* The node positions: the objects in the root's first "nodes" array. */
    yajl_handle parser;
    const char *json;
    size_t pos_offset; /* pos is the position of byte pos_offset of json */
    text_pos pos;
    bool key_is_nodes;       /* the last key of the root object was "nodes" */
    bool nodes_done;         /* that array was seen (read_nodes takes the first) */
    unsigned in_nodes_depth; /* depth of the open "nodes" array, 0 outside it */
    text_pos *node_pos;
    size_t n_node_pos, cap_node_pos;
} syntax_pass;

static int check_text(void *ctx, const unsigned char *s, size_t len)
{
    if (utf8_valid_text((const char *)s, len))
        return 1;
    ((syntax_pass *)ctx)->bad_text = true;
    return 0;
}

static int check_key(void *ctx, const unsigned char *s, size_t len)
{
    syntax_pass *d = ctx;
    if (d->depth == 1)
        d->key_is_nodes = len == 5 && memcmp(s, "nodes", 5) == 0;
    return check_text(ctx, s, len);
}

static int open_level(void *ctx)
{
    syntax_pass *d = ctx;
    if (++d->depth > MAX_DEPTH) {
        d->too_deep = true;
        return 0; /* stops the parse */
    }
    return 1;
}

static int open_array(void *ctx)
{
    syntax_pass *d = ctx;
    if (d->depth == 1 && d->key_is_nodes && !d->nodes_done)
        d->in_nodes_depth = d->depth + 1;
    return open_level(ctx);
}

/* A node's object: its '{' is the byte the parser just consumed. */
static int open_map(void *ctx)
{
    syntax_pass *d = ctx;
    if (d->in_nodes_depth && d->depth == d->in_nodes_depth) {
        size_t at = yajl_get_bytes_consumed(d->parser) - 1;
        if (d->n_node_pos == d->cap_node_pos) {
            size_t cap = d->cap_node_pos ? 2 * d->cap_node_pos : 64;
            text_pos *grown = realloc(d->node_pos, cap * sizeof *grown);
            if (!grown) {
                d->nomem = true;
                return 0;
            }
            d->node_pos = grown;
            d->cap_node_pos = cap;
        }
        d->pos = text_pos_advance(d->pos, d->json + d->pos_offset, at - d->pos_offset);
        d->pos_offset = at;
        d->node_pos[d->n_node_pos++] = d->pos;
    }
    return open_level(ctx);
}

static int close_level(void *ctx)
{
    syntax_pass *d = ctx;
    if (d->in_nodes_depth && d->depth == d->in_nodes_depth) {
        d->in_nodes_depth = 0;
        d->nodes_done = true;
    }
    d->depth--;
    return 1;
}

/* Finds a syntax error with yajl's event parser, which knows where it stopped, and where each
 * node starts (g->node_pos). */
static tlsan_status check_syntax(const char *json, size_t json_bytes, graph *g, tlsan_error *err)
{
    static const yajl_callbacks pass_callbacks = {
        .yajl_start_map = open_map,
        .yajl_end_map = close_level,
        .yajl_start_array = open_array,
        .yajl_end_array = close_level,
        .yajl_string = check_text,
        .yajl_map_key = check_key,
    };
    syntax_pass pass = {0};
    pass.json = json;
    pass.pos = TEXT_POS_START;
    json_escape_scan esc = {0};
    size_t bad = json_escapes_feed(&esc, json, json_bytes);
    if (bad != SIZE_MAX) {
        text_pos at = text_pos_advance(TEXT_POS_START, json, bad);
        tlsan_status st =
            error_status(err, TLSAN_ERR_INVALID,
                         "a \\u escape with an unpaired UTF-16 surrogate (not a character)");
        if (err) {
            err->line = at.line;
            err->column = at.column;
        }
        return st;
    }
    yajl_handle h = yajl_alloc(&pass_callbacks, NULL, &pass);
    if (!h)
        return error_nomem(err);
    pass.parser = h;
    size_t consumed = json_bytes;
    bool at_end = false; /* the text ended before the value did: the error is after it */
    yajl_status s = yajl_parse(h, (const unsigned char *)json, json_bytes);
    if (s != yajl_status_ok) {
        consumed = yajl_get_bytes_consumed(h); /* up to the token it stumbled on */
    } else {
        s = yajl_complete_parse(h);
        at_end = true;
    }
    tlsan_status st = TLSAN_OK;
    if (pass.nomem) {
        st = error_nomem(err);
    } else if (s != yajl_status_ok) {
        /* The same rule as the plan reader's (core/text_pos.h): the last character it read
         * that is not blank, columns in characters. */
        text_pos at = at_end ? text_pos_advance(TEXT_POS_START, json, json_bytes)
                             : text_pos_of_error(TEXT_POS_START, json, consumed);
        int line = at.line, column = at.column;
        st = error_status(err, TLSAN_ERR_INVALID, "");
        if (err && pass.bad_text) {
            snprintf(err->what, sizeof err->what,
                     "a string that is not valid UTF-8 or holds a NUL character");
            err->line = line;
            err->column = column;
        } else if (err && pass.too_deep) {
            snprintf(err->what, sizeof err->what,
                     "JSON nested deeper than %d levels (a TVM graph needs 6)", MAX_DEPTH);
            err->line = line;
            err->column = column;
        } else if (err) {
            char text[200];
            json_syntax_message(h, text, sizeof text);
            snprintf(err->what, sizeof err->what, "malformed JSON: %s", text);
            err->line = line;
            err->column = column;
        }
    }
    yajl_free(h);
    if (st == TLSAN_OK) {
        g->node_pos = pass.node_pos;
        g->n_node_pos = pass.n_node_pos;
    } else {
        free(pass.node_pos);
    }
    return st;
}

static void free_graph(graph *g)
{
    if (g->entries)
        for (size_t e = 0; e < g->n_entries; e++)
            free(g->entries[e].name);
    free(g->entries);
    free(g->nodes);
    free(g->inputs);
    free(g->shapes);
    free(g->slot_offset);
    free(g->node_pos);
    yajl_tree_free(g->root);
}

static tlsan_status apply_overrides(graph *g, const tvm_import_options *opt, tlsan_error *err)
{
    if (!opt)
        return TLSAN_OK;
    for (size_t k = 0; k < opt->n_overrides; k++) {
        const tvm_storage_override *o = &opt->overrides[k];
        if (o->entry >= g->n_entries || o->storage_id < 0) {
            error_status(err, TLSAN_ERR_ARG, "");
            if (err)
                snprintf(err->what, sizeof err->what,
                         "override %zu: entry %zu / storage id %" PRId64
                         " out of range (%zu entries)",
                         k, o->entry, o->storage_id, g->n_entries);
            return TLSAN_ERR_ARG;
        }
        g->entries[o->entry].storage_id = o->storage_id;
    }
    return TLSAN_OK;
}

tlsan_status tvm_import_buffer_ex(const char *json, size_t json_bytes, const char *label,
                                  const tvm_import_options *opt, tlsan_plan **out, tlsan_error *err)
{
    if (out)
        *out = NULL;
    if ((!json && json_bytes) || !out || (opt && opt->n_overrides && !opt->overrides))
        return TLSAN_ERR_ARG;
    graph g = {0};
    char *text = NULL;
    tlsan_status st = check_syntax(json ? json : "", json_bytes, &g, err);
    if (st != TLSAN_OK)
        goto out;
    /* yajl_tree wants a NUL-terminated string; the syntax pass has ruled out inner NULs. */
    text = malloc(json_bytes + 1);
    if (!text) {
        st = error_nomem(err);
        goto out;
    }
    if (json_bytes)
        memcpy(text, json, json_bytes);
    text[json_bytes] = '\0';
    char parse_error[256];
    g.root = yajl_tree_parse(text, parse_error, sizeof parse_error);
    if (!g.root) {
        st = error_status(err, TLSAN_ERR_INVALID, "");
        if (err)
            snprintf(err->what, sizeof err->what, "malformed JSON: %s", parse_error);
        goto out;
    }
    if (!YAJL_IS_OBJECT(g.root)) {
        st = error_status(err, TLSAN_ERR_INVALID, "a TVM graph is a JSON object");
        goto out;
    }
    if ((st = read_nodes(&g, err)) || (st = read_row_ptr(&g, err)) ||
        (st = read_inputs_and_heads(&g, err)) || (st = read_attrs(&g, err)) ||
        (st = apply_overrides(&g, opt, err)))
        goto out;
    for (size_t i = 0; i < g.n_nodes; i++)
        if (!g.nodes[i].is_op)
            for (size_t k = 0; k < g.nodes[i].n_outputs; k++)
                g.entries[g.nodes[i].first_entry + k].flags |= TLSAN_TENSOR_CONSTANT;
    if ((st = name_entries(&g, err)) || (st = lay_out(&g, err)) ||
        (st = build_plan(&g, label, out, err)))
        goto out;
out:
    if (st != TLSAN_OK && err && label)
        snprintf(err->file, sizeof err->file, "%s", label);
    free(text);
    free_graph(&g);
    return st;
}

tlsan_status tlsan_import_tvm_buffer(const char *json, size_t json_bytes, const char *label,
                                     tlsan_plan **out, tlsan_error *err)
{
    return tvm_import_buffer_ex(json, json_bytes, label, NULL, out, err);
}

/* Reads a whole stream into a malloc'd buffer: TLSAN_OK, TLSAN_ERR_NOMEM or TLSAN_ERR_IO. */
static tlsan_status slurp(FILE *f, char **buf, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    if (!b)
        return TLSAN_ERR_NOMEM;
    for (;;) {
        if (n == cap) {
            char *nb = cap <= SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
            if (!nb) {
                free(b);
                return TLSAN_ERR_NOMEM;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(b);
        return TLSAN_ERR_IO;
    }
    *buf = b;
    *len = n;
    return TLSAN_OK;
}

tlsan_status tlsan_import_tvm_file(const char *path, tlsan_plan **out, tlsan_error *err)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return TLSAN_ERR_ARG;
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    int saved_errno = f ? 0 : errno;
    if (f) {
        errno = 0;
        tlsan_status rd = slurp(f, &buf, &len);
        if (rd == TLSAN_ERR_NOMEM) {
            if (!is_stdin)
                fclose(f);
            return error_nomem(err);
        }
        if (rd != TLSAN_OK)
            saved_errno = errno ? errno : EIO;
        if (!is_stdin)
            fclose(f);
    }
    if (saved_errno) {
        error_status(err, TLSAN_ERR_IO, "");
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->what, sizeof err->what, "cannot read: %s", strerror(saved_errno));
        }
        return TLSAN_ERR_IO;
    }
    tlsan_status st = tlsan_import_tvm_buffer(buf, len, path, out, err);
    free(buf);
    return st;
}
