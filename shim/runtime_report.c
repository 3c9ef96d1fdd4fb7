/* report.c - findings in the AddressSanitizer layout, built without malloc.
 *
 * A report is built in one of a few static slots (claimed with an atomic flag, so threads
 * reporting at once do not wait on each other while they format), written with one write(2)
 * under the output lock, then recorded in the trace. A thread already building a report
 * gets NULL from report_begin (a report from inside a report's own stack walk). */
#include "runtime_report.h"

#include "out.h"
#include "shim.h"
#include "suppress.h"
#include "symbolizer.h"
#include "trace.h"
#include "tlsan/check.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REPORT_SLOTS      4
#define REPORT_BYTES      32768
#define REPORT_MAX_NAMES  8
#define REPORT_MAX_STACKS 8
#define REPORT_MAX_FRAMES 96 /* a stack's frames with the inlined ones */

struct report {
    atomic_int busy;
    int symbolize;
    char kind[64];
    char message[512];
    char text[REPORT_BYTES];
    struct outbuf b;
    char names[REPORT_MAX_NAMES][128];
    const char *name_ptrs[REPORT_MAX_NAMES];
    size_t n_names;
    char roles[REPORT_MAX_STACKS][REPORT_TITLE_BYTES];
    const char *role_ptrs[REPORT_MAX_STACKS];
    uint32_t stacks[REPORT_MAX_STACKS];
    size_t n_stacks;
    uint64_t fault_stacks; /* bit i: stack i starts at a faulting instruction */
    /* Each stack's frames, symbolized; the last row is scratch for stacks past
     * REPORT_MAX_STACKS. Mapped at the slot's first report (a program that never reports
     * does not pay its address space, which counts under ulimit -v); NULL if that failed. */
    struct shim_frame (*frames)[REPORT_MAX_FRAMES];
    size_t n_frames[REPORT_MAX_STACKS + 1];
};

static struct report g_slots[REPORT_SLOTS];
static atomic_ullong g_count;
static __thread int t_in_report __attribute__((tls_model("initial-exec")));

static struct report *begin(tlsan_kind kind, int symbolize, const char *fmt, va_list ap)
{
    if (t_in_report)
        return NULL;
    t_in_report = 1;
    struct report *r = NULL;
    for (unsigned spins = 0; !r; spins++) {
        for (unsigned i = 0; i < REPORT_SLOTS; i++)
            if (!atomic_exchange_explicit(&g_slots[i].busy, 1, memory_order_acquire)) {
                r = &g_slots[i];
                break;
            }
        if (!r)
            sched_yield();
    }
    r->symbolize = symbolize;
    out_copy_str(r->kind, sizeof r->kind, tlsan_kind_name(kind));
    struct outbuf m = {r->message, 0, sizeof r->message};
    m.data[0] = '\0';
    out_vappendf(&m, fmt, ap);
    r->b = (struct outbuf){r->text, 0, sizeof r->text};
    /* The kinds table's severity, as tlsan check and tlsan replay print it. */
    const char *level = tlsan_kind_severity(kind) == TLSAN_SEVERITY_WARNING ? "WARNING" : "ERROR";
    out_appendf(&r->b, "==%d==%s: tlsan: %s %s\n", (int)getpid(), level, r->kind, r->message);
    r->n_names = 0;
    r->n_stacks = 0;
    r->fault_stacks = 0;
    return r;
}

struct report *report_begin(tlsan_kind kind, int symbolize, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct report *r = begin(kind, symbolize, fmt, ap);
    va_end(ap);
    return r;
}

void report_line(struct report *r, const char *fmt, ...)
{
    if (!r)
        return;
    va_list ap;
    va_start(ap, fmt);
    out_vappendf(&r->b, fmt, ap);
    va_end(ap);
    out_appendf(&r->b, "\n");
}

/* A JSON string (quotes, escapes; bytes >= 0x80 kept as they are: names are UTF-8). */
static void json_str(struct outbuf *b, const char *s, size_t n)
{
    out_appendf(b, "\"");
    for (size_t i = 0; s && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            out_appendf(b, "\\%c", c);
        else if (c < 0x20)
            out_appendf(b, "\\u%04x", c);
        else
            out_appendf(b, "%c", c);
    }
    out_appendf(b, "\"");
}

static void json_cstr(struct outbuf *b, const char *s)
{
    json_str(b, s, s ? strlen(s) : 0);
}

/* The report as one JSON line (log_format=json), in the fields of tlsan replay --format json:
 * {"kind", "message", "pid", "tensors", "call_stacks": [{"role", "frames": [{"pc", "module",
 * "offset", "function", "function_offset", "file", "line", "inlined"}]}]}. */
