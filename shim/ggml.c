/* ggml.c - the ggml adapter (ggml_hooks.h): interposes ggml's graph allocation and compute
 * calls, checks each graph as it is computed, and plants faults for self-tests.
 *
 * Interposition. libtlsan.so exports ggml_gallocr_alloc_graph,
 * ggml_backend_graph_compute[_async] and ggml_backend_sched_graph_compute[_async]; being
 * preloaded, it comes first in the global scope, so the program's calls and libggml's own
 * (through its PLT: ggml_backend_graph_compute calls ..._async, the scheduler calls
 * ggml_gallocr_alloc_graph and computes each split with ..._async) reach these hooks. Each
 * hook calls the real function from dlsym(RTLD_NEXT); when ggml was loaded with RTLD_LOCAL
 * (a dlopen'ed plug-in) RTLD_NEXT cannot see it, and the loaded objects named *ggml* are
 * searched instead. Nothing here runs, and nothing is resolved, in a program without ggml.
 *
 * What is checked. The graph handed to a compute call, read with ggml's public accessors
 * (the cgraph is opaque) and the tensor layout of ggml's public headers: only the outermost
 * compute call of a thread is checked, so ggml_backend_graph_compute's own call of
 * ..._async is not checked twice. The scheduler is checked split by split, where it
 * computes each split's graph on its backend. The layout is probed once against the library
 * (ggml_get_name, ggml_get_data must read the fields the headers place); a mismatch turns the
 * adapter off with one line, rather than reading garbage.
 *
 * With checksum=shared|all the graph is then computed node by node, with checksums around
 * each node (see "checksums" below): what the static check cannot see, a write that lands
 * outside the tensor its node declares, shows as live-corruption.
 *
 * Findings are reported once per process each (kind and tensors), in the layout of the
 * shim's other reports, with the stack of the compute call. Each graph checked is also
 * recorded in the trace as a plan handed over, so `tlsan replay` checks it again. */
#include "ggml_hooks.h"

#ifdef TLSAN_HAVE_GGML

#include "checksum.h"
#include "depot.h"
#include "ggml_model.h"
#include "out.h"
#include "report.h"
#include "shim.h"
#include "trace.h"
#include "tlsan/check.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef unsigned long long ull;
typedef enum ggml_status (*compute_fn)(ggml_backend_t, struct ggml_cgraph *);
typedef enum ggml_status (*sched_fn)(ggml_backend_sched_t, struct ggml_cgraph *);

/* The real ggml functions and the accessors the model reads through. */
static struct {
    bool (*gallocr_alloc_graph)(ggml_gallocr_t, struct ggml_cgraph *);
    enum ggml_status (*graph_compute)(ggml_backend_t, struct ggml_cgraph *);
    enum ggml_status (*graph_compute_async)(ggml_backend_t, struct ggml_cgraph *);
    enum ggml_status (*sched_graph_compute)(ggml_backend_sched_t, struct ggml_cgraph *);
    enum ggml_status (*sched_graph_compute_async)(ggml_backend_sched_t, struct ggml_cgraph *);
    const char *(*get_name)(const struct ggml_tensor *);
    void *(*get_data)(const struct ggml_tensor *);
    const char *(*version)(void);
    const char *(*type_name)(enum ggml_type);
    /* per-node computing (checksums): a one-node graph of ggml's public API */
    struct ggml_context *(*init)(struct ggml_init_params);
    void (*free)(struct ggml_context *);
    struct ggml_cgraph *(*new_graph_custom)(struct ggml_context *, size_t, bool);
    size_t (*graph_overhead_custom)(size_t, bool);
    void (*graph_clear)(struct ggml_cgraph *);
    void (*graph_add_node)(struct ggml_cgraph *, struct ggml_tensor *);
    void (*synchronize)(ggml_backend_t);
    bool stepwise; /* all of the above were found */
    struct gm_api model;
} G;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_bool g_on;                                 /* resolved, layout probed, shim active */
static atomic_bool g_probed;                             /* the layout probe ran */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* the caches below */
static uint64_t *g_keys; /* graphs checked (open addressing, 0 empty) */
static size_t g_keys_n, g_keys_cap;
static uint64_t *g_seen; /* findings reported */
static size_t g_seen_n, g_seen_cap;
static atomic_ulong g_checked, g_cached;
static struct ggml_inject g_inject;
static __thread int t_depth; /* compute calls of this thread in progress */
static __thread int t_sched; /* inside a scheduler compute */

