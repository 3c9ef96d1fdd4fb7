/* symbolize: symbolization with libdwfl, through a table of its functions
 * (symbolize_libdw.h), so that the shim can run it on a libdw it loads itself. */
#include "replay/symbolize.h"
#include "replay/symbolize_libdw.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One libdwfl session per (path, bias) pair: a module may be loaded at another bias in
 * another trace, and a session holds each module at one address. */
/* One address range of a compilation unit, in the module's DWARF addresses. */
typedef struct cu_range {
    Dwarf_Addr lo, hi;
    Dwarf_Die *cu;
} cu_range;

typedef struct session {
    char *path;
    uint64_t bias;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL when the file could not be read */
    /* The units' ranges, sorted by start, read from the units themselves on the first
     * address .debug_aranges does not place (clang writes no such section by default, and
     * libdw 0.188 finds a unit only through it). */
    cu_range *cus;
    size_t n_cus;
    Dwarf_Addr cus_bias;
    bool cus_read;
} session;

struct symbolizer {
    const struct symbolize_libdw *dw;
    Dwfl_Callbacks callbacks;
    char *debuginfo_path;
    session *sessions;
    size_t n, cap;
};

symbolizer *symbolizer_create_with(const struct symbolize_libdw *api)
{
    symbolizer *s = calloc(1, sizeof(symbolizer));
    if (!s)
        return NULL;
    s->dw = api;
    s->callbacks = (Dwfl_Callbacks){
        .find_elf = api->build_id_find_elf,
        .find_debuginfo = api->standard_find_debuginfo,
        .section_address = api->offline_section_address,
        .debuginfo_path = &s->debuginfo_path,
    };
    return s;
}

void symbolizer_free(symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (s->sessions[i].dwfl)
            s->dw->end(s->sessions[i].dwfl);
        free(s->sessions[i].path);
        free(s->sessions[i].cus);
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
    se->dwfl = s->dw->begin(&s->callbacks);
    if (se->dwfl) {
        s->dw->report_begin(se->dwfl);
        se->mod = s->dw->report_elf(se->dwfl, path, path, -1, (GElf_Addr)bias, false);
        s->dw->report_end(se->dwfl, NULL, NULL);
    }
    return se;
}

size_t symbol_name_length(const char *function)
{
    const char *at = strchr(function, '@');
    return at && at != function ? (size_t)(at - function) : strlen(function);
}

const char *symbolize_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* An attribute of an inlined subroutine as an unsigned number (DW_AT_call_file/_line). */
static bool attr_u(const symbolizer *s, Dwarf_Die *die, unsigned name, Dwarf_Word *out)
{
    Dwarf_Attribute attr;
    return s->dw->attr_integrate(die, name, &attr) && s->dw->formudata(&attr, out) == 0;
}

