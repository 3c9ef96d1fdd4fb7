/* main: the `tlsan` command: check, replay, view, import and export here, run in run.c. Their
 * usage, options and exit statuses are help.c's table, which --help prints.
 *
 * Exit status (plan-format.md): 0 no finding, 1 at least one finding, 2 an input that is not
 * a valid plan, bad usage or an output that cannot be written; with several inputs, the
 * highest status of any. */
#include "replay/replay.h"
#include "replay/runtime_findings.h"
#include "report/report.h"
#include "cli/help.h"
#include "cli/run.h"
#include "replay/trace_dir.h"
#include "replay/trace_read.h"
#include "picture/view.h"
#include "tlsan/check.h"
#include "tlsan/plan.h"
#include "tlsan/executorch.h"
#include "tlsan/tvm.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/version.h"

enum { EXIT_CLEAN = 0, EXIT_FINDINGS = 1, EXIT_INVALID = 2 };

/* Matches "--name VALUE" and "--name=VALUE" (and a short alias "-x VALUE"). On a match
 * *value is set (NULL when the value is missing) and *i advanced past what was used. */
static bool option_value(int argc, char **argv, int *i, const char *name, const char *alias,
                         const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) == 0 && a[n] == '=') {
        *value = a + n + 1;
        return true;
    }
    if (strcmp(a, name) != 0 && !(alias && strcmp(a, alias) == 0))
        return false;
    *value = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

/* Opens the output: standard output for NULL. Reports its own error. */
static FILE *open_output(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "tlsan: error: cannot open '%s' for writing: %s\n", path, strerror(errno));
    return f;
}

/* Flushes and closes the output; EXIT_INVALID when anything failed to reach it. */
static int close_output(FILE *f, const char *path, bool write_failed)
{
    bool bad = write_failed;
    if (path && strcmp(path, "-") == 0)
        path = NULL;
    if (f == stdout)
        bad = fflush(stdout) != 0 || ferror(stdout) || bad;
    else
        bad = fclose(f) != 0 || bad;
    if (bad) {
        fprintf(stderr, "tlsan: error: cannot write the output to %s\n",
                path ? path : "standard output");
        return EXIT_INVALID;
    }
    return EXIT_CLEAN;
}

/* Prints "tlsan: error: FILE: WHERE: WHAT" for a refused input. */
static void print_input_error(const char *path, tlsan_status st, tlsan_error *err, int saved_errno)
{
    if (!err->file[0])
        snprintf(err->file, sizeof err->file, "%s", path);
    if (!err->what[0]) {
        if (st == TLSAN_ERR_IO && saved_errno)
            snprintf(err->what, sizeof err->what, "cannot read the file: %s",
                     strerror(saved_errno));
        else
            snprintf(err->what, sizeof err->what, "%s", tlsan_status_name(st));
    }
    char buf[1200];
    fprintf(stderr, "tlsan: error: %s\n", tlsan_error_format(err, buf, sizeof buf));
}

/* ---- check ---- */

typedef enum source { SOURCE_PLAN, SOURCE_TVM, SOURCE_EXECUTORCH, SOURCE_TRACE } source;

typedef struct check_args {
    tlsan_format format;
    const char *out_path;
    const char *svg_path; /* check --svg */
    source from;
    const char *method; /* --from executorch: only this method */
    bool symbolize;     /* replay: read function and line from the binaries */
    tlsan_check_options options;
    char **files;
    size_t n_files;
} check_args;

/* One checked unit: a plan file, or one of the plans a trace yields (the run itself, then
 * each plan the engine handed over). report is NULL when it was refused. */
typedef struct input {
    char *label; /* the name reports use for it */
    tlsan_plan *plan;
    tlsan_cache *cache;
    tlsan_report *report;
    runtime_findings *runtime; /* a trace's run: what the process reported while it ran */
    tlsan_error err;
} input;

