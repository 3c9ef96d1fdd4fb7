/* finding: each run-time finding's constructor and report, exactly: the headline, the lines
 * that say what happened, the SUMMARY. Stacks are depot id 0 ("(no stack)"), so every line is
 * known. The ggml graph cause is covered here too (ggml.sh needs ggml's headers and models). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/finding.h"
#include "out.h"
#include "shim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int log_fd = -1;

static char *log_text(void)
{
    static char buf[1 << 15];
    ssize_t n = pread(log_fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

static int reset(void **state)
{
    (void)state;
    assert_int_equal(ftruncate(log_fd, 0), 0);
    lseek(log_fd, 0, SEEK_SET);
    return 0;
}

static void has(const char *line)
{
    const char *log = log_text();
    if (!strstr(log, line))
        fail_msg("missing:\n%s\nin:\n%s", line, log);
}

static void use_after_release_through_a_rebound_view(void **state)
{
    (void)state;
    struct finding f;
    struct use_after_release *v =
        finding_use_after_release(&f, (struct finding_tensor){"kv", 0, 256, 512}, "a0", 0,
                                  MOMENT_READ, (struct finding_call){"attn", 0});
    v->view = "k";
    v->root_rebound = true;
    finding_report(&f);
    has("ERROR: tlsan: use-after-release on tensor 'k'\n"
        "  op 'attn' reads view 'k' of 'kv', whose storage root was released and bound again "
        "since the view was declared\n"
        "read by op 'attn' at:\n    (no stack)\n"
        "storage root bound again at:\n    (no stack)\n"
        "SUMMARY: tlsan: use-after-release k (released, read by op 'attn')\n");
}

static void live_corruption_overwritten(void **state)
{
    (void)state;
    struct finding f;
    struct live_corruption *v =
        finding_live_corruption(&f, CORRUPTION_OVERWRITTEN, (struct finding_tensor){"h1", 0, 0, 64},
                                "a0", MOMENT_READ, (struct finding_call){"add", 0});
    v->last_writer = (struct finding_call){"mm", 0};
    v->overwriter = (struct finding_tensor){"tmp", 0, 32, 96};
    v->overwriting_op = (struct finding_call){"scale", 0};
    finding_report(&f);
    has("ERROR: tlsan: live-corruption on tensor 'h1' in arena 'a0' bytes [0, 64)\n"
        "  op 'scale' wrote 'tmp' (bytes [32, 96)) over 'h1' while 'h1' was still live; op 'add' "
        "reads it afterwards\n"
        "last written by op 'mm' at:\n");
    has("SUMMARY: tlsan: live-corruption h1 (last written by op 'mm', read by 'add', overlapped "
        "by 'tmp')\n");
}

static void live_corruption_by_checksum_at_release(void **state)
{
    (void)state;
    struct finding f;
    struct live_corruption *v =
        finding_live_corruption(&f, CORRUPTION_CHECKSUM, (struct finding_tensor){"o", 0, 64, 128},
                                "a0", MOMENT_RELEASE, (struct finding_call){NULL, 0});
    v->checksum_before = 0x1234;
    v->checksum_after = 0xabcd;
    finding_report(&f);
    has("  its bytes changed with no write of its own: checksum 0000000000001234 after its last "
        "write, 000000000000abcd when it was released\n"
        "  no other live tensor shares its bytes: a write outside any declared tensor, or by an "
        "op that did not declare it\n"
        "  not written by any op since its bind (an input, or written by the host)\n"
        "released at:\n");
    has("SUMMARY: tlsan: live-corruption o (not written by an op, at its release)\n");
}

static void live_corruption_in_a_ggml_graph(void **state)
{
    (void)state;
    struct finding f;
    struct live_corruption *v = finding_live_corruption(
        &f, CORRUPTION_GRAPH_CHECKSUM, (struct finding_tensor){"v", 0, 1024, 2048}, "CPU",
        MOMENT_READ, (struct finding_call){NULL, 0});
    v->checksum_before = 1;
    v->checksum_after = 2;
    v->graph.name = "ggml graph 'a' .. 'z' (27 nodes)";
    v->graph.n_nodes = 27;
    v->graph.reader_node = 16;
    v->graph.last_write = (struct finding_node_write){3, "MUL_MAT", "v", 0, 0};
    v->graph.overwrites[0] = (struct finding_node_write){12, "MUL_MAT", "kq", 1536, 2048};
    v->graph.n_overwrites = v->graph.n_overwrites_total = 1;
    finding_report(&f);
    has("ERROR: tlsan: live-corruption on tensor 'v' in arena 'CPU' bytes [1024, 2048) in ggml "
        "graph 'a' .. 'z' (27 nodes)\n"
        "  its bytes changed with no write of its own: checksum 0000000000000001 after its last "
        "write, 0000000000000002 before node 16 reads it\n"
        "  last written by node 3: MUL_MAT writing 'v'\n"
        "  overwritten by node 12 (MUL_MAT) writing 'kq' over bytes [1536, 2048)\n"
        "graph computed at:\n    (no stack)\n"
        "SUMMARY: tlsan: live-corruption 'v' in ggml graph 'a' .. 'z' (27 nodes) (overwritten by "
        "'kq')\n");
}

static void stale_write_and_slot_overflow_show_the_bytes(void **state)
{
    (void)state;
    struct finding_bytes bytes = {.arena_base = 0x1000, .offset = 100, .n_shown = 2};
    bytes.expected[0] = 0xfe;
    bytes.expected[1] = 0x7f;
    struct finding f;
    struct stale_write *v =
        finding_stale_write(&f, (struct finding_tensor){"h4", 0, 64, 128}, "a0", &bytes);
    v->previous[v->n_previous++] = (struct finding_tensor){NULL, 0, 96, 128};
    finding_report(&f);
    has("ERROR: tlsan: stale-write at arena 'a0' offset 100 (address 0x1064)\n"
        "  released bytes changed before their next tenant 'h4' was bound:\n"
        "  expected the sentinel fe 7f\n"
        "  found                 00 00\n"
        "  bytes [96, 128) had no tenant since the arena was created\n");
    has("SUMMARY: tlsan: stale-write at a0+100 (released by '(never bound)', rebound as 'h4')\n");
    bytes.offset = 130;
    finding_slot_overflow(&f, (struct finding_tensor){"h1", 0, 64, 128}, "a0",
                          (struct finding_call){"mm", 0}, &bytes);
    finding_report(&f);
    has("ERROR: tlsan: slot-overflow on tensor 'h1' in arena 'a0'\n"
        "  op 'mm' wrote past the end of 'h1' (bytes [64, 128), 64 bytes planned): byte 130 "
        "(address 0x1082) is 3 bytes past its end\n");
    has("SUMMARY: tlsan: slot-overflow h1 (64 bytes planned, written by op 'mm')\n");
}

static void read_before_write_of_a_root_and_of_a_view(void **state)
{
    (void)state;
    struct finding f;
    finding_read_before_write(&f, (struct finding_tensor){"acc", 0, 1024, 2048}, "a0",
                              (struct finding_call){"matmul_2", 0});
    finding_report(&f);
    has("ERROR: tlsan: read-before-write on tensor 'acc'\n"
        "  op 'matmul_2' reads 'acc' (arena 'a0', bytes [1024, 2048)), which no op wrote since "
        "its bind and which is not an input\n"
        "  its bytes still hold the previous tenant's data or the sentinel\n");
    has("SUMMARY: tlsan: read-before-write acc (not written since its bind, read by op "
        "'matmul_2')\n");
    struct read_before_write *v =
        finding_read_before_write(&f, (struct finding_tensor){"buf", 0, 2048, 2304}, "a0",
                                  (struct finding_call){"use_hi", 0});
    v->view = "buf_hi";
    v->lo = 2176;
    finding_report(&f);
    has("ERROR: tlsan: read-before-write on tensor 'buf_hi'\n"
        "  op 'use_hi' reads view 'buf_hi' of 'buf' (arena 'a0', bytes [2176, 2304)), which no "
        "op wrote since 'buf' was bound and which is not an input\n");
    has("SUMMARY: tlsan: read-before-write buf_hi (not written since 'buf' was bound, read by "
        "op 'use_hi')\n");
}

static void use_after_release_while_in_flight(void **state)
{
    (void)state;
    struct finding f;
    struct use_after_release *v =
        finding_use_after_release(&f, (struct finding_tensor){"kv", 0, 1024, 2048}, "a0", 0,
                                  MOMENT_READ, (struct finding_call){"attn_2", 0});
    v->in_flight = true;
    v->stream = 1;
    finding_report(&f);
    has("ERROR: tlsan: use-after-release on tensor 'kv'\n"
        "  op 'attn_2' (stream 1) reads 'kv' (arena 'a0', bytes [1024, 2048)) and was still in "
        "flight when it was released\n"
        "  no event or sync orders the op's end before the release\n"
        "read by op 'attn_2' (in flight) at:\n    (no stack)\n"
        "released at:\n    (no stack)\n"
        "bound at:\n    (no stack)\n"
        "SUMMARY: tlsan: use-after-release kv (released while op 'attn_2' on stream 1 reads it)\n");
    v = finding_use_after_release(&f, (struct finding_tensor){"h", 0, 2048, 3072}, "a0", 0,
                                  MOMENT_WRITE, (struct finding_call){"fill_1", 0});
    v->in_flight = true;
    v->stream = 2;
    v->view = "h_lo";
    finding_report(&f);
    has("ERROR: tlsan: use-after-release on tensor 'h_lo'\n"
        "  op 'fill_1' (stream 2) writes view 'h_lo' of 'h' ('h': arena 'a0', bytes [2048, "
        "3072)) and was still in flight when 'h' was released\n"
        "  no event or sync orders the op's end before the release\n"
        "written by op 'fill_1' (in flight) at:\n");
    has("SUMMARY: tlsan: use-after-release h_lo (released while op 'fill_1' on stream 2 writes "
        "it)\n");
}

static void unordered_reuse_while_in_flight(void **state)
{
    (void)state;
    struct finding f;
    struct unordered_reuse *v = finding_unordered_reuse(
        &f, (struct finding_tensor){"x", 0, 0, 512}, (struct finding_tensor){"y", 0, 256, 768},
        "a0", MOMENT_READ, (struct finding_call){"mm_3", 0}, 1);
    finding_report(&f);
    has("ERROR: tlsan: unordered-reuse between 'x' and 'y' in arena 'a0'\n"
        "  'y' (bytes [256, 768)) was bound over bytes of released 'x' while op 'mm_3' (stream "
        "1), which reads 'x' (bytes [0, 512)), was still in flight\n"
        "  no event or sync orders the op's end before the reuse\n"
        "read by op 'mm_3' (in flight) at:\n    (no stack)\n"
        "'y' (bytes [256, 768)) new tenant, bound at:\n    (no stack)\n"
        "previous tenant released at:\n    (no stack)\n"
        "'x' (bytes [0, 512)) previous tenant, bound at:\n    (no stack)\n"
        "SUMMARY: tlsan: unordered-reuse 'x' and 'y' in arena 'a0' ('y' bound over 'x' while op "
        "'mm_3' on stream 1 reads it)\n");
}

static void live_corruption_found_at_an_op_end(void **state)
{
    (void)state;
    struct finding f;
    struct live_corruption *v = finding_live_corruption(
        &f, CORRUPTION_CHECKSUM, (struct finding_tensor){"d", 0, 1280, 1536}, "a0", MOMENT_OP_END,
        (struct finding_call){"gelu_2", 0});
    v->checksum_before = 0x1234;
    v->checksum_after = 0xabcd;
    v->last_writer = (struct finding_call){"fill_d", 0};
    v->by_stream = 1;
    v->in_flight[v->n_in_flight++] = (struct finding_op){{"copy_4", 0}, 2};
    finding_report(&f);
    has("ERROR: tlsan: live-corruption on tensor 'd' in arena 'a0' bytes [1280, 1536)\n"
        "  its bytes changed with no write of its own: checksum 0000000000001234 after its last "
        "write, 000000000000abcd at the end of op 'gelu_2'\n"
        "  they changed while op 'gelu_2' (stream 1) ran, or before it began and after they were "
        "last verified (every op's end verifies the live tensors)\n"
        "  1 other op was in flight then, which may have written them too\n"
        "  no other live tensor shares its bytes: a write outside any declared tensor, or by an "
        "op that did not declare it\n"
        "last written by op 'fill_d' at:\n    (no stack)\n"
        "changed while op 'gelu_2' ran, begun at:\n    (no stack)\n"
        "op 'copy_4' (stream 2, in flight) begun at:\n    (no stack)\n"
        "'d' (bytes [1280, 1536)) bound at:\n    (no stack)\n"
        "SUMMARY: tlsan: live-corruption d (last written by op 'fill_d', changed while 'gelu_2' "
        "ran)\n");
}

int main(void)
{
    char dir[64] = "/tmp/tlsan_test_finding.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("TLSAN_OPTIONS", "exitcode=0:trace=0", 1);
    shim_init();
    if (!shim_active()) {
        printf("SKIP: the shim did not start\n");
        return 77;
    }
    char log_path[128];
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    log_fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (log_fd < 0)
        return 1;
    out_set_fd(log_fd);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(use_after_release_through_a_rebound_view, reset),
        cmocka_unit_test_setup(live_corruption_overwritten, reset),
        cmocka_unit_test_setup(live_corruption_by_checksum_at_release, reset),
        cmocka_unit_test_setup(live_corruption_in_a_ggml_graph, reset),
        cmocka_unit_test_setup(stale_write_and_slot_overflow_show_the_bytes, reset),
        cmocka_unit_test_setup(read_before_write_of_a_root_and_of_a_view, reset),
        cmocka_unit_test_setup(use_after_release_while_in_flight, reset),
        cmocka_unit_test_setup(unordered_reuse_while_in_flight, reset),
        cmocka_unit_test_setup(live_corruption_found_at_an_op_end, reset),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    close(log_fd);
    unlink(log_path);
    rmdir(dir);
    return rc;
}
