/* ggml.c - the ggml adapter (ggml_hooks.h): interposes ggml's graph allocation and compute
 * calls, checks each graph as it is allocated (or first computed), and plants faults for
 * self-tests.
 *
 * Interposition. libtlsan.so exports ggml_gallocr_alloc_graph,
 * ggml_backend_sched_alloc_graph, ggml_backend_graph_compute[_async],
 * ggml_backend_sched_graph_compute[_async] and ggml_graph_compute, and the host's
 * ggml_backend_tensor_get/set and ggml_backend_buffer_free ("host access" below); being
 * preloaded, it comes first in the global scope, so every call to them through a PLT reaches
 * these hooks: the program's, libggml's own (the scheduler calls ggml_gallocr_alloc_graph
 * and computes each split with ..._async), a CPU backend's ggml_graph_compute, and those of
 * an object loaded with RTLD_LOCAL (its PLT is bound through the global scope first). Each hook
 * calls the real function its caller would have been bound to ("resolution" below), found in any
 * loaded object, whatever its name. Nothing here runs, and nothing is resolved, in a program
 * without ggml.
 *
 * What is checked. The graph as allocated, read with ggml's public accessors (the cgraph is
 * opaque) and the tensor layout of ggml's public headers ("the hooks" below say where). The
 * layout is probed once per ggml copy (ggml_get_name, ggml_get_data must read the fields the
 * headers place); a mismatch turns the adapter off for that copy with one line, rather than
 * reading garbage.
 *
 * With checksum=shared|all the graph is then computed node by node, with checksums around
 * each node (see "checksums" below): what the static check cannot see, a write that lands
 * outside the tensor its node declares, shows as live-corruption.
 *
 * Findings are reported once per process each (kind and tensors), in the layout of the
 * shim's other reports, with the stack of the allocation or compute call. Each graph checked
 * is also recorded in the trace as a plan handed over, so `tlsan replay` checks it again. */
#include "ggml/ggml_hooks.h"

#ifdef TLSAN_HAVE_GGML

#include "checker_report.h"
#include "checksum.h"
#include "depot.h"
#include "elfsym.h"
#include "engine/finding.h"
#include "ggml/ggml_model.h"
#include "out.h"
#include "runtime_report.h"
#include "shim.h"
#include "trace.h"
#include "tlsan/check.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
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
typedef enum ggml_status (*cpu_fn)(struct ggml_cgraph *, struct ggml_cplan *);

/* The real ggml functions and the accessors the model reads through, as one caller finds them
 * (see "resolution" below). */
struct gfns {
    bool (*gallocr_alloc_graph)(ggml_gallocr_t, struct ggml_cgraph *);
    bool (*sched_alloc_graph)(ggml_backend_sched_t, struct ggml_cgraph *);
    compute_fn graph_compute, graph_compute_async;
    sched_fn sched_graph_compute, sched_graph_compute_async;
    cpu_fn cpu_graph_compute; /* ggml_graph_compute, the CPU backend's executor */
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
    /* host access (see "host access" below) */
    void (*tensor_get)(const struct ggml_tensor *, void *, size_t, size_t);
    void (*tensor_set)(struct ggml_tensor *, const void *, size_t, size_t);
    void (*buffer_free)(ggml_backend_buffer_t);
    struct gm_api model;
};

/* One copy of ggml in the process: its functions, and what the adapter learnt of it. */
struct glib {
    struct gfns fn;
    bool stepwise;            /* the per-node functions were all found */
    bool usable;              /* the accessors were all found */
    atomic_int probe;         /* the layout probe: 0 not run, 1 passed, -1 failed */
    atomic_bool sched_allocs; /* its schedulers' graphs are checked where they are allocated */
    char object[256];         /* where ggml_get_name was found, for messages */
};

#define GLIB_MAX    16
#define CALLERS_MAX 64

static pthread_once_t g_once = PTHREAD_ONCE_INIT;        /* options */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* everything below but t_* */
static struct glib g_libs[GLIB_MAX];
static size_t g_libs_n;
static struct {
    const void *map; /* the caller's link_map (NULL: an address in no object) */
    uintptr_t bias;
    struct glib *lib;
} g_callers[CALLERS_MAX];
static size_t g_callers_n;
static uint64_t *g_keys; /* graphs checked (open addressing, 0 empty) */
static size_t g_keys_n, g_keys_cap;
static uint64_t *g_seen; /* findings reported */
static size_t g_seen_n, g_seen_cap;
static atomic_ulong g_checked, g_cached;
static struct ggml_inject g_inject;
static __thread int t_depth;       /* compute calls of this thread in progress */
static __thread int t_sched;       /* inside a scheduler's compute or allocation */
static __thread unsigned t_allocs; /* ggml_gallocr_alloc_graph calls this thread made */

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

static void parse_options(void)
{
    if (!ggml_inject_parse(shim_opts()->inject, &g_inject))
        out_printf("tlsan: TLSAN_OPTIONS: inject=%s: expected move@NODE or move@NODE@VICTIM; "
                   "nothing injected\n",
                   shim_opts()->inject);
}

/* ---- resolution ----
 *
 * A hook is reached from some object's PLT: the program's, libggml-base's own, a CPU
 * backend's, or an addon with ggml built in (whisper.node: loaded with RTLD_LOCAL, named
 * index.node). The real function is the one the dynamic linker would have bound that call to
 * without the shim, found in this order:
 *   1. dlsym(RTLD_NEXT): the next definition in the global scope (ggml linked or loaded
 *      RTLD_GLOBAL), which the linker searches first;
 *   2. the calling object's own scope: dlsym on its handle (dlopen(RTLD_NOLOAD) of its path:
 *      the object, then its dependencies), else its own dynamic symbol table (elfsym.h);
 *   3. the first loaded object defining it (its own dynamic symbols), the shim left out.
 * The accessors are found the same way, so a graph is read with the functions of the ggml
 * copy that made it, even with two copies in one process (two Node addons). Callers are
 * remembered by link_map, and callers that find the same functions share one struct glib. */

/* Whether p is one of the shim's own functions (its hooks). */
static bool ours(const void *p)
{
    Dl_info a, b;
    return dladdr(p, &a) && dladdr((const void *)ggml_gallocr_alloc_graph, &b) &&
           a.dli_fbase == b.dli_fbase;
}

