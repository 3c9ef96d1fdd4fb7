/* Tests of the TVM importer (src/import/tvm.c): the project's own graph (tests/tvm/mlp_graph.json)
 * imports to the plan worked out by hand below, is clean, and its hand-worked mutations give
 * exactly the right pairs; when the team's shared corpus is present, the 22 real graphs of
 * its real/tvm import with the counts computed independently (by a separate Python reading of the
 * files when these tests were written), exact names, bytes and offsets for small graphs, __nop
 * views, NAME@INDEX names, clean errors for malformed graphs, and mutations (one entry moved onto a
 * storage id whose entries are live at the same time) that the checker must report as
 * exactly the right live-overlap pairs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check/plan.h"
#include "tlsan/check.h"
#include "tlsan/tvm.h"
#include "import/tvm.h"
#include "support/corpus.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

/* The real graphs: third-party data that only the team's shared folder holds. */
static const char *real_dir(void)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s/real/tvm", corpus_shared_dir());
    return dir;
}

/* ---- helpers ---- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (cap + 4096) * 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static bool have_real_files(void)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/PROVENANCE.md", real_dir());
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    fclose(f);
    return true;
}

static tlsan_plan *import_from(const char *dir, const char *file, const tvm_import_options *opt)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len;
    char *json = slurp(path, &len);
    if (!json)
        fail_msg("cannot read %s", path);
    tlsan_plan *p = NULL;
    tlsan_error err;
    char msg[1024];
    tlsan_status st = tvm_import_buffer_ex(json, len, path, opt, &p, &err);
    free(json);
    if (st != TLSAN_OK)
        fail_msg("import %s: %s", file, tlsan_error_format(&err, msg, sizeof msg));
    return p;
}

static tlsan_plan *import_real(const char *file, const tvm_import_options *opt)
{
    return import_from(real_dir(), file, opt);
}

static uint32_t tensor_index(const tlsan_plan *p, const char *name)
{
    for (size_t i = 0; i < p->n_tensors; i++)
        if (strcmp(plan_str(p, p->tensors[i].name), name) == 0)
            return (uint32_t)i;
    fail_msg("no tensor named '%s'", name);
    return NO_INDEX;
}

static bool has_tensor(const tlsan_plan *p, const char *name)
{
    for (size_t i = 0; i < p->n_tensors; i++)
        if (strcmp(plan_str(p, p->tensors[i].name), name) == 0)
            return true;
    return false;
}

static void assert_op_lists(const tlsan_plan *p, size_t op, const char *const *reads,
                            size_t n_reads, const char *const *writes, size_t n_writes)
{
    const op_rec *o = &p->ops[op];
    assert_int_equal(o->n_reads, n_reads);
    assert_int_equal(o->n_writes, n_writes);
    for (size_t k = 0; k < n_reads; k++)
        assert_string_equal(plan_str(p, p->tensors[p->id_pool.v[o->reads_start + k]].name),
                            reads[k]);
    for (size_t k = 0; k < n_writes; k++)
        assert_string_equal(plan_str(p, p->tensors[p->id_pool.v[o->writes_start + k]].name),
                            writes[k]);
}

/* Number of distinct slots: distinct offsets of roots (no real graph has an empty entry,
 * so two slots never share an offset). */
static size_t count_slots(const tlsan_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_tensors; i++) {
        const tensor_rec *t = &p->tensors[i];
        if (t->arena == NO_INDEX)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = p->tensors[j].arena != NO_INDEX && p->tensors[j].offset_bytes == t->offset_bytes;
        n += !seen;
    }
    return n;
}

/* ---- the real graphs ---- */

/* Entries (= tensors), tvm_op nodes (= ops), distinct storage ids (= slots) and __nop views
 * of each file, counted by an independent Python reading of the files. */
static const struct real_file {
    const char *file;
    size_t n_entries, n_ops, n_slots, n_views;
} real_files[] = {
    {"MobileNet_pretrain__deploy_graph.json", 143, 59, 90, 0},
    {"MobileNet_pretrain__ocl_squ_deploy_squ_ocl_graph.json", 101, 48, 60, 0},
    {"TVM_Deploy__NCNN_mobilenet_v1_model_mobilenet_deploy_graph.json", 150, 45, 110, 0},
    {"face-recognition-api__deploy_graph.json", 269, 101, 180, 0},
    {"my-facial-recognition-models__deploy_graph.json", 89, 32, 61, 0},
    {"nonn__deploy_graph.json", 71, 25, 52, 0},
    {"nonn__nonn-8s_rasp_wrn_8s_g0-rasp.json", 233, 167, 72, 0},
    {"nonn__nonn-8s_rasp_wrn_8s_g1-rasp.json", 233, 167, 72, 0},
    {"nonn__nonn-8s_x86_wrn_8s_fc.json", 26, 18, 15, 0},
    {"nonn__nonn_rasp_wrn-rasp.json", 700, 508, 200, 0},
    {"nonn__nonn_rasp_wrn_fc-rasp.json", 26, 18, 13, 0},
    {"nonn__nonn_x86_wrn_fc.json", 10, 4, 9, 0},
    {"nonn__nonn_x86_wrn_g1.json", 66, 24, 45, 0},
    {"nonn__nonn_x86_wrn_g2.json", 66, 24, 45, 0},
    {"nonn__pytorch-wrn_wrn_all.json", 140, 52, 94, 0},
    {"rzv_drp-ai_tvm__how-to_sample_app_exe_hrnet_onnx_deploy.json", 2, 1, 2, 0},
    {"rzv_drp-ai_tvm__how-to_sample_app_exe_tinyyolov2_onnx_deploy.json", 4, 3, 3, 0},
    {"rzv_drp-ai_tvm__how-to_sample_app_exe_tinyyolov3_onnx_deploy.json", 11, 7, 6, 0},
    {"rzv_drp-ai_tvm__how-to_sample_app_exe_yolov2_onnx_deploy.json", 2, 1, 2, 0},
    {"rzv_drp-ai_tvm__how-to_sample_app_exe_yolov3_onnx_deploy.json", 4, 1, 4, 0},
    {"rzv_drp-ai_tvm__how-to_sample_app_usb_cam_http_exe_face_deeppose_pt_deploy.json", 3, 2, 2, 1},
    {"tvm_insightface__deploy_graph.json", 253, 85, 175, 0},
};
#define N_REAL_FILES (sizeof real_files / sizeof real_files[0])

