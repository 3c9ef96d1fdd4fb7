/* help: one table of the commands' usage, description, options and exit statuses. */
#include "cli/help.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Help text lines are wrapped to this many columns. */
enum { HELP_WIDTH = 88 };

typedef struct {
    const char *name; /* the word after `tlsan` */
    /* Its usage lines, '\n' between them, each starting "tlsan NAME"; a line that goes on
     * with the one before starts with spaces, aligned as if "tlsan" sat at column 0. Printed
     * after "usage: " (the first line of a help) or seven spaces (the lines after). */
    const char *usage;
    const char *about; /* what it does: one paragraph, wrapped when printed */
    /* Its "Options:" lines as printed (two-space indent, descriptions at column 22), but
     * -h, --help, which every command takes. */
    const char *options;
    const char *exits; /* its exit statuses: one paragraph, wrapped when printed */
} command_help;

static const command_help commands[] = {
    {"check",
     "tlsan check [--format text|json|sarif] [-o FILE] [--svg FILE]\n"
     "            [--from plan|tvm|executorch] [--method NAME] [--max-paths N] PLAN...",
     "Checks plan files (plans or plan caches; '-' reads standard input) and reports every "
     "unsafe decision: tensors sharing bytes while live, bad in-place pairs, reuse the executor "
     "does not order, declared lifetimes that are too short, reads before writes, and layout "
     "errors (bounds, alignment, memory kinds, sizes).",
     "  -f, --format FORMAT text (default, sanitizer style), json (one object per input per\n"
     "                      line) or sarif (SARIF 2.1.0, one log over all inputs)\n"
     "  -o, --output FILE   write the report to FILE instead of standard output\n"
     "  --svg FILE          also draw the checked plans as a static SVG (like tlsan view)\n"
     "  --from plan|tvm|executorch\n"
     "                      the inputs are plans (default), TVM graph-executor JSON files or\n"
     "                      ExecuTorch programs (.pte; each method is its own plan)\n"
     "  --method NAME       with --from executorch: only that method\n"
     "  --max-paths N       branch paths enumerated per pair before falling back to the\n"
     "                      union of paths (default 4096)\n"
     "  --                  ends the options: every argument after it is a file\n",
     "Exit status: 0 no finding, 1 findings, 2 invalid input or usage error; with several "
     "inputs, the highest of them."},
    {"replay",
     "tlsan replay [--format text|json|sarif] [-o FILE] [--svg FILE] [--max-paths N]\n"
     "             [--no-symbolize] TRACE|DIR...",
     "Rebuilds the plan a recorded run performed (a libtlsan.so trace) and checks it, with every "
     "plan the engine handed over; a directory (tlsan run's) replays each process's trace in "
     "it.",
     "  -f, --format FORMAT text (default), json or sarif, as for tlsan check\n"
     "  -o, --output FILE   write the report to FILE instead of standard output\n"
     "  --svg FILE          also draw the replayed plans as a static SVG\n"
     "  --max-paths N       branch paths enumerated per pair (default 4096)\n"
     "  --no-symbolize      keep stacks as module+offset instead of reading function and\n"
     "                      line from the binaries\n"
     "  --                  ends the options: every argument after it is a trace\n",
     "Exit status: 0 no finding, 1 findings (also those the process reported while it ran), 2 "
     "an unreadable trace or usage error."},
    {"view", "tlsan view [--from plan|tvm|executorch] [--method NAME] [-o OUT.html] PLAN|TRACE",
     "Draws a plan, plan cache, TVM graph, ExecuTorch program or recorded run (a trace, found by "
     "its magic) as one self-contained HTML page: tensors over steps and bytes, conflicts in "
     "red.",
     "  -o, --output FILE   write the page to FILE ('-' for standard output; without -o the\n"
     "                      page is written to standard output only when that is not a\n"
     "                      terminal)\n"
     "  --from plan|tvm|executorch\n"
     "                      the input is a plan (default), a TVM graph-executor JSON or an\n"
     "                      ExecuTorch program (.pte)\n"
     "  --method NAME       with --from executorch: only that method\n",
     "Exit status: 0 the page was written (findings or not), 2 invalid input or usage error."},
    {"import",
     "tlsan import tvm GRAPH.json [-o PLAN.json]\n"
     "tlsan import executorch PROGRAM.pte [--method NAME] [-o PLAN.json]",
     "Converts a TVM graph-executor JSON (deploy_graph.json), or an ExecuTorch program (a plan "
     "per method; a plan cache keyed by method when it has several), into a plan.",
     "  --method NAME       executorch: only that method\n"
     "  -o, --output FILE   write the plan to FILE instead of standard output\n",
     "Exit status: 0 written, 2 invalid input or usage error."},
    {"export", "tlsan export TRACE|DIR [-o PLAN.json]",
     "Writes the plan a recorded run performed (a libtlsan.so trace), in the plan format; a "
     "directory (tlsan run's) must hold exactly one trace.",
     "  -o, --output FILE   write the plan to FILE instead of standard output\n",
     "Exit status: 0 written, 2 an unreadable trace or usage error."},
    {"run",
     "tlsan run [--trace-dir DIR | --trace FILE] [--options KEY=VALUE:...]\n"
     "          -- CMD [ARGS...]",
     "Runs CMD under libtlsan.so (the runtime shim), lets its reports go to standard error as "
     "they happen, then prints a summary of every process of the run.",
     "  --trace-dir DIR     the run directory: every process of the run, wherever it runs,\n"
     "                      writes DIR/tlsan.PID.trace there (default: a new\n"
     "                      ${TMPDIR:-/tmp}/tlsan-run.XXXXXX, named in the summary; replay it\n"
     "                      with tlsan replay DIR)\n"
     "  --trace FILE        one trace file instead (descendants write FILE.PID)\n"
     "  --options K=V:...   TLSAN_OPTIONS for the run, added after the environment's (the\n"
     "                      last of a repeated name wins); may be given more than once; the\n"
     "                      options are listed below\n"
     "  --                  ends the options: CMD and its arguments follow\n",
     "Exit status: CMD's own (`exitcode`, default 1, in place of a 0 when anything was found), "
     "or the signal that killed it repeated; 127/126 when CMD is not found/not executable; 2 a "
     "usage error."},
};

