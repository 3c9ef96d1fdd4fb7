/* options.c - TLSAN_OPTIONS, driven by the SHIM_OPTIONS table (see options.h for the rule).
 *
 * Runs in the shim's constructor, possibly from inside the first malloc: it never allocates
 * and formats its messages by hand (snprintf may allocate). */
#include "core/options.h"

#include <limits.h>
#include <string.h>

enum option_type { T_BOOL, T_INT, T_SIZE, T_STR, T_CHECKSUM, T_HALT, T_LOGFMT };

struct option_desc {
    const char *name;
    enum option_type type;
    size_t offset;
    const char *doc;
};

static const struct option_desc option_descs[] = {
#define X(type, name, def, doc) {#name, T_##type, offsetof(struct shim_options, name), doc},
    SHIM_OPTIONS(X)
#undef X
};
#define N_OPTIONS (sizeof option_descs / sizeof option_descs[0])

/* A caller's fixed buffer, always NUL-terminated, cut silently at its capacity. */
struct text_out {
    char *data;
    size_t len, cap;
};

static void put_bytes(struct text_out *out, const char *bytes, size_t n)
{
    if (out->cap == 0)
        return;
    size_t room = out->cap - 1 - out->len;
    if (n > room)
        n = room;
    memcpy(out->data + out->len, bytes, n);
    out->len += n;
    out->data[out->len] = '\0';
}

static void put_str(struct text_out *out, const char *s)
{
    put_bytes(out, s, strlen(s));
}

static void put_u64(struct text_out *out, uint64_t value)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    put_bytes(out, digits + sizeof digits - n, n);
}

static void put_int(struct text_out *out, int value)
{
    if (value < 0)
        put_bytes(out, "-", 1);
    put_u64(out, value < 0 ? 0 - (uint64_t)(int64_t)value : (uint64_t)value);
}

void options_defaults(struct shim_options *opts)
{
    memset(opts, 0, sizeof *opts);
#define DEF_BOOL(field, def)     (field) = (def)
#define DEF_INT(field, def)      (field) = (def)
#define DEF_SIZE(field, def)     (field) = (def)
#define DEF_CHECKSUM(field, def) (field) = (def)
#define DEF_HALT(field, def)     (field) = (def)
#define DEF_LOGFMT(field, def)   (field) = (def)
#define DEF_STR(field, def)      memcpy((field), (def), sizeof(def))
#define X(type, name, def, doc)  DEF_##type(opts->name, def);
    SHIM_OPTIONS(X)
#undef X
}