static void test_real_files_import(void **state)
{
    (void)state;
    assert_int_equal(N_REAL_FILES, 22);
    for (size_t f = 0; f < N_REAL_FILES; f++) {
        const struct real_file *rf = &real_files[f];
        tlsan_plan *p = import_real(rf->file, NULL);
        assert_int_equal(tlsan_plan_n_tensors(p), rf->n_entries);
        assert_int_equal(tlsan_plan_n_ops(p), rf->n_ops);
        assert_int_equal(tlsan_plan_n_arenas(p), 1);
        assert_string_equal(plan_str(p, p->arenas[0].name), "storage");
        assert_int_equal(p->arenas[0].alignment_bytes, 64);
        assert_int_equal(count_slots(p), rf->n_slots);
        size_t n_views = 0;
        for (size_t i = 0; i < p->n_tensors; i++) {
            const tensor_rec *t = &p->tensors[i];
            n_views += t->arena == NO_INDEX;
            assert_int_equal(t->abs_offset_bytes % 64, 0);
            assert_true(t->abs_offset_bytes + t->bytes <= p->arenas[0].bytes);
            assert_int_not_equal(t->dtype, TLSAN_DTYPE_NONE);
        }
        assert_int_equal(n_views, rf->n_views);
        /* The plan is named after the file. */
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(rf->file) - 5), rf->file);
        assert_string_equal(tlsan_plan_name(p), name);
        tlsan_plan_free(p);
    }
}

/* tinyyolov3: multi-output kernels, shared storage ids, float32 and float16. Offsets worked
 * out by hand: slot sizes (bytes) by storage id 0..5 are 2076672 (1x3x416x416 f32),
 * 173056, 346112, 519168, 86190 (1x255x13x13 f16, padded to 86208) and 173056. */
