/* trace: the writer produces exactly the bytes docs/trace-format.md specifies (header,
 * record framing, varints, interning, stacks with their modules), grows the file in 1 MiB
 * steps, leaves every completed record behind a process that dies without closing, and
 * writes a forked child's trace to FILE.PID; files are made only at the first record, in
 * the place the options (or TLSAN_TRACE_DIR) name. The records are decoded here by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "depot.h"
#include "modules.h"
#include "shim.h"
#include "trace.h"

#include "core/trace_format.h"

#define MiB (1u << 20)

static char dir[64];
static char path[128];

/* ---- a minimal reader ---- */

struct file {
    unsigned char *data;
    size_t len;
};

struct rec {
    int tag;
    const unsigned char *p; /* payload */
    size_t n;
    size_t at; /* file offset of the tag */
};

static struct file slurp(const char *p)
{
    struct file f = {0};
    FILE *in = fopen(p, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    f.len = (size_t)ftell(in);
    fseek(in, 0, SEEK_SET);
    f.data = malloc(f.len + 1);
    assert_non_null(f.data);
    assert_int_equal(fread(f.data, 1, f.len, in), f.len);
    fclose(in);
    return f;
}

/* Reads a varint at *pos (bounded by end); fails the test on a malformed one. */
static uint64_t uv(const unsigned char *b, size_t *pos, size_t end)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        assert_true(*pos < end);
        unsigned char c = b[(*pos)++];
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    fail_msg("varint longer than 10 bytes");
    return 0;
}

enum { END_OK, END_ZERO, END_TORN };

/* Splits the records after the header; returns how the record stream ended. */
static int records(const struct file *f, struct rec *out, size_t cap, size_t *n)
{
    size_t pos = TRACE_HEADER_BYTES;
    *n = 0;
    while (pos < f->len) {
        if (f->data[pos] == 0)
            return END_ZERO;
        size_t at = pos;
        int tag = f->data[pos++];
        /* The size varint itself may be cut. */
        uint64_t size = 0;
        int shift = 0;
        for (;;) {
            if (pos >= f->len)
                return END_TORN;
            unsigned char c = f->data[pos++];
            size |= (uint64_t)(c & 0x7f) << shift;
            shift += 7;
            if (!(c & 0x80))
                break;
        }
        if (size > f->len - pos)
            return END_TORN;
        assert_true(*n < cap);
        out[(*n)++] = (struct rec){tag, f->data + pos, (size_t)size, at};
        pos += size;
    }
    return END_OK;
}

