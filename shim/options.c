/* options.c - TLSAN_OPTIONS parsing, driven by the SHIM_OPTIONS table.
 *
 * Runs in the constructor, possibly from inside the first malloc, so it never allocates:
 * values are parsed by hand and messages formatted with out.c. */
#include "options.h"
#include "out.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

enum opt_type { T_BOOL, T_INT, T_SIZE, T_STR, T_CHECKSUM, T_HALT, T_LOGFMT };

struct opt_desc {
    const char *name;
    enum opt_type type;
    size_t offset;
    const char *help;
};

static const struct opt_desc g_descs[] = {
#define X(type, name, def, help) {#name, T_##type, offsetof(struct shim_options, name), help},
    SHIM_OPTIONS(X)
#undef X
};
#define N_DESCS (sizeof g_descs / sizeof g_descs[0])

void options_defaults(struct shim_options *o)
{
    memset(o, 0, sizeof *o);
#define DEF_BOOL(f, d)           (f) = (d)
#define DEF_INT(f, d)            (f) = (d)
#define DEF_SIZE(f, d)           (f) = (d)
#define DEF_CHECKSUM(f, d)       (f) = (d)
#define DEF_HALT(f, d)           (f) = (d)
#define DEF_LOGFMT(f, d)         (f) = (d)
#define DEF_STR(f, d)            out_copy_str((f), sizeof(f), (d))
#define X(type, name, def, help) DEF_##type(o->name, def);
    SHIM_OPTIONS(X)
#undef X
}