static void test_tinyyolov3_exact(void **state)
{
    (void)state;
    tlsan_plan *p =
        import_real("rzv_drp-ai_tvm__how-to_sample_app_exe_tinyyolov3_onnx_deploy.json", NULL);
    assert_int_equal(p->arenas[0].bytes, 3374272);
    static const struct {
        const char *name;
        uint64_t bytes, offset;
        unsigned flags;
    } want[] = {
        {"input1", 2076672, 0, TLSAN_TENSOR_CONSTANT | TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT},
        {"tvmgen_default_tvmgen_default_mera_drp_0", 173056, 2076672, 0},
        {"tvmgen_default_tvmgen_default_mera_drp_0:1", 346112, 2249728, 0},
        {"tvmgen_default_fused_nn_pad", 200704, 2595840, 0},
        {"tvmgen_default_mera_drp_0", 86190, 3115008, 0},
        {"tvmgen_default_mera_drp_0:1", 86528, 3201216, 0},
        {"tvmgen_default_fused_concatenate", 86528, 2595840, 0},
        {"tvmgen_default_mera_drp_10", 173056, 3201216, 0},
        {"tvmgen_default_fused_concatenate_1", 519168, 2595840, 0},
        {"tvmgen_default_mera_drp_9", 86190, 2076672, TLSAN_TENSOR_OUTPUT},
        {"tvmgen_default_mera_drp_9:1", 344760, 2249728, TLSAN_TENSOR_OUTPUT},
    };
    assert_int_equal(p->n_tensors, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < p->n_tensors; i++) {
        const tensor_rec *t = &p->tensors[i];
        assert_string_equal(plan_str(p, t->name), want[i].name);
        assert_int_equal(t->bytes, want[i].bytes);
        assert_int_not_equal(t->arena, NO_INDEX);
        assert_int_equal(t->offset_bytes, want[i].offset);
        assert_int_equal(t->flags, want[i].flags);
    }
    const tensor_rec *in = &p->tensors[0];
    assert_int_equal(in->dtype, TLSAN_DTYPE_F32);
    assert_int_equal(plan_shape_rank(p, in), 4);
    assert_int_equal(plan_shape_dim(p, in, 2), 416);
    assert_int_equal(p->tensors[1].dtype, TLSAN_DTYPE_F16);

    static const char *const op_names[] = {
        "tvmgen_default_tvmgen_default_mera_drp_0",
        "tvmgen_default_fused_nn_pad",
        "tvmgen_default_mera_drp_0",
        "tvmgen_default_fused_concatenate",
        "tvmgen_default_mera_drp_10",
        "tvmgen_default_fused_concatenate_1",
        "tvmgen_default_mera_drp_9",
    };
    assert_int_equal(p->n_ops, 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(tlsan_plan_op_name(p, i), op_names[i]);
    static const char *const r5[] = {"tvmgen_default_tvmgen_default_mera_drp_0",
                                     "tvmgen_default_tvmgen_default_mera_drp_0:1",
                                     "tvmgen_default_mera_drp_10"};
    static const char *const w5[] = {"tvmgen_default_fused_concatenate_1"};
    assert_op_lists(p, 5, r5, 3, w5, 1);
    static const char *const r6[] = {"tvmgen_default_mera_drp_0",
                                     "tvmgen_default_fused_concatenate_1"};
    static const char *const w6[] = {"tvmgen_default_mera_drp_9", "tvmgen_default_mera_drp_9:1"};
    assert_op_lists(p, 6, r6, 2, w6, 2);
    tlsan_plan_free(p);
}

/* The __nop reshape writes into its input's storage id: a view, not a second root. */
static void test_nop_view(void **state)
{
    (void)state;
    tlsan_plan *p = import_real(
        "rzv_drp-ai_tvm__how-to_sample_app_usb_cam_http_exe_face_deeppose_pt_deploy.json", NULL);
    assert_int_equal(p->n_tensors, 3);
    uint32_t base = tensor_index(p, "tvmgen_default_tvmgen_default_mera_drp_0");
    uint32_t view = tensor_index(p, "reshape_nop");
    const tensor_rec *v = &p->tensors[view];
    assert_int_equal(v->arena, NO_INDEX);
    assert_int_equal(v->view_of, base);
    assert_int_equal(v->root, base);
    assert_int_equal(v->offset_bytes, 0);
    assert_int_equal(v->bytes, 392); /* 1x98x2 float16 */
    assert_int_equal(v->flags, TLSAN_TENSOR_OUTPUT);
    assert_int_equal(p->tensors[base].offset_bytes, 786432); /* after 1x3x256x256 float32 */
    assert_int_equal(p->arenas[0].bytes, 786432 + 448);
    static const char *const r[] = {"tvmgen_default_tvmgen_default_mera_drp_0"};
    static const char *const w[] = {"reshape_nop"};
    assert_op_lists(p, 1, r, 1, w, 1);
    tlsan_plan_free(p);
}

/* Names that occur on several nodes become NAME@NODE_INDEX, for every such node. */
static void test_duplicate_names(void **state)
{
    (void)state;
    tlsan_plan *p = import_real("face-recognition-api__deploy_graph.json", NULL);
    static const char *const dups[] = {"relu34_NCHW4c@153", "relu34_NCHW4c@163",
                                       "relu38_NCHW4c@204", "relu38_NCHW4c@214",
                                       "relu40_NCHW4c@255", "relu40_NCHW4c@265"};
    for (size_t k = 0; k < 6; k++) {
        assert_true(has_tensor(p, dups[k]));
        bool op_found = false;
        for (size_t i = 0; i < p->n_ops; i++)
            op_found = op_found || strcmp(tlsan_plan_op_name(p, i), dups[k]) == 0;
        assert_true(op_found);
    }
    assert_false(has_tensor(p, "relu34_NCHW4c"));
    assert_false(has_tensor(p, "relu38_NCHW4c"));
    assert_false(has_tensor(p, "relu40_NCHW4c"));
    size_t n_at = 0;
    for (size_t i = 0; i < p->n_tensors; i++)
        n_at += strchr(plan_str(p, p->tensors[i].name), '@') != NULL;
    assert_int_equal(n_at, 6);
    tlsan_plan_free(p);

    p = import_real("nonn__nonn_x86_wrn_g1.json", NULL);
    assert_true(has_tensor(p, "relu8_NCHW2c@44"));
    assert_true(has_tensor(p, "relu8_NCHW2c@50"));
    assert_false(has_tensor(p, "relu8_NCHW2c"));
    tlsan_plan_free(p);
}

/* ---- synthetic graphs ---- */

static tlsan_plan *import_text(const char *json)
{
    tlsan_plan *p = NULL;
    tlsan_error err;
    char msg[1024];
    tlsan_status st = tlsan_import_tvm_buffer(json, strlen(json), "inline.json", &p, &err);
    if (st != TLSAN_OK)
        fail_msg("import: %s", tlsan_error_format(&err, msg, sizeof msg));
    return p;
}

/* Two nodes named "k" with two outputs each (NAME@INDEX:K), no node_row_ptr (entries
 * counted from num_outputs), integer num_outputs, 2-element input references, and the
 * integer and boolean dltypes. */
static void test_synthetic_graph(void **state)
{
    (void)state;
    const char *json =
        "{\"nodes\": ["
        " {\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
        " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 0]],"
        "  \"attrs\": {\"func_name\": \"f\", \"num_outputs\": 2, \"num_inputs\": \"1\"}},"
        " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[1, 1, 0], [1, 0, 0]],"
        "  \"attrs\": {\"func_name\": \"g\", \"num_outputs\": \"2\"}},"
        " {\"op\": \"tvm_op\", \"name\": \"r\", \"inputs\": [[2, 1, 0]],"
        "  \"attrs\": {\"func_name\": \"__nop\"}}],"
        " \"heads\": [[3, 0, 0], [2, 0, 0]],"
        " \"attrs\": {"
        "  \"storage_id\": [\"list_int\", [0, 1, 2, 3, 4, 3]],"
        "  \"dltype\": [\"list_str\", [\"int8\", \"uint8\", \"int64\", \"bool\", \"int32\","
        "   \"int32\"]],"
        "  \"shape\": [\"list_shape\", [[3, 5], [7], [2, 2], [], [10, 0], [0]]]}}";
    tlsan_plan *p = import_text(json);
    static const struct {
        const char *name;
        uint64_t bytes;
        tlsan_dtype dtype;
    } want[] = {
        {"x", 15, TLSAN_DTYPE_I8},    {"k@1", 7, TLSAN_DTYPE_U8},    {"k@1:1", 32, TLSAN_DTYPE_I64},
        {"k@2", 1, TLSAN_DTYPE_BOOL}, {"k@2:1", 0, TLSAN_DTYPE_I32}, {"r", 0, TLSAN_DTYPE_I32},
    };
    assert_int_equal(p->n_tensors, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(plan_str(p, p->tensors[i].name), want[i].name);
        assert_int_equal(p->tensors[i].bytes, want[i].bytes);
        assert_int_equal(p->tensors[i].dtype, want[i].dtype);
    }
    /* Slots 0..4: 15, 7, 32, 1 and 0 bytes, each at a multiple of 64. */
    static const uint64_t offsets[] = {0, 64, 128, 192, 256};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(p->tensors[i].offset_bytes, offsets[i]);
    assert_int_equal(p->arenas[0].bytes, 256);
    /* r reads k@2:1 (storage 4) but sits on storage 3: a root, not a view. */
    assert_int_not_equal(p->tensors[5].arena, NO_INDEX);
    assert_int_equal(p->tensors[5].offset_bytes, 192);
    assert_int_equal(p->tensors[5].flags, TLSAN_TENSOR_OUTPUT);
    assert_int_equal(p->tensors[3].flags, TLSAN_TENSOR_OUTPUT);
    assert_string_equal(tlsan_plan_op_name(p, 0), "k@1");
    assert_string_equal(tlsan_plan_op_name(p, 1), "k@2");
    assert_string_equal(tlsan_plan_op_name(p, 2), "r");
    static const char *const r1[] = {"k@1:1", "k@1"}, *const w1[] = {"k@2", "k@2:1"};
    assert_op_lists(p, 1, r1, 2, w1, 2);
    assert_string_equal(tlsan_plan_name(p), "inline");
    tlsan_plan_free(p);
}

/* Each entry and op knows where its node's object starts (line, column in characters, as the
 * plan reader counts), so reports point at the node; a later "nodes" key and an object nested
 * in a node are not taken for nodes. */
static void test_node_sources(void **state)
{
    (void)state;
    const char *json = "{\"attrs\": {\"storage_id\": [\"list_int\", [0, 1, 2]],\n"
                       "  \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\"]],\n"
                       "  \"shape\": [\"list_shape\", [[4], [4], [4]]]},\n"
                       " \"nodes\": [\n"
                       "  {\"op\": \"null\", \"name\": \"\xce\xb1\xce\xb2\", \"inputs\": []}, "
                       "{\"op\": \"tvm_op\", \"name\": \"f\", \"inputs\": [[0, 0, 0]],\n"
                       "   \"attrs\": {\"func_name\": \"f\"}},\n"
                       "    {\"op\": \"tvm_op\", \"name\": \"g\", \"inputs\": [[1, 0, 0]],"
                       " \"attrs\": {\"func_name\": \"g\"}}],\n"
                       " \"heads\": [[2, 0, 0]], \"nodes\": [{}]}";
    tlsan_plan *p = import_text(json);
    assert_int_equal(tlsan_plan_n_tensors(p), 3);
    /* The second node's '{' follows the first node on line 5: the Greek name is two
     * characters (four bytes), so it is column 47, not 49. */
    static const int tensor_at[3][2] = {{5, 3}, {5, 47}, {7, 5}};
    for (size_t t = 0; t < 3; t++) {
        int line = 0, column = 0;
        assert_true(tlsan_plan_tensor_source(p, t, &line, &column));
        assert_int_equal(line, tensor_at[t][0]);
        assert_int_equal(column, tensor_at[t][1]);
    }
    int line = 0, column = 0;
    assert_true(tlsan_plan_op_source(p, 0, &line, &column));
    assert_int_equal(line, 5);
    assert_int_equal(column, 47);
    assert_true(tlsan_plan_op_source(p, 1, &line, &column));
    assert_int_equal(line, 7);
    assert_int_equal(column, 5);
    tlsan_plan_free(p);
}

/* Malformed graphs: TLSAN_ERR_INVALID with the JSON path and a reason, never a crash. */
static void test_malformed(void **state)
{
    (void)state;
/* A valid two-node graph with one piece replaced. */
#define NODES_OK                                                                                   \
    "\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"                             \
    " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 0, 0]],"                              \
    "  \"attrs\": {\"func_name\": \"f\", \"num_outputs\": \"1\", \"num_inputs\": \"1\"}}]"
#define ATTRS_OK                                                                                   \
    "\"attrs\": {\"storage_id\": [\"list_int\", [0, 1]],"                                          \
    " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"                                     \
    " \"shape\": [\"list_shape\", [[4], [4]]]}"
#define HEADS_OK "\"heads\": [[1, 0, 0]]"
    static const struct {
        const char *json, *where, *what;
    } cases[] = {
        {"[]", "", "a TVM graph is a JSON object"},
        {"{" ATTRS_OK ", " HEADS_OK "}", "nodes", "needs 'nodes'"},
        {"{\"nodes\": {}, " ATTRS_OK ", " HEADS_OK "}", "nodes", "must be an array"},
        {"{\"nodes\": [7], " ATTRS_OK ", " HEADS_OK "}", "nodes[0]", "must be an object"},
        {"{\"nodes\": [{\"op\": \"conv\", \"name\": \"x\", \"inputs\": []}], " ATTRS_OK
         ", " HEADS_OK "}",
         "nodes[0].op", "unknown op"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"\", \"inputs\": []}], " ATTRS_OK ", " HEADS_OK
         "}",
         "nodes[0].name", "non-empty"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 0, 0]]}], " ATTRS_OK ", " HEADS_OK
         "}",
         "nodes[1].attrs", "needs 'attrs'"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 0, 0]], \"attrs\": "
         "{}}], " ATTRS_OK ", " HEADS_OK "}",
         "nodes[1].attrs.func_name", "func_name"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[5, 0, 0]],"
         " \"attrs\": {\"func_name\": \"f\"}}], " ATTRS_OK ", " HEADS_OK "}",
         "nodes[1].inputs[0][0]", "not an earlier node"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 1, 0]],"
         " \"attrs\": {\"func_name\": \"f\"}}], " ATTRS_OK ", " HEADS_OK "}",
         "nodes[1].inputs[0][1]", "no output 1"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, -1, 0]],"
         " \"attrs\": {\"func_name\": \"f\"}}], " ATTRS_OK ", " HEADS_OK "}",
         "nodes[1].inputs[0][1]", "integer >= 0"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [\"x\"],"
         " \"attrs\": {\"func_name\": \"f\"}}], " ATTRS_OK ", " HEADS_OK "}",
         "nodes[1].inputs[0]", "[node_id, output_index, version]"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 0, 0]],"
         " \"attrs\": {\"func_name\": \"f\", \"num_inputs\": \"2\"}}], " ATTRS_OK ", " HEADS_OK "}",
         "nodes[1].inputs", "1 inputs listed but attrs.num_inputs is 2"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"tvm_op\", \"name\": \"k\", \"inputs\": [[0, 0, 0]],"
         " \"attrs\": {\"func_name\": \"f\", \"num_outputs\": \"two\"}}], " ATTRS_OK ", " HEADS_OK
         "}",
         "nodes[1].attrs.num_outputs", "must be a count"},
        {"{" NODES_OK ", \"node_row_ptr\": [0, 1], " ATTRS_OK ", " HEADS_OK "}", "node_row_ptr",
         "2 values for 2 nodes"},
        {"{" NODES_OK ", \"node_row_ptr\": [0, 1, 3], " ATTRS_OK ", " HEADS_OK "}",
         "node_row_ptr[2]", "node 1 has 1 outputs, so its entries end at 2, not 3"},
        {"{" NODES_OK ", \"node_row_ptr\": [1, 2, 3], " ATTRS_OK ", " HEADS_OK "}",
         "node_row_ptr[0]", "must be 0"},
        {"{" NODES_OK ", " ATTRS_OK "}", "heads", "needs 'heads'"},
        {"{" NODES_OK ", " ATTRS_OK ", \"heads\": [[2, 0, 0]]}", "heads[0][0]",
         "node id 2 is out of range (the graph has 2 nodes)"},
        {"{" NODES_OK ", " HEADS_OK "}", "attrs", "needs 'attrs'"},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4]]]}}",
         "attrs", "attrs.storage_id"},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {\"storage_id\": [\"list_int\", [0, 1, 2]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4]]]}}",
         "attrs.storage_id[1]", "3 values for 2 entries"},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {\"storage_id\": [\"list_int\", [0, -1]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4]]]}}",
         "attrs.storage_id[1][1]", "integer >= 0"},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {\"storage_id\": [\"list_str\", [0, 1]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4]]]}}",
         "attrs.storage_id[0]", "\"list_int\""},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {\"storage_id\": [\"list_int\", [0, 1]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"complex64\"]],"
         " \"shape\": [\"list_shape\", [[4], [4]]]}}",
         "attrs.dltype[1][1]", "unknown dltype 'complex64'"},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {\"storage_id\": [\"list_int\", [0, 1]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4, 2.5]]]}}",
         "attrs.shape[1][1][1]", "integer >= 0"},
        {"{" NODES_OK ", " HEADS_OK ", \"attrs\": {\"storage_id\": [\"list_int\", [0, 1]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4294967296, 4294967296]]]}}",
         "attrs.shape[1][1]", "more than 2^63-1 bytes"},
        {"{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
         " {\"op\": \"null\", \"name\": \"x@1\", \"inputs\": []}], " HEADS_OK ", \"attrs\": {"
         " \"storage_id\": [\"list_int\", [0, 1, 2]],"
         " \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\"]],"
         " \"shape\": [\"list_shape\", [[4], [4], [4]]]}}",
         "nodes[2].name",
         "entry name 'x@1' (output 0 of node 2) is also the name of output 0 of node 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tlsan_plan *p = (tlsan_plan *)&p; /* must be reset to NULL */
        tlsan_error err;
        tlsan_status st =
            tlsan_import_tvm_buffer(cases[i].json, strlen(cases[i].json), "bad.json", &p, &err);
        if (st != TLSAN_ERR_INVALID || strcmp(err.where, cases[i].where) != 0 ||
            !strstr(err.what, cases[i].what) || strcmp(err.file, "bad.json") != 0)
            fail_msg("case %zu: status %d, where '%s', what '%s'; expected where '%s', what "
                     "containing '%s'",
                     i, (int)st, err.where, err.what, cases[i].where, cases[i].what);
        assert_null(p);
    }