static void format_json(struct report *r, struct outbuf *b)
{
    out_appendf(b, "{\"kind\":");
    json_cstr(b, r->kind);
    out_appendf(b, ",\"message\":");
    json_cstr(b, r->message);
    out_appendf(b, ",\"pid\":%d,\"tensors\":[", (int)getpid());
    for (size_t i = 0; i < r->n_names; i++) {
        out_appendf(b, i ? "," : "");
        json_cstr(b, r->names[i]);
    }
    out_appendf(b, "],\"call_stacks\":[");
    size_t n_rows = r->n_stacks < REPORT_MAX_STACKS ? r->n_stacks : REPORT_MAX_STACKS;
    for (size_t s = 0; s < n_rows; s++) {
        out_appendf(b, "%s{\"role\":", s ? "," : "");
        json_cstr(b, r->roles[s]);
        out_appendf(b, ",\"frames\":[");
        for (size_t k = 0; r->frames && k < r->n_frames[s]; k++) {
            const struct shim_frame *f = &r->frames[s][k];
            out_appendf(b, "%s{\"pc\":%llu", k ? "," : "", (unsigned long long)f->pc);
            if (f->module) {
                out_appendf(b, ",\"module\":");
                json_cstr(b, f->module);
                out_appendf(b, ",\"offset\":%llu", (unsigned long long)f->module_offset);
            }
            if (f->sym.function) {
                out_appendf(b, ",\"function\":");
                json_str(b, f->sym.function, symbol_name_length(f->sym.function));
                if (!f->sym.inlined)
                    out_appendf(b, ",\"function_offset\":%llu",
                                (unsigned long long)f->sym.function_offset_bytes);
            }
            if (f->sym.file && f->sym.line > 0) {
                out_appendf(b, ",\"file\":");
                json_cstr(b, f->sym.file);
                out_appendf(b, ",\"line\":%d", f->sym.line);
            }
            out_appendf(b, ",\"inlined\":%s}", f->sym.inlined ? "true" : "false");
        }
        out_appendf(b, "]}");
    }
    out_appendf(b, "]}\n");
}

/* "    #i 0xPC in FUNCTION+0xOFF at FILE:LINE (MODULE+0xOFF)", the parts not known left out; an
 * inlined function's frame has no offset and says "inlined". */
static void format_frame(struct outbuf *b, unsigned i, const struct shim_frame *f)
{
    out_appendf(b, "    #%u %p", i, (void *)f->pc);
    if (f->sym.function) {
        char name[256];
        size_t n = symbol_name_length(f->sym.function);
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, f->sym.function, n);
        name[n] = '\0';
        if (f->sym.inlined)
            out_appendf(b, " in %s", name);
        else
            out_appendf(b, " in %s+0x%llx", name, (unsigned long long)f->sym.function_offset_bytes);
    }
    if (f->sym.file && f->sym.line > 0)
        out_appendf(b, " at %s:%d", f->sym.file, f->sym.line);
    if (f->module)
        out_appendf(b, " (%s+0x%zx%s)\n", f->module, (size_t)f->module_offset,
                    f->sym.inlined ? ", inlined" : "");
    else
        out_appendf(b, " (<unknown module>)\n");
}