static void input_free(input *in)
{
    tlsan_report_free(in->report);
    runtime_findings_free(in->runtime);
    tlsan_plan_free(in->plan);
    tlsan_cache_free(in->cache);
    free(in->label);
    memset(in, 0, sizeof *in);
}

/* A growable list of inputs. */
typedef struct input_list {
    input *items;
    size_t n, cap;
} input_list;

static input *input_push(input_list *l, const char *label)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        input *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown)
            return NULL;
        l->items = grown;
        l->cap = cap;
    }
    input *in = &l->items[l->n];
    memset(in, 0, sizeof *in);
    if (!(in->label = strdup(label)))
        return NULL;
    l->n++;
    return in;
}

/* Checks a unit that was read; returns its exit status (2 when checking itself failed). */
static int check_unit(const check_args *args, input *in)
{
    tlsan_check_options options = args->options;
    /* a recorded run's streams really ran at the same time: a read no write is ordered
     * before read whatever the bytes held then */
    options.order_reads = in->runtime != NULL;
    /* and repeated its graph: one finding per cause however many runs show it */
    options.group_repeats = in->runtime != NULL;
    tlsan_status st = in->plan ? tlsan_check(in->plan, &options, &in->report)
                               : tlsan_check_cache(in->cache, &options, &in->report);
    if (st != TLSAN_OK || !in->report) {
        memset(&in->err, 0, sizeof in->err);
        snprintf(in->err.what, sizeof in->err.what, "checking failed: %s", tlsan_status_name(st));
        print_input_error(in->label, st, &in->err, 0);
        tlsan_report_free(in->report);
        in->report = NULL;
        return EXIT_INVALID;
    }
    if (in->runtime)
        report_set_runtime(in->report, in->runtime->items, in->runtime->n, in->runtime->process);
    return report_total_count(in->report) ? EXIT_FINDINGS : EXIT_CLEAN;
}

/* Prints what a trace says about its own run: truncation, and the findings the process
 * reported while it ran (replay lists them; they are not checked again). */
static size_t describe_trace(const char *path, const trace_data *t)
{
    size_t n_findings = 0, n_suppressed = 0;
    char kinds[512] = "";
    size_t kinds_len = 0;
    for (size_t i = 0; i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        if (ev->tag != TRACE_FINDING)
            continue;
        if (ev->suppressed) {
            n_suppressed++;
            continue;
        }
        n_findings++;
        if (!strstr(kinds, ev->text) && kinds_len + strlen(ev->text) + 3 < sizeof kinds)
            kinds_len += (size_t)snprintf(kinds + kinds_len, sizeof kinds - kinds_len, "%s%s",
                                          kinds_len ? ", " : "", ev->text);
    }
    if (trace_truncated(t))
        fprintf(stderr,
                "tlsan: replay: %s: the trace has no end record (the process died, called exec "
                "or is still running); replaying the %zu events it holds\n",
                path, trace_n_events(t));
    if (n_findings)
        fprintf(stderr, "tlsan: replay: %s: the process reported %zu finding%s at run time (%s)\n",
                path, n_findings, n_findings == 1 ? "" : "s", kinds);
    if (n_suppressed)
        fprintf(stderr, "tlsan: replay: %s: %zu finding%s suppressed at run time (not shown)\n",
                path, n_suppressed, n_suppressed == 1 ? "" : "s");
    return n_findings;
}

/* Reads one trace into units: the run, then each handed-over plan. Returns the worst exit
 * status of reading (2 for an unreadable trace). */
