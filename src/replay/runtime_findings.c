/* runtime_findings: a trace's FINDING records as data, symbolized. */
#include "replay/runtime_findings.h"
#include "replay/symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps p (freed with f); NULL when p is NULL or cannot be kept (then p is freed). */
static void *own(runtime_findings *f, void *p)
{
    if (!p)
        return NULL;
    if (f->n_owned == f->cap_owned) {
        size_t cap = f->cap_owned ? f->cap_owned * 2 : 64;
        void **grown = realloc(f->owned, cap * sizeof *grown);
        if (!grown) {
            free(p);
            return NULL;
        }
        f->owned = grown;
        f->cap_owned = cap;
    }
    f->owned[f->n_owned++] = p;
    return p;
}

/* A copy of the first n bytes of s (all when n is SIZE_MAX), owned by f; NULL for NULL. */
static const char *copy(runtime_findings *f, const char *s, size_t n, bool *failed)
{
    if (!s)
        return NULL;
    char *c = own(f, strndup(s, n));
    if (!c)
        *failed = true;
    return c;
}

/* The frames of trace stack `id`, symbolized; false when out of memory. */
static bool read_stack(runtime_findings *f, const trace_data *t, symbolizer *sym, uint64_t id,
                       bool exact_first, runtime_stack *out)
{
    trace_stack st = trace_stack_get(t, id);
    size_t max = st.n_frames * 16;
    symbol_raw_frame *raw = calloc(st.n_frames + 1, sizeof *raw);
    symbol_stack_frame *frames = calloc(max + 1, sizeof *frames);
    runtime_frame *rf = own(f, calloc(max + 1, sizeof *rf));
    bool failed = !raw || !frames || !rf;
    for (size_t i = 0; !failed && i < st.n_frames; i++) {
        const trace_module *m = trace_module_get(t, st.frames[i].module);
        raw[i] = m ? (symbol_raw_frame){m->path, m->base, st.frames[i].offset}
                   : (symbol_raw_frame){NULL, 0, st.frames[i].offset};
    }
    size_t n =
        failed ? 0 : symbolizer_stack_frames(sym, raw, st.n_frames, exact_first, frames, max);
    for (size_t k = 0; k < n; k++) {
        const symbol_raw_frame *r = &raw[frames[k].raw];
        const symbol_frame *s = &frames[k].sym;
        rf[k] = (runtime_frame){
            .pc = r->bias + r->offset,
            .module = copy(f, r->module_path, SIZE_MAX, &failed),
            .offset = r->offset,
            .function =
                s->function ? copy(f, s->function, symbol_name_length(s->function), &failed) : NULL,
            .function_offset_bytes = s->function_offset_bytes,
            .file = copy(f, s->file, SIZE_MAX, &failed),
            .line = s->line,
            .inlined = s->inlined,
        };
    }
    free(raw);
    free(frames);
    out->frames = rf;
    out->n_frames = n;
    return !failed;
}

tlsan_status runtime_findings_read(const trace_data *t, bool symbolize, runtime_findings **out)
{
    *out = NULL;
    runtime_findings *f = calloc(1, sizeof *f);
    if (!f)
        return TLSAN_ERR_NOMEM;
    snprintf(f->process, sizeof f->process, "pid %u", (unsigned)trace_pid(t));
    size_t n = 0;
    for (size_t i = 0; i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        n += ev->tag == TRACE_FINDING && !ev->suppressed;
        f->n_suppressed += ev->tag == TRACE_FINDING && ev->suppressed;
    }
    symbolizer *sym = symbolize && n ? symbolizer_create() : NULL;
    bool failed = (symbolize && n && !sym) || !(f->items = own(f, calloc(n + 1, sizeof *f->items)));
    for (size_t i = 0; !failed && i < trace_n_events(t); i++) {
        const trace_event *ev = trace_event_at(t, i);
        if (ev->tag != TRACE_FINDING || ev->suppressed)
            continue;
        runtime_finding *rf = &f->items[f->n++];
        const char **tensors = own(f, calloc(ev->n_reads + 1, sizeof *tensors));
        runtime_stack *stacks = own(f, calloc(ev->n_roles + 1, sizeof *stacks));
        failed = !tensors || !stacks;
        rf->kind = copy(f, ev->text, ev->text_bytes, &failed);
        rf->message = copy(f, ev->message, SIZE_MAX, &failed);
        for (size_t k = 0; !failed && k < ev->n_reads; k++)
            tensors[k] = copy(f, trace_str(t, ev->names[k]), SIZE_MAX, &failed);
        for (size_t k = 0; !failed && k < ev->n_roles; k++) {
            stacks[k].role = copy(f, ev->roles[k], SIZE_MAX, &failed);
            bool exact = k < 64 && (ev->fault_stacks >> k & 1);
            failed = failed || !read_stack(f, t, sym, ev->role_stacks[k], exact, &stacks[k]);
        }
        rf->tensors = tensors;
        rf->n_tensors = ev->n_reads;
        rf->stacks = stacks;
        rf->n_stacks = ev->n_roles;
    }
    symbolizer_free(sym);
    if (failed) {
        runtime_findings_free(f);
        return TLSAN_ERR_NOMEM;
    }
    *out = f;
    return TLSAN_OK;
}

void runtime_findings_free(runtime_findings *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_owned; i++)
        free(f->owned[i]);
    free(f->owned);
    free(f);
}
