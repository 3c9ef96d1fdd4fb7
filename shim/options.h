/* options.h - TLSAN_OPTIONS: one table drives the struct, the parser, help=1 and the docs. */
#ifndef TLSAN_SHIM_OPTIONS_H
#define TLSAN_SHIM_OPTIONS_H

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

/* X(type, name, default, help). Types: BOOL (0/1, also true/false), INT (decimal), SIZE
 * (unsigned decimal), STR (up to 255 bytes), CHECKSUM (all|shared|off), HALT (0|1|native),
 * LOGFMT (text|json). */
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
#define SHIM_OPT_DECL_STR(n)      char n[256]
#define SHIM_OPT_DECL_CHECKSUM(n) enum shim_checksum n
#define SHIM_OPT_DECL_HALT(n)     enum shim_halt n
#define SHIM_OPT_DECL_LOGFMT(n)   enum shim_log_format n
#define X(type, name, def, help)  SHIM_OPT_DECL_##type(name);
    SHIM_OPTIONS(X)
#undef X
};

/* Sets every option to its default. */
void options_defaults(struct shim_options *o);

/* Parses "key=value:key=value" (also ',' or whitespace as separators; a value may be quoted
 * with ' or ") over the current values. Never allocates. On an unknown key or a bad value
 * the pair is ignored (the option keeps its previous value), parsing continues with the next
 * pair, and the function returns false; err (may be NULL) then holds one message per bad pair,
 * each a full line "tlsan: TLSAN_OPTIONS: ..." without its newline, joined by '\n'. */
bool options_parse(struct shim_options *o, const char *text, char *err, size_t err_bytes);

/* Appends "name=value" for one option (its current value in o) to b; nothing if unknown. */
struct outbuf;
void options_append(struct outbuf *b, const struct shim_options *o, const char *name);

/* Writes the option table (name, default, help) to fd, one line each. Never allocates. */
void options_print_help(int fd);

#endif
