/* run: a program under the shim, then a summary from its trace. */
#include "run.h"

#include "trace_read.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The value of `exitcode` in an options string (the last one wins), or `def`. */
static int option_exitcode(const char *opts, int def)
{
    int code = def;
    for (const char *p = opts; p && *p;) {
        while (*p == ':' || *p == ',' || *p == ' ')
            p++;
        if (strncmp(p, "exitcode=", 9) == 0) {
            char *end;
            long v = strtol(p + 9, &end, 10);
            if (end != p + 9 && v >= 0 && v <= 255)
                code = (int)v;
        }
        p += strcspn(p, ":, ");
    }
    return code;
}

/* Counts the findings of a trace by kind into a one-line summary. Returns the count, or
 * -1 when the trace cannot be read (the reason goes to stderr). */
static long summarize_trace(const char *path, char *kinds, size_t kinds_bytes, bool *truncated)
{
    trace_data *t = NULL;
    tlsan_error err = {0};
    if (trace_read_file(path, &t, &err) != TLSAN_OK) {
        char buf[1200];
        fprintf(stderr, "tlsan: run: cannot read the trace %s: %s\n", path,
                tlsan_error_format(&err, buf, sizeof buf));
        return -1;
    }
    *truncated = trace_truncated(t);
    long total = 0;
    size_t len = 0;
    kinds[0] = '\0';
    /* kinds in order of first appearance, each with its count */
    for (size_t i = 0; i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        if (ev->tag != TRACE_FINDING)
            continue;
        total++;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const trace_event *e = trace_event_at(t, j);
            seen = e->tag == TRACE_FINDING && strcmp(e->text, ev->text) == 0;
        }
        if (seen)
            continue;
        size_t count = 0;
        for (size_t j = i; j < trace_n_events(t); j++) {
            const trace_event *e = trace_event_at(t, j);
            count += e->tag == TRACE_FINDING && strcmp(e->text, ev->text) == 0;
        }
        if (len < kinds_bytes)
            len += (size_t)snprintf(kinds + len, kinds_bytes - len, "%s%zu %s", len ? ", " : "",
                                    count, ev->text);
    }
    trace_data_free(t);
    return total;
}

int run_command(int argc, char **argv, const char *argv0)
{
    (void)argv0;
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
            if (!v)
                return run_usage("%s needs KEY=VALUE pairs", "--options");
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
            printf("usage: tlsan run [--trace FILE] [--options KEY=VALUE:...] -- CMD [ARGS...]\n");
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
    const char *old_preload = getenv("LD_PRELOAD");
    sprintf(preload, "%s%s%s", shim, old_preload && old_preload[0] ? " " : "",
            old_preload ? old_preload : "");
    int exitcode = option_exitcode(all, 1);
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
        setenv("TLSAN_OPTIONS", all, 1);
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

    char path[PATH_MAX];
    if (trace)
        snprintf(path, sizeof path, "%s", trace);
    else
        snprintf(path, sizeof path, "tlsan.%d.trace", (int)pid);
    char kinds[1024];
    bool truncated = false;
    long n = access(path, F_OK) == 0 ? summarize_trace(path, kinds, sizeof kinds, &truncated) : -2;
    if (n == -2)
        fprintf(stderr, "tlsan: run: no trace at %s (tracing off?); exit status %d\n", path,
                status);
    else if (n > 0)
        fprintf(stderr, "tlsan: run: %ld finding%s (%s); trace %s%s; exit status %d\n", n,
                n == 1 ? "" : "s", kinds, path, truncated ? " (truncated)" : "", exitcode);
    else if (n == 0)
        fprintf(stderr, "tlsan: run: no findings; trace %s%s; exit status %d\n", path,
                truncated ? " (truncated)" : "", status);
    return n > 0 ? exitcode : status;
}
