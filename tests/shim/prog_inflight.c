/* prog_inflight.c - tensors released or reused while an op on another stream that accesses
 * them is still in flight, run by inflight.sh under the shim (and without it: the annotations
 * are no-ops).
 *
 * One arena of 4096 bytes. A worker thread runs the ops of stream 1 or 2: it begins the op,
 * lets the host act, and ends the op only after the host is done (semaphores make the
 * interleaving the same in every run). The mode (argv[1]):
 *   release     the worker's 'attn_2' (stream 1) reads 'kv' (bytes [1024, 2048)); the host
 *               releases 'kv' before 'attn_2' ends
 *   view-write  the worker's 'fill_1' (stream 2) writes view 'h_lo' (the first 256 bytes of
 *               'h', bytes [2048, 2560)); the host releases 'h' before 'fill_1' ends
 *   reuse       the worker's 'mm_3' (stream 1) reads 'x' (bytes [0, 512)) and releases it
 *               itself (its own stream's order), then the host binds 'y' over bytes [256, 768)
 *               before 'mm_3' ends
 *   clean       the same three ops, each waited for (an event) before the host releases or
 *               reuses their tensors; the worker's own release of 'x' after 'mm_3' */
#include "tlsan/tlsan.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES 4096

/* Not static: -rdynamic exports them, so report stacks name them; not inlined, so the
 * stacks start there (inflight.sh checks frame #0 and its line, found by the markers). */
__attribute__((noinline)) void bind_root(const char *name, size_t offset, size_t size,
                                         unsigned flags);
__attribute__((noinline)) void release_root(const char *name, size_t offset);
__attribute__((noinline)) uint64_t begin_op(const char *name, int stream, const char *read,
                                            const char *write);

static unsigned char *arena;

void bind_root(const char *name, size_t offset, size_t size, unsigned flags)
{
    tlsan_tensor_bind(arena, name, arena + offset, size, flags); /* LINE:bind */
}

void release_root(const char *name, size_t offset)
{
    tlsan_tensor_release(arena, name, arena + offset, 0); /* LINE:release */
}

/* Begins op `name` on `stream`, reading `read` and writing `write` (either NULL). */
uint64_t begin_op(const char *name, int stream, const char *read, const char *write)
{
    const char *reads[] = {read}, *writes[] = {write};
    tlsan_op_info op = {name, stream, reads, read ? 1 : 0, writes, write ? 1 : 0, NULL, 0};
    return tlsan_op_begin(&op); /* LINE:begin */
}

/* What the worker runs: one op over bytes [lo, hi), written or summed. */
struct job {
    const char *name, *read, *write, *release_own; /* release_own: released by the worker */
    int stream, event;                             /* event recorded after the op, or -1 */
    size_t lo, hi, release_offset;
    sem_t began, host_done;
};

static void *worker(void *p)
{
    struct job *j = p;
    uint64_t token = begin_op(j->name, j->stream, j->read, j->write); /* LINE:worker */
    volatile unsigned sum = 0;
    for (size_t i = j->lo; i < j->hi; i++) {
        if (j->write)
            arena[i] = (unsigned char)(i * 5 + 3);
        else
            sum += arena[i];
    }
    (void)sum;
    int in_flight = j->event < 0;
    if (j->release_own && in_flight)
        release_root(j->release_own, j->release_offset); /* LINE:own-release */
    sem_post(&j->began);
    if (in_flight)
        sem_wait(&j->host_done); /* the host acts while the op is in flight */
    tlsan_op_end(token);
    if (j->release_own && !in_flight)
        release_root(j->release_own, j->release_offset);
    if (!in_flight) {
        tlsan_event_record(j->event, j->stream);
        sem_post(&j->host_done);
    }
    return NULL;
}

/* Runs job j on a worker; host() runs while the op is in flight (or, with an event, after
 * the host waited for it). */
static int run(struct job *j, void (*host)(void))
{
    pthread_t th;
    sem_init(&j->began, 0, 0);
    sem_init(&j->host_done, 0, 0);
    if (pthread_create(&th, NULL, worker, j))
        return 1;
    sem_wait(&j->began);
    if (j->event >= 0) {
        sem_wait(&j->host_done); /* the worker recorded the event after the op's end */
        tlsan_event_wait(0, j->event);
        host();
    } else {
        host();
        sem_post(&j->host_done);
    }
    pthread_join(th, NULL);
    sem_destroy(&j->began);
    sem_destroy(&j->host_done);
    return 0;
}

static void host_release_kv(void)
{
    release_root("kv", 1024);
}

static void host_release_h(void)
{
    release_root("h", 2048);
}

static void host_bind_y(void)
{
    bind_root("y", 256, 512, 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    int clean = strcmp(mode, "clean") == 0;
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    memset(arena, 0, ARENA_BYTES);
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    bind_root("x", 0, 512, TLSAN_BIND_INPUT);
    bind_root("kv", 1024, 1024, TLSAN_BIND_INPUT);
    bind_root("h", 2048, 1024, 0);
    tlsan_view_bind("h_lo", "h", 0, 256);
    int rc = 0;
    struct job attn = {.name = "attn_2",
                       .read = "kv",
                       .stream = 1,
                       .event = clean ? 1 : -1,
                       .lo = 1024,
                       .hi = 2048};
    struct job fill = {.name = "fill_1",
                       .write = "h_lo",
                       .stream = 2,
                       .event = clean ? 2 : -1,
                       .lo = 2048,
                       .hi = 2304};
    struct job mm = {.name = "mm_3",
                     .read = "x",
                     .release_own = "x",
                     .stream = 1,
                     .event = clean ? 3 : -1,
                     .lo = 0,
                     .hi = 512,
                     .release_offset = 0};
    if (clean || strcmp(mode, "release") == 0)
        rc |= run(&attn, host_release_kv);
    if (clean || strcmp(mode, "view-write") == 0)
        rc |= run(&fill, host_release_h);
    if (clean || strcmp(mode, "reuse") == 0)
        rc |= run(&mm, host_bind_y);
    tlsan_arena_destroy(arena, ARENA_BYTES);
    free(arena);
    printf("prog_inflight: %s done\n", mode);
    return rc;
}
