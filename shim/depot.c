/* depot.c - the stack depot.
 *
 * Stacks are captured with unw_backtrace (libunwind's fast path, which caches each code
 * address's unwind rule; about 40-70 ns for a short stack; an unw_step loop costs much more),
 * and interned by their hash. Storage is mmap'd: an open-addressing table of ids keyed by
 * hash, an index id -> record (reserved once, MAP_NORESERVE, 3 MiB of address space, touched
 * in id order), and the records, bump-allocated in 1 MiB chunks mapped as needed. Records
 * never move or change once published, so lookups are lock-free (acquire loads); inserts
 * take one lock.
 *
 * The hash table starts at 16 KiB and doubles when three quarters full. It was 2 MiB from the
 * start, and since hashes land anywhere, each new stack touched a new page of it: a short
 * program (bash -c true, a few hundred stacks) paid about 250 page faults, a fifth of its
 * run under the shim. A reader holding an older table only misses there, and a miss is
 * looked up again under the lock in the current one; so old tables are never unmapped (all
 * of them together are smaller than the last). */
#include "depot.h"
#include "lock.h"
#include "modules.h"
#include "out.h"
#include "shim.h"
#include "unwind.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#define DEPOT_SLOTS0      (1u << 12) /* the hash table's first size (16 KiB) */
#define DEPOT_SLOTS_MAX   (1u << 19) /* and its last: 2 MiB */
#define DEPOT_MAX_IDS     (DEPOT_SLOTS_MAX / 4 * 3)
#define DEPOT_CHUNK_BYTES ((size_t)1 << 20)
#define DEPOT_MAX_CHUNKS  256u

struct record {
    uint64_t hash;
    uint32_t n_frames;
    uint32_t id;
    uintptr_t frames[];
};

/* The hash table: slot -> id (0 empty). */
struct table {
    uint32_t mask; /* slots - 1 */
    _Atomic uint32_t slot[];
};

static _Atomic(struct table *) g_table;
static _Atomic(struct record *) *g_index; /* id -> record */
static char *g_chunk; /* records are bump-allocated in 1 MiB chunks, mapped as needed */
static size_t g_chunk_used;
static unsigned g_n_chunks;
static uint32_t g_next_id = 1;
static atomic_int g_state; /* 0 unmapped, 1 mapped, -1 mapping failed */
static shim_lock g_lock = SHIM_LOCK_INIT;
static __thread int t_capturing __attribute__((tls_model("initial-exec")));

/* Each thread's stacks interned last, by their innermost frame (the program's call site): a
 * program allocates from few call sites, most of them always on the same path, so most
 * captures are a stack this thread interned a moment ago. A hit costs a compare of the frames
 * instead of their hash and a probe of the shared table (cold lines: 10% of a capture).
 * Entries name published records, which never change, so a hit is always the right id. */
#define RECENT_WAYS 64u
static __thread struct {
    uint32_t id[RECENT_WAYS];
} t_recent __attribute__((tls_model("initial-exec")));

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Maps the storage once; called with the lock held. */
static int ensure_mapped(void)
{
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (st)
        return st > 0;
    struct table *t = map(sizeof *t + DEPOT_SLOTS0 * sizeof t->slot[0]);
    g_index = map((DEPOT_MAX_IDS + 1) * sizeof *g_index);
    if (t) {
        t->mask = DEPOT_SLOTS0 - 1;
        atomic_store_explicit(&g_table, t, memory_order_release);
    }
    if (!t || !g_index) {
        atomic_store_explicit(&g_state, -1, memory_order_release);
        return 0;
    }
    atomic_store_explicit(&g_state, 1, memory_order_release);
    return 1;
}

static int same(const struct record *r, uint64_t hash, const uintptr_t *frames, unsigned n)
{
    return r->hash == hash && r->n_frames == n &&
           memcmp(r->frames, frames, n * sizeof *frames) == 0;
}