static void *find_in_scope(const char *name, const char *caller_path, const void *caller,
                           char *object, size_t cap)
{
    if (caller_path && caller_path[0]) {
        void *h = dlopen(caller_path, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            void *p = dlsym(h, name);
            Dl_info info;
            if (p && object && dladdr(p, &info) && info.dli_fname)
                snprintf(object, cap, "%s", info.dli_fname);
            dlclose(h);
            if (p && !ours(p))
                return p;
        }
    }
    void *p = caller ? elfsym_lookup(name, caller, NULL, object, cap) : NULL;
    if (p && !ours(p))
        return p;
    return elfsym_lookup(name, NULL, (const void *)ggml_gallocr_alloc_graph, object, cap);
}

static void *resolve(const char *name, const char *caller_path, const void *caller, char *object,
                     size_t cap)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p) {
        Dl_info info;
        if (object && dladdr(p, &info) && info.dli_fname)
            snprintf(object, cap, "%s", info.dli_fname);
        return p;
    }
    return find_in_scope(name, caller_path, caller, object, cap);
}

#define RESOLVE(field, name) (*(void **)&l->fn.field = resolve(name, path, caller, NULL, 0))

static void resolve_lib(struct glib *l, const char *path, const void *caller)
{
    memset(l, 0, sizeof *l);
    *(void **)&l->fn.get_name = resolve("ggml_get_name", path, caller, l->object, sizeof l->object);
    RESOLVE(gallocr_alloc_graph, "ggml_gallocr_alloc_graph");
    RESOLVE(sched_alloc_graph, "ggml_backend_sched_alloc_graph");
    RESOLVE(graph_compute, "ggml_backend_graph_compute");
    RESOLVE(graph_compute_async, "ggml_backend_graph_compute_async");
    RESOLVE(sched_graph_compute, "ggml_backend_sched_graph_compute");
    RESOLVE(sched_graph_compute_async, "ggml_backend_sched_graph_compute_async");
    RESOLVE(cpu_graph_compute, "ggml_graph_compute");
    RESOLVE(get_data, "ggml_get_data");
    RESOLVE(version, "ggml_version");
    RESOLVE(type_name, "ggml_type_name");
    RESOLVE(model.graph_n_nodes, "ggml_graph_n_nodes");
    RESOLVE(model.graph_node, "ggml_graph_node");
    RESOLVE(model.buffer_get_base, "ggml_backend_buffer_get_base");
    RESOLVE(model.buffer_get_size, "ggml_backend_buffer_get_size");
    RESOLVE(model.buffer_name, "ggml_backend_buffer_name");
    RESOLVE(model.nbytes, "ggml_nbytes");
    RESOLVE(model.op_desc, "ggml_op_desc");
    RESOLVE(init, "ggml_init");
    RESOLVE(free, "ggml_free");
    RESOLVE(new_graph_custom, "ggml_new_graph_custom");
    RESOLVE(graph_overhead_custom, "ggml_graph_overhead_custom");
    RESOLVE(graph_clear, "ggml_graph_clear");
    RESOLVE(graph_add_node, "ggml_graph_add_node");
    RESOLVE(synchronize, "ggml_backend_synchronize");
    RESOLVE(tensor_get, "ggml_backend_tensor_get");
    RESOLVE(tensor_set, "ggml_backend_tensor_set");
    RESOLVE(buffer_free, "ggml_backend_buffer_free");
    const struct gfns *f = &l->fn;
    l->stepwise = f->init && f->free && f->new_graph_custom && f->graph_overhead_custom &&
                  f->graph_clear && f->graph_add_node && f->synchronize;
    l->usable = f->get_name && f->get_data && f->version && f->type_name &&
                f->model.graph_n_nodes && f->model.graph_node && f->model.buffer_get_base &&
                f->model.buffer_get_size && f->model.buffer_name && f->model.nbytes &&
                f->model.op_desc;
}

/* The loaded object holding code address ra, NULL when none. _dl_find_object (glibc 2.35)
 * is lock-free and does not look for the nearest symbol, as dladdr does: in the per-node
 * computing of checksum=shared every node goes through two hooks. */
static struct link_map *caller_map(const void *ra)
{
#ifdef DLFO_EH_SEGMENT_TYPE
    struct dl_find_object found;
    if (_dl_find_object((void *)(uintptr_t)ra, &found) == 0)
        return found.dlfo_link_map;
    return NULL;
#else
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(ra, &info, (void **)&map, RTLD_DL_LINKMAP))
        return NULL;
    return map;
#endif
}

/* The ggml copy the call at return address `ra` was bound to. Never NULL: when the table is
 * full, a per-thread copy is resolved anew for each call and left unchecked. */
static struct glib *lib_for(const void *ra)
{
    pthread_once(&g_once, parse_options);
    struct link_map *map = caller_map(ra);
    uintptr_t bias = map ? map->l_addr : 0;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_callers_n; i++)
        if (g_callers[i].map == map && g_callers[i].bias == bias) {
            struct glib *l = g_callers[i].lib;
            pthread_mutex_unlock(&g_mu);
            return l;
        }
    pthread_mutex_unlock(&g_mu);

    /* Resolved without the lock: dlopen and dl_iterate_phdr take the loader's. */
    static __thread struct glib t_new;
    resolve_lib(&t_new, map ? map->l_name : NULL, map ? ra : NULL);
    struct glib *l = NULL;
    bool added = false;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_libs_n && !l; i++)
        if (memcmp(&g_libs[i].fn, &t_new.fn, sizeof t_new.fn) == 0)
            l = &g_libs[i];
    if (!l && g_libs_n < GLIB_MAX) {
        l = &g_libs[g_libs_n++];
        *l = t_new;
        added = true;
    }
    if (l && g_callers_n < CALLERS_MAX) {
        g_callers[g_callers_n].map = map;
        g_callers[g_callers_n].bias = bias;
        g_callers[g_callers_n++].lib = l;
    }
    pthread_mutex_unlock(&g_mu);
    if (!l) {
        t_new.usable = false;
        return &t_new;
    }
    if (added && !l->usable && l->fn.gallocr_alloc_graph)
        out_printf("==%d==tlsan: ggml: some of ggml's accessors are missing (ggml in %s); its "
                   "graphs are not checked\n",
                   (int)getpid(), l->object[0] ? l->object : "the program");
    return l;
}

