/* fork_threads: fork() latency from a multi-threaded program (bench/shim.sh, issue 9 part 6).
 *
 * T worker threads (default 8) each keep a ring of 256 small blocks and replace blocks (malloc,
 * write, free) in bursts of 256 with a 1 ms sleep between bursts, until told to stop: a thread
 * pool at work, the allocator busy and its locks often held when the main thread forks, yet
 * the 2-core machine not so oversubscribed that the scheduler alone decides the figure. The main
 * thread forks F times (default 200); each child exits at once with _exit(0) and the parent waits
 * for it. Prints the median and the mean of the time fork() took in the parent (the parent's
 * cost: the fork handlers and the copy of the address space), and of fork + waitpid.
 *
 * HOLD_MB, when given, is that many MiB allocated and written before the forks and held:
 * a native program with the resident memory the shim's quarantine holds.
 *
 * usage: tlsan_fork_threads [THREADS] [FORKS] [HOLD_MB] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RING 256

static atomic_int g_stop;
static atomic_int g_ready;

static void *worker(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg * 2654435761u + 1;
    static _Thread_local unsigned char *ring[RING];
    atomic_fetch_add(&g_ready, 1);
    for (unsigned long i = 0; !atomic_load_explicit(&g_stop, memory_order_relaxed); i++) {
        if (i % RING == 0 && i) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t slot = i % RING, size = 16 + (s >> 33) % 241;
        free(ring[slot]);
        ring[slot] = malloc(size);
        if (ring[slot])
            memset(ring[slot], (int)i, size);
    }
    for (size_t k = 0; k < RING; k++)
        free(ring[k]);
    return NULL;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int n_threads = argc > 1 ? atoi(argv[1]) : 8;
    int n_forks = argc > 2 ? atoi(argv[2]) : 200;
    long hold_mb = argc > 3 ? atol(argv[3]) : 0;
    if (n_threads < 0 || n_threads > 256 || n_forks < 1 || n_forks > 100000) {
        fprintf(stderr, "usage: tlsan_fork_threads [THREADS 0..256] [FORKS 1..100000]\n");
        return 2;
    }
    pthread_t *tids = calloc((size_t)n_threads + 1, sizeof *tids);
    double *fork_us = calloc((size_t)n_forks, sizeof *fork_us);
    double *total_us = calloc((size_t)n_forks, sizeof *total_us);
    if (!tids || !fork_us || !total_us)
        return 1;
    /* Held in small blocks, as a quarantine holds them. */
    size_t n_held = (size_t)(hold_mb > 0 ? hold_mb : 0) * 4096;
    char **held = calloc(n_held + 1, sizeof *held);
    for (size_t i = 0; held && i < n_held; i++)
        if ((held[i] = malloc(256)))
            memset(held[i], (int)i, 256);
    for (int t = 0; t < n_threads; t++)
        if (pthread_create(&tids[t], NULL, worker, (void *)(uintptr_t)(t + 1)) != 0) {
            perror("pthread_create");
            return 1;
        }
    while (atomic_load(&g_ready) < n_threads)
        usleep(100);
    usleep(20000); /* the workers' rings full */
    for (int i = 0; i < n_forks; i++) {
        double t0 = now_us();
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        double t1 = now_us();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d did not exit with 0\n", (int)pid);
            return 1;
        }
        fork_us[i] = t1 - t0;
        total_us[i] = now_us() - t0;
    }
    atomic_store(&g_stop, 1);
    for (int t = 0; t < n_threads; t++)
        pthread_join(tids[t], NULL);
    double sum_f = 0, sum_t = 0;
    for (int i = 0; i < n_forks; i++) {
        sum_f += fork_us[i];
        sum_t += total_us[i];
    }
    qsort(fork_us, (size_t)n_forks, sizeof *fork_us, cmp_double);
    qsort(total_us, (size_t)n_forks, sizeof *total_us, cmp_double);
    /* Timings on stderr: stdout is what must equal the native run's. */
    fprintf(stderr, "fork_us median %.1f mean %.1f fork_wait_us median %.1f mean %.1f\n",
            fork_us[n_forks / 2], sum_f / n_forks, total_us[n_forks / 2], sum_t / n_forks);
    printf("forked %d children from %d threads\n", n_forks, n_threads);
    for (size_t i = 0; held && i < n_held; i++)
        free(held[i]);
    free(held);
    free(tids);
    free(fork_us);
    free(total_us);
    return 0;
}