/* Looks the stack up in t; returns its id or 0, and the first empty slot probed in *empty. */
static uint32_t lookup(const struct table *t, uint64_t hash, const uintptr_t *frames, unsigned n,
                       uint32_t *empty)
{
    for (uint32_t i = (uint32_t)hash & t->mask;; i = (i + 1) & t->mask) {
        uint32_t id = atomic_load_explicit(&t->slot[i], memory_order_acquire);
        if (id == 0) {
            *empty = i;
            return 0;
        }
        const struct record *r = atomic_load_explicit(&g_index[id], memory_order_acquire);
        if (same(r, hash, frames, n))
            return id;
    }
}

/* The table twice as big, every id in it (lock held); the current one when mapping fails.
 * No table is filled beyond three quarters, so every probe ends at an empty slot. */
static struct table *grow(struct table *t)
{
    uint32_t slots = (t->mask + 1) * 2;
    struct table *g = map(sizeof *g + slots * sizeof g->slot[0]);
    if (!g)
        return t;
    g->mask = slots - 1;
    for (uint32_t id = 1; id < g_next_id; id++) {
        const struct record *r = atomic_load_explicit(&g_index[id], memory_order_relaxed);
        uint32_t i = (uint32_t)r->hash & g->mask;
        while (atomic_load_explicit(&g->slot[i], memory_order_relaxed))
            i = (i + 1) & g->mask;
        atomic_store_explicit(&g->slot[i], id, memory_order_relaxed);
    }
    atomic_store_explicit(&g_table, g, memory_order_release);
    return g;
}

uint32_t depot_put(const uintptr_t *frames, unsigned n_frames)
{
    if (n_frames == 0)
        return 0;
    if (n_frames > DEPOT_MAX_FRAMES)
        n_frames = DEPOT_MAX_FRAMES;
    if (atomic_load_explicit(&g_state, memory_order_acquire) < 0)
        return 0;
    uint64_t hash = XXH3_64bits(frames, n_frames * sizeof *frames);
    uint32_t empty, id;
    if (atomic_load_explicit(&g_state, memory_order_acquire) > 0) {
        id = lookup(atomic_load_explicit(&g_table, memory_order_acquire), hash, frames, n_frames,
                    &empty);
        if (id)
            return id;
    }
    shim_lock_take(&g_lock);
    if (!ensure_mapped()) {
        shim_lock_drop(&g_lock);
        return 0;
    }
    /* Again under the lock, in the current table: another thread may have inserted it
     * meanwhile, or grown the table. */
    struct table *t = atomic_load_explicit(&g_table, memory_order_relaxed);
    id = lookup(t, hash, frames, n_frames, &empty);
    if (id)
        goto out;
    size_t bytes = (sizeof(struct record) + n_frames * sizeof *frames + 7) & ~(size_t)7;
    if (g_next_id > DEPOT_MAX_IDS)
        goto out; /* full: id 0, the finding just has no stack */
    if ((uint64_t)g_next_id * 4 > (uint64_t)(t->mask + 1) * 3) {
        struct table *g = t->mask + 1 < DEPOT_SLOTS_MAX ? grow(t) : t;
        if (g == t)
            goto out; /* no room (mmap failed): id 0, as when full */
        lookup(t = g, hash, frames, n_frames, &empty); /* not there: where it goes */
    }
    if (!g_chunk || g_chunk_used + bytes > DEPOT_CHUNK_BYTES) {
        if (g_n_chunks >= DEPOT_MAX_CHUNKS || !(g_chunk = map(DEPOT_CHUNK_BYTES)))
            goto out;
        g_n_chunks++;
        g_chunk_used = 0;
    }
    struct record *r = (struct record *)(g_chunk + g_chunk_used);
    g_chunk_used += bytes;
    r->hash = hash;
    r->n_frames = n_frames;
    r->id = id = g_next_id++;
    memcpy(r->frames, frames, n_frames * sizeof *frames);
    atomic_store_explicit(&g_index[id], r, memory_order_release);
    atomic_store_explicit(&t->slot[empty], id, memory_order_release);
out:
    shim_lock_drop(&g_lock);
    return id;
}