unsigned long ggml_adapter_checked(void)
{
    return atomic_load(&g_checked);
}

unsigned long ggml_adapter_cached(void)
{
    return atomic_load(&g_cached);
}

/* ---- inject=... ---- */

static bool parse_int(const char **p, int *out)
{
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > 1 << 30)
            return false;
    }
    *out = (int)v;
    *p = s;
    return true;
}

bool ggml_inject_parse(const char *text, struct ggml_inject *out)
{
    *out = (struct ggml_inject){GGML_INJECT_NONE, -1, -1};
    if (!text || !*text)
        return true;
    if (strncmp(text, "move@", 5) != 0)
        return false;
    const char *p = text + 5;
    if (!parse_int(&p, &out->node))
        return false;
    if (*p == '@') {
        p++;
        if (!parse_int(&p, &out->victim))
            return false;
    }
    if (*p)
        return false;
    out->kind = GGML_INJECT_MOVE;
    return true;
}

/* ---- resolution ---- */

struct search {
    char paths[16][512];
    int n;
};

static int collect_ggml(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct search *s = arg;
    const char *name = info->dlpi_name;
    if (name && strstr(name, "ggml") && s->n < 16 && strlen(name) < sizeof s->paths[0])
        strcpy(s->paths[s->n++], name);
    return 0;
}

/* The real `name`: the next definition after the shim, else one in a loaded *ggml* object
 * (a library loaded RTLD_LOCAL). dlopen runs after dl_iterate_phdr, which holds the loader's
 * lock while it iterates. */