static int load_trace(const check_args *args, const char *path, input_list *units)
{
    trace_data *t = NULL;
    tlsan_error err = {0};
    errno = 0;
    tlsan_status st = trace_read_file(path, &t, &err);
    if (st != TLSAN_OK) {
        print_input_error(path, st, &err, errno);
        return EXIT_INVALID;
    }
    /* Findings the process reported while it ran count for the exit status too: some (a
     * checksum mismatch, a stale write) leave nothing a plan could show. */
    int status = describe_trace(path, t) ? EXIT_FINDINGS : EXIT_CLEAN;
    char name[64];
    snprintf(name, sizeof name, "run of pid %u", (unsigned)trace_pid(t));
    input *in = input_push(units, path);
    if (!in) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        trace_data_free(t);
        return EXIT_INVALID;
    }
    st = replay_build(t, name, args->symbolize, stderr, &in->plan, &in->err);
    if (st != TLSAN_OK) {
        print_input_error(path, st, &in->err, 0);
        status = EXIT_INVALID;
    }
    if (runtime_findings_read(t, args->symbolize, &in->runtime) != TLSAN_OK) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        status = EXIT_INVALID;
    }
    size_t k = 0;
    for (size_t i = 0; i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        if (ev->tag != TRACE_PLAN)
            continue;
        char label[4200];
        snprintf(label, sizeof label, "%s (plan %zu handed over)", path, ++k);
        in = input_push(units, label);
        if (!in) {
            fprintf(stderr, "tlsan: error: out of memory\n");
            status = EXIT_INVALID;
            break;
        }
        st = tlsan_read_buffer(ev->text, ev->text_bytes, label, &in->plan, &in->cache, &in->err);
        if (st != TLSAN_OK) {
            print_input_error(label, st, &in->err, 0);
            status = EXIT_INVALID;
        }
    }
    trace_data_free(t);
    return status;
}

/* Reads one ExecuTorch program into units, one per method ("PATH (method NAME)" when it has
 * several). Returns the exit status of reading. */
static int load_executorch(const check_args *args, const char *path, input_list *units)
{
    tlsan_plan **plans = NULL;
    size_t n = 0;
    tlsan_error err = {0};
    errno = 0;
    tlsan_status st = tlsan_import_executorch_file(path, args->method, &plans, &n, &err);
    if (st != TLSAN_OK) {
        print_input_error(path, st, &err, errno);
        return EXIT_INVALID;
    }
    int status = EXIT_CLEAN;
    for (size_t i = 0; i < n; i++) {
        char label[4200];
        const char *name = tlsan_plan_name(plans[i]), *colon = name ? strchr(name, ':') : NULL;
        if (n > 1)
            snprintf(label, sizeof label, "%s (method %s)", path, colon ? colon + 1 : name);
        else
            snprintf(label, sizeof label, "%s", path);
        input *in = input_push(units, label);
        if (!in) {
            fprintf(stderr, "tlsan: error: out of memory\n");
            status = EXIT_INVALID;
            break;
        }
        in->plan = plans[i];
        plans[i] = NULL;
    }
    tlsan_executorch_plans_free(plans, n);
    return status;
}

/* Reads one file into units. Returns the worst exit status of reading. */
static int load_file(const check_args *args, const char *path, input_list *units)
{
    if (args->from == SOURCE_TRACE)
        return load_trace(args, path, units);
    if (args->from == SOURCE_EXECUTORCH)
        return load_executorch(args, path, units);
    input *in = input_push(units, path);
    if (!in) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        return EXIT_INVALID;
    }
    errno = 0;
    tlsan_status st = args->from == SOURCE_TVM
                          ? tlsan_import_tvm_file(path, &in->plan, &in->err)
                          : tlsan_read_file(path, &in->plan, &in->cache, &in->err);
    int saved_errno = errno;
    if (st == TLSAN_OK && !in->plan && !in->cache)
        st = TLSAN_ERR_STATE; /* a reader that returned nothing: treat as refused */
    if (st != TLSAN_OK) {
        print_input_error(path, st, &in->err, saved_errno);
        tlsan_plan_free(in->plan);
        tlsan_cache_free(in->cache);
        in->plan = NULL;
        in->cache = NULL;
        return EXIT_INVALID;
    }
    return EXIT_CLEAN;
}