/* The address range of libtlsan.so itself, found once (modules_find never allocates).
 * False when this code is not in its own library (the unit tests link it into the test
 * program, whose frames are all the user's). */
static bool own_range(uintptr_t *lo, uintptr_t *hi)
{
    static _Atomic uintptr_t g_own_lo, g_own_hi;
    uintptr_t h = atomic_load_explicit(&g_own_hi, memory_order_acquire);
    if (!h) {
        const struct shim_module *m = modules_find((uintptr_t)&own_range);
        if (!m || !strstr(m->path, "libtlsan"))
            return false;
        atomic_store_explicit(&g_own_lo, m->base, memory_order_relaxed);
        atomic_store_explicit(&g_own_hi, m->base + m->size_bytes, memory_order_release);
        h = m->base + m->size_bytes;
    }
    *lo = atomic_load_explicit(&g_own_lo, memory_order_relaxed);
    *hi = h;
    return true;
}

/* The first frame of buf[0, n) that is not inside libtlsan.so, at least `skip`: a stack starts
 * where the program called in: frames still inside libtlsan.so (a hook, an adapter's wrapper)
 * say nothing to the user, whatever skip the caller guessed. */
static unsigned first_user_frame(void *const *buf, int n, unsigned skip)
{
    uintptr_t lo, hi;
    if (own_range(&lo, &hi))
        while ((int)skip < n && (uintptr_t)buf[skip] >= lo && (uintptr_t)buf[skip] < hi)
            skip++;
    return skip;
}

int depot_walk_begin(void)
{
    unsigned depth = (unsigned)shim_opts()->stack_depth;
    if (depth == 0 || t_capturing)
        return 0;
    if (depth > DEPOT_MAX_FRAMES)
        depth = DEPOT_MAX_FRAMES;
    t_capturing = 1;
    unwind_setup(); /* done at initialisation; here for the unit tests, which link no init */
    unwind_capture_begin();
    /* The hook's own frame, then the program's depth. */
    return (int)depth + 1;
}

/* depot_put with the thread's recent stacks first. */
static uint32_t put_recent(const uintptr_t *frames, unsigned n)
{
    if (n > DEPOT_MAX_FRAMES)
        n = DEPOT_MAX_FRAMES;
    unsigned way = (unsigned)((frames[0] >> 4) ^ (frames[0] >> 12) ^ n) % RECENT_WAYS;
    uint32_t id = t_recent.id[way];
    if (id) {
        const struct record *r = atomic_load_explicit(&g_index[id], memory_order_acquire);
        if (r->n_frames == n && memcmp(r->frames, frames, n * sizeof *frames) == 0)
            return id;
    }
    id = depot_put(frames, n);
    if (id)
        t_recent.id[way] = id;
    return id;
}

/* The end of a walk: drops the first `skip` frames and then those inside libtlsan.so, interns
 * the rest. */
static uint32_t walk_finish(void **buf, int n, unsigned skip)
{
    unwind_capture_end();
    t_capturing = 0;
    skip = first_user_frame(buf, n, skip);
    if (n <= (int)skip)
        return 0;
    return put_recent((const uintptr_t *)(buf + skip), (unsigned)n - skip);
}

uint32_t depot_walk_end(void **buf, int n)
{
    return walk_finish(buf, n, 0);
}