/* A real function that is nowhere: said once, and the call fails as ggml reports failure,
 * rather than a call through NULL. */
static void missing(const char *name)
{
    static atomic_bool said;
    if (!atomic_exchange(&said, true))
        out_printf("==%d==tlsan: ggml: cannot find the real %s in any loaded object; the call "
                   "fails and ggml graphs are not checked\n",
                   (int)getpid(), name);
}

/* The headers' layout against the library's: the accessors must read the fields where the
 * headers put them. Run once per ggml copy, on the first tensor seen. */
static bool layout_ok(struct glib *l, struct ggml_tensor *t)
{
    int p = atomic_load(&l->probe);
    if (p)
        return p > 0;
    bool ok = l->fn.get_name(t) == t->name && l->fn.get_data(t) == t->data;
    if (!ok) {
        out_printf("==%d==tlsan: ggml: ggml %s's struct ggml_tensor (in %s) is not laid out as "
                   "in the headers tlsan was built with; its graphs are not checked\n",
                   (int)getpid(), l->fn.version(), l->object[0] ? l->object : "the program");
    } else if (shim_opts()->verbosity >= 1) {
        out_printf("==%d==tlsan: ggml: adapter on (ggml %s in %s)\n", (int)getpid(),
                   l->fn.version(), l->object[0] ? l->object : "the program");
    }
    atomic_store(&l->probe, ok ? 1 : -1);
    return ok;
}

