/* engine.c - the engine annotation runtime (the tlsan_rt_* entry points of tlsan.h).
 *
 * State, all under one mutex:
 * - names: every tensor, op and arena name is interned once (struct name), so records and
 *   findings hold plain pointers that stay valid for the life of the process; a name also
 *   carries its tensor (one struct per name, reused by each new tenant: `gen` counts them);
 * - arenas (by base): the live roots in each, the ranges known to hold the sentinel (an
 *   interval list; each interval remembers the tenant that released it, for stale-write
 *   reports) and, for checksum=shared, every distinct placement ever bound;
 * - ops in flight (by token), with their reads and writes resolved to root byte ranges.
 *
 * Checks. Clobbers are tracked at op_end from the declared writes: every other live root
 * whose bytes the write covers is marked, and a later read of it is live-corruption. Roots
 * are hashed (checksum.h) when their last in-flight writer ends and verified when an op
 * reads them, at release and at arena destroy: a mismatch is a change nobody declared.
 * Released bytes get the sentinel; bind verifies it (stale-write), op_end verifies the
 * bytes just past each written root (slot-overflow).
 *
 * Hashing, verifying and filling run outside the mutex (the engine's threads run ops in
 * parallel): each root has an `epoch` bumped by everything that may change its bytes or its
 * state (a writer beginning, a release, a bind); a hash computed outside is applied only if
 * the epoch did not move meanwhile. Findings are collected under the mutex and reported
 * after it is dropped, so a report (which may symbolize, or exit under halt_on_error) never
 * runs with the engine locked. */
#define TLSAN_DISABLE /* only the types and flags: this file defines the tlsan_rt_* */
#include "tlsan/tlsan.h"

#include "engine/engine.h"
#include "engine/finding.h"

#include "checker_report.h"
#include "checksum.h"
#include "depot.h"
#include "heap/heap.h"
#include "lock.h"
#include "modules.h"
#include "out.h"
#include "check/plan.h" /* the private plan model (src/check/plan.h): plan stacks and byte ranges */
#include "runtime_report.h"
#include "shim.h"
#include "trace.h"
#include "tlsan/check.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define USAGE_MAX      50 /* usage warnings printed before they are suppressed */
#define OVERFLOW_CHECK 64 /* bytes past a written root checked for the sentinel */
/* The name a plan handed over goes by in its error messages and source positions. */
#define PLAN_LOAD_LABEL "tlsan_plan_load"

typedef unsigned long long ull; /* out.h formats %llu / %llx */

/* ---- data ---- */

struct tensor;

struct name {
    struct name *next;
    uint64_t hash;
    struct tensor *t; /* the tensor of this name, NULL when never bound */
    bool plan_shared; /* shares bytes with another root in a loaded plan */
    char s[];
};

/* A released tenant whose bytes got the sentinel (referenced by sentinel intervals). */
struct prov {
    const char *name;
    uint64_t lo, hi;
    uint32_t bind_stack, release_stack;
    int refs;
    struct prov *next_free;
};

/* [lo, hi) arena offsets holding the sentinel; prov NULL: filled at arena create. */
struct ival {
    uint64_t lo, hi;
    struct prov *prov;
};

/* One byte range some tensor was bound to, with the first name seen there and how many
 * names were: grouping by range keeps the walk over distinct ranges, which a planner keeps
 * few, however many names (runs, tokens) pass through them. */
struct place {
    const char *name;
    uint64_t lo, hi;
    size_t n_names;
};

struct arena {
    struct arena *next;
    const char *name;
    uintptr_t base;
    uint64_t size;
    uint64_t trace_id;
    bool dead;
    atomic_bool gone; /* its memory was freed before tlsan_arena_destroy (the heap hook) */
    struct ival *iv;  /* sorted, disjoint; never covers a live root's bytes */
    size_t n_iv, cap_iv;
    struct tensor **live; /* live roots */
    size_t n_live, cap_live;
    struct place *pl; /* checksum=shared: the ranges ever bound */
    size_t n_pl, cap_pl;
};

enum { CLOB_NONE, CLOB_WRITE, CLOB_INPLACE };

struct tensor {
    const char *name;
    struct name *nm;
    bool is_view;
    uint64_t size;
    uint32_t bind_stack;
    /* view */
    struct tensor *root;
    uint64_t root_gen, voff; /* voff: from the root's first byte */
    /* root */
    struct arena *arena;
    uint64_t off;
    unsigned flags;
    bool bound;
    uint64_t gen, epoch;
    uint32_t release_stack;
    bool shared; /* checksum=shared: shares bytes with another placement */
    bool has_hash;
    uint64_t hash;
    int writers; /* ops in flight writing it */
    const char *last_op;
    uint32_t last_op_stack;
    const char *uar_op; /* the last op reported reading it after its release */
    int clob;
    bool clob_reported;
    const char *clob_by, *clob_op;
    uint32_t clob_op_stack, clob_by_bind_stack;
    uint64_t clob_lo, clob_hi;
    struct arena *pl_arena;
    uint64_t pl_lo, pl_hi;
};

enum { R_OK, R_UNKNOWN, R_RELEASED, R_STALE_VIEW };

struct access {
    const char *name; /* as the op named it */
    struct tensor *named, *root;
    uint64_t gen, lo, hi; /* root tenant and the bytes accessed (arena offsets) */
    int status;
};

/* Ops are recycled through a free list (with their arrays), so that an op costs no
 * allocation in the steady state: every malloc here goes through the shim's tracked heap. */
struct op {
    struct op *next;
    uint64_t id;
    const char *name;
    uint32_t stack;
    struct access *r, *w; /* both in acc */
    size_t n_r, n_w;
    struct tensor **ip_in; /* roots of its in-place inputs */
    size_t n_ip;
    struct access *acc;
    size_t cap_acc, cap_ip;
};

/* ---- findings (collected under the lock, reported after) ---- */

/* The findings themselves (their variants, constructors and reports) are engine/finding.h's,
 * shared with the ggml adapter. */

/* A hash to compute outside the lock. verify: compare with expect; else store. */
struct job {
    struct tensor *t;
    uint64_t gen, epoch;
    const unsigned char *p;
    size_t n;
    bool verify;
    uint64_t expect, got;
    enum finding_moment moment;
    const char *op, *via;
    uint32_t op_stack;
};

struct range {
    uint64_t lo, hi;
    struct prov *prov;
};

/* Per-call scratch: jobs, findings, ranges; small inline arrays first (no allocation for
 * the common call). */
#define WORK_INLINE 8
struct work {
    struct job *jobs;
    size_t n_jobs, cap_jobs;
    struct finding *findings, **tail;
    struct range *rg;
    size_t n_rg, cap_rg;
    struct job jobs_in[WORK_INLINE];
    struct range rg_in[WORK_INLINE];
};

#define WORK_INIT(w)                                                                               \
    {                                                                                              \
        .jobs = (w).jobs_in, .cap_jobs = WORK_INLINE, .tail = &(w).findings, .rg = (w).rg_in,      \
        .cap_rg = WORK_INLINE                                                                      \
    }

static struct {
    pthread_mutex_t lock;
    struct name **names;
    size_t names_cap, names_n;
    struct arena *arenas;
    struct op *ops;
    struct op *free_ops;
    struct prov *free_provs;
    uint64_t next_op;
    uint64_t *seen; /* keys of the findings reported */
    size_t seen_n, seen_cap;
} E = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_uint n_usage;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The live arenas' byte ranges, sorted and disjoint, for the free hook: a heap block freed
 * with an arena inside it takes the arena with it (engine_heap_block_freed). The hook cannot
 * take the engine's mutex (the engine frees while holding it), so the ranges have their own
 * lock, taken under the mutex or alone and never held across a call that may allocate; the
 * array is mmap'd. */
