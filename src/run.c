/* run: a program under the shim, then a summary from its trace. */
#include "run.h"

#include "trace_read.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TLSAN_INSTALL_LIBDIR
#define TLSAN_INSTALL_LIBDIR "lib"
#endif

enum { RUN_USAGE = 2 };

static int run_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "tlsan: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'tlsan --help')\n");
    return RUN_USAGE;
}

static bool readable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* Finds libtlsan.so: $TLSAN_SHIM, next to the tlsan executable (the build tree), or in the
 * install's library directory beside its bin/. */
static bool find_shim(char *out, size_t out_bytes)
{
    const char *env = getenv("TLSAN_SHIM");
    if (env && env[0]) {
        snprintf(out, out_bytes, "%s", env);
        return readable(out);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    const char *candidates[] = {"%s/libtlsan.so", "%s/../" TLSAN_INSTALL_LIBDIR "/libtlsan.so",
                                "%s/../lib/libtlsan.so"};
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        snprintf(out, out_bytes, candidates[i], exe);
        if (readable(out)) {
            char real[PATH_MAX];
            if (realpath(out, real))
                snprintf(out, out_bytes, "%s", real);
            return true;
        }
    }
    return false;
}

/* The last value of `key` in an options string, read the way the shim reads it: pairs
 * separated by ':', ',' or blanks, a value optionally in single or double quotes. Returns
 * false when the key is absent. */
static bool option_text(const char *opts, const char *key, char *out, size_t out_bytes)
{
    bool found = false;
    size_t klen = strlen(key);
    for (const char *p = opts; p && *p;) {
        while (*p == ':' || *p == ',' || *p == ' ' || *p == '\t')
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ':' && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        size_t nlen = (size_t)(p - name);
        if (*p != '=')
            continue;
        p++;
        const char *v = p;
        size_t vlen;
        if (*p == '\'' || *p == '"') {
            char quote = *p++;
            v = p;
            while (*p && *p != quote)
                p++;
            vlen = (size_t)(p - v);
            if (*p)
                p++;
        } else {
            while (*p && *p != ':' && *p != ',' && *p != ' ' && *p != '\t')
                p++;
            vlen = (size_t)(p - v);
        }
        if (nlen == klen && strncmp(name, key, klen) == 0) {
            snprintf(out, out_bytes, "%.*s", (int)vlen, v);
            found = true;
        }
    }
    return found;
}

/* The process's exit status for a run with findings: `exitcode` as the shim applies it
 * (the low 8 bits of the number, as _exit does), 1 by default. */
static int option_exitcode(const char *opts)
{
    char v[64];
    if (!option_text(opts, "exitcode", v, sizeof v))
        return 1;
    char *end;
    long n = strtol(v, &end, 10);
    return end != v && *end == '\0' ? (int)(n & 0xff) : 1;
}

/* Findings by kind over every trace of a run. */
typedef struct tally {
    char kinds[32][48];
    long counts[32];
    size_t n_kinds;
    long total;
    size_t n_traces, n_truncated;
} tally;

/* Adds the FINDING records of one trace to the tally. Returns false when the trace cannot be
 * read (the reason goes to stderr). */
static bool tally_trace(tally *ty, const char *path)
{
    trace_data *t = NULL;
    tlsan_error err = {0};
    if (trace_read_file(path, &t, &err) != TLSAN_OK) {
        char buf[1200];
        fprintf(stderr, "tlsan: run: cannot read the trace %s: %s\n", path,
                tlsan_error_format(&err, buf, sizeof buf));
        return false;
    }
    ty->n_traces++;
    ty->n_truncated += trace_truncated(t);
    for (size_t i = 0; i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        if (ev->tag != TRACE_FINDING)
            continue;
        ty->total++;
        size_t k = 0;
        while (k < ty->n_kinds && strcmp(ty->kinds[k], ev->text) != 0)
            k++;
        if (k == ty->n_kinds && k < sizeof ty->kinds / sizeof *ty->kinds) {
            snprintf(ty->kinds[k], sizeof ty->kinds[k], "%s", ev->text);
            ty->n_kinds++;
        }
        if (k < ty->n_kinds)
            ty->counts[k]++;
    }
    trace_data_free(t);
    return true;
}