static void *resolve(const char *name, void *self)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p && p != self)
        return p;
    static struct search s; /* under g_once */
    s.n = 0;
    dl_iterate_phdr(collect_ggml, &s);
    for (int i = 0; i < s.n; i++) {
        void *h = dlopen(s.paths[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        p = dlsym(h, name);
        dlclose(h);
        if (p && p != self)
            return p;
    }
    return NULL;
}

#define RESOLVE(field, name, self) (*(void **)&G.field = resolve(name, (void *)(self)))

static void resolve_all(void)
{
    RESOLVE(gallocr_alloc_graph, "ggml_gallocr_alloc_graph", ggml_gallocr_alloc_graph);
    RESOLVE(graph_compute, "ggml_backend_graph_compute", ggml_backend_graph_compute);
    RESOLVE(graph_compute_async, "ggml_backend_graph_compute_async",
            ggml_backend_graph_compute_async);
    RESOLVE(sched_graph_compute, "ggml_backend_sched_graph_compute",
            ggml_backend_sched_graph_compute);
    RESOLVE(sched_graph_compute_async, "ggml_backend_sched_graph_compute_async",
            ggml_backend_sched_graph_compute_async);
    RESOLVE(get_name, "ggml_get_name", NULL);
    RESOLVE(get_data, "ggml_get_data", NULL);
    RESOLVE(version, "ggml_version", NULL);
    RESOLVE(type_name, "ggml_type_name", NULL);
    RESOLVE(model.graph_n_nodes, "ggml_graph_n_nodes", NULL);
    RESOLVE(model.graph_node, "ggml_graph_node", NULL);
    RESOLVE(model.buffer_get_base, "ggml_backend_buffer_get_base", NULL);
    RESOLVE(model.buffer_get_size, "ggml_backend_buffer_get_size", NULL);
    RESOLVE(model.buffer_name, "ggml_backend_buffer_name", NULL);
    RESOLVE(model.nbytes, "ggml_nbytes", NULL);
    RESOLVE(model.op_desc, "ggml_op_desc", NULL);
    RESOLVE(init, "ggml_init", NULL);
    RESOLVE(free, "ggml_free", NULL);
    RESOLVE(new_graph_custom, "ggml_new_graph_custom", NULL);
    RESOLVE(graph_overhead_custom, "ggml_graph_overhead_custom", NULL);
    RESOLVE(graph_clear, "ggml_graph_clear", NULL);
    RESOLVE(graph_add_node, "ggml_graph_add_node", NULL);
    RESOLVE(synchronize, "ggml_backend_synchronize", NULL);
    G.stepwise = G.init && G.free && G.new_graph_custom && G.graph_overhead_custom &&
                 G.graph_clear && G.graph_add_node && G.synchronize;

    bool all = G.get_name && G.get_data && G.version && G.type_name && G.model.graph_n_nodes &&
               G.model.graph_node && G.model.buffer_get_base && G.model.buffer_get_size &&
               G.model.buffer_name && G.model.nbytes && G.model.op_desc;
    if (!ggml_inject_parse(shim_opts()->inject, &g_inject))
        out_printf("tlsan: TLSAN_OPTIONS: inject=%s: expected move@NODE or move@NODE@VICTIM; "
                   "nothing injected\n",
                   shim_opts()->inject);
    if (!all) {
        out_printf("==%d==tlsan: ggml: some of ggml's accessors are missing; ggml graphs are not "
                   "checked\n",
                   (int)getpid());
        return;
    }
    atomic_store(&g_on, true);
}

static void ensure_resolved(void)
{
    pthread_once(&g_once, resolve_all);
}

/* If ggml somehow lacks the real function: a clear death instead of a call through NULL. */
static void must(void *fn, const char *name)
{
    if (!fn) {
        out_printf("==%d==tlsan: ggml: cannot find the real %s\n", (int)getpid(), name);
        abort();
    }
}

/* The headers' layout against the library's: the accessors must read the fields where the
 * headers put them. Run once, on the first tensor seen. */
static bool layout_ok(struct ggml_tensor *t)
{
    if (atomic_load(&g_probed))
        return atomic_load(&g_on);
    bool ok = G.get_name(t) == t->name && G.get_data(t) == t->data;
    if (!ok) {
        out_printf("==%d==tlsan: ggml: ggml %s's struct ggml_tensor is not laid out as in the "
                   "headers tlsan was built with; ggml graphs are not checked\n",
                   (int)getpid(), G.version());
        atomic_store(&g_on, false);
    } else if (shim_opts()->verbosity >= 1) {
        out_printf("==%d==tlsan: ggml: adapter on (ggml %s)\n", (int)getpid(), G.version());
    }
    atomic_store(&g_probed, true);
    return ok;
}

static bool adapter_on(struct ggml_cgraph *graph)
{
    if (!shim_active())
        return false;
    ensure_resolved();
    if (!atomic_load(&g_on) || !graph || G.model.graph_n_nodes(graph) <= 0)
        return false;
    return layout_ok(G.model.graph_node(graph, 0));
}

/* ---- caches ---- */

/* Adds key to the set; returns false when it was there. Lock held. A set that fills up
 * starts over: a program making ever new graphs gets them checked, not an ever larger set. */
static bool set_add(uint64_t **v, size_t *n, size_t *cap, uint64_t key)
{
    if (!key)
        key = 1;
    if ((*n + 1) * 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        if (c > (1u << 20)) {
            memset(*v, 0, *cap * sizeof **v);
            *n = 0;
            c = *cap;
        } else {
            uint64_t *w = calloc(c, sizeof *w);
            if (!w)
                return true;
            for (size_t i = 0; i < *cap; i++) {
                if (!(*v)[i])
                    continue;
                size_t j = (*v)[i] & (c - 1);
                while (w[j])
                    j = (j + 1) & (c - 1);
                w[j] = (*v)[i];
            }
            free(*v);
            *v = w;
            *cap = c;
        }
    }
    size_t j = key & (*cap - 1);
    for (; (*v)[j]; j = (j + 1) & (*cap - 1))
        if ((*v)[j] == key)
            return false;
    (*v)[j] = key;
    (*n)++;
    return true;
}

static bool first_time(uint64_t **v, size_t *n, size_t *cap, uint64_t key)
{
    pthread_mutex_lock(&g_mu);
    bool first = set_add(v, n, cap, key);
    pthread_mutex_unlock(&g_mu);
    return first;
}

static uint64_t finding_key(const tlsan_finding *f)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)f->kind;
    for (size_t i = 0; i < f->n_tensors; i++) {
        for (const char *p = f->tensors[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        h = (h ^ 0xff) * 0x100000001b3ull;
    }
    return h;
}

/* ---- reports ---- */

static void tensor_lines(struct report *r, const struct gm_model *m, int64_t index,
                         const tlsan_finding *f, size_t which)
{
    if (index < 0 || (uint64_t)index >= m->n_tensors)
        return;
    const struct gm_tensor *g = &m->tensors[index];
    const struct gm_tensor *root = &m->tensors[g->root];
    const struct ggml_tensor *t = g->t;
    char what[96];
    if (g->node >= 0)
        snprintf(what, sizeof what, "node %d (%s)", g->node, G.model.op_desc(t));
    else
        snprintf(what, sizeof what, "leaf%s", (root->flags & TLSAN_TENSOR_INPUT) ? ", input" : "");
    report_line(r, "  tensor '%s': %s, %s [%lld %lld %lld %lld]%s%s", g->name, what,
                G.type_name(t->type), (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                (long long)t->ne[3], (root->flags & TLSAN_TENSOR_OUTPUT) ? ", output" : "",
                g->view ? ", a view" : "");
    if (root->arena >= 0) {
        const struct gm_arena *a = &m->arenas[root->arena];
        uint64_t off = root->offset_bytes + (g->view ? g->offset_bytes : 0);
        report_line(r, "    at %p: buffer '%s' (base %p, %llu bytes), bytes [%llu, %llu)", t->data,
                    a->name, (void *)a->base, (ull)a->bytes, (ull)off, (ull)(off + g->bytes));
    }
    if (f->has_lifetimes && which < 2)
        report_line(r,
                    "    live from step %lld to step %lld (steps are node indices; -1: before "
                    "the graph, %d: after it)",
                    (long long)f->lifetimes[which][0], (long long)f->lifetimes[which][1],
                    m->n_nodes);
}

static void op_line(struct report *r, const struct gm_model *m, int64_t op, const char *what)
{
    if (op < 0 || op >= m->n_nodes || m->node_index[op] == UINT32_MAX)
        return;
    const struct gm_tensor *g = &m->tensors[m->node_index[op]];
    report_line(r, "  %snode %lld: %s writing '%s'", what, (long long)op, G.model.op_desc(g->t),
                g->name);
}

static void report_finding(const tlsan_finding *f, const struct gm_model *m, const char *where,
                           uint32_t stack)
{
    struct report *r = report_begin_finding(f, where);
    if (!r)
        return;
    report_line(r, "  %s", f->message);
    for (size_t i = 0; i < f->n_tensors && i < 2; i++)
        tensor_lines(r, m, f->tensor_index[i], f, i);
    if (f->has_steps)
        report_line(r, "  colliding at steps %lld to %lld", (long long)f->steps[0],
                    (long long)f->steps[1]);
    if (f->has_bytes)
        report_line(r, "  shared bytes [%llu, %llu) of the buffer", (ull)f->bytes[0],
                    (ull)f->bytes[1]);
    op_line(r, m, f->op_index, "");
    op_line(r, m, f->op_index2, "not ordered before it: ");
    report_stack(r, "graph computed at", stack);
    report_end_finding(r, f, where);
}

/* ---- the check ---- */

/* How reports name a graph. */
static void graph_where(char *buf, size_t cap, const struct ggml_cgraph *graph, int n_nodes)
{
    snprintf(buf, cap, "ggml graph %p (%d nodes%s)", (const void *)graph, n_nodes,
             t_sched ? ", a ggml_backend_sched split" : "");
}

/* ggml_plan_path=PATH: the plan to PATH.PID.N.json, N counting the graphs checked. */
static void write_plan(const tlsan_plan *plan)
{
    static atomic_uint n;
    char path[400];
    snprintf(path, sizeof path, "%s.%d.%u.json", shim_opts()->ggml_plan_path, (int)getpid(),
             atomic_fetch_add(&n, 1));
    FILE *f = fopen(path, "w");
    if (!f || tlsan_plan_write(plan, f, true) != TLSAN_OK)
        out_printf("==%d==tlsan: ggml: cannot write the plan to %s\n", (int)getpid(), path);
    if (f)
        fclose(f);
}

/* The plan into the trace, as a plan handed over: `tlsan replay` checks it again offline. */
static void trace_graph(const tlsan_plan *plan, uint32_t stack)
{
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    if (!f)
        return;
    tlsan_status st = tlsan_plan_write(plan, f, false);
    if (fclose(f) == 0 && st == TLSAN_OK && json)
        trace_plan(json, len, stack);
    free(json);
}

/* Checks the graph about to be computed, unless an identical one was. noinline: the stack
 * is taken from here, one frame below the hook. */
__attribute__((noinline)) static void check_graph(struct ggml_cgraph *graph)
{
    uint64_t key = gm_key(&G.model, graph);
    if (!first_time(&g_keys, &g_keys_n, &g_keys_cap, key)) {
        atomic_fetch_add(&g_cached, 1);
        return;
    }
    uint32_t stack = depot_capture(1);
    atomic_fetch_add(&g_checked, 1);
    struct gm_model m;
    tlsan_plan *plan = NULL;
    tlsan_report *rep = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    if (gm_build(&m, &G.model, graph) != 0) {
        out_printf("==%d==tlsan: ggml: out of memory reading a graph; not checked\n",
                   (int)getpid());
        return;
    }
    char where[128];
    graph_where(where, sizeof where, graph, m.n_nodes);
    plan = gm_plan(&m, &G.model, where, &err);
    if (!plan) {
        char msg[1100];
        tlsan_error_format(&err, msg, sizeof msg);
        out_printf("==%d==tlsan: ggml: cannot read %s as a plan: %s\n", (int)getpid(), where, msg);
        goto done;
    }
    if (shim_opts()->ggml_plan_path[0])
        write_plan(plan);
    if (trace_wanted())
        trace_graph(plan, stack);
    if (tlsan_check(plan, NULL, &rep) != TLSAN_OK) {
        out_printf("==%d==tlsan: ggml: cannot check %s\n", (int)getpid(), where);
        goto done;
    }
    size_t n = tlsan_report_count(rep);
    if (shim_opts()->verbosity >= 1)
        out_printf("==%d==tlsan: ggml: checked %s: %zu tensors in %zu buffers, %zu finding%s\n",
                   (int)getpid(), where, m.n_tensors, m.n_arenas, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        const tlsan_finding *f = tlsan_report_finding(rep, i);
        if (first_time(&g_seen, &g_seen_n, &g_seen_cap, finding_key(f)))
            report_finding(f, &m, where, stack);
    }
done:
    tlsan_report_free(rep);
    tlsan_plan_free(plan);
    gm_free(&m);
}

/* ---- injection ---- */

static bool node_reads_root(const struct gm_model *m, int node, uint32_t root)
{
    uint32_t k = m->node_index[node];
    if (k == UINT32_MAX)
        return false;
    const struct ggml_tensor *t = m->tensors[k].t;
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        long j = gm_find(m, t->src[s]);
        if (j >= 0 && m->tensors[j].root == root)
            return true;
    }
    return false;
}

/* The victim of move@N: the first root of N's buffer live while N is, with room for N's bytes
 * before the buffer's end. Preferably one that neither feeds N nor is written by a node
 * reading N; else one of those whose size differs from N's (of the same size, the pair would
 * pass for ggml_gallocr's in-place reuse, which the check rightly accepts when the reader is
 * the last one). */
static long pick_victim(const struct gm_model *m, uint32_t k)
{
    const struct gm_tensor *a = &m->tensors[k];
    const struct gm_arena *ar = &m->arenas[a->arena];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < m->n_tensors; i++) {
            const struct gm_tensor *b = &m->tensors[i];
            if (i == k || b->view || b->arena != a->arena || b->first == INT64_MIN ||
                b->last == INT64_MIN)
                continue;
            if (b->first > a->last || a->first > b->last)
                continue;
            if (b->offset_bytes + a->bytes > ar->bytes || b->offset_bytes == a->offset_bytes)
                continue;
            bool related = node_reads_root(m, a->node, (uint32_t)i) ||
                           (b->node >= 0 && node_reads_root(m, b->node, k));
            if (pass == 0 ? related : b->bytes == a->bytes)
                continue;
            return (long)i;
        }
    return -1;
}

