/* prog_fds: the program's file descriptors are its own under the shim (tests/shim/fds.sh).
 * Stacks are captured through frames without unwind tables (helper_nounwind.c), where
 * libunwind validates the addresses it reads.
 *
 * usage: prog_fds MODE [ARGS]
 *   daemon DATA LOG  allocates (as a daemon does before it detaches), closes every descriptor
 *              from 3 up, opens DATA (read) and LOG (write),
 *              which must get 3 and 4, then reads DATA in 37-byte chunks, each copied into a
 *              block allocated and freed through frames without unwind tables, half of them
 *              on the main thread and half on a new thread, and writes one line per chunk to
 *              LOG; under the shim it also frees one block twice (a report). Prints the
 *              totals.
 *   firstopen  allocates through frames without unwind tables, then prints the descriptor
 *              the first open() gets
 *   fdlist     prints every open descriptor and what it names, before and after allocations
 *              and frees through frames without unwind tables (and, under the shim, a double
 *              free)
 *   fill       allocates with stacks, then opens /dev/null until open() fails; prints how
 *              many it opened, the last descriptor and the error
 *   dup2 FILE  writes 64 KiB of a known pattern to FILE, then dup2()s FILE's descriptor onto
 *              every descriptor it did not open itself (the shim's), then allocates with
 *              stacks, annotates enough to grow a trace past 1 MiB and frees a block twice;
 *              prints the numbers it took over */
#include "tlsan/tlsan.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void *nounwind_alloc(size_t n, int depth);
void nounwind_free(void *p, int depth);

#define CHUNK 37

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);                                \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static int shim_on(void)
{
    return tlsan_active();
}

/* Frees a block twice through frames without unwind tables: a report under the shim (glibc
 * alone would abort, so only then). */
static void double_free_under_shim(void)
{
    if (!shim_on())
        return;
    char *p = nounwind_alloc(24, 3);
    nounwind_free(p, 2);
    nounwind_free(*(char *volatile *)&p, 4);
}

/* The highest descriptor number worth looking at. */
static int fd_top(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur > 65536)
        return 65536;
    return (int)rl.rlim_cur;
}

/* Every open descriptor below 8192 (past the soft limit too), by readlink on
 * /proc/self/fd/N (no directory stream: that would be a descriptor of its own, and
 * allocate). */
static void print_fds(const char *when)
{
    char path[64], target[512];
    for (int fd = 0; fd < 8192; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        printf("%s: fd %d %s\n", when, fd, target);
    }
}

/* ---- daemon ---- */

struct job {
    int data_fd, log_fd, first, count;
    unsigned long bytes, sum;
};

/* Reads up to `count` chunks from the data fd; each one goes through a block allocated and
 * freed through 1 to 4 frames without unwind tables, and gets a line in the log. */
static void process(struct job *j)
{
    for (int i = j->first; i < j->first + j->count; i++) {
        unsigned char chunk[CHUNK];
        ssize_t n = read(j->data_fd, chunk, sizeof chunk);
        CHECK(n >= 0, "read: %s", strerror(errno));
        if (n <= 0)
            return;
        unsigned char *p = nounwind_alloc((size_t)n + (size_t)(i % 5) * 16, 1 + i % 4);
        memcpy(p, chunk, (size_t)n);
        unsigned long sum = 0;
        for (ssize_t k = 0; k < n; k++)
            sum = sum * 31 + p[k];
        char line[160];
        int len =
            snprintf(line, sizeof line, "chunk %d: %zd bytes, first %02x last %02x, sum %lu\n", i,
                     n, p[0], p[n - 1], sum);
        CHECK(write(j->log_fd, line, (size_t)len) == len, "write: %s", strerror(errno));
        nounwind_free(p, 4 - i % 4);
        if (i == j->first + 3)
            double_free_under_shim();
        j->bytes += (unsigned long)n;
        j->sum = j->sum * 1000003 + sum;
    }
}

static void *process_thread(void *arg)
{
    process(arg);
    return NULL;
}

static void allocate_with_stacks(void);

