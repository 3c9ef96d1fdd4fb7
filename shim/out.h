/* out.h - formatted output that never allocates (usable inside allocation hooks). */
#ifndef TLSAN_SHIM_OUT_H
#define TLSAN_SHIM_OUT_H

#include <stdarg.h>
#include <stddef.h>

/* A fixed buffer with a length; formatting truncates silently at the capacity. */
struct outbuf {
    char *data;
    size_t len, cap;
};

/* Formats into b: supports %s %c %d %i %u %x %p %zu %zd %zx %ld %lu %lx %lld %llu %llx %%
 * with an optional 0/width (e.g. %08llx). No allocation, async-signal-safe. */
void out_appendf(struct outbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void out_vappendf(struct outbuf *b, const char *fmt, va_list ap);

/* The report fd: stderr, or the log_path file (opened at init). */
int out_fd(void);
/* Opens PATH.PID (O_APPEND) as the report fd when path is not empty; on failure prints one
 * line and keeps stderr. Called by shim_init, and again in a forked child. */
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