/* The traces of the program's descendants: a forked child, or a program it executed while
 * the first still held the file, writes FILE.PID. */
static void tally_descendants(tally *ty, const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    DIR *d = opendir(slash ? (dir[0] ? dir : "/") : ".");
    if (!d)
        return;
    size_t blen = strlen(base);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strncmp(n, base, blen) != 0 || n[blen] != '.' || !n[blen + 1] ||
            strspn(n + blen + 1, "0123456789") != strlen(n + blen + 1))
            continue;
        char child[PATH_MAX + 256];
        snprintf(child, sizeof child, "%s%s%s", slash ? (dir[0] ? dir : "") : "", slash ? "/" : "",
                 n);
        tally_trace(ty, child);
    }
    closedir(d);
}

static const char run_help[] =
    "usage: tlsan run [--trace FILE] [--options KEY=VALUE:...] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD under libtlsan.so (the runtime shim), prints its reports and a summary, and\n"
    "exits with `exitcode` (default 1) when anything was found, else with CMD's own status.\n"
    "\n"
    "Options:\n"
    "  --trace FILE        where the run's trace goes (default tlsan.PID.trace; replay it\n"
    "                      with tlsan replay)\n"
    "  --options K=V:...   TLSAN_OPTIONS for the run, added after the environment's; may be\n"
    "                      given more than once. --options help=1 lists them (halt_on_error,\n"
    "                      exitcode, log_path, trace_path, trace, quarantine_mb, fill,\n"
    "                      checksum, redzone, stack_depth, verbosity, and for ggml inject,\n"
    "                      ggml_plan_path)\n"
    "  --                  ends the options: CMD and its arguments follow\n"
    "  -h, --help          show this help\n";