/* --from KIND for check and view. */
static bool parse_from(const char *v, source *from)
{
    if (strcmp(v, "plan") == 0)
        *from = SOURCE_PLAN;
    else if (strcmp(v, "tvm") == 0)
        *from = SOURCE_TVM;
    else if (strcmp(v, "executorch") == 0)
        *from = SOURCE_EXECUTORCH;
    else
        return false;
    return true;
}

static int parse_check(int argc, char **argv, check_args *args, bool replay)
{
    memset(args, 0, sizeof *args);
    args->from = replay ? SOURCE_TRACE : SOURCE_PLAN;
    args->symbolize = true;
    args->files = calloc((size_t)argc + 1, sizeof *args->files);
    if (!args->files) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        return EXIT_INVALID;
    }
    const char *cmd = replay ? "replay" : "check";
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
            args->files[args->n_files++] = argv[i];
        } else if (strcmp(a, "--") == 0) {
            options_done = true;
        } else if (option_value(argc, argv, &i, "--format", "-f", &v)) {
            if (!v)
                return help_usage_error("%s needs a value: text, json or sarif", a);
            if (strcmp(v, "text") == 0)
                args->format = TLSAN_FORMAT_TEXT;
            else if (strcmp(v, "json") == 0)
                args->format = TLSAN_FORMAT_JSON;
            else if (strcmp(v, "sarif") == 0)
                args->format = TLSAN_FORMAT_SARIF;
            else
                return help_usage_error("unknown format '%s' (text, json or sarif)", v);
        } else if (option_value(argc, argv, &i, "--output", "-o", &v)) {
            if (!v || !v[0])
                return help_usage_error("%s needs a file name", a);
            args->out_path = v;
        } else if (option_value(argc, argv, &i, "--svg", NULL, &v)) {
            if (!v || !v[0])
                return help_usage_error("%s needs a file name", a);
            args->svg_path = v;
        } else if (!replay && option_value(argc, argv, &i, "--from", NULL, &v)) {
            if (!v)
                return help_usage_error("%s needs a value: plan, tvm or executorch", a);
            if (!parse_from(v, &args->from))
                return help_usage_error(
                    "unknown input kind '%s' for --from (plan, tvm or executorch)", v);
        } else if (!replay && option_value(argc, argv, &i, "--method", NULL, &v)) {
            if (!v || !v[0])
                return help_usage_error("%s needs a method name", a);
            args->method = v;
        } else if (replay && strcmp(a, "--no-symbolize") == 0) {
            args->symbolize = false;
        } else if (option_value(argc, argv, &i, "--max-paths", NULL, &v)) {
            char *end = NULL;
            errno = 0;
            unsigned long n = v ? strtoul(v, &end, 10) : 0;
            if (!v || !v[0] || *end || errno || n == 0 || n > UINT32_MAX || v[0] == '-')
                return help_usage_error("--max-paths needs a positive integer, not '%s'",
                                        v ? v : "");
            args->options.max_paths = (uint32_t)n;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help_print_command(stdout, replay ? "replay" : "check");
            return -1; /* handled: exit 0 */
        } else {
            return help_usage_error("unknown option '%s'", a);
        }
    }
    if (args->n_files == 0)
        return help_usage_error(replay ? "%s: no trace file given" : "%s: no plan file given", cmd);
    if (args->method && args->from != SOURCE_EXECUTORCH)
        return help_usage_error("%s: --method needs --from executorch", cmd);
    return EXIT_CLEAN;
}

/* Draws the checked units (refused ones are left out) as HTML or SVG into path (NULL:
 * standard output). Returns EXIT_CLEAN, or EXIT_INVALID when it could not be written. */