static bool adapter_on(struct glib *l, struct ggml_cgraph *graph)
{
    if (!shim_active() || !l->usable || !graph || l->fn.model.graph_n_nodes(graph) <= 0)
        return false;
    return layout_ok(l, l->fn.model.graph_node(graph, 0));
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

/* What the plan cannot say about a ggml tensor: its node and op, type, shape, address. */
static void tensor_lines(const struct glib *L, struct report *r, const struct gm_model *m,
                         int64_t index)
{
    if (index < 0 || (uint64_t)index >= m->n_tensors)
        return;
    const struct gm_tensor *g = &m->tensors[index];
    const struct gm_tensor *root = &m->tensors[g->root];
    const struct ggml_tensor *t = g->t;
    char what[96];
    if (g->node >= 0)
        snprintf(what, sizeof what, "node %d (%s)", g->node, L->fn.model.op_desc(t));
    else
        snprintf(what, sizeof what, "leaf%s", (root->flags & TLSAN_TENSOR_INPUT) ? ", input" : "");
    report_line(r, "  ggml tensor '%s': %s, %s [%lld %lld %lld %lld]%s%s", g->name, what,
                L->fn.type_name(t->type), (long long)t->ne[0], (long long)t->ne[1],
                (long long)t->ne[2], (long long)t->ne[3],
                (root->flags & TLSAN_TENSOR_OUTPUT) ? ", output" : "", g->view ? ", a view" : "");
    if (root->arena >= 0) {
        const struct gm_arena *a = &m->arenas[root->arena];
        report_line(r, "    at %p: buffer '%s' (base %p, %llu bytes)", t->data, a->name,
                    (void *)a->base, (ull)a->bytes);
    }
}

/* Where a graph is seen: as ggml_gallocr (or the scheduler) allocates it, or as it is computed
 * (the first sight of a graph whose allocation the shim did not see). */
enum sight { AT_ALLOC, AT_COMPUTE };

static const char *stack_title(enum sight at)
{
    return at == AT_ALLOC ? "graph allocated at" : "graph computed at";
}

/* A finding of the graph checked as a plan: the checker's own body (the lines `tlsan check`
 * prints for it: arenas are buffers, steps node indices, ops 'OP#NODE'), then what only ggml
 * knows of its tensors. */
static void report_finding(const struct glib *L, const tlsan_report *rep, const tlsan_finding *f,
                           const struct gm_model *m, const char *where, enum sight at,
                           uint32_t stack)
{
    struct report *r = report_begin_finding(f, where);
    if (!r)
        return;
    checker_report_body(r, rep, f, where);
    for (size_t i = 0; i < f->n_tensors && i < 2; i++)
        tensor_lines(L, r, m, f->tensor_index[i]);
    report_line(r, "  (steps are node indices; -1: before the graph, %d: after it)", m->n_nodes);
    report_stack(r, stack_title(at), stack);
    report_end_finding(r, f, where);
}

/* ---- the check ---- */

/* How reports name a graph: by its first and last nodes, which a person recognises in the
 * model's code and which stay the same from run to run (the graph's address does not). */
static void graph_where(char *buf, size_t cap, const struct glib *L, const struct gm_model *m,
                        enum sight at)
{
    const char *how = !t_sched         ? ""
                      : at == AT_ALLOC ? ", allocated by a ggml_backend_sched"
                                       : ", a ggml_backend_sched split";
    if (m->n_nodes <= 0 || m->node_index[0] == UINT32_MAX ||
        m->node_index[m->n_nodes - 1] == UINT32_MAX) {
        snprintf(buf, cap, "ggml graph (%d nodes%s)", m->n_nodes, how);
        return;
    }
    char first[48], last[48];
    gm_display_name(m, &L->fn.model, m->node_index[0], first, sizeof first);
    gm_display_name(m, &L->fn.model, m->node_index[m->n_nodes - 1], last, sizeof last);
    if (m->n_nodes == 1)
        snprintf(buf, cap, "ggml graph '%s' (1 node%s)", first, how);
    else
        snprintf(buf, cap, "ggml graph '%s' .. '%s' (%d nodes%s)", first, last, m->n_nodes, how);
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

static void inject(const struct glib *L, struct ggml_cgraph *graph);

/* Checks the graph, as allocated, unless an identical one was. A graph first seen at a
 * compute (its allocation went past the shim) gets the inject= fault first, so that each
 * allocation the shim does not see is faulted once (`fault`); the moved graph is then a known
 * one.
 * noinline: the stack is taken from here, one frame below the hook. */
__attribute__((noinline)) static void check_graph(const struct glib *L, struct ggml_cgraph *graph,
                                                  enum sight at, bool fault)
{
    uint64_t key = gm_key(&L->fn.model, graph);
    if (!first_time(&g_keys, &g_keys_n, &g_keys_cap, key)) {
        atomic_fetch_add(&g_cached, 1);
        return;
    }
    if (fault && g_inject.kind != GGML_INJECT_NONE) {
        inject(L, graph);
        first_time(&g_keys, &g_keys_n, &g_keys_cap, gm_key(&L->fn.model, graph));
    }
    uint32_t stack = depot_capture(1);
    atomic_fetch_add(&g_checked, 1);
    struct gm_model m;
    tlsan_plan *plan = NULL;
    tlsan_report *rep = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    if (gm_build(&m, &L->fn.model, graph) != 0) {
        out_printf("==%d==tlsan: ggml: out of memory reading a graph; not checked\n",
                   (int)getpid());
        return;
    }
    char where[160];
    graph_where(where, sizeof where, L, &m, at);
    plan = gm_plan(&m, &L->fn.model, where, &err);
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
        out_printf("==%d==tlsan: ggml: checked %s: %zu tensors in %zu buffers, %zu finding%s; "
                   "seen at its %s\n",
                   (int)getpid(), where, m.n_tensors, m.n_arenas, n, n == 1 ? "" : "s",
                   at == AT_ALLOC ? "allocation" : "compute");
    for (size_t i = 0; i < n; i++) {
        const tlsan_finding *f = tlsan_report_finding(rep, i);
        if (first_time(&g_seen, &g_seen_n, &g_seen_cap, finding_key(f)))
            report_finding(L, rep, f, &m, where, at, stack);
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

static void inject(const struct glib *L, struct ggml_cgraph *graph)
{
    const struct ggml_inject *in = &g_inject;
    struct gm_model m;
    if (gm_build(&m, &L->fn.model, graph) != 0)
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
static size_t written_roots(const struct glib *L, const struct gm_model *m, int i, uint32_t *out)
{
    size_t n = 0;
    uint32_t k = m->node_index[i];
    if (k == UINT32_MAX || gm_is_view_op(&L->fn.model, m->tensors[k].t))
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

/* Node i as the node that wrote `tensor` over [lo, hi); node -1 when i is not a node. */
static struct finding_node_write node_write(const struct glib *L, const struct gm_model *m, int i,
                                            const char *tensor, uint64_t lo, uint64_t hi)
{
    if (i < 0 || i >= m->n_nodes || m->node_index[i] == UINT32_MAX)
        return (struct finding_node_write){.node = -1};
    const struct gm_tensor *g = &m->tensors[m->node_index[i]];
    return (struct finding_node_write){i, L->fn.model.op_desc(g->t), tensor ? tensor : g->name, lo,
                                       hi};
}

/* Root r changed between its checksum (sum) and node `reader`: a live-corruption naming the
 * nodes that wrote over its bytes meanwhile. */
static void report_corruption(const struct glib *L, const struct gm_model *m, uint32_t r,
                              const struct sum *sum, int reader, uint64_t now, const char *where,
                              uint32_t stack)
{
    const struct gm_tensor *g = &m->tensors[r];
    const struct gm_arena *a = &m->arenas[g->arena];
    struct finding f = {0};
    struct finding_tensor victim = {g->name, 0, g->offset_bytes, g->offset_bytes + g->bytes};
    struct live_corruption *v =
        finding_live_corruption(&f, CORRUPTION_GRAPH_CHECKSUM, victim, a->name, MOMENT_READ,
                                (struct finding_call){NULL, stack});
    v->checksum_before = sum->hash;
    v->checksum_after = now;
    v->graph.name = where;
    v->graph.n_nodes = m->n_nodes;
    v->graph.reader_node = reader < m->n_nodes ? reader : m->n_nodes;
    v->graph.hashed_at_inputs = sum->hashed_at < 0;
    if (sum->hashed_at >= 0)
        v->graph.last_write = node_write(L, m, sum->hashed_at, NULL, 0, 0);
    uint32_t w[GGML_MAX_SRC + 1];
    for (int k = sum->hashed_at + 1; k < reader && k < m->n_nodes; k++) {
        size_t n = written_roots(L, m, k, w);
        for (size_t x = 0; x < n; x++) {
            const struct gm_tensor *o = &m->tensors[w[x]];
            if (w[x] == r || o->arena != g->arena ||
                o->offset_bytes >= g->offset_bytes + g->bytes ||
                g->offset_bytes >= o->offset_bytes + o->bytes)
                continue;
            uint64_t lo = o->offset_bytes > g->offset_bytes ? o->offset_bytes : g->offset_bytes;
            uint64_t e1 = o->offset_bytes + o->bytes, e2 = g->offset_bytes + g->bytes;
            if (v->graph.n_overwrites < FINDING_MAX_NODE_WRITES)
                v->graph.overwrites[v->graph.n_overwrites++] = (struct finding_node_write){
                    k, L->fn.model.op_desc(m->tensors[m->node_index[k]].t), o->name, lo,
                    e1 < e2 ? e1 : e2};
            v->graph.n_overwrites_total++;
        }
    }
    finding_report(&f);
}

/* Verifies root r before node `reader` reads it (m->n_nodes: after the graph). noinline: the
 * stack is taken two frames below the hook. */
__attribute__((noinline)) static void verify(const struct glib *L, const struct gm_model *m,
                                             struct sum *sums, uint32_t r, int reader,
                                             const char *where, uint32_t *stack)
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
    report_corruption(L, m, r, sum, reader, now, where, *stack);
}

/* How a graph is computed: on a backend (ggml_backend_graph_compute[_async]), or by the CPU
 * backend's executor with its plan (ggml_graph_compute; the plan's work buffer is sized for
 * the largest node, so it serves a one-node graph too). */
struct runner {
    compute_fn backend_fn;
    ggml_backend_t backend;
    cpu_fn cpu_fn;
    struct ggml_cplan *cplan;
};

static enum ggml_status run(const struct glib *L, const struct runner *r, struct ggml_cgraph *graph,
                            bool sync)
{
    if (r->cpu_fn)
        return r->cpu_fn(graph, r->cplan);
    enum ggml_status st = r->backend_fn(r->backend, graph);
    if (sync)
        L->fn.synchronize(r->backend);
    return st;
}

/* Computes graph node by node with checksums around each; falls back to one call when the
 * graph cannot be read. noinline: the stack is taken two frames below the program's call. */
__attribute__((noinline)) static enum ggml_status
compute_checked(const struct glib *L, const struct runner *run_by, struct ggml_cgraph *graph)
{
    struct gm_model m;
    if (gm_build(&m, &L->fn.model, graph) != 0)
        return run(L, run_by, graph, false);
    char where[160];
    graph_where(where, sizeof where, L, &m, AT_COMPUTE);
    enum ggml_status st = GGML_STATUS_SUCCESS;
    struct ggml_context *ctx = NULL;
    struct sum *sums = calloc(m.n_tensors + 1, sizeof *sums);
    uint32_t stack = 0;
    if (!sums)
        goto whole;
    struct ggml_init_params params = {.mem_size = L->fn.graph_overhead_custom(1, false) + 256,
                                      .no_alloc = true};
    ctx = L->fn.init(params);
    struct ggml_cgraph *one = ctx ? L->fn.new_graph_custom(ctx, 1, false) : NULL;
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
        if (gm_is_view_op(&L->fn.model, t))
            continue;
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            long j = gm_reads_src(&L->fn.model, t, s) ? gm_find(&m, t->src[s]) : -1;
            if (j >= 0 && m.tensors[m.tensors[j].root].first_writer != i)
                verify(L, &m, sums, m.tensors[j].root, i, where, &stack);
        }
        L->fn.graph_clear(one);
        L->fn.graph_add_node(one, t);
        st = run(L, run_by, one, true);
        size_t n = written_roots(L, &m, i, w);
        for (size_t x = 0; x < n; x++)
            if (sums[w[x]].wanted) {
                sums[w[x]].hash = root_hash(&m.tensors[w[x]]);
                sums[w[x]].valid = true;
                sums[w[x]].hashed_at = i;
            }
    }
    for (size_t i = 0; i < m.n_tensors && st == GGML_STATUS_SUCCESS; i++)
        if (!m.tensors[i].view && (m.tensors[i].flags & TLSAN_TENSOR_OUTPUT))
            verify(L, &m, sums, (uint32_t)i, m.n_nodes, where, &stack);
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
    st = run(L, run_by, graph, false);
done:
    if (ctx)
        L->fn.free(ctx);
    free(sums);
    gm_free(&m);
    return st;
}

/* ---- host access: ggml_backend_tensor_get/set of bytes a gallocr gave away ----
 *
 * Each allocation of a ggml_gallocr (ggml_gallocr_alloc_graph) places a graph's tensors in
 * the gallocr's buffers and takes back every byte of its previous allocation: a tensor of an
 * earlier graph still points at bytes that may now be another tensor's. The adapter keeps,
 * per gallocr, the storage roots of its current allocation (the owners of its bytes), and per
 * tensor the allocation that placed it (a table by tensor address, of every tensor of a
 * buffer the graph's nodes are placed in, views included). A host read or write
 * (ggml_backend_tensor_get/set) of a tensor placed by an earlier allocation of its gallocr,
 * or of a view of one, is use-after-release when the bytes it accesses belong to an owner
 * now, or when the buffer it was placed in was freed since (ggml_backend_buffer_free: the
 * gallocr frees its buffer to allocate a larger one); a freed buffer's access is then
 * skipped, as ggml would call through the freed buffer (whose bytes the shim's quarantine
 * overwrote: natively it often reads on), and a skipped read gives zeros. Accesses to tensors of
 * the current allocation, of other buffers (weights, caches), and to bytes no one took are let
 * through unchecked. A tensor whose data or buffer is no longer what the allocation gave it was
 * placed anew by someone else: its entry is forgotten. */

#define GALLOC_MAX      64         /* gallocrs followed */
#define GRAPH_NAMES_MAX 64         /* graph names kept for the reports */
#define FREED_MAX       64         /* last buffer frees remembered */
#define PLACED_MAX      (1u << 20) /* entries of the tensor table before it starts over */
#define NO_GRAPH        UINT32_MAX

/* A storage root of a gallocr's current allocation. */
struct owner {
    uintptr_t lo, hi; /* its bytes (addresses) */
    int node;         /* -1: a leaf */
    const char *op;   /* ggml's name of its op (static in ggml) */
    char name[GM_NAME_BYTES];
};

struct galloc_state {
    const void *galloc;
    uint64_t generation; /* the number of its allocations seen: the current one's */
    uint32_t graph;      /* the current allocation's graph (g_graph_names), or NO_GRAPH */
    uint32_t stack;      /* where the current allocation was made */
    struct owner *owners;
    size_t n_owners, cap_owners;
};

/* A tensor as an allocation placed it. */
struct placed {
    const struct ggml_tensor *t; /* NULL: an empty slot */
    uint32_t galloc;             /* index in g_gallocs */
    uint32_t graph, stack;
    uint64_t generation; /* its gallocr's allocation that placed it */
    uint64_t seq;        /* g_seq then */
    uintptr_t data;
    const void *buffer;
    uintptr_t buffer_base;
    int node;
    const char *op;
    char name[GM_NAME_BYTES];
};

struct freed_buffer {
    const void *buffer;
    uintptr_t base;
    uint64_t seq;
    uint32_t stack;
};

static struct galloc_state g_gallocs[GALLOC_MAX];
static size_t g_gallocs_n;
static char g_graph_names[GRAPH_NAMES_MAX][160];
static size_t g_graph_names_n;
static struct placed *g_placed;
static size_t g_placed_n, g_placed_cap;
static struct freed_buffer g_freed[FREED_MAX]; /* a ring */
static size_t g_freed_n;                       /* frees recorded, ever */
static uint64_t g_seq;                         /* orders placements and frees */
static atomic_bool g_placing;                  /* some allocation was noted */

/* The id of a graph's name, added when new; NO_GRAPH when the table is full. Lock held. */
static uint32_t graph_name_id(const char *where)
{
    for (size_t i = 0; i < g_graph_names_n; i++)
        if (strcmp(g_graph_names[i], where) == 0)
            return (uint32_t)i;
    if (g_graph_names_n == GRAPH_NAMES_MAX)
        return NO_GRAPH;
    snprintf(g_graph_names[g_graph_names_n], sizeof g_graph_names[0], "%s", where);
    return (uint32_t)g_graph_names_n++;
}

static const char *graph_name(uint32_t id)
{
    return id == NO_GRAPH ? "a ggml graph" : g_graph_names[id];
}

static size_t placed_slot(const struct ggml_tensor *t, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

/* The entry of tensor t, or NULL. Lock held. */
static struct placed *placed_find(const struct ggml_tensor *t)
{
    if (!g_placed_cap || !t)
        return NULL;
    for (size_t s = placed_slot(t, g_placed_cap);; s = (s + 1) & (g_placed_cap - 1)) {
        if (g_placed[s].t == t)
            return &g_placed[s];
        if (!g_placed[s].t)
            return NULL;
    }
}

/* The entry of tensor t, made when new; NULL when out of memory. A table that would pass
 * PLACED_MAX starts over (forgetting earlier allocations' tensors: fewer findings, never a
 * false one). Lock held. */
static struct placed *placed_put(const struct ggml_tensor *t)
{
    struct placed *p = placed_find(t);
    if (p)
        return p;
    if ((g_placed_n + 1) * 2 > g_placed_cap) {
        size_t cap = g_placed_cap ? 2 * g_placed_cap : 1024;
        if (cap > PLACED_MAX) {
            memset(g_placed, 0, g_placed_cap * sizeof *g_placed);
            g_placed_n = 0;
        } else {
            struct placed *v = calloc(cap, sizeof *v);
            if (!v)
                return NULL;
            for (size_t i = 0; i < g_placed_cap; i++) {
                if (!g_placed[i].t)
                    continue;
                size_t s = placed_slot(g_placed[i].t, cap);
                while (v[s].t)
                    s = (s + 1) & (cap - 1);
                v[s] = g_placed[i];
            }
            free(g_placed);
            g_placed = v;
            g_placed_cap = cap;
        }
    }
    size_t s = placed_slot(t, g_placed_cap);
    while (g_placed[s].t)
        s = (s + 1) & (g_placed_cap - 1);
    g_placed[s].t = t;
    g_placed_n++;
    return &g_placed[s];
}

/* The state of a gallocr, made when new; NULL when GALLOC_MAX are followed. Lock held. */
static struct galloc_state *galloc_state_of(const void *galloc)
{
    for (size_t i = 0; i < g_gallocs_n; i++)
        if (g_gallocs[i].galloc == galloc)
            return &g_gallocs[i];
    if (g_gallocs_n == GALLOC_MAX)
        return NULL;
    struct galloc_state *st = &g_gallocs[g_gallocs_n++];
    memset(st, 0, sizeof *st);
    st->galloc = galloc;
    return st;
}

/* Whether model tensor i lies in a buffer the graph's nodes are placed in: the gallocr's. */
static bool in_compute_buffer(const struct gm_model *m, size_t i)
{
    const struct gm_tensor *root = &m->tensors[m->tensors[i].root];
    return root->arena >= 0 && m->arenas[root->arena].buffer && m->arenas[root->arena].compute;
}

/* Records the allocation galloc just made of graph: its owners, and where it placed each
 * tensor. noinline: the stack is taken two frames below the program's call. */
__attribute__((noinline)) static void note_allocation(const struct glib *L, const void *galloc,
                                                      struct ggml_cgraph *graph)
{
    struct gm_model m;
    if (gm_build(&m, &L->fn.model, graph) != 0)
        return;
    char where[160];
    graph_where(where, sizeof where, L, &m, AT_ALLOC);
    uint32_t stack = depot_capture(2);
    pthread_mutex_lock(&g_mu);
    struct galloc_state *st = galloc_state_of(galloc);
    if (!st)
        goto done;
    st->generation++;
    st->graph = graph_name_id(where);
    st->stack = stack;
    st->n_owners = 0;
    uint64_t seq = ++g_seq;
    for (size_t i = 0; i < m.n_tensors; i++) {
        const struct gm_tensor *g = &m.tensors[i];
        if (!in_compute_buffer(&m, i))
            continue;
        const char *op = g->node >= 0 ? L->fn.model.op_desc(g->t) : NULL;
        if (!g->view && g->bytes) {
            if (st->n_owners == st->cap_owners) {
                size_t cap = st->cap_owners ? 2 * st->cap_owners : 64;
                struct owner *o = realloc(st->owners, cap * sizeof *o);
                if (!o)
                    goto done;
                st->owners = o;
                st->cap_owners = cap;
            }
            struct owner *o = &st->owners[st->n_owners++];
            o->lo = (uintptr_t)g->t->data;
            o->hi = o->lo + g->bytes;
            o->node = g->node;
            o->op = op;
            snprintf(o->name, sizeof o->name, "%s", g->name);
        }
        struct placed *p = placed_put(g->t);
        if (!p)
            goto done;
        p->galloc = (uint32_t)(st - g_gallocs);
        p->graph = st->graph;
        p->stack = stack;
        p->generation = st->generation;
        p->seq = seq;
        p->data = (uintptr_t)g->t->data;
        p->buffer = g->t->buffer;
        p->buffer_base = m.arenas[m.tensors[g->root].arena].base;
        p->node = g->node;
        p->op = op;
        snprintf(p->name, sizeof p->name, "%s", g->name);
    }
    atomic_store(&g_placing, true);
done:
    pthread_mutex_unlock(&g_mu);
    gm_free(&m);
}

/* A host access to bytes its tensor's gallocr gave away, as reported. */
struct host_access {
    const char *call; /* "ggml_backend_tensor_get" */
    enum finding_moment moment;
    char tensor[GM_NAME_BYTES]; /* as the host named it: the view, or the placed tensor */
    char root[GM_NAME_BYTES];   /* the placed tensor it is a view of; "" when it is one */
    int node;
    const char *op;
    char graph[160], now_graph[160];
    uintptr_t buffer_base, lo, hi; /* the bytes accessed */
    bool freed;
    uint32_t placed_stack, now_stack, free_stack, stack;
    struct owner owners[FINDING_MAX_TENSORS];
    size_t n_owners, n_owners_total;
};

/* Whether tensor t's bytes [offset, offset + size) were given away since its allocation
 * placed it (*out filled then). */
static bool stale_access(const struct ggml_tensor *t, size_t offset, size_t size,
                         struct host_access *out)
{
    if (!atomic_load(&g_placing) || !t || !t->data)
        return false;
    bool stale = false;
    pthread_mutex_lock(&g_mu);
    const struct ggml_tensor *placed_t = t;
    struct placed *p = placed_find(t);
    if (!p && t->view_src)
        p = placed_find(placed_t = t->view_src); /* a view the host made after the compute */
    if (!p)
        goto done;
    if ((uintptr_t)placed_t->data != p->data || (const void *)placed_t->buffer != p->buffer) {
        p->galloc = UINT32_MAX; /* placed anew elsewhere: not this allocation's any more */
        goto done;
    }
    if (p->galloc >= g_gallocs_n)
        goto done;
    const struct galloc_state *st = &g_gallocs[p->galloc];
    if (p->generation == st->generation)
        goto done;
    memset(out, 0, sizeof *out);
    out->lo = (uintptr_t)t->data + offset;
    out->hi = out->lo + size;
    for (size_t k = 0; k < FREED_MAX && k < g_freed_n; k++) {
        const struct freed_buffer *f = &g_freed[k];
        if (f->buffer == p->buffer && f->base == p->buffer_base && f->seq > p->seq) {
            out->freed = true;
            out->free_stack = f->stack;
        }
    }
    for (size_t k = 0; k < st->n_owners && !out->freed; k++) {
        const struct owner *o = &st->owners[k];
        if (o->lo >= out->hi || out->lo >= o->hi)
            continue;
        if (out->n_owners < FINDING_MAX_TENSORS)
            out->owners[out->n_owners++] = *o;
        out->n_owners_total++;
    }
    stale = out->freed || out->n_owners_total > 0;
    if (!stale)
        goto done;
    if (placed_t != t) {
        snprintf(out->root, sizeof out->root, "%s", p->name);
        if (t->name[0])
            snprintf(out->tensor, sizeof out->tensor, "%.*s", (int)GGML_MAX_NAME, t->name);
        else
            snprintf(out->tensor, sizeof out->tensor, "a view of %.80s", p->name);
    } else {
        snprintf(out->tensor, sizeof out->tensor, "%s", p->name);
    }
    out->node = p->node;
    out->op = p->op;
    snprintf(out->graph, sizeof out->graph, "%s", graph_name(p->graph));
    snprintf(out->now_graph, sizeof out->now_graph, "%s", graph_name(st->graph));
    out->buffer_base = p->buffer_base;
    out->placed_stack = p->stack;
    out->now_stack = st->stack;
done:
    pthread_mutex_unlock(&g_mu);
    return stale;
}

static void report_host_access(const struct host_access *h)
{
    char key[3 * GM_NAME_BYTES];
    snprintf(key, sizeof key, "host:%d:%s:%s", (int)h->moment, h->tensor,
             h->freed ? "(freed)" : h->owners[0].name);
    uint64_t hash = 0xcbf29ce484222325ull;
    for (const char *p = key; *p; p++)
        hash = (hash ^ (unsigned char)*p) * 0x100000001b3ull;
    if (!first_time(&g_seen, &g_seen_n, &g_seen_cap, hash))
        return;
    const char *done = h->moment == MOMENT_WRITE ? "written" : "read";
    struct report *r = report_begin(TLSAN_KIND_USE_AFTER_RELEASE, 1, "on ggml tensor '%s' (%s)",
                                    h->tensor, h->call);
    if (!r)
        return;
    const char *shown = h->root[0] ? h->root : h->tensor;
    char what[GM_NAME_BYTES + 96];
    int n = h->root[0] ? snprintf(what, sizeof what, "a view of '%s', ", h->root) : 0;
    if (h->node >= 0)
        snprintf(what + n, sizeof what - (size_t)n, "node %d (%s)", h->node, h->op ? h->op : "?");
    else
        snprintf(what + n, sizeof what - (size_t)n, "a leaf");
    report_line(r, "  %s %s bytes [%llu, %llu) of its buffer through '%s' (%s of %s)", h->call,
                h->moment == MOMENT_WRITE ? "wrote" : "read", (ull)(h->lo - h->buffer_base),
                (ull)(h->hi - h->buffer_base), h->tensor, what, h->graph);
    if (h->freed) {
        report_line(r,
                    "  its ggml_gallocr has allocated %s since, and its buffer was freed: "
                    "the call is skipped",
                    h->now_graph);
    } else {
        report_line(r, "  its ggml_gallocr has allocated %s since, which gave those bytes to:",
                    h->now_graph);
        for (size_t i = 0; i < h->n_owners; i++) {
            const struct owner *o = &h->owners[i];
            char node[96];
            if (o->node >= 0)
                snprintf(node, sizeof node, "node %d (%s)", o->node, o->op ? o->op : "?");
            else
                snprintf(node, sizeof node, "a leaf");
            report_line(r, "    '%s' (%s), bytes [%llu, %llu)", o->name, node,
                        (ull)(o->lo - h->buffer_base), (ull)(o->hi - h->buffer_base));
        }
        if (h->n_owners_total > h->n_owners)
            report_line(r, "    and %zu more", h->n_owners_total - h->n_owners);
    }
    char title[GM_NAME_BYTES + 200];
    snprintf(title, sizeof title, "%s by %s at", done, h->call);
    report_stack(r, title, h->stack);
    if (h->freed)
        report_stack(r, "buffer freed at", h->free_stack);
    snprintf(title, sizeof title, "%s allocated at", h->now_graph);
    report_stack(r, title, h->now_stack);
    snprintf(title, sizeof title, "'%s' placed by the allocation of %s at", shown, h->graph);
    report_stack(r, title, h->placed_stack);
    report_tensor(r, h->tensor);
    if (h->root[0])
        report_tensor(r, h->root);
    for (size_t i = 0; i < h->n_owners; i++)
        report_tensor(r, h->owners[i].name);
    if (h->freed)
        report_end(r, "%s (%s by %s after its ggml_gallocr freed its buffer)", h->tensor, done,
                   h->call);
    else
        report_end(r, "%s (%s by %s after its ggml_gallocr gave its bytes to '%s' in %s)",
                   h->tensor, done, h->call, h->owners[0].name, h->now_graph);
}

/* Whether a host access may go on: false for one to a freed buffer (reported). Inlined into
 * the hooks so that the stack starts at the program's call. */
static inline __attribute__((always_inline)) bool
host_access_ok(const struct glib *L, const struct ggml_tensor *t, size_t offset, size_t size,
               const char *call, enum finding_moment moment)
{
    struct host_access h;
    if (!shim_active() || atomic_load(&L->probe) <= 0 || !stale_access(t, offset, size, &h))
        return true;
    h.call = call;
    h.moment = moment;
    h.stack = depot_capture(1);
    report_host_access(&h);
    return !h.freed;
}

/* ---- the hooks ----
 *
 * Each hook finds the real function for its caller (lib_for). A graph is checked where it is
 * allocated (ggml_gallocr_alloc_graph, also the scheduler's own call of it; or at
 * ggml_backend_sched_alloc_graph's return when that call went past the shim) and where it is
 * computed, at the thread's outermost compute call: ggml_backend_graph_compute[_async], or
 * ggml_graph_compute, the CPU backend's executor, reached through the backend's PLT even
 * when the calls above it are direct (whisper.node: ggml built in, where
 * ggml_backend_graph_compute calls ..._async without the PLT). A graph checked at allocation
 * is not checked again at its compute (the cache), and a scheduler's split is not checked
 * when that ggml's scheduler graphs are checked at allocation; both are still computed node
 * by node for the checksums. */

EXPORT bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph *graph)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.gallocr_alloc_graph) {
        missing("ggml_gallocr_alloc_graph");
        return false;
    }
    bool ok = L->fn.gallocr_alloc_graph(galloc, graph);
    t_allocs++;
    if (ok && adapter_on(L, graph)) {
        if (g_inject.kind != GGML_INJECT_NONE)
            inject(L, graph);
        check_graph(L, graph, AT_ALLOC, false);
        note_allocation(L, galloc, graph);
        if (t_sched)
            atomic_store(&L->sched_allocs, true);
    }
    return ok;
}

EXPORT bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.sched_alloc_graph) {
        missing("ggml_backend_sched_alloc_graph");
        return false;
    }
    unsigned allocs = t_allocs;
    t_sched++;
    bool ok = L->fn.sched_alloc_graph(sched, graph);
    /* Its ggml_gallocr_alloc_graph went past the shim: the program's graph, as placed. */
    if (ok && t_allocs == allocs && adapter_on(L, graph)) {
        check_graph(L, graph, AT_ALLOC, true);
        atomic_store(&L->sched_allocs, true);
    }
    t_sched--;
    return ok;
}