#undef NODES_OK
#undef ATTRS_OK
#undef HEADS_OK
}

/* Syntax errors carry line and column (1-based) of the byte where parsing stopped; at the
 * end of the input, the column just past its last byte. */
static void test_syntax_errors(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int line, column;
    } cases[] = {
        {"{\"nodes\": [\n  {\"op\": @}\n]}", 2, 10},
        /* A parse error points at the last byte of the unexpected token ("null"). */
        {"{\"nodes\": [\n  {\"op\" \"null\"}]}", 2, 14},
        {"{\"nodes\": [", 1, 12},
        {"", 1, 1},
        {"{} {}", 1, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tlsan_plan *p = NULL;
        tlsan_error err;
        tlsan_status st =
            tlsan_import_tvm_buffer(cases[i].json, strlen(cases[i].json), "syn.json", &p, &err);
        assert_int_equal(st, TLSAN_ERR_INVALID);
        assert_null(p);
        assert_non_null(strstr(err.what, "malformed JSON"));
        if (err.line != cases[i].line || err.column != cases[i].column)
            fail_msg("case %zu: at %d:%d, expected %d:%d (%s)", i, err.line, err.column,
                     cases[i].line, cases[i].column, err.what);
        assert_string_equal(err.file, "syn.json");
    }
    /* Nesting deep enough to exhaust a recursive free is refused before any tree is built. */
    {
        size_t depth = 100000;
        char *deep = malloc(2 * depth);
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        tlsan_plan *p = NULL;
        tlsan_error err;
        assert_int_equal(tlsan_import_tvm_buffer(deep, 2 * depth, "deep.json", &p, &err),
                         TLSAN_ERR_INVALID);
        assert_non_null(strstr(err.what, "nested deeper than 256 levels"));
        assert_int_equal(err.line, 1);
        assert_int_equal(err.column, 257);
        free(deep);
    }
    /* An embedded NUL ends no string early: it is a syntax error, not a shorter document. */
    tlsan_plan *p = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_import_tvm_buffer("{}\0{", 4, "nul.json", &p, &err), TLSAN_ERR_INVALID);
    assert_null(p);
}