/* ---- the memo of repeated stacks (x86-64) ----
 *
 * Most captures repeat a stack the thread captured a moment ago: a program allocates from few
 * call sites, each on one path. A hot call site is then recognised without a walk, by reading
 * back the return addresses its stack held when it was walked. An entry is keyed by the hook's
 * stack pointer and return address; it holds the id of the stack walked there, and where each
 * of the stack's further return addresses was stored (found by walking with libunwind's
 * cursor, which gives each frame's stack pointer: on x86-64 a frame's return address is the
 * word below its caller's stack pointer) with its value. A capture with the same key whose
 * words at those places still hold those values has the same frames: the hook's frame sits at
 * the same place, and each frame's place follows from the one below it and its code address,
 * and a frame whose size varies from call to call (alloca, variable-length arrays) has a frame
 * pointer, whose saved value is verified too (memo_walk says which frames are never
 * memoised). Without that, a word left over from an earlier, differently sized call could
 * stand where the return address was and make a false match.
 * The words are read innermost first and the reading stops at the first that differs; they
 * lie within MEMO_SPAN above the hook's frame, where they were the thread's stack when the
 * entry was filled.
 *
 * Cost: a hit reads a few lines of hot stack (about a tenth of a walk); a fill walks with the
 * cursor (microseconds: libunwind masks signals around each frame's lookup), so an entry is
 * filled only once its key has been seen MEMO_FILL_AFTER times, and one whose stacks keep
 * differing (a helper called from many places at the same depth) is emptied and filled again
 * only after exponentially more sightings. A stack through a signal frame is never memoised
 * (memo_walk asks libunwind whether a frame is one: the word below the interrupted stack
 * pointer may hold the interrupted pc). */
#ifdef DEPOT_MEMO
#define MEMO_WAYS_LOG2  4u
#define MEMO_WAYS       (1u << MEMO_WAYS_LOG2)
#define MEMO_FRAMES     18u /* the hook's frame, then stack_depth 16 and one */
#define MEMO_WORDS      32u /* return addresses and saved frame pointers to verify */
#define MEMO_FILL_AFTER 32u
#define MEMO_BACKOFF    8u /* at most MEMO_FILL_AFTER << 8 sightings before a fill */
#define MEMO_CREDIT_MAX 64
#define MEMO_SPAN       (1u << 20)

struct memo {
    uintptr_t sp, ra; /* the key; sp 0: the way is free */
    uint32_t id;      /* the stack's id; 0: not filled */
    uint16_t seen;    /* sightings of the key since the way was taken or emptied */
    int8_t credit;    /* hits raise it, differing stacks lower it; below -16 the entry empties */
    uint8_t backoff;  /* fills that failed or were undone */
    uint8_t n;        /* words to verify */
    uint32_t off[MEMO_WORDS]; /* their offsets above sp */
    uintptr_t val[MEMO_WORDS];
};

/* A thread's memo is a block of its own, not thread-local storage: glibc carves static TLS
 * out of each thread's stack, and a thread of PTHREAD_STACK_MIN (16 KiB) had no room left for
 * the shim's capture once the memo was there (robust.sh small-stack). A thread takes a block
 * after MEMO_TAKE_AFTER captures (a short-lived thread never pays for one) and gives it back
 * at its exit (a thread-specific key's destructor) to a free list that later threads take
 * from. */
#define MEMO_TAKE_AFTER 64u
struct memo_block {
    struct memo way[MEMO_WAYS];
    struct memo_block *next; /* on the free list */
};

static pthread_key_t g_memo_key;
static atomic_int g_memo_on; /* the key exists */
static struct memo_block *g_memo_free;
static shim_lock g_memo_lock = SHIM_LOCK_INIT;
static __thread struct memo_block *t_memo __attribute__((tls_model("initial-exec")));
/* Captures before the block is taken; UINT32_MAX once the thread gave its block back. */
static __thread uint32_t t_memo_wait __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_memo_hits, t_memo_fills __attribute__((tls_model("initial-exec")));

static void memo_give_back(void *p)
{
    struct memo_block *b = p;
    t_memo = NULL;
    t_memo_wait = UINT32_MAX; /* a later destructor's allocations go without */
    memset(b->way, 0, sizeof b->way);
    shim_lock_take(&g_memo_lock);
    b->next = g_memo_free;
    g_memo_free = b;
    shim_lock_drop(&g_memo_lock);
}