/* A compute call: checks the graph when it is the thread's outermost one. Inlined into the
 * hooks so that the stack check_graph takes starts at the hook, then the program's call. */
static inline __attribute__((always_inline)) enum ggml_status
compute(struct glib *L, const struct runner *r, struct ggml_cgraph *graph)
{
    bool stepwise = false;
    if (t_depth == 0 && adapter_on(L, graph)) {
        if (!(t_sched && atomic_load(&L->sched_allocs)))
            check_graph(L, graph, AT_COMPUTE, true);
        stepwise = shim_opts()->checksum != SHIM_CHECKSUM_OFF && L->stepwise;
    }
    t_depth++;
    enum ggml_status st = stepwise ? compute_checked(L, r, graph) : run(L, r, graph, false);
    t_depth--;
    return st;
}

EXPORT enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend,
                                                   struct ggml_cgraph *graph)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.graph_compute) {
        missing("ggml_backend_graph_compute");
        return GGML_STATUS_FAILED;
    }
    struct runner r = {.backend_fn = L->fn.graph_compute, .backend = backend};
    return compute(L, &r, graph);
}

EXPORT enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend,
                                                         struct ggml_cgraph *graph)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.graph_compute_async) {
        missing("ggml_backend_graph_compute_async");
        return GGML_STATUS_FAILED;
    }
    struct runner r = {.backend_fn = L->fn.graph_compute_async, .backend = backend};
    return compute(L, &r, graph);
}

