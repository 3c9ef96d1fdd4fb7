/* view_svg: the static picture of plans (tlsan check --svg), for CI artifacts and docs.
 *
 * The same chart as the HTML page without the script: per arena, steps across and byte
 * offsets down with one rectangle per storage root over its lifetime (the union over the
 * branch paths, so nothing live on some path is left out), views inside their roots, the
 * tensors of pair findings in red with the collision area on top, the findings listed to
 * the right, and the live bytes per step (the most over the paths) under the chart with the
 * arena's size and the checker's lower bound. Rectangles smaller than a bin are counted
 * into a density grid instead, so the file stays small for 10^5 roots. */
#include "picture/view.h"

#include "check/cache.h"
#include "report/report.h"
#include "core/utf8.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SVG_W      1400.0 /* whole picture */
#define CHART_W    1000.0 /* one arena's chart, margins included */
#define ML         80.0   /* left margin (byte labels) */
#define MR         10.0
#define MT         8.0
#define MB         22.0
#define LIVE_H     110.0
#define BIN        3.0 /* side of a density bin, in px */
#define TINY_AREA  2.0 /* px^2: smaller rectangles are binned */
#define LIST_X     (CHART_W + 20.0)
#define LIST_LINES 24 /* findings listed beside one arena at most */

/* Writes s as XML text (escaping markup; bytes that are not UTF-8 become '?'). */
static void put_text(FILE *out, const char *s)
{
    if (!s)
        return;
    bool valid = utf8_valid_text(s, strlen(s));
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '&')
            fputs("&amp;", out);
        else if (c == '"')
            fputs("&quot;", out);
        else if (c < 0x20 || (!valid && c >= 0x80))
            fputc('?', out);
        else
            fputc(c, out);
    }
}