static const command_help *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* Prints TEXT from column `col` (what the caller printed before it on this line) on, wrapped
 * at spaces to HELP_WIDTH columns; lines after the first start with `indent` spaces. */
static void put_wrapped(FILE *out, const char *text, size_t col, size_t indent)
{
    size_t at = col;
    bool line_empty = true;
    while (*text) {
        while (*text == ' ')
            text++;
        size_t word = strcspn(text, " ");
        if (word == 0)
            break;
        if (!line_empty && at + 1 + word > HELP_WIDTH) {
            fprintf(out, "\n%*s", (int)indent, "");
            at = indent;
            line_empty = true;
        }
        if (!line_empty) {
            fputc(' ', out);
            at++;
        }
        fwrite(text, 1, word, out);
        at += word;
        text += word;
        line_empty = false;
    }
    fputc('\n', out);
}

/* Prints a command's usage lines; `first` says whether "usage: " leads the first of them. */
static void put_usage(FILE *out, const command_help *c, bool first)
{
    const char *line = c->usage;
    while (*line) {
        size_t n = strcspn(line, "\n");
        fprintf(out, "%s%.*s\n", first ? "usage: " : "       ", (int)n, line);
        first = false;
        line += n + (line[n] == '\n');
    }
}

int help_print_command(FILE *out, const char *command)
{
    const command_help *c = find_command(command);
    if (!c)
        return -1;
    put_usage(out, c, true);
    fputc('\n', out);
    put_wrapped(out, c->about, 0, 0);
    fprintf(out, "\nOptions:\n%s  -h, --help          show this help\n\n", c->options);
    put_wrapped(out, c->exits, 0, 0);
    return 0;
}

void help_print_overview(FILE *out)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        put_usage(out, &commands[i], i == 0);
    fputs("       tlsan COMMAND --help | tlsan --help | tlsan --version\n\n", out);
    put_wrapped(out,
                "tlsan, the Tensor Lifetime Sanitizer, proves a memory plan safe or reports each "
                "unsafe decision, statically (check, import, view) or in a running program "
                "(run, replay, export).",
                0, 0);
    fputs("\nCommands:\n", out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        fprintf(out, "  %-8s", commands[i].name);
        put_wrapped(out, commands[i].about, 10, 10);
    }
    fputs("\nEach command's --help lists its options and exit statuses.\n", out);
}

int help_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tlsan: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'tlsan --help')\n");
    return HELP_EXIT_USAGE;
}