static void test_io_and_arg_errors(void **state)
{
    (void)state;
    tlsan_plan *p = NULL;
    tlsan_error err;
    const char *missing = "/nonexistent-dir/graph.json";
    assert_int_equal(tlsan_import_tvm_file(missing, &p, &err), TLSAN_ERR_IO);
    assert_null(p);
    assert_string_equal(err.file, missing);
    assert_non_null(strstr(err.what, "No such file"));
    assert_int_equal(tlsan_import_tvm_file(NULL, &p, &err), TLSAN_ERR_ARG);
    assert_int_equal(tlsan_import_tvm_buffer("{}", 2, "x", NULL, &err), TLSAN_ERR_ARG);

    const char *json = "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []}],"
                       " \"heads\": [[0, 0, 0]], \"attrs\": {"
                       " \"storage_id\": [\"list_int\", [0]],"
                       " \"dltype\": [\"list_str\", [\"float32\"]],"
                       " \"shape\": [\"list_shape\", [[4]]]}}";
    tvm_storage_override bad = {1, 0};
    tvm_import_options opt = {&bad, 1};
    assert_int_equal(tvm_import_buffer_ex(json, strlen(json), "o", &opt, &p, &err), TLSAN_ERR_ARG);
    assert_null(p);
    bad = (tvm_storage_override){0, -2};
    assert_int_equal(tvm_import_buffer_ex(json, strlen(json), "o", &opt, &p, &err), TLSAN_ERR_ARG);
    bad = (tvm_storage_override){0, 9};
    assert_int_equal(tvm_import_buffer_ex(json, strlen(json), "o", &opt, &p, &err), TLSAN_OK);
    assert_int_equal(p->tensors[0].offset_bytes, 0);
    tlsan_plan_free(p);
}

/* The file entry point reads the same thing as the buffer one. */
static void test_import_file(void **state)
{
    (void)state;
    tlsan_plan *p = NULL;
    tlsan_error err;
    char path[1100];
    snprintf(path, sizeof path, "%s/nonn__nonn_x86_wrn_fc.json", real_dir());
    assert_int_equal(tlsan_import_tvm_file(path, &p, &err), TLSAN_OK);
    assert_int_equal(p->n_tensors, 10);
    assert_string_equal(tlsan_plan_name(p), "nonn__nonn_x86_wrn_fc");
    tlsan_plan_free(p);
}

/* ---- checking: the real graphs are clean, mutations are caught exactly ---- */

/* A live-overlap pair, names in strcmp order. */
typedef struct name_pair {
    const char *a, *b;
} name_pair;

static name_pair make_pair(const char *x, const char *y)
{
    return strcmp(x, y) <= 0 ? (name_pair){x, y} : (name_pair){y, x};
}

static int cmp_pair(const void *x, const void *y)
{
    const name_pair *p = x, *q = y;
    int c = strcmp(p->a, q->a);
    return c ? c : strcmp(p->b, q->b);
}

/* Checks the plan; returns its live-overlap pairs sorted (malloc'd) and fails the test on
 * any finding of another kind. */
static name_pair *live_overlaps(const tlsan_plan *p, size_t *n_out, const char *context)
{
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check(p, NULL, &r), TLSAN_OK);
    size_t n = tlsan_report_count(r);
    name_pair *pairs = malloc((n ? n : 1) * sizeof *pairs);
    assert_non_null(pairs);
    for (size_t i = 0; i < n; i++) {
        const tlsan_finding *f = tlsan_report_finding(r, i);
        if (f->kind != TLSAN_KIND_LIVE_OVERLAP || f->n_tensors != 2)
            fail_msg("%s: unexpected finding %s: %s", context, tlsan_kind_name(f->kind),
                     f->message);
        /* Names point into the plan, which outlives the report. */
        pairs[i] = make_pair(f->tensors[0], f->tensors[1]);
    }
    tlsan_report_free(r);
    qsort(pairs, n, sizeof *pairs, cmp_pair);
    *n_out = n;
    return pairs;
}

static void assert_pairs(const name_pair *got, size_t n_got, name_pair *want, size_t n_want,
                         const char *context)
{
    if (n_want)
        qsort(want, n_want, sizeof *want, cmp_pair);
    bool same = n_got == n_want;
    for (size_t i = 0; same && i < n_got; i++)
        same = cmp_pair(&got[i], &want[i]) == 0;
    if (same)
        return;
    for (size_t i = 0; i < n_got; i++)
        print_message("  got  %s %s\n", got[i].a, got[i].b);
    for (size_t i = 0; i < n_want; i++)
        print_message("  want %s %s\n", want[i].a, want[i].b);
    fail_msg("%s: live-overlap pairs differ", context);
}