static void add_stack(struct report *r, const char *title, uint32_t stack_id, bool exact_first)
{
    if (!r)
        return;
    out_appendf(&r->b, "%s:\n", title);
    size_t row = r->n_stacks < REPORT_MAX_STACKS ? r->n_stacks : REPORT_MAX_STACKS;
    if (!r->frames) {
        void *m = mmap(NULL, (REPORT_MAX_STACKS + 1) * sizeof *r->frames, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r->frames = m == MAP_FAILED ? NULL : m;
    }
    struct shim_frame *frames = r->frames ? r->frames[row] : NULL;
    size_t n =
        stack_id && frames ? symbolizer_stack(stack_id, exact_first, frames, REPORT_MAX_FRAMES) : 0;
    r->n_frames[row] = n;
    if (n == 0)
        out_appendf(&r->b, "    (no stack)\n");
    for (size_t i = 0; i < n; i++)
        format_frame(&r->b, (unsigned)i, &frames[i]);
    if (r->n_stacks < REPORT_MAX_STACKS) {
        out_copy_str(r->roles[r->n_stacks], sizeof r->roles[0], title);
        r->role_ptrs[r->n_stacks] = r->roles[r->n_stacks];
        r->stacks[r->n_stacks] = stack_id;
        if (exact_first)
            r->fault_stacks |= (uint64_t)1 << r->n_stacks;
        r->n_stacks++;
    }
}

void report_stack(struct report *r, const char *title, uint32_t stack_id)
{
    add_stack(r, title, stack_id, false);
}

void report_fault_stack(struct report *r, const char *title, uint32_t stack_id)
{
    add_stack(r, title, stack_id, true);
}

void report_tensor(struct report *r, const char *name)
{
    if (!r || !name || r->n_names >= REPORT_MAX_NAMES)
        return;
    out_copy_str(r->names[r->n_names], sizeof r->names[0], name);
    r->name_ptrs[r->n_names] = r->names[r->n_names];
    r->n_names++;
}

void report_end(struct report *r, const char *summary_fmt, ...)
{
    if (!r)
        return;
    int saved = errno;
    out_appendf(&r->b, "SUMMARY: tlsan: %s ", r->kind);
    va_list ap;
    va_start(ap, summary_fmt);
    out_vappendf(&r->b, summary_fmt, ap);
    va_end(ap);
    /* The buffer keeps a byte for NUL; a truncated report still ends its last line. */
    if (r->b.len + 1 >= r->b.cap)
        r->b.len = r->b.cap - 2;
    r->b.data[r->b.len++] = '\n';
    /* A suppressed finding is recorded (tlsan run and replay count it apart), not printed,
     * not counted, and halts nothing. */
    const struct shim_frame *rows[REPORT_MAX_STACKS];
    size_t n_rows = r->n_stacks < REPORT_MAX_STACKS ? r->n_stacks : REPORT_MAX_STACKS;
    for (size_t i = 0; i < n_rows; i++)
        rows[i] = r->frames ? r->frames[i] : NULL;
    if (!r->frames)
        n_rows = 0;
    bool suppressed = suppress_match(r->kind, rows, r->n_frames, n_rows) >= 0;
    if (!suppressed && shim_opts()->log_format == SHIM_LOG_JSON) {
        /* The text is done with: its buffer holds the JSON line instead. */
        r->b.len = 0;
        format_json(r, &r->b);
        if (r->b.len + 1 >= r->b.cap) { /* cut short: still one line, marked */
            r->b.len = 0;
            out_appendf(&r->b, "{\"kind\":");
            json_cstr(&r->b, r->kind);
            out_appendf(&r->b, ",\"message\":");
            json_cstr(&r->b, r->message);
            out_appendf(&r->b, ",\"pid\":%d,\"truncated\":true}\n", (int)getpid());
        }
    }
    if (!suppressed) {
        out_lock();
        out_write(r->b.data, r->b.len);
        out_unlock();
    }
    trace_finding(r->kind, r->message, r->name_ptrs, r->n_names, r->role_ptrs, r->stacks,
                  r->n_stacks, r->fault_stacks, suppressed);
    if (suppressed) {
        atomic_store_explicit(&r->busy, 0, memory_order_release);
        t_in_report = 0;
        errno = saved;
        return;
    }
    uint64_t count = atomic_fetch_add(&g_count, 1) + 1;
    atomic_store_explicit(&r->busy, 0, memory_order_release);
    t_in_report = 0;
    errno = saved;
    const struct shim_options *o = shim_opts();
    if (o->halt_on_error == SHIM_HALT_ALWAYS) {
        trace_close(count);
        _exit(o->exitcode);
    }
}

uint64_t report_count(void)
{
    return atomic_load(&g_count);
}

void report_reinit_in_child(void)
{
    /* The child's findings are its own: its exit status and its trace's END count them. */
    atomic_store(&g_count, 0);
    for (unsigned i = 0; i < REPORT_SLOTS; i++)
        atomic_store_explicit(&g_slots[i].busy, 0, memory_order_relaxed);
    t_in_report = 0;
}

struct report *report_begin_finding(const struct tlsan_finding *f, const char *where)
{
    if (f->n_tensors >= 2)
        return report_begin(f->kind, 1, "between '%s' and '%s' in %s", f->tensors[0], f->tensors[1],
                            where);
    if (f->n_tensors == 1)
        return report_begin(f->kind, 1, "on '%s' in %s", f->tensors[0], where);
    return report_begin(f->kind, 1, "in %s", where);
}

void report_end_finding(struct report *r, const struct tlsan_finding *f, const char *where)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        report_tensor(r, f->tensors[i]);
    if (f->n_tensors >= 2)
        report_end(r, "'%s' and '%s' in %s", f->tensors[0], f->tensors[1], where);
    else if (f->n_tensors == 1)
        report_end(r, "'%s' in %s", f->tensors[0], where);
    else
        report_end(r, "in %s", where);
}