bool depot_memo_init(void)
{
    if (atomic_load(&g_memo_on))
        return true;
    /* Only a key whose value glibc keeps in the thread's descriptor: setting one of the keys
     * from 32 on may allocate, from inside a hook. */
    pthread_key_t k;
    if (pthread_key_create(&k, memo_give_back) != 0)
        return false;
    if (k >= 32) {
        pthread_key_delete(k);
        return false;
    }
    g_memo_key = k;
    atomic_store(&g_memo_on, 1);
    return true;
}

/* The calling thread's block, taken from the free list or mapped; NULL while it waits for
 * MEMO_TAKE_AFTER captures, or when there is none. */
static struct memo_block *memo_block(void)
{
    struct memo_block *b = t_memo;
    if (b || t_memo_wait == UINT32_MAX || !atomic_load_explicit(&g_memo_on, memory_order_acquire))
        return b;
    if (++t_memo_wait < MEMO_TAKE_AFTER)
        return NULL;
    shim_lock_take(&g_memo_lock);
    b = g_memo_free;
    if (b)
        g_memo_free = b->next;
    shim_lock_drop(&g_memo_lock);
    if (!b)
        b = map(sizeof *b);
    if (!b || pthread_setspecific(g_memo_key, b) != 0) {
        t_memo_wait = UINT32_MAX;
        return NULL; /* (a mapped block is then kept: at most one a thread) */
    }
    t_memo = b;
    return b;
}

/* The set of two ways a key may be in (its first way; the other is next to it). */
static struct memo *memo_set(struct memo_block *b, uintptr_t sp, uintptr_t ra)
{
    uint64_t h = (ra ^ (sp >> 4)) * 0x9e3779b97f4a7c15ull;
    return &b->way[(h >> (64 - MEMO_WAYS_LOG2 + 1)) * 2];
}

/* What a way is worth keeping: a filled entry by its credit, above any other, an unfilled
 * one by its sightings. */
static int memo_worth(const struct memo *m)
{
    return m->id ? 1024 + m->credit : (int)(m->seen < 1023 ? m->seen : 1023);
}

/* The way holding the key, or NULL. */
static struct memo *memo_way(struct memo_block *b, uintptr_t sp, uintptr_t ra)
{
    struct memo *set = memo_set(b, sp, ra);
    for (unsigned w = 0; w < 2; w++)
        if (set[w].sp == sp && set[w].ra == ra)
            return &set[w];
    return NULL;
}

/* Reads the program's stack words above the hook's frame: not instrumented in the
 * sanitizer builds of the tests, where those words lie in other functions' frames. */
__attribute__((no_sanitize_address)) static bool memo_still_there(const struct memo *m,
                                                                  uintptr_t sp)
{
    for (unsigned k = 0; k < m->n; k++)
        if (*(const volatile uintptr_t *)(sp + m->off[k]) != m->val[k])
            return false;
    return true;
}

uint32_t depot_memo_find(uintptr_t sp, uintptr_t ra)
{
    if (t_capturing)
        return 0;
    struct memo_block *b = memo_block();
    if (!b)
        return 0;
    struct memo *m = memo_way(b, sp, ra);
    if (!m) {
        /* The way of the two with less credit; a hot entry is not given up for one other
         * key. */
        struct memo *set = memo_set(b, sp, ra);
        m = memo_worth(&set[1]) < memo_worth(&set[0]) ? &set[1] : &set[0];
        if (m->id && m->credit > 0) {
            m->credit--;
            return 0;
        }
        if (!m->id && m->seen > 1) {
            m->seen /= 2; /* nor a key on its way to a fill, for one seen once */
            return 0;
        }
        memset(m, 0, sizeof *m);
        m->sp = sp;
        m->ra = ra;
        m->seen = 1;
        return 0;
    }
    uint32_t id = m->id;
    if (!id) {
        if (m->seen < UINT16_MAX)
            m->seen++;
        return 0;
    }
    /* A signal handler's capture on this thread may take the way meanwhile (never during a
     * fill, which is inside the capture, so it never fills a way half): the key read again
     * after the words says whether they were this entry's. */
    bool there = memo_still_there(m, sp);
    atomic_signal_fence(memory_order_seq_cst);
    if (m->sp != sp || m->ra != ra || m->id != id)
        return 0;
    if (!there) {
        m->credit = (int8_t)(m->credit - 4);
        if (m->credit < -16) {
            m->id = 0;
            m->seen = 0;
            m->credit = 0;
            if (m->backoff < MEMO_BACKOFF)
                m->backoff++;
        }
        return 0;
    }
    if (m->credit < MEMO_CREDIT_MAX)
        m->credit++;
    t_memo_hits++;
    return id;
}

