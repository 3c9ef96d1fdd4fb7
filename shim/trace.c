/* trace.c - the trace writer (docs/trace-format.md).
 *
 * The file is created at the first record, never before: a process with nothing to record
 * (no annotation, no finding) leaves no file. It is mapped MAP_SHARED and grown from 4 KiB
 * by doubling, then in 1 MiB steps (fallocate, so a full disk is an error here and not a
 * SIGBUS later), so every record is in the page cache as soon as it is written: a crash,
 * SIGKILL or an exec loses nothing that was completed. A record is written
 * payload first and its tag byte last (a release store): a record cut short by a crash
 * still has tag 0 there, which readers take as the end of the trace.
 *
 * Every record is encoded by one body run three times (struct enc): PREP interns the names
 * and stacks it refers to (emitting STRING, MODULE and STACK records before it), SIZE
 * counts its payload bytes, WRITE stores them. So nothing is staged in a buffer and a
 * PLAN of any size goes straight into the mapping.
 *
 * Interning needs no copy of the strings: the table keeps the file offset of each STRING
 * record's text and compares against the mapping. All tables are mmap'd, never malloc'd
 * (the writer runs inside allocation hooks). One mutex serialises everything. */
#include "trace.h"

#include "depot.h"
#include "lock.h"
#include "modules.h"
#include "out.h"
#include "shim.h"

#include "core/trace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define TRACE_FIRST      ((size_t)4 << 10)
#define TRACE_STEP       ((size_t)1 << 20)
#define TRACE_TARGET_MAX 4096

/* Where the trace goes (trace_open). */
enum { WHERE_NONE, WHERE_DIR, WHERE_FILE };

/* One interned string: its hash, where its text is in the file, and its id. */
struct str_slot {
    uint64_t hash;
    uint64_t off;
    uint32_t len;
    uint32_t id; /* 0 = empty slot */
};

/* An array of u32 indexed by a foreign id (depot stack id, module id) -> trace id. */
struct idmap {
    uint32_t *v;
    size_t cap; /* entries */
};

