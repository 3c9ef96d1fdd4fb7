/* view: the model of a plan's picture, the data embedded in the HTML page, the page being
 * self-contained, and the static SVG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/trace_format.h"
#include "picture/view.h"
#include "support/tcheck.h"

/* overlap-basic: a (steps 0..3) and c (2..3) share bytes 4096..8192 while both are live. */
static const char overlap_q[] =
    "{'tlsan_plan':1,'name':'overlap','arenas':[{'name':'a0','bytes':65536}],'tensors':["
    "{'name':'x','bytes':4096,'arena':'a0','offset':0,'input':true},"
    "{'name':'a','bytes':4096,'arena':'a0','offset':4096},"
    "{'name':'b','bytes':4096,'arena':'a0','offset':8192,'dtype':'f32','shape':[32,32]},"
    "{'name':'c','bytes':4096,'arena':'a0','offset':4096},"
    "{'name':'y','bytes':4096,'arena':'a0','offset':12288,'output':true}],'ops':["
    "{'name':'f','reads':['x'],'writes':['a']},"
    "{'name':'g','reads':['x'],'writes':['b']},"
    "{'name':'h','reads':['b'],'writes':['c']},"
    "{'name':'k','reads':['a','c'],'writes':['y']}]}";

/* One exclusive if: on `then` t lives 0..1; on `else` u lives 2..3 on the same bytes. */
static const char branch_q[] =
    "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':4096}],'tensors':["
    "{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
    "{'name':'t','bytes':64,'arena':'a0','offset':64},"
    "{'name':'u','bytes':64,'arena':'a0','offset':64},"
    "{'name':'y','bytes':64,'arena':'a0','offset':128,'output':true}],'ops':["
    "{'name':'t1','reads':['x'],'writes':['t'],'branch':{'if':'c','arm':'then'}},"
    "{'name':'t2','reads':['t'],'writes':['y'],'branch':{'if':'c','arm':'then'}},"
    "{'name':'e1','reads':['x'],'writes':['u'],'branch':{'if':'c','arm':'else'}},"
    "{'name':'e2','reads':['u'],'writes':['y'],'branch':{'if':'c','arm':'else'}}]}";

/* A view read late keeps its base alive; a view of a view. */
static const char views_q[] =
    "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':4096}],'tensors':["
    "{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
    "{'name':'a','bytes':256,'arena':'a0','offset':64},"
    "{'name':'a_hi','bytes':128,'view_of':'a','view_offset':128},"
    "{'name':'a_hi2','bytes':64,'view_of':'a_hi','view_offset':64},"
    "{'name':'y','bytes':64,'arena':'a0','offset':512,'output':true}],'ops':["
    "{'name':'f','reads':['x'],'writes':['a']},"
    "{'name':'g','reads':['x'],'writes':['y']},"
    "{'name':'h','reads':['a_hi2'],'writes':['y']},"
    "{'name':'k','reads':['a','y'],'writes':['y']}]}";

typedef struct checked {
    tlsan_plan *plan;
    tlsan_report *report;
    view_model m;
} checked;

static checked check_q(const char *q)
{
    checked c = {0};
    c.plan = tcheck_plan_q(q);
    assert_int_equal(tlsan_check(c.plan, NULL, &c.report), TLSAN_OK);
    assert_int_equal(view_model_build(&c.m, c.plan, c.report, 0), 0);
    return c;
}

static void checked_free(checked *c)
{
    view_model_free(&c->m);
    tlsan_report_free(c->report);
    tlsan_plan_free(c->plan);
}

static void assert_life(const view_model *m, const char *name, int32_t first, int32_t last)
{
    life l = m->life[tcheck_tensor(m->plan, name)];
    if (l.first != first || l.last != last)
        fail_msg("%s: lifetime [%d, %d], want [%d, %d]", name, l.first, l.last, first, last);
}