static int cmp_cu_range(const void *a, const void *b)
{
    const cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Reads every unit's ranges of se's module into se->cus (once; on failure the table stays
 * empty, and lookups get no file and line, as before). */
static void read_cu_ranges(const symbolizer *s, session *se)
{
    se->cus_read = true;
    size_t cap = 0;
    Dwarf_Addr bias = 0;
    for (Dwarf_Die *cu = s->dw->module_nextcu(se->mod, NULL, &bias); cu;
         cu = s->dw->module_nextcu(se->mod, cu, &bias)) {
        Dwarf_Addr base, lo, hi;
        for (ptrdiff_t off = s->dw->ranges(cu, 0, &base, &lo, &hi); off > 0;
             off = s->dw->ranges(cu, off, &base, &lo, &hi)) {
            if (hi <= lo)
                continue;
            if (se->n_cus == cap) {
                size_t grown_cap = cap ? cap * 2 : 64;
                cu_range *grown = realloc(se->cus, grown_cap * sizeof *grown);
                if (!grown) {
                    free(se->cus);
                    se->cus = NULL;
                    se->n_cus = 0;
                    return;
                }
                se->cus = grown;
                cap = grown_cap;
            }
            se->cus[se->n_cus++] = (cu_range){lo, hi, cu};
        }
        se->cus_bias = bias; /* one module: the same bias for all its units */
    }
    if (se->n_cus > 1)
        qsort(se->cus, se->n_cus, sizeof *se->cus, cmp_cu_range);
}

/* The unit holding pc (a module address) from se->cus, or NULL; *cu_bias set with it. */
static Dwarf_Die *cu_of_ranges(const symbolizer *s, session *se, GElf_Addr pc, Dwarf_Addr *cu_bias)
{
    if (!se->cus_read)
        read_cu_ranges(s, se);
    Dwarf_Addr a = pc - se->cus_bias;
    size_t lo = 0, hi = se->n_cus; /* the last range starting at or before a: [0, lo) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (se->cus[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges of units do not overlap in practice; a few steps back allow for some nesting. */
    for (size_t i = lo, steps = 0; i-- > 0 && steps < 8; steps++)
        if (a < se->cus[i].hi) {
            *cu_bias = se->cus_bias;
            return se->cus[i].cu;
        }
    return NULL;
}

size_t symbolizer_lookup(symbolizer *s, const char *path, uint64_t bias, uint64_t offset,
                         symbol_frame *out, size_t max)
{
    session *se = s && path && path[0] && max ? find_session(s, path, bias) : NULL;
    if (!se || !se->mod)
        return 0;
    /* A return address: the call is the byte before it. */
    GElf_Addr pc = (GElf_Addr)(bias + offset - (offset > 0));
    GElf_Off sym_off = 0;
    GElf_Sym sym;
    const char *fn = s->dw->module_addrinfo(se->mod, pc, &sym_off, &sym, NULL, NULL, NULL);
    if (!fn)
        return 0;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = s->dw->module_getsrc(se->mod, pc);
    if (l)
        file = s->dw->lineinfo(l, NULL, &line, NULL, NULL, NULL);
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die *cu = s->dw->module_addrdie(se->mod, pc, &cu_bias);
    if (!cu) {
        /* No .debug_aranges entry: the unit from its own ranges, and the line from its
         * line table. */
        cu = cu_of_ranges(s, se, pc, &cu_bias);
        Dwarf_Line *dl = cu && !file ? s->dw->getsrc_die(cu, pc - cu_bias) : NULL;
        if (dl && s->dw->lineno(dl, &line) == 0)
            file = s->dw->linesrc(dl, NULL, NULL);
    }
    /* The inlined functions at pc, innermost first: each is at the current location, and its
     * call site (DW_AT_call_file/_line) is the location of the frame around it. */
    size_t n = 0;
    Dwarf_Die *scopes = NULL;
    int n_scopes = cu ? s->dw->getscopes(cu, pc - cu_bias, &scopes) : 0;
    Dwarf_Files *files = NULL;
    size_t n_files = 0;
    if (n_scopes > 0 && s->dw->getsrcfiles(cu, &files, &n_files) != 0)
        files = NULL;
    for (int i = 0; i < n_scopes && n + 1 < max; i++) {
        int tag = s->dw->tag(&scopes[i]);
        if (tag == DW_TAG_subprogram)
            break;
        if (tag != DW_TAG_inlined_subroutine)
            continue;
        out[n++] = (symbol_frame){s->dw->diename(&scopes[i]), file, line > 0 ? line : 0, 0, true};
        Dwarf_Word call_file = 0, call_line = 0;
        file = files && attr_u(s, &scopes[i], DW_AT_call_file, &call_file) && call_file < n_files
                   ? s->dw->filesrc(files, (size_t)call_file, NULL, NULL)
                   : NULL;
        line = attr_u(s, &scopes[i], DW_AT_call_line, &call_line) ? (int)call_line : 0;
    }
    free(scopes);
    /* Line 0 is the line table's "no line" (clang gives it to code merged from several
     * places): its row's file says nothing either, and would make the frame of the function
     * holding the code look like one of tlsan.h's wrappers when that file is tlsan.h. */
    if (line <= 0)
        file = NULL;
    out[n++] = (symbol_frame){fn, file, file ? line : 0, (uint64_t)sym_off, false};
    return n;
}

bool symbol_frame_is_wrapper(const symbol_frame *f, const char *module_path)
{
    if (f->file && strcmp(symbolize_base_name(f->file), "tlsan.h") == 0)
        return true;
    static const char *const aligned[] = {"posix_memalign", "aligned_alloc",   "memalign",
                                          "valloc",         "pvalloc",         "__libc_memalign",
                                          "_mid_memalign",  "__posix_memalign"};
    const char *module = module_path ? symbolize_base_name(module_path) : "";
    if (!f->function || strncmp(module, "libc.so", 7) != 0)
        return false;
    for (size_t i = 0; i < sizeof aligned / sizeof aligned[0]; i++)
        if (strcmp(f->function, aligned[i]) == 0)
            return true;
    return false;
}

size_t symbolizer_stack_frames(symbolizer *s, const symbol_raw_frame *raw, size_t n_raw,
                               bool exact_first, symbol_stack_frame *out, size_t max)
{
    size_t n = 0;
    bool leading = true; /* still among the wrappers at the stack's start */
    for (size_t i = 0; i < n_raw && n < max; i++) {
        symbol_frame sym[16];
        /* Looked up as a return address: a faulting instruction as the byte after it. */
        uint64_t offset = raw[i].offset + (i == 0 && exact_first);
        size_t n_sym = s && raw[i].module_path
                           ? symbolizer_lookup(s, raw[i].module_path, raw[i].bias, offset, sym, 16)
                           : 0;
        if (n_sym == 0) {
            leading = false;
            out[n++] = (symbol_stack_frame){i, {0}};
            continue;
        }
        for (size_t k = 0; k < n_sym && n < max; k++) {
            if (leading && symbol_frame_is_wrapper(&sym[k], raw[i].module_path))
                continue;
            leading = false;
            out[n++] = (symbol_stack_frame){i, sym[k]};
        }
    }
    return n;
}

char *symbol_frame_text(const symbol_raw_frame *raw, const symbol_frame *f, char *buf,
                        size_t buf_bytes)
{
    const char *module = raw->module_path ? symbolize_base_name(raw->module_path) : NULL;
    unsigned long long off = (unsigned long long)raw->offset;
    char where[600];
    if (module)
        snprintf(where, sizeof where, "%s+0x%llx%s", module, off, f->inlined ? ", inlined" : "");
    else
        snprintf(where, sizeof where, "0x%llx%s", off, f->inlined ? ", inlined" : "");
    if (!f->function) {
        snprintf(buf, buf_bytes, "%s", where);
        return buf;
    }
    char fn[512];
    int len = (int)symbol_name_length(f->function);
    if (f->inlined) /* an inlined function has no code of its own to be an offset into */
        snprintf(fn, sizeof fn, "%.*s", len, f->function);
    else
        snprintf(fn, sizeof fn, "%.*s+0x%llx", len, f->function,
                 (unsigned long long)f->function_offset_bytes);
    if (f->file && f->line > 0)
        snprintf(buf, buf_bytes, "%s at %s:%d (%s)", fn, symbolize_base_name(f->file), f->line,
                 where);
    else
        snprintf(buf, buf_bytes, "%s (%s)", fn, where);
    return buf;
}