static void test_real_files_clean(void **state)
{
    (void)state;
    for (size_t f = 0; f < N_REAL_FILES; f++) {
        tlsan_plan *p = import_real(real_files[f].file, NULL);
        size_t n;
        name_pair *pairs = live_overlaps(p, &n, real_files[f].file);
        assert_pairs(pairs, n, NULL, 0, real_files[f].file);
        free(pairs);
        tlsan_plan_free(p);
    }
}

/* Hand-worked mutations of nonn__nonn_x86_wrn_fc.json. Its ops (steps) are relu0_NCHW8c (0),
 * _contrib_conv2d_nchwc0 (1), __mul_scalar__0 (2) and dense0 (3, the head); storage ids per
 * entry are [3, 4, 5, 0, 6, 1, 2, 7, 8, 1]: conv2d (live 1..2) and dense0 (3..4) share id 1. */
static void test_mutations_by_hand(void **state)
{
    (void)state;
    const char *file = "nonn__nonn_x86_wrn_fc.json";
    static const struct {
        size_t entry;
        int64_t storage_id;
        size_t n_pairs;
        const char *pairs[2][2];
    } cases[] = {
        /* __mul_scalar__0 (2..3) onto id 1: touches conv2d at 2 and dense0 at 3. */
        {6, 1, 2, {{"__mul_scalar__0", "_contrib_conv2d_nchwc0"}, {"__mul_scalar__0", "dense0"}}},
        /* relu0_NCHW8c (0..1) onto id 3, the graph input "0" (a constant, live -1..4). */
        {3, 3, 1, {{"0", "relu0_NCHW8c"}}},
        /* The parameter batch_norm0_gamma_mul_div_expand (constant) onto id 1. */
        {1,
         1,
         2,
         {{"_contrib_conv2d_nchwc0", "batch_norm0_gamma_mul_div_expand"},
          {"batch_norm0_gamma_mul_div_expand", "dense0"}}},
        /* Control: dense0 (3..4) onto id 0, whose relu0_NCHW8c (0..1) is dead by then. */
        {9, 0, 0, {{NULL, NULL}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tvm_storage_override ov = {cases[c].entry, cases[c].storage_id};
        tvm_import_options opt = {&ov, 1};
        tlsan_plan *p = import_real(file, &opt);
        size_t n;
        name_pair *got = live_overlaps(p, &n, file);
        name_pair want[2];
        for (size_t k = 0; k < cases[c].n_pairs; k++)
            want[k] = make_pair(cases[c].pairs[k][0], cases[c].pairs[k][1]);
        char context[128];
        snprintf(context, sizeof context, "%s, entry %zu onto storage id %" PRId64, file,
                 cases[c].entry, cases[c].storage_id);
        assert_pairs(got, n, want, cases[c].n_pairs, context);
        free(got);
        tlsan_plan_free(p);
    }
}

/* An independent, deliberately plain reading of a TVM graph for the expected pairs: entry
 * names, storage ids, element counts and lifetimes over tvm_op node order. It assumes a
 * well-formed file (the real ones) and shares no code with src/import/tvm.c. */
typedef struct ref_graph {
    size_t n_entries;
    int64_t *storage_id;
    uint64_t *elements;
    int64_t *first, *last; /* INT64_MAX / INT64_MIN: never accessed */
    char **name;
    size_t n_nodes;
    bool *is_op;
    size_t *row;         /* node -> first entry */
    size_t *first_input; /* op node -> its first input's entry, SIZE_MAX when none */
    bool has_nop;
} ref_graph;

static yajl_val ref_get(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val r = yajl_tree_get(v, path, yajl_t_any);
    assert_non_null(r);
    return r;
}

static void ref_touch(ref_graph *g, size_t e, int64_t step)
{
    if (step < g->first[e])
        g->first[e] = step;
    if (step > g->last[e])
        g->last[e] = step;
}

static void ref_load(ref_graph *g, const char *file)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", real_dir(), file);
    size_t len;
    char *text = slurp(path, &len);
    assert_non_null(text);
    char errbuf[256];
    yajl_val root = yajl_tree_parse(text, errbuf, sizeof errbuf);
    assert_non_null(root);
    yajl_val nodes = ref_get(root, "nodes"), rows = ref_get(root, "node_row_ptr");
    yajl_val attrs = ref_get(root, "attrs");
    yajl_val sids = ref_get(attrs, "storage_id")->u.array.values[1];
    yajl_val shapes = ref_get(attrs, "shape")->u.array.values[1];
    size_t n_nodes = nodes->u.array.len;
    memset(g, 0, sizeof *g);
    g->n_nodes = n_nodes;
    g->n_entries = sids->u.array.len;
    size_t ne = g->n_entries;
    g->storage_id = calloc(ne, sizeof *g->storage_id);
    g->elements = calloc(ne, sizeof *g->elements);
    g->first = calloc(ne, sizeof *g->first);
    g->last = calloc(ne, sizeof *g->last);
    g->name = calloc(ne, sizeof *g->name);
    g->is_op = calloc(n_nodes, sizeof *g->is_op);
    g->row = calloc(n_nodes + 1, sizeof *g->row);
    g->first_input = calloc(n_nodes, sizeof *g->first_input);
    for (size_t i = 0; i <= n_nodes; i++)
        g->row[i] = (size_t)YAJL_GET_INTEGER(rows->u.array.values[i]);
    for (size_t e = 0; e < ne; e++) {
        g->storage_id[e] = YAJL_GET_INTEGER(sids->u.array.values[e]);
        yajl_val s = shapes->u.array.values[e];
        g->elements[e] = 1;
        for (size_t k = 0; k < s->u.array.len; k++)
            g->elements[e] *= (uint64_t)YAJL_GET_INTEGER(s->u.array.values[k]);
        g->first[e] = INT64_MAX;
        g->last[e] = INT64_MIN;
    }
    int64_t n_steps = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        yajl_val nd = nodes->u.array.values[i];
        g->is_op[i] = strcmp(ref_get(nd, "op")->u.string, "tvm_op") == 0;
        n_steps += g->is_op[i];
    }
    /* Names: NAME, NAME@NODE when another node has the same name, then :K for K >= 1. */
    for (size_t i = 0; i < n_nodes; i++) {
        const char *nm = ref_get(nodes->u.array.values[i], "name")->u.string;
        bool dup = false;
        for (size_t j = 0; j < n_nodes && !dup; j++)
            dup = j != i && strcmp(nm, ref_get(nodes->u.array.values[j], "name")->u.string) == 0;
        for (size_t e = g->row[i]; e < g->row[i + 1]; e++) {
            char buf[512];
            int len2 = snprintf(buf, sizeof buf, "%s", nm);
            if (dup)
                len2 += snprintf(buf + len2, sizeof buf - (size_t)len2, "@%zu", i);
            if (e > g->row[i])
                snprintf(buf + len2, sizeof buf - (size_t)len2, ":%zu", e - g->row[i]);
            g->name[e] = strdup(buf);
        }
    }
    /* Lifetimes: constants at -1 and n, each op's reads and writes at its step, heads at n. */
    int64_t step = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        yajl_val nd = nodes->u.array.values[i];
        g->first_input[i] = SIZE_MAX;
        if (!g->is_op[i]) {
            for (size_t e = g->row[i]; e < g->row[i + 1]; e++) {
                ref_touch(g, e, -1);
                ref_touch(g, e, n_steps);
            }
            continue;
        }
        yajl_val func = ref_get(ref_get(nd, "attrs"), "func_name");
        if (strcmp(func->u.string, "__nop") == 0)
            g->has_nop = true;
        yajl_val inputs = ref_get(nd, "inputs");
        for (size_t k = 0; k < inputs->u.array.len; k++) {
            yajl_val in = inputs->u.array.values[k];
            size_t e = g->row[YAJL_GET_INTEGER(in->u.array.values[0])] +
                       (size_t)YAJL_GET_INTEGER(in->u.array.values[1]);
            if (k == 0)
                g->first_input[i] = e;
            ref_touch(g, e, step);
        }
        for (size_t e = g->row[i]; e < g->row[i + 1]; e++)
            ref_touch(g, e, step);
        step++;
    }
    yajl_val heads = ref_get(root, "heads");
    for (size_t k = 0; k < heads->u.array.len; k++) {
        yajl_val h = heads->u.array.values[k];
        ref_touch(g,
                  g->row[YAJL_GET_INTEGER(h->u.array.values[0])] +
                      (size_t)YAJL_GET_INTEGER(h->u.array.values[1]),
                  n_steps);
    }
    yajl_tree_free(root);
    free(text);
}