static int is_sep(char c)
{
    return c == ':' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int text_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Parses [s, s+n) as an unsigned decimal; false on an empty text, a non-digit or overflow. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* Stores the value in o; returns NULL when fine, else what was wanted. */
static const char *set_value(struct shim_options *o, const struct opt_desc *d, const char *v,
                             size_t n)
{
    char *field = (char *)o + d->offset;
    switch (d->type) {
    case T_BOOL:
        if (text_is(v, n, "1") || text_is(v, n, "true"))
            *(bool *)field = true;
        else if (text_is(v, n, "0") || text_is(v, n, "false"))
            *(bool *)field = false;
        else
            return "0, 1, true or false";
        return NULL;
    case T_INT: {
        int neg = n > 0 && v[0] == '-';
        size_t skip = (n > 0 && (v[0] == '-' || v[0] == '+')) ? 1 : 0;
        uint64_t mag;
        if (!parse_u64(v + skip, n - skip, &mag) || mag > (neg ? 1ull + INT_MAX : INT_MAX))
            return "an integer";
        *(int *)field = neg ? (int)(0 - (long long)mag) : (int)mag;
        return NULL;
    }
    case T_SIZE: {
        uint64_t u;
        if (!parse_u64(v, n, &u))
            return "an unsigned integer";
        *(uint64_t *)field = u;
        return NULL;
    }
    case T_STR:
        if (n > 255)
            return "at most 255 bytes";
        memcpy(field, v, n);
        field[n] = '\0';
        return NULL;
    case T_CHECKSUM:
        if (text_is(v, n, "all"))
            *(enum shim_checksum *)field = SHIM_CHECKSUM_ALL;
        else if (text_is(v, n, "shared"))
            *(enum shim_checksum *)field = SHIM_CHECKSUM_SHARED;
        else if (text_is(v, n, "off"))
            *(enum shim_checksum *)field = SHIM_CHECKSUM_OFF;
        else
            return "all, shared or off";
        return NULL;
    case T_HALT:
        if (text_is(v, n, "1") || text_is(v, n, "true"))
            *(enum shim_halt *)field = SHIM_HALT_ALWAYS;
        else if (text_is(v, n, "0") || text_is(v, n, "false"))
            *(enum shim_halt *)field = SHIM_HALT_NEVER;
        else if (text_is(v, n, "native"))
            *(enum shim_halt *)field = SHIM_HALT_NATIVE;
        else
            return "0, 1 or native";
        return NULL;
    case T_LOGFMT:
        if (text_is(v, n, "text"))
            *(enum shim_log_format *)field = SHIM_LOG_TEXT;
        else if (text_is(v, n, "json"))
            *(enum shim_log_format *)field = SHIM_LOG_JSON;
        else
            return "text or json";
        return NULL;
    }
    return "a value";
}

/* Appends one message line to err (joined by '\n'). */
static void add_error(char *err, size_t err_bytes, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_error(char *err, size_t err_bytes, size_t *used, const char *fmt, ...)
{
    if (!err || err_bytes == 0)
        return;
    struct outbuf b = {err, *used, err_bytes};
    if (b.len)
        out_appendf(&b, "\n");
    out_appendf(&b, "tlsan: TLSAN_OPTIONS: ");
    va_list ap;
    va_start(ap, fmt);
    out_vappendf(&b, fmt, ap);
    va_end(ap);
    *used = b.len;
}

bool options_parse(struct shim_options *o, const char *text, char *err, size_t err_bytes)
{
    bool ok = true;
    size_t used = 0;
    if (err && err_bytes)
        err[0] = '\0';
    const char *p = text ? text : "";
    for (;;) {
        while (*p && is_sep(*p))
            p++;
        if (!*p)
            break;
        const char *key = p;
        while (*p && *p != '=' && !is_sep(*p))
            p++;
        size_t key_len = (size_t)(p - key);
        if (*p != '=') {
            add_error(err, err_bytes, &used, "'%.*s' has no '=value' (ignored)", (int)key_len, key);
            ok = false;
            continue;
        }
        p++;
        const char *val = p;
        size_t val_len;
        if (*p == '\'' || *p == '"') {
            char quote = *p++;
            val = p;
            while (*p && *p != quote)
                p++;
            val_len = (size_t)(p - val);
            if (*p)
                p++;
        } else {
            while (*p && !is_sep(*p))
                p++;
            val_len = (size_t)(p - val);
        }
        const struct opt_desc *d = NULL;
        for (size_t i = 0; i < N_DESCS; i++)
            if (text_is(key, key_len, g_descs[i].name))
                d = &g_descs[i];
        if (!d) {
            add_error(err, err_bytes, &used, "unknown option '%.*s' (ignored)", (int)key_len, key);
            ok = false;
            continue;
        }
        const char *want = set_value(o, d, val, val_len);
        if (want) {
            add_error(err, err_bytes, &used, "bad value '%.*s' for '%s' (want %s; ignored)",
                      (int)val_len, val, d->name, want);
            ok = false;
        }
    }
    return ok;
}

/* The value of an option as text, into b. */
static void append_value(struct outbuf *b, const struct shim_options *o, const struct opt_desc *d)
{
    const char *field = (const char *)o + d->offset;
    switch (d->type) {
    case T_BOOL:
        out_appendf(b, "%d", *(const bool *)field ? 1 : 0);
        break;
    case T_INT:
        out_appendf(b, "%d", *(const int *)field);
        break;
    case T_SIZE:
        out_appendf(b, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case T_STR:
        out_appendf(b, "'%s'", field);
        break;
    case T_CHECKSUM: {
        enum shim_checksum c = *(const enum shim_checksum *)field;
        out_appendf(b, "%s",
                    c == SHIM_CHECKSUM_ALL   ? "all"
                    : c == SHIM_CHECKSUM_OFF ? "off"
                                             : "shared");
        break;
    }
    case T_HALT: {
        enum shim_halt h = *(const enum shim_halt *)field;
        out_appendf(b, "%s", h == SHIM_HALT_NEVER ? "0" : h == SHIM_HALT_ALWAYS ? "1" : "native");
        break;
    }
    case T_LOGFMT:
        out_appendf(b, "%s",
                    *(const enum shim_log_format *)field == SHIM_LOG_JSON ? "json" : "text");
        break;
    }
}

void options_append(struct outbuf *b, const struct shim_options *o, const char *name)
{
    for (size_t i = 0; i < N_DESCS; i++)
        if (strcmp(g_descs[i].name, name) == 0) {
            out_appendf(b, "%s=", name);
            append_value(b, o, &g_descs[i]);
        }
}

void options_print_help(int fd)
{
    struct shim_options defaults;
    options_defaults(&defaults);
    char buf[4096];
    struct outbuf b = {buf, 0, sizeof buf};
    out_appendf(&b, "tlsan: TLSAN_OPTIONS=name=value:name=value... (':' ',' or spaces between); "
                    "name=default, meaning:\n");
    for (size_t i = 0; i < N_DESCS; i++) {
        char one[64];
        struct outbuf v = {one, 0, sizeof one};
        out_appendf(&v, "%s=", g_descs[i].name);
        append_value(&v, &defaults, &g_descs[i]);
        out_appendf(&b, "  %-24s %s\n", one, g_descs[i].help);
    }
    const char *p = b.data;
    size_t left = b.len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        p += n;
        left -= (size_t)n;
    }
}