static void open_at(const char *p)
{
    struct shim_options *o = shim_opts_mut();
    snprintf(o->trace_path, sizeof o->trace_path, "%s", p);
    o->trace = 1;
    assert_true(trace_open());
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tlsan_test_trace.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.trace", dir);
    options_defaults(shim_opts_mut());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void expect_bytes(const struct rec *r, int tag, const unsigned char *want, size_t n)
{
    assert_int_equal(r->tag, tag);
    assert_int_equal(r->n, n);
    assert_memory_equal(r->p, want, n);
}

/* A function of this executable, to get a frame inside a known module. */
__attribute__((noinline)) static uintptr_t here(void)
{
    return (uintptr_t)__builtin_return_address(0);
}

/* ---- tests ---- */

static void header_and_records_are_exact(void **state)
{
    (void)state;
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    open_at(path);
    clock_gettime(CLOCK_REALTIME, &t1);

    assert_int_equal(trace_string("abc"), 1);
    assert_int_equal(trace_string("abc"), 1); /* interned: no second record */
    assert_int_equal(trace_string(NULL), 0);
    assert_int_equal(trace_arena("a0", 0x1000, 4096, 0), 1);
    assert_int_equal(trace_arena("a0", 0x9000, 128, 0), 2); /* one STRING for both */

    /* A stack of a frame in no module and one in this executable. */
    uintptr_t frames[2] = {0x10, here()};
    uint32_t st = depot_put(frames, 2);
    assert_int_not_equal(st, 0);
    const struct shim_module *m = modules_find(frames[1]);
    assert_non_null(m);
    trace_bind("abc", 1, 300, UINT64_MAX, 3, st);
    trace_bind("t2", 2, 0, 1, 0, st); /* the stack goes out once */
    static const char *const reads[] = {"abc", "t2"}, *const writes[] = {"t3"},
                             *const inplace[] = {"t3", "t2"};
    trace_op(1, "op_a", 1, reads, 2, writes, 1, inplace, 1, 0);
    trace_op_end(1);
    trace_view("v", "abc", 16, 8, 0);
    trace_release("abc", 1, 0);
    trace_record(3, 2, 0);
    trace_wait(0, 3, 0);
    trace_sync(0);
    trace_plan("{}", 2, 0);
    static const char *const tensors[] = {"abc"}, *const roles[] = {"bound at"};
    uint32_t stacks[] = {st};
    trace_finding("stale-write", "msg", tensors, 1, roles, stacks, 1, 1, true);
    trace_arena_end(2, 0);
    trace_close(5);

    struct file f = slurp(path);
    /* Header. */
    assert_true(f.len > 32);
    assert_memory_equal(f.data, TRACE_MAGIC, TRACE_MAGIC_BYTES);
    /* The bytes docs/trace-format.md gives, written out, so they check core/trace_format.h
     * against the document. */
    static const unsigned char fixed[] = {1, 0, 8, 1, 32, 0, 0, 0};
    assert_memory_equal(f.data + 8, fixed, sizeof fixed);
    assert_int_equal(le32(f.data + 16), (uint32_t)getpid());
    assert_int_equal(le32(f.data + 20), (uint32_t)getppid());
    uint64_t ns = le64(f.data + 24);
    assert_true(ns >= (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec);
    assert_true(ns <= (uint64_t)t1.tv_sec * 1000000000u + (uint64_t)t1.tv_nsec);

    struct rec r[64];
    size_t n;
    assert_int_equal(records(&f, r, 64, &n), END_OK); /* cut to its exact length */
    size_t i = 0;
    /* STRING 1 "abc": tag, size 5, id 1, length 3, text. */
    assert_int_equal(r[i].at, 32);
    static const unsigned char s1[] = {1, 3, 'a', 'b', 'c'};
    assert_memory_equal(f.data + 32, ((unsigned char[]){1, 5}), 2);
    expect_bytes(&r[i++], TRACE_STRING, s1, sizeof s1);
    static const unsigned char s2[] = {2, 2, 'a', '0'};
    expect_bytes(&r[i++], TRACE_STRING, s2, sizeof s2);
    /* ARENA 1: name 2, base 0x1000 = 80 20, size 4096 = 80 20, stack 0. */
    static const unsigned char a1[] = {1, 2, 0x80, 0x20, 0x80, 0x20, 0};
    expect_bytes(&r[i++], TRACE_ARENA, a1, sizeof a1);
    static const unsigned char a2[] = {2, 2, 0x80, 0xa0, 0x02, 0x80, 0x01, 0};
    expect_bytes(&r[i++], TRACE_ARENA, a2, sizeof a2);
    /* MODULE 1 (this executable), before the STACK that needs it. */
    assert_int_equal(r[i].tag, TRACE_MODULE);
    {
        size_t p = 0;
        assert_int_equal(uv(r[i].p, &p, r[i].n), 1);
        assert_int_equal(uv(r[i].p, &p, r[i].n), m->base);
        assert_int_equal(uv(r[i].p, &p, r[i].n), m->size_bytes);
        uint64_t len = uv(r[i].p, &p, r[i].n);
        assert_int_equal(len, strlen(m->path));
        assert_memory_equal(r[i].p + p, m->path, len);
        assert_int_equal(p + len, r[i].n);
        i++;
    }
    /* STACK 1: 2 frames; (module 0, absolute 0x10), (module 1, offset from its base). */
    {
        assert_int_equal(r[i].tag, TRACE_STACK);
        size_t p = 0;
        assert_int_equal(uv(r[i].p, &p, r[i].n), 1);
        assert_int_equal(uv(r[i].p, &p, r[i].n), 2);
        assert_int_equal(uv(r[i].p, &p, r[i].n), 0);
        assert_int_equal(uv(r[i].p, &p, r[i].n), 0x10);
        assert_int_equal(uv(r[i].p, &p, r[i].n), 1);
        assert_int_equal(uv(r[i].p, &p, r[i].n), frames[1] - m->base);
        assert_int_equal(p, r[i].n);
        i++;
    }
    /* BIND: name 1, arena 1, offset 300 = ac 02, size 2^64-1 (10 bytes), flags 3, stack 1,
     * thread id. */
    {
        assert_int_equal(r[i].tag, TRACE_BIND);
        static const unsigned char head[] = {1,    1,    0xac, 0x02, 0xff, 0xff, 0xff, 0xff,
                                             0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 3,    1};
        assert_memory_equal(r[i].p, head, sizeof head);
        size_t p = sizeof head;
        assert_int_equal(uv(r[i].p, &p, r[i].n), (uint64_t)shim_tid());
        assert_int_equal(p, r[i].n);
        i++;
    }
    static const unsigned char s3[] = {3, 2, 't', '2'};
    expect_bytes(&r[i++], TRACE_STRING, s3, sizeof s3);
    assert_int_equal(r[i].tag, TRACE_BIND);
    assert_memory_equal(r[i].p, ((unsigned char[]){3, 2, 0, 1, 0, 1}), 6);
    i++;
    /* OP: strings op_a (4) and t3 (5) first. */
    static const unsigned char s4[] = {4, 4, 'o', 'p', '_', 'a'};
    expect_bytes(&r[i++], TRACE_STRING, s4, sizeof s4);
    static const unsigned char s5[] = {5, 2, 't', '3'};
    expect_bytes(&r[i++], TRACE_STRING, s5, sizeof s5);
    {
        assert_int_equal(r[i].tag, TRACE_OP);
        static const unsigned char op[] = {1, 4, 1, 2, 1, 3, 1, 5, 1, 5, 3, 0};
        assert_memory_equal(r[i].p, op, sizeof op);
        size_t p = sizeof op;
        assert_int_equal(uv(r[i].p, &p, r[i].n), (uint64_t)shim_tid());
        assert_int_equal(p, r[i].n);
        i++;
    }
    expect_bytes(&r[i++], TRACE_OP_END, (unsigned char[]){1}, 1);
    static const unsigned char s6[] = {6, 1, 'v'};
    expect_bytes(&r[i++], TRACE_STRING, s6, sizeof s6);
    expect_bytes(&r[i++], TRACE_VIEW, (unsigned char[]){6, 1, 16, 8, 0}, 5);
    expect_bytes(&r[i++], TRACE_RELEASE, (unsigned char[]){1, 1, 0}, 3);
    expect_bytes(&r[i++], TRACE_RECORD, (unsigned char[]){3, 2, 0}, 3);
    expect_bytes(&r[i++], TRACE_WAIT, (unsigned char[]){0, 3, 0}, 3);
    expect_bytes(&r[i++], TRACE_SYNC, (unsigned char[]){0}, 1);
    expect_bytes(&r[i++], TRACE_PLAN, (unsigned char[]){2, '{', '}', 0}, 4);
    {
        static const unsigned char fi[] = {
            11,  's', 't', 'a', 'l', 'e', '-', 'w', 'r', 'i',
            't', 'e', 3,   'm', 's', 'g', 1,   1,   1,   8,
            'b', 'o', 'u', 'n', 'd', ' ', 'a', 't', 1,   1 /* fault stacks: stack 0 */,
            1 /* suppressed */};
        expect_bytes(&r[i++], TRACE_FINDING, fi, sizeof fi);
    }
    expect_bytes(&r[i++], TRACE_ARENA_END, (unsigned char[]){2, 0}, 2);
    expect_bytes(&r[i++], TRACE_END, (unsigned char[]){5}, 1);
    assert_int_equal(i, n);
    assert_int_equal(r[n - 1].at + 3, f.len); /* END is the last bytes of the file */
    free(f.data);

    /* Closed: every call is a no-op now. */
    assert_int_equal(trace_string("late"), 0);
    trace_sync(0);
}

/* Many strings: the table and the file mapping both grow (the mapping may move), interned
 * ids stay dense and stable. */
static void interning_survives_growth(void **state)
{
    (void)state;
    open_at(path);
    char name[32];
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof name, "tensor_%d", i);
        assert_int_equal(trace_string(name), (uint64_t)i + 1);
    }
    for (int i = 0; i < 100000; i += 7) {
        snprintf(name, sizeof name, "tensor_%d", i);
        assert_int_equal(trace_string(name), (uint64_t)i + 1);
    }
    trace_close(0);
    struct file f = slurp(path);
    assert_true(f.len > MiB);
    static struct rec r[100001];
    size_t n;
    assert_int_equal(records(&f, r, 100001, &n), END_OK);
    assert_int_equal(n, 100001);
    for (size_t i = 0; i < 100000; i += 997) {
        size_t p = 0;
        assert_int_equal(r[i].tag, TRACE_STRING);
        assert_int_equal(uv(r[i].p, &p, r[i].n), i + 1);
        uint64_t len = uv(r[i].p, &p, r[i].n);
        snprintf(name, sizeof name, "tensor_%zu", i);
        assert_int_equal(len, strlen(name));
        assert_memory_equal(r[i].p + p, name, len);
    }
    free(f.data);
}