struct arena_range {
    uintptr_t lo, hi;
    struct arena *a;
};
static struct {
    shim_lock lock;
    struct arena_range *v;
    size_t n, cap;
} AR = {.lock = SHIM_LOCK_INIT};
atomic_uint engine_g_arenas;
static atomic_bool g_gone; /* some arena was freed under the engine: reap it at the next lock */

/* ---- helpers ---- */

static bool grow_from(void **v, size_t *cap, size_t need, size_t elem, const void *inl)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 8;
    while (c < need)
        c *= 2;
    void *n = *v == inl ? malloc(c * elem) : realloc(*v, c * elem);
    if (!n)
        return false;
    if (*v == inl && *cap)
        memcpy(n, inl, *cap * elem);
    *v = n;
    *cap = c;
    return true;
}

static bool grow(void **v, size_t *cap, size_t need, size_t elem)
{
    return grow_from(v, cap, need, elem, NULL);
}

#define PUSH(arr, n, cap, ...)                                                                     \
    (grow((void **)&(arr), &(cap), (n) + 1, sizeof *(arr)) ? ((arr)[(n)++] = (__VA_ARGS__), true)  \
                                                           : false)
/* PUSH for the work arrays, which start inline. */
#define WPUSH(w, arr, n, cap, inl, ...)                                                            \
    (grow_from((void **)&(w)->arr, &(w)->cap, (w)->n + 1, sizeof *(w)->arr, (w)->inl)              \
         ? ((w)->arr[(w)->n++] = (__VA_ARGS__), true)                                              \
         : false)

static void usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void usage(const char *fmt, ...)
{
    unsigned n = atomic_fetch_add(&n_usage, 1);
    if (n > USAGE_MAX)
        return;
    char buf[768];
    struct outbuf b = {buf, 0, sizeof buf - 1};
    if (n == USAGE_MAX) {
        out_appendf(&b, "tlsan: warning: further annotation usage warnings suppressed\n");
    } else {
        va_list ap;
        va_start(ap, fmt);
        out_appendf(&b, "tlsan: warning: ");
        out_vappendf(&b, fmt, ap);
        va_end(ap);
        out_appendf(&b, "\n");
    }
    out_lock();
    out_write(buf, b.len);
    out_unlock();
}

unsigned engine_usage_warnings(void)
{
    return atomic_load(&n_usage);
}

static void reap_gone(void);

static void lock(void)
{
    pthread_mutex_lock(&E.lock);
    if (atomic_load_explicit(&g_gone, memory_order_acquire))
        reap_gone();
}

static void unlock(void)
{
    pthread_mutex_unlock(&E.lock);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&E.lock);
    shim_lock_take(&AR.lock);
}

static void fork_parent(void)
{
    shim_lock_drop(&AR.lock);
    pthread_mutex_unlock(&E.lock);
}

static void fork_child(void)
{
    /* Reset, not dropped: the shim's own child handler, registered (so run) before this
     * one, has already set this thread's count of held locks (lock.h) to zero. */
    shim_lock_reset(&AR.lock);
    pthread_mutex_init(&E.lock, NULL);
}