static int write_views(const input_list *units, const char *path, bool html)
{
    view_unit *views = calloc(units->n + 1, sizeof *views);
    if (!views) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        return EXIT_INVALID;
    }
    size_t n = 0;
    for (size_t i = 0; i < units->n; i++) {
        const input *in = &units->items[i];
        if (in->report)
            views[n++] = (view_unit){in->label, in->plan, in->cache, in->report};
    }
    FILE *out = open_output(path);
    int status = EXIT_INVALID;
    if (out) {
        bool failed = (html ? view_write_html(views, n, out) : view_write_svg(views, n, out)) != 0;
        status = close_output(out, path, failed);
    }
    free(views);
    return status;
}

/* Writes one checked (or refused) input in text or JSON; -1 when the output failed. */
static int write_one(const check_args *args, const input *in, FILE *out, bool color)
{
    if (args->format == TLSAN_FORMAT_JSON)
        return in->report ? report_write_json(in->report, in->label, out)
                          : report_write_json_error(in->label, &in->err, out);
    if (!in->report)
        return 0; /* text: the error went to standard error */
    report_text_options topt = {NULL, color};
    return report_write_text(in->report, in->label, &topt, out);
}

/* The traces of a directory given to replay or export (a run directory of `tlsan run`).
 * Returns 0, or EXIT_INVALID after a message when it cannot be read or holds none. */
static int list_trace_dir(const char *dir, trace_list *l)
{
    if (trace_dir_list(dir, l) != 0) {
        fprintf(stderr, "tlsan: error: %s: cannot read the directory: %s\n", dir, strerror(errno));
        return EXIT_INVALID;
    }
    if (l->n == 0) {
        fprintf(stderr, "tlsan: error: %s: no traces (*.trace) in this directory\n", dir);
        return EXIT_INVALID;
    }
    return EXIT_CLEAN;
}

/* replay DIR: each directory among the inputs becomes its traces, in process order (one
 * report each). *owned keeps the paths made. Returns the worst status of listing. */
static int expand_trace_dirs(check_args *args, trace_list *owned)
{
    int status = EXIT_CLEAN;
    size_t n_out = 0, cap = args->n_files + 1;
    char **files = calloc(cap, sizeof *files);
    if (!files) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        return EXIT_INVALID;
    }
    for (size_t i = 0; i < args->n_files; i++) {
        trace_list l;
        if (strcmp(args->files[i], "-") == 0 || !trace_dir_is(args->files[i])) {
            files[n_out++] = args->files[i];
            continue;
        }
        if (list_trace_dir(args->files[i], &l) != EXIT_CLEAN) {
            status = EXIT_INVALID;
            continue;
        }
        char **grown_files = realloc(files, (cap + l.n) * sizeof *files);
        char **grown_owned = realloc(owned->paths, (owned->n + l.n) * sizeof *owned->paths);
        if (grown_files)
            files = grown_files;
        if (grown_owned)
            owned->paths = grown_owned;
        if (!grown_files || !grown_owned) {
            trace_list_free(&l);
            fprintf(stderr, "tlsan: error: out of memory\n");
            status = EXIT_INVALID;
            break;
        }
        cap += l.n;
        for (size_t k = 0; k < l.n; k++)
            files[n_out++] = owned->paths[owned->n++] = l.paths[k];
        free(l.paths);
    }
    free(args->files);
    args->files = files;
    args->n_files = n_out;
    return status;
}