static int mode_daemon(const char *data, const char *log)
{
    allocate_with_stacks();
    for (int fd = 3; fd < fd_top(); fd++)
        close(fd);
    int dfd = open(data, O_RDONLY | O_CLOEXEC);
    int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(dfd == 3 && lfd == 4, "opens: %d %d", dfd, lfd);
    struct job a = {dfd, lfd, 0, 40, 0, 0};
    process(&a);
    struct job b = {dfd, lfd, 40, 1000000, 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, process_thread, &b) == 0, "pthread_create");
    pthread_join(t, NULL);
    char tail;
    CHECK(read(dfd, &tail, 1) == 0, "the data file read to its end");
    printf("daemon: data on %d, log on %d, %lu + %lu bytes, sums %lu %lu\n", dfd, lfd, a.bytes,
           b.bytes, a.sum, b.sum);
    close(dfd);
    close(lfd);
    return failures != 0;
}

/* ---- firstopen, fdlist ---- */

static void allocate_with_stacks(void)
{
    void *keep[64];
    for (int i = 0; i < 64; i++)
        keep[i] = nounwind_alloc((size_t)(16 + i * 8), i % 5);
    for (int i = 0; i < 64; i++)
        nounwind_free(keep[i], (i + 2) % 5);
}

static int mode_firstopen(void)
{
    allocate_with_stacks();
    int fd = open("/dev/null", O_RDONLY);
    printf("first open: %d\n", fd);
    return 0;
}

static int mode_fdlist(void)
{
    print_fds("before");
    allocate_with_stacks();
    double_free_under_shim();
    print_fds("after");
    return 0;
}

static int mode_fill(void)
{
    allocate_with_stacks();
    int n = 0, last = -1, fd;
    while ((fd = open("/dev/null", O_RDONLY)) >= 0) {
        last = fd;
        n++;
    }
    printf("opened %d, last %d, then %s\n", n, last, strerror(errno));
    return 0;
}

/* ---- dup2 ---- */

static unsigned char g_arena[1 << 16];

static void annotate(int n)
{
    char name[400], op[400], pad[301];
    memset(pad, 'p', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    tlsan_arena_create("a", g_arena, sizeof g_arena);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "tensor_%d_%s", i, pad);
        snprintf(op, sizeof op, "op_number_%d_%s", i, pad);
        tlsan_tensor_bind(g_arena, name, g_arena, 64, 0);
        const char *writes[1] = {name};
        tlsan_op_info info = {op, 0, NULL, 0, writes, 1, NULL, 0};
        tlsan_op_end(tlsan_op_begin(&info));
        tlsan_tensor_release(g_arena, name, g_arena, 0);
    }
    tlsan_arena_destroy(g_arena, sizeof g_arena);
}

static int mode_dup2(const char *file)
{
    /* The shim's trace is open once something is recorded. */
    annotate(1);
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "open: %s", strerror(errno));
    unsigned char buf[4096];
    for (int k = 0; k < 16; k++) {
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (unsigned char)(i * 7 + (size_t)k);
        CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "write");
    }
    char path[64], target[512];
    for (int n = 3; n < fd_top(); n++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", n);
        if (n == fd || readlink(path, target, sizeof target) < 0)
            continue;
        CHECK(dup2(fd, n) == n, "dup2 onto %d: %s", n, strerror(errno));
        printf("took over fd %d\n", n);
    }
    allocate_with_stacks();
    annotate(4000);
    double_free_under_shim();
    printf("dup2 done\n");
    return failures != 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "daemon") && argc == 4)
        return mode_daemon(argv[2], argv[3]);
    if (!strcmp(mode, "firstopen"))
        return mode_firstopen();
    if (!strcmp(mode, "fdlist"))
        return mode_fdlist();
    if (!strcmp(mode, "fill"))
        return mode_fill();
    if (!strcmp(mode, "dup2") && argc == 3)
        return mode_dup2(argv[2]);
    fprintf(stderr, "usage: prog_fds daemon DATA LOG | firstopen | fdlist | fill | dup2 FILE\n");
    return 2;
}