static void inject(struct ggml_cgraph *graph)
{
    const struct ggml_inject *in = &g_inject;
    struct gm_model m;
    if (gm_build(&m, &G.model, graph) != 0)
        return;
    const char *why = NULL;
    long victim = -1;
    uint32_t k = in->node < m.n_nodes ? m.node_index[in->node] : UINT32_MAX;
    if (in->node >= m.n_nodes)
        why = "no such node";
    else if (k == UINT32_MAX)
        why = "the node has no data";
    else if (m.tensors[k].view)
        why = "the node is a view (move its storage root's node instead)";
    else if (!m.arenas[m.tensors[k].arena].buffer)
        why = "the node is in no backend buffer";
    else if (in->victim >= 0) {
        uint32_t v = in->victim < m.n_nodes ? m.node_index[in->victim] : UINT32_MAX;
        if (v == UINT32_MAX)
            why = "no such victim node";
        else {
            victim = (long)m.tensors[v].root;
            if ((uint32_t)victim == k || m.tensors[victim].arena != m.tensors[k].arena)
                why = "the victim must be another tensor in the same buffer";
        }
    } else if ((victim = pick_victim(&m, k)) < 0) {
        why = "no tensor of its buffer is live at the same time";
    }
    if (why) {
        out_printf("==%d==tlsan: inject: move@%d: %s; nothing injected\n", (int)getpid(), in->node,
                   why);
        goto done;
    }
    struct gm_tensor *a = &m.tensors[k], *b = &m.tensors[victim];
    char *to = (char *)b->t->data;
    out_printf("==%d==tlsan: inject: moved node %d '%s' (%llu bytes) in buffer '%s' from offset "
               "%llu onto '%s' at offset %llu\n",
               (int)getpid(), in->node, a->name, (ull)a->bytes, m.arenas[a->arena].name,
               (ull)a->offset_bytes, b->name, (ull)b->offset_bytes);
    a->t->data = to;
    /* Its views follow, as ggml_backend_view_init would have placed them. */
    for (size_t i = 0; i < m.n_tensors; i++)
        if (m.tensors[i].view && m.tensors[i].root == k)
            m.tensors[i].t->data = to + m.tensors[i].t->view_offs;
done:
    gm_free(&m);
}

