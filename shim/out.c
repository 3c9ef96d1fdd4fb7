/* out.c - a small printf that never allocates, and the report fd.
 *
 * snprintf may allocate (locale data, wide conversions) and takes locks, so nothing inside an
 * allocation hook may use it: this formatter covers the conversions the reports need and
 * writes into a caller's fixed buffer, truncating silently. */
#include "out.h"
#include "core/options.h"
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int g_fd = 2;
static struct out_fd_id g_fd_id; /* of g_fd when it is the log file (g_fd > 2) */
static shim_lock g_write_lock = SHIM_LOCK_INIT;
/* log_path, until the first write opens PATH.PID (then ""): a process that reports nothing
 * leaves no file and holds no descriptor, as with AddressSanitizer. Read and cleared under
 * the write lock, like g_fd. */
static char g_log_path[OPTIONS_STR_MAX_BYTES + 1];

static void put_char(struct outbuf *b, char c)
{
    /* One byte is kept for a terminating NUL so the buffer can be used as a C string. */
    if (b->cap && b->len + 1 < b->cap) {
        b->data[b->len++] = c;
        b->data[b->len] = '\0';
    }
}

static void put_chars(struct outbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_char(b, s[i]);
}

static void put_padded(struct outbuf *b, const char *s, size_t n, unsigned width, int left,
                       char pad)
{
    if (!left)
        for (size_t i = n; i < width; i++)
            put_char(b, pad);
    put_chars(b, s, n);
    if (left)
        for (size_t i = n; i < width; i++)
            put_char(b, ' ');
}

/* Digits of v in base 10 or 16 into the end of tmp; returns the count. */
static size_t digits(unsigned long long v, unsigned base, char *tmp, size_t tmp_len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    do {
        tmp[tmp_len - 1 - n++] = hex[v % base];
        v /= base;
    } while (v && n < tmp_len);
    return n;
}

static void put_number(struct outbuf *b, unsigned long long mag, int negative, unsigned base,
                       const char *prefix, unsigned width, int left, int zero)
{
    char tmp[32];
    size_t n = digits(mag, base, tmp, sizeof tmp);
    size_t pre = strlen(prefix) + (negative ? 1 : 0);
    size_t total = n + pre;
    if (zero && !left) {
        /* Sign and prefix go before the zeros: "-0042", "0x00ff". */
        if (negative)
            put_char(b, '-');
        put_chars(b, prefix, strlen(prefix));
        for (size_t i = total; i < width; i++)
            put_char(b, '0');
        put_chars(b, tmp + sizeof tmp - n, n);
        return;
    }
    if (!left)
        for (size_t i = total; i < width; i++)
            put_char(b, ' ');
    if (negative)
        put_char(b, '-');
    put_chars(b, prefix, strlen(prefix));
    put_chars(b, tmp + sizeof tmp - n, n);
    if (left)
        for (size_t i = total; i < width; i++)
            put_char(b, ' ');
}

void out_vappendf(struct outbuf *b, const char *fmt, va_list ap)
{
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put_char(b, *f);
            continue;
        }
        f++;
        int left = 0, zero = 0;
        for (;; f++) {
            if (*f == '-')
                left = 1;
            else if (*f == '0')
                zero = 1;
            else
                break;
        }
        unsigned width = 0;
        while (*f >= '0' && *f <= '9')
            width = width * 10 + (unsigned)(*f++ - '0');
        int precision = -1;
        if (*f == '.') {
            f++;
            if (*f == '*') {
                precision = va_arg(ap, int);
                f++;
            } else {
                precision = 0;
                while (*f >= '0' && *f <= '9')
                    precision = precision * 10 + (*f++ - '0');
            }
        }
        int len = 0; /* 1 l, 2 ll, 3 z */
        if (*f == 'z') {
            len = 3;
            f++;
        } else if (*f == 'l') {
            len = 1;
            f++;
            if (*f == 'l') {
                len = 2;
                f++;
            }
        }
        switch (*f) {
        case '\0':
            return;
        case '%':
            put_char(b, '%');
            break;
        case 'c': {
            char c = (char)va_arg(ap, int);
            put_padded(b, &c, 1, width, left, ' ');
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            size_t n = precision >= 0 ? strnlen(s, (size_t)precision) : strlen(s);
            put_padded(b, s, n, width, left, ' ');
            break;
        }
        case 'd':
        case 'i': {
            long long v = len == 2   ? va_arg(ap, long long)
                          : len == 1 ? va_arg(ap, long)
                          : len == 3 ? (long long)va_arg(ap, ssize_t)
                                     : va_arg(ap, int);
            unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            put_number(b, mag, v < 0, 10, "", width, left, zero);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = len == 2   ? va_arg(ap, unsigned long long)
                                   : len == 1 ? va_arg(ap, unsigned long)
                                   : len == 3 ? va_arg(ap, size_t)
                                              : va_arg(ap, unsigned);
            put_number(b, v, 0, *f == 'x' ? 16 : 10, "", width, left, zero);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(ap, void *);
            put_number(b, v, 0, 16, "0x", width, left, zero);
            break;
        }
        default:
            /* Unknown conversion: shown as is, so a format bug is visible, not a crash. */
            put_char(b, '%');
            put_char(b, *f);
            break;
        }
    }
}