/* A process that dies without trace_close (here: _exit in a child) leaves every record it
 * completed, in a file grown in 1 MiB steps with a zero tail; a record cut by the end of
 * the file is seen as torn. */
static void a_dead_process_leaves_its_records(void **state)
{
    (void)state;
    size_t big = 3 * MiB + 5;
    char *json = malloc(big);
    assert_non_null(json);
    memset(json, 'j', big);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        open_at(path);
        trace_string("before");
        trace_plan(json, big, 0);
        trace_string("after");
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct file f = slurp(path);
    assert_int_equal(f.len % MiB, 0);
    assert_int_equal(f.len, 4 * MiB);
    struct rec r[8];
    size_t n;
    assert_int_equal(records(&f, r, 8, &n), END_ZERO);
    assert_int_equal(n, 3);
    assert_int_equal(r[1].tag, TRACE_PLAN);
    size_t p = 0;
    assert_int_equal(uv(r[1].p, &p, r[1].n), big);
    assert_int_equal(r[1].p[p], 'j');
    assert_int_equal(r[1].p[p + big - 1], 'j');
    assert_int_equal(r[2].tag, TRACE_STRING);
    assert_int_equal(le32(f.data + 16), (uint32_t)pid);
    assert_int_equal(le32(f.data + 20), (uint32_t)getpid());

    /* Cut inside the PLAN payload: the reader keeps STRING 1 and calls the rest torn. */
    struct file cut = {f.data, (size_t)(r[1].p - f.data) + 1000};
    assert_int_equal(records(&cut, r, 8, &n), END_TORN);
    assert_int_equal(n, 1);
    free(f.data);
    free(json);
}

