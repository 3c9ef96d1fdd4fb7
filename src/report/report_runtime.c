/* report_runtime: the findings a traced process reported while it ran, as `tlsan replay`
 * shows them beside the checker's (text, JSON, SARIF). The frame lines are those of the
 * shim's live report (shim/runtime_report.c), so a finding reads the same in both. */
#include "report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void report_set_runtime(tlsan_report *r, const runtime_finding *findings, size_t n,
                        const char *process)
{
    r->runtime = findings;
    r->n_runtime = n;
    r->runtime_process = process;
    r->traced = true;
}

/* The kind a trace recorded by name, from the one table; TLSAN_KIND_COUNT_ for a name it does
 * not hold (a trace of another version), which is shown as recorded, as an error. */
static tlsan_kind kind_of(const runtime_finding *f)
{
    return tlsan_kind_from_name(f->kind);
}

static const char *severity_of(const runtime_finding *f)
{
    return tlsan_severity_name(tlsan_kind_severity(kind_of(f)));
}

size_t report_total_count(const tlsan_report *r)
{
    return r->n_findings + r->n_runtime;
}

/* "    #i 0xPC in FUNCTION+0xOFF at FILE:LINE (MODULE+0xOFF)", as the live report. */
static void put_frame(FILE *out, size_t i, const runtime_frame *f)
{
    fprintf(out, "    #%zu 0x%" PRIx64, i, f->pc);
    if (f->function && f->inlined)
        fprintf(out, " in %s", f->function);
    else if (f->function)
        fprintf(out, " in %s+0x%" PRIx64, f->function, f->function_offset_bytes);
    if (f->file && f->line > 0)
        fprintf(out, " at %s:%d", f->file, f->line);
    if (f->module)
        fprintf(out, " (%s+0x%" PRIx64 "%s)\n", f->module, f->offset,
                f->inlined ? ", inlined" : "");
    else
        fprintf(out, " (<unknown module>)\n");
}

void report_text_runtime(const tlsan_report *r, const char *label, const char *rule, FILE *out)
{
    for (size_t i = 0; i < r->n_runtime; i++) {
        const runtime_finding *f = &r->runtime[i];
        bool warn = tlsan_kind_severity(kind_of(f)) == TLSAN_SEVERITY_WARNING;
        fprintf(out, "%s\n%s: tlsan: %s %s (reported at run time by %s of %s)\n", rule,
                warn ? "WARNING" : "ERROR", f->kind, f->message,
                r->runtime_process ? r->runtime_process : "the process", label);
        for (size_t s = 0; s < f->n_stacks; s++) {
            const runtime_stack *st = &f->stacks[s];
            fprintf(out, "%s:\n", st->role);
            if (st->n_frames == 0)
                fprintf(out, "    (no stack)\n");
            for (size_t k = 0; k < st->n_frames; k++)
                put_frame(out, k, &st->frames[k]);
        }
    }
}

static void gen_frame(report_gen *j, const runtime_frame *f)
{
    report_gen_open_map(j);
    report_gen_str(j, "pc");
    report_gen_u64(j, f->pc);
    if (f->module) {
        report_gen_str(j, "module");
        report_gen_str(j, f->module);
        report_gen_str(j, "offset");
        report_gen_u64(j, f->offset);
    }
    if (f->function) {
        report_gen_str(j, "function");
        report_gen_str(j, f->function);
        if (!f->inlined) {
            report_gen_str(j, "function_offset");
            report_gen_u64(j, f->function_offset_bytes);
        }
    }
    if (f->file && f->line > 0) {
        report_gen_str(j, "file");
        report_gen_str(j, f->file);
        report_gen_str(j, "line");
        report_gen_i64(j, f->line);
    }
    report_gen_str(j, "inlined");
    report_gen_bool(j, f->inlined);
    report_gen_close_map(j);
}

void report_gen_runtime_findings(report_gen *j, const tlsan_report *r)
{
    for (size_t i = 0; i < r->n_runtime; i++) {
        const runtime_finding *f = &r->runtime[i];
        report_gen_open_map(j);
        report_gen_finding_head(j, f->kind, severity_of(f), f->tensors, f->n_tensors, f->message);
        report_gen_str(j, "found");
        report_gen_str(j, "at run time");
        if (r->runtime_process) {
            report_gen_str(j, "process");
            report_gen_str(j, r->runtime_process);
        }
        report_gen_str(j, "call_stacks");
        report_gen_open_array(j);
        for (size_t s = 0; s < f->n_stacks; s++) {
            report_gen_open_map(j);
            report_gen_str(j, "role");
            report_gen_str(j, f->stacks[s].role);
            report_gen_str(j, "frames");
            report_gen_open_array(j);
            for (size_t k = 0; k < f->stacks[s].n_frames; k++)
                gen_frame(j, &f->stacks[s].frames[k]);
            report_gen_close_array(j);
            report_gen_close_map(j);
        }
        report_gen_close_array(j);
        report_gen_close_map(j);
    }
}

