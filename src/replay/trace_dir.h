/* trace_dir: the traces in a directory, such as the run directory of `tlsan run` or a
 * trace_dir=DIR of the shim, where each process writes tlsan.PID.trace (or
 * tlsan.PID.N.trace). `tlsan run` counts them, `tlsan replay DIR` and `tlsan export DIR`
 * read them. */
#ifndef TLSAN_TRACE_DIR_H
#define TLSAN_TRACE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* The paths of a directory's traces: DIR/NAME for each regular file NAME ending in
 * ".trace" (a dot file is not one; nor is a directory). The shim's names come first, by
 * process id then image (tlsan.99.trace, tlsan.99.2.trace, tlsan.100.trace), so a run's
 * processes come in order of their ids; other names follow in version order. The list owns
 * its strings. */
typedef struct trace_list {
    char **paths;
    size_t n;
} trace_list;

/* Lists dir into *out (emptied first). Returns 0, or -1 with errno set when the directory
 * cannot be read (ENOTDIR, ENOENT, EACCES, ...) or memory runs out (ENOMEM); *out is then
 * empty. */
int trace_dir_list(const char *dir, trace_list *out);
/* Frees the paths; the list is empty afterwards. NULL is fine. */
void trace_list_free(trace_list *l);
/* True when path names a directory (following symlinks). */
bool trace_dir_is(const char *path);

#endif