/* Bytes in the largest binary unit that keeps the number at least 1. */
static void fmt_bytes(char *buf, size_t n, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t u = 0;
    while (b >= 1024.0 && u + 1 < sizeof unit / sizeof *unit) {
        b /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f B", b);
    else
        snprintf(buf, n, "%.*f %s", b >= 100 ? 0 : b >= 10 ? 1 : 2, b, unit[u]);
}

/* A round tick step of about span/want (powers of two for bytes, 1-2-5 for steps). */
static double tick_step(double span, double want, bool binary)
{
    double raw = span / want;
    if (raw <= 1)
        return 1;
    double s = 1;
    if (binary) {
        while (s < raw)
            s *= 2;
        return s;
    }
    while (s * 10 <= raw)
        s *= 10;
    return raw <= s ? s : raw <= 2 * s ? 2 * s : raw <= 5 * s ? 5 * s : 10 * s;
}

typedef struct chart {
    FILE *out;
    double top;     /* y of the chart's top */
    double h;       /* chart height */
    double sx, sy;  /* px per step, px per byte */
    double x0;      /* first step shown (-1) */
    unsigned *bins; /* density grid */
    size_t bins_w, bins_h;
} chart;

/* Places one tensor: a rectangle with a tooltip, or a count in the density grid. */
static void put_tensor(chart *c, const view_model *m, uint32_t t)
{
    const tlsan_plan *p = m->plan;
    const tensor_rec *tr = &p->tensors[t];
    life l = m->life[t];
    if (life_empty(l))
        return;
    bool view = tr->root != t;
    double x = ML + ((double)l.first - c->x0) * c->sx;
    double w = ((double)l.last + 1 - l.first) * c->sx;
    double y = c->top + MT + (double)tr->abs_offset_bytes * c->sy;
    double h = (double)tr->bytes * c->sy;
    uint8_t mark = m->mark[t];
    if (mark == VIEW_MARK_CONFLICT) {
        /* Conflicts stay visible at any scale. */
        if (w < 3)
            x -= (3 - w) / 2, w = 3;
        if (h < 3)
            y -= (3 - h) / 2, h = 3;
    } else if (w * h < TINY_AREA) {
        size_t bx = (size_t)((x - ML) / BIN), by = (size_t)((y - c->top - MT) / BIN);
        if (bx >= c->bins_w)
            bx = c->bins_w - 1;
        if (by >= c->bins_h)
            by = c->bins_h - 1;
        c->bins[by * c->bins_w + bx]++;
        return;
    }
    /* Outlines only where they do not swamp the fill (thin rectangles are all edge). */
    bool outline = mark == VIEW_MARK_CONFLICT || (w >= 4 && h >= 4);
    static const char *const fill[2][3] = {{"#9ecae1", "#fdae6b", "#d62728"},
                                           {"#c6e6c0", "#fdae6b", "#d62728"}};
    static const char *const stroke[2][3] = {{"#3b75a8", "#c05800", "#7a0000"},
                                             {"#3a8a3a", "#c05800", "#7a0000"}};
    fprintf(c->out,
            "<rect class=\"%s%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\" stroke=\"%s\"%s><title>",
            view ? "view" : "root",
            mark == VIEW_MARK_CONFLICT  ? " conflict"
            : mark == VIEW_MARK_FLAGGED ? " flagged"
                                        : "",
            x, y, w, h, fill[view][mark], outline ? stroke[view][mark] : "none",
            view ? " fill-opacity=\"0.85\" stroke-dasharray=\"3 2\"" : "");
    put_text(c->out, plan_str(p, tr->name));
    fprintf(c->out, ": %" PRIu64 " bytes at %" PRIu64 ", steps %d..%d", tr->bytes,
            tr->abs_offset_bytes, l.first, l.last);
    if (view) {
        fputs(", view of ", c->out);
        put_text(c->out, plan_str(p, p->tensors[tr->view_of].name));
    }
    fputs("</title></rect>\n", c->out);
    size_t len = strlen(plan_str(p, tr->name));
    if (h > 12 && w > 7.0 * (double)(len < 24 ? len : 24) && len <= 24) {
        fprintf(c->out, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\">", x + 3, y + 11);
        put_text(c->out, plan_str(p, tr->name));
        fputs("</text>\n", c->out);
    }
}

/* One arena: chart, live bytes, findings beside. Returns the height used. */
static double put_arena(FILE *out, const view_model *m, size_t a, double top)
{
    const tlsan_plan *p = m->plan;
    const arena_rec *ar = &p->arenas[a];
    const tlsan_arena_stats *st = tlsan_report_arena_stats(m->report, m->plan_index, a);
    size_t n_roots = 0;
    uint64_t y_max = ar->bytes;
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        if (view_tensor_arena(p, t) != a)
            continue;
        const tensor_rec *tr = &p->tensors[t];
        n_roots += tr->root == t;
        if (tr->abs_offset_bytes + tr->bytes > y_max)
            y_max = tr->abs_offset_bytes + tr->bytes;
    }
    if (y_max == 0)
        y_max = 1;
    double h = 140.0 + 22.0 * (double)(n_roots < 16 ? n_roots : 16);
    h = h < 220 ? 220 : h > 520 ? 520 : h;
    char b1[32], b2[32];
    fmt_bytes(b1, sizeof b1, (double)ar->bytes);
    fprintf(out, "<g class=\"arena\" data-arena=\"");
    put_text(out, plan_str(p, ar->name));
    fprintf(out, "\">\n<text class=\"head\" x=\"%.1f\" y=\"%.1f\">arena ", ML, top + 12);
    put_text(out, plan_str(p, ar->name));
    fprintf(out, " (%s, ", b1);
    put_text(out, plan_str(p, ar->memory));
    fprintf(out, "): %zu roots</text>\n", n_roots);
    top += 18;

    chart c = {out, top, h, 0, 0, -1, NULL, 0, 0};
    double cw = CHART_W - ML - MR, ch = h - MT - MB;
    c.sx = cw / ((double)p->n_ops + 2);
    c.sy = ch / (double)y_max;
    c.bins_w = (size_t)(cw / BIN) + 1;
    c.bins_h = (size_t)(ch / BIN) + 1;
    c.bins = calloc(c.bins_w * c.bins_h, sizeof *c.bins);
    if (!c.bins)
        return -1;
    fprintf(out,
            "<rect x=\"0\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" "
            "stroke=\"#ccc\"/>\n",
            top, CHART_W, h + LIVE_H);
    /* Grid: steps and bytes. */
    double xs = tick_step((double)p->n_ops + 2, cw / 70, false);
    for (double s = 0; s <= (double)p->n_ops; s += xs) {
        double x = ML + (s + 1.5) * c.sx;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
                x, top + MT, x, top + h - MB, x, top + h - 8, s);
    }
    double ys = tick_step((double)y_max, ch / 40, true);
    for (double b = 0; b <= (double)y_max; b += ys) {
        double y = top + MT + b * c.sy;
        fmt_bytes(b2, sizeof b2, b);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ML, y, CHART_W - MR, y, ML - 4, y + 3, b2);
    }
    double ya = top + MT + (double)ar->bytes * c.sy;
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
            "stroke-dasharray=\"4 3\"/><text class=\"axis\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"end\">arena end %s</text>\n",
            ML, ya, CHART_W - MR, ya, CHART_W - MR - 2, ya - 3, b1);

    /* Roots, the density grid, views, then conflicts and collisions on top (red stays
     * visible whatever lies around it). */
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (p->tensors[t].root == t && view_tensor_arena(p, t) == a &&
            m->mark[t] != VIEW_MARK_CONFLICT)
            put_tensor(&c, m, t);
    for (size_t b = 0; b < c.bins_w * c.bins_h; b++) {
        if (!c.bins[b])
            continue;
        double alpha = 0.25 + 0.1 * (double)(32 - __builtin_clz(c.bins[b]));
        fprintf(out,
                "<rect class=\"bin\" x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
                "fill=\"rgb(80,110,150)\" fill-opacity=\"%.2f\"/>\n",
                ML + (double)(b % c.bins_w) * BIN, top + MT + (double)(b / c.bins_w) * BIN, BIN,
                BIN, alpha > 0.9 ? 0.9 : alpha);
    }
    /* Conflicting roots before views, so that the views inside them stay visible. */
    for (int pass = 0; pass < 3; pass++)
        for (uint32_t t = 0; t < p->n_tensors; t++) {
            bool root = p->tensors[t].root == t, conflict = m->mark[t] == VIEW_MARK_CONFLICT;
            if (view_tensor_arena(p, t) == a && (pass == 0   ? root && conflict
                                                 : pass == 1 ? !root && !conflict
                                                             : !root && conflict))
                put_tensor(&c, m, t);
        }
    free(c.bins);

    /* Collisions and the list of findings beside the chart. */
    size_t listed = 0, in_arena = 0;
    for (size_t i = 0; i < tlsan_report_count(m->report); i++) {
        const tlsan_finding *f = tlsan_report_finding(m->report, i);
        if (!view_finding_in_plan(m, f))
            continue;
        bool here = false;
        for (size_t k = 0; k < f->n_tensors && !here; k++) {
            uint32_t t = view_finding_tensor(m, f, k);
            here = t != NO_INDEX && view_tensor_arena(p, t) == a;
        }
        if (!here)
            continue;
        in_arena++;
        bool pair = f->kind == TLSAN_KIND_LIVE_OVERLAP || f->kind == TLSAN_KIND_BAD_INPLACE ||
                    f->kind == TLSAN_KIND_UNORDERED_REUSE;
        if (pair && f->has_steps && f->has_bytes) {
            double x = ML + ((double)f->steps[0] + 1) * c.sx;
            double w = ((double)f->steps[1] - (double)f->steps[0] + 1) * c.sx;
            double y = top + MT + (double)f->bytes[0] * c.sy;
            double hh = (double)(f->bytes[1] - f->bytes[0]) * c.sy;
            fprintf(out,
                    "<rect class=\"collision\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"rgb(90,0,0)\" fill-opacity=\"0.55\" "
                    "stroke=\"#7a0000\"><title>",
                    x, y, w < 3 ? 3 : w, hh < 3 ? 3 : hh);
            put_text(out, f->message);
            fputs("</title></rect>\n", out);
        }
        if (listed < LIST_LINES) {
            fprintf(out,
                    "<text class=\"finding\" x=\"%.1f\" y=\"%.1f\"><tspan fill=\"%s\" "
                    "font-weight=\"bold\">%s</tspan> ",
                    LIST_X, top + 28 + 16.0 * (double)listed, pair ? "#b00" : "#b60",
                    tlsan_kind_name(f->kind));
            for (size_t k = 0; k < f->n_tensors && k < 4; k++) {
                fputs(k ? " / " : "", out);
                put_text(out, f->tensors[k]);
            }
            if (f->has_steps)
                fprintf(out, ", steps %" PRId64 "..%" PRId64, f->steps[0], f->steps[1]);
            fputs("<title>", out);
            put_text(out, f->message);
            fputs("</title></text>\n", out);
        }
        listed++;
    }
    fprintf(out,
            "<text class=\"head\" x=\"%.1f\" y=\"%.1f\">findings in this arena: %zu%s</text>\n",
            LIST_X, top + 10, in_arena, in_arena > LIST_LINES ? " (first 24 listed)" : "");
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n",
            ML, top + h - MB, CHART_W - MR, top + h - MB, ML, top + MT, ML, top + h - MB);

    /* Live bytes per step, the arena size and the lower bound. */
    size_t n_steps = p->n_ops + 2;
    const uint64_t *live = &m->live_max[a * n_steps];
    uint64_t peak = 0;
    for (size_t s = 0; s < n_steps; s++)
        if (live[s] > peak)
            peak = live[s];
    uint64_t lb = st ? st->lower_bound_bytes : 0;
    double vmax = (double)ar->bytes;
    if ((double)peak > vmax)
        vmax = (double)peak;
    if ((double)lb > vmax)
        vmax = (double)lb;
    vmax = (vmax > 0 ? vmax : 1) * 1.08;
    double lt = top + h, lh = LIVE_H - 30;