/* A source file as a SARIF artifact URI: an absolute path as a file: URI. */
static void gen_file_location(report_gen *j, const runtime_frame *f)
{
    report_gen_str(j, "physicalLocation");
    report_gen_open_map(j);
    report_gen_str(j, "artifactLocation");
    report_gen_open_map(j);
    report_gen_str(j, "uri");
    char *uri = malloc(strlen(f->file) + 8);
    if (uri) {
        sprintf(uri, "%s%s", f->file[0] == '/' ? "file://" : "", f->file);
        report_gen_str(j, uri);
        free(uri);
    } else {
        report_gen_str(j, f->file);
    }
    report_gen_close_map(j);
    report_gen_str(j, "region");
    report_gen_open_map(j);
    report_gen_str(j, "startLine");
    report_gen_i64(j, f->line);
    report_gen_close_map(j);
    report_gen_close_map(j);
}

/* The stack's first frame with a source line, or NULL. */
static const runtime_frame *first_located(const runtime_stack *s)
{
    for (size_t k = 0; k < s->n_frames; k++)
        if (s->frames[k].file && s->frames[k].line > 0)
            return &s->frames[k];
    return NULL;
}

void report_gen_runtime_results(report_gen *j, const tlsan_report *r)
{
    for (size_t i = 0; i < r->n_runtime; i++) {
        const runtime_finding *f = &r->runtime[i];
        report_gen_open_map(j);
        report_gen_str(j, "ruleId");
        report_gen_str(j, f->kind);
        if (kind_of(f) != TLSAN_KIND_COUNT_) {
            report_gen_str(j, "ruleIndex");
            report_gen_i64(j, (int64_t)kind_of(f));
        }
        report_gen_str(j, "level");
        report_gen_str(j, severity_of(f));
        report_gen_str(j, "message");
        report_gen_open_map(j);
        report_gen_str(j, "text");
        size_t n = strlen(f->kind) + strlen(f->message) + 2;
        char *text = malloc(n);
        if (text)
            snprintf(text, n, "%s %s", f->kind, f->message);
        report_gen_str(j, text ? text : f->message);
        free(text);
        report_gen_close_map(j);
        /* Where: the first stack's first frame with a line (the bad access, or the free);
         * each stack's such frame is a related location named by its role. */
        const runtime_frame *at = f->n_stacks ? first_located(&f->stacks[0]) : NULL;
        if (at) {
            report_gen_str(j, "locations");
            report_gen_open_array(j);
            report_gen_open_map(j);
            gen_file_location(j, at);
            report_gen_close_map(j);
            report_gen_close_array(j);
        }
        report_gen_str(j, "relatedLocations");
        report_gen_open_array(j);
        for (size_t s = 0; s < f->n_stacks; s++) {
            const runtime_frame *fr = first_located(&f->stacks[s]);
            if (!fr)
                continue;
            report_gen_open_map(j);
            report_gen_str(j, "id");
            report_gen_i64(j, (int64_t)s);
            gen_file_location(j, fr);
            report_gen_str(j, "message");
            report_gen_open_map(j);
            report_gen_str(j, "text");
            report_gen_str(j, f->stacks[s].role);
            report_gen_close_map(j);
            report_gen_close_map(j);
        }
        report_gen_close_array(j);
        report_gen_str(j, "properties");
        report_gen_open_map(j);
        report_gen_str(j, "found");
        report_gen_str(j, "at run time");
        if (r->runtime_process) {
            report_gen_str(j, "process");
            report_gen_str(j, r->runtime_process);
        }
        report_gen_str(j, "tensors");
        report_gen_open_array(j);
        for (size_t k = 0; k < f->n_tensors; k++)
            report_gen_str(j, f->tensors[k]);
        report_gen_close_array(j);
        report_gen_close_map(j);
        report_gen_close_map(j);
    }
}
