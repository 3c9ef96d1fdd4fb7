/* run: a program under the shim, then a summary from its trace. */
#include "cli/run.h"

#include "cli/help.h"

#include "core/options.h"
#include "replay/trace_dir.h"
#include "replay/trace_read.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TLSAN_INSTALL_LIBDIR
#define TLSAN_INSTALL_LIBDIR "lib"
#endif

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

/* The options every process of the run will obey, read with the shim's own parser (one rule,
 * src/core/options.h). Quiet: each process's shim says what is wrong with them. */
static void read_run_options(const char *text, struct shim_options *opts)
{
    options_defaults(opts);
    options_parse(opts, text, NULL, 0);
}

/* Findings by kind over every trace of a run. */
typedef struct tally {
    char kinds[32][48];
    long counts[32];
    size_t n_kinds;
    long total;
    long suppressed; /* FINDING records a suppression matched: not in total */
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
        fprintf(stderr, "tlsan: run: cannot read the trace %s\n",
                tlsan_error_format(&err, buf, sizeof buf));
        return false;
    }
    ty->n_traces++;
    ty->n_truncated += trace_truncated(t);
    for (size_t i = 0; i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        if (ev->tag != TRACE_FINDING)
            continue;
        if (ev->suppressed) {
            ty->suppressed++;
            continue;
        }
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

/* trace_path=FILE: a forked child, or a program executed while another process held FILE,
 * writes FILE.PID beside it. */
static void tally_siblings(tally *ty, const char *path)
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

/* Where the run's traces go. */
typedef struct run_trace {
    enum { TRACE_OFF, TRACE_TO_FILE, TRACE_TO_DIR } mode;
    bool made; /* the default run directory, created here: removed again when left empty */
    char path[PATH_MAX]; /* the file, or the directory; absolute */
} run_trace;

/* path made absolute against the working directory (not resolved: it may not exist yet). */
static bool absolute(const char *path, char *out, size_t out_bytes)
{
    char cwd[PATH_MAX];
    if (path[0] == '/')
        return (size_t)snprintf(out, out_bytes, "%s", path) < out_bytes;
    if (!getcwd(cwd, sizeof cwd))
        return false;
    return (size_t)snprintf(out, out_bytes, "%s/%s", cwd, path) < out_bytes;
}

/* The run directory: `given` (created when missing; refused when it already holds traces,
 * which this run's count would take for its own), or a new ${TMPDIR:-/tmp}/tlsan-run.XXXXXX
 * (/tmp when TMPDIR cannot hold it, said at verbosity >= 1).
 * Returns 0, or 2 after a message. */
static int make_run_dir(const char *given, int verbosity, run_trace *rt)
{
    rt->mode = TRACE_TO_DIR;
    if (!given) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0])
            tmp = "/tmp";
        char want[PATH_MAX];
        snprintf(want, sizeof want, "%s/tlsan-run.XXXXXX", tmp);
        bool made = mkdtemp(want) != NULL;
        if (!made && strcmp(tmp, "/tmp") != 0) {
            /* The program would run natively with this TMPDIR: so must it here. */
            if (verbosity >= 1)
                fprintf(stderr,
                        "tlsan: run: cannot create a run directory in TMPDIR=%s (%s); using "
                        "/tmp\n",
                        tmp, strerror(errno));
            tmp = "/tmp";
            snprintf(want, sizeof want, "%s/tlsan-run.XXXXXX", tmp);
            made = mkdtemp(want) != NULL;
        }
        if (!made || !absolute(want, rt->path, sizeof rt->path)) {
            fprintf(stderr,
                    "tlsan: error: run: cannot create a run directory in %s: %s (set TMPDIR or "
                    "give --trace-dir DIR)\n",
                    tmp, strerror(errno));
            return HELP_EXIT_USAGE;
        }
        rt->made = true;
        /* Run as root, the program may drop its privileges (a daemon's setuid, runuser,
         * su): a process that can no longer write the 0700 directory records nothing, and
         * its findings would be missing from the summary. Writable by all, sticky as /tmp:
         * another user could add a trace (a false finding) but remove none. */
        if (geteuid() == 0)
            chmod(rt->path, 01777);
        return 0;
    }
    if (mkdir(given, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tlsan: error: run: cannot create the trace directory %s: %s\n", given,
                strerror(errno));
        return HELP_EXIT_USAGE;
    }
    trace_list old;
    bool usable = realpath(given, rt->path) != NULL;
    if (usable && !trace_dir_is(rt->path)) {
        errno = ENOTDIR;
        usable = false;
    }
    if (!usable || trace_dir_list(rt->path, &old) != 0) {
        fprintf(stderr, "tlsan: error: run: cannot use %s as the trace directory: %s\n", given,
                strerror(errno));
        return HELP_EXIT_USAGE;
    }
    size_t n_old = old.n;
    if (n_old) {
        fprintf(stderr,
                "tlsan: error: run: the trace directory %s already holds %zu trace%s (%s): "
                "give an empty or new directory, so the summary counts this run only\n",
                given, n_old, n_old == 1 ? "" : "s", old.paths[0]);
    }
    trace_list_free(&old);
    return n_old ? HELP_EXIT_USAGE : 0;
}