static int cmd_check(int argc, char **argv, bool replay)
{
    check_args args;
    int status = parse_check(argc, argv, &args, replay);
    if (status != EXIT_CLEAN) {
        free(args.files);
        return status < 0 ? EXIT_CLEAN : status;
    }
    trace_list from_dirs = {0};
    if (replay)
        status = expand_trace_dirs(&args, &from_dirs);
    input_list units = {0};
    bool write_failed = false;
    FILE *out = open_output(args.out_path);
    if (!out) {
        free(args.files);
        trace_list_free(&from_dirs);
        return EXIT_INVALID;
    }
    const char *no_color = getenv("NO_COLOR");
    bool color = out == stdout && args.format == TLSAN_FORMAT_TEXT && isatty(STDOUT_FILENO) &&
                 !(no_color && no_color[0]);

    /* SARIF is one document over all inputs, so those are kept until the end; text and JSON
     * stream one file at a time. */
    for (size_t i = 0; i < args.n_files && !write_failed; i++) {
        size_t first = units.n;
        int st = load_file(&args, args.files[i], &units);
        if (st > status)
            status = st;
        for (size_t u = first; u < units.n; u++) {
            input *in = &units.items[u];
            if (in->plan || in->cache) {
                st = check_unit(&args, in);
                if (st > status)
                    status = st;
            }
            if (args.format != TLSAN_FORMAT_SARIF && !write_failed)
                write_failed = write_one(&args, in, out, color) != 0;
        }
        if (args.format != TLSAN_FORMAT_SARIF && !args.svg_path) {
            for (size_t u = first; u < units.n; u++)
                input_free(&units.items[u]);
            units.n = first;
        }
    }
    if (args.format == TLSAN_FORMAT_SARIF) {
        const tlsan_report **reports = calloc(units.n + 1, sizeof *reports);
        const tlsan_error **errors = calloc(units.n + 1, sizeof *errors);
        const char **labels = calloc(units.n + 1, sizeof *labels);
        if (!reports || !errors || !labels) {
            write_failed = true;
        } else {
            for (size_t i = 0; i < units.n; i++) {
                reports[i] = units.items[i].report;
                errors[i] = &units.items[i].err;
                labels[i] = units.items[i].label;
            }
            write_failed = report_write_sarif(reports, labels, errors, units.n, out) != 0;
        }
        free(reports);
        free(errors);
        free(labels);
    }
    if (args.svg_path && write_views(&units, args.svg_path, false) != EXIT_CLEAN)
        status = EXIT_INVALID;
    for (size_t i = 0; i < units.n; i++)
        input_free(&units.items[i]);
    free(units.items);
    if (close_output(out, args.out_path, write_failed) != EXIT_CLEAN)
        status = EXIT_INVALID;
    free(args.files);
    trace_list_free(&from_dirs);
    return status;
}

/* ---- view ---- */

/* tlsan view: reads and checks one input as `check` does (a trace, found by its magic, is
 * replayed first), then draws it. Exit 0 when the page is written, findings or not. */
static int cmd_view(int argc, char **argv)
{
    check_args args = {.from = SOURCE_PLAN, .symbolize = true};
    const char *file = NULL, *v;
    bool from_given = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (file)
                return help_usage_error("view takes one plan or trace, not also '%s'", a);
            file = a;
        } else if (option_value(argc, argv, &i, "--output", "-o", &v)) {
            if (!v || !v[0])
                return help_usage_error("%s needs a file name", a);
            args.out_path = v;
        } else if (option_value(argc, argv, &i, "--from", NULL, &v)) {
            if (!v || !parse_from(v, &args.from))
                return help_usage_error("--from needs plan, tvm or executorch, not '%s'",
                                        v ? v : "");
            from_given = true;
        } else if (option_value(argc, argv, &i, "--method", NULL, &v)) {
            if (!v || !v[0])
                return help_usage_error("%s needs a method name", a);
            args.method = v;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help_print_command(stdout, "view");
            return EXIT_CLEAN;
        } else {
            return help_usage_error("unknown option '%s'", a);
        }
    }
    if (!file)
        return help_usage_error("%s: no plan or trace given", "view");
    /* A page of HTML is no use on a terminal: ask where it should go. */
    if (!args.out_path && isatty(STDOUT_FILENO))
        return help_usage_error("%s", "view writes an HTML page: give -o OUT.html (or -o - to "
                                      "write it to the terminal anyway)");
    if (args.method && args.from != SOURCE_EXECUTORCH)
        return help_usage_error("%s: --method needs --from executorch", "view");
    if (!from_given && view_file_is_trace(file))
        args.from = SOURCE_TRACE;
    input_list units = {0};
    int status = load_file(&args, file, &units);
    for (size_t u = 0; u < units.n; u++)
        if ((units.items[u].plan || units.items[u].cache) &&
            check_unit(&args, &units.items[u]) == EXIT_INVALID)
            status = EXIT_INVALID;
    if (status != EXIT_INVALID)
        status = write_views(&units, args.out_path, true);
    for (size_t i = 0; i < units.n; i++)
        input_free(&units.items[i]);
    free(units.items);
    return status;
}