/* ---- checksums: the graph computed node by node ----
 *
 * With checksum=shared (the default) or all, a graph is computed one node at a time, each as
 * a one-node graph (ggml_new_graph_custom + ggml_graph_add_node: ggml's public API), so that
 * the shim sees the bytes between nodes. After a node runs, every storage root it wrote is
 * hashed; before a node runs, every root it reads is hashed again and compared, and so are
 * the outputs after the last node. A difference is bytes that changed under a live tensor
 * with no write of its own: live-corruption, naming the nodes that wrote over its bytes
 * since. `shared` hashes the roots whose bytes some other root of the graph shares (ggml's
 * reuse), `all` every root, weights included. View nodes compute nothing and are skipped. */

struct sum {
    bool wanted, valid, reported;
    uint64_t hash;
    int hashed_at; /* the node after which it was hashed; -1: before the graph */
};

static uint64_t root_hash(const struct gm_tensor *r)
{
    return checksum_bytes(r->t->data, r->bytes);
}

/* Roots whose bytes another root of the same arena shares (a sweep by offset). */
static void mark_shared(const struct gm_model *m, struct sum *sums)
{
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct gm_tensor *a = &m->tensors[i];
        if (a->view || !a->bytes)
            continue;
        for (size_t j = i + 1; j < m->n_tensors; j++) {
            const struct gm_tensor *b = &m->tensors[j];
            if (b->view || !b->bytes || b->arena != a->arena)
                continue;
            if (a->offset_bytes < b->offset_bytes + b->bytes &&
                b->offset_bytes < a->offset_bytes + a->bytes)
                sums[i].wanted = sums[j].wanted = true;
        }
    }
}