/* Appends ":text" to the options string *opts (grown; NULL or "" text adds nothing). */
static bool append_text(char **opts, const char *text)
{
    if (!text || !text[0])
        return true;
    size_t old = *opts ? strlen(*opts) : 0;
    char *grown = realloc(*opts, old + strlen(text) + 2);
    if (!grown)
        return false;
    sprintf(grown + old, "%s%s", old ? ":" : "", text);
    *opts = grown;
    return true;
}

/* Appends ":key=value" to the options string *opts (grown), the value quoted when it holds a
 * separator. False when out of memory or when the value holds both kinds of quote. */
static bool append_option(char **opts, const char *key, const char *value)
{
    const char *quote = "";
    if (strpbrk(value, ":, \t\n\r'\""))
        quote = !strchr(value, '"') ? "\"" : !strchr(value, '\'') ? "'" : NULL;
    if (!quote)
        return false;
    size_t old = *opts ? strlen(*opts) : 0;
    char *grown = realloc(*opts, old + strlen(key) + strlen(value) + 5);
    if (!grown)
        return false;
    sprintf(grown + old, "%s%s=%s%s%s", old ? ":" : "", key, quote, value, quote);
    *opts = grown;
    return true;
}

/* How the program ended: its exit status, or the signal that killed it. */
typedef struct run_end {
    int status; /* WEXITSTATUS, when signal is 0 */
    int signal; /* the signal that killed it, or 0 */
} run_end;

/* Why the traces may lack findings the processes reported (written to why, "" when no reason
 * is seen): the place they go cannot take a file or is full. A shim that cannot create or
 * grow its trace says so on its report stream and goes on untraced, so the count would be
 * short with nothing in the summary saying it. */
static void traces_at_risk(const run_trace *rt, const tally *ty, size_t n_files, char *why,
                           size_t why_bytes)
{
    why[0] = '\0';
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", rt->path);
    struct stat st;
    if (rt->mode == TRACE_TO_FILE) {
        if (stat(rt->path, &st) == 0 && !S_ISREG(st.st_mode)) {
            snprintf(why, why_bytes, "%s is not a regular file", rt->path);
            return;
        }
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if (!dir[0])
            snprintf(dir, sizeof dir, "/");
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, why_bytes, "%s is not writable: %s", dir, strerror(errno));
        return;
    }
    if (n_files > ty->n_traces) {
        size_t bad = n_files - ty->n_traces;
        snprintf(why, why_bytes, "%zu trace%s could not be read", bad, bad == 1 ? "" : "s");
        return;
    }
    /* A trace grows in steps of up to 1 MiB (shim/trace.c): with less free, one was cut. */
    struct statvfs fs;
    if (!ty->n_truncated || statvfs(dir, &fs) != 0)
        return;
    unsigned long long free_bytes = (unsigned long long)fs.f_bavail * fs.f_frsize;
    if (free_bytes < (1ull << 20))
        snprintf(why, why_bytes, "the file system of %s is full (%llu KiB free)", dir,
                 free_bytes >> 10);
}

/* Whether a line can go to stderr now without waiting. A program may fill a pipe that its
 * caller drains only once the program has ended (Python's Popen(...).wait() before reading
 * stderr): natively that works, and tlsan's summary, one more line into the full pipe,
 * would block tlsan, and so the caller, for ever. Then the summary is left out: the exit
 * status and the traces still tell the run. */
static bool stderr_has_room(void)
{
    struct pollfd p = {.fd = STDERR_FILENO, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) && !(p.revents & (POLLERR | POLLNVAL));
}

/* Warns when the command is set-user-ID or set-group-ID to another user or group: the
 * dynamic loader then runs it in secure mode, ignores LD_PRELOAD and removes it from the
 * environment, so neither it nor what it starts is checked, and the summary could only say
 * "no findings". cmd is looked up in PATH as execvp will. */
