/* options: the runtime options (TLSAN_OPTIONS). One table (SHIM_OPTIONS below: type, name,
 * default, one-line doc) gives the struct, the defaults, the parser, help=1 and the options
 * table of docs/runtime.md (tests/core/test_options.c fails when the two disagree). Two
 * readers use the one parser: the shim, which obeys the options, and `tlsan run`, which reads
 * where the traces go and which exit status means "findings"; so they cannot read the same
 * text two ways.
 *
 * The rule, for every reader:
 * - pairs NAME=VALUE, separated by any run of ':' ',' space, tab, newline or carriage return;
 * - a VALUE may be quoted with ' or " (it then holds separators; no escapes; it ends at the
 *   matching quote or at the end of the text);
 * - pairs apply in order: of a repeated name, the last good value wins;
 * - forgiving, as compiler-rt's sanitizers: an unknown name, a pair without '=' or a bad value
 *   gets one message and is ignored (the option keeps the value it had: its default or an
 *   earlier pair's), and the pairs after it still apply. The shim prints the messages (one
 *   line each, on its report stream); `tlsan run` stays quiet, as every process of the run
 *   says them.
 *
 * Nothing here allocates, locks or touches a global: the shim parses in its constructor,
 * possibly from inside the program's first malloc, before its heap side table exists. The
 * caller owns the struct and the buffers. */
#ifndef TLSAN_CORE_OPTIONS_H
#define TLSAN_CORE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum shim_checksum { SHIM_CHECKSUM_OFF, SHIM_CHECKSUM_SHARED, SHIM_CHECKSUM_ALL };
/* log_format: reports as text (the AddressSanitizer layout) or one JSON line each. */
enum shim_log_format { SHIM_LOG_TEXT, SHIM_LOG_JSON };
/* halt_on_error: 0 never (every finding is reported and the program goes on), 1 at the first
 * finding (exit with `exitcode`), native (the default) where the program would have died
 * without the shim: a heap error that glibc aborts on (double or invalid free, a write over
 * the allocator's header before a block) ends with SIGABRT, and an access to a freed large
 * block (glibc unmaps those) with SIGSEGV; every other finding goes on. */
enum shim_halt { SHIM_HALT_NEVER, SHIM_HALT_ALWAYS, SHIM_HALT_NATIVE };

/* The longest STR value, in bytes (a longer one is a bad value). */
#define OPTIONS_STR_MAX_BYTES 255

/* X(type, name, default, doc). Types: BOOL (0/1, also true/false), INT (decimal, optional
 * sign, fits an int), SIZE (unsigned decimal, fits 64 bits), STR (up to OPTIONS_STR_MAX_BYTES
 * bytes), CHECKSUM (all|shared|off), HALT (0|1|native), LOGFMT (text|json). The doc is one
 * line: help=1 prints it and docs/runtime.md's table repeats it word for word. */
#define SHIM_OPTIONS(X)                                                                            \
    X(HALT, halt_on_error, SHIM_HALT_NATIVE,                                                       \
      "1: exit with `exitcode` at the first finding; native: die where glibc would; 0: never")     \
    X(INT, exitcode, 1, "exit status of a process that had findings")                              \
    X(STR, log_path, "", "write reports to PATH.PID instead of stderr")                            \
    X(LOGFMT, log_format, SHIM_LOG_TEXT,                                                           \
      "text, or json: each report one JSON line (kind, message, stacks)")                          \
    X(INT, trace, -1, "1: record a trace; 0: never; -1: only with trace_path or trace_dir")        \
    X(STR, trace_path, "",                                                                         \
      "trace file (a forked child, or a process finding it in use, writes FILE.PID)")              \
    X(STR, trace_dir, "", "write traces as DIR/tlsan.PID.trace (default: $TLSAN_TRACE_DIR)")       \
    X(SIZE, quarantine_mb, 8,                                                                      \
      "megabytes of memory the quarantine of freed blocks may hold (0: none)")                     \
    X(BOOL, fill, 1, "fill freed blocks and released tensors with the NaN sentinel")               \
    X(CHECKSUM, checksum, SHIM_CHECKSUM_SHARED, "hash tensors around reuse: all|shared|off")       \
    X(SIZE, redzone, 16, "bytes of redzone after each heap block, 16 before it (0: none)")         \
    X(SIZE, stack_depth, 16, "frames captured per stack (0: no stacks)")                           \
    X(BOOL, stack_memo, 1,                                                                         \
      "x86-64: a stack captured again from one place is read back, not walked (0: always walk)")   \
    X(SIZE, sample_rate, 1000,                                                                     \
      "guard one allocation in N (up to a page) with a page of its own; 1: every one; 0: none")    \
    X(BOOL, symbolize, 1,                                                                          \
      "function, file:line and inlined frames in reports (libdw, loaded at the first report)")     \
    X(INT, verbosity, 0, "0: reports only; 1: start/exit lines; 2: more")                          \
    X(STR, suppressions, "", "file of KIND:PATTERN lines; a finding they match is not reported")   \
    X(BOOL, help, 0, "print this list and continue")                                               \
    X(STR, inject, "", "ggml: self-test fault to plant: move@NODE or move@NODE@VICTIM")            \
    X(STR, ggml_plan_path, "", "ggml: write each graph checked as a plan to PATH.PID.N.json")

struct shim_options {
#define SHIM_OPT_DECL_BOOL(n)     bool n
#define SHIM_OPT_DECL_INT(n)      int n
#define SHIM_OPT_DECL_SIZE(n)     uint64_t n
#define SHIM_OPT_DECL_STR(n)      char n[OPTIONS_STR_MAX_BYTES + 1]
#define SHIM_OPT_DECL_CHECKSUM(n) enum shim_checksum n
#define SHIM_OPT_DECL_HALT(n)     enum shim_halt n
#define SHIM_OPT_DECL_LOGFMT(n)   enum shim_log_format n
#define X(type, name, def, doc)   SHIM_OPT_DECL_##type(name);
    SHIM_OPTIONS(X)
#undef X
};

/* Sets every option to its default. */
void options_defaults(struct shim_options *opts);

/* Parses text (NULL or "" is no pairs) by the rule above, over the values already in opts.
 * Returns true when every pair was good. Otherwise err (may be NULL; err_bytes its size)
 * holds one message per bad pair, in order, each "tlsan: TLSAN_OPTIONS: ..." without its
 * newline, joined by '\n' and cut to fit (always NUL-terminated when err_bytes > 0). */
bool options_parse(struct shim_options *opts, const char *text, char *err, size_t err_bytes);

/* Writes "name=value" (the option's current value in opts, as help=1 shows defaults: numbers
 * in decimal, words as written, strings in single quotes) to buf, cut to fit, NUL-terminated.
 * Returns false (buf "") when no option has that name. */
bool options_format_pair(const struct shim_options *opts, const char *name, char *buf,
                         size_t buf_bytes);

/* The help text help=1 prints: a heading line, then one line per option, in table order:
 * two spaces, "name=default" padded to 24 columns, a space and the doc. Written to buf (cut
 * to fit, NUL-terminated; OPTIONS_HELP_BYTES always suffice); returns its length. */
#define OPTIONS_HELP_BYTES 4096
size_t options_help_text(char *buf, size_t buf_bytes);

#endif