struct writer_arg {
    int id;
};

static void *write_many(void *arg)
{
    int id = ((struct writer_arg *)arg)->id;
    char name[32], op[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "t%d", i % 300); /* shared by all threads */
        snprintf(op, sizeof op, "op%d_%d", id, i);
        const char *reads[1] = {name};
        trace_op((uint64_t)id * 100000 + (uint64_t)i, op, id, reads, 1, NULL, 0, NULL, 0, 0);
    }
    return NULL;
}

/* Threads writing at once: every record intact, each string defined once, before use. */
static void concurrent_writers_keep_records_whole(void **state)
{
    (void)state;
    open_at(path);
    pthread_t th[4];
    struct writer_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].id = i + 1;
        assert_int_equal(pthread_create(&th[i], NULL, write_many, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    trace_close(0);
    struct file f = slurp(path);
    static struct rec r[64000];
    size_t n;
    assert_int_equal(records(&f, r, 64000, &n), END_OK);
    size_t strings = 0, ops = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = 0;
        if (r[i].tag == TRACE_STRING) {
            assert_int_equal(uv(r[i].p, &p, r[i].n), ++strings);
        } else if (r[i].tag == TRACE_OP) {
            ops++;
            uv(r[i].p, &p, r[i].n);
            uint64_t name = uv(r[i].p, &p, r[i].n);
            assert_true(name >= 1 && name <= strings); /* defined by an earlier record */
            uv(r[i].p, &p, r[i].n);
            assert_int_equal(uv(r[i].p, &p, r[i].n), 1);
            uint64_t read = uv(r[i].p, &p, r[i].n);
            assert_true(read >= 1 && read <= strings);
        } else if (r[i].tag != TRACE_END) {
            fail_msg("unexpected tag %d", r[i].tag);
        }
    }
    assert_int_equal(ops, 20000);
    assert_int_equal(strings, 20000 + 300);
    free(f.data);
}