#define LY(v) (lt + 14 + lh - (double)(v) / vmax * lh)
    fputs("<polyline fill=\"none\" stroke=\"#1f5fa8\" points=\"", out);
    /* One point per pixel column at most: the most live bytes of the steps under it. */
    double last_px = -1;
    uint64_t col = 0;
    for (size_t s = 0; s < n_steps; s++) {
        double px = ML + (double)s * c.sx;
        if (live[s] > col)
            col = live[s];
        if (s + 1 == n_steps || ML + (double)(s + 1) * c.sx - last_px >= 1) {
            fprintf(out, "%.1f,%.1f %.1f,%.1f ", px, LY(col), px + c.sx, LY(col));
            last_px = px + c.sx;
            col = 0;
        }
    }
    fputs("\"/>\n", out);
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
            "stroke-dasharray=\"4 3\"/><text class=\"axis\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"end\">arena size %s</text>\n",
            ML, LY(ar->bytes), CHART_W - MR, LY(ar->bytes), CHART_W - MR - 2, LY(ar->bytes) - 3,
            b1);
    fmt_bytes(b1, sizeof b1, (double)lb);
    fmt_bytes(b2, sizeof b2, (double)peak);
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c05800\" "
            "stroke-dasharray=\"4 3\"/><text class=\"axis\" x=\"%.1f\" y=\"%.1f\">lower bound "
            "%s%s; live bytes per step: peak %s%s</text>\n",
            ML, LY(lb), CHART_W - MR, LY(lb), ML + 4, LY(lb) - 3, b1,
            st && st->approximate ? " (approximate)" : "", b2,
            m->n_paths > 1    ? " (most over the paths)"
            : m->n_paths == 0 ? " (union of paths)"
                              : "");
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n</g>\n",
            ML, LY(0), CHART_W - MR, LY(0));