EXPORT enum ggml_status ggml_graph_compute(struct ggml_cgraph *graph, struct ggml_cplan *cplan)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.cpu_graph_compute) {
        missing("ggml_graph_compute");
        return GGML_STATUS_FAILED;
    }
    struct runner r = {.cpu_fn = L->fn.cpu_graph_compute, .cplan = cplan};
    return compute(L, &r, graph);
}

/* A scheduler compute: checked where it allocates, or where it computes each split. */
static enum ggml_status sched_compute(sched_fn real, const char *name, ggml_backend_sched_t sched,
                                      struct ggml_cgraph *graph)
{
    if (!real) {
        missing(name);
        return GGML_STATUS_FAILED;
    }
    t_sched++;
    enum ggml_status st = real(sched, graph);
    t_sched--;
    return st;
}

EXPORT enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched,
                                                         struct ggml_cgraph *graph)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    return sched_compute(L->fn.sched_graph_compute, "ggml_backend_sched_graph_compute", sched,
                         graph);
}

EXPORT enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched,
                                                               struct ggml_cgraph *graph)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    return sched_compute(L->fn.sched_graph_compute_async, "ggml_backend_sched_graph_compute_async",
                         sched, graph);
}

/* The host's access to a tensor's bytes: checked against its gallocr's later allocations. */
EXPORT void ggml_backend_tensor_get(const struct ggml_tensor *tensor, void *data, size_t offset,
                                    size_t size)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.tensor_get) {
        missing("ggml_backend_tensor_get");
        return;
    }
    if (host_access_ok(L, tensor, offset, size, "ggml_backend_tensor_get", MOMENT_READ))
        L->fn.tensor_get(tensor, data, offset, size);
    else
        memset(data, 0, size); /* skipped: zeros rather than what the host had there */
}