static struct {
    pthread_mutex_t lock;
    bool on; /* open and writable */
    int fd;  /* -1 also once the program closed or reused it: never touched again */
    struct out_fd_id fd_id;
    unsigned char *map;
    size_t map_size; /* = file size while open */
    size_t pos;      /* next record goes here */
    struct str_slot *strs;
    size_t strs_cap, strs_n;
    uint32_t next_string, next_module, next_stack, next_arena;
    struct idmap stacks, modules;
    int where;                     /* WHERE_*: NONE when no trace is asked for */
    char target[TRACE_TARGET_MAX]; /* the directory or the file, made absolute */
    bool child;                    /* a forked child: a trace_path FILE becomes FILE.PID */
    bool tried;                    /* the file was created, or creating it failed */
    uint64_t start_ns;             /* when this process (or forked child) started */
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* The trace's mutex, counted as a held lock (lock.h): an allocation from a signal handler
 * while it is held is deferred instead of risking a report that would take it again. */
static void trace_lock(void)
{
    shim_section_enter();
    pthread_mutex_lock(&T.lock);
}

static void trace_unlock(void)
{
    pthread_mutex_unlock(&T.lock);
    shim_section_leave();
}

/* ---- small helpers ---- */

static void *map_anon(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t varint_put(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static const char *errno_text(int e)
{
    const char *s = strerrordesc_np(e); /* no locale, no allocation */
    return s ? s : "unknown error";
}

/* Stops tracing after a write failure; what was written stays in the file. */
static void trace_off_locked(const char *why, int err)
{
    out_printf("tlsan: trace: %s: %s; tracing off\n", why, errno_text(err));
    T.on = false;
}

/* Before a resize or a close: is T.fd still the trace file? The program may have closed it
 * (closefrom) and the number may now be a file of its own, which a resize would corrupt. If
 * not, tracing stops and the number is forgotten; the records written so far are in the
 * file through the mapping, which stays. */
static bool fd_ok_locked(void)
{
    if (T.fd < 0)
        return false;
    if (out_fd_still(T.fd, &T.fd_id))
        return true;
    out_printf("tlsan: trace: the program closed the trace file's descriptor; tracing off (the "
               "records so far stay in the file)\n");
    T.fd = -1;
    T.on = false;
    return false;
}

/* The file size that holds `bytes`: 4 KiB doubled up to 1 MiB, then whole MiBs. A short
 * trace (a few findings of a process that then dies without cutting its file) stays small;
 * a long one is remapped once per MiB. */
static size_t size_for(size_t bytes)
{
    size_t s = TRACE_FIRST;
    while (s < bytes && s < TRACE_STEP)
        s *= 2;
    return s >= bytes ? s : (bytes + TRACE_STEP - 1) / TRACE_STEP * TRACE_STEP;
}

/* Makes room for `need` more bytes at T.pos (growing file and mapping, see size_for; the
 * first call maps the new file). */
static bool ensure_room(size_t need)
{
    if (T.pos + need <= T.map_size)
        return true;
    if (!fd_ok_locked())
        return false;
    size_t want = size_for(T.pos + need);
    int r = fallocate(T.fd, 0, (off_t)T.map_size, (off_t)(want - T.map_size));
    if (r != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
        r = ftruncate(T.fd, (off_t)want);
    if (r != 0) {
        trace_off_locked("cannot grow the trace file", errno);
        return false;
    }
    void *m = T.map ? mremap(T.map, T.map_size, want, MREMAP_MAYMOVE)
                    : mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, T.fd, 0);
    if (m == MAP_FAILED) {
        trace_off_locked("cannot map the trace file", errno);
        return false;
    }
    T.map = m;
    T.map_size = want;
    return true;
}

/* ---- the three-pass record encoder ---- */

enum { E_PREP, E_SIZE, E_WRITE };

#define ENC_IDS 64

struct enc {
    int mode;
    size_t n;         /* payload bytes counted / written */
    unsigned char *p; /* WRITE: payload start */
    /* The string ids PREP found, in order, so SIZE and WRITE need not look them up again
     * (the body names the same strings in the same order in every pass). */
    uint32_t ids[ENC_IDS];
    unsigned n_ids, at;
};

static void e_u(struct enc *e, uint64_t v)
{
    if (e->mode == E_WRITE)
        varint_put(e->p + e->n, v);
    if (e->mode != E_PREP)
        e->n += varint_len(v);
}

static void e_bytes(struct enc *e, const void *b, size_t len)
{
    if (e->mode == E_WRITE && len)
        memcpy(e->p + e->n, b, len);
    if (e->mode != E_PREP)
        e->n += len;
}

static void e_str(struct enc *e, const char *s, size_t len)
{
    e_u(e, len);
    e_bytes(e, s, len);
}

static void e_cstr(struct enc *e, const char *s)
{
    e_str(e, s ? s : "", s ? strlen(s) : 0);
}

static uint32_t intern_locked(const char *s, bool add);
static uint32_t stack_locked(uint32_t depot_id, bool add);

static void e_name(struct enc *e, const char *s)
{
    uint32_t id;
    if (e->mode == E_PREP) {
        id = intern_locked(s, true);
        if (e->n_ids < ENC_IDS)
            e->ids[e->n_ids++] = id;
    } else {
        id = e->at < e->n_ids ? e->ids[e->at] : intern_locked(s, false);
        e->at++;
    }
    e_u(e, id);
}

static void e_stack(struct enc *e, uint32_t depot_id)
{
    uint32_t id = stack_locked(depot_id, e->mode == E_PREP);
    e_u(e, id);
}

/* Finishes a pass: after SIZE reserves room, after WRITE commits the record (tag last). */
static bool enc_next(struct enc *e, int tag)
{
    if (!T.on)
        return false;
    e->at = 0;
    if (e->mode == E_PREP) {
        e->mode = E_SIZE;
        e->n = 0;
        return true;
    }
    if (e->mode == E_SIZE) {
        size_t head = 1 + varint_len(e->n);
        if (!ensure_room(head + e->n))
            return false;
        varint_put(T.map + T.pos + 1, e->n);
        e->p = T.map + T.pos + head;
        e->mode = E_WRITE;
        e->n = 0;
        return true;
    }
    size_t total = 1 + varint_len(e->n) + e->n;
    __atomic_store_n(&T.map[T.pos], (unsigned char)tag, __ATOMIC_RELEASE);
    T.pos += total;
    return false;
}

/* Runs the body (statements using `e`) in each of the three passes. Lock held. */
#define EMIT(tag, ...)                                                                             \
    do {                                                                                           \
        struct enc emit_enc_;                                                                      \
        emit_enc_.mode = E_PREP;                                                                   \
        emit_enc_.n = 0;                                                                           \
        emit_enc_.p = NULL;                                                                        \
        emit_enc_.n_ids = emit_enc_.at = 0;                                                        \
        do {                                                                                       \
            struct enc *e = &emit_enc_;                                                            \
            __VA_ARGS__                                                                            \
        } while (enc_next(&emit_enc_, (tag)));                                                     \
    } while (0)

/* ---- interning ---- */

static bool strs_grow(void)
{
    size_t cap = T.strs_cap ? T.strs_cap * 2 : 4096;
    struct str_slot *n = map_anon(cap * sizeof *n);
    if (!n)
        return false;
    for (size_t i = 0; i < T.strs_cap; i++) {
        struct str_slot *o = &T.strs[i];
        if (!o->id)
            continue;
        size_t j = o->hash & (cap - 1);
        while (n[j].id)
            j = (j + 1) & (cap - 1);
        n[j] = *o;
    }
    if (T.strs)
        munmap(T.strs, T.strs_cap * sizeof *T.strs);
    T.strs = n;
    T.strs_cap = cap;
    return true;
}

/* The id of s, emitting its STRING record first when `add` and it is new. 0 for NULL, for
 * an unknown string when !add, or when the table cannot grow. */
static uint32_t intern_locked(const char *s, bool add)
{
    if (!s || !T.on)
        return 0;
    size_t len = strlen(s);
    uint64_t h = XXH3_64bits(s, len);
    if (T.strs_cap) {
        for (size_t j = h & (T.strs_cap - 1);; j = (j + 1) & (T.strs_cap - 1)) {
            struct str_slot *sl = &T.strs[j];
            if (!sl->id)
                break;
            if (sl->hash == h && sl->len == len && memcmp(T.map + sl->off, s, len) == 0)
                return sl->id;
        }
    }
    if (!add || len > UINT32_MAX)
        return 0;
    if ((T.strs_n + 1) * 2 > T.strs_cap && !strs_grow())
        return 0;
    uint32_t id = T.next_string + 1;
    size_t text_off = 0;
    EMIT(TRACE_STRING, {
        e_u(e, id);
        e_u(e, len);
        if (e->mode == E_WRITE)
            text_off = (size_t)(e->p + e->n - T.map);
        e_bytes(e, s, len);
    });
    if (!text_off)
        return 0; /* the write failed: tracing is off now */
    T.next_string = id;
    size_t j = h & (T.strs_cap - 1);
    while (T.strs[j].id)
        j = (j + 1) & (T.strs_cap - 1);
    T.strs[j] = (struct str_slot){h, text_off, (uint32_t)len, id};
    T.strs_n++;
    return id;
}

/* Slot for foreign id k in m (grown as needed), NULL when it cannot grow. */
static uint32_t *idmap_slot(struct idmap *m, size_t k, bool grow)
{
    if (k < m->cap)
        return &m->v[k];
    if (!grow)
        return NULL;
    size_t cap = m->cap ? m->cap : 1024;
    while (cap <= k)
        cap *= 2;
    uint32_t *n = map_anon(cap * sizeof *n);
    if (!n)
        return NULL;
    if (m->v) {
        memcpy(n, m->v, m->cap * sizeof *n);
        munmap(m->v, m->cap * sizeof *n);
    }
    m->v = n;
    m->cap = cap;
    return &m->v[k];
}

static uint32_t module_locked(const struct shim_module *mod)
{
    uint32_t *slot = idmap_slot(&T.modules, mod->id, true);
    if (!slot)
        return 0;
    if (*slot)
        return *slot;
    uint32_t id = T.next_module + 1;
    EMIT(TRACE_MODULE, {
        e_u(e, id);
        e_u(e, mod->base);
        e_u(e, mod->size_bytes);
        e_cstr(e, mod->path);
    });
    if (!T.on)
        return 0;
    T.next_module = id;
    *slot = id;
    return id;
}

/* Trace id of a depot stack; with `add`, emits it (and its modules) when new. */
static uint32_t stack_locked(uint32_t depot_id, bool add)
{
    if (!depot_id || !T.on)
        return 0;
    uint32_t *slot = idmap_slot(&T.stacks, depot_id, add);
    if (!slot)
        return 0;
    if (*slot || !add)
        return *slot;
    const uintptr_t *frames;
    unsigned n = depot_get(depot_id, &frames);
    if (!n)
        return 0;
    /* The module of each frame, resolved once (its MODULE record goes out in PREP). */
    uint32_t mods[DEPOT_MAX_FRAMES];
    uintptr_t bases[DEPOT_MAX_FRAMES];
    if (n > DEPOT_MAX_FRAMES)
        n = DEPOT_MAX_FRAMES;
    for (unsigned i = 0; i < n; i++) {
        const struct shim_module *m = modules_find(frames[i]);
        mods[i] = m ? module_locked(m) : 0;
        bases[i] = mods[i] ? m->base : 0;
    }
    uint32_t id = T.next_stack + 1;
    EMIT(TRACE_STACK, {
        e_u(e, id);
        e_u(e, n);
        for (unsigned i = 0; i < n; i++) {
            e_u(e, mods[i]);
            e_u(e, frames[i] - bases[i]);
        }
    });
    if (!T.on)
        return 0;
    T.next_stack = id;
    /* The map may have moved while the modules went out. */
    slot = idmap_slot(&T.stacks, depot_id, true);
    if (slot)
        *slot = id;
    return id;
}

/* ---- open / close ---- */

static void reset_tables(void)
{
    if (T.strs)
        munmap(T.strs, T.strs_cap * sizeof *T.strs);
    if (T.stacks.v)
        munmap(T.stacks.v, T.stacks.cap * sizeof(uint32_t));
    if (T.modules.v)
        munmap(T.modules.v, T.modules.cap * sizeof(uint32_t));
    T.strs = NULL;
    T.strs_cap = T.strs_n = 0;
    T.stacks = (struct idmap){0};
    T.modules = (struct idmap){0};
    T.next_string = T.next_module = T.next_stack = T.next_arena = 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copies path into T.target, made absolute against the working directory of now: the file
 * is created only at the first record, after the program may have changed directory. */
static void set_target(const char *path)
{
    struct outbuf b = {T.target, 0, sizeof T.target - 1};
    if (path[0] != '/' && getcwd(T.target, sizeof T.target - 2)) {
        b.len = strlen(T.target);
        if (strcmp(path, ".") == 0)
            path = "";
        else if (b.len && T.target[b.len - 1] != '/')
            out_appendf(&b, "/");
    }
    out_appendf(&b, "%s", path);
    T.target[b.len] = '\0';
}

/* Opens path for writing without truncating it and takes an exclusive flock on it. Returns
 * the fd, -1 when it cannot be opened, or -2 when another process holds the lock. */
static int open_locked_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        close(fd);
        return -2;
    }
    return fd;
}

/* Does fd hold a trace that started after this process did? That one is a descendant's (a
 * program this process ran, which took the free FILE while this process had not written a
 * record yet) or a concurrent process's: it is not this process's to overwrite. */
static bool holds_later_trace(int fd)
{
    unsigned char h[TRACE_HEADER_BYTES];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h, TRACE_MAGIC, TRACE_MAGIC_BYTES) != 0)
        return false;
    uint64_t start = 0;
    for (int i = 7; i >= 0; i--)
        start = start << 8 | h[TRACE_HEADER_AT_START_NS + i];
    return start > T.start_ns;
}

