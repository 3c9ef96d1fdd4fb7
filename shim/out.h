/* out.h - formatted output that never allocates (usable inside allocation hooks). */
#ifndef TLSAN_SHIM_OUT_H
#define TLSAN_SHIM_OUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A fixed buffer with a length; formatting truncates silently at the capacity. */
struct outbuf {
    char *data;
    size_t len, cap;
};

/* Formats into b: supports %s %c %d %i %u %x %p %zu %zd %zx %ld %lu %lx %lld %llu %llx %%
 * with an optional 0/width (e.g. %08llx). No allocation, async-signal-safe. */
void out_appendf(struct outbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void out_vappendf(struct outbuf *b, const char *fmt, va_list ap);

/* Copies the string src into dst (cap bytes, cap > 0), cut to cap - 1 bytes; always
 * NUL-terminated. No allocation, async-signal-safe. */
void out_copy_str(char *dst, size_t cap, const char *src);

/* The shim's own file descriptors (the log, the trace) and a program that closes every fd
 * it did not open (daemons, closefrom): the number may be closed under the shim and handed
 * to a file of the program's. So the shim's fds sit at a high number (not the lowest free
 * one the program's next open gets), close on exec, and before anything that could harm
 * the file behind them (a write, a resize, a close) they are checked to still be the file
 * the shim opened; once not, the shim never touches that number again. */
struct out_fd_id {
    dev_t dev;
    ino_t ino;
};
/* Moves fd to a high number (F_DUPFD_CLOEXEC; the old number is closed) and records the
 * file's identity. The number is 1024 or the next free one above when the soft
 * RLIMIT_NOFILE is above 1032; otherwise just past the soft limit (unreachable by the
 * program's open() while it keeps that limit), or, when the hard limit allows no room
 * there, among the top 4 numbers below the limit (the program then runs out of descriptors
 * one earlier than natively). Returns the fd to use (fd itself when it cannot be moved). */
int out_fd_park(int fd, struct out_fd_id *id);
/* True when fd is still open on the file recorded in id. */
bool out_fd_still(int fd, const struct out_fd_id *id);

/* The report fd: stderr, or the log_path file (once the first write opened it). */
int out_fd(void);
/* Reports go to PATH.PID (O_APPEND) when path is not empty: opened by the first write, so a
 * process that writes nothing creates no file and holds no fd; when it cannot be opened,
 * one line and stderr. Drops the current log file (in a forked child: the parent's, not the
 * child's to write). Called by shim_init, and again in a forked child. When the program
 * closes the file's fd (or it then names another file), reports go to stderr from then on,
 * after one line. */
void out_open_log(const char *path);
/* Sets the report fd directly (tests). */
void out_set_fd(int fd);
/* The lock around report writes (held across one write, never while allocating); the
 * fork handlers take it. */
void out_lock(void);
void out_unlock(void);
void out_reinit_lock(void);
/* Writes all of data to the report fd (retrying short writes and EINTR). */
void out_write(const char *data, size_t len);
/* out_appendf into a stack buffer, then out_write. */
void out_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
