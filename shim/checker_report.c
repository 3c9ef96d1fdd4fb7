/* checker_report.c - the body of a checker finding, rendered by the report layer, cut into
 * the lines of a shim report. */
#include "checker_report.h"

#include "report/finding_text.h"
#include "runtime_report.h"

#include <stdbool.h>
#include <stddef.h>

#define LINE_BYTES 1024

struct line_sink {
    struct report *r;
    char line[LINE_BYTES];
    size_t len;
};

static void take_text(void *ctx, const char *text, size_t n_bytes)
{
    struct line_sink *s = ctx;
    for (size_t i = 0; i < n_bytes; i++) {
        if (text[i] == '\n') {
            report_line(s->r, "%.*s", (int)s->len, s->line);
            s->len = 0;
        } else if (s->len + 1 < sizeof s->line) { /* a longer line is cut here */
            s->line[s->len++] = text[i];
        }
    }
}

void checker_report_body(struct report *r, const tlsan_report *rep, const tlsan_finding *f,
                         const char *label)
{
    if (!r)
        return;
    struct line_sink s = {.r = r};
    report_finding_text_body(rep, f, label, take_text, &s);
    if (s.len)
        report_line(r, "%.*s", (int)s.len, s.line);
}