/* The roots node i writes: its own, and a leaf ggml_gallocr allocates for it. */
static size_t written_roots(const struct gm_model *m, int i, uint32_t *out)
{
    size_t n = 0;
    uint32_t k = m->node_index[i];
    if (k == UINT32_MAX || gm_is_view_op(&G.model, m->tensors[k].t))
        return 0;
    out[n++] = m->tensors[k].root;
    const struct ggml_tensor *t = m->tensors[k].t;
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        long j = gm_find(m, t->src[s]);
        if (j >= 0 && m->tensors[m->tensors[j].root].first_writer == i)
            out[n++] = m->tensors[j].root;
    }
    return n;
}

static void report_corruption(const struct gm_model *m, uint32_t r, const struct sum *sum,
                              int reader, uint64_t now, const char *where, uint32_t stack)
{
    const struct gm_tensor *g = &m->tensors[r];
    const struct gm_arena *a = &m->arenas[g->arena];
    struct report *rep = report_begin(
        SHIM_KIND_LIVE_CORRUPTION, 1, "on '%s' in buffer '%s' bytes [%llu, %llu) in %s", g->name,
        a->name, (ull)g->offset_bytes, (ull)(g->offset_bytes + g->bytes), where);
    if (!rep)
        return;
    char when[64];
    if (reader < m->n_nodes)
        snprintf(when, sizeof when, "before node %d reads it", reader);
    else
        snprintf(when, sizeof when, "after the graph (it is an output)");
    report_line(rep,
                "  its bytes changed with no write of its own: checksum %016llx after %s, "
                "%016llx %s",
                (ull)sum->hash,
                sum->hashed_at < 0 ? "the graph's inputs were set" : "its last write", (ull)now,
                when);
    if (sum->hashed_at >= 0)
        op_line(rep, m, sum->hashed_at, "last written by ");
    const char *culprit = NULL;
    uint32_t w[GGML_MAX_SRC + 1];
    for (int k = sum->hashed_at + 1; k < reader && k < m->n_nodes; k++) {
        size_t n = written_roots(m, k, w);
        for (size_t x = 0; x < n; x++) {
            const struct gm_tensor *o = &m->tensors[w[x]];
            if (w[x] == r || o->arena != g->arena ||
                o->offset_bytes >= g->offset_bytes + g->bytes ||
                g->offset_bytes >= o->offset_bytes + o->bytes)
                continue;
            uint64_t lo = o->offset_bytes > g->offset_bytes ? o->offset_bytes : g->offset_bytes;
            uint64_t e1 = o->offset_bytes + o->bytes, e2 = g->offset_bytes + g->bytes;
            report_line(rep, "  overwritten by node %d (%s) writing '%s' over bytes [%llu, %llu)",
                        k, G.model.op_desc(m->tensors[m->node_index[k]].t), o->name, (ull)lo,
                        (ull)(e1 < e2 ? e1 : e2));
            if (!culprit)
                culprit = o->name;
        }
    }
    if (!culprit)
        report_line(rep, "  no node of the graph wrote over its bytes meanwhile: a write outside "
                         "the graph's tensors");
    report_stack(rep, "graph computed at", stack);
    report_tensor(rep, g->name);
    if (culprit)
        report_tensor(rep, culprit);
    report_end(rep, "'%s' in %s%s%s%s", g->name, where, culprit ? " (overwritten by '" : "",
               culprit ? culprit : "", culprit ? "')" : "");
}