int run_command(int argc, char **argv)
{
    const char *trace = NULL;
    char *options = NULL;
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (strcmp(a, "--trace") == 0 || strncmp(a, "--trace=", 8) == 0) {
            trace = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!trace || !trace[0])
                return run_usage("%s needs a file name", "--trace");
        } else if (strcmp(a, "--options") == 0 || strncmp(a, "--options=", 10) == 0) {
            const char *v = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || strcmp(v, "--") == 0) {
                free(options);
                return run_usage("%s needs KEY=VALUE pairs", "--options");
            }
            size_t old = options ? strlen(options) : 0;
            char *grown = realloc(options, old + strlen(v) + 2);
            if (!grown) {
                free(options);
                return run_usage("%s", "out of memory");
            }
            options = grown;
            sprintf(options + old, "%s%s", old ? ":" : "", v);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            free(options);
            fputs(run_help, stdout);
            return 0;
        } else {
            free(options);
            return run_usage("unknown option '%s' for run", a);
        }
    }
    if (i >= argc) {
        free(options);
        return run_usage("%s: no command given (tlsan run -- CMD ARGS)", "run");
    }
    char shim[PATH_MAX];
    if (!find_shim(shim, sizeof shim)) {
        free(options);
        fprintf(stderr, "tlsan: error: run: libtlsan.so not found next to tlsan or in its "
                        "library directory (set TLSAN_SHIM to its path)\n");
        return RUN_USAGE;
    }

    /* TLSAN_OPTIONS: the environment's, then --options, then the trace path. */
    const char *env_opts = getenv("TLSAN_OPTIONS");
    size_t cap = (env_opts ? strlen(env_opts) : 0) + (options ? strlen(options) : 0) +
                 (trace ? strlen(trace) : 0) + 32;
    char *all = malloc(cap);
    char *preload =
        malloc(strlen(shim) + (getenv("LD_PRELOAD") ? strlen(getenv("LD_PRELOAD")) : 0) + 2);
    if (!all || !preload) {
        free(all);
        free(preload);
        free(options);
        return run_usage("%s", "out of memory");
    }
    snprintf(all, cap, "%s%s%s%s%s", env_opts ? env_opts : "",
             env_opts && env_opts[0] && options ? ":" : "", options ? options : "",
             trace ? ":trace_path=" : "", trace ? trace : "");
    /* Where the trace goes: --trace, else a trace_path among the options, else
     * tlsan.PID.trace, named explicitly so the program's descendants write FILE.PID beside
     * it, where the summary finds them. */
    char path[PATH_MAX] = "";
    char flag[16];
    bool tracing = !(option_text(all, "trace", flag, sizeof flag) && strcmp(flag, "0") == 0);
    if (!option_text(all, "trace_path", path, sizeof path))
        path[0] = '\0';
    const char *old_preload = getenv("LD_PRELOAD");
    sprintf(preload, "%s%s%s", shim, old_preload && old_preload[0] ? " " : "",
            old_preload ? old_preload : "");
    int exitcode = option_exitcode(all);
    free(options);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tlsan: error: run: fork failed: %s\n", strerror(errno));
        free(all);
        free(preload);
        return RUN_USAGE;
    }
    if (pid == 0) {
        char *opts = all;
        char own[PATH_MAX + 64];
        if (!path[0]) {
            size_t len = strlen(all) + sizeof own;
            opts = malloc(len);
            if (!opts)
                _exit(127);
            snprintf(own, sizeof own, "tlsan.%d.trace", (int)getpid());
            snprintf(opts, len, "%s%strace_path=%s", all, all[0] ? ":" : "", own);
        }
        setenv("TLSAN_OPTIONS", opts, 1);
        setenv("LD_PRELOAD", preload, 1);
        execvp(argv[i], argv + i);
        fprintf(stderr, "tlsan: error: run: cannot run '%s': %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    free(all);
    free(preload);
    /* Like system(): the terminal's ^C belongs to the program; we only wait for it. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);

    int status;
    if (WIFEXITED(wstatus)) {
        status = WEXITSTATUS(wstatus);
        if (status == 127)
            return status; /* exec failed (said above) or the program's own 127 */
    } else {
        status = 128 + WTERMSIG(wstatus);
        fprintf(stderr, "tlsan: run: '%s' was killed by signal %d (%s)\n", argv[i],
                WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
    }

    if (!path[0])
        snprintf(path, sizeof path, "tlsan.%d.trace", (int)pid);
    tally ty = {0};
    if (tracing && access(path, F_OK) == 0)
        tally_trace(&ty, path);
    if (tracing)
        tally_descendants(&ty, path);
    char kinds[1024] = "";
    size_t len = 0;
    for (size_t k = 0; k < ty.n_kinds && len < sizeof kinds; k++)
        len += (size_t)snprintf(kinds + len, sizeof kinds - len, "%s%ld %s", k ? ", " : "",
                                ty.counts[k], ty.kinds[k]);
    char where[PATH_MAX + 64];
    snprintf(where, sizeof where, "trace %s%s%s", path,
             ty.n_traces > 1 ? " and its descendants' FILE.PID" : "",
             ty.n_truncated ? " (truncated: a process died or called exec)" : "");
    if (!tracing || ty.n_traces == 0)
        fprintf(stderr, "tlsan: run: no trace at %s (tracing off?); exit status %d\n", path,
                status);
    else if (ty.total > 0)
        fprintf(stderr, "tlsan: run: %ld finding%s (%s); %s; exit status %d\n", ty.total,
                ty.total == 1 ? "" : "s", kinds, where, exitcode);
    else
        fprintf(stderr, "tlsan: run: no findings; %s; exit status %d\n", where, status);
    return ty.total > 0 ? exitcode : status;
}