/* A forked child writes FILE.PID (the parent's file untouched), with its own string ids. */
static void a_forked_child_writes_file_dot_pid(void **state)
{
    (void)state;
    open_at(path);
    assert_int_equal(trace_string("parent"), 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        trace_reopen_in_child();
        int ok = trace_string("child") == 1 && trace_string("parent") == 2;
        trace_close(0);
        _exit(ok ? 0 : 3);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(trace_string("parent2"), 2);
    trace_close(1);

    char child[160];
    snprintf(child, sizeof child, "%s.%d", path, (int)pid);
    struct file c = slurp(child);
    assert_int_equal(le32(c.data + 16), (uint32_t)pid);
    assert_int_equal(le32(c.data + 20), (uint32_t)getpid());
    struct rec r[8];
    size_t n;
    assert_int_equal(records(&c, r, 8, &n), END_OK);
    assert_int_equal(n, 3);
    expect_bytes(&r[0], TRACE_STRING, (unsigned char[]){1, 5, 'c', 'h', 'i', 'l', 'd'}, 7);
    expect_bytes(&r[2], TRACE_END, (unsigned char[]){0}, 1);

    struct file p = slurp(path);
    assert_int_equal(records(&p, r, 8, &n), END_OK);
    assert_int_equal(n, 3);
    expect_bytes(&r[1], TRACE_STRING, (unsigned char[]){2, 7, 'p', 'a', 'r', 'e', 'n', 't', '2'},
                 9);
    free(c.data);
    free(p.data);
}

/* No trace file: one line at the first record, tracing off, every call a harmless no-op. */
static void an_unopenable_path_turns_tracing_off(void **state)
{
    (void)state;
    struct shim_options *o = shim_opts_mut();
    snprintf(o->trace_path, sizeof o->trace_path, "%s/no/such/dir/t.trace", dir);
    assert_true(trace_open()); /* asked for; the file is made at the first record */
    assert_true(trace_wanted());
    assert_int_equal(trace_string("x"), 0);
    assert_false(trace_wanted());
    assert_int_equal(trace_arena("a", 1, 2, 0), 0);
    trace_sync(0);
    trace_close(0);
    o->trace = 0;
    assert_false(trace_open()); /* trace=0: nothing to open, not an error */
    assert_int_equal(trace_string("x"), 0);
    o->trace = 1;
}

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static off_t size_of(const char *p)
{
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_size;
}

/* Entries of a directory other than . and .. */
static int n_entries(const char *d)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 0", d);
    int empty = system(cmd) == 0;
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", d);
    int one = system(cmd) == 0;
    return empty ? 0 : one ? 1 : 2;
}

