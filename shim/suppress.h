/* suppress.h - suppressions in the sanitizer convention: `suppressions=FILE`, one rule a line,
 *
 *     KIND:PATTERN      e.g.  double-free:libfoo.so*   heap-buffer-overflow:third_party_*.c
 *
 * KIND a finding kind (or `*` for any), PATTERN a glob (`*` any run of bytes, everything else
 * literal) matched against the whole name of every frame's function, source file (its path
 * or its last component) or module (its path or its last component), in every stack of the
 * report. `#` starts a comment line; blank lines are skipped. A matching finding is not
 * printed and does not count for the exit status; it is recorded in the trace as suppressed,
 * so `tlsan run` and `tlsan replay` count it apart. Loaded once at start-up, without malloc;
 * matching is read-only (thread-safe). */
#ifndef TLSAN_SHIM_SUPPRESS_H
#define TLSAN_SHIM_SUPPRESS_H

#include "symbolizer.h"

#include <stdbool.h>
#include <stddef.h>

/* Reads the rules of `path` (nothing when empty). A line that is not a rule, or a file that
 * cannot be read, gets one line on the report fd and is skipped. At most 256 rules. */
void suppress_load(const char *path);

/* The index of the first rule matching a finding of `kind` with these stacks (frames[i] holds
 * n_frames[i] frames), counted as used; -1 when none does. */
int suppress_match(const char *kind, const struct shim_frame *const *frames, const size_t *n_frames,
                   size_t n_stacks);

/* Whether s matches the glob pattern as a whole ('*' matches any run of bytes). Exposed for
 * the unit test. */
bool suppress_glob(const char *pattern, const char *s, size_t s_bytes);

/* Findings suppressed so far. */
unsigned long suppress_count(void);

#endif