#undef LY
    return 18 + h + LIVE_H + 16;
}

/* One plan: a title line, then its arenas. Returns the height used, or -1. */
static double put_plan(FILE *out, const view_model *m, const char *label, double top)
{
    const tlsan_plan *p = m->plan;
    size_t n = 0;
    for (size_t i = 0; i < tlsan_report_count(m->report); i++)
        n += view_finding_in_plan(m, tlsan_report_finding(m->report, i));
    fprintf(out, "<text class=\"title\" x=\"4\" y=\"%.1f\">", top + 16);
    put_text(out, label);
    fprintf(out, ": %zu ops, %zu tensors, %zu finding%s", p->n_ops, p->n_tensors, n,
            n == 1 ? "" : "s");
    if (m->n_paths > 1)
        fprintf(out, "; lifetimes: union of %zu branch paths", m->n_paths);
    else if (m->n_paths == 0)
        fprintf(out, "; lifetimes: union of %" PRIu64 " branch paths", m->paths_total);
    fputs("</text>\n", out);
    double used = 26;
    for (size_t a = 0; a < p->n_arenas; a++) {
        double h = put_arena(out, m, a, top + used);
        if (h < 0)
            return -1;
        used += h;
    }
    return used;
}

int view_write_svg(const view_unit *units, size_t n_units, FILE *out)
{
    /* The height is known only at the end, so the body goes to a temporary stream first. */
    char *body = NULL;
    size_t body_len = 0;
    FILE *b = open_memstream(&body, &body_len);
    if (!b)
        return -1;
    double y = 4;
    int rc = -1;
    for (size_t u = 0; u < n_units; u++) {
        const view_unit *un = &units[u];
        size_t n_plans = un->plan ? 1 : tlsan_cache_n_plans(un->cache);
        for (size_t i = 0; i < n_plans; i++) {
            const tlsan_plan *p = un->plan ? un->plan : tlsan_cache_plan(un->cache, i);
            view_model m;
            if (view_model_build(&m, p, un->report, i) != 0)
                goto out;
            char label[4200];
            if (un->cache)
                snprintf(label, sizeof label, "%s: plans[%zu] %s", un->label, i,
                         cache_key(un->cache, i) ? cache_key(un->cache, i) : "");
            else
                snprintf(label, sizeof label, "%s", un->label);
            double h = put_plan(b, &m, label, y);
            view_model_free(&m);
            if (h < 0)
                goto out;
            y += h;
        }
    }
    if (fclose(b) != 0) {
        b = NULL;
        goto out;
    }
    b = NULL;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\" font-size=\"11\">\n"
            "<style>.axis{font-size:10px;fill:#555}.label{font-size:10px;fill:#222}"
            ".head{font-size:12px;font-weight:bold}.title{font-size:14px;font-weight:bold}"
            ".finding{font-size:11px}</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
            SVG_W, y + 4, SVG_W, y + 4);
    fwrite(body, 1, body_len, out);
    fputs("</svg>\n", out);
    rc = ferror(out) ? -1 : 0;
out:
    if (b)
        fclose(b);
    free(body);
    return rc;
}
