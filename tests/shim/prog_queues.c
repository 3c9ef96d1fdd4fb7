/* prog_queues.c - a correct engine of real queues, annotated with tlsan.h (version 2): host
 * ops on main and three worker streams fed by the host, views and in-place ops, run for many
 * iterations in one arena without a single tlsan_host_sync() (queues.sh, issue 12).
 *
 * Three persistent worker threads, one per stream (1, 2, 3), each with a FIFO of jobs the
 * host enqueues. One iteration:
 *   host    binds x at [0, 3072), fills it (host_write); binds a0..a2 in the slots, and b0..b2
 *           in place over them (tlsan_bind_inplace)
 *   host    enqueues job k (k = 0..2) on stream 1 + (k + it) % 3: the stream that writes a
 *           slot's bytes changes every iteration, so the next iteration's tenant of a slot is
 *           written by another stream than the one that wrote the last
 *   stream  mm_k reads the view xk (xk = x's k-th third, declared once) and writes ak;
 *           relu_k computes bk in place over ak; records event k + 1
 *   host    waits for the three events (tlsan_event_wait on main), releases x; binds y over
 *           x's bytes; host op mix reads the views bvk (the first half of each bk, declared
 *           once) and writes y; copies y out (host_read); releases a0..a2 (handing their
 *           bytes to b0..b2), b0..b2 and y
 * The next iteration's x lands on y's bytes and its a, b on the slots again. Nothing orders a
 * host op before a later stream op but the queue itself: the host enqueued the stream's work
 * after the host op ended (host program order, enqueue, stream order, as in CUDA). So the
 * run is clean at run time and in replay, with no host sync.
 *
 * argv[1]: clean, or no-wait (the host leaves out the wait for the event of job 0 in every
 * iteration, though it still waits for the job's thread, so the run's values do not change:
 * found only by replay); argv[2]: iterations (default 10000).
 * Prints a checksum of every y, the same under the shim as without it. */
#include "tlsan/tlsan.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAMS     3
#define N           256 /* floats of a slot */
#define X_BYTES     (STREAMS * N * (int)sizeof(float))
#define SLOT_BYTES  (N * (int)sizeof(float))
#define ARENA_BYTES (X_BYTES + STREAMS * SLOT_BYTES)
#define QUEUE_LEN   4

struct job {
    int k, stream;
    tlsan_tensor xk, a, b;
    float *x, *slot;
};

/* One stream: a FIFO of jobs run in order by its own thread (a job NULL stops it). */
struct queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct job *jobs[QUEUE_LEN];
    int head, n;
    int stream;
    pthread_t thread;
};

static unsigned char *arena;
static struct queue queues[STREAMS];
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int jobs_done;
/* The views, declared once in the first iteration; they follow their roots' later binds. */
static tlsan_tensor xv[STREAMS], bv[STREAMS];
static const char *const x_views[STREAMS] = {"x0", "x1", "x2"};
static const char *const a_names[STREAMS] = {"a0", "a1", "a2"};
static const char *const b_names[STREAMS] = {"b0", "b1", "b2"};
static const char *const b_views[STREAMS] = {"bv0", "bv1", "bv2"};
static const char *const mm_names[STREAMS] = {"mm_0", "mm_1", "mm_2"};
static const char *const relu_names[STREAMS] = {"relu_0", "relu_1", "relu_2"};

static void run_job(const struct job *j)
{
    TLSAN_OP_SCOPE(mm_names[j->k], j->stream, TLSAN_READS(j->xk), TLSAN_WRITES(j->a))
    {
        for (int i = 0; i < N; i++)
            j->slot[i] = j->x[i] * (float)(j->k + 1) - 1.f;
    }
    TLSAN_OP_SCOPE(relu_names[j->k], j->stream, TLSAN_READS(j->a), TLSAN_WRITES(j->b))
    {
        for (int i = 0; i < N; i++)
            j->slot[i] = j->slot[i] > 0 ? j->slot[i] : 0;
    }
    tlsan_event_record(j->k + 1, j->stream);
}

static void *worker(void *arg)
{
    struct queue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->n == 0)
            pthread_cond_wait(&q->cond, &q->lock);
        struct job *j = q->jobs[q->head];
        q->head = (q->head + 1) % QUEUE_LEN;
        q->n--;
        pthread_mutex_unlock(&q->lock);
        if (!j)
            return NULL;
        run_job(j);
        pthread_mutex_lock(&done_lock);
        jobs_done++;
        pthread_cond_signal(&done_cond);
        pthread_mutex_unlock(&done_lock);
    }
}