static void warn_if_set_id(const char *cmd)
{
    char path[PATH_MAX];
    struct stat st;
    bool found = false;
    if (strchr(cmd, '/')) {
        found = stat(cmd, &st) == 0;
    } else {
        const char *dirs = getenv("PATH");
        for (const char *d = dirs ? dirs : "/usr/local/bin:/usr/bin:/bin"; !found && *d;) {
            size_t len = strcspn(d, ":");
            if (len) /* an empty entry is the current directory */
                snprintf(path, sizeof path, "%.*s/%s", (int)len, d, cmd);
            else
                snprintf(path, sizeof path, "./%s", cmd);
            found = access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
            d += len + (d[len] == ':');
        }
    }
    if (!found)
        return;
    bool set_uid = (st.st_mode & S_ISUID) && st.st_uid != geteuid();
    bool set_gid = (st.st_mode & S_ISGID) && st.st_gid != getegid();
    if (set_uid || set_gid)
        fprintf(stderr,
                "tlsan: run: warning: '%s' is set-%s-ID: the dynamic loader ignores LD_PRELOAD "
                "for it and drops it from its environment, so it and the programs it starts run "
                "unchecked\n",
                cmd, set_uid ? "user" : "group");
}

/* Prints the summary line; returns tlsan run's exit status for a program that exited (a
 * signal death is the caller's to repeat). The rule is the shim's (docs/runtime.md,
 * `exitcode`): findings turn an exit status of 0 into `exitcode`; any other status stays. */
static int summarize(const run_trace *rt, run_end end, int exitcode)
{
    tally ty = {0};
    size_t n_files = 0;
    if (rt->mode == TRACE_TO_FILE) {
        if (access(rt->path, F_OK) == 0) {
            n_files++;
            tally_trace(&ty, rt->path);
        }
        size_t before = ty.n_traces;
        tally_siblings(&ty, rt->path);
        n_files += ty.n_traces - before;
    } else if (rt->mode == TRACE_TO_DIR) {
        trace_list l;
        if (trace_dir_list(rt->path, &l) != 0)
            fprintf(stderr, "tlsan: run: cannot read the run directory %s: %s\n", rt->path,
                    strerror(errno));
        else
            for (size_t k = 0; k < l.n; k++)
                tally_trace(&ty, l.paths[k]);
        n_files = l.n;
        trace_list_free(&l);
    }
    char kinds[1024] = "";
    size_t len = 0;
    for (size_t k = 0; k < ty.n_kinds && len < sizeof kinds; k++)
        len += (size_t)snprintf(kinds + len, sizeof kinds - len, "%s%ld %s", k ? ", " : "",
                                ty.counts[k], ty.kinds[k]);
    char where[PATH_MAX + 128];
    if (rt->mode == TRACE_TO_FILE)
        snprintf(where, sizeof where, "trace %s%s", rt->path,
                 ty.n_traces > 1 ? " and its descendants' FILE.PID" : "");
    else
        snprintf(where, sizeof where, "%zu trace%s in %s", ty.n_traces, ty.n_traces == 1 ? "" : "s",
                 rt->path);
    char truncated[160] = "";
    if (ty.n_truncated)
        snprintf(truncated, sizeof truncated, " (%zu truncated: a process died or called exec)",
                 ty.n_truncated);
    if (ty.suppressed)
        snprintf(truncated + strlen(truncated), sizeof truncated - strlen(truncated),
                 "; %ld suppressed", ty.suppressed);
    char at_risk[PATH_MAX + 128] = "";
    if (rt->mode != TRACE_OFF)
        traces_at_risk(rt, &ty, n_files, at_risk, sizeof at_risk);
    if (rt->mode == TRACE_TO_DIR && n_files == 0 && rt->made)
        rmdir(rt->path);

    int status = end.signal                        ? 128 + end.signal
                 : ty.total > 0 && end.status == 0 ? exitcode
                                                   : end.status;
    char outcome[160];
    if (end.signal)
        snprintf(outcome, sizeof outcome, "killed by signal %d (%s)", end.signal,
                 strsignal(end.signal));
    else
        snprintf(outcome, sizeof outcome, "exit status %d", status);

    if (!stderr_has_room())
        return status;
    if (rt->mode == TRACE_OFF)
        fprintf(stderr, "tlsan: run: tracing off (trace=0), findings not counted; %s\n", outcome);
    else if (at_risk[0])
        fprintf(stderr,
                "tlsan: run: traces missing or incomplete (%s; see the shim's lines above): "
                "findings may be missing from this count; %ld finding%s counted%s%s%s; %s%s; %s\n",
                at_risk, ty.total, ty.total == 1 ? "" : "s", ty.total ? " (" : "", kinds,
                ty.total ? ")" : "", where, truncated, outcome);
    else if (ty.total > 0)
        fprintf(stderr, "tlsan: run: %ld finding%s (%s); %s%s; %s\n", ty.total,
                ty.total == 1 ? "" : "s", kinds, where, truncated, outcome);
    else if (n_files == 0 && rt->mode == TRACE_TO_FILE)
        fprintf(stderr, "tlsan: run: no findings; nothing recorded at %s; %s\n", rt->path, outcome);
    else if (n_files == 0)
        fprintf(stderr,
                "tlsan: run: no findings; no process recorded a trace (nothing annotated, "
                "nothing found); %s\n",
                outcome);
    else
        fprintf(stderr, "tlsan: run: no findings; %s%s; %s\n", where, truncated, outcome);
    return status;
}

