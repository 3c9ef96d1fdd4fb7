/* symbolize: offline symbolization with libdwfl. */
#include "replay/symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One libdwfl session per (path, bias) pair: a module may be loaded at another bias in
 * another trace, and a session holds each module at one address. */
typedef struct session {
    char *path;
    uint64_t bias;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL when the file could not be read */
} session;

struct symbolizer {
    session *sessions;
    size_t n, cap;
};

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

symbolizer *symbolizer_create(void)
{
    return calloc(1, sizeof(symbolizer));
}

void symbolizer_free(symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (s->sessions[i].dwfl)
            dwfl_end(s->sessions[i].dwfl);
        free(s->sessions[i].path);
    }
    free(s->sessions);
    free(s);
}

static session *find_session(symbolizer *s, const char *path, uint64_t bias)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sessions[i].bias == bias && strcmp(s->sessions[i].path, path) == 0)
            return &s->sessions[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        session *grown = realloc(s->sessions, cap * sizeof *grown);
        if (!grown)
            return NULL;
        s->sessions = grown;
        s->cap = cap;
    }
    session *se = &s->sessions[s->n];
    *se = (session){.path = strdup(path), .bias = bias};
    if (!se->path)
        return NULL;
    s->n++;
    /* Only a regular file is read: a module path in a trace may name anything (a FIFO
     * would block, a device would never end). */
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return se;
    se->dwfl = dwfl_begin(&callbacks);
    if (se->dwfl) {
        dwfl_report_begin(se->dwfl);
        se->mod = dwfl_report_elf(se->dwfl, path, path, -1, (GElf_Addr)bias, false);
        dwfl_report_end(se->dwfl, NULL, NULL);
    }
    return se;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

char *symbolizer_frame(symbolizer *s, const char *path, uint64_t bias, uint64_t offset, char *buf,
                       size_t buf_bytes)
{
    snprintf(buf, buf_bytes, "%s+0x%llx", base_name(path), (unsigned long long)offset);
    session *se = s && path[0] ? find_session(s, path, bias) : NULL;
    if (!se || !se->mod)
        return buf;
    /* A return address: the call is the byte before it. */
    GElf_Addr pc = (GElf_Addr)(bias + offset - (offset > 0));
    GElf_Off sym_off = 0;
    GElf_Sym sym;
    const char *fn = dwfl_module_addrinfo(se->mod, pc, &sym_off, &sym, NULL, NULL, NULL);
    if (!fn)
        return buf;
    int line = 0;
    const char *file = NULL;
    Dwfl_Line *l = dwfl_module_getsrc(se->mod, pc);
    if (l)
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    if (file && line > 0)
        snprintf(buf, buf_bytes, "%s+0x%llx at %s:%d (%s+0x%llx)", fn, (unsigned long long)sym_off,
                 base_name(file), line, base_name(path), (unsigned long long)offset);
    else
        snprintf(buf, buf_bytes, "%s+0x%llx (%s+0x%llx)", fn, (unsigned long long)sym_off,
                 base_name(path), (unsigned long long)offset);
    return buf;
}