/* A process that records nothing leaves no file, whatever the options ask. */
static void nothing_recorded_leaves_no_file(void **state)
{
    (void)state;
    open_at(path);
    trace_close(3);
    assert_false(exists(path));
    /* After the end, a late record makes no file either. */
    assert_int_equal(trace_string("late"), 0);
    assert_false(exists(path));
}

/* The default: no trace at all, nothing in the working directory. */
static void no_trace_by_default(void **state)
{
    (void)state;
    char cwd[256];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    unsetenv("TLSAN_TRACE_DIR");
    assert_false(trace_open());
    assert_false(trace_wanted());
    assert_int_equal(trace_string("x"), 0);
    trace_close(1);
    assert_int_equal(n_entries(dir), 0);
    /* trace=1 alone: the working directory, tlsan.PID.trace. */
    shim_opts_mut()->trace = 1;
    assert_true(trace_open());
    assert_int_equal(trace_string("x"), 1);
    trace_close(0);
    char want[160];
    snprintf(want, sizeof want, "%s/tlsan.%d.trace", dir, (int)getpid());
    assert_true(exists(want));
    assert_int_equal(chdir(cwd), 0);
}

/* trace_dir: DIR/tlsan.PID.trace, a new file each time (a second image of one PID, as after
 * exec, gets tlsan.PID.2.trace); a relative DIR is the one of trace_open's time, made when
 * missing; TLSAN_TRACE_DIR is the default directory, and trace=0 still wins over it. */
static void trace_dir_names_one_new_file_per_process(void **state)
{
    (void)state;
    char cwd[256], want[200];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    struct shim_options *o = shim_opts_mut();
    snprintf(o->trace_dir, sizeof o->trace_dir, "rel");
    assert_true(trace_open());
    assert_int_equal(chdir("/"), 0);
    assert_int_equal(trace_string("one"), 1);
    trace_close(0);
    snprintf(want, sizeof want, "%s/rel/tlsan.%d.trace", dir, (int)getpid());
    assert_true(exists(want));
    assert_int_equal(chdir(dir), 0);
    assert_true(trace_open());
    assert_int_equal(trace_string("two"), 1);
    trace_close(0);
    snprintf(want, sizeof want, "%s/rel/tlsan.%d.2.trace", dir, (int)getpid());
    assert_true(exists(want));
    struct file f = slurp(want);
    struct rec r[4];
    size_t n;
    assert_int_equal(records(&f, r, 4, &n), END_OK);
    assert_int_equal(n, 2);
    expect_bytes(&r[0], TRACE_STRING, (unsigned char[]){1, 3, 't', 'w', 'o'}, 5);
    free(f.data);

    o->trace_dir[0] = '\0';
    char env_dir[160];
    snprintf(env_dir, sizeof env_dir, "%s/env", dir);
    setenv("TLSAN_TRACE_DIR", env_dir, 1);
    assert_true(trace_open());
    assert_int_equal(trace_string("e"), 1);
    trace_close(0);
    snprintf(want, sizeof want, "%s/tlsan.%d.trace", env_dir, (int)getpid());
    assert_true(exists(want));
    o->trace = 0;
    assert_false(trace_open());
    o->trace = -1;
    unsetenv("TLSAN_TRACE_DIR");
    assert_int_equal(chdir(cwd), 0);
}

/* Forked children in a trace directory: one that records writes tlsan.CHILD.trace, one that
 * records nothing and _exits leaves nothing; one that dies after a record leaves a file of
 * the first size step (4 KiB), not 1 MiB. */