static void ref_free(ref_graph *g)
{
    for (size_t e = 0; e < g->n_entries; e++)
        free(g->name[e]);
    free(g->name);
    free(g->storage_id);
    free(g->elements);
    free(g->first);
    free(g->last);
    free(g->is_op);
    free(g->row);
    free(g->first_input);
}

/* Every real graph without __nop views is mutated: for (up to about 40, evenly spaced)
 * kernels whose output entry E and first input entry I have different storage ids, E is
 * moved onto I's storage id S (E and I are both accessed at that kernel's step, so at least
 * the pair {E, I} must be reported).
 *
 * Expected pairs, by brute force: {E, X} for every other entry X on S whose lifetime
 * [first access, last access] (constants -1..n, heads to n) intersects E's, unless X or E
 * holds no bytes. Why this is the spec's rule here: the imported plans have one path (no
 * branches), no loops, one stream under "sequential" (so no unordered-reuse), no in-place
 * declarations (so no bad-inplace), no views in these files (so an entry's accesses are its
 * root's), and every entry of a storage id is a root at the slot's offset, so two non-empty
 * entries of one storage id always share bytes and nothing else does. The unmutated graphs
 * are clean (test_real_files_clean), and the move changes no access, so every pair must
 * involve E, and slots are resized to hold E, so no out-of-bounds appears. */
static void test_mutations_all_files(void **state)
{
    (void)state;
    size_t total_mutations = 0, total_pairs = 0, multi_pair_mutations = 0;
    for (size_t f = 0; f < N_REAL_FILES; f++) {
        const char *file = real_files[f].file;
        ref_graph g;
        ref_load(&g, file);
        assert_int_equal(g.n_entries, real_files[f].n_entries);
        if (g.has_nop) {
            assert_int_equal(real_files[f].n_views, 1);
            ref_free(&g);
            continue;
        }
        size_t n_cands = 0;
        for (size_t i = 0; i < g.n_nodes; i++)
            n_cands += g.is_op[i] && g.first_input[i] != SIZE_MAX &&
                       g.storage_id[g.first_input[i]] != g.storage_id[g.row[i]];
        size_t stride = n_cands / 40 > 1 ? n_cands / 40 : 1;
        size_t cand = 0;
        for (size_t i = 0; i < g.n_nodes; i++) {
            if (!g.is_op[i] || g.first_input[i] == SIZE_MAX)
                continue;
            size_t e = g.row[i], in = g.first_input[i];
            if (g.storage_id[in] == g.storage_id[e])
                continue;
            if (cand++ % stride != 0)
                continue;
            int64_t s = g.storage_id[in];
            name_pair *want = malloc(g.n_entries * sizeof *want);
            size_t n_want = 0;
            for (size_t x = 0; x < g.n_entries; x++)
                if (x != e && g.storage_id[x] == s && g.elements[x] && g.elements[e] &&
                    !(g.last[x] < g.first[e] || g.last[e] < g.first[x]))
                    want[n_want++] = make_pair(g.name[e], g.name[x]);
            assert_true(n_want >= 1);

            tvm_storage_override ov = {e, s};
            tvm_import_options opt = {&ov, 1};
            tlsan_plan *p = import_real(file, &opt);
            size_t n_got;
            name_pair *got = live_overlaps(p, &n_got, file);
            char context[512];
            snprintf(context, sizeof context, "%s: entry %zu (%s) onto storage id %" PRId64, file,
                     e, g.name[e], s);
            assert_pairs(got, n_got, want, n_want, context);
            total_mutations++;
            total_pairs += n_want;
            multi_pair_mutations += n_want > 1;
            free(got);
            free(want);
            tlsan_plan_free(p);
        }
        ref_free(&g);
    }
    /* Totals of the same selection by the independent Python reading of the files. */
    assert_int_equal(total_mutations, 583);
    assert_int_equal(total_pairs, 1044);
    assert_int_equal(multi_pair_mutations, 366);
}

/* ---- the project's own graph: tests/tvm/mlp_graph.json ---- */

/* The plan worked out by hand from the graph. Entries (storage id, dtype, shape):
 * data (0, f32 1x8: 32 B), w0 (1, f32 8x8: 256 B), dense0 (2, 32 B), relu0 of node 3 (3,
 * 32 B), split0 and split0:1 (2 and 4, f32 1x4: 16 B), add0 (3, 16 B), reshape0 (3, the
 * __nop: a view of add0), relu0 of node 7 (2, f16 4: 8 B, the head). Slots by id, each as
 * large as its largest entry and padded to 64: 32, 256, 32, 32, 16 bytes at offsets 0, 64,
 * 320, 384, 448, so the arena is 512 bytes. Steps: dense0 0, relu0@3 1, split0 2, add0 3,
 * reshape0 4, relu0@7 5. */