/* ---- export ---- */

/* The arguments of a command that takes one input file and -o FILE (export, import tvm).
 * Returns -1 when they are fine, else the exit status to return (usage printed). */
static int parse_one_input(int argc, char **argv, const char *what, const char *command,
                           const char **file, const char **out_path)
{
    const char *v;
    *file = *out_path = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (*file)
                return help_usage_error("this command takes one input file, not also '%s'", a);
            *file = a;
        } else if (option_value(argc, argv, &i, "--output", "-o", &v)) {
            if (!v || !v[0])
                return help_usage_error("%s needs a file name", a);
            *out_path = v;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help_print_command(stdout, command);
            return EXIT_CLEAN;
        } else {
            return help_usage_error("unknown option '%s'", a);
        }
    }
    if (!*file)
        return help_usage_error("%s: no input file given", what);
    return -1;
}

static int export_trace(const char *trace, const char *out_path);

static int cmd_export(int argc, char **argv)
{
    const char *trace, *out_path;
    int usage = parse_one_input(argc, argv, "export", "export", &trace, &out_path);
    if (usage >= 0)
        return usage;
    /* A run directory: its one trace; with several, which plan is wanted is not ours to
     * guess. */
    trace_list l = {0};
    if (trace_dir_is(trace)) {
        if (list_trace_dir(trace, &l) != EXIT_CLEAN)
            return EXIT_INVALID;
        if (l.n > 1) {
            fprintf(stderr,
                    "tlsan: error: export: %s holds %zu traces (one per process); export one "
                    "of them:\n",
                    trace, l.n);
            for (size_t k = 0; k < l.n; k++)
                fprintf(stderr, "  tlsan export %s\n", l.paths[k]);
            trace_list_free(&l);
            return EXIT_INVALID;
        }
        trace = l.paths[0];
    }
    int status = export_trace(trace, out_path);
    trace_list_free(&l);
    return status;
}

/* Writes the plan of one trace file. */
static int export_trace(const char *trace, const char *out_path)
{
    trace_data *t = NULL;
    tlsan_plan *plan = NULL;
    tlsan_error err = {0};
    errno = 0;
    tlsan_status st = trace_read_file(trace, &t, &err);
    if (st == TLSAN_OK) {
        char name[64];
        snprintf(name, sizeof name, "run of pid %u", (unsigned)trace_pid(t));
        st = replay_build(t, name, true, stderr, &plan, &err);
    }
    trace_data_free(t);
    if (st != TLSAN_OK) {
        print_input_error(trace, st, &err, errno);
        return EXIT_INVALID;
    }
    FILE *out = open_output(out_path);
    if (!out) {
        tlsan_plan_free(plan);
        return EXIT_INVALID;
    }
    bool write_failed = tlsan_plan_write(plan, out, true) != TLSAN_OK;
    tlsan_plan_free(plan);
    return close_output(out, out_path, write_failed);
}

/* ---- import ---- */

