/* suppress.c - suppressions (suppress.h). */
#include "suppress.h"

#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RULES_MAX      256
#define RULE_KIND_MAX  64
#define RULE_TEXT_MAX  256
#define FILE_BYTES_MAX (256u * 1024u)

struct rule {
    char kind[RULE_KIND_MAX];
    char pattern[RULE_TEXT_MAX];
};

/* Mapped only when a file is given: every byte of the shim's own counts against a program
 * that runs under an address-space limit (ulimit -v). */
static struct rule *g_rules;
static size_t g_n_rules;
static atomic_ulong g_suppressed;

bool suppress_glob(const char *pattern, const char *s, size_t s_bytes)
{
    /* Iterative with one backtrack point: the last '*' seen, and where s stood then. */
    const char *star = NULL;
    size_t i = 0, star_i = 0;
    while (i < s_bytes) {
        if (*pattern == '*') {
            star = pattern++;
            star_i = i;
        } else if (*pattern && *pattern == s[i]) {
            pattern++;
            i++;
        } else if (star) {
            pattern = star + 1;
            i = ++star_i;
        } else {
            return false;
        }
    }
    while (*pattern == '*')
        pattern++;
    return *pattern == '\0';
}

static bool glob_text(const char *pattern, const char *s)
{
    return s && suppress_glob(pattern, s, strlen(s));
}

/* A path, or its last component. */
static bool glob_path(const char *pattern, const char *path)
{
    if (!path)
        return false;
    const char *slash = strrchr(path, '/');
    return glob_text(pattern, path) || (slash && glob_text(pattern, slash + 1));
}

static bool frame_matches(const char *pattern, const struct shim_frame *f)
{
    if (f->sym.function &&
        suppress_glob(pattern, f->sym.function, symbol_name_length(f->sym.function)))
        return true;
    return glob_path(pattern, f->sym.file) || glob_path(pattern, f->module);
}

int suppress_match(const char *kind, const struct shim_frame *const *frames, const size_t *n_frames,
                   size_t n_stacks)
{
    for (size_t r = 0; r < g_n_rules; r++) {
        if (!glob_text(g_rules[r].kind, kind))
            continue;
        for (size_t s = 0; s < n_stacks; s++)
            for (size_t k = 0; k < n_frames[s]; k++)
                if (frame_matches(g_rules[r].pattern, &frames[s][k])) {
                    atomic_fetch_add(&g_suppressed, 1);
                    return (int)r;
                }
    }
    return -1;
}

unsigned long suppress_count(void)
{
    return atomic_load(&g_suppressed);
}

/* One line [p, p + n) of the file: a rule, a comment, a blank, or an error. */
static void parse_line(const char *path, unsigned line_no, const char *p, size_t n)
{
    while (n && (p[0] == ' ' || p[0] == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    if (n == 0 || p[0] == '#')
        return;
    const char *colon = memchr(p, ':', n);
    size_t kind_len = colon ? (size_t)(colon - p) : 0, pattern_len = colon ? n - kind_len - 1 : 0;
    const char *why = !colon                         ? "no ':' between KIND and PATTERN"
                      : kind_len == 0                ? "no KIND before ':'"
                      : pattern_len == 0             ? "no PATTERN after ':'"
                      : kind_len >= RULE_KIND_MAX    ? "KIND too long"
                      : pattern_len >= RULE_TEXT_MAX ? "PATTERN too long"
                      : g_n_rules == RULES_MAX       ? "more than 256 rules"
                                                     : NULL;
    if (why) {
        out_printf("tlsan: suppressions %s:%u: %s (line ignored): %.*s\n", path, line_no, why,
                   (int)(n < 200 ? n : 200), p);
        return;
    }
    struct rule *r = &g_rules[g_n_rules++];
    memcpy(r->kind, p, kind_len);
    r->kind[kind_len] = '\0';
    memcpy(r->pattern, colon + 1, pattern_len);
    r->pattern[pattern_len] = '\0';
}

void suppress_load(const char *path)
{
    g_n_rules = 0;
    if (!path || !path[0])
        return;
    if (!g_rules) {
        void *m = mmap(NULL, RULES_MAX * sizeof *g_rules, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            out_printf("tlsan: suppressions %s: out of memory (no suppressions)\n", path);
            return;
        }
        g_rules = m;
    }
    char *file =
        mmap(NULL, FILE_BYTES_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (file == MAP_FAILED) {
        out_printf("tlsan: suppressions %s: out of memory (no suppressions)\n", path);
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        out_printf("tlsan: suppressions %s: cannot open: %s (no suppressions)\n", path,
                   strerrordesc_np(errno) ? strerrordesc_np(errno) : "error");
        munmap(file, FILE_BYTES_MAX);
        return;
    }
    size_t len = 0;
    for (;;) {
        ssize_t got = read(fd, file + len, FILE_BYTES_MAX - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        if (len == FILE_BYTES_MAX) {
            out_printf("tlsan: suppressions %s: longer than 256 KiB (the rest ignored)\n", path);
            break;
        }
    }
    close(fd);
    unsigned line_no = 1;
    for (size_t start = 0; start < len; line_no++) {
        const char *nl = memchr(file + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - file) : len;
        parse_line(path, line_no, file + start, end - start);
        start = end + 1;
    }
    munmap(file, FILE_BYTES_MAX);
}