/* Dies of sig as the program did, so that a shell sees the same end (bash stops a script
 * whose command died of SIGINT). tlsan's own core dump is turned off: only the program's
 * is wanted. Returns only when sig did not end tlsan. */
static void die_of(int sig)
{
    fflush(NULL);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

/* The program being run, for forward_signal. */
static volatile pid_t g_child;

/* The signals tlsan passes on to the program. */
static const int forwarded[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2};

/* A signal for tlsan: sent by a process (kill, sigqueue) other than the program itself, it
 * was meant for the program and goes on to it; one the kernel made (the terminal's ^C, ^\
 * and hangup reach the program's process group, the program included) is dropped. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    if (g_child > 0 && (si->si_code == SI_USER || si->si_code == SI_QUEUE) && si->si_pid != g_child)
        kill(g_child, sig);
    errno = saved;
}

int run_command(int argc, char **argv)
{
    const char *trace = NULL, *trace_dir = NULL;
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
            if (!trace || !trace[0]) {
                free(options);
                return help_usage_error("%s needs a file name", "--trace");
            }
        } else if (strcmp(a, "--trace-dir") == 0 || strncmp(a, "--trace-dir=", 12) == 0) {
            trace_dir = a[11] == '=' ? a + 12 : (i + 1 < argc ? argv[++i] : NULL);
            if (!trace_dir || !trace_dir[0]) {
                free(options);
                return help_usage_error("%s needs a directory", "--trace-dir");
            }
        } else if (strcmp(a, "--options") == 0 || strncmp(a, "--options=", 10) == 0) {
            const char *v = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || strcmp(v, "--") == 0) {
                free(options);
                return help_usage_error("%s needs KEY=VALUE pairs", "--options");
            }
            size_t old = options ? strlen(options) : 0;
            char *grown = realloc(options, old + strlen(v) + 2);
            if (!grown) {
                free(options);
                return help_usage_error("%s", "out of memory");
            }
            options = grown;
            sprintf(options + old, "%s%s", old ? ":" : "", v);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            free(options);
            char options_help[OPTIONS_HELP_BYTES];
            options_help_text(options_help, sizeof options_help);
            help_print_command(stdout, "run");
            fputc('\n', stdout);
            fputs(options_help, stdout);
            return 0;
        } else {
            free(options);
            return help_usage_error("unknown option '%s' for run", a);
        }
    }
    if (i >= argc) {
        free(options);
        return help_usage_error("%s: no command given (tlsan run -- CMD ARGS)", "run");
    }
    if (trace && trace_dir) {
        free(options);
        return help_usage_error("%s", "--trace FILE and --trace-dir DIR: give one");
    }
    char shim[PATH_MAX];
    if (!find_shim(shim, sizeof shim)) {
        free(options);
        fprintf(stderr, "tlsan: error: run: libtlsan.so not found next to tlsan or in its "
                        "library directory (set TLSAN_SHIM to its path)\n");
        return HELP_EXIT_USAGE;
    }
    /* ld.so splits LD_PRELOAD at spaces and colons, with no way to quote one: a shim at such a
     * path would be two names that do not exist, and every process would run unchecked
     * under a summary of "no findings". */
    if (strpbrk(shim, " \t\n:")) {
        free(options);
        fprintf(stderr,
                "tlsan: error: run: the shim's path '%s' holds a space or a colon, which "
                "LD_PRELOAD cannot carry (ld.so splits it there); install tlsan in a directory "
                "without them, or point TLSAN_SHIM at a link to libtlsan.so that has none\n",
                shim);
        return HELP_EXIT_USAGE;
    }

    /* TLSAN_OPTIONS: the environment's, then --options, then where the traces go. */
    char *all = NULL;
    const char *env_opts = getenv("TLSAN_OPTIONS");
    bool ok = append_text(&all, env_opts) && append_text(&all, options);
    free(options);
    if (ok && trace)
        ok = append_option(&all, "trace_path", trace);
    run_trace rt = {.mode = TRACE_TO_DIR};
    int status = 0;
    if (!ok) {
        free(all);
        return help_usage_error("%s", "out of memory");
    }
    struct shim_options opts;
    read_run_options(all, &opts);
    if (opts.trace == 0) {
        rt.mode = TRACE_OFF;
    } else if (opts.trace_path[0]) {
        /* Absolute, so a descendant in another directory writes beside it too. */
        rt.mode = TRACE_TO_FILE;
        if (!absolute(opts.trace_path, rt.path, sizeof rt.path) ||
            !append_option(&all, "trace_path", rt.path)) {
            free(all);
            return help_usage_error("cannot make the trace path '%s' absolute", opts.trace_path);
        }
    } else {
        /* The shim takes trace_dir from the options before TLSAN_TRACE_DIR: one given there
         * is the run directory, made absolute. */
        bool in_opts = opts.trace_dir[0] != '\0';
        status = make_run_dir(trace_dir ? trace_dir
                              : in_opts ? opts.trace_dir
                                        : NULL,
                              opts.verbosity, &rt);
        if (status == 0 && in_opts && !append_option(&all, "trace_dir", rt.path))
            status = help_usage_error("%s", "out of memory");
    }
    if (status) {
        free(all);
        return status;
    }
    /* The shim must read the absolute path just added: a value over the longest option
     * string would be ignored (a bad value), and it would write elsewhere. */
    read_run_options(all, &opts);
    const char *read_back = rt.mode == TRACE_TO_FILE                       ? opts.trace_path
                            : rt.mode == TRACE_TO_DIR && opts.trace_dir[0] ? opts.trace_dir
                                                                           : NULL;
    if (read_back && strcmp(read_back, rt.path) != 0) {
        if (rt.made)
            rmdir(rt.path);
        free(all);
        return help_usage_error(
            "the trace path '%s' is longer than an option value may be (255 bytes)", rt.path);
    }
    const char *old_preload = getenv("LD_PRELOAD");
    char *preload = malloc(strlen(shim) + (old_preload ? strlen(old_preload) : 0) + 2);
    if (!preload) {
        free(all);
        return help_usage_error("%s", "out of memory");
    }
    sprintf(preload, "%s%s%s", shim, old_preload && old_preload[0] ? " " : "",
            old_preload ? old_preload : "");
    /* The low 8 bits, as the shim's _exit applies it. */
    int exitcode = opts.exitcode & 0xff;

    /* exec's failure reaches the parent through a close-on-exec pipe, so that a program
     * that exits 127 itself (a shell whose last command was not found) is not taken for it:
     * its run is summarized as any other. */
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "tlsan: error: run: pipe failed: %s\n", strerror(errno));
        free(all);
        free(preload);
        return HELP_EXIT_USAGE;
    }
    /* tlsan must see its child's end: an inherited SIGCHLD=SIG_IGN would have the kernel
     * reap it, and waitpid fail. And its summary must not kill it: written to a pipe whose
     * reader is gone (`tlsan run ... 2>&1 | head`) it is lost, not fatal. The program gets
     * both dispositions as tlsan inherited them, as it would natively. */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
    sigemptyset(&dfl.sa_mask);
    sigemptyset(&ign.sa_mask);
    struct sigaction inherited_chld, inherited_pipe;
    sigaction(SIGCHLD, &dfl, &inherited_chld);
    sigaction(SIGPIPE, &ign, &inherited_pipe);
    /* Like a shell waiting for a command: the terminal's ^C and ^\ reach the program
     * directly (its process group) and tlsan lets them go by, to die of the same signal
     * after its summary if the program did. A signal sent to tlsan itself (kill, a test
     * harness stopping its child) is passed on to the program, which would have received
     * it natively, instead of ending tlsan and leaving the program running. In place
     * before the fork (blocked until the child's pid is known): the program may be told to
     * stop as soon as it prints something. */
    struct sigaction fwd = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&fwd.sa_mask);
    sigset_t fwd_set, inherited_mask;
    sigemptyset(&fwd_set);
    for (size_t k = 0; k < sizeof forwarded / sizeof *forwarded; k++)
        sigaddset(&fwd_set, forwarded[k]);
    sigprocmask(SIG_BLOCK, &fwd_set, &inherited_mask);
    struct sigaction old[sizeof forwarded / sizeof *forwarded];
    for (size_t k = 0; k < sizeof forwarded / sizeof *forwarded; k++)
        sigaction(forwarded[k], &fwd, &old[k]);
    warn_if_set_id(argv[i]);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tlsan: error: run: fork failed: %s\n", strerror(errno));
        for (size_t k = 0; k < sizeof forwarded / sizeof *forwarded; k++)
            sigaction(forwarded[k], &old[k], NULL);
        sigprocmask(SIG_SETMASK, &inherited_mask, NULL);
        close(exec_pipe[0]);
        close(exec_pipe[1]);
        free(all);
        free(preload);
        return HELP_EXIT_USAGE;
    }
    if (pid == 0) {
        close(exec_pipe[0]);
        sigaction(SIGCHLD, &inherited_chld, NULL);
        sigaction(SIGPIPE, &inherited_pipe, NULL);
        for (size_t k = 0; k < sizeof forwarded / sizeof *forwarded; k++)
            sigaction(forwarded[k], &old[k], NULL);
        sigprocmask(SIG_SETMASK, &inherited_mask, NULL);
        /* Unset stays unset when the run adds nothing: the program sees what it would. */
        if (all)
            setenv("TLSAN_OPTIONS", all, 1);
        setenv("LD_PRELOAD", preload, 1);
        /* A dedicated variable besides TLSAN_OPTIONS, which programs (test runners, nested
         * tools) may rewrite: every descendant's trace lands in the run directory. */
        if (rt.mode == TRACE_TO_DIR)
            setenv("TLSAN_TRACE_DIR", rt.path, 1);
        else
            unsetenv("TLSAN_TRACE_DIR");
        execvp(argv[i], argv + i);
        int err = errno;
        /* As shells say it: 127 when there is no such program, 126 when there is one that
         * cannot be executed (a directory, no execute permission, a bad binary). */
        struct stat st;
        if (err == ENOENT && !strchr(argv[i], '/'))
            fprintf(stderr, "tlsan: error: run: cannot run '%s': command not found\n", argv[i]);
        else if (err == EACCES && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            fprintf(stderr, "tlsan: error: run: cannot run '%s': %s\n", argv[i], strerror(EISDIR));
        else
            fprintf(stderr, "tlsan: error: run: cannot run '%s': %s\n", argv[i], strerror(err));
        ssize_t ignored = write(exec_pipe[1], &err, sizeof err);
        (void)ignored;
        _exit(err == ENOENT ? 127 : 126);
    }
    close(exec_pipe[1]);
    free(all);
    free(preload);
    g_child = pid;
    sigprocmask(SIG_SETMASK, &inherited_mask, NULL);
    int exec_err = 0;
    ssize_t got;
    while ((got = read(exec_pipe[0], &exec_err, sizeof exec_err)) < 0 && errno == EINTR)
        ;
    close(exec_pipe[0]);
    int wstatus = 0;
    pid_t waited;
    while ((waited = waitpid(pid, &wstatus, 0)) < 0 && errno == EINTR)
        ;
    int wait_err = errno;
    for (size_t k = 0; k < sizeof forwarded / sizeof *forwarded; k++)
        sigaction(forwarded[k], &old[k], NULL);

    if (got == (ssize_t)sizeof exec_err) {
        if (rt.made)
            rmdir(rt.path); /* exec failed (said above) */
        return exec_err == ENOENT ? 127 : 126;
    }
    if (waited != pid) {
        /* Never a zeroed status read as success. */
        fprintf(stderr, "tlsan: error: run: cannot wait for '%s' (pid %d): %s\n", argv[i], (int)pid,
                strerror(wait_err));
        return HELP_EXIT_USAGE;
    }
    run_end end = {0};
    if (WIFEXITED(wstatus))
        end.status = WEXITSTATUS(wstatus);
    else
        end.signal = WTERMSIG(wstatus);
    status = summarize(&rt, end, exitcode);
    if (end.signal)
        die_of(end.signal);
    return status;
}