static bool is_separator(char c)
{
    return c == ':' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool text_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Parses [s, s+n) as an unsigned decimal; false on an empty text, a non-digit or overflow. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned digit = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

/* Stores the value in opts; returns NULL when it is good, else what was wanted. */
static const char *set_value(struct shim_options *opts, const struct option_desc *desc,
                             const char *v, size_t n)
{
    char *field = (char *)opts + desc->offset;
    switch (desc->type) {
    case T_BOOL:
        if (text_is(v, n, "1") || text_is(v, n, "true"))
            *(bool *)field = true;
        else if (text_is(v, n, "0") || text_is(v, n, "false"))
            *(bool *)field = false;
        else
            return "0, 1, true or false";
        return NULL;
    case T_INT: {
        bool negative = n > 0 && v[0] == '-';
        size_t sign = (n > 0 && (v[0] == '-' || v[0] == '+')) ? 1 : 0;
        uint64_t magnitude;
        if (!parse_u64(v + sign, n - sign, &magnitude) ||
            magnitude > (negative ? 1ull + INT_MAX : INT_MAX))
            return "an integer";
        *(int *)field = negative ? (int)(0 - (long long)magnitude) : (int)magnitude;
        return NULL;
    }
    case T_SIZE: {
        uint64_t value;
        if (!parse_u64(v, n, &value))
            return "an unsigned integer";
        *(uint64_t *)field = value;
        return NULL;
    }
    case T_STR:
        if (n > OPTIONS_STR_MAX_BYTES)
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

/* Starts one message line in err: the '\n' after the previous one, then the prefix. */
static void start_message(struct text_out *err)
{
    if (err->len)
        put_str(err, "\n");
    put_str(err, "tlsan: TLSAN_OPTIONS: ");
}

static const struct option_desc *find_option(const char *name, size_t name_len)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (text_is(name, name_len, option_descs[i].name))
            return &option_descs[i];
    return NULL;
}

bool options_parse(struct shim_options *opts, const char *text, char *err, size_t err_bytes)
{
    bool all_good = true;
    struct text_out messages = {err, 0, err ? err_bytes : 0};
    put_str(&messages, "");
    const char *p = text ? text : "";
    for (;;) {
        while (*p && is_separator(*p))
            p++;
        if (!*p)
            break;
        const char *name = p;
        while (*p && *p != '=' && !is_separator(*p))
            p++;
        size_t name_len = (size_t)(p - name);
        if (*p != '=') {
            start_message(&messages);
            put_str(&messages, "'");
            put_bytes(&messages, name, name_len);
            put_str(&messages, "' has no '=value' (ignored)");
            all_good = false;
            continue;
        }
        p++;
        const char *value = p;
        size_t value_len;
        if (*p == '\'' || *p == '"') {
            char quote = *p++;
            value = p;
            while (*p && *p != quote)
                p++;
            value_len = (size_t)(p - value);
            if (*p)
                p++;
        } else {
            while (*p && !is_separator(*p))
                p++;
            value_len = (size_t)(p - value);
        }
        const struct option_desc *desc = find_option(name, name_len);
        const char *wanted = NULL;
        if (!desc) {
            start_message(&messages);
            put_str(&messages, "unknown option '");
            put_bytes(&messages, name, name_len);
            put_str(&messages, "' (ignored)");
            all_good = false;
        } else if ((wanted = set_value(opts, desc, value, value_len)) != NULL) {
            start_message(&messages);
            put_str(&messages, "bad value '");
            put_bytes(&messages, value, value_len);
            put_str(&messages, "' for '");
            put_str(&messages, desc->name);
            put_str(&messages, "' (want ");
            put_str(&messages, wanted);
            put_str(&messages, "; ignored)");
            all_good = false;
        }
    }
    return all_good;
}

/* "name=value" of one option of opts. */
static void put_pair(struct text_out *out, const struct shim_options *opts,
                     const struct option_desc *desc)
{
    const char *field = (const char *)opts + desc->offset;
    put_str(out, desc->name);
    put_str(out, "=");
    switch (desc->type) {
    case T_BOOL:
        put_str(out, *(const bool *)field ? "1" : "0");
        break;
    case T_INT:
        put_int(out, *(const int *)field);
        break;
    case T_SIZE:
        put_u64(out, *(const uint64_t *)field);
        break;
    case T_STR:
        put_str(out, "'");
        put_str(out, field);
        put_str(out, "'");
        break;
    case T_CHECKSUM: {
        enum shim_checksum checksum = *(const enum shim_checksum *)field;
        put_str(out, checksum == SHIM_CHECKSUM_ALL   ? "all"
                     : checksum == SHIM_CHECKSUM_OFF ? "off"
                                                     : "shared");
        break;
    }
    case T_HALT: {
        enum shim_halt halt = *(const enum shim_halt *)field;
        put_str(out, halt == SHIM_HALT_NEVER ? "0" : halt == SHIM_HALT_ALWAYS ? "1" : "native");
        break;
    }
    case T_LOGFMT:
        put_str(out, *(const enum shim_log_format *)field == SHIM_LOG_JSON ? "json" : "text");
        break;
    }
}

bool options_format_pair(const struct shim_options *opts, const char *name, char *buf,
                         size_t buf_bytes)
{
    struct text_out out = {buf, 0, buf_bytes};
    put_str(&out, "");
    const struct option_desc *desc = find_option(name, strlen(name));
    if (desc)
        put_pair(&out, opts, desc);
    return desc != NULL;
}

size_t options_help_text(char *buf, size_t buf_bytes)
{
    enum { PAIR_COLUMNS = 24 };
    struct shim_options defaults;
    options_defaults(&defaults);
    struct text_out out = {buf, 0, buf_bytes};
    put_str(&out, "tlsan: TLSAN_OPTIONS=name=value:name=value... (':' ',' blanks or newlines "
                  "between; the last of a repeated name wins); name=default, meaning:\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        size_t start = out.len;
        put_str(&out, "  ");
        put_pair(&out, &defaults, &option_descs[i]);
        while (out.len < start + 2 + PAIR_COLUMNS && out.len + 1 < out.cap)
            put_str(&out, " ");
        put_str(&out, " ");
        put_str(&out, option_descs[i].doc);
        put_str(&out, "\n");
    }
    return out.len;
}
