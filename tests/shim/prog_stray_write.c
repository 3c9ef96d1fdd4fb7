/* prog_stray_write.c - a kernel that writes 64 bytes past its output into the next live
 * tensor, run by stray_write.sh under the shim with checksum=all (and without it: the
 * annotations are no-ops).
 *
 * One arena of 4096 bytes: 'x' (an input, bytes [0, 256)), 'c' ([1024, 1280)) and right after
 * it 'd' ([1280, 1536)). 'fill_d' writes 'd'; then 'gelu_2' reads 'x' and writes 'c', and
 * 'add_3' reads 'd'. The mode (argv[1]):
 *   stray    gelu_2's kernel writes 64 bytes past the end of 'c', over the first bytes of 'd'
 *   streams  the same, while 'copy_4' (stream 2, on a worker thread) reads 'x' and writes 'e'
 *            ([2048, 2304)) and is still in flight when gelu_2 ends
 *   clean    gelu_2 writes 'c' only (with copy_4 in flight, as in streams) */
#include "tlsan/tlsan.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES 4096
#define STRAY_BYTES 64

/* Not static: -rdynamic exports them, so report stacks name them; not inlined, so the
 * stacks start there (stray_write.sh checks frame #0 and its line, found by the markers). */
__attribute__((noinline)) void bind_root(const char *name, size_t offset, size_t size,
                                         unsigned flags);
__attribute__((noinline)) uint64_t begin_op(const char *name, int stream, const char *read,
                                            const char *write);

static unsigned char *arena;

void bind_root(const char *name, size_t offset, size_t size, unsigned flags)
{
    tlsan_tensor_bind(arena, name, arena + offset, size, flags); /* LINE:bind */
}

/* Begins op `name` on `stream`, reading `read` and writing `write` (either NULL). */
uint64_t begin_op(const char *name, int stream, const char *read, const char *write)
{
    const char *reads[] = {read}, *writes[] = {write};
    tlsan_op_info op = {name, stream, reads, read ? 1 : 0, writes, write ? 1 : 0, NULL, 0};
    return tlsan_op_begin(&op); /* LINE:begin */
}

/* Op `name` writes n_bytes at `offset` (its output, and past it for a stray kernel). */
static void run_op(const char *name, const char *read, const char *write, size_t offset,
                   size_t n_bytes)
{
    uint64_t token = begin_op(name, 0, read, write);
    for (size_t i = 0; i < n_bytes; i++)
        arena[offset + i] = (unsigned char)(i * 3 + (unsigned char)name[0]); /* each op its own */
    tlsan_op_end(token);
}

static sem_t began, host_done;

static void *copy_worker(void *unused)
{
    (void)unused;
    uint64_t token = begin_op("copy_4", 2, "x", "e"); /* LINE:copy */
    memcpy(arena + 2048, arena, 256);
    sem_post(&began);
    sem_wait(&host_done); /* in flight while the host runs gelu_2 */
    tlsan_op_end(token);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    int stray = strcmp(mode, "clean") != 0, with_copy = strcmp(mode, "stray") != 0;
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    memset(arena, 0, ARENA_BYTES);
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    bind_root("x", 0, 256, TLSAN_BIND_INPUT);
    for (int i = 0; i < 256; i++) /* the host fills its input */
        arena[i] = (unsigned char)i;
    bind_root("c", 1024, 256, 0);
    bind_root("d", 1280, 256, 0); /* LINE:bind-d */
    bind_root("e", 2048, 256, 0);
    run_op("fill_d", NULL, "d", 1280, 256); /* LINE:fill */
    pthread_t th;
    sem_init(&began, 0, 0);
    sem_init(&host_done, 0, 0);
    if (with_copy) {
        if (pthread_create(&th, NULL, copy_worker, NULL))
            return 1;
        sem_wait(&began);
    }
    run_op("gelu_2", "x", "c", 1024, 256 + (stray ? STRAY_BYTES : 0)); /* LINE:gelu */
    if (with_copy) {
        sem_post(&host_done);
        pthread_join(th, NULL);
    }
    run_op("add_3", "d", "e", 2048, 0);
    unsigned sum = 0;
    for (int i = 1280; i < 1536; i++)
        sum += arena[i];
    tlsan_arena_destroy(arena, ARENA_BYTES);
    free(arena);
    printf("prog_stray_write: %s done, sum of d %u\n", mode, sum);
    return 0;
}