void out_appendf(struct outbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_vappendf(b, fmt, ap);
    va_end(ap);
}

int out_fd(void)
{
    return g_fd;
}

void out_set_fd(int fd)
{
    g_fd = fd;
    if (fd > 2) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            g_fd_id = (struct out_fd_id){st.st_dev, st.st_ino};
    }
}

/* Where the shim's descriptors go: 1024 and up (past select()'s FD_SETSIZE, where few
 * programs ever get) when the soft limit leaves room there; when it does not (Debian's
 * default soft limit is 1024), just past the soft limit, which no open() of the program can
 * return, the soft limit being raised for the one fcntl that puts it there; only when the
 * hard limit forbids that too, the top numbers below the limit. Never beyond 1024 + a few:
 * the kernel's descriptor table grows to the highest number, and fork copies it. */
#define PARK_BASE 1024
#define PARK_ROOM 8

int out_fd_park(int fd, struct out_fd_id *id)
{
    struct stat st;
    if (fstat(fd, &st) == 0) {
        id->dev = st.st_dev;
        id->ino = st.st_ino;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return fd;
    rlim_t soft = rl.rlim_cur;
    int high = -1;
    if (soft > PARK_BASE + PARK_ROOM) {
        high = fcntl(fd, F_DUPFD_CLOEXEC, PARK_BASE);
    } else if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= soft + PARK_ROOM) {
        /* The program's threads could see the raised limit for the time of one fcntl. */
        struct rlimit up = {soft + PARK_ROOM, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            int saved = errno;
            high = fcntl(fd, F_DUPFD_CLOEXEC, (int)soft);
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && high >= 0) {
                close(high); /* the program must find its own limit */
                high = -1;
            }
            errno = saved;
        }
    }
    if (high < 0 && soft > PARK_ROOM && soft <= PARK_BASE + PARK_ROOM)
        high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(soft - PARK_ROOM / 2));
    if (high < 0 || high < fd) {
        if (high >= 0)
            close(high);
        return fd;
    }
    close(fd);
    return high;
}

bool out_fd_still(int fd, const struct out_fd_id *id)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

void out_open_log(const char *path)
{
    /* In a forked child g_fd is the parent's file: it is not the child's to write. */
    int old = g_fd;
    bool old_ours = old > 2 && out_fd_still(old, &g_fd_id);
    g_fd = 2;
    if (old_ours)
        close(old);
    out_copy_str(g_log_path, sizeof g_log_path, path ? path : "");
}

/* At the first write: PATH.PID opened as the report fd, or one line and stderr. Only
 * system calls (open, fstat, fcntl, rlimits): a first report may be made in a signal
 * handler. Called under the write lock. */
static void open_log_now(void)
{
    char name[OPTIONS_STR_MAX_BYTES + 32];
    struct outbuf b = {name, 0, sizeof name};
    out_appendf(&b, "%s.%d", g_log_path, (int)getpid());
    g_log_path[0] = '\0';
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        /* errno as a number: strerror may allocate (translations). */
        char line[sizeof name + 96];
        struct outbuf m = {line, 0, sizeof line};
        out_appendf(&m, "tlsan: cannot open log_path file '%s' (errno %d); reporting to stderr\n",
                    name, errno);
        ssize_t ignored = write(2, m.data, m.len);
        (void)ignored;
        return;
    }
    g_fd = out_fd_park(fd, &g_fd_id);
}

/* Before a write to the log file: still the file opened? Otherwise stderr from now on. */
static void check_log_fd(void)
{
    if (g_fd <= 2 || out_fd_still(g_fd, &g_fd_id))
        return;
    g_fd = 2;
    static const char msg[] = "tlsan: the log_path file's descriptor was closed or reused by the "
                              "program; reporting to stderr\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
}

void out_write(const char *data, size_t len)
{
    if (g_log_path[0])
        open_log_now();
    else
        check_log_fd();
    while (len) {
        ssize_t n = write(g_fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

void out_printf(const char *fmt, ...)
{
    char buf[1024];
    struct outbuf b = {buf, 0, sizeof buf};
    va_list ap;
    va_start(ap, fmt);
    out_vappendf(&b, fmt, ap);
    va_end(ap);
    int saved = errno;
    out_lock();
    out_write(b.data, b.len);
    out_unlock();
    errno = saved;
}

void out_lock(void)
{
    shim_lock_take(&g_write_lock);
}

void out_unlock(void)
{
    shim_lock_drop(&g_write_lock);
}

void out_reinit_lock(void)
{
    shim_lock_reset(&g_write_lock);
}

void out_copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}