static void forked_children_in_a_trace_dir(void **state)
{
    (void)state;
    struct shim_options *o = shim_opts_mut();
    snprintf(o->trace_dir, sizeof o->trace_dir, "%s", dir);
    assert_true(trace_open());
    pid_t kids[3];
    for (int k = 0; k < 3; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            trace_reopen_in_child();
            if (k == 0) {
                int ok = trace_string("child") == 1;
                trace_close(0);
                _exit(ok ? 0 : 3);
            }
            if (k == 2)
                trace_string("dies");
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    trace_close(0); /* the parent recorded nothing: no file of its own */
    char p[200];
    snprintf(p, sizeof p, "%s/tlsan.%d.trace", dir, (int)kids[0]);
    struct file f = slurp(p);
    assert_int_equal(le32(f.data + 16), (uint32_t)kids[0]);
    struct rec r[4];
    size_t n;
    assert_int_equal(records(&f, r, 4, &n), END_OK);
    assert_int_equal(n, 2);
    free(f.data);
    snprintf(p, sizeof p, "%s/tlsan.%d.trace", dir, (int)kids[1]);
    assert_false(exists(p));
    snprintf(p, sizeof p, "%s/tlsan.%d.trace", dir, (int)kids[2]);
    assert_int_equal(size_of(p), 4 << 10);
    snprintf(p, sizeof p, "%s/tlsan.%d.trace", dir, (int)getpid());
    assert_false(exists(p));
    o->trace_dir[0] = '\0';
}

/* Writes a header-only trace at p that started at `start_ns`. */
static void fake_trace(const char *p, uint64_t start_ns)
{
    unsigned char h[TRACE_HEADER_BYTES] = TRACE_MAGIC;
    h[TRACE_HEADER_AT_VERSION] = TRACE_VERSION;
    h[TRACE_HEADER_AT_POINTER_SIZE] = 8;
    h[TRACE_HEADER_AT_BYTE_ORDER] = TRACE_LITTLE_ENDIAN;
    h[TRACE_HEADER_AT_HEADER_BYTES] = TRACE_HEADER_BYTES;
    for (int i = 0; i < 8; i++)
        h[TRACE_HEADER_AT_START_NS + i] = (unsigned char)(start_ns >> (8 * i));
    FILE *out = fopen(p, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(h, 1, sizeof h, out), sizeof h);
    fclose(out);
}

/* trace_path=FILE when FILE holds a trace begun after this process (a program it ran took
 * the free file first): that trace stays, this process writes FILE.PID. One begun before
 * (an earlier run's) is overwritten. */
static void a_later_trace_in_file_is_kept(void **state)
{
    (void)state;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    fake_trace(path, ns + 60000000000ull);
    open_at(path);
    assert_int_equal(trace_string("mine"), 1);
    trace_close(0);
    assert_int_equal(size_of(path), 32);
    char mine[160];
    snprintf(mine, sizeof mine, "%s.%d", path, (int)getpid());
    struct file f = slurp(mine);
    struct rec r[4];
    size_t n;
    assert_int_equal(records(&f, r, 4, &n), END_OK);
    expect_bytes(&r[0], TRACE_STRING, (unsigned char[]){1, 4, 'm', 'i', 'n', 'e'}, 6);
    free(f.data);
    unlink(mine);

    fake_trace(path, ns - 60000000000ull);
    open_at(path);
    assert_int_equal(trace_string("mine"), 1);
    trace_close(0);
    assert_false(exists(mine));
    assert_int_equal(le32((f = slurp(path)).data + 16), (uint32_t)getpid());
    free(f.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(header_and_records_are_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(interning_survives_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(a_dead_process_leaves_its_records, setup, teardown),
        cmocka_unit_test_setup_teardown(concurrent_writers_keep_records_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(a_forked_child_writes_file_dot_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unopenable_path_turns_tracing_off, setup, teardown),
        cmocka_unit_test_setup_teardown(nothing_recorded_leaves_no_file, setup, teardown),
        cmocka_unit_test_setup_teardown(no_trace_by_default, setup, teardown),
        cmocka_unit_test_setup_teardown(trace_dir_names_one_new_file_per_process, setup, teardown),
        cmocka_unit_test_setup_teardown(forked_children_in_a_trace_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(a_later_trace_in_file_is_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