static void enqueue(struct queue *q, struct job *j)
{
    pthread_mutex_lock(&q->lock);
    q->jobs[(q->head + q->n) % QUEUE_LEN] = j;
    q->n++;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

static uint64_t iteration(int it, bool no_wait)
{
    float *x = (float *)arena;
    tlsan_tensor xt = tlsan_bind(arena, "x", arena, X_BYTES, 0);
    for (int i = 0; i < STREAMS * N; i++)
        x[i] = (float)((i * 7 + it) % 23) / 8.f;
    tlsan_host_write(xt);
    if (it == 0)
        for (int k = 0; k < STREAMS; k++)
            xv[k] = tlsan_view(x_views[k], xt, (size_t)k * SLOT_BYTES, SLOT_BYTES);

    struct job jobs[STREAMS];
    for (int k = 0; k < STREAMS; k++) {
        unsigned char *slot = arena + X_BYTES + k * SLOT_BYTES;
        tlsan_tensor a = tlsan_bind(arena, a_names[k], slot, SLOT_BYTES, 0);
        tlsan_tensor b = tlsan_bind_inplace(b_names[k], a, 0);
        if (it == 0)
            bv[k] = tlsan_view(b_views[k], b, 0, SLOT_BYTES / 2);
        jobs[k] = (struct job){k, 1 + (k + it) % STREAMS, xv[k], a, b, x + k * N, (float *)slot};
    }
    pthread_mutex_lock(&done_lock);
    jobs_done = 0;
    pthread_mutex_unlock(&done_lock);
    for (int k = 0; k < STREAMS; k++)
        enqueue(&queues[jobs[k].stream - 1], &jobs[k]);
    pthread_mutex_lock(&done_lock);
    while (jobs_done < STREAMS)
        pthread_cond_wait(&done_cond, &done_lock);
    pthread_mutex_unlock(&done_lock);
    for (int k = no_wait ? 1 : 0; k < STREAMS; k++)
        tlsan_event_wait(0, k + 1);
    tlsan_release(xt);

    float *y = (float *)arena;
    tlsan_tensor yt = tlsan_bind(arena, "y", arena, N / 2 * sizeof(float), 0);
    TLSAN_OP_SCOPE("mix", 0, TLSAN_READS(bv[0], bv[1], bv[2]), TLSAN_WRITES(yt))
    {
        for (int i = 0; i < N / 2; i++)
            y[i] = jobs[0].slot[i] + 2 * jobs[1].slot[i] + 3 * jobs[2].slot[i];
    }
    tlsan_host_read(yt);
    uint64_t sum = 0;
    for (int i = 0; i < N / 2; i++)
        sum = sum * 1000003u + (uint64_t)(y[i] * 8.f);
    for (int k = 0; k < STREAMS; k++)
        tlsan_release(jobs[k].a);
    for (int k = 0; k < STREAMS; k++)
        tlsan_release(jobs[k].b);
    tlsan_release(yt);
    return sum;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    long iterations = argc > 2 ? strtol(argv[2], NULL, 10) : 10000;
    if ((strcmp(mode, "clean") != 0 && strcmp(mode, "no-wait") != 0) || iterations < 1) {
        fprintf(stderr, "usage: prog_queues clean|no-wait [ITERATIONS]\n");
        return 2;
    }
    arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    for (int s = 0; s < STREAMS; s++) {
        struct queue *q = &queues[s];
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        q->stream = s + 1;
        pthread_create(&q->thread, NULL, worker, q);
    }
    uint64_t sum = 0;
    for (long it = 0; it < iterations; it++)
        sum = sum * 31 + iteration((int)it, !strcmp(mode, "no-wait"));
    for (int s = 0; s < STREAMS; s++) {
        enqueue(&queues[s], NULL);
        pthread_join(queues[s].thread, NULL);
    }
    tlsan_arena_destroy(arena, ARENA_BYTES);
    free(arena);
    printf("prog_queues: %s, %ld iterations, checksum %016llx\n", mode, iterations,
           (unsigned long long)sum);
    return 0;
}