/* Appends one word to verify; false when it lies outside the span above the hook's frame. */
static bool memo_add(struct memo *m, uintptr_t sp, uintptr_t at, uintptr_t val)
{
    if (m->n >= MEMO_WORDS || at <= sp || at - sp >= MEMO_SPAN)
        return false;
    m->off[m->n] = (uint32_t)(at - sp);
    m->val[m->n] = val;
    m->n++;
    return true;
}

/* Walks again with libunwind's cursor from here and records, for buf[2] .. buf[n - 1], where
 * each was stored, and for a frame with a frame pointer below the last, where its rbp was
 * saved, with the value (its CFA is rbp + 16, so the frame's place is known once rbp is,
 * whatever its size). False (not memoised) when the walk does not give the same frames, when
 * the stack goes through a signal frame, when a return address is not stored below its
 * caller's stack pointer, when a place lies beyond MEMO_SPAN, or when a frame below the last
 * may vary in size other than that way: one whose rbp points into it but not 16 bytes below its CFA
 * (stack realignment), or whose rbp was not saved above the hook's frame. A frame whose rbp does
 * not point into it has a CFA of its stack pointer plus a constant: the same size at every call
 * from one code address. buf[0] is the hook's own frame, buf[1] the return address ra, stored in
 * the hook's frame. */
static bool memo_walk(void *const *buf, int n, uintptr_t sp, struct memo *m)
{
    unw_context_t uc;
    unw_cursor_t c;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
        return false;
    /* To the hook's caller: the frame whose ip is buf[1], after the one whose sp is the
     * hook's (this function and its caller may be inlined into each other). */
    unw_word_t ip, fsp, rbp, prev_sp = 0;
    for (int k = 0;; k++) {
        if (k > 4 || unw_get_reg(&c, UNW_REG_IP, &ip) != 0 ||
            unw_get_reg(&c, UNW_REG_SP, &fsp) != 0)
            return false;
        if (ip == (unw_word_t)buf[1] && prev_sp == sp)
            break;
        prev_sp = fsp;
        if (unw_step(&c) <= 0)
            return false;
    }
    m->n = 0;
    for (int i = 2; i < n; i++) {
        /* Frame i - 1, the cursor's: its size must follow from what is verified. A signal
         * frame's never does: the interrupted frame's place follows from the interrupted
         * stack pointer, kept in the signal frame and not verified, and the word below it may
         * hold the interrupted pc though that frame is not the one interrupted (a fault right
         * after a call's return, then one inside the callee: the return address the callee
         * was called with is still there, with the signal frame at the same place). */
        unw_word_t below = fsp;
        unw_save_loc_t loc;
        if (unw_is_signal_frame(&c) != 0 || unw_get_reg(&c, UNW_X86_64_RBP, &rbp) != 0 ||
            unw_get_save_loc(&c, UNW_X86_64_RBP, &loc) != 0)
            return false;
        if (unw_step(&c) <= 0 || unw_get_reg(&c, UNW_REG_IP, &ip) != 0 ||
            unw_get_reg(&c, UNW_REG_SP, &fsp) != 0 || ip != (unw_word_t)buf[i])
            return false;
        if (rbp >= below && rbp <= fsp) {
            if (rbp + 16 != fsp || loc.type != UNW_SLT_MEMORY ||
                *(const uintptr_t *)loc.u.addr != (uintptr_t)rbp ||
                !memo_add(m, sp, (uintptr_t)loc.u.addr, (uintptr_t)rbp))
                return false;
        }
        uintptr_t at = (uintptr_t)fsp - sizeof(uintptr_t);
        if (*(const uintptr_t *)at != (uintptr_t)ip || !memo_add(m, sp, at, (uintptr_t)ip))
            return false;
    }
    return true;
}