EXPORT void ggml_backend_tensor_set(struct ggml_tensor *tensor, const void *data, size_t offset,
                                    size_t size)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.tensor_set) {
        missing("ggml_backend_tensor_set");
        return;
    }
    if (host_access_ok(L, tensor, offset, size, "ggml_backend_tensor_set", MOMENT_WRITE))
        L->fn.tensor_set(tensor, data, offset, size);
}

/* A buffer freed (the gallocr's own, as it grows): its tensors' later accesses are findings. */
EXPORT void ggml_backend_buffer_free(ggml_backend_buffer_t buffer)
{
    struct glib *L = lib_for(__builtin_return_address(0));
    if (!L->fn.buffer_free) {
        missing("ggml_backend_buffer_free");
        return;
    }
    if (buffer && atomic_load(&g_placing) && L->usable) {
        uintptr_t base = (uintptr_t)L->fn.model.buffer_get_base(buffer);
        uint32_t stack = depot_capture(1);
        pthread_mutex_lock(&g_mu);
        g_freed[g_freed_n++ % FREED_MAX] =
            (struct freed_buffer){.buffer = buffer, .base = base, .seq = ++g_seq, .stack = stack};
        pthread_mutex_unlock(&g_mu);
    }
    L->fn.buffer_free(buffer);
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