static void test_own_graph_exact(void **state)
{
    (void)state;
    tlsan_plan *p = import_from(corpus_own_tvm(), "mlp_graph.json", NULL);
    assert_string_equal(tlsan_plan_name(p), "mlp_graph");
    assert_int_equal(tlsan_plan_n_arenas(p), 1);
    assert_string_equal(plan_str(p, p->arenas[0].name), "storage");
    assert_int_equal(p->arenas[0].bytes, 512);
    assert_int_equal(p->arenas[0].alignment_bytes, 64);
    static const struct {
        const char *name;
        uint64_t bytes, offset;
        unsigned flags;
        tlsan_dtype dtype;
    } want[] = {
        {"data", 32, 0, TLSAN_TENSOR_CONSTANT | TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT,
         TLSAN_DTYPE_F32},
        {"w0", 256, 64, TLSAN_TENSOR_CONSTANT | TLSAN_TENSOR_INPUT | TLSAN_TENSOR_OUTPUT,
         TLSAN_DTYPE_F32},
        {"dense0", 32, 320, 0, TLSAN_DTYPE_F32},
        {"relu0@3", 32, 384, 0, TLSAN_DTYPE_F32},
        {"split0", 16, 320, 0, TLSAN_DTYPE_F32},
        {"split0:1", 16, 448, 0, TLSAN_DTYPE_F32},
        {"add0", 16, 384, 0, TLSAN_DTYPE_F32},
        {"reshape0", 16, 0, 0, TLSAN_DTYPE_F32}, /* a view: offset 0 in add0 */
        {"relu0@7", 8, 320, TLSAN_TENSOR_OUTPUT, TLSAN_DTYPE_F16},
    };
    assert_int_equal(p->n_tensors, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < p->n_tensors; i++) {
        const tensor_rec *t = &p->tensors[i];
        assert_string_equal(plan_str(p, t->name), want[i].name);
        assert_int_equal(t->bytes, want[i].bytes);
        assert_int_equal(t->offset_bytes, want[i].offset);
        assert_int_equal(t->flags, want[i].flags);
        assert_int_equal(t->dtype, want[i].dtype);
    }
    uint32_t view = tensor_index(p, "reshape0");
    assert_int_equal(p->tensors[view].arena, NO_INDEX);
    assert_int_equal(p->tensors[view].view_of, tensor_index(p, "add0"));
    assert_int_equal(p->tensors[view].abs_offset_bytes, 384);
    assert_int_equal(plan_shape_rank(p, &p->tensors[view]), 1);
    assert_int_equal(plan_shape_dim(p, &p->tensors[view], 0), 4);
    assert_int_equal(count_slots(p), 5);

    static const char *const ops[] = {"dense0", "relu0@3", "split0", "add0", "reshape0", "relu0@7"};
    assert_int_equal(p->n_ops, 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(tlsan_plan_op_name(p, i), ops[i]);
    static const char *const r0[] = {"data", "w0"}, *const w0[] = {"dense0"};
    assert_op_lists(p, 0, r0, 2, w0, 1);
    static const char *const r2[] = {"relu0@3"}, *const w2[] = {"split0", "split0:1"};
    assert_op_lists(p, 2, r2, 1, w2, 2);
    static const char *const r3[] = {"split0", "split0:1"}, *const w3[] = {"add0"};
    assert_op_lists(p, 3, r3, 2, w3, 1);
    static const char *const r5[] = {"reshape0"}, *const w5[] = {"relu0@7"};
    assert_op_lists(p, 5, r5, 1, w5, 1);
    tlsan_plan_free(p);

    /* The file entry point reads the same. */
    char path[1100];
    tlsan_error err;
    snprintf(path, sizeof path, "%s/mlp_graph.json", corpus_own_tvm());
    assert_int_equal(tlsan_import_tvm_file(path, &p, &err), TLSAN_OK);
    assert_int_equal(p->n_tensors, 9);
    assert_string_equal(tlsan_plan_name(p), "mlp_graph");
    tlsan_plan_free(p);
}

/* The graph as planned is clean; each mutation moves one entry onto another storage id.
 * Lifetimes (steps, constants -1..6, the head to 6): dense0 0..1, relu0@3 1..2, split0 and
 * split0:1 2..3, add0 3..5 (its view reshape0 is written at 4 and read at 5), relu0@7
 * 5..6. */
static void test_own_graph_mutations(void **state)
{
    (void)state;
    static const struct {
        size_t entry;
        int64_t storage_id;
        size_t n_pairs;
        const char *pairs[2][2];
    } cases[] = {
        /* Unmutated (entry 0 stays on id 0). */
        {0, 0, 0, {{NULL, NULL}}},
        /* relu0@7 (5..6) onto id 3: add0 lives to 5 through the view read there. */
        {8, 3, 1, {{"add0", "relu0@7"}}},
        /* split0:1 (2..3) onto id 2: split0 is written by the same kernel. */
        {5, 2, 1, {{"split0", "split0:1"}}},
        /* dense0 (0..1) onto id 0, the constant data. */
        {2, 0, 1, {{"data", "dense0"}}},
        /* relu0@3 (1..2) onto id 2: dense0 is read at 1 and split0 written at 2. */
        {3, 2, 2, {{"dense0", "relu0@3"}, {"relu0@3", "split0"}}},
        /* relu0@7 (5..6) onto id 4, whose split0:1 is dead after step 3. */
        {8, 4, 0, {{NULL, NULL}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tvm_storage_override ov = {cases[c].entry, cases[c].storage_id};
        tvm_import_options opt = {&ov, 1};
        tlsan_plan *p = import_from(corpus_own_tvm(), "mlp_graph.json", &opt);
        size_t n;
        char context[128];
        snprintf(context, sizeof context, "mlp_graph.json, entry %zu onto storage id %" PRId64,
                 cases[c].entry, cases[c].storage_id);
        name_pair *got = live_overlaps(p, &n, context);
        name_pair want[2];
        for (size_t k = 0; k < cases[c].n_pairs; k++)
            want[k] = make_pair(cases[c].pairs[k][0], cases[c].pairs[k][1]);
        assert_pairs(got, n, want, cases[c].n_pairs, context);
        free(got);
        tlsan_plan_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest self_contained[] = {
        cmocka_unit_test(test_synthetic_graph),     cmocka_unit_test(test_node_sources),
        cmocka_unit_test(test_malformed),           cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_io_and_arg_errors),   cmocka_unit_test(test_own_graph_exact),
        cmocka_unit_test(test_own_graph_mutations),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_real_files_import), cmocka_unit_test(test_tinyyolov3_exact),
        cmocka_unit_test(test_nop_view),          cmocka_unit_test(test_duplicate_names),
        cmocka_unit_test(test_import_file),       cmocka_unit_test(test_real_files_clean),
        cmocka_unit_test(test_mutations_by_hand), cmocka_unit_test(test_mutations_all_files),
    };
    int rc = cmocka_run_group_tests_name("tvm_self_contained", self_contained, NULL, NULL);
    if (rc != 0)
        return rc;
    if (!have_real_files()) {
        fprintf(stderr,
                "note: no real TVM graphs at %s (the team's shared corpus); the additional check "
                "against them did not run\n",
                real_dir());
        return 0;
    }
    return cmocka_run_group_tests_name("tvm_real_graphs", real, NULL, NULL);
}