/* Writes the units with `fn` into a malloc'd string. */
static char *render(int (*fn)(const view_unit *, size_t, FILE *), const view_unit *u, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(u, n, f), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* The JSON document embedded in a page, parsed. */
static yajl_val page_data(const char *html)
{
    static const char open[] = "<script type=\"application/json\" id=\"tlsan-data\">";
    const char *s = strstr(html, open);
    assert_non_null(s);
    s += strlen(open);
    const char *e = strstr(s, "</script>");
    assert_non_null(e);
    char *text = strndup(s, (size_t)(e - s));
    char err[256];
    yajl_val v = yajl_tree_parse(text, err, sizeof err);
    if (!v)
        fail_msg("embedded JSON does not parse: %s", err);
    free(text);
    return v;
}

static yajl_val get(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val r = yajl_tree_get(v, path, yajl_t_any);
    if (!r)
        fail_msg("no member '%s'", key);
    return r;
}

static void assert_ints(yajl_val arr, const long long *want, size_t n)
{
    assert_true(YAJL_IS_ARRAY(arr));
    assert_int_equal(arr->u.array.len, n);
    for (size_t i = 0; i < n; i++)
        if (YAJL_GET_INTEGER(arr->u.array.values[i]) != want[i])
            fail_msg("element %zu is %lld, want %lld", i, YAJL_GET_INTEGER(arr->u.array.values[i]),
                     want[i]);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
        n++;
    return n;
}

/* Lifetimes, marks and live bytes of the model of a plan without branches. */
static void model_of_overlap(void **state)
{
    (void)state;
    checked c = check_q(overlap_q);
    view_model *m = &c.m;
    assert_int_equal(m->n_paths, 1);
    assert_int_equal(m->n_dep, 0);
    assert_life(m, "x", -1, 1);
    assert_life(m, "a", 0, 3);
    assert_life(m, "b", 1, 2);
    assert_life(m, "c", 2, 3);
    assert_life(m, "y", 3, 4);
    assert_int_equal(m->mark[tcheck_tensor(c.plan, "a")], VIEW_MARK_CONFLICT);
    assert_int_equal(m->mark[tcheck_tensor(c.plan, "c")], VIEW_MARK_CONFLICT);
    assert_int_equal(m->mark[tcheck_tensor(c.plan, "b")], VIEW_MARK_NONE);
    /* Steps -1..4: x; x a; x a b; a b c; a c y; y. */
    static const uint64_t live[] = {4096, 8192, 12288, 12288, 12288, 4096};
    assert_memory_equal(m->live_max, live, sizeof live);
    /* Own accesses of a: written by f (0), read by k (3). */
    uint32_t a = tcheck_tensor(c.plan, "a");
    assert_int_equal(m->acc_start[a + 1] - m->acc_start[a], 2);
    assert_int_equal(m->acc_op[m->acc_start[a]], 0);
    assert_int_equal(m->acc_rw[m->acc_start[a]], ACC_WRITE);
    assert_int_equal(m->acc_op[m->acc_start[a] + 1], 3);
    assert_int_equal(m->acc_rw[m->acc_start[a] + 1], ACC_READ);
    checked_free(&c);
}

/* The page embeds exactly the plan's rectangles: one per tensor with its arena, offset,
 * bytes, derived lifetime and mark, plus the finding that makes a and c red. */
static void html_embeds_the_rectangles(void **state)
{
    (void)state;
    checked c = check_q(overlap_q);
    view_unit u = {"overlap.json", c.plan, NULL, c.report};
    char *html = render(view_write_html, &u, 1);
    yajl_val doc = page_data(html);
    yajl_val plans = get(doc, "plans");
    assert_int_equal(plans->u.array.len, 1);
    yajl_val p = plans->u.array.values[0];
    assert_string_equal(YAJL_GET_STRING(get(p, "label")), "overlap.json");
    assert_string_equal(YAJL_GET_STRING(get(p, "name")), "overlap");
    yajl_val ops = get(p, "ops");
    assert_int_equal(ops->u.array.len, 4);
    assert_string_equal(YAJL_GET_STRING(ops->u.array.values[2]), "h");
    yajl_val t = get(p, "tensors");
    yajl_val names = get(t, "name");
    static const char *const want_names[] = {"x", "a", "b", "c", "y"};
    assert_int_equal(names->u.array.len, 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(YAJL_GET_STRING(names->u.array.values[i]), want_names[i]);
    static const long long base[] = {-1, -1, -1, -1, -1};
    static const long long arena[] = {0, 0, 0, 0, 0};
    static const long long offset[] = {0, 4096, 8192, 4096, 12288};
    static const long long bytes[] = {4096, 4096, 4096, 4096, 4096};
    static const long long lives[] = {-1, 1, 0, 3, 1, 2, 2, 3, 3, 4};
    static const long long mark[] = {0, 2, 0, 2, 0};
    static const long long flags[] = {1, 0, 0, 0, 2};
    assert_ints(get(t, "base"), base, 5);
    assert_ints(get(t, "arena"), arena, 5);
    assert_ints(get(t, "offset"), offset, 5);
    assert_ints(get(t, "bytes"), bytes, 5);
    assert_ints(get(t, "life"), lives, 10);
    assert_ints(get(t, "mark"), mark, 5);
    assert_ints(get(t, "flags"), flags, 5);
    /* b's dtype and shape, a's accesses (f writes: 0*4+2; k reads: 3*4+1). */
    assert_string_equal(YAJL_GET_STRING(get(t, "dtype")->u.array.values[2]), "f32");
    static const long long shape[] = {32, 32};
    assert_ints(get(t, "shape")->u.array.values[2], shape, 2);
    static const long long acc_a[] = {2, 13};
    assert_ints(get(t, "access")->u.array.values[1], acc_a, 2);

    yajl_val ar = get(p, "arenas")->u.array.values[0];
    assert_int_equal(YAJL_GET_INTEGER(get(ar, "bytes")), 65536);
    assert_int_equal(YAJL_GET_INTEGER(get(ar, "lower_bound")), 12288);
    static const long long live[] = {4096, 8192, 12288, 12288, 12288, 4096};
    assert_ints(get(ar, "live_max"), live, 6);

    yajl_val fs = get(p, "findings");
    assert_int_equal(fs->u.array.len, 1);
    yajl_val f = fs->u.array.values[0];
    assert_string_equal(YAJL_GET_STRING(get(f, "kind")), "live-overlap");
    assert_true(YAJL_IS_TRUE(get(f, "pair")));
    static const long long ft[] = {1, 3};
    assert_ints(get(f, "tensors"), ft, 2);
    static const long long steps[] = {2, 3}, fb[] = {4096, 8192};
    assert_ints(get(f, "steps"), steps, 2);
    assert_ints(get(f, "bytes"), fb, 2);
    yajl_tree_free(doc);
    free(html);
    checked_free(&c);
}

/* Nothing is fetched: no URL, no external script, style, image or font; markup in names
 * cannot close the data's <script> element. */
static void html_is_self_contained(void **state)
{
    (void)state;
    const char *q = "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':4096}],'tensors':["
                    "{'name':'<!--<script></script>alert(1)','bytes':64,"
                    "'arena':'a0','offset':0,'input':true,'stack':['http://frame.example/x']}],"
                    "'ops':[{'name':'f','reads':['<!--<script></script>alert(1)']}]}";
    checked c = check_q(q);
    view_unit u = {"odd.json", c.plan, NULL, c.report};
    char *html = render(view_write_html, &u, 1);
    assert_int_equal(count(html, "http://"), 0);
    assert_int_equal(count(html, "https://"), 0);
    assert_int_equal(count(html, " src="), 0);
    assert_int_equal(count(html, " href="), 0);
    assert_int_equal(count(html, "<link"), 0);
    assert_int_equal(count(html, "@import"), 0);
    assert_int_equal(count(html, "fetch("), 0);
    assert_int_equal(count(html, "XMLHttpRequest"), 0);
    /* url() only for the page's own hatch pattern (#id). */
    assert_int_equal(count(html, "url("), count(html, "url(#"));
    /* Exactly the two script elements of the page, each closed once: no '<' in the data. */
    assert_int_equal(count(html, "<script"), 2);
    assert_int_equal(count(html, "</script>"), 2);
    assert_non_null(strstr(html, "<!DOCTYPE html>"));
    assert_non_null(strstr(html, "</html>\n"));
    /* The name survives, escaped. */
    yajl_val doc = page_data(html);
    yajl_val names = get(get(get(doc, "plans")->u.array.values[0], "tensors"), "name");
    assert_string_equal(YAJL_GET_STRING(names->u.array.values[0]), "<!--<script></script>alert(1)");
    yajl_tree_free(doc);
    free(html);
    checked_free(&c);
}

/* The static SVG: one rectangle per root, the pair in red, one collision, the finding
 * listed, and the live-bytes chart with the arena size and the lower bound. */
static void svg_has_the_rectangles(void **state)
{
    (void)state;
    checked c = check_q(overlap_q);
    view_unit u = {"overlap.json", c.plan, NULL, c.report};
    char *svg = render(view_write_svg, &u, 1);
    assert_int_equal(strncmp(svg, "<?xml", 5), 0);
    assert_int_equal(count(svg, "<rect class=\"root\""), 3);
    assert_int_equal(count(svg, "<rect class=\"root conflict\""), 2);
    assert_int_equal(count(svg, "fill=\"#d62728\""), 2);
    assert_int_equal(count(svg, "<rect class=\"view"), 0);
    assert_int_equal(count(svg, "<rect class=\"bin\""), 0);
    assert_int_equal(count(svg, "<rect class=\"collision\""), 1);
    assert_non_null(strstr(svg, "<title>a: 4096 bytes at 4096, steps 0..3</title>"));
    assert_non_null(strstr(svg, "<title>c: 4096 bytes at 4096, steps 2..3</title>"));
    assert_non_null(strstr(svg, ">live-overlap</tspan> a / c, steps 2..3"));
    assert_non_null(strstr(svg, "arena size 64.0 KiB"));
    assert_non_null(strstr(svg, "lower bound 12.0 KiB"));
    assert_int_equal(count(svg, "<polyline"), 1);
    assert_non_null(strstr(svg, "</svg>\n"));
    free(svg);
    checked_free(&c);
}

/* Per-path lifetimes: t and u each live on one arm only; the union covers both. */
static void branch_paths(void **state)
{
    (void)state;
    checked c = check_q(branch_q);
    view_model *m = &c.m;
    assert_int_equal(m->paths_total, 2);
    assert_int_equal(m->n_paths, 2);
    uint32_t t = tcheck_tensor(c.plan, "t"), u = tcheck_tensor(c.plan, "u");
    uint32_t y = tcheck_tensor(c.plan, "y"), x = tcheck_tensor(c.plan, "x");
    /* x (input, read on both arms) and y (output) depend on the path too. */
    size_t dt = SIZE_MAX, du = SIZE_MAX;
    for (size_t d = 0; d < m->n_dep; d++) {
        dt = m->dep[d] == t ? d : dt;
        du = m->dep[d] == u ? d : du;
    }
    assert_true(dt != SIZE_MAX && du != SIZE_MAX);
    /* Path 0 takes the first arm (then): t lives 0..1, u not at all; path 1 the reverse. */
    assert_int_equal(m->path_arms[0], 0);
    life t0 = m->dep_life[0 * m->n_dep + dt], u0 = m->dep_life[0 * m->n_dep + du];
    life t1 = m->dep_life[1 * m->n_dep + dt], u1 = m->dep_life[1 * m->n_dep + du];
    assert_true(t0.first == 0 && t0.last == 1 && life_empty(u0));
    assert_true(u1.first == 2 && u1.last == 3 && life_empty(t1));
    assert_life(m, "t", 0, 1);
    assert_life(m, "u", 2, 3);
    assert_life(m, "y", 1, 4);
    (void)x;
    (void)y;
    /* No finding: t and u never live together on one path. */
    assert_int_equal(tlsan_report_count(c.report), 0);
    assert_int_equal(m->mark[t], VIEW_MARK_NONE);
    /* The most live bytes per step over the paths (then: x+t, t+y at steps 0, 1; else: x+u,
     * u+y at steps 2, 3), never both arms summed. */
    static const uint64_t live[] = {64, 128, 128, 128, 128, 64};
    assert_memory_equal(m->live_max, live, sizeof live);
    /* The page lists both paths and the path lifetimes. */
    view_unit un = {"branch.json", c.plan, NULL, c.report};
    char *html = render(view_write_html, &un, 1);
    yajl_val doc = page_data(html);
    yajl_val p = get(doc, "plans")->u.array.values[0];
    assert_int_equal(get(p, "paths")->u.array.len, 2);
    assert_int_equal(get(p, "path_life")->u.array.len, 2);
    assert_string_equal(YAJL_GET_STRING(get(get(p, "ifs")->u.array.values[0], "name")), "c");
    yajl_tree_free(doc);
    free(html);
    checked_free(&c);
}

/* Views: their own lifetime (with the views below them), drawn inside their root. */
static void views_inside_roots(void **state)
{
    (void)state;
    checked c = check_q(views_q);
    view_model *m = &c.m;
    assert_life(m, "a", 0, 3);
    assert_life(m, "a_hi", 2, 2);
    assert_life(m, "a_hi2", 2, 2);
    const tlsan_plan *p = c.plan;
    assert_int_equal(p->tensors[tcheck_tensor(p, "a_hi2")].abs_offset_bytes, 64 + 128 + 64);
    assert_int_equal(view_tensor_arena(p, tcheck_tensor(p, "a_hi2")), 0);
    view_unit u = {"views.json", c.plan, NULL, c.report};
    char *svg = render(view_write_svg, &u, 1);
    assert_int_equal(count(svg, "<rect class=\"view\""), 2);
    assert_non_null(strstr(svg, "<title>a_hi2: 64 bytes at 256, steps 2..2, view of a_hi</title>"));
    free(svg);
    checked_free(&c);
}

/* More paths than VIEW_MAX_PATHS: the union only, containing every path's lifetime. */
static void too_many_paths(void **state)
{
    (void)state;
    char q[4096];
    size_t n = (size_t)snprintf(q, sizeof q,
                                "{'tlsan_plan':1,'arenas':[{'name':'a','bytes':4096}],'tensors':["
                                "{'name':'x','bytes':100,'arena':'a','offset':0,'input':true},"
                                "{'name':'t','bytes':50,'arena':'a','offset':128},"
                                "{'name':'y','bytes':10,'arena':'a','offset':256,'output':true}],"
                                "'ops':[{'name':'f','reads':['x'],'writes':['t']}");
    for (int i = 0; i < 7; i++)
        n += (size_t)snprintf(q + n, sizeof q - n,
                              ",{'name':'c%d','reads':['t'],'branch':{'if':'c%d','arm':'then'}}", i,
                              i);
    snprintf(q + n, sizeof q - n, ",{'name':'g','reads':['t'],'writes':['y']}]}");
    checked c = check_q(q);
    assert_int_equal(c.m.paths_total, 128);
    assert_int_equal(c.m.n_paths, 0);
    assert_int_equal(c.m.n_dep, 0);
    assert_life(&c.m, "t", 0, 8);
    checked_free(&c);
}

/* A cache: one section per plan, labelled with its key. */
static void cache_sections(void **state)
{
    (void)state;
    const char *q = "{'tlsan_plan_cache':1,'plans':["
                    "{'key':{'batch':1},'tlsan_plan':1,'arenas':[{'name':'a','bytes':64}],"
                    "'tensors':[{'name':'x','bytes':64,'arena':'a','offset':0,'input':true}],"
                    "'ops':[]},"
                    "{'key':{'batch':2},'tlsan_plan':1,'arenas':[{'name':'a','bytes':128}],"
                    "'tensors':[{'name':'x','bytes':128,'arena':'a','offset':0,'input':true}],"
                    "'ops':[]}]}";
    char *json = strdup(q);
    for (char *s = json; *s; s++)
        if (*s == '\'')
            *s = '"';
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_error err = {0};
    assert_int_equal(tlsan_read_buffer(json, strlen(json), "cache.json", &plan, &cache, &err),
                     TLSAN_OK);
    assert_null(plan);
    tlsan_report *r = NULL;
    assert_int_equal(tlsan_check_cache(cache, NULL, &r), TLSAN_OK);
    view_unit u = {"cache.json", NULL, cache, r};
    char *html = render(view_write_html, &u, 1);
    yajl_val doc = page_data(html);
    yajl_val plans = get(doc, "plans");
    assert_int_equal(plans->u.array.len, 2);
    assert_string_equal(YAJL_GET_STRING(get(plans->u.array.values[0], "label")),
                        "cache.json: plans[0] {\"batch\":1}");
    assert_string_equal(YAJL_GET_STRING(get(plans->u.array.values[1], "label")),
                        "cache.json: plans[1] {\"batch\":2}");
    yajl_tree_free(doc);
    free(html);
    char *svg = render(view_write_svg, &u, 1);
    assert_int_equal(count(svg, "<g class=\"arena\""), 2);
    free(svg);
    tlsan_report_free(r);
    tlsan_cache_free(cache);
    free(json);
}

/* Traces are told from plans by their magic. */
static void trace_magic(void **state)
{
    (void)state;
    char dir[] = "/tmp/tlsan_view_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char trace[64], plan[64];
    snprintf(trace, sizeof trace, "%s/run.trace", dir);
    snprintf(plan, sizeof plan, "%s/plan.json", dir);
    FILE *f = fopen(trace, "wb");
    assert_non_null(f);
    fwrite(TRACE_MAGIC "\x01\0\0\0", 1, TRACE_MAGIC_BYTES + 4, f);
    fclose(f);
    f = fopen(plan, "wb");
    assert_non_null(f);
    fputs("{\"tlsan_plan\":1}", f);
    fclose(f);
    assert_true(view_file_is_trace(trace));
    assert_false(view_file_is_trace(plan));
    assert_false(view_file_is_trace("-"));
    assert_false(view_file_is_trace("/nonexistent/tlsan"));
    unlink(trace);
    unlink(plan);
    rmdir(dir);
}

/* The picture's view accesses are the checker's: on a plan of views, some declaring a
 * lifetime, each declaring view's list in the model is the one the checker judges its
 * declared lifetime against (view_access_build), every other view has its list too, and a
 * view the checker finds too short is drawn with the derived lifetime the finding names.
 *   r <- v (declares [1,2]) <- w <- z (declares [0,5]);  v2 <- r, read on one arm only. */
static const char declared_views_q[] =
    "{'tlsan_plan':1,'arenas':[{'name':'a0','bytes':1024}],'tensors':["
    "{'name':'x','bytes':64,'arena':'a0','offset':0,'input':true},"
    "{'name':'r','bytes':512,'arena':'a0','offset':64},"
    "{'name':'v','bytes':256,'view_of':'r','lifetime':[1,2]},"
    "{'name':'w','bytes':128,'view_of':'v','view_offset':128},"
    "{'name':'z','bytes':64,'view_of':'w','view_offset':64,'lifetime':[0,5]},"
    "{'name':'v2','bytes':256,'view_of':'r','view_offset':256},"
    "{'name':'y','bytes':64,'arena':'a0','offset':640,'output':true}],'ops':["
    "{'name':'o0','reads':['x'],'writes':['r']},"
    "{'name':'o1','reads':['r'],'writes':['v']},"
    "{'name':'o2','reads':['z'],'writes':['y']},"
    "{'name':'o3','reads':['v2'],'writes':['y'],'branch':{'if':'c','arm':'then'}},"
    "{'name':'o4','reads':['w','y'],'writes':['y']}]}";

static void assert_accesses(const view_access *va, uint32_t t, const uint32_t *ops,
                            const uint8_t *rw, uint32_t n)
{
    assert_int_equal(va->start[t + 1] - va->start[t], n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(va->op[va->start[t] + i], ops[i]);
        assert_int_equal(va->rw[va->start[t] + i], rw[i]);
    }
}

static void view_accesses_are_the_checkers(void **state)
{
    (void)state;
    checked c = check_q(declared_views_q);
    const tlsan_plan *p = c.plan;
    access_index ix;
    assert_int_equal(access_index_build(&ix, p), 0);
    view_access judged = {0};
    assert_int_equal(view_access_build(&judged, p, &ix), 0);
    assert_null(judged.hull);
    assert_null(c.m.views.hull);

    uint32_t v = tcheck_tensor(p, "v"), w = tcheck_tensor(p, "w"), z = tcheck_tensor(p, "z"),
             v2 = tcheck_tensor(p, "v2");
    /* The checker lists the declaring views only; the picture the same lists for them. */
    const uint32_t v_ops[] = {1, 2, 4}, w_ops[] = {2, 4}, z_ops[] = {2}, v2_ops[] = {3};
    const uint8_t v_rw[] = {ACC_WRITE, ACC_READ, ACC_READ}, w_rw[] = {ACC_READ, ACC_READ},
                  z_rw[] = {ACC_READ}, v2_rw[] = {ACC_READ | ACC_COND};
    assert_accesses(&judged, v, v_ops, v_rw, 3);
    assert_accesses(&judged, z, z_ops, z_rw, 1);
    assert_accesses(&judged, w, NULL, NULL, 0);
    assert_accesses(&judged, v2, NULL, NULL, 0);
    assert_accesses(&c.m.views, v, v_ops, v_rw, 3);
    assert_accesses(&c.m.views, z, z_ops, z_rw, 1);
    assert_accesses(&c.m.views, w, w_ops, w_rw, 2);
    assert_accesses(&c.m.views, v2, v2_ops, v2_rw, 1);
    for (uint32_t t = 0; t < p->n_tensors; t++)
        assert_int_equal(c.m.views.flags[t], judged.flags[t]);

    /* v is found too short with derived lifetime [1, 4]; the picture draws exactly that. */
    assert_int_equal(tlsan_report_count(c.report), 1);
    const tlsan_finding *f = tlsan_report_finding(c.report, 0);
    assert_int_equal(f->kind, TLSAN_KIND_LIFETIME_TOO_SHORT);
    assert_string_equal(f->tensors[0], "v");
    assert_int_equal(f->lifetimes[0][0], 1);
    assert_int_equal(f->lifetimes[0][1], 4);
    assert_life(&c.m, "v", 1, 4);
    assert_life(&c.m, "w", 2, 4);
    assert_life(&c.m, "z", 2, 2);
    assert_life(&c.m, "v2", 3, 3); /* on the `then` path; no access on `else` */
    assert_life(&c.m, "r", 0, 4);
    view_access_free(&judged);
    access_index_free(&ix);
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_of_overlap),
        cmocka_unit_test(view_accesses_are_the_checkers),
        cmocka_unit_test(html_embeds_the_rectangles),
        cmocka_unit_test(html_is_self_contained),
        cmocka_unit_test(svg_has_the_rectangles),
        cmocka_unit_test(branch_paths),
        cmocka_unit_test(views_inside_roots),
        cmocka_unit_test(too_many_paths),
        cmocka_unit_test(cache_sections),
        cmocka_unit_test(trace_magic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