/* tlsan import executorch PROGRAM.pte [--method NAME] [-o PLAN.json] */
static int import_executorch(int argc, char **argv)
{
    const char *method = NULL, *v;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) {
        fprintf(stderr, "tlsan: error: out of memory\n");
        return EXIT_INVALID;
    }
    int n_rest = 0;
    for (int i = 0; i < argc; i++) {
        if (option_value(argc, argv, &i, "--method", NULL, &v)) {
            if (!v || !v[0]) {
                free(rest);
                return help_usage_error("%s needs a method name", "--method");
            }
            method = v;
        } else {
            rest[n_rest++] = argv[i];
        }
    }
    const char *program, *out_path;
    int usage = parse_one_input(n_rest, rest, "import executorch", "import", &program, &out_path);
    free(rest);
    if (usage >= 0)
        return usage;
    tlsan_plan **plans = NULL;
    size_t n = 0;
    tlsan_error err = {0};
    errno = 0;
    tlsan_status st = tlsan_import_executorch_file(program, method, &plans, &n, &err);
    if (st != TLSAN_OK) {
        print_input_error(program, st, &err, errno);
        return EXIT_INVALID;
    }
    FILE *out = open_output(out_path);
    if (!out) {
        tlsan_executorch_plans_free(plans, n);
        return EXIT_INVALID;
    }
    bool write_failed = tlsan_executorch_write(plans, n, out, true) != TLSAN_OK;
    tlsan_executorch_plans_free(plans, n);
    return close_output(out, out_path, write_failed);
}

static int cmd_import(int argc, char **argv)
{
    if (argc >= 1 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
        help_print_command(stdout, "import");
        return EXIT_CLEAN;
    }
    if (argc < 1)
        return help_usage_error("%s: which format? (tlsan import tvm GRAPH.json, or executorch "
                                "PROGRAM.pte)",
                                "import");
    if (strcmp(argv[0], "executorch") == 0)
        return import_executorch(argc - 1, argv + 1);
    if (strcmp(argv[0], "tvm") != 0)
        return help_usage_error("cannot import '%s': 'tvm' and 'executorch' are known", argv[0]);
    const char *graph, *out_path;
    int usage = parse_one_input(argc - 1, argv + 1, "import tvm", "import", &graph, &out_path);
    if (usage >= 0)
        return usage;

    tlsan_plan *plan = NULL;
    tlsan_error err = {0};
    errno = 0;
    tlsan_status st = tlsan_import_tvm_file(graph, &plan, &err);
    if (st != TLSAN_OK) {
        print_input_error(graph, st, &err, errno);
        tlsan_plan_free(plan);
        return EXIT_INVALID;
    }
    FILE *out = open_output(out_path);
    if (!out) {
        tlsan_plan_free(plan);
        return EXIT_INVALID;
    }
    bool write_failed = tlsan_plan_write(plan, out, true) != TLSAN_OK;
    tlsan_plan_free(plan);
    return close_output(out, out_path, write_failed);
}

/* The checker builds a few large arrays per plan and frees them phase by phase. glibc maps
 * a large block and unmaps it when freed, but after the first such free it raises its
 * threshold (up to 32 MB), so that later blocks of that size come from the heap, where a
 * freed one stays resident: a fixed threshold keeps the peak at what is live (about 20 MB
 * less at 10^6 roots, docs/performance.md). Only the checking commands: `run` executes
 * another program. */
static void map_large_blocks(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return help_usage_error("%s", "no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        help_print_overview(stdout);
        return EXIT_CLEAN;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tlsan %s\n", TLSAN_VERSION_STRING);
        return EXIT_CLEAN;
    }
    if (strcmp(cmd, "check") == 0 || strcmp(cmd, "replay") == 0 || strcmp(cmd, "export") == 0)
        map_large_blocks();
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 2, argv + 2, false);
    if (strcmp(cmd, "replay") == 0)
        return cmd_check(argc - 2, argv + 2, true);
    if (strcmp(cmd, "export") == 0)
        return cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return run_command(argc - 2, argv + 2);
    if (strcmp(cmd, "import") == 0)
        return cmd_import(argc - 2, argv + 2);
    if (strcmp(cmd, "view") == 0)
        return cmd_view(argc - 2, argv + 2);
    if (cmd[0] == '-')
        return help_usage_error("unknown option '%s'", cmd);
    return help_usage_error("unknown command '%s'", cmd);
}