/* Verifies root r before node `reader` reads it (m->n_nodes: after the graph). noinline: the
 * stack is taken two frames below the hook. */
__attribute__((noinline)) static void verify(const struct gm_model *m, struct sum *sums, uint32_t r,
                                             int reader, const char *where, uint32_t *stack)
{
    struct sum *sum = &sums[r];
    if (!sum->wanted || !sum->valid || sum->reported)
        return;
    uint64_t now = root_hash(&m->tensors[r]);
    if (now == sum->hash)
        return;
    sum->reported = true;
    char key[GM_NAME_BYTES + 16];
    snprintf(key, sizeof key, "corrupt:%s", m->tensors[r].name);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    if (!first_time(&g_seen, &g_seen_n, &g_seen_cap, h))
        return;
    if (!*stack)
        *stack = depot_capture(2);
    report_corruption(m, r, sum, reader, now, where, *stack);
}

/* Computes graph node by node with checksums around each; falls back to one call when the
 * graph cannot be read. noinline: the stack is taken two frames below the program's call. */
__attribute__((noinline)) static enum ggml_status
compute_checked(compute_fn real, ggml_backend_t backend, struct ggml_cgraph *graph)
{
    struct gm_model m;
    if (gm_build(&m, &G.model, graph) != 0)
        return real(backend, graph);
    char where[128];
    graph_where(where, sizeof where, graph, m.n_nodes);
    enum ggml_status st = GGML_STATUS_SUCCESS;
    struct ggml_context *ctx = NULL;
    struct sum *sums = calloc(m.n_tensors + 1, sizeof *sums);
    uint32_t stack = 0;
    if (!sums)
        goto whole;
    struct ggml_init_params params = {.mem_size = G.graph_overhead_custom(1, false) + 256,
                                      .no_alloc = true};
    ctx = G.init(params);
    struct ggml_cgraph *one = ctx ? G.new_graph_custom(ctx, 1, false) : NULL;
    if (!one)
        goto whole;
    bool all = shim_opts()->checksum == SHIM_CHECKSUM_ALL;
    if (!all)
        mark_shared(&m, sums);
    for (size_t i = 0; i < m.n_tensors; i++) {
        const struct gm_tensor *r = &m.tensors[i];
        if (r->view) {
            sums[i].wanted = false;
            continue;
        }
        sums[i].wanted |= all;
        if (sums[i].wanted && (r->flags & TLSAN_TENSOR_INPUT)) {
            sums[i].hash = root_hash(r);
            sums[i].valid = true;
            sums[i].hashed_at = -1;
        }
    }
    uint32_t w[GGML_MAX_SRC + 1];
    for (int i = 0; i < m.n_nodes && st == GGML_STATUS_SUCCESS; i++) {
        uint32_t k = m.node_index[i];
        if (k == UINT32_MAX)
            continue;
        struct ggml_tensor *t = m.tensors[k].t;
        if (gm_is_view_op(&G.model, t))
            continue;
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            long j = gm_find(&m, t->src[s]);
            if (j >= 0 && m.tensors[m.tensors[j].root].first_writer != i)
                verify(&m, sums, m.tensors[j].root, i, where, &stack);
        }
        G.graph_clear(one);
        G.graph_add_node(one, t);
        st = real(backend, one);
        G.synchronize(backend);
        size_t n = written_roots(&m, i, w);
        for (size_t x = 0; x < n; x++)
            if (sums[w[x]].wanted) {
                sums[w[x]].hash = root_hash(&m.tensors[w[x]]);
                sums[w[x]].valid = true;
                sums[w[x]].hashed_at = i;
            }
    }
    for (size_t i = 0; i < m.n_tensors && st == GGML_STATUS_SUCCESS; i++)
        if (!m.tensors[i].view && (m.tensors[i].flags & TLSAN_TENSOR_OUTPUT))
            verify(&m, sums, (uint32_t)i, m.n_nodes, where, &stack);
    if (shim_opts()->verbosity >= 2) {
        size_t hashed = 0;
        for (size_t i = 0; i < m.n_tensors; i++)
            hashed += sums[i].wanted;
        out_printf("==%d==tlsan: ggml: computed a graph of %d nodes node by node, %zu roots "
                   "hashed\n",
                   (int)getpid(), m.n_nodes, hashed);
    }
    goto done;