__attribute__((noinline)) uint32_t depot_walk_end_memo(void **buf, int n, uintptr_t sp,
                                                       uintptr_t ra)
{
    struct memo_block *b = t_memo;
    if (!b)
        return walk_finish(buf, n, 0);
    struct memo *m = memo_way(b, sp, ra);
    /* Due for a fill; a stack that cannot be memoised (too deep, or ra not where the walk
     * found it) counts as a failed fill, so that its key does not keep its way. */
    bool due = m && !m->id && m->seen >= (MEMO_FILL_AFTER << m->backoff);
    bool walked = due && n >= 2 && n <= (int)MEMO_FRAMES && (uintptr_t)buf[1] == ra &&
                  memo_walk(buf, n, sp, m);
    uint32_t id = walk_finish(buf, n, 0);
    if (due) {
        m->seen = 0;
        if (walked && id) {
            atomic_signal_fence(memory_order_seq_cst); /* the words before the id */
            m->id = id;
            m->credit = 0;
            t_memo_fills++;
        } else if (m->backoff < MEMO_BACKOFF) {
            m->backoff++;
        }
    }
    return id;
}

void depot_memo_counts(uint64_t *hits, uint64_t *fills)
{
    *hits = t_memo_hits;
    *fills = t_memo_fills;
}
#else
bool depot_memo_init(void)
{
    return false;
}

void depot_memo_counts(uint64_t *hits, uint64_t *fills)
{
    *hits = 0;
    *fills = 0;
}
#endif

__attribute__((noinline)) uint32_t depot_capture(unsigned skip)
{
    void *buf[DEPOT_WALK_BUF];
    int want = depot_walk_begin();
    if (!want)
        return 0;
    /* Frame 0 of the walk is this function (it is noinline, and stands where the hook's
     * own frame does for depot_walk_begin); the caller's skip on top. */
    unsigned total = (unsigned)want + skip;
    if (total > sizeof buf / sizeof buf[0])
        total = sizeof buf / sizeof buf[0];
    return walk_finish(buf, unw_backtrace(buf, (int)total), skip + 1);
}

unsigned depot_get(uint32_t id, const uintptr_t **frames)
{
    if (id == 0 || id > DEPOT_MAX_IDS || atomic_load_explicit(&g_state, memory_order_acquire) <= 0)
        return 0;
    const struct record *r = atomic_load_explicit(&g_index[id], memory_order_acquire);
    if (!r)
        return 0;
    *frames = r->frames;
    return r->n_frames;
}

void depot_format(struct outbuf *b, uint32_t id, int symbolize)
{
    const uintptr_t *frames;
    unsigned n = depot_get(id, &frames);
    if (n == 0) {
        out_appendf(b, "    (no stack)\n");
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        uintptr_t pc = frames[i];
        out_appendf(b, "    #%u %p", i, (void *)pc);
        /* A return address may be the first byte after a call at the end of a function
         * (noreturn callees): look up the byte before it. */
        uintptr_t look = pc ? pc - 1 : pc;
        Dl_info info;
        if (symbolize && dladdr((void *)look, &info) && info.dli_sname && info.dli_saddr)
            out_appendf(b, " in %s+0x%zx", info.dli_sname,
                        (size_t)(pc - (uintptr_t)info.dli_saddr));
        const struct shim_module *m = modules_find(look);
        if (m)
            out_appendf(b, " (%s+0x%zx)\n", m->path, (size_t)(pc - m->base));
        else
            out_appendf(b, " (<unknown module>)\n");
    }
}

void depot_lock(void)
{
    shim_lock_take(&g_lock);
}

void depot_unlock(void)
{
    shim_lock_drop(&g_lock);
}

void depot_reinit_lock(void)
{
    shim_lock_reset(&g_lock);
}