/* trace_path=FILE: FILE, or FILE.PID for a forked child and for a process that finds FILE
 * taken (see holds_later_trace; a locked file is another process's by the lock). The lock
 * is held until the process ends, and only its holder truncates. Returns the fd, or -1
 * after one line. */
static int open_file_target(char *path, size_t cap)
{
    const struct shim_options *o = shim_opts();
    int pid = (int)getpid();
    struct outbuf b = {path, 0, cap - 1};
    int fd = -2;
    if (!T.child) {
        out_appendf(&b, "%s", T.target);
        path[b.len] = '\0';
        fd = open_locked_file(path);
        if (fd >= 0 && holds_later_trace(fd)) {
            close(fd);
            fd = -2;
        }
        if (fd == -2 && o->verbosity >= 1)
            out_printf("==%d==tlsan: trace file %s is in use by another process; writing "
                       "%s.%d\n",
                       pid, T.target, T.target, pid);
    }
    if (fd == -2) {
        b.len = 0;
        out_appendf(&b, "%s.%d", T.target, pid);
        path[b.len] = '\0';
        fd = open_locked_file(path);
    }
    if (fd == -2) {
        out_printf("tlsan: trace file %s is in use by another process; tracing off\n", path);
        return -1;
    }
    if (fd < 0) {
        out_printf("tlsan: cannot open trace file %s: %s; tracing off\n", path, errno_text(errno));
        return -1;
    }
    if (ftruncate(fd, 0) != 0) {
        out_printf("tlsan: cannot truncate trace file %s: %s; tracing off\n", path,
                   errno_text(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* trace_dir=DIR: a new file DIR/tlsan.PID.trace, or DIR/tlsan.PID.N.trace (N = 2, 3, ...)
 * when that name is taken (an earlier program this process exec'd from, or a PID used
 * again). O_EXCL: a file is only ever written by the process that created it. DIR is
 * created when missing (one level). Returns the fd, or -1 after one line. */
static int open_dir_target(char *path, size_t cap)
{
    int pid = (int)getpid();
    bool made = false;
    for (unsigned n = 1; n <= 1000; n++) {
        struct outbuf b = {path, 0, cap - 1};
        if (n == 1)
            out_appendf(&b, "%s/tlsan.%d.trace", T.target, pid);
        else
            out_appendf(&b, "%s/tlsan.%d.%u.trace", T.target, pid, n);
        path[b.len] = '\0';
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno == ENOENT && !made) {
            made = true;
            if (mkdir(T.target, 0777) == 0 || errno == EEXIST) {
                n--;
                continue;
            }
            errno = ENOENT;
        }
        if (errno != EEXIST)
            break;
    }
    out_printf("tlsan: cannot create a trace file in %s (%s): %s; tracing off\n", T.target, path,
               errno_text(errno));
    return -1;
}

/* Creates the trace file, maps it and writes the header: at the first record, so a process
 * with nothing to record (no annotation, no finding) leaves no file. Lock held. */
static void open_locked(void)
{
    char path[sizeof T.target + 64];
    int fd = T.where == WHERE_DIR ? open_dir_target(path, sizeof path)
                                  : open_file_target(path, sizeof path);
    if (fd < 0)
        return;
    T.fd = out_fd_park(fd, &T.fd_id);
    T.map = NULL;
    T.map_size = T.pos = 0;
    reset_tables();
    if (!ensure_room(TRACE_HEADER_BYTES)) { /* said why */
        if (T.fd >= 0)
            close(T.fd);
        T.fd = -1;
        return;
    }
    unsigned char *h = T.map;
    memcpy(h, TRACE_MAGIC, TRACE_MAGIC_BYTES);
    put_le(h + TRACE_HEADER_AT_VERSION, TRACE_VERSION, 2);
    h[TRACE_HEADER_AT_POINTER_SIZE] = (unsigned char)sizeof(void *);
    h[TRACE_HEADER_AT_BYTE_ORDER] =
        __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? TRACE_LITTLE_ENDIAN : TRACE_BIG_ENDIAN;
    put_le(h + TRACE_HEADER_AT_HEADER_BYTES, TRACE_HEADER_BYTES, 4);
    put_le(h + TRACE_HEADER_AT_PID, (uint32_t)getpid(), 4);
    put_le(h + TRACE_HEADER_AT_PARENT_PID, (uint32_t)getppid(), 4);
    put_le(h + TRACE_HEADER_AT_START_NS, T.start_ns, 8);
    T.pos = TRACE_HEADER_BYTES;
    T.on = true;
}

/* Before a record: the file exists (created now when a trace is wanted and not tried yet). */
static bool ready_locked(void)
{
    if (T.on)
        return true;
    if (T.where == WHERE_NONE || T.tried)
        return false;
    T.tried = true;
    open_locked();
    return T.on;
}

bool trace_open(void)
{
    const struct shim_options *o = shim_opts();
    trace_lock();
    if (!T.on) {
        const char *dir = o->trace_dir[0] ? o->trace_dir : getenv("TLSAN_TRACE_DIR");
        T.where = WHERE_NONE;
        T.tried = false;
        T.child = false;
        T.start_ns = now_ns();
        if (o->trace == 0) {
            /* asked for none */
        } else if (o->trace_path[0]) {
            T.where = WHERE_FILE;
            set_target(o->trace_path);
        } else if (dir && dir[0]) {
            T.where = WHERE_DIR;
            set_target(dir);
        } else if (o->trace > 0) {
            T.where = WHERE_DIR;
            set_target(".");
        }
    }
    bool wanted = T.where != WHERE_NONE;
    trace_unlock();
    return wanted;
}

bool trace_wanted(void)
{
    trace_lock();
    bool wanted = T.on || (T.where != WHERE_NONE && !T.tried);
    trace_unlock();
    return wanted;
}

void trace_reopen_in_child(void)
{
    /* Another thread of the parent may have held the lock at fork: it does not exist here. */
    pthread_mutex_init(&T.lock, NULL);
    if (T.map)
        munmap(T.map, T.map_size);
    if (T.fd >= 0 && out_fd_still(T.fd, &T.fd_id))
        close(T.fd); /* the parent's: its lock stays with the parent's copy */
    T.map = NULL;
    T.map_size = T.pos = 0;
    T.fd = -1;
    T.on = false;
    reset_tables();
    /* The child's own file, if it ever records anything. */
    T.child = true;
    T.tried = false;
    T.start_ns = now_ns();
}

void trace_close(uint64_t n_findings)
{
    trace_lock();
    if (T.on && !fd_ok_locked())
        T.on = false;
    if (T.on)
        EMIT(TRACE_END, { e_u(e, n_findings); });
    if (T.map)
        munmap(T.map, T.map_size);
    if (T.fd >= 0 && fd_ok_locked()) {
        if (ftruncate(T.fd, (off_t)T.pos) != 0)
            out_printf("tlsan: trace: cannot cut the trace file: %s\n", errno_text(errno));
        close(T.fd);
    }
    T.map = NULL;
    T.map_size = 0;
    T.fd = -1;
    T.on = false;
    T.where = WHERE_NONE; /* a record after the end (a late destructor) starts no new file */
    trace_unlock();
}

/* ---- records ---- */

#define LOCKED(...)                                                                                \
    do {                                                                                           \
        trace_lock();                                                                              \
        if (ready_locked()) {                                                                      \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        trace_unlock();                                                                            \
    } while (0)

uint64_t trace_string(const char *text)
{
    uint64_t id = 0;
    LOCKED(id = intern_locked(text, true););
    return id;
}

uint64_t trace_stack(uint32_t depot_id)
{
    uint64_t id = 0;
    LOCKED(id = stack_locked(depot_id, true););
    return id;
}

uint64_t trace_arena(const char *name, uintptr_t base, uint64_t size_bytes, uint32_t stack)
{
    uint64_t id = 0;
    LOCKED({
        uint32_t aid = T.next_arena + 1;
        EMIT(TRACE_ARENA, {
            e_u(e, aid);
            e_name(e, name);
            e_u(e, base);
            e_u(e, size_bytes);
            e_stack(e, stack);
        });
        if (T.on)
            id = T.next_arena = aid;
    });
    return id;
}

void trace_arena_end(uint64_t arena_id, uint32_t stack)
{
    LOCKED(EMIT(TRACE_ARENA_END, {
               e_u(e, arena_id);
               e_stack(e, stack);
           }););
}

void trace_bind(const char *tensor, uint64_t arena_id, uint64_t offset_bytes, uint64_t size_bytes,
                unsigned flags, uint32_t stack)
{
    uint64_t tid = (uint64_t)shim_tid();
    LOCKED(EMIT(TRACE_BIND, {
               e_name(e, tensor);
               e_u(e, arena_id);
               e_u(e, offset_bytes);
               e_u(e, size_bytes);
               e_u(e, flags);
               e_stack(e, stack);
               e_u(e, tid);
           }););
}

void trace_view(const char *tensor, const char *base, uint64_t view_offset_bytes,
                uint64_t size_bytes, uint32_t stack)
{
    LOCKED(EMIT(TRACE_VIEW, {
               e_name(e, tensor);
               e_name(e, base);
               e_u(e, view_offset_bytes);
               e_u(e, size_bytes);
               e_stack(e, stack);
           }););
}

void trace_release(const char *tensor, unsigned flags, uint32_t stack)
{
    LOCKED(EMIT(TRACE_RELEASE, {
               e_name(e, tensor);
               e_u(e, flags);
               e_stack(e, stack);
           }););
}

static void e_names(struct enc *e, const char *const *names, size_t n)
{
    e_u(e, names ? n : 0);
    for (size_t i = 0; names && i < n; i++)
        e_name(e, names[i]);
}

void trace_op(uint64_t op_id, const char *name, int stream, const char *const *reads,
              size_t n_reads, const char *const *writes, size_t n_writes,
              const char *const *inplace, size_t n_inplace, uint32_t stack)
{
    uint64_t tid = (uint64_t)shim_tid();
    LOCKED(EMIT(TRACE_OP, {
               e_u(e, op_id);
               e_name(e, name);
               e_u(e, (unsigned)stream);
               e_names(e, reads, n_reads);
               e_names(e, writes, n_writes);
               e_u(e, inplace ? n_inplace : 0);
               for (size_t i = 0; inplace && i < 2 * n_inplace; i++)
                   e_name(e, inplace[i]);
               e_stack(e, stack);
               e_u(e, tid);
           }););
}

void trace_op_end(uint64_t op_id)
{
    LOCKED(EMIT(TRACE_OP_END, { e_u(e, op_id); }););
}

void trace_record(int event, int stream, uint32_t stack)
{
    LOCKED(EMIT(TRACE_RECORD, {
               e_u(e, (unsigned)event);
               e_u(e, (unsigned)stream);
               e_stack(e, stack);
           }););
}

void trace_wait(int stream, int event, uint32_t stack)
{
    LOCKED(EMIT(TRACE_WAIT, {
               e_u(e, (unsigned)stream);
               e_u(e, (unsigned)event);
               e_stack(e, stack);
           }););
}

void trace_sync(uint32_t stack)
{
    LOCKED(EMIT(TRACE_SYNC, { e_stack(e, stack); }););
}

void trace_plan(const char *json, size_t json_bytes, uint32_t stack)
{
    LOCKED(EMIT(TRACE_PLAN, {
               e_str(e, json ? json : "", json ? json_bytes : 0);
               e_stack(e, stack);
           }););
}

void trace_finding(const char *kind, const char *message, const char *const *tensors,
                   size_t n_tensors, const char *const *roles, const uint32_t *stacks,
                   size_t n_stacks, uint64_t fault_stacks, bool suppressed)
{
    LOCKED(EMIT(TRACE_FINDING, {
               e_cstr(e, kind);
               e_cstr(e, message);
               e_names(e, tensors, n_tensors);
               e_u(e, stacks ? n_stacks : 0);
               for (size_t i = 0; stacks && i < n_stacks; i++) {
                   e_cstr(e, roles ? roles[i] : "");
                   e_stack(e, stacks[i]);
               }
               e_u(e, fault_stacks);
               e_u(e, suppressed ? TRACE_FINDING_SUPPRESSED : 0);
           }););
}