static void init_once(void)
{
    /* Registered after the shim's own handlers, so it runs first at fork: the engine lock is
     * taken before the allocator's (the order a thread in the engine takes them). */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static bool active(void)
{
    if (!shim_active())
        return false;
    pthread_once(&once, init_once);
    return true;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The interned name s; NULL when absent and !add, or out of memory. */
static struct name *name_get(const char *s, bool add)
{
    if (!s)
        return NULL;
    uint64_t h = hash_str(s);
    if (E.names_cap) {
        for (struct name *n = E.names[h & (E.names_cap - 1)]; n; n = n->next)
            if (n->hash == h && strcmp(n->s, s) == 0)
                return n;
    }
    if (!add)
        return NULL;
    if (E.names_n + 1 > E.names_cap) {
        size_t cap = E.names_cap ? E.names_cap * 2 : 1024;
        struct name **b = calloc(cap, sizeof *b);
        if (!b)
            return NULL;
        for (size_t i = 0; i < E.names_cap; i++) {
            for (struct name *n = E.names[i], *next; n; n = next) {
                next = n->next;
                n->next = b[n->hash & (cap - 1)];
                b[n->hash & (cap - 1)] = n;
            }
        }
        free(E.names);
        E.names = b;
        E.names_cap = cap;
    }
    size_t len = strlen(s);
    struct name *n = calloc(1, sizeof *n + len + 1);
    if (!n)
        return NULL;
    memcpy(n->s, s, len + 1);
    n->hash = h;
    n->next = E.names[h & (E.names_cap - 1)];
    E.names[h & (E.names_cap - 1)] = n;
    E.names_n++;
    return n;
}

static const char *intern(const char *s)
{
    struct name *n = name_get(s ? s : "?", true);
    return n ? n->s : "?";
}

static bool hash_wanted(const struct tensor *t)
{
    enum shim_checksum c = shim_opts()->checksum;
    return c == SHIM_CHECKSUM_ALL ||
           (c == SHIM_CHECKSUM_SHARED && (t->shared || t->nm->plan_shared));
}

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    return a0 < b1 && b0 < a1;
}

static struct arena *arena_find(uintptr_t base)
{
    for (struct arena *a = E.arenas; a; a = a->next)
        if (!a->dead && a->base == base)
            return a;
    return NULL;
}

static void live_remove(struct arena *a, struct tensor *t)
{
    for (size_t i = 0; i < a->n_live; i++) {
        if (a->live[i] == t) {
            a->live[i] = a->live[--a->n_live];
            return;
        }
    }
}

/* ---- sentinel intervals ---- */

static void prov_ref(struct prov *p)
{
    if (p)
        p->refs++;
}

/* Provenances are recycled (one per release: a malloc each would go through the tracked
 * heap). Lock held. */
static struct prov *prov_new(void)
{
    struct prov *p = E.free_provs;
    if (p) {
        E.free_provs = p->next_free;
        return p;
    }
    return malloc(sizeof *p);
}

static void prov_free(struct prov *p)
{
    p->next_free = E.free_provs;
    E.free_provs = p;
}

static void prov_unref(struct prov *p)
{
    if (p && --p->refs == 0)
        prov_free(p);
}

/* First interval ending after lo. */
static size_t iv_find(const struct arena *a, uint64_t lo)
{
    size_t l = 0, h = a->n_iv;
    while (l < h) {
        size_t m = l + (h - l) / 2;
        if (a->iv[m].hi <= lo)
            l = m + 1;
        else
            h = m;
    }
    return l;
}

/* Removes [lo, hi) from the intervals (its bytes no longer hold a known sentinel). */
static void iv_cut(struct arena *a, uint64_t lo, uint64_t hi)
{
    size_t i = iv_find(a, lo);
    while (i < a->n_iv && a->iv[i].lo < hi) {
        struct ival *v = &a->iv[i];
        if (v->lo < lo && v->hi > hi) {
            struct ival right = {hi, v->hi, v->prov};
            v->hi = lo;
            if (grow((void **)&a->iv, &a->cap_iv, a->n_iv + 1, sizeof *a->iv)) {
                memmove(&a->iv[i + 2], &a->iv[i + 1], (a->n_iv - i - 1) * sizeof *a->iv);
                a->iv[i + 1] = right;
                a->n_iv++;
                prov_ref(right.prov);
            }
            return;
        }
        if (v->lo < lo) {
            v->hi = lo;
            i++;
        } else if (v->hi > hi) {
            v->lo = hi;
            return;
        } else {
            prov_unref(v->prov);
            memmove(&a->iv[i], &a->iv[i + 1], (a->n_iv - i - 1) * sizeof *a->iv);
            a->n_iv--;
        }
    }
}

static void iv_add(struct arena *a, uint64_t lo, uint64_t hi, struct prov *p)
{
    if (lo >= hi)
        return;
    iv_cut(a, lo, hi);
    if (!grow((void **)&a->iv, &a->cap_iv, a->n_iv + 1, sizeof *a->iv))
        return;
    size_t i = iv_find(a, lo);
    memmove(&a->iv[i + 1], &a->iv[i], (a->n_iv - i) * sizeof *a->iv);
    a->iv[i] = (struct ival){lo, hi, p};
    a->n_iv++;
    prov_ref(p);
}

/* Appends to w->rg the parts of [lo, hi) that no live root of a (other than self) covers. */
static void uncovered(struct work *w, struct arena *a, const struct tensor *self, uint64_t lo,
                      uint64_t hi)
{
    uint64_t cur = lo;
    while (cur < hi) {
        /* The live root covering cur that reaches furthest, else the nearest start after. */
        uint64_t cover_end = cur, next_start = hi;
        for (size_t i = 0; i < a->n_live; i++) {
            const struct tensor *t = a->live[i];
            if (t == self || t->size == 0)
                continue;
            uint64_t s = t->off, e = t->off + t->size;
            if (s <= cur && e > cover_end)
                cover_end = e;
            else if (s > cur && s < next_start)
                next_start = s;
        }
        if (cover_end > cur) {
            cur = cover_end;
            continue;
        }
        WPUSH(w, rg, n_rg, cap_rg, rg_in, (struct range){cur, next_start, NULL});
        cur = next_start;
    }
}

/* ---- findings ---- */

/* A zeroed finding on w's list, for a constructor of engine/finding.h. */
static struct finding *finding_alloc(struct work *w)
{
    struct finding *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    *w->tail = f;
    w->tail = &f->next;
    return f;
}

/* Root t as a report names it, with its bind stack. */
static struct finding_tensor tensor_as_bound(const struct tensor *t)
{
    return (struct finding_tensor){t->name, t->bind_stack, t->off, t->off + t->size};
}

static const char *arena_name_of(const struct tensor *t)
{
    return t->arena ? t->arena->name : "?";
}

/* The one constructor of a live-corruption finding in the engine: root t's bytes were found
 * changed at `moment` (by: the op that read it, or the release / destroy call; via: the view
 * it was read through). Its cause is t's clobber mark (another root's write over it, or an
 * in-place consumer), else a checksum that went from `expect` to `got`. */
static void live_corruption_new(struct work *w, const struct tensor *t, enum finding_moment moment,
                                struct finding_call by, const char *via, uint64_t expect,
                                uint64_t got)
{
    struct finding *f = finding_alloc(w);
    if (!f)
        return;
    enum corruption_cause cause = t->clob == CLOB_INPLACE ? CORRUPTION_CONSUMED_IN_PLACE
                                  : t->clob == CLOB_WRITE ? CORRUPTION_OVERWRITTEN
                                                          : CORRUPTION_CHECKSUM;
    struct live_corruption *v =
        finding_live_corruption(f, cause, tensor_as_bound(t), arena_name_of(t), moment, by);
    v->via = via;
    v->last_writer = (struct finding_call){t->last_op, t->last_op_stack};
    if (cause == CORRUPTION_CHECKSUM) {
        v->checksum_before = expect;
        v->checksum_after = got;
    } else {
        v->overwriter =
            (struct finding_tensor){t->clob_by, t->clob_by_bind_stack, t->clob_lo, t->clob_hi};
        v->overwriting_op = (struct finding_call){t->clob_op, t->clob_op_stack};
    }
    /* The other live roots sharing t's bytes. */
    struct arena *a = t->arena;
    for (size_t i = 0; a && i < a->n_live && v->n_sharers < FINDING_MAX_TENSORS; i++) {
        const struct tensor *o = a->live[i];
        if (o != t && overlaps(o->off, o->off + o->size, t->off, t->off + t->size))
            v->sharers[v->n_sharers++] = tensor_as_bound(o);
    }
}

/* The sentinel bytes from arena offset `at` on (at most `avail`) as found and as expected. */
static void capture_bytes(struct finding_bytes *b, const struct arena *a, uint64_t at,
                          uint64_t avail)
{
    b->arena_base = a->base;
    b->offset = at;
    uint64_t n_show = avail < FINDING_SHOWN_BYTES ? avail : FINDING_SHOWN_BYTES;
    const unsigned char *q = (const unsigned char *)(a->base + at);
    for (uint64_t k = 0; k < n_show; k++) {
        b->found[k] = q[k];
        b->expected[k] = sentinel_byte((uintptr_t)(q + k));
    }
    b->n_shown = n_show;
}

static uint64_t mix(uint64_t h, const char *s, uint64_t v)
{
    h = (h ^ (s ? hash_str(s) : 0x9e3779b97f4a7c15ull)) * 0x100000001b3ull;
    return (h ^ v) * 0xff51afd7ed558ccdull;
}

/* What makes two findings the same: an engine that runs its graph again, or a loop that
 * runs an op again, repeats the bug with the same names. */
static uint64_t finding_key(const struct finding *f)
{
    uint64_t h = (uint64_t)f->variant + 1;
    switch (f->variant) {
    case FINDING_USE_AFTER_RELEASE: {
        const struct use_after_release *v = &f->use_after_release;
        h = mix(h, v->root.name, (uint64_t)v->moment);
        h = mix(h, v->view, 0);
        h = mix(h, v->op.op, 0);
        break;
    }
    case FINDING_LIVE_CORRUPTION: {
        const struct live_corruption *v = &f->live_corruption;
        h = mix(h, v->victim.name, (uint64_t)v->cause);
        h = mix(h, v->via, (uint64_t)v->moment);
        h = mix(h, v->by.op, 0);
        if (v->cause == CORRUPTION_CHECKSUM) {
            h = mix(h, v->last_writer.op, 0);
        } else {
            h = mix(h, v->overwriter.name, 0);
            h = mix(h, v->overwriting_op.op, 0);
        }
        break;
    }
    case FINDING_STALE_WRITE: {
        const struct stale_write *v = &f->stale_write;
        h = mix(h, v->new_tenant.name, 0);
        h = mix(h, v->arena, v->bytes.offset);
        h = mix(h, v->n_previous ? v->previous[0].name : NULL, 0);
        break;
    }
    case FINDING_SLOT_OVERFLOW:
        h = mix(h, f->slot_overflow.tensor.name, 0);
        h = mix(h, f->slot_overflow.writer.op, 0);
        break;
    }
    return h ? h : 1;
}

/* True the first time a key is seen. Lock held. A set of 64-bit keys: open addressing. */
static bool first_time(uint64_t key)
{
    if ((E.seen_n + 1) * 2 > E.seen_cap) {
        size_t cap = E.seen_cap ? E.seen_cap * 2 : 256;
        uint64_t *n = calloc(cap, sizeof *n);
        if (!n)
            return true;
        for (size_t i = 0; i < E.seen_cap; i++) {
            if (!E.seen[i])
                continue;
            size_t j = E.seen[i] & (cap - 1);
            while (n[j])
                j = (j + 1) & (cap - 1);
            n[j] = E.seen[i];
        }
        free(E.seen);
        E.seen = n;
        E.seen_cap = cap;
    }
    size_t j = key & (E.seen_cap - 1);
    for (; E.seen[j]; j = (j + 1) & (E.seen_cap - 1))
        if (E.seen[j] == key)
            return false;
    E.seen[j] = key;
    E.seen_n++;
    return true;
}

/* Reports the findings (each distinct one once per process), frees the scratch. No lock
 * held: a report symbolizes, and may exit under halt_on_error. */
static void work_done(struct work *w)
{
    if (w->findings) {
        lock();
        for (struct finding *f = w->findings; f; f = f->next)
            f->repeated = !first_time(finding_key(f));
        unlock();
    }
    for (struct finding *f = w->findings, *next; f; f = next) {
        next = f->next;
        if (!f->repeated)
            finding_report(f);
        free(f);
    }
    if (w->jobs != w->jobs_in)
        free(w->jobs);
    if (w->rg != w->rg_in)
        free(w->rg);
}

/* ---- hash jobs ---- */

static void job_add(struct work *w, struct tensor *t, bool verify, enum finding_moment moment,
                    const char *op, uint32_t op_stack, const char *via)
{
    uintptr_t p = t->arena->base + t->off;
    WPUSH(w, jobs, n_jobs, cap_jobs, jobs_in,
          (struct job){t, t->gen, 0, (const unsigned char *)p, t->size, verify, t->hash, 0, moment,
                       op, via, op_stack});
}

/* Takes each job's epoch: call last, under the lock, after every state change. */
static void jobs_seal(struct work *w)
{
    for (size_t i = 0; i < w->n_jobs; i++)
        w->jobs[i].epoch = w->jobs[i].t->epoch;
}

static void jobs_run(struct work *w)
{
    for (size_t i = 0; i < w->n_jobs; i++)
        w->jobs[i].got = checksum_bytes(w->jobs[i].p, w->jobs[i].n);
}

/* Applies the hashes whose tensors did not move meanwhile. Lock held. */
static void jobs_apply(struct work *w)
{
    for (size_t i = 0; i < w->n_jobs; i++) {
        struct job *j = &w->jobs[i];
        struct tensor *t = j->t;
        if (t->gen != j->gen || t->epoch != j->epoch)
            continue;
        bool store = t->bound && t->writers == 0;
        if (j->verify && j->got != j->expect && t->clob == CLOB_NONE) {
            bool ended = j->moment == MOMENT_RELEASE || j->moment == MOMENT_ARENA_DESTROY;
            struct finding_call by = {j->op, ended ? t->release_stack : j->op_stack};
            live_corruption_new(w, t, j->moment, by, j->via, j->expect, j->got);
        }
        if (store) {
            t->hash = j->got;
            t->has_hash = true;
        }
    }
}

/* A clobbered root that no op reads again was dead, unless it is a graph output: the host
 * reads those after the run. Lock held; t->release_stack set. */
static void clobbered_output(struct work *w, struct tensor *t, enum finding_moment moment)
{
    if (!(t->flags & TLSAN_BIND_OUTPUT) || t->clob == CLOB_NONE || t->clob_reported)
        return;
    t->clob_reported = true;
    live_corruption_new(w, t, moment, (struct finding_call){NULL, t->release_stack}, NULL, 0, 0);
}

/* ---- arenas ---- */

/* Adds a's range to the sorted table (mutex held). False when the table cannot grow: the
 * arena is then not watched by the free hook. */
static bool ranges_add(struct arena *a)
{
    shim_lock_take(&AR.lock);
    if (AR.n == AR.cap) {
        size_t cap = AR.cap ? AR.cap * 2 : 256;
        void *m = mmap(NULL, cap * sizeof *AR.v, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            shim_lock_drop(&AR.lock);
            return false;
        }
        if (AR.v) {
            memcpy(m, AR.v, AR.n * sizeof *AR.v);
            munmap(AR.v, AR.cap * sizeof *AR.v);
        }
        AR.v = m;
        AR.cap = cap;
    }
    size_t i = AR.n;
    while (i > 0 && AR.v[i - 1].lo > a->base) {
        AR.v[i] = AR.v[i - 1];
        i--;
    }
    AR.v[i] = (struct arena_range){a->base, a->base + a->size, a};
    AR.n++;
    atomic_store_explicit(&engine_g_arenas, (unsigned)AR.n, memory_order_relaxed);
    shim_lock_drop(&AR.lock);
    return true;
}

static void ranges_remove(struct arena *a)
{
    shim_lock_take(&AR.lock);
    for (size_t i = 0; i < AR.n; i++) {
        if (AR.v[i].a == a) {
            memmove(&AR.v[i], &AR.v[i + 1], (AR.n - i - 1) * sizeof *AR.v);
            AR.n--;
            break;
        }
    }
    atomic_store_explicit(&engine_g_arenas, (unsigned)AR.n, memory_order_relaxed);
    shim_lock_drop(&AR.lock);
}

void engine_heap_block_freed_slow(const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    if (hi <= lo)
        return;
    struct arena *gone[8];
    size_t n_gone = 0;
    shim_lock_take(&AR.lock);
    /* The first range ending after lo (the ranges are disjoint, so their ends are sorted
     * too), then every range starting before hi. */
    size_t l = 0, r = AR.n;
    while (l < r) {
        size_t m = l + (r - l) / 2;
        if (AR.v[m].hi <= lo)
            l = m + 1;
        else
            r = m;
    }
    while (l < AR.n && AR.v[l].lo < hi && n_gone < sizeof gone / sizeof gone[0]) {
        gone[n_gone++] = AR.v[l].a;
        atomic_store_explicit(&AR.v[l].a->gone, true, memory_order_release);
        memmove(&AR.v[l], &AR.v[l + 1], (AR.n - l - 1) * sizeof *AR.v);
        AR.n--;
    }
    atomic_store_explicit(&engine_g_arenas, (unsigned)AR.n, memory_order_relaxed);
    shim_lock_drop(&AR.lock);
    if (!n_gone)
        return;
    atomic_store_explicit(&g_gone, true, memory_order_release);
    for (size_t i = 0; i < n_gone; i++)
        usage("arena '%s' [%p, +%llu) freed before tlsan_arena_destroy; dropped (its tensors "
              "are unbound and its memory no longer read)",
              gone[i]->name ? gone[i]->name : "?", (void *)gone[i]->base, (ull)gone[i]->size);
}

/* Frees what an ended arena keeps about its bytes (intervals, live tensors, placements). */
static void arena_free_tables(struct arena *a)
{
    for (size_t i = 0; i < a->n_iv; i++)
        prov_unref(a->iv[i].prov);
    free(a->iv);
    free(a->live);
    free(a->pl);
    a->iv = NULL;
    a->live = NULL;
    a->pl = NULL;
    a->n_iv = a->cap_iv = a->cap_live = a->n_pl = a->cap_pl = 0;
}

/* Drops the arenas whose memory was freed (mutex held): their tensors are unbound without
 * reading a byte, their lists go, and they stay on the list, dead, only so that their
 * tlsan_arena_destroy is quietly accepted (the warning was given at the free). */
static void reap_gone(void)
{
    atomic_store_explicit(&g_gone, false, memory_order_relaxed);
    for (struct arena *a = E.arenas; a; a = a->next) {
        if (a->dead || !atomic_load_explicit(&a->gone, memory_order_acquire))
            continue;
        for (size_t i = 0; i < a->n_live; i++) {
            a->live[i]->bound = false;
            a->live[i]->epoch++;
        }
        a->n_live = 0;
        trace_arena_end(a->trace_id, 0);
        a->dead = true;
        arena_free_tables(a);
    }
}

void tlsan_rt_arena_create(const char *name, const void *base, size_t size_bytes)
{
    if (!active())
        return;
    uint32_t stack = depot_capture(1);
    if (!base || !size_bytes) {
        usage("tlsan_arena_create('%s'): empty arena (base %p, %zu bytes) ignored",
              name ? name : "?", base, size_bytes);
        return;
    }
    uintptr_t b = (uintptr_t)base;
    if (size_bytes > UINTPTR_MAX - b) {
        usage("tlsan_arena_create('%s'): [%p, +%zu) runs past the end of the address space; "
              "ignored",
              name ? name : "?", base, size_bytes);
        return;
    }
    /* The arena is filled now (fill=1) and read later (checksums, sentinels): memory that is
     * not there, or not writable, would crash the program in the shim. */
    bool fill = shim_opts()->fill;
    if (!modules_range_usable(b, b + size_bytes, fill)) {
        usage("tlsan_arena_create('%s'): [%p, +%zu) is not mapped %s memory; ignored",
              name ? name : "?", base, size_bytes, fill ? "readable and writable" : "readable");
        return;
    }
    lock();
    for (struct arena *a = E.arenas; a; a = a->next) {
        if (!a->dead && overlaps(a->base, a->base + a->size, b, b + size_bytes)) {
            unlock();
            usage("tlsan_arena_create('%s'): [%p, +%zu) overlaps arena '%s'; ignored",
                  name ? name : "?", base, size_bytes, a->name);
            return;
        }
    }
    struct arena *a = calloc(1, sizeof *a);
    if (!a) {
        unlock();
        return;
    }
    a->name = intern(name);
    a->base = b;
    a->size = size_bytes;
    a->trace_id = trace_arena(a->name, b, size_bytes, stack);
    a->next = E.arenas;
    E.arenas = a;
    ranges_add(a);
    unlock();
    /* No tensor is bound in it before this returns: fill, then publish the sentinel. */
    if (fill) {
        sentinel_fill((void *)b, size_bytes);
        lock();
        if (!a->dead)
            iv_add(a, 0, size_bytes, NULL);
        unlock();
    }
}

void tlsan_rt_arena_destroy(const void *base)
{
    if (!active())
        return;
    uint32_t stack = depot_capture(1);
    struct work w = WORK_INIT(w);
    lock();
    struct arena *a = arena_find((uintptr_t)base);
    if (!a) {
        /* An arena dropped when its memory was freed: warned then; now it goes. */
        for (struct arena **pp = &E.arenas; *pp; pp = &(*pp)->next) {
            if ((*pp)->dead && (*pp)->base == (uintptr_t)base) {
                *pp = (*pp)->next;
                unlock();
                return;
            }
        }
        unlock();
        usage("tlsan_arena_destroy(%p): no arena has this base", base);
        return;
    }
    ranges_remove(a);
    for (size_t i = 0; i < a->n_live; i++) {
        struct tensor *t = a->live[i];
        if (hash_wanted(t) && t->has_hash && t->writers == 0 && t->clob == CLOB_NONE)
            job_add(&w, t, true, MOMENT_ARENA_DESTROY, NULL, 0, NULL);
        t->release_stack = stack;
        clobbered_output(&w, t, MOMENT_ARENA_DESTROY);
        t->bound = false;
        t->epoch++;
    }
    a->n_live = 0;
    trace_arena_end(a->trace_id, stack);
    jobs_seal(&w);
    unlock();
    jobs_run(&w);
    lock();
    jobs_apply(&w);
    /* Off the list (lookups stay fast for engines that make an arena per run), but not
     * freed: released tensors still point at it. Its lists go. */
    a->dead = true;
    for (struct arena **pp = &E.arenas; *pp; pp = &(*pp)->next) {
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    }
    arena_free_tables(a);
    unlock();
    work_done(&w);
}

/* ---- tensors ---- */

static struct tensor *tensor_of(struct name *n)
{
    if (!n->t) {
        n->t = calloc(1, sizeof *n->t);
        if (n->t) {
            n->t->name = n->s;
            n->t->nm = n;
        }
    }
    return n->t;
}

/* checksum=shared: does t's new placement share bytes with another name's, ever? */
static void note_placement(struct tensor *t)
{
    struct arena *a = t->arena;
    uint64_t lo = t->off, hi = t->off + t->size;
    if (t->pl_arena == a && t->pl_lo == lo && t->pl_hi == hi)
        return;
    t->pl_arena = a;
    t->pl_lo = lo;
    t->pl_hi = hi;
    bool exact = false;
    for (size_t i = 0; i < a->n_pl; i++) {
        struct place *p = &a->pl[i];
        if (!overlaps(p->lo, p->hi, lo, hi))
            continue;
        bool same_range = p->lo == lo && p->hi == hi;
        exact |= same_range;
        if (p->n_names == 1 && p->name == t->name)
            continue; /* only this tensor's own earlier place */
        /* Another name shares bytes with this one. A range holding two names or more had
         * them all marked when its second came. */
        t->shared = true;
        if (p->n_names == 1) {
            struct name *on = name_get(p->name, false);
            if (on && on->t)
                on->t->shared = true;
        }
        if (same_range)
            p->n_names++;
    }
    if (!exact && hi > lo)
        PUSH(a->pl, a->n_pl, a->cap_pl, (struct place){t->name, lo, hi, 1});
}

void tlsan_rt_tensor_bind(const void *arena_base, const char *name, const void *addr,
                          size_t size_bytes, unsigned flags)
{
    if (!active())
        return;
    uint32_t stack = depot_capture(1);
    if (!name) {
        usage("tlsan_tensor_bind: NULL name ignored");
        return;
    }
    struct work w = WORK_INIT(w);
    lock();
    struct arena *a = arena_find((uintptr_t)arena_base);
    uintptr_t p = (uintptr_t)addr;
    if (!a) {
        unlock();
        usage("tlsan_tensor_bind('%s'): %p is not the base of an arena", name, arena_base);
        return;
    }
    if (p < a->base || p - a->base > a->size || size_bytes > a->size - (p - a->base)) {
        unlock();
        usage("tlsan_tensor_bind('%s'): [%p, +%zu) is not inside arena '%s' [%p, +%llu); ignored",
              name, addr, size_bytes, a->name, (void *)a->base, (ull)a->size);
        return;
    }
    struct name *n = name_get(name, true);
    struct tensor *t = n ? tensor_of(n) : NULL;
    if (!t) {
        unlock();
        return;
    }
    if (!t->is_view && t->bound) {
        unlock();
        usage("tlsan_tensor_bind('%s'): bound again without a release; ignored", name);
        return;
    }
    if (t->is_view && t->root->bound && t->root->gen == t->root_gen) {
        unlock();
        usage("tlsan_tensor_bind('%s'): the name is a live view; ignored", name);
        return;
    }
    t->is_view = false;
    t->arena = a;
    t->off = p - a->base;
    t->size = size_bytes;
    t->flags = flags;
    t->bound = true;
    t->gen++;
    t->epoch++;
    t->bind_stack = stack;
    t->release_stack = 0;
    t->has_hash = false;
    t->writers = 0;
    t->last_op = NULL;
    t->last_op_stack = 0;
    t->uar_op = NULL;
    t->clob = CLOB_NONE;
    t->clob_reported = false;
    t->clob_by = NULL;
    PUSH(a->live, a->n_live, a->cap_live, t);
    trace_bind(name, a->trace_id, t->off, size_bytes, flags, stack);
    if (shim_opts()->checksum == SHIM_CHECKSUM_SHARED)
        note_placement(t);
    /* The sentinel parts of the new range: verified below, no longer sentinel from now. */
    uint64_t lo = t->off, hi = t->off + t->size;
    for (size_t i = iv_find(a, lo); i < a->n_iv && a->iv[i].lo < hi; i++) {
        struct ival *v = &a->iv[i];
        uint64_t s = v->lo > lo ? v->lo : lo, e = v->hi < hi ? v->hi : hi;
        prov_ref(v->prov);
        WPUSH(&w, rg, n_rg, cap_rg, rg_in, (struct range){s, e, v->prov});
    }
    iv_cut(a, lo, hi);
    unlock();

    struct finding *f = NULL;
    struct stale_write *stale = NULL;
    for (size_t i = 0; i < w.n_rg; i++) {
        struct range *r = &w.rg[i];
        size_t at = sentinel_find_change((const void *)(a->base + r->lo), r->hi - r->lo);
        if (at < r->hi - r->lo) {
            if (!f && (f = calloc(1, sizeof *f))) {
                struct finding_bytes bytes;
                capture_bytes(&bytes, a, r->lo + at, r->hi - (r->lo + at));
                stale = finding_stale_write(f, (struct finding_tensor){t->name, stack, lo, hi},
                                            a->name, &bytes);
            }
            if (stale && stale->n_previous < FINDING_MAX_TENSORS) {
                struct prov *pv = r->prov;
                bool dup = false;
                for (size_t k = 0; k < stale->n_previous; k++)
                    dup |= stale->previous[k].name && pv && stale->previous[k].name == pv->name &&
                           stale->previous[k].lo == pv->lo;
                if (!dup)
                    stale->previous[stale->n_previous++] =
                        pv ? (struct finding_tensor){pv->name, pv->release_stack, pv->lo, pv->hi}
                           : (struct finding_tensor){NULL, 0, r->lo, r->hi};
            }
        }
    }
    if (w.n_rg) {
        lock();
        for (size_t i = 0; i < w.n_rg; i++)
            prov_unref(w.rg[i].prov);
        unlock();
    }
    if (f) {
        w.findings = f;
        w.tail = &f->next;
    }
    work_done(&w);
}

void tlsan_rt_view_bind(const char *name, const char *base_name, size_t view_offset_bytes,
                        size_t size_bytes)
{
    if (!active())
        return;
    uint32_t stack = depot_capture(1);
    if (!name || !base_name) {
        usage("tlsan_view_bind: NULL name ignored");
        return;
    }
    lock();
    struct name *bn = name_get(base_name, false);
    struct tensor *b = bn ? bn->t : NULL;
    struct tensor *root = b ? (b->is_view ? b->root : b) : NULL;
    if (!b || !root->bound || (b->is_view && b->root_gen != root->gen)) {
        unlock();
        usage("tlsan_view_bind('%s'): its base '%s' is not live; ignored", name, base_name);
        return;
    }
    struct name *n = name_get(name, true);
    struct tensor *t = n ? tensor_of(n) : NULL;
    if (!t || t == b) {
        unlock();
        if (t)
            usage("tlsan_view_bind('%s'): a view of itself; ignored", name);
        return;
    }
    if (!t->is_view && t->bound) {
        unlock();
        usage("tlsan_view_bind('%s'): the name is a bound storage root; ignored", name);
        return;
    }
    uint64_t voff = (b->is_view ? b->voff : 0) + view_offset_bytes;
    t->is_view = true;
    t->bound = false;
    t->root = root;
    t->root_gen = root->gen;
    t->voff = voff;
    t->size = size_bytes;
    t->bind_stack = stack;
    uint64_t base_size = b->size;
    trace_view(name, base_name, view_offset_bytes, size_bytes, stack);
    unlock();
    if (view_offset_bytes > base_size || size_bytes > base_size - view_offset_bytes)
        usage("tlsan_view_bind('%s'): [%zu, +%zu) runs past the end of its base '%s' (%llu bytes)",
              name, view_offset_bytes, size_bytes, base_name, (ull)base_size);
}

void tlsan_rt_tensor_release(const void *arena_base, const char *name, const void *addr,
                             unsigned flags)
{
    if (!active())
        return;
    uint32_t stack = depot_capture(1);
    struct work w = WORK_INIT(w);
    lock();
    struct name *n = name ? name_get(name, false) : NULL;
    struct tensor *t = n ? n->t : NULL;
    if (!t || t->is_view || !t->bound) {
        unlock();
        usage("tlsan_tensor_release('%s'): %s; ignored", name ? name : "(null)",
              !t           ? "no tensor of this name was bound"
              : t->is_view ? "a view (views end with their storage root)"
                           : "not bound (released twice?)");
        return;
    }
    struct arena *a = t->arena;
    if (a->base != (uintptr_t)arena_base || (uintptr_t)addr != a->base + t->off) {
        unlock();
        usage("tlsan_tensor_release('%s'): arena %p / address %p do not match its bind (arena "
              "'%s' at %p, address %p); ignored",
              name, arena_base, addr, a->name, (void *)a->base, (void *)(a->base + t->off));
        return;
    }
    if (t->writers > 0)
        usage("tlsan_tensor_release('%s'): released while %d op(s) writing it are in flight", name,
              t->writers);
    if (hash_wanted(t) && t->has_hash && t->writers == 0 && t->clob == CLOB_NONE)
        job_add(&w, t, true, MOMENT_RELEASE, NULL, 0, NULL);
    t->release_stack = stack;
    clobbered_output(&w, t, MOMENT_RELEASE);
    t->bound = false;
    t->epoch++;
    live_remove(a, t);
    trace_release(name, flags, stack);
    struct prov *pv = NULL;
    if (shim_opts()->fill && !(flags & TLSAN_RELEASE_HANDOVER)) {
        uncovered(&w, a, t, t->off, t->off + t->size);
        pv = w.n_rg ? prov_new() : NULL;
        if (pv)
            *pv = (struct prov){t->name, t->off, t->off + t->size, t->bind_stack, stack, 0, NULL};
    }
    jobs_seal(&w);
    unlock();

    jobs_run(&w); /* the last verify comes before the fill */
    for (size_t i = 0; pv && i < w.n_rg; i++)
        sentinel_fill((void *)(a->base + w.rg[i].lo), w.rg[i].hi - w.rg[i].lo);

    lock();
    jobs_apply(&w);
    if (pv && !a->dead) {
        /* Publish only what is still uncovered (a racing bind keeps its bytes). */
        size_t n_fill = w.n_rg;
        for (size_t i = 0; i < n_fill; i++)
            uncovered(&w, a, NULL, w.rg[i].lo, w.rg[i].hi);
        for (size_t i = n_fill; i < w.n_rg; i++)
            iv_add(a, w.rg[i].lo, w.rg[i].hi, pv);
    }
    if (pv && pv->refs == 0)
        prov_free(pv);
    unlock();
    work_done(&w);
}

/* ---- ops ---- */

static int resolve(const char *nm, struct access *x)
{
    memset(x, 0, sizeof *x);
    x->name = nm;
    struct name *n = nm ? name_get(nm, false) : NULL;
    struct tensor *t = n ? n->t : NULL;
    if (!t || (!t->is_view && !t->arena))
        return x->status = R_UNKNOWN;
    x->named = t;
    if (t->is_view) {
        struct tensor *r = t->root;
        x->root = r;
        if (r->gen != t->root_gen)
            return x->status = R_STALE_VIEW;
        if (!r->bound)
            return x->status = R_RELEASED;
        uint64_t lo = r->off + (t->voff < r->size ? t->voff : r->size);
        uint64_t end = r->off + r->size;
        x->lo = lo;
        x->hi = t->size < end - lo ? lo + t->size : end;
    } else {
        x->root = t;
        if (!t->bound)
            return x->status = R_RELEASED;
        x->lo = t->off;
        x->hi = t->off + t->size;
    }
    x->gen = x->root->gen;
    return x->status = R_OK;
}

/* Op `op` accessed x, whose storage root was released (or, through a view, released and
 * bound again). */
static void use_after_release_found(struct work *w, const struct access *x, struct op *op,
                                    enum finding_moment moment)
{
    /* Once per tenant and op: a loop running the op again says nothing new. */
    if (x->root->uar_op == op->name)
        return;
    x->root->uar_op = op->name;
    struct finding *f = finding_alloc(w);
    if (!f)
        return;
    const struct tensor *root = x->root;
    struct use_after_release *v = finding_use_after_release(
        f, tensor_as_bound(root), arena_name_of(root), root->release_stack, moment,
        (struct finding_call){op->name, op->stack});
    v->view = x->named != x->root ? x->name : NULL;
    v->root_rebound = x->status == R_STALE_VIEW;
}

static bool op_writes(const struct op *op, const struct tensor *root)
{
    for (size_t i = 0; i < op->n_w; i++)
        if (op->w[i].status == R_OK && op->w[i].root == root)
            return true;
    return false;
}

static bool op_inplace_in(const struct op *op, const struct tensor *root)
{
    for (size_t i = 0; i < op->n_ip; i++)
        if (op->ip_in[i] == root)
            return true;
    return false;
}

uint64_t tlsan_rt_op_begin(const tlsan_op_info *info)
{
    if (!active() || !info)
        return 0;
    uint32_t stack = depot_capture(1);
    size_t nr = info->reads ? info->n_reads : 0, nw = info->writes ? info->n_writes : 0;
    size_t nip = info->inplace ? info->n_inplace : 0;
    struct work w = WORK_INIT(w);

    lock();
    struct op *op = E.free_ops;
    if (op)
        E.free_ops = op->next;
    else
        op = calloc(1, sizeof *op);
    if (!op || !grow((void **)&op->acc, &op->cap_acc, nr + nw + 1, sizeof *op->acc) ||
        !grow((void **)&op->ip_in, &op->cap_ip, nip + 1, sizeof *op->ip_in)) {
        if (op) {
            op->next = E.free_ops;
            E.free_ops = op;
        }
        unlock();
        return 0;
    }
    op->r = op->acc;
    op->w = op->acc + nr;
    op->n_r = op->n_w = op->n_ip = 0;
    op->stack = stack;
    op->id = ++E.next_op;
    op->name = intern(info->name);
    trace_op(op->id, op->name, info->stream, info->reads, nr, info->writes, nw, info->inplace, nip,
             stack);
    for (size_t i = 0; i < nip; i++) {
        struct access x;
        if (info->inplace[2 * i + 1] && resolve(info->inplace[2 * i + 1], &x) == R_OK)
            op->ip_in[op->n_ip++] = x.root;
    }
    for (size_t i = 0; i < nw; i++) {
        struct access *x = &op->w[op->n_w];
        if (!info->writes[i])
            continue;
        int st = resolve(info->writes[i], x);
        op->n_w++;
        if (st == R_UNKNOWN)
            usage("op '%s' writes '%s', which was never bound; ignored", op->name, info->writes[i]);
        else if (st != R_OK)
            use_after_release_found(&w, x, op, MOMENT_WRITE);
    }
    for (size_t i = 0; i < nr; i++) {
        struct access *x = &op->r[op->n_r];
        if (!info->reads[i])
            continue;
        int st = resolve(info->reads[i], x);
        op->n_r++;
        if (st == R_UNKNOWN) {
            usage("op '%s' reads '%s', which was never bound; ignored", op->name, info->reads[i]);
            continue;
        }
        if (st != R_OK) {
            use_after_release_found(&w, x, op, MOMENT_READ);
            continue;
        }
        struct tensor *t = x->root;
        if (t->clob != CLOB_NONE) {
            if (!t->clob_reported) {
                t->clob_reported = true;
                live_corruption_new(&w, t, MOMENT_READ, (struct finding_call){op->name, stack},
                                    x->named != t ? x->name : NULL, 0, 0);
            }
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k + 1 < op->n_r; k++)
            dup |= op->r[k].status == R_OK && op->r[k].root == t;
        if (!dup && t->writers == 0 && hash_wanted(t))
            job_add(&w, t, t->has_hash, MOMENT_READ, op->name, stack,
                    x->named != t ? x->name : NULL);
    }
    /* Its writes start now: other threads' hashes of these roots are void from here on. */
    for (size_t i = 0; i < op->n_w; i++) {
        struct access *x = &op->w[i];
        if (x->status != R_OK)
            continue;
        struct tensor *t = x->root;
        t->writers++;
        t->epoch++;
        t->has_hash = false;
        if (x->lo == t->off && x->hi == t->off + t->size) {
            t->clob = CLOB_NONE; /* rewritten whole: its old value no longer matters */
            t->clob_reported = false;
        }
    }
    op->next = E.ops;
    E.ops = op;
    jobs_seal(&w);
    unlock();

    if (w.n_jobs) {
        jobs_run(&w);
        lock();
        /* This op's own writes moved the epoch of what it also writes; it has not run yet. */
        for (size_t i = 0; i < w.n_jobs; i++) {
            struct job *j = &w.jobs[i];
            if (j->t->gen == j->gen && op_writes(op, j->t) && j->t->epoch == j->epoch) {
                if (j->verify && j->got != j->expect && j->t->clob == CLOB_NONE)
                    live_corruption_new(&w, j->t, MOMENT_READ,
                                        (struct finding_call){op->name, stack}, NULL, j->expect,
                                        j->got);
                j->gen = 0; /* handled */
            }
        }
        jobs_apply(&w);
        unlock();
    }
    uint64_t id = op->id;
    work_done(&w);
    return id;
}

/* op_end for one written root: clobber marks, the bytes past its end, the hash job. */
static void end_write(struct work *w, struct op *op, struct access *x, bool first)
{
    struct tensor *t = x->root;
    struct arena *a = t->arena;
    if (t->writers > 0)
        t->writers--;
    t->last_op = op->name;
    t->last_op_stack = op->stack;
    for (size_t i = 0; i < a->n_live; i++) {
        struct tensor *o = a->live[i];
        if (o == t || !overlaps(o->off, o->off + o->size, x->lo, x->hi) || op_writes(op, o))
            continue;
        int kind = op_inplace_in(op, o) ? CLOB_INPLACE : CLOB_WRITE;
        if (o->clob != CLOB_NONE && !o->clob_reported)
            continue; /* keep the first clobber until it is reported */
        o->clob = kind;
        o->clob_reported = false;
        o->clob_by = t->name;
        o->clob_op = op->name;
        o->clob_op_stack = op->stack;
        o->clob_by_bind_stack = t->bind_stack;
        o->clob_lo = x->lo;
        o->clob_hi = x->hi;
        o->has_hash = false;
        o->epoch++;
    }
    if (!first)
        return;
    /* The bytes just past the root that hold a known sentinel. */
    uint64_t end = t->off + t->size;
    uint64_t stop = a->size - end < OVERFLOW_CHECK ? a->size : end + OVERFLOW_CHECK;
    bool broken = false;
    for (size_t i = iv_find(a, end); !broken && i < a->n_iv && a->iv[i].lo < stop; i++) {
        uint64_t s = a->iv[i].lo > end ? a->iv[i].lo : end;
        uint64_t e = a->iv[i].hi < stop ? a->iv[i].hi : stop;
        size_t at = sentinel_find_change((const void *)(a->base + s), e - s);
        if (at == e - s)
            continue;
        broken = true;
        struct finding *f = finding_alloc(w);
        if (!f)
            break;
        struct finding_bytes bytes;
        capture_bytes(&bytes, a, s + at, e - (s + at));
        finding_slot_overflow(f, tensor_as_bound(t), a->name,
                              (struct finding_call){op->name, op->stack}, &bytes);
    }
    if (broken)
        iv_cut(a, end, stop); /* reported once: not a stale-write again at the next bind */
}

void tlsan_rt_op_end(uint64_t op_token)
{
    if (!active() || !op_token)
        return;
    struct work w = WORK_INIT(w);
    lock();
    struct op **pp = &E.ops;
    while (*pp && (*pp)->id != op_token)
        pp = &(*pp)->next;
    struct op *op = *pp;
    if (!op) {
        unlock();
        usage("tlsan_op_end: token %llu is not an op in flight; ignored", (ull)op_token);
        return;
    }
    *pp = op->next;
    trace_op_end(op->id);
    for (size_t i = 0; i < op->n_w; i++) {
        struct access *x = &op->w[i];
        if (x->status != R_OK || x->root->gen != x->gen || !x->root->bound)
            continue;
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= !(op->w[k].status == R_OK && op->w[k].root == x->root);
        end_write(&w, op, x, first);
    }
    for (size_t i = 0; i < op->n_w; i++) {
        struct access *x = &op->w[i];
        struct tensor *t = x->root;
        if (x->status != R_OK || t->gen != x->gen || !t->bound || t->writers != 0)
            continue;
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= !(op->w[k].status == R_OK && op->w[k].root == t);
        if (first && hash_wanted(t))
            job_add(&w, t, false, MOMENT_WRITE, op->name, op->stack, NULL);
    }
    jobs_seal(&w);
    op->next = E.free_ops; /* nothing below needs it: names are interned */
    E.free_ops = op;
    unlock();
    if (w.n_jobs) {
        jobs_run(&w);
        lock();
        jobs_apply(&w);
        unlock();
    }
    work_done(&w);
}

/* ---- synchronisation: trace only (replay judges the order) ---- */

void tlsan_rt_event_record(int event, int stream)
{
    if (!active())
        return;
    trace_record(event, stream, depot_capture(1));
}

void tlsan_rt_event_wait(int stream, int event)
{
    if (!active())
        return;
    trace_wait(stream, event, depot_capture(1));
}

void tlsan_rt_host_sync(void)
{
    if (!active())
        return;
    trace_sync(depot_capture(1));
}

/* ---- plans ---- */

static int cmp_root(const void *x, const void *y, void *arg)
{
    const tlsan_plan *p = arg;
    const tensor_rec *a = &p->tensors[*(const uint32_t *)x], *b = &p->tensors[*(const uint32_t *)y];
    if (a->arena != b->arena)
        return a->arena < b->arena ? -1 : 1;
    if (a->offset_bytes != b->offset_bytes)
        return a->offset_bytes < b->offset_bytes ? -1 : 1;
    return 0;
}

/* checksum=shared: every root of the plan whose bytes intersect another root's. A sweep in
 * offset order: a root starting before the furthest end so far intersects the root that
 * reaches it, and every intersecting root is met that way. Lock held. */
static void mark_plan_shared(const tlsan_plan *p)
{
    uint32_t *ix = malloc((p->n_tensors + 1) * sizeof *ix);
    if (!ix)
        return;
    size_t n = 0;
    for (size_t i = 0; i < p->n_tensors; i++)
        if (p->tensors[i].view_of == NO_INDEX && p->tensors[i].bytes)
            ix[n++] = (uint32_t)i;
    qsort_r(ix, n, sizeof *ix, cmp_root, (void *)(uintptr_t)p) /* qsort_r passes it on untouched */;
    uint64_t max_end = 0;
    uint32_t max_at = NO_INDEX, arena = NO_INDEX;
    for (size_t k = 0; k < n; k++) {
        const tensor_rec *t = &p->tensors[ix[k]];
        if (t->arena != arena) {
            arena = t->arena;
            max_end = 0;
            max_at = NO_INDEX;
        }
        if (max_at != NO_INDEX && t->offset_bytes < max_end) {
            struct name *a = name_get(plan_str(p, t->name), true);
            struct name *b = name_get(plan_str(p, p->tensors[max_at].name), true);
            if (a)
                a->plan_shared = true;
            if (b)
                b->plan_shared = true;
        }
        uint64_t end = t->offset_bytes + t->bytes;
        if (end < t->offset_bytes)
            end = UINT64_MAX;
        if (max_at == NO_INDEX || end > max_end) {
            max_end = end;
            max_at = ix[k];
        }
    }
    free(ix);
}

/* A finding of the plan handed over: the shim's headline, the checker's own body (the lines
 * `tlsan check` prints for it), where the plan was loaded. */
static void report_plan_finding(const tlsan_report *rep, const tlsan_finding *f,
                                const tlsan_plan *p, uint32_t stack)
{
    char where[300];
    struct outbuf wb = {where, 0, sizeof where - 1};
    if (tlsan_plan_name(p))
        out_appendf(&wb, "plan '%s'", tlsan_plan_name(p));
    else
        out_appendf(&wb, "the loaded plan");
    where[wb.len] = 0;
    struct report *r = report_begin_finding(f, where);
    if (!r)
        return;
    checker_report_body(r, rep, f, PLAN_LOAD_LABEL);
    report_stack(r, "plan loaded at", stack);
    report_end_finding(r, f, where);
}

int tlsan_rt_plan_load(const char *plan_json, size_t json_bytes)
{
    if (!active())
        return 0;
    uint32_t stack = depot_capture(1);
    if (!plan_json) {
        usage("tlsan_plan_load: NULL plan ignored");
        return -1;
    }
    trace_plan(plan_json, json_bytes, stack);
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_report *rep = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    int result = -1;
    tlsan_status st =
        tlsan_read_buffer(plan_json, json_bytes, PLAN_LOAD_LABEL, &plan, &cache, &err);
    if (st != TLSAN_OK) {
        char msg[1100];
        if (st == TLSAN_ERR_INVALID)
            tlsan_error_format(&err, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "%s", tlsan_status_name(st));
        out_printf("tlsan: tlsan_plan_load: invalid plan: %s\n", msg);
        goto done;
    }
    st = plan ? tlsan_check(plan, NULL, &rep) : tlsan_check_cache(cache, NULL, &rep);
    if (st != TLSAN_OK) {
        out_printf("tlsan: tlsan_plan_load: cannot check the plan: %s\n", tlsan_status_name(st));
        goto done;
    }
    lock();
    if (plan) {
        mark_plan_shared(plan);
    } else {
        for (size_t i = 0; i < tlsan_cache_n_plans(cache); i++)
            mark_plan_shared(tlsan_cache_plan(cache, i));
    }
    /* Names already bound pick the mark up through their name (hash_wanted). */
    unlock();
    size_t n = tlsan_report_count(rep);
    for (size_t i = 0; i < n; i++) {
        const tlsan_finding *f = tlsan_report_finding(rep, i);
        const tlsan_plan *p = plan;
        if (!p && f->plan_index >= 0)
            p = tlsan_cache_plan(cache, (size_t)f->plan_index);
        if (!p)
            p = tlsan_cache_plan(cache, 0);
        if (p)
            report_plan_finding(rep, f, p, stack);
    }
    result = (int)n;
done:
    tlsan_report_free(rep);
    tlsan_plan_free(plan);
    tlsan_cache_free(cache);
    return result;
}