whole:
    st = real(backend, graph);
done:
    if (ctx)
        G.free(ctx);
    free(sums);
    gm_free(&m);
    return st;
}

/* ---- the hooks ---- */

EXPORT bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph *graph)
{
    ensure_resolved();
    must((void *)G.gallocr_alloc_graph, "ggml_gallocr_alloc_graph");
    bool ok = G.gallocr_alloc_graph(galloc, graph);
    if (ok && g_inject.kind != GGML_INJECT_NONE && adapter_on(graph))
        inject(graph);
    return ok;
}

/* A compute call: checks the graph when it is the thread's outermost one. Inlined into the
 * hooks so that the stack check_graph takes starts at the hook, then the program's call. */
static inline __attribute__((always_inline)) enum ggml_status
compute(compute_fn real, const char *name, ggml_backend_t backend, struct ggml_cgraph *graph)
{
    must((void *)real, name);
    bool stepwise = false;
    if (t_depth == 0 && adapter_on(graph)) {
        check_graph(graph);
        stepwise = shim_opts()->checksum != SHIM_CHECKSUM_OFF && G.stepwise;
    }
    t_depth++;
    enum ggml_status st = stepwise ? compute_checked(real, backend, graph) : real(backend, graph);
    t_depth--;
    return st;
}

/* A scheduler compute: checked where it computes each split (a nested compute call). */
static inline __attribute__((always_inline)) enum ggml_status
sched_compute(sched_fn real, const char *name, ggml_backend_sched_t sched,
              struct ggml_cgraph *graph)
{
    must((void *)real, name);
    t_sched++;
    enum ggml_status st = real(sched, graph);
    t_sched--;
    return st;
}

EXPORT enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend,
                                                   struct ggml_cgraph *graph)
{
    ensure_resolved();
    return compute(G.graph_compute, "ggml_backend_graph_compute", backend, graph);
}

EXPORT enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend,
                                                         struct ggml_cgraph *graph)
{
    ensure_resolved();
    return compute(G.graph_compute_async, "ggml_backend_graph_compute_async", backend, graph);
}

EXPORT enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched,
                                                         struct ggml_cgraph *graph)
{
    ensure_resolved();
    return sched_compute(G.sched_graph_compute, "ggml_backend_sched_graph_compute", sched, graph);
}

EXPORT enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched,
                                                               struct ggml_cgraph *graph)
{
    ensure_resolved();
    return sched_compute(G.sched_graph_compute_async, "ggml_backend_sched_graph_compute_async",
                         sched, graph);
}

#else /* !TLSAN_HAVE_GGML: built without ggml's headers, the adapter is absent. */

bool ggml_inject_parse(const char *text, struct ggml_inject *out)
{
    *out = (struct ggml_inject){GGML_INJECT_NONE, -1, -1};
    return !text || !*text;
}

unsigned long ggml_adapter_checked(void)
{
    return 0;
}

unsigned long ggml_adapter_cached(void)
{
    return 0;
}

#endif
