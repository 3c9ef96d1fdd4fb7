/* prog_read_before_write.c - declared reads of tensors no op wrote since their bind, run by
 * read_before_write.sh under the shim (and without it: the annotations are no-ops).
 *
 * One arena of 4096 bytes. The mode (argv[1]):
 *   root    'acc' (bytes [1024, 2048)) is bound and read by 'matmul_2' before any op wrote it;
 *           'add_3' reads it too (the same tenant: no second report)
 *   view    'buf' (bytes [2048, 2304)) is bound with views 'buf_lo' [0, 128) and 'buf_hi'
 *           [128, 256); 'fill_lo' writes buf_lo, then 'use_hi' reads buf_hi (never written)
 *   rebind  'h' is written, read, released and bound again; 'relu_5' reads the new tenant
 *           before anything wrote it
 *   clean   'x' is bound as an input and read first; 'h' is written then read; 'buf' is
 *           written through both its views then read whole; 'y' is bound in place of 'h'
 *           (TLSAN_BIND_INPLACE) and read first */
#include "tlsan/tlsan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES 4096

/* Not static: -rdynamic exports them, so report stacks name them; not inlined, so the
 * stacks start there (read_before_write.sh checks frame #0). */
__attribute__((noinline)) void bind_root(const char *name, size_t offset, size_t size,
                                         unsigned flags);
__attribute__((noinline)) void run_op(const char *name, const char *read, const char *write,
                                      size_t out_offset, size_t n_bytes);

static unsigned char *arena;

void bind_root(const char *name, size_t offset, size_t size, unsigned flags)
{
    tlsan_tensor_bind(arena, name, arena + offset, size, flags);
}

/* One op reading `read` (NULL: nothing) and writing n_bytes at out_offset as `write` (NULL:
 * nothing: it reads only, summing the bytes it reads from out_offset). */
void run_op(const char *name, const char *read, const char *write, size_t out_offset,
            size_t n_bytes)
{
    const char *reads[] = {read}, *writes[] = {write};
    tlsan_op_info op = {name, 0, reads, read ? 1 : 0, writes, write ? 1 : 0, NULL, 0};
    uint64_t token = tlsan_op_begin(&op);
    volatile unsigned sum = 0;
    for (size_t i = 0; i < n_bytes; i++) {
        if (write)
            arena[out_offset + i] = (unsigned char)(i * 7 + 1);
        else
            sum += arena[out_offset + i];
    }
    (void)sum;
    tlsan_op_end(token);
}

static void release(const char *name, size_t offset, unsigned flags)
{
    tlsan_tensor_release(arena, name, arena + offset, flags);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    memset(arena, 0, ARENA_BYTES);
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    bind_root("x", 0, 1024, TLSAN_BIND_INPUT);
    if (strcmp(mode, "root") == 0) {
        bind_root("acc", 1024, 1024, 0);
        run_op("matmul_2", "acc", NULL, 1024, 1024);
        run_op("add_3", "acc", NULL, 1024, 1024);
        release("acc", 1024, 0);
    } else if (strcmp(mode, "view") == 0) {
        bind_root("buf", 2048, 256, 0);
        tlsan_view_bind("buf_lo", "buf", 0, 128);
        tlsan_view_bind("buf_hi", "buf", 128, 128);
        run_op("fill_lo", NULL, "buf_lo", 2048, 128);
        run_op("use_lo", "buf_lo", NULL, 2048, 128);
        run_op("use_hi", "buf_hi", NULL, 2176, 128);
        release("buf", 2048, 0);
    } else if (strcmp(mode, "rebind") == 0) {
        bind_root("h", 1024, 512, 0);
        run_op("mm_1", "x", "h", 1024, 512);
        run_op("relu_2", "h", NULL, 1024, 512);
        release("h", 1024, 0);
        bind_root("h", 1024, 512, 0);
        run_op("relu_5", "h", NULL, 1024, 512);
        release("h", 1024, 0);
    } else if (strcmp(mode, "clean") == 0) {
        run_op("load_x", "x", NULL, 0, 1024);
        bind_root("h", 1024, 512, 0);
        run_op("mm_1", "x", "h", 1024, 512);
        run_op("relu_2", "h", NULL, 1024, 512);
        bind_root("buf", 2048, 256, 0);
        tlsan_view_bind("buf_lo", "buf", 0, 128);
        tlsan_view_bind("buf_hi", "buf", 128, 128);
        run_op("fill_hi", NULL, "buf_hi", 2176, 128);
        run_op("fill_lo", NULL, "buf_lo", 2048, 128);
        run_op("sum_buf", "buf", NULL, 2048, 256);
        release("buf", 2048, 0);
        release("h", 1024, TLSAN_RELEASE_HANDOVER);
        bind_root("y", 1024, 512, TLSAN_BIND_INPLACE);
        run_op("use_y", "y", NULL, 1024, 512);
        release("y", 1024, 0);
    } else {
        fprintf(stderr, "prog_read_before_write: unknown mode '%s'\n", mode);
        return 2;
    }
    release("x", 0, 0);
    tlsan_arena_destroy(arena, ARENA_BYTES);
    free(arena);
    printf("prog_read_before_write: %s done\n", mode);
    return 0;
}
