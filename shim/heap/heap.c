/* heap.c - the side table of heap blocks, sentinel fills, the quarantine and the checks.
 *
 * Blocks are not given headers: the real allocator's pointer is the program's pointer, and
 * what the shim knows of a block lives in a side table keyed by address. So a pointer the
 * shim never saw (or an interior pointer) is recognised as such instead of being read as a
 * header, and after an internal failure every block can go straight back to the real free.
 *
 * The table is sharded (64 shards by a hash of the address, each an open-addressing table
 * with linear probing and backward-shift deletion, in its own mmap'd array, grown by
 * doubling) so threads freeing at once rarely share a lock. The quarantine is one FIFO ring
 * with a byte budget; blocks leaving it are verified (if they were filled) and handed to the
 * real free. A ring entry carries all the table knew of its block (size, flags, stacks), and
 * the block leaves the table when it enters the ring: the table then holds the live blocks
 * only (about 1,000 on bench/malloc_heavy against 37,000 quarantined ones), small enough to
 * stay in the cache, and an eviction reads the ring entry it has just popped instead of a
 * cold table slot. The rare paths that must know a freed block (a double free, a realloc or
 * malloc_usable_size of a freed pointer, the checks at exit) search the ring.
 *
 * One exception keeps a freed block in the table too ("tabled", F_TABLED in its ring entry):
 * one whose address is the start of the real allocator's block (no left redzone: redzone=0,
 * or a lite block). A free of such an address that bypasses the shim (a library bound to
 * glibc's free) is accepted by glibc, which may then hand the address out again while the
 * block is still in the ring; the table's one entry per address is what keeps the shim from
 * freeing it for real twice then (the newer block replaces the freed entry, and an eviction
 * frees only what the table still holds as freed). A block with a left redzone cannot be
 * handed out again behind the shim's back: glibc reads the sentinel before it as the chunk's
 * size and aborts ("munmap_chunk(): invalid pointer"). For those the eviction still looks the
 * address up in the table and never frees it for real while a block is tracked there.
 *
 * A block may sit a few bytes into what the real allocator returned (the left redzone, or a
 * page for a large block so that its pages can be guarded): the table records that offset,
 * so the real block is always known from the program's pointer and the table. A large freed
 * block (HEAP_GUARD_MIN bytes or more, which glibc would have unmapped) is not filled but
 * made inaccessible while in quarantine, and its pages are given back to the kernel: an
 * access faults as it would natively, and the SIGSEGV handler here reports it.
 *
 * Locks: a shard lock is never held across a call that may allocate, report or take another
 * lock. The quarantine lock is held alone, except when a freed block enters the ring (its
 * entry leaves the table under it) and at exit (heap_verify_quarantine), which take a shard
 * lock and the guard registry's under it; so the order is the quarantine lock, then a shard
 * lock or the guard registry's.
 *
 * One reader goes without a shard lock: heap_peek (malloc_usable_size and realloc in a
 * signal handler that interrupted a locked section) on the thread whose interrupted section
 * holds that shard's lock, which cannot be dropped before the handler returns. The
 * interrupted code stands still meanwhile, so every change to a shard's arrays is made in an
 * order that leaves them readable by address at each instruction (signal fences keep the
 * compiler to it): an entry's meta before its address, a moved entry never half shown, a
 * grown array published before the old one is unmapped (remove_slot, heap_track, grow). */
#include "heap/heap.h"
#include "deepbind.h"
#include "depot.h"
#include "heap/sample.h"
#include "lock.h"
#include "out.h"
#include "runtime_report.h"
#include "shim.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#define SHARDS           64
#define SHARD_CAP0       512u       /* slots; see "the table's layout" below */
#define QUARANTINE_CAP   (1u << 20) /* blocks; the byte budget usually binds first */
#define QUARANTINE_CAP0  (1u << 12) /* the ring starts small and doubles */
#define EVICT_BATCH      16
#define PREFETCH_AHEAD   16    /* evictions between a block's prefetch and its verification */
#define PREFETCH_BYTES   1024u /* of its first bytes */
#define SAMPLE_EDGE      256u
#define SAMPLE_WINDOWS   64u
#define SAMPLE_WINDOW    64u
#define REPORT_BYTES_MAX 16u
#define LEFT_CHECK       16u /* bytes of left redzone filled and checked */
/* The periodic check of live blocks: every LIVE_SCAN_EVERY-th allocation in a shard checks
 * the redzones of its next LIVE_SCAN_SLOTS slots (a cursor goes round the table), so an
 * overflow of a block that stays live is found while the program runs, at a cost bounded
 * per allocation (32 slots of 64 KiB of allocations: well under a nanosecond each). */
#define LIVE_SCAN_EVERY 1024u
#define LIVE_SCAN_SLOTS 32u
#define LIVE_SCAN_BATCH 8u    /* damaged blocks collected under the lock, then reported */
#define GUARD_MAX       1024u /* guarded blocks at once: each may split a mapping in three */
#define GUARD_VA_FACTOR 64u   /* guarded address space held: this many times the budget */
/* What a quarantined block costs beyond its bytes. It was its ring entry, its table slot and
 * stack ids at the table's load of at most a half; the 40-byte ring entry alone is less now,
 * but the figure is kept so that the budget holds as many blocks as before (the window in
 * which a write after free or a double free is caught), and so that the cost of keeping
 * quarantined blocks out of the table was measured at the same window. */
#define QUARANTINE_META 80u

/* The table's layout, chosen by measurement (bench/malloc_heavy with every check off, where
 * the table is most of what the shim costs):
 *  - A slot is 16 bytes: the address, and one word holding the size and the flags. Four share
 *    a cache line, and a free finds in that one line everything its checks read. The stack ids
 *    (read only by reports) live in a parallel cold array, which a shard maps when it first
 *    tracks a block with a stack; with stack_depth=0 it is never touched. Against 32-byte slots
 *    holding everything, at the same slot count, the run is about 3% shorter.
 *  - The tables start sparse, 512 slots a shard (8 KiB, of which the kernel backs only what is
 *    touched), and double beyond half full. Density is what costs, not memory: with 1024 live
 *    blocks, tables a quarter full (64 slots a shard) made the run 1.6x native against 1.3x at
 *    256 slots, though they added only 0.2 probes per operation: the branches of the probe and
 *    shift loops stop predicting. With the home slot almost always the answer, and the slot
 *    after it almost always empty so that a deletion's backward shift stops at once, they do.
 * Backward-shift deletion keeps lookups free of tombstones, so a table never needs rebuilding
 * at the same size. */
struct slot {
    uintptr_t addr; /* 0: empty */
    uint64_t meta;  /* the requested size, and the flags in the top byte */
};

#define META_FLAGS_SHIFT 51
#define META_SIZE        ((UINT64_C(1) << META_FLAGS_SHIFT) - 1)
/* A block's flags (13 bits): HEAP_LITE (heap.h), these, and the left offset's code. */
#define F_FREED  (1u << 1) /* in the quarantine */
#define F_FILLED (1u << 2) /* in the quarantine and filled with the sentinel */
/* Being freed: heap_free_claim marked it, heap_free_finish has not run yet. A free of the
 * block meanwhile (ld.so re-entering its own free through the stack capture's TLS access)
 * must not free it a second time. */
#define F_CLAIMED (1u << 3)
#define F_GUARDED (1u << 4) /* in the quarantine with its pages inaccessible (guard_range) */
/* The offset of the program's pointer into the real block: 0, or 8 << code (16 ... 256 KiB). */
#define F_LEFT_SHIFT 5
#define F_LEFT_MASK  (15u << F_LEFT_SHIFT)
/* Then the family (heap.h's HEAP_FAMILY_MASK, bits 9 and 10); bit 11 is F_TABLED: */
/* In a ring entry only: the block is in the table too (flagged F_FREED), see the top. */
#define F_TABLED (1u << 11)
/* Tracked while g_epoch_flag had this bit: it flips in every forked child, so that the
 * child's check at exit can tell (most of) the blocks it allocated from those it inherited. */
#define F_EPOCH (1u << 12)
_Static_assert(HEAP_SIZE_MAX - 1 <= META_SIZE,
               "every size heap_layout accepts fits below the flags");
_Static_assert((F_LEFT_MASK & HEAP_FAMILY_MASK) == 0 && (HEAP_FAMILY_MASK >> 12) == 0,
               "the family's bits are its own, within the 13 bits of flags");

/* The cold half of a slot: the same index in the shard's stack array. */
struct stacks {
    uint32_t alloc, free;
};

struct shard {
    _Alignas(64) shim_lock lock;
    size_t count, mask; /* mask = slots - 1 */
    struct slot *e;
    struct stacks *st; /* NULL until a block with a stack is tracked here: all stacks are 0 */
    uint64_t allocs, frees;
    size_t scan_next; /* the periodic check's cursor (a slot index) */
};

/* What the table knows of one block, unpacked (for the checks and reports). */
struct block {
    uintptr_t addr;
    size_t size; /* below HEAP_SIZE_MAX (heap_layout refuses more), so it fits below the flags */
    unsigned flags;
    uint32_t alloc_stack, free_stack;
};

/* A quarantined block: what the table knew of it when it was freed, and what it costs. */
struct qent {
    uintptr_t addr;
    uint64_t meta;  /* as a table slot's: the size, and the flags as the free left them */
    uint64_t bytes; /* the memory the block holds back: its resident part and metadata */
    uint64_t va;    /* guarded: the address space it holds inaccessible; else 0 */
    uint32_t alloc_stack, free_stack;
};

/* A guarded block's inaccessible range, for the SIGSEGV handler (lo == 0: a free entry), and
 * what its report names. `opened`: a fault made it accessible again (halt_on_error=0), so
 * its contents are the program's and are not verified; the entry stays until the eviction. */
struct guard {
    uintptr_t lo, hi, addr;
    size_t size;
    uint32_t alloc_stack, free_stack;
    bool opened;
};

static struct shard g_shards[SHARDS];
static struct qent *g_q;
static size_t g_qcap;
static size_t g_qhead, g_qcount;
/* A forked child's check at exit is of what the child itself did, not of the copy of its
 * parent's heap it was given: bash forks for every subshell, each with the parent's
 * quarantine (up to 64 MiB of freed blocks) and every live block's redzones to verify at its
 * exit, 40 ms a child with 200,000 blocks live (30x native on a loop of subshells). Blocks
 * the child frees are pushed after g_qpushed_at_fork; blocks it allocates carry the
 * current F_EPOCH bit (two forks back carries it too: a superset, only slower). What the
 * child does to an inherited block it never frees is not looked at when it exits (it is when
 * the block leaves the child's quarantine); the parent's exit checks all of its own. */
static uint64_t g_qpushed, g_qpushed_at_fork; /* under g_qlock */
static unsigned g_epoch_flag;                 /* F_EPOCH or 0; set in a child, read anywhere */
static bool g_forked_child;
/* Each shard's allocation count at the fork: a shard that has allocated nothing since holds
 * no block of the child's, and its scan at exit (its whole slot array) is left out. */
static uint64_t g_allocs_at_fork[SHARDS];
static uint64_t g_qbytes, g_evictions, g_qva;
static size_t g_qguarded;
static size_t g_qtabled; /* ring entries whose block is in the table too (F_TABLED) */
static shim_lock g_qlock = SHIM_LOCK_INIT;
static uint64_t g_budget, g_va_budget;
static size_t g_rz, g_page;
static int g_fill;
static void (*g_real_free)(void *);
static struct guard *g_guards; /* GUARD_MAX entries, mapped at init */
static size_t g_guards_used;   /* entries [0, used) may be taken */
static shim_lock g_glock = SHIM_LOCK_INIT;
static atomic_int g_segv_installed;
static atomic_bool g_segv_active; /* the shim's handler is the kernel's (set after the call) */
static struct sigaction g_prev_segv;

/* glibc's own name for sigaction: the one the program calls is interpose.c's, which keeps a
 * SIGSEGV action for the program here once the shim's handler is installed. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The sentinel from an even address, one byte longer so that it also starts at an odd one. */
static const unsigned char g_pattern_bytes[9] = {0xFE, 0x7F, 0xFE, 0x7F, 0xFE,
                                                 0x7F, 0xFE, 0x7F, 0xFE};

/* ---- the sentinel ---- */

/* The sentinel's 8 bytes as the word stored at an address of a's parity. Words 8 bytes apart
 * have the same parity, so one pattern serves a whole run of them, whatever the alignment. */
static inline uint64_t sentinel_word(uintptr_t a)
{
    uint64_t w;
    memcpy(&w, g_pattern_bytes + (a & 1), 8);
    return w;
}

/* Both functions below work in unaligned 8-byte words (x86-64 and arm64 take them at full
 * speed) and cover a range's last bytes with one more word ending at its end, overlapping
 * the one before: no loop runs a number of times that depends on the address, so their
 * branches predict. Byte loops over the unaligned head and tail cost malloc_heavy's
 * redzones (16 bytes at an arbitrary alignment, filled at malloc and compared at free) two
 * mispredicted branches per call. Only ranges under 8 bytes go byte by byte. */
void sentinel_fill(void *p, size_t n)
{
    unsigned char *c = p;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            c[i] = sentinel_byte((uintptr_t)(c + i));
        return;
    }
    uint64_t pat = sentinel_word((uintptr_t)c), last = sentinel_word((uintptr_t)c + n - 8);
    for (size_t i = 0; i + 8 <= n; i += 8)
        memcpy(c + i, &pat, 8);
    memcpy(c + n - 8, &last, 8);
}

/* The first byte of [c, c + n) that is not the sentinel, or n (byte by byte: the slow path,
 * taken for a short range or once a word has differed). */
static size_t first_change_bytes(const unsigned char *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (c[i] != sentinel_byte((uintptr_t)(c + i)))
            return i;
    return n;
}

size_t sentinel_find_change(const void *p, size_t n)
{
    const unsigned char *c = p;
    if (n < 8)
        return first_change_bytes(c, n);
    uint64_t pat = sentinel_word((uintptr_t)c);
    size_t i = 0;
    /* A cache line's worth at a time with one branch (freed blocks are almost always
     * intact), then words; the first that differs is searched byte by byte. */
    for (; i + 64 <= n; i += 64) {
        uint64_t v[8], diff = 0;
        memcpy(v, c + i, 64);
        for (unsigned k = 0; k < 8; k++)
            diff |= v[k] ^ pat;
        if (diff)
            return i + first_change_bytes(c + i, 64);
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, c + i, 8);
        if (v != pat)
            return i + first_change_bytes(c + i, 8);
    }
    uint64_t v, last = sentinel_word((uintptr_t)c + n - 8);
    memcpy(&v, c + n - 8, 8);
    if (v != last)
        return i + first_change_bytes(c + i, n - i);
    return n;
}

static size_t find_in(const unsigned char *c, size_t from, size_t len, size_t n)
{
    if (from >= n)
        return n;
    if (len > n - from)
        len = n - from;
    size_t off = sentinel_find_change(c + from, len);
    return off < len ? from + off : n;
}

size_t sentinel_verify(const void *p, size_t n)
{
    const unsigned char *c = p;
    if (n <= HEAP_VERIFY_FULL_BYTES)
        return sentinel_find_change(p, n);
    size_t off = find_in(c, 0, SAMPLE_EDGE, n);
    if (off < n)
        return off;
    size_t span = n - 2 * SAMPLE_EDGE, step = span / SAMPLE_WINDOWS;
    for (size_t i = 0; i < SAMPLE_WINDOWS; i++) {
        off = find_in(c, (SAMPLE_EDGE + i * step) & ~(size_t)7, SAMPLE_WINDOW, n - SAMPLE_EDGE);
        if (off < n - SAMPLE_EDGE)
            return off;
    }
    return find_in(c, n - SAMPLE_EDGE, SAMPLE_EDGE, n);
}

/* ---- the table ---- */

/* The hash of a block address (murmur3's finalizer): the top bits pick the shard, the low
 * bits the home slot. (A locality-keeping variant, page hash + position in the page, measured
 * slower: longer probe runs.) */
static inline uint64_t mix(uintptr_t a)
{
    uint64_t h = (uint64_t)a >> 4;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static inline struct shard *shard_of(uintptr_t a, uint64_t *h)
{
    *h = mix(a);
    return &g_shards[*h >> 58];
}

unsigned heap_shard_index(const void *p)
{
    uint64_t h;
    return (unsigned)(shard_of((uintptr_t)p, &h) - g_shards);
}

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A shard's slot array is mapped with one cache line before it, whose first word is the
 * array's mask: a reader without the lock (peek_slot) takes the array's pointer once and finds
 * the mask that goes with it, where the shard's own mask and pointer are two stores apart. */
#define SLOTS_HEAD 64u

static struct slot *slots_map(size_t cap)
{
    char *p = map(SLOTS_HEAD + cap * sizeof(struct slot));
    if (!p)
        return NULL;
    *(size_t *)(void *)p = cap - 1;
    return (struct slot *)(void *)(p + SLOTS_HEAD);
}

static void slots_unmap(struct slot *e, size_t cap)
{
    munmap((char *)e - SLOTS_HEAD, SLOTS_HEAD + cap * sizeof *e);
}

static size_t slots_mask(const struct slot *e)
{
    return *(const size_t *)(const void *)((const char *)e - SLOTS_HEAD);
}

/* Index of addr in s, or -1. Lock held. */
static long find_slot(const struct shard *s, uintptr_t a, uint64_t h)
{
    for (size_t i = h & s->mask;; i = (i + 1) & s->mask) {
        if (s->e[i].addr == a)
            return (long)i;
        if (s->e[i].addr == 0)
            return -1;
    }
}

static inline size_t left_of(unsigned flags)
{
    unsigned code = (flags & F_LEFT_MASK) >> F_LEFT_SHIFT;
    return code ? (size_t)8 << code : 0;
}

/* The bytes of left redzone checked before a block (the rest of its offset is padding). */
static inline size_t left_check(unsigned flags)
{
    return !(flags & HEAP_LITE) && g_rz && left_of(flags) ? LEFT_CHECK : 0;
}

static struct block block_at(const struct shard *s, size_t i)
{
    uint64_t m = s->e[i].meta;
    struct block b = {s->e[i].addr, (size_t)(m & META_SIZE), (unsigned)(m >> META_FLAGS_SHIFT), 0,
                      0};
    if (s->st) {
        b.alloc_stack = s->st[i].alloc;
        b.free_stack = s->st[i].free;
    }
    return b;
}

/* The stack array of s, mapped on first use (lock held); NULL when it cannot be mapped, and
 * the stack is then dropped: the block stays tracked and checked, its reports show no stack. */
static struct stacks *stacks_of(struct shard *s)
{
    if (!s->st)
        s->st = map((s->mask + 1) * sizeof *s->st);
    return s->st;
}

/* While a slot's entry is replaced by another: an address no block has, which a search goes
 * past (peek_slot, interrupting remove_slot). */
#define SLOT_MOVING ((uintptr_t)1)

static void remove_slot(struct shard *s, size_t i)
{
    size_t mask = s->mask;
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        uintptr_t b = s->e[j].addr;
        if (b == 0)
            break;
        size_t k = mix(b) & mask; /* home of the entry at j */
        /* Move it back into the hole unless its home lies cyclically in (i, j]. For a reader
         * interrupting this thread, the hole first stops answering for what it held (the
         * removed block, or a copy of the entry moved into the hole before, which lies
         * earlier in its run), then takes the meta, then the address. The entry stays whole
         * at j meanwhile, and its new copy at i comes before j in its run. */
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            s->e[i].addr = SLOT_MOVING;
            atomic_signal_fence(memory_order_seq_cst);
            s->e[i].meta = s->e[j].meta;
            atomic_signal_fence(memory_order_seq_cst);
            s->e[i].addr = b;
            if (s->st)
                s->st[i] = s->st[j];
            i = j;
        }
    }
    s->e[i].addr = 0; /* the removed block, or a copy of the entry last moved */
    s->count--;
}

/* Doubles s, with its stack array if it has one; lock held (mmap is a system call, not an
 * allocation). The new array is published whole before the old one is unmapped: a reader
 * interrupting this thread reads one or the other (peek_slot). */
static bool grow(struct shard *s)
{
    size_t cap = 2 * (s->mask + 1), mask = cap - 1;
    struct slot *e = slots_map(cap);
    struct stacks *st = s->st ? map(cap * sizeof *st) : NULL;
    if (!e || (s->st && !st)) {
        if (e)
            slots_unmap(e, cap);
        return false;
    }
    for (size_t i = 0; i <= s->mask; i++) {
        if (!s->e[i].addr)
            continue;
        size_t j = mix(s->e[i].addr) & mask;
        while (e[j].addr)
            j = (j + 1) & mask;
        e[j] = s->e[i];
        if (st)
            st[j] = s->st[i];
    }
    struct slot *old_e = s->e;
    struct stacks *old_st = s->st;
    size_t old_cap = s->mask + 1;
    atomic_signal_fence(memory_order_seq_cst);
    s->e = e;
    s->st = st;
    s->mask = mask;
    atomic_signal_fence(memory_order_seq_cst);
    slots_unmap(old_e, old_cap);
    if (old_st)
        munmap(old_st, old_cap * sizeof *old_st);
    return true;
}

bool heap_init(void)
{
    const struct shim_options *o = shim_opts();
    g_rz = o->redzone > (1u << 20) ? (1u << 20) : (size_t)o->redzone;
    if (g_rz != o->redzone) { /* said once, and shown as used (verbosity=1's options line) */
        out_printf("tlsan: TLSAN_OPTIONS: redzone=%llu is over 1 MiB: using %zu\n",
                   (unsigned long long)o->redzone, g_rz);
        shim_opts_mut()->redzone = g_rz;
    }
    g_budget = o->quarantine_mb > (UINT64_MAX >> 27) ? UINT64_MAX >> 7 : o->quarantine_mb << 20;
    g_va_budget = g_budget * GUARD_VA_FACTOR;
    g_fill = o->fill;
    long page = sysconf(_SC_PAGESIZE);
    g_page = page >= 4096 && page <= (1L << 16) ? (size_t)page : 0; /* 0: no guarding */
    if (!g_guards && g_page)
        g_guards = map(GUARD_MAX * sizeof *g_guards);
    for (unsigned i = 0; i < SHARDS; i++) {
        struct shard *s = &g_shards[i];
        if (s->e)
            continue;
        s->e = slots_map(SHARD_CAP0);
        if (!s->e)
            return false;
        s->mask = SHARD_CAP0 - 1;
    }
    if (!g_q) {
        g_q = map(QUARANTINE_CAP0 * sizeof *g_q);
        g_qcap = QUARANTINE_CAP0;
    }
    return g_q != NULL;
}

void heap_set_real_free(void (*real_free)(void *))
{
    g_real_free = real_free;
}

size_t heap_redzone(void)
{
    return g_rz;
}

/* The left offset for an alignment, as the code of F_LEFT_MASK (0 when none fits). */
static unsigned left_code(size_t left)
{
    unsigned code = 0;
    while (code < 15 && ((size_t)8 << code) < left)
        code++;
    return left && ((size_t)8 << code) == left ? code : 0;
}

bool heap_layout(size_t n, size_t align, unsigned flags, size_t extra, struct heap_layout *l)
{
    *l = (struct heap_layout){0, 0, align > 16 ? align : 0, 0, flags & HEAP_FAMILY_MASK};
    bool pow2 = (align & (align - 1)) == 0;
    if (!(flags & HEAP_ZEROED) && g_page && g_budget && n >= HEAP_GUARD_MIN && pow2 &&
        align <= g_page) {
        /* Page-aligned, so that every page of the block can be guarded once it is freed;
         * the left redzone ends the page before it. (Not for calloc: memalign's block is
         * not known to be zero, and clearing it would make every page of it resident.) */
        l->left = g_page;
        l->align = g_page;
    } else if (g_rz && align <= 16) {
        l->left = LEFT_CHECK;
    } else if (g_rz && pow2 && align <= ((size_t)8 << 15)) {
        l->left = align; /* keeps the block aligned */
    }
    l->code = left_code(l->left);
    if (n >= HEAP_SIZE_MAX || extra > HEAP_SIZE_MAX || n + extra > HEAP_SIZE_MAX - l->left - g_rz) {
        errno = ENOMEM;
        return false;
    }
    l->total = l->left + n + g_rz + extra;
    return true;
}

static void real_free(void *p)
{
    if (g_real_free) {
        shim_real_enter();
        g_real_free(p);
        shim_real_leave();
    }
}

static unsigned live_scan(struct shard *s, size_t slots, int at_exit, int symbolize);

bool heap_track(void *p, size_t size, uint32_t alloc_stack, unsigned flags)
{
    uintptr_t a = (uintptr_t)p;
    flags = (flags & (HEAP_LITE | F_LEFT_MASK | HEAP_FAMILY_MASK)) | g_epoch_flag;
    if (!(flags & HEAP_LITE) && g_rz) {
        sentinel_fill((char *)p + size, g_rz);
        size_t lc = left_check(flags);
        if (lc)
            sentinel_fill((char *)p - lc, lc);
    }
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    if ((s->count + 1) * 2 > s->mask + 1 && !grow(s)) {
        /* Out of address space (ulimit -v): the quarantine may be what fills it, and
         * passing through with it still full would leave a correct program short of the
         * memory it held back. Empty it and try once more. */
        shim_lock_drop(&s->lock);
        bool drained = heap_quarantine_drain();
        shim_lock_take(&s->lock);
        if (!drained || ((s->count + 1) * 2 > s->mask + 1 && !grow(s))) {
            shim_lock_drop(&s->lock);
            shim_fail("heap side table: cannot map more memory");
            return false;
        }
    }
    /* One probe: the address's slot if the table still holds it (a block freed behind the
     * shim's back: the new block replaces it), else the first empty slot. */
    size_t i = h & s->mask;
    while (s->e[i].addr && s->e[i].addr != a)
        i = (i + 1) & s->mask;
    if (!s->e[i].addr)
        s->count++;
    /* The meta before the address, for a reader interrupting this thread (peek_slot). */
    s->e[i].meta = (uint64_t)size | (uint64_t)flags << META_FLAGS_SHIFT;
    atomic_signal_fence(memory_order_seq_cst);
    s->e[i].addr = a;
    if ((alloc_stack || s->st) && stacks_of(s))
        s->st[i] = (struct stacks){alloc_stack, 0};
    s->allocs++;
    bool scan = !(flags & HEAP_LITE) && g_rz && s->allocs % LIVE_SCAN_EVERY == 0;
    shim_lock_drop(&s->lock);
    if (scan)
        live_scan(s, LIVE_SCAN_SLOTS, 0, 0);
    return true;
}

void *heap_track_block(void *real, size_t size, uint32_t alloc_stack, const struct heap_layout *l)
{
    char *p = (char *)real + l->left;
    if (heap_track(p, size, alloc_stack, l->code << F_LEFT_SHIFT | l->family))
        return p;
    return real; /* not tracked: the pass-through frees it as the real allocator's */
}

/* ---- the ring's entries, searched on the rare paths ---- */

static struct block block_of_qent(const struct qent *q)
{
    return (struct block){q->addr, (size_t)(q->meta & META_SIZE),
                          (unsigned)(q->meta >> META_FLAGS_SHIFT), q->alloc_stack, q->free_stack};
}

/* The newest ring entry for a that is not tabled (a tabled one is found in the table), into
 * *out; false when there is none. Quarantine lock held. A linear search, newest first (a
 * double free is most often of a block freed recently): some 10^5 entries at most, so
 * microseconds to a millisecond, on paths that report an error or ask about a freed block. */
static bool ring_find(uintptr_t a, struct block *out)
{
    for (size_t k = g_qcount; k-- > 0;) {
        const struct qent *q = &g_q[(g_qhead + k) % g_qcap];
        if (q->addr == a && !((q->meta >> META_FLAGS_SHIFT) & F_TABLED)) {
            *out = block_of_qent(q);
            return true;
        }
    }
    return false;
}

/* ring_find under the quarantine lock, for a block the table does not hold. Taken with no
 * shard lock held (the order is the quarantine lock, then a shard lock). */
static bool ring_lookup(uintptr_t a, struct block *out)
{
    if (!g_q)
        return false;
    shim_lock_take(&g_qlock);
    bool found = ring_find(a, out);
    shim_lock_drop(&g_qlock);
    return found;
}

int heap_lookup(const void *p, size_t *size)
{
    uintptr_t a = (uintptr_t)p;
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    int r = 0;
    if (i >= 0) {
        uint64_t m = s->e[i].meta;
        r = (m >> META_FLAGS_SHIFT) & F_FREED ? 2 : 1; /* a claimed block is still live */
        if (size)
            *size = (size_t)(m & META_SIZE);
    }
    shim_lock_drop(&s->lock);
    struct block e;
    if (i < 0 && ring_lookup(a, &e)) {
        r = 2;
        if (size)
            *size = e.size;
    }
    return r;
}

/* Removes a's entry if it is a freed (quarantined) block; copies it to *out. Returns false
 * otherwise: when the table holds a live block there instead, the real allocator handed the
 * address out again (the program freed it behind the shim's back) and it must stay. */
static bool take_freed_entry(uintptr_t a, struct block *out)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    bool ok = i >= 0 && (s->e[i].meta >> META_FLAGS_SHIFT) & F_FREED;
    if (ok) {
        *out = block_at(s, (size_t)i);
        remove_slot(s, (size_t)i);
        s->frees++;
    }
    shim_lock_drop(&s->lock);
    return ok;
}

/* For the eviction of a block that is not tabled: true when the table holds nothing at a (the
 * block may be freed for real; counted as freed), false when it holds a block there, which
 * the real allocator can only have handed out again after a free behind the shim's back:
 * that one is live, or the program's own, and must not be freed (the old one is dropped). */
static bool untracked_for_eviction(uintptr_t a)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    bool absent = find_slot(s, a, h) < 0;
    if (absent)
        s->frees++;
    shim_lock_drop(&s->lock);
    return absent;
}

/* ---- reports ---- */

/* The sentinel expected at `at` and the n bytes found there (`found`: a copy, or at itself). */
static void report_bytes_found(struct report *r, const unsigned char *at,
                               const unsigned char *found, size_t n)
{
    char exp[3 * REPORT_BYTES_MAX + 1], got[3 * REPORT_BYTES_MAX + 1];
    struct outbuf e = {exp, 0, sizeof exp}, g = {got, 0, sizeof got};
    if (n > REPORT_BYTES_MAX)
        n = REPORT_BYTES_MAX;
    for (size_t i = 0; i < n; i++) {
        out_appendf(&e, "%s%02x", i ? " " : "", sentinel_byte((uintptr_t)(at + i)));
        out_appendf(&g, "%s%02x", i ? " " : "", found[i]);
    }
    report_line(r, "    expected: %s", exp);
    report_line(r, "    found:    %s", got);
}

static void report_bytes(struct report *r, const unsigned char *at, size_t n)
{
    report_bytes_found(r, at, at, n);
}

static void report_write_after_free(const struct block *e, size_t off, int at_exit, int symbolize)
{
    const unsigned char *p = (const unsigned char *)e->addr;
    struct report *r = report_begin(TLSAN_KIND_HEAP_WRITE_AFTER_FREE, symbolize,
                                    "on address %p at offset %zu of a %zu-byte block at %p",
                                    (const void *)(p + off), off, (size_t)e->size, (const void *)p);
    if (!r)
        return;
    report_line(r, "  the freed block changed while in quarantine (found %s)",
                at_exit ? "at exit" : "when it left the quarantine");
    size_t n = e->size - off < REPORT_BYTES_MAX ? e->size - off : REPORT_BYTES_MAX;
    report_line(r, "  bytes at offset %zu (%zu shown):", off, n);
    report_bytes(r, p + off, n);
    report_stack(r, "allocated here", e->alloc_stack);
    report_stack(r, "freed here", e->free_stack);
    report_end(r, "at offset %zu of a %zu-byte block", off, (size_t)e->size);
}

/* The headline and the SUMMARY of a changed redzone, whoever found it (a free, a realloc, a
 * scan of live blocks): `off` bytes past the end of e, or (under) `off` bytes before its
 * start. */
static const char *underflow_unit(size_t before)
{
    return before == 1 ? "byte" : "bytes";
}

static struct report *redzone_report_begin(const struct block *e, bool under, size_t off,
                                           int symbolize)
{
    const unsigned char *p = (const unsigned char *)e->addr;
    if (under)
        return report_begin(TLSAN_KIND_HEAP_BUFFER_OVERFLOW, symbolize,
                            "on address %p, %zu %s before the start of a %zu-byte block at %p "
                            "(underflow)",
                            (const void *)(p - off), off, underflow_unit(off), (size_t)e->size,
                            (const void *)p);
    return report_begin(TLSAN_KIND_HEAP_BUFFER_OVERFLOW, symbolize,
                        "on address %p, %zu bytes past the end of a %zu-byte block at %p",
                        (const void *)(p + e->size + off), off, (size_t)e->size, (const void *)p);
}

static void redzone_report_end(struct report *r, const struct block *e, bool under, size_t off)
{
    if (under)
        report_end(r, "%zu %s before the start of a %zu-byte block", off, underflow_unit(off),
                   (size_t)e->size);
    else
        report_end(r, "%zu bytes past the end of a %zu-byte block", off, (size_t)e->size);
}

static void report_overflow(const struct block *e, size_t off, uint32_t free_stack,
                            const char *when)
{
    const unsigned char *rz = (const unsigned char *)e->addr + e->size;
    struct report *r = redzone_report_begin(e, false, off, 0);
    if (!r)
        return;
    size_t n = g_rz - off < REPORT_BYTES_MAX ? g_rz - off : REPORT_BYTES_MAX;
    report_line(r, "  the %zu-byte redzone after the block changed (found when it was %s)", g_rz,
                when);
    report_line(r, "  bytes at %zu past the end (%zu shown):", off, n);
    report_bytes(r, rz + off, n);
    report_stack(r, "allocated here", e->alloc_stack);
    report_stack(r, when[0] == 'f' ? "freed here" : "resized here", free_stack);
    redzone_report_end(r, e, false, off);
}

/* A write before the block, into the left redzone: where glibc keeps the chunk's size, so
 * natively the free (or realloc) aborts. `before` counts back from the block's start. */
static void report_underflow(const struct block *e, size_t before, uint32_t free_stack,
                             const char *when)
{
    const unsigned char *p = (const unsigned char *)e->addr;
    struct report *r = redzone_report_begin(e, true, before, 0);
    if (!r)
        return;
    report_line(r, "  the %u-byte redzone before the block changed (found when it was %s)",
                LEFT_CHECK, when);
    report_line(r, "  bytes from %zu before the start (%zu shown):", before, before);
    report_bytes(r, p - before, before);
    report_stack(r, "allocated here", e->alloc_stack);
    report_stack(r, when[0] == 'f' ? "freed here" : "resized here", free_stack);
    redzone_report_end(r, e, true, before);
}

/* After a report of a heap error glibc would have aborted on: abort as glibc does, unless
 * halt_on_error says otherwise (1 exited in report_end already; 0 goes on). */
static void end_as_natively(void)
{
    if (shim_opts()->halt_on_error == SHIM_HALT_NATIVE)
        abort();
}

/* The redzones of a live block (its table copy e): reports what changed, refills it when
 * the block stays in use or in quarantine (`refill`). Returns true when the left one
 * changed (glibc's header: the caller ends as natively once its table work is done). */
static bool check_redzones(const struct block *e, uint32_t stack, const char *when, bool refill)
{
    char *p = (char *)e->addr;
    size_t lc = left_check(e->flags), rz = (e->flags & HEAP_LITE) ? 0 : g_rz;
    bool under = false;
    if (rz) {
        size_t off = sentinel_find_change(p + e->size, rz);
        if (off < rz) {
            report_overflow(e, off, stack, when);
            if (refill)
                sentinel_fill(p + e->size, rz);
        }
    }
    if (lc) {
        size_t off = sentinel_find_change(p - lc, lc);
        if (off < lc) {
            under = true;
            report_underflow(e, lc - off, stack, when);
            if (refill)
                sentinel_fill(p - lc, lc);
        }
    }
    return under;
}

/* The functions of each family, as a report names them. */
static const char *family_alloc_name(unsigned family)
{
    return family == HEAP_FAMILY_NEW         ? "operator new"
           : family == HEAP_FAMILY_NEW_ARRAY ? "operator new []"
                                             : "malloc";
}

static const char *family_free_name(unsigned family)
{
    return family == HEAP_FAMILY_NEW         ? "operator delete"
           : family == HEAP_FAMILY_NEW_ARRAY ? "operator delete []"
                                             : "free";
}

/* A block released by a function of another family than the one that allocated it. The free
 * goes on (natively the pair often works: a trivially destructible new[] is a malloc), but
 * it is undefined behaviour, and with a destructor or another allocator it corrupts. */
static void report_mismatch(const struct block *e, unsigned dealloc, uint32_t free_stack)
{
    unsigned family = e->flags & HEAP_FAMILY_MASK;
    struct report *r = report_begin(
        TLSAN_KIND_ALLOC_DEALLOC_MISMATCH, 0, "(%s vs %s) on address %p (a %zu-byte block)",
        family_alloc_name(family), family_free_name(dealloc), (void *)e->addr, (size_t)e->size);
    if (!r)
        return;
    report_line(r, "  allocated by %s, released by %s; the block is freed all the same",
                family_alloc_name(family), family_free_name(dealloc));
    report_stack(r, "freed here", free_stack);
    report_stack(r, "allocated here", e->alloc_stack);
    report_end(r, "(%s vs %s) of a %zu-byte block", family_alloc_name(family),
               family_free_name(dealloc), (size_t)e->size);
}

/* A redzone of a live block found changed by a scan (periodic, or at exit): what the scan
 * copied under the shard lock, since the block may be freed once the lock is dropped. */
struct damage {
    struct block e;
    size_t off; /* right: bytes past the end; left (under): bytes before the start */
    bool under;
    size_t n; /* bytes copied to found */
    unsigned char found[REPORT_BYTES_MAX];
};

static void report_live_damage(const struct damage *d, int at_exit, int symbolize)
{
    const unsigned char *p = (const unsigned char *)d->e.addr;
    const unsigned char *at = d->under ? p - d->off : p + d->e.size + d->off;
    const char *when = at_exit ? "at exit" : "by a periodic check";
    struct report *r = redzone_report_begin(&d->e, d->under, d->off, symbolize);
    if (!r)
        return;
    report_line(r, "  the %zu-byte redzone %s the block changed (found %s; the block is live)",
                d->under ? (size_t)LEFT_CHECK : g_rz, d->under ? "before" : "after", when);
    report_line(r, "  bytes at %zu %s (%zu shown):", d->off,
                d->under ? "before the start" : "past the end", d->n);
    report_bytes_found(r, at, d->found, d->n);
    report_stack(r, "allocated here", d->e.alloc_stack);
    redzone_report_end(r, &d->e, d->under, d->off);
}

/* The changed redzones of the live block at slot i (lock held), copied to out (room for 2)
 * and refilled, so that its free does not report them again. Returns how many. */
static unsigned live_damage(const struct shard *s, size_t i, bool own_only, struct damage *out)
{
    struct block e = block_at(s, i);
    if (!e.addr || (e.flags & (F_FREED | F_CLAIMED | HEAP_LITE)) || !g_rz)
        return 0;
    if (own_only && (e.flags & F_EPOCH) != g_epoch_flag)
        return 0; /* inherited from the parent, whose own exit checks it */
    unsigned char *p = (unsigned char *)e.addr;
    unsigned k = 0;
    size_t off = sentinel_find_change(p + e.size, g_rz);
    if (off < g_rz) {
        size_t n = g_rz - off < REPORT_BYTES_MAX ? g_rz - off : REPORT_BYTES_MAX;
        out[k] = (struct damage){e, off, false, n, {0}};
        memcpy(out[k].found, p + e.size + off, n);
        sentinel_fill(p + e.size, g_rz);
        k++;
    }
    size_t lc = left_check(e.flags);
    off = lc ? sentinel_find_change(p - lc, lc) : lc;
    if (off < lc) {
        out[k] = (struct damage){e, lc - off, true, lc - off, {0}};
        memcpy(out[k].found, p - (lc - off), lc - off);
        sentinel_fill(p - lc, lc);
        k++;
    }
    return k;
}

/* Checks the redzones of `slots` slots of s from its cursor (all of them: SIZE_MAX), the
 * shard lock held while the blocks are read (none can be freed meanwhile), dropped for the
 * reports. Returns the findings made. */
static unsigned live_scan(struct shard *s, size_t slots, int at_exit, int symbolize)
{
    unsigned found = 0;
    for (size_t done = 0; done < slots;) {
        struct damage d[LIVE_SCAN_BATCH];
        unsigned n = 0;
        shim_lock_take(&s->lock);
        size_t cap = s->mask + 1;
        if (slots > cap)
            slots = cap;
        while (done < slots && n + 2 <= LIVE_SCAN_BATCH) {
            size_t i = s->scan_next++ & s->mask;
            n += live_damage(s, i, at_exit && g_forked_child, d + n);
            done++;
        }
        shim_lock_drop(&s->lock);
        for (unsigned k = 0; k < n; k++)
            report_live_damage(&d[k], at_exit, symbolize);
        found += n;
    }
    return found;
}

unsigned heap_verify_live(int symbolize)
{
    unsigned found = 0;
    for (unsigned i = 0; i < SHARDS && g_rz; i++)
        if (g_shards[i].e && (!g_forked_child || g_shards[i].allocs != g_allocs_at_fork[i]))
            found += live_scan(&g_shards[i], SIZE_MAX, 1, symbolize);
    return found;
}

void heap_report_mismatch(uintptr_t addr, size_t size, unsigned family, uint32_t alloc_stack,
                          unsigned dealloc, uint32_t free_stack)
{
    struct block e = {addr, size, family, alloc_stack, 0};
    report_mismatch(&e, dealloc, free_stack);
}

const char *heap_bad_free_outcome(void)
{
    switch (shim_opts()->halt_on_error) {
    case SHIM_HALT_NATIVE:
        return "the process aborts here, as glibc would (halt_on_error=native)";
    case SHIM_HALT_ALWAYS:
        return "the process exits here with exitcode (halt_on_error=1)";
    default:
        return "this free is ignored (halt_on_error=0)";
    }
}

static void report_double_free(const struct block *e, uint32_t free_stack)
{
    struct report *r = report_begin(TLSAN_KIND_DOUBLE_FREE, 0, "on address %p (a %zu-byte block)",
                                    (void *)e->addr, (size_t)e->size);
    if (!r)
        return;
    report_line(r, "  the block was freed before and is still in quarantine; %s",
                heap_bad_free_outcome());
    report_stack(r, "freed again here", free_stack);
    report_stack(r, "first freed here", e->free_stack);
    report_stack(r, "allocated here", e->alloc_stack);
    report_end(r, "of a %zu-byte block", (size_t)e->size);
}

static void report_invalid_free(const void *p, uint32_t free_stack)
{
    struct report *r =
        report_begin(TLSAN_KIND_INVALID_FREE, 0, "on address %p, which malloc did not return", p);
    if (!r)
        return;
    report_line(r,
                "  not the start of any live heap block (a stack or static address, an "
                "interior pointer, or a block freed long ago); %s",
                heap_bad_free_outcome());
    report_stack(r, "freed here", free_stack);
    report_end(r, "on address %p", p);
}

/* ---- guarded blocks ---- */

/* The pages of a large block that can be made inaccessible: those wholly inside it. */
static bool guard_range(uintptr_t a, size_t size, uintptr_t *lo, uintptr_t *hi)
{
    if (!g_guards || size < HEAP_GUARD_MIN || size > g_va_budget)
        return false;
    *lo = (a + g_page - 1) & ~(uintptr_t)(g_page - 1);
    *hi = (a + size) & ~(uintptr_t)(g_page - 1);
    return *hi > *lo;
}

/* Drops a's registry entry; true when a fault had opened it (struct guard). */
static bool guard_forget(uintptr_t a)
{
    bool opened = false;
    shim_lock_take(&g_glock);
    for (size_t k = 0; k < g_guards_used; k++)
        if (g_guards[k].lo && g_guards[k].addr == a) {
            opened |= g_guards[k].opened;
            g_guards[k].lo = 0;
        }
    while (g_guards_used && !g_guards[g_guards_used - 1].lo)
        g_guards_used--;
    shim_lock_drop(&g_glock);
    return opened;
}

/* Whether a fault opened the guarded block at a (its contents are then not verified). */
static bool guard_opened(uintptr_t a)
{
    bool opened = false;
    shim_lock_take(&g_glock);
    for (size_t k = 0; k < g_guards_used; k++)
        opened |= g_guards[k].lo && g_guards[k].addr == a && g_guards[k].opened;
    shim_lock_drop(&g_glock);
    return opened;
}

static void install_segv_handler(void);

/* Makes [lo, hi) of the freed block e (freed at free_stack) inaccessible and gives its pages
 * back; false when it cannot (no registry entry left, or the kernel refused: the block is
 * then filled as any other). The registry entry comes first, so a fault is never
 * unexplained, and it holds what the fault's report names: the block is in no table. */
static bool guard(const struct block *e, uint32_t free_stack, uintptr_t lo, uintptr_t hi)
{
    uintptr_t a = e->addr;
    shim_lock_take(&g_glock);
    size_t k = 0;
    while (k < g_guards_used && g_guards[k].lo)
        k++;
    bool ok = k < GUARD_MAX;
    if (ok) {
        g_guards[k] = (struct guard){lo, hi, a, e->size, e->alloc_stack, free_stack, false};
        if (k == g_guards_used)
            g_guards_used++;
    }
    shim_lock_drop(&g_glock);
    if (!ok)
        return false;
    install_segv_handler();
    if (mprotect((void *)lo, hi - lo, PROT_NONE) != 0) {
        guard_forget(a);
        return false;
    }
    /* The contents are not needed again: the block is not read before it is freed for real. */
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    return true;
}

/* Makes a guarded block accessible again: 0, or 1 when a fault had opened it already (its
 * contents are not to be verified); -1 when the kernel refuses (the block must then never
 * be reused: it is leaked). */
static int unguard(uintptr_t a, size_t size)
{
    uintptr_t lo, hi;
    if (!guard_range(a, size, &lo, &hi))
        return 0;
    int saved = errno;
    bool ok = mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) == 0;
    errno = saved;
    bool opened = guard_forget(a);
    return !ok ? -1 : opened ? 1 : 0;
}

/* The first changed byte of a freed, filled block (every part of it but a guarded range),
 * or its size. */
static size_t verify_freed(const struct block *e)
{
    uintptr_t a = e->addr, lo, hi;
    if (!(e->flags & F_GUARDED) || !guard_range(a, e->size, &lo, &hi))
        return sentinel_verify((void *)a, e->size);
    size_t off = sentinel_verify((void *)a, lo - a);
    if (off < lo - a)
        return off;
    off = sentinel_verify((void *)hi, a + e->size - hi);
    return off < a + e->size - hi ? hi - a + off : e->size;
}

/* Sets and clears flags of the table's entry for a. */
static void set_flags(uintptr_t a, unsigned set, unsigned clear)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    if (i >= 0) { /* one store: a reader interrupting this thread sees before or after */
        uint64_t m = s->e[i].meta & ~((uint64_t)clear << META_FLAGS_SHIFT);
        s->e[i].meta = m | (uint64_t)set << META_FLAGS_SHIFT;
    }
    shim_lock_drop(&s->lock);
}

void heap_set_family(void *p, enum heap_family family)
{
    set_flags((uintptr_t)p, family, HEAP_FAMILY_MASK & ~(unsigned)family);
}

/* The faulting thread's access to a guarded block: reported, then the fault goes where it
 * would have gone natively (the block unmapped): false, and on_segv chains it to the
 * program's handler or the default action (the page stays inaccessible, so a return faults
 * again). With halt_on_error=0 the block is made accessible again and the access goes on:
 * true. False too when addr is not in a guarded block. */
static bool guard_fault(uintptr_t addr, int is_write)
{
    struct guard g = {0};
    shim_lock_take(&g_glock);
    for (size_t k = 0; k < g_guards_used; k++)
        if (g_guards[k].lo && !g_guards[k].opened && addr >= g_guards[k].lo &&
            addr < g_guards[k].hi) {
            g = g_guards[k];
            break;
        }
    shim_lock_drop(&g_glock);
    if (!g.lo)
        return false;
    struct block e = {g.addr, g.size, 0, g.alloc_stack, g.free_stack};
    bool entered = shim_enter();
    uint32_t here = shim_opts()->stack_depth ? depot_capture(2) : 0;
    size_t off = addr - g.addr;
    struct report *r = report_begin(TLSAN_KIND_HEAP_USE_AFTER_FREE, 0,
                                    "on address %p at offset %zu of a %zu-byte block at %p",
                                    (void *)addr, off, e.size, (void *)g.addr);
    if (r) {
        report_line(r,
                    "  %s of a freed block: its pages are inaccessible while it is in quarantine",
                    is_write < 0 ? "an access"
                    : is_write   ? "a write"
                                 : "a read");
        report_line(r, "  (natively glibc would have unmapped a freed block this large)");
        report_fault_stack(r, is_write > 0 ? "written here" : "accessed here", here);
        report_stack(r, "freed here", e.free_stack);
        report_stack(r, "allocated here", e.alloc_stack);
        report_end(r, "at offset %zu of a %zu-byte block", off, e.size);
    }
    if (entered)
        shim_leave();
    if (shim_opts()->halt_on_error == SHIM_HALT_NATIVE)
        return false; /* the fault goes on as natively: the program's handler, or death */
    /* Going on: accessible again, reading as the sentinel as a filled block would, and
     * not verified later (this access may change it): the entry is marked opened, which the
     * eviction and the check at exit ask (the block may not be in the ring yet, its free
     * still filling the rest, so its ring entry cannot be told). */
    mprotect((void *)g.lo, g.hi - g.lo, PROT_READ | PROT_WRITE);
    sentinel_fill((void *)g.lo, g.hi - g.lo);
    shim_lock_take(&g_glock);
    for (size_t k = 0; k < g_guards_used; k++)
        if (g_guards[k].lo && g_guards[k].addr == g.addr)
            g_guards[k].opened = true;
    shim_lock_drop(&g_glock);
    return true;
}

/* Whatever the program had for SIGSEGV when the handler was installed, called as the kernel
 * would have called it: with its sa_mask (and SIGSEGV unless SA_NODEFER) blocked, and, for
 * SA_RESETHAND, the program's action reset to SIG_DFL first, so that a crash handler that returns
 * (to fault again and die) does die instead of being called for ever. */
static void chain_segv(int sig, siginfo_t *si, void *uc)
{
    struct sigaction prev = g_prev_segv;
    bool handler = (prev.sa_flags & SA_SIGINFO)
                       ? prev.sa_sigaction != NULL
                       : prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
    if (handler) {
        /* Only the program's action goes back to SIG_DFL: the shim's handler stays the
         * kernel's, so that a handler that installs itself again (a sigaction the shim
         * keeps for the program) is called at the next fault, as natively. */
        if (prev.sa_flags & SA_RESETHAND) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            g_prev_segv = dfl;
        }
        /* This handler runs with SIGSEGV blocked (the kernel restores the program's mask
         * when it returns; a siglongjmp out of the program's handler restores its own). */
        pthread_sigmask(SIG_BLOCK, &prev.sa_mask, NULL);
        if ((prev.sa_flags & SA_NODEFER) && !sigismember(&prev.sa_mask, sig)) {
            sigset_t self;
            sigemptyset(&self);
            sigaddset(&self, sig);
            pthread_sigmask(SIG_UNBLOCK, &self, NULL);
        }
        if (prev.sa_flags & SA_SIGINFO)
            prev.sa_sigaction(sig, si, uc);
        else
            prev.sa_handler(sig);
        return;
    }
    if (prev.sa_handler == SIG_IGN && si->si_code <= 0)
        return; /* sent, and ignored (a fault cannot be ignored) */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    __sigaction(SIGSEGV, &dfl, NULL);
    if (si->si_code <= 0)
        raise(sig); /* a fault repeats on return, a sent signal is sent again */
}

/* A fill of a freed large block that may fault (fill_tolerating_faults): the range being
 * written, and where to go back to when a page of it is not writable. */
static __thread sigjmp_buf *t_fill_escape __attribute__((tls_model("initial-exec")));
static __thread uintptr_t t_fill_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t t_fill_hi __attribute__((tls_model("initial-exec")));

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    uintptr_t fault = (uintptr_t)si->si_addr;
    if (t_fill_escape && fault >= t_fill_lo && fault < t_fill_hi)
        siglongjmp(*t_fill_escape, 1);
    int saved = errno;
    int is_write = -1;
#if defined(__x86_64__) && defined(REG_ERR)
    if (uc)
        is_write = (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    /* A fault inside the shim's own locked sections is not the program's access. */
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (!(si->si_code > 0 && !shim_t_locks &&
          (sample_fault(addr, is_write) || guard_fault(addr, is_write))))
        chain_segv(sig, si, uc);
    errno = saved;
}

/* Installed when the first block is guarded or sampled. The program's earlier handler is
 * chained to, and so is one it installs later (heap_segv_program_action). */
void heap_segv_install(void)
{
    install_segv_handler();
}

static void install_segv_handler(void)
{
    if (atomic_exchange(&g_segv_installed, 1))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    int saved = errno;
    __sigaction(SIGSEGV, &sa, &g_prev_segv);
    errno = saved;
    atomic_store(&g_segv_active, true);
}

/* Set by the kernel in the action glibc's sigaction returns (its restorer), missing from its
 * headers; an action kept here for the program is given it back as the kernel would. */
#define KERNEL_SA_RESTORER 0x04000000

bool heap_segv_program_action(const struct sigaction *act, struct sigaction *old)
{
    if (!atomic_load(&g_segv_active))
        return false;
    struct sigaction prev = g_prev_segv;
    if (act) {
        struct sigaction set = *act, kernel;
        int saved = errno;
        if (__sigaction(SIGSEGV, NULL, &kernel) == 0) {
            set.sa_flags |= kernel.sa_flags & KERNEL_SA_RESTORER;
            set.sa_restorer = kernel.sa_restorer;
        }
        errno = saved;
        g_prev_segv = set;
    }
    if (old)
        *old = prev;
    return true;
}

/* ---- free and the quarantine ---- */

/* What a freed block holds back while in quarantine: the real block as glibc lays it out
 * (8 bytes of header, rounded to 16, 32 at least) less what is guarded (its pages given
 * back), and the shim's own records of it. */
static uint64_t quarantine_cost(const struct block *e, uint64_t guarded)
{
    size_t rz = (e->flags & HEAP_LITE) ? 0 : g_rz;
    uint64_t chunk = ((uint64_t)left_of(e->flags) + e->size + rz + 8 + 15) & ~(uint64_t)15;
    if (chunk < 32)
        chunk = 32;
    return chunk - guarded + QUARANTINE_META;
}

/* Under a finite RLIMIT_AS (ulimit -v) the address space a guarded block holds is what the
 * program runs short of: natively glibc unmapped the block, and the program's own mmap (a
 * file, a thread stack) must not fail for the quarantine's sake. Such a block then costs
 * its whole size against the byte budget. (Read at each large free: the program may set
 * the limit at any time.) */
static bool address_space_limited(void)
{
    struct rlimit r;
    int saved = errno;
    bool limited = getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
    errno = saved;
    return limited;
}

/* A block leaving the quarantine: verify it, forget it, free it for real. A tabled block is
 * known by its table entry (which a block tracked at its address since may have taken over:
 * take_freed_entry), any other by its ring entry. */
static void evict(const struct qent *q)
{
    uintptr_t a = q->addr;
    struct block e;
    if ((q->meta >> META_FLAGS_SHIFT) & F_TABLED) {
        if (!take_freed_entry(a, &e))
            return;
    } else {
        if (!untracked_for_eviction(a))
            return;
        e = block_of_qent(q);
    }
    int opened = (e.flags & F_GUARDED) ? unguard(a, e.size) : 0;
    if (opened < 0)
        return;
    if ((e.flags & F_FILLED) && !opened) {
        size_t off = verify_freed(&e);
        if (off < e.size)
            report_write_after_free(&e, off, 0, 0);
    }
    real_free((char *)a - left_of(e.flags));
}

/* Doubles the ring (quarantine lock held), unwrapping it; false at the cap or when mmap
 * fails (the oldest block is then evicted to make room). */
static bool grow_ring(void)
{
    if (g_qcap >= QUARANTINE_CAP)
        return false;
    struct qent *q = map(2 * g_qcap * sizeof *q);
    if (!q)
        return false;
    for (size_t k = 0; k < g_qcount; k++)
        q[k] = g_q[(g_qhead + k) % g_qcap];
    munmap(g_q, g_qcap * sizeof *g_q);
    g_q = q;
    g_qhead = 0;
    g_qcap *= 2;
    return true;
}

/* Fetches the home slot of a's table entry (and, for a tabled block, of its stacks) into the
 * cache ahead of its eviction, which looks a up; the table of live blocks is small, but the
 * program's writes to its blocks push it out of the cache. Without the shard lock, so the
 * fields are read once, relaxed: a value a growing shard changes meanwhile only makes the
 * prefetch useless (a prefetch never faults). */
static void prefetch_slot(uintptr_t a, bool tabled)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    size_t i = h & __atomic_load_n(&s->mask, __ATOMIC_RELAXED);
    const struct slot *e = __atomic_load_n(&s->e, __ATOMIC_RELAXED);
    const struct stacks *st = __atomic_load_n(&s->st, __ATOMIC_RELAXED);
    if (e)
        __builtin_prefetch(&e[i]);
    if (st && tabled)
        __builtin_prefetch(&st[i]);
}

/* Takes the oldest block off the ring (quarantine lock held, ring not empty). */
static struct qent pop_oldest(void)
{
    struct qent q = g_q[g_qhead];
    /* The block evicted PREFETCH_AHEAD evictions from now was filled long ago and has left
     * the cache: its first lines are fetched now, so that its verification does not wait
     * for memory (the verification was a quarter of malloc_heavy's time under the shim). */
    if (g_qcount > PREFETCH_AHEAD) {
        const struct qent *ahead = &g_q[(g_qhead + PREFETCH_AHEAD) % g_qcap];
        const char *at = (const char *)ahead->addr;
        for (uint64_t k = 0; k < ahead->bytes && k < PREFETCH_BYTES; k += 64)
            __builtin_prefetch(at + k);
        prefetch_slot(ahead->addr, (ahead->meta >> META_FLAGS_SHIFT) & F_TABLED);
    }
    g_qbytes -= q.bytes;
    if (q.va) {
        g_qva -= q.va;
        g_qguarded--;
    }
    if ((q.meta >> META_FLAGS_SHIFT) & F_TABLED)
        g_qtabled--;
    g_qhead = (g_qhead + 1) % g_qcap;
    g_qcount--;
    g_evictions++;
    return q;
}

static bool over_budget(void)
{
    return g_qbytes > g_budget || g_qva > g_va_budget || g_qguarded > GUARD_MAX;
}

/* The freed block's entry leaves the table once it is in the ring (unless tabled), both under
 * the quarantine lock, so that a search (the table, then the ring under that lock) finds it in
 * one or the other at every moment: a second free of it is a double free, never unknown. It
 * is removed only if still the freed block (a block tracked at its address since, after a
 * free behind the shim's back, stays; the eviction then leaves that one alone). */
static void leave_table(uintptr_t a)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    if (i >= 0 && (s->e[i].meta >> META_FLAGS_SHIFT) & F_FREED)
        remove_slot(s, (size_t)i);
    shim_lock_drop(&s->lock);
}

static void quarantine(const struct qent *in)
{
    struct qent victims[EVICT_BATCH];
    size_t n;
    int pushed = 0;
    do {
        n = 0;
        shim_lock_take(&g_qlock);
        if (!pushed) {
            if (g_qcount == g_qcap && !grow_ring()) {
                victims[n++] = pop_oldest();
            }
            g_q[(g_qhead + g_qcount) % g_qcap] = *in;
            g_qcount++;
            g_qpushed++;
            g_qbytes += in->bytes;
            if (in->va) {
                g_qva += in->va;
                g_qguarded++;
            }
            if ((in->meta >> META_FLAGS_SHIFT) & F_TABLED)
                g_qtabled++;
            else
                leave_table(in->addr);
            pushed = 1;
        }
        while (over_budget() && g_qcount && n < EVICT_BATCH) {
            victims[n++] = pop_oldest();
        }
        shim_lock_drop(&g_qlock);
        for (size_t i = 0; i < n; i++)
            evict(&victims[i]);
    } while (n == EVICT_BATCH);
}

bool heap_quarantine_drain(void)
{
    bool any = sample_give_back(); /* the pool's unused pages too */
    for (;;) {
        struct qent victims[EVICT_BATCH];
        size_t n = 0;
        shim_lock_take(&g_qlock);
        while (g_qcount && n < EVICT_BATCH) {
            victims[n++] = pop_oldest();
        }
        shim_lock_drop(&g_qlock);
        for (size_t i = 0; i < n; i++)
            evict(&victims[i]);
        any |= n > 0;
        if (n < EVICT_BATCH)
            return any;
    }
}

/* Forgets the live (not freed, not claimed) block at a; its real block, or NULL. */
static void *forget_live(uintptr_t a)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    void *real = NULL;
    if (i >= 0 && !((s->e[i].meta >> META_FLAGS_SHIFT) & (F_FREED | F_CLAIMED))) {
        real = (char *)a - left_of((unsigned)(s->e[i].meta >> META_FLAGS_SHIFT));
        remove_slot(s, (size_t)i);
        s->frees++;
    }
    shim_lock_drop(&s->lock);
    return real;
}

/* The block a free on this thread is capturing its stack for (heap_freeing): a lite free of
 * it meanwhile is that free re-entered, and leaves it alone. */
static __thread const void *t_freeing __attribute__((tls_model("initial-exec")));

void heap_freeing(const void *p)
{
    t_freeing = p;
}

/* The lite (re-entered) free: no report can be made here. Forgets a live block and frees it;
 * leaves anything else alone: a pointer not tracked is not passed to the real free, and a
 * block being freed (claimed) by an outer free on this thread is that same free re-entered
 * (ld.so's _dl_update_slotinfo frees a slot, the outer free's stack capture reaches
 * __tls_get_addr, which runs _dl_update_slotinfo again and frees the same slot): the outer
 * free finishes it. */
static void free_lite(void *p)
{
    if (p == t_freeing)
        return;
    void *real = forget_live((uintptr_t)p);
    if (real)
        real_free(real);
}

/* What is known of the block e (the table's copy, or its ring entry's), into c. */
static void claim_copy(const struct block *e, struct heap_claim *c)
{
    c->size = e->size;
    c->left = left_of(e->flags);
    c->alloc_stack = e->alloc_stack;
    c->free_stack = e->free_stack;
    c->family = (enum heap_family)(e->flags & HEAP_FAMILY_MASK);
}

/* For a pointer the table does not hold: in the ring (HEAP_CLAIM_FREED, its entry's stacks
 * for the report) or unknown. No lock held. */
static void claim_untracked(uintptr_t a, struct heap_claim *c)
{
    struct block e = {0}; /* filled when ring_lookup finds it; zeroed for gcc -O3's warning */
    c->state = HEAP_CLAIM_UNKNOWN;
    /* glibc's own block (a library opened with RTLD_DEEPBIND), which heap_free_finish frees,
     * is told first, without a search: a quarantined block's address lies inside a chunk
     * glibc still holds (after its left redzone), so it is never one. */
    if (deepbind_seen() && deepbind_glibc_block((const void *)a))
        return;
    if (ring_lookup(a, &e)) {
        claim_copy(&e, c);
        c->state = HEAP_CLAIM_FREED;
    }
}

/* What the table knows of the block at slot i of s (lock held), into c; a live block is
 * claimed (F_CLAIMED) for the caller's free. */
static void claim_locked(struct shard *s, size_t i, struct heap_claim *c)
{
    struct block e = block_at(s, i);
    claim_copy(&e, c);
    if (e.flags & F_FREED) {
        c->state = HEAP_CLAIM_FREED;
    } else if (e.flags & F_CLAIMED) {
        c->state = HEAP_CLAIM_BUSY;
    } else {
        c->state = HEAP_CLAIM_LIVE;
        s->e[i].meta |= (uint64_t)F_CLAIMED << META_FLAGS_SHIFT;
    }
}

void heap_free_claim(void *p, struct heap_claim *c)
{
    uintptr_t a = (uintptr_t)p;
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    memset(c, 0, sizeof *c);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    if (i >= 0)
        claim_locked(s, (size_t)i, c);
    shim_lock_drop(&s->lock);
    if (i < 0)
        claim_untracked(a, c);
}

void heap_free_unclaim(void *p)
{
    set_flags((uintptr_t)p, 0, F_CLAIMED);
}

/* Fills [p, p + n) of a freed block with the sentinel, or returns false when a page of it is
 * not writable: the program made it read-only or inaccessible (mprotect) before freeing it,
 * which natively is harmless (glibc unmaps a large block, and writes only the header before a
 * small one and, unless it joins the top chunk, its first bytes). The SIGSEGV handler jumps
 * back here. The signal mask is not saved (that would cost a system call per free): the
 * handler ran with SIGSEGV added to it, which was not blocked before (the kernel kills a
 * thread that faults with SIGSEGV blocked), so unblocking it restores the mask. A fill in a
 * signal handler that interrupted this one keeps the outer fill's escape. */
static bool fill_tolerating_faults(void *p, size_t n)
{
    if (!n)
        return true;
    install_segv_handler();
    sigjmp_buf escape, *outer = t_fill_escape;
    uintptr_t outer_lo = t_fill_lo, outer_hi = t_fill_hi;
    bool filled = true;
    t_fill_escape = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    if (sigsetjmp(escape, 0)) {
        sigset_t segv;
        sigemptyset(&segv);
        sigaddset(&segv, SIGSEGV);
        pthread_sigmask(SIG_UNBLOCK, &segv, NULL);
        filled = false;
    } else {
        t_fill_lo = (uintptr_t)p;
        t_fill_hi = (uintptr_t)p + n;
        atomic_signal_fence(memory_order_seq_cst); /* the range before the escape is armed */
        t_fill_escape = &escape;
        sentinel_fill(p, n);
    }
    t_fill_escape = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    t_fill_lo = outer_lo;
    t_fill_hi = outer_hi;
    atomic_signal_fence(memory_order_seq_cst);
    t_fill_escape = outer;
    return filled;
}

/* Whether [a, a + n) holds the start of a page. Only such a block can have a page the program
 * protected (mprotect takes whole pages) while its free is harmless natively: otherwise its
 * first bytes share a page with its header, which glibc's free writes (or its first bytes). */
static bool holds_page_start(uintptr_t a, size_t n)
{
    return n && (!g_page || ((a + g_page - 1) & ~(g_page - 1)) - a < n);
}

/* What the locked part of a free decided for a live block, for the rest done unlocked. */
struct retired {
    struct block e; /* the table's copy, before the free */
    bool keep, guarded, tabled;
    uintptr_t lo, hi; /* the guarded range */
    uint64_t bytes;   /* its quarantine cost */
};

/* The table part of freeing the live block at slot i of s (lock held): flagged freed (and
 * filled, guarded) when it goes to the quarantine, else removed. */
static void retire_locked(struct shard *s, size_t i, uint32_t free_stack, struct retired *r)
{
    struct block e = block_at(s, i);
    uintptr_t a = e.addr;
    r->e = e;
    r->lo = r->hi = 0;
    r->guarded = !(e.flags & HEAP_LITE) && guard_range(a, e.size, &r->lo, &r->hi);
    r->bytes = quarantine_cost(&e, r->guarded && !address_space_limited() ? r->hi - r->lo : 0);
    r->keep = g_budget && r->bytes <= g_budget;
    /* No left redzone before the block (its address is the real block's start): it stays in
     * the table while quarantined (see the top). */
    r->tabled = !left_check(e.flags);
    if (r->keep) {
        /* Flagged freed in the table until the ring holds it (quarantine()). */
        uint64_t flags = (e.flags & ~F_CLAIMED) | F_FREED | (g_fill ? F_FILLED : 0) |
                         (r->guarded ? F_GUARDED : 0);
        s->e[i].meta = (s->e[i].meta & META_SIZE) | flags << META_FLAGS_SHIFT;
        if ((free_stack || s->st) && stacks_of(s))
            s->st[i].free = free_stack;
    } else {
        remove_slot(s, i);
        s->frees++;
    }
}

/* The rest of a free once the table says so (no lock): the redzones checked, then the block
 * freed for real, or guarded, filled and quarantined. */
static void retire_unlocked(void *p, struct retired *r, uint32_t free_stack)
{
    uintptr_t a = (uintptr_t)p;
    const struct block *e = &r->e;
    if (check_redzones(e, free_stack, "freed", r->keep))
        end_as_natively(); /* glibc: "free(): invalid size" (its header was overwritten) */
    if (!r->keep) {
        real_free((char *)p - left_of(e->flags));
        return;
    }
    bool guarded = r->guarded;
    uint64_t bytes = r->bytes;
    if (guarded && !guard(e, free_stack, r->lo, r->hi)) {
        guarded = false;
        set_flags(a, 0, F_GUARDED);
        bytes = quarantine_cost(e, 0);
    }
    bool filled = true;
    if (g_fill && guarded) {
        filled = fill_tolerating_faults(p, r->lo - a) &&
                 fill_tolerating_faults((void *)r->hi, a + e->size - r->hi);
    } else if (g_fill && holds_page_start(a, e->size)) {
        filled = fill_tolerating_faults(p, e->size);
    } else if (g_fill) {
        sentinel_fill(p, e->size);
    }
    if (!filled)
        set_flags(a, 0, F_FILLED); /* not verified at its eviction: its bytes are its own */
    unsigned flags = (e->flags & ~F_CLAIMED) | F_FREED | (g_fill && filled ? F_FILLED : 0) |
                     (guarded ? F_GUARDED : 0) | (r->tabled ? F_TABLED : 0);
    struct qent q = {a,
                     (uint64_t)e->size | (uint64_t)flags << META_FLAGS_SHIFT,
                     bytes,
                     guarded ? r->hi - r->lo : 0,
                     e->alloc_stack,
                     free_stack};
    quarantine(&q);
}

void heap_free_finish(void *p, const struct heap_claim *c, uint32_t free_stack)
{
    uintptr_t a = (uintptr_t)p;
    if (c->state == HEAP_CLAIM_UNKNOWN && deepbind_seen() && deepbind_glibc_block(p)) {
        real_free(p); /* glibc's own block, from a library opened with RTLD_DEEPBIND */
        return;
    }
    if (c->state == HEAP_CLAIM_UNKNOWN) {
        report_invalid_free(p, free_stack);
        end_as_natively(); /* glibc: "free(): invalid pointer" */
        return;
    }
    if (c->state != HEAP_CLAIM_LIVE) {
        /* Freed before, or being freed by another thread right now (a race that is a double
         * free all the same; its first free has no stack yet). */
        struct block e = {a, c->size, F_FREED, c->alloc_stack, c->free_stack};
        report_double_free(&e, free_stack);
        end_as_natively(); /* glibc: "free(): double free detected" */
        return;
    }
    if (c->dealloc != c->family) {
        struct block m = {a, c->size, c->family, c->alloc_stack, 0};
        report_mismatch(&m, c->dealloc, free_stack);
    }
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    /* Still there: a claimed block is removed by nobody else. */
    long i = find_slot(s, a, h);
    if (i < 0) {
        shim_lock_drop(&s->lock);
        return;
    }
    struct retired r;
    retire_locked(s, (size_t)i, free_stack, &r);
    shim_lock_drop(&s->lock);
    retire_unlocked(p, &r, free_stack);
}

void heap_free_once(void *p, unsigned dealloc, uint32_t free_stack)
{
    uintptr_t a = (uintptr_t)p;
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    struct heap_claim c;
    memset(&c, 0, sizeof c);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    if (i >= 0) {
        uint64_t m = s->e[i].meta;
        unsigned flags = (unsigned)(m >> META_FLAGS_SHIFT);
        if (!(flags & (F_FREED | F_CLAIMED)) && (flags & HEAP_FAMILY_MASK) == dealloc) {
            /* The common case: a live block freed by its own family, in this one visit. */
            struct retired r;
            retire_locked(s, (size_t)i, free_stack, &r);
            shim_lock_drop(&s->lock);
            retire_unlocked(p, &r, free_stack);
            return;
        }
        /* A mismatch is reported before the block is freed, as heap_free_finish does. */
        claim_locked(s, (size_t)i, &c);
    }
    shim_lock_drop(&s->lock);
    if (i < 0)
        claim_untracked(a, &c);
    c.dealloc = (enum heap_family)dealloc;
    heap_free_finish(p, &c, free_stack);
}

void heap_free(void *p, uint32_t free_stack, int lite)
{
    if (lite) {
        free_lite(p);
        return;
    }
    heap_free_once(p, HEAP_FAMILY_MALLOC, free_stack);
}

bool heap_free_unclaimed(void *p)
{
    /* One locked lookup instead of claim + finish: with no stack to capture in between,
     * nothing can re-enter a free of this block, and the hot path keeps one table visit.
     * Only the common case is taken here (a live block freed straight away, no redzone, no
     * quarantine); anything else goes the claim + finish way for its reports. */
    if (g_rz || g_budget)
        return false;
    void *real = forget_live((uintptr_t)p);
    if (real)
        real_free(real);
    return real != NULL;
}

bool heap_resize(void *p, const struct heap_claim *c, size_t n, size_t usable, uint32_t stack)
{
    uintptr_t a = (uintptr_t)p;
    /* Room in the real block for n bytes and the redzone; a block shrunk to less than half
     * (of more than a page) moves, so that the memory goes back. */
    if (c->state != HEAP_CLAIM_LIVE || usable < c->left + g_rz || n > usable - c->left - g_rz ||
        (n < c->size / 2 && c->size > 4096))
        return false;
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    shim_lock_take(&s->lock);
    long i = find_slot(s, a, h);
    struct block e = {0};
    if (i >= 0) {
        /* The new size, still claimed: a scan of live redzones (another thread's periodic
         * one, or the check at exit) skips the block until its redzone is at the new end.
         * Published unclaimed here, the scan once read the program's bytes past a shrunk
         * block as a damaged redzone (a false heap-buffer-overflow). */
        e = block_at(s, (size_t)i);
        s->e[i].meta = (uint64_t)n | (uint64_t)(e.flags | F_CLAIMED) << META_FLAGS_SHIFT;
        if ((stack || s->st) && stacks_of(s))
            s->st[i].alloc = stack;
    }
    shim_lock_drop(&s->lock);
    if (i < 0)
        return false;
    /* The checks a free would make, then the redzone moves to the new end. */
    bool under = check_redzones(&e, stack, "resized", true);
    if (!(e.flags & HEAP_LITE) && g_rz)
        sentinel_fill((char *)p + n, g_rz);
    shim_lock_take(&s->lock);
    i = find_slot(s, a, h); /* the slot may have moved meanwhile (a removal's shift) */
    if (i >= 0)
        s->e[i].meta &= ~((uint64_t)F_CLAIMED << META_FLAGS_SHIFT);
    shim_lock_drop(&s->lock);
    if (under)
        end_as_natively(); /* glibc: "realloc(): invalid size" */
    return true;
}

/* Takes l if it is free, without waiting: false when it is held (maybe by this thread, which
 * a signal handler interrupted inside the section). A compare-and-swap, which leaves the
 * holder's token in place when it fails. */
static bool lock_try(shim_lock *l)
{
    uintptr_t free_word = 0;
    shim_section_enter(); /* before the lock is held, as in shim_lock_take */
    if (!atomic_compare_exchange_strong_explicit(&l->held, &free_word, shim_lock_token(),
                                                 memory_order_acquire, memory_order_relaxed)) {
        shim_section_leave();
        return false;
    }
    return true;
}

/* Set from before the first lock heap_lock_all takes (a fork, shim.c) until heap_unlock_all
 * has dropped them all: the forking thread holds shard locks meanwhile and waits for others,
 * maybe for one held by a thread whose signal handler would be waiting in peek_table. */
static atomic_bool g_locking_all;
/* A signal handler waiting in peek_table for another thread's shard lock while its own thread
 * holds a lock: one at a time, so that two such handlers never wait for each other's thread. */
static atomic_bool g_peek_waiting;

/* The table's answer for a (as peek_table's) in one search that takes the array's pointer
 * once and its mask from the array: right under the lock, and without it on the thread whose
 * interrupted section holds the lock (see the top). */
static int peek_slot(const struct shard *s, uintptr_t a, uint64_t h, size_t *size, size_t *left)
{
    const struct slot *e = s->e;
    if (!e)
        return 0;
    size_t mask = slots_mask(e);
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uintptr_t k = e[i].addr;
        if (k == 0)
            return 0;
        if (k == a) {
            uint64_t m = e[i].meta;
            unsigned flags = (unsigned)(m >> META_FLAGS_SHIFT);
            *size = (size_t)(m & META_SIZE);
            *left = left_of(flags);
            return flags & F_FREED ? 2 : 1;
        }
    }
}

/* heap_peek's look at the table alone (-1 busy, 0 unknown, 1 live, 2 freed in the table).
 * A shard lock held by another thread is waited for: it is dropped within a few table
 * operations. One held by this thread belongs to the section that a signal handler (this
 * call's caller) interrupted, which stands still until the handler returns: with `own` the
 * table is read without the lock then, else -1. -1 too where waiting could last for ever:
 * this thread holds a lock (its interrupted section's) and a fork is taking every lock, or
 * another such handler is waiting already (each might wait for the other's thread). */
static int peek_table(uintptr_t a, size_t *size, size_t *left, bool own)
{
    uint64_t h;
    struct shard *s = shard_of(a, &h);
    uintptr_t me = shim_lock_token();
    bool holds = shim_t_locks != 0, waiting = false;
    int r = -1;
    for (unsigned spins = 0;; spins++) {
        uintptr_t holder = atomic_load_explicit(&s->lock.held, memory_order_acquire);
        if (holder == me) {
            if (own)
                r = peek_slot(s, a, h, size, left);
            break;
        }
        if (!holder && lock_try(&s->lock)) {
            r = peek_slot(s, a, h, size, left);
            shim_lock_drop(&s->lock);
            break;
        }
        if (holder && holds) {
            if (atomic_load(&g_locking_all))
                break;
            if (!waiting && atomic_exchange(&g_peek_waiting, true))
                break;
            waiting = true;
        }
        if (spins >= 64)
            sched_yield();
        else
            shim_cpu_relax();
    }
    if (waiting)
        atomic_store(&g_peek_waiting, false);
    return r;
}

int heap_peek(const void *p, size_t *size, size_t *left)
{
    uintptr_t a = (uintptr_t)p;
    int r = peek_table(a, size, left, true);
    if (r != 0 || !g_q)
        return r;
    /* Not in the table: a quarantined block is in the ring. Its lock is waited for only by a
     * thread that holds none: its holder may take others under it (a shard lock, and at exit
     * the locks of a report), maybe one this thread's interrupted section holds. And the
     * ring is not kept readable at every instruction: held by this thread, it is busy. */
    if (!shim_t_locks)
        shim_lock_take(&g_qlock);
    else if (!lock_try(&g_qlock))
        return -1;
    struct block e;
    if (ring_find(a, &e)) {
        r = 2;
        *size = e.size;
        *left = left_of(e.flags);
    }
    shim_lock_drop(&g_qlock);
    return r;
}

void *heap_pass_real(void *p, size_t *size)
{
    if (!shim_tracking())
        return p;
    size_t n = 0, left = 0;
    /* Not read without the lock: forget_live takes it. */
    if (peek_table((uintptr_t)p, &n, &left, false) != 1 || !left)
        return p;
    if (size)
        *size = n;
    return forget_live((uintptr_t)p) ? (char *)p - left : p;
}

/* ---- work deferred by hooks entered inside a locked section (signal handlers) ---- */

#define DEFER_MAX  32
#define DEFER_FREE (UINT64_C(1) << 63) /* in size_kind: a free, not a block to track */

/* One entry: the address is written last and taken with an atomic exchange (or, by the run,
 * cleared once the entry is worked off), so a handler interrupting the thread (the only other
 * party: the list is per thread) sees an entry whole or not at all. */
struct deferred {
    uintptr_t addr; /* 0: empty or taken */
    uint64_t size_kind;
};

static __thread struct deferred t_def[DEFER_MAX] __attribute__((tls_model("initial-exec")));
static __thread unsigned t_def_n __attribute__((tls_model("initial-exec")));
static __thread int t_def_running __attribute__((tls_model("initial-exec")));
static __thread unsigned t_def_busy __attribute__((tls_model("initial-exec"))); /* entry + 1 */
__thread int shim_t_deferred __attribute__((tls_model("initial-exec")));

static bool defer(uintptr_t a, uint64_t size_kind)
{
    unsigned k = __atomic_fetch_add(&t_def_n, 1, __ATOMIC_RELAXED);
    if (k >= DEFER_MAX) {
        __atomic_fetch_sub(&t_def_n, 1, __ATOMIC_RELAXED);
        return false;
    }
    t_def[k].size_kind = size_kind;
    __atomic_store_n(&t_def[k].addr, a, __ATOMIC_RELEASE);
    shim_t_deferred = 1;
    return true;
}

bool heap_deferred_track(void *p, size_t size)
{
    return p && defer((uintptr_t)p, size & ~DEFER_FREE);
}

size_t heap_deferred_size(const void *p)
{
    unsigned n = __atomic_load_n(&t_def_n, __ATOMIC_RELAXED);
    for (unsigned k = 0; k < n && k < DEFER_MAX; k++)
        if (__atomic_load_n(&t_def[k].addr, __ATOMIC_ACQUIRE) == (uintptr_t)p &&
            !(t_def[k].size_kind & DEFER_FREE))
            return (size_t)t_def[k].size_kind;
    return 0;
}

bool heap_deferred_free(void *p)
{
    uintptr_t a = (uintptr_t)p;
    /* A block allocated in the same section (malloc and free in one handler, the common
     * case) was never in the table: it goes back at once, unless this thread is inside the
     * real allocator, which must not be entered again. */
    unsigned n = shim_t_in_real ? 0 : __atomic_load_n(&t_def_n, __ATOMIC_RELAXED);
    for (unsigned k = 0; k < n && k < DEFER_MAX; k++) {
        if (__atomic_load_n(&t_def[k].addr, __ATOMIC_ACQUIRE) != a ||
            (t_def[k].size_kind & DEFER_FREE) || k + 1 == t_def_busy)
            continue;
        if (__atomic_exchange_n(&t_def[k].addr, 0, __ATOMIC_ACQ_REL) == a) {
            real_free(p);
            return true;
        }
    }
    defer(a, DEFER_FREE); /* when the list is full the free is dropped: a leak */
    return false;
}

/* Works off entry k. It stays in the list until its block is in the table, so that a handler
 * interrupting this finds the block in one or the other (a usable size of 0, or a free of a
 * pointer the shim never saw, otherwise), and is marked busy meanwhile, so that such a
 * handler's free of the block is deferred behind it instead of done at once. (The section
 * still counts while the list is worked off, lock.h: hooks entered meanwhile defer too.) */
static void run_entry(unsigned k)
{
    t_def_busy = k + 1;
    atomic_signal_fence(memory_order_seq_cst);
    uintptr_t a = __atomic_load_n(&t_def[k].addr, __ATOMIC_ACQUIRE);
    uint64_t sk = t_def[k].size_kind;
    if (a && (sk & DEFER_FREE))
        free_lite((void *)a);
    else if (a)
        heap_track((void *)a, (size_t)sk, 0, HEAP_LITE);
    __atomic_store_n(&t_def[k].addr, 0, __ATOMIC_RELEASE);
    atomic_signal_fence(memory_order_seq_cst);
    t_def_busy = 0;
}

void heap_deferred_run(void)
{
    if (t_def_running)
        return;
    t_def_running = 1;
    do {
        unsigned done = 0;
        for (;;) {
            shim_t_deferred = 0; /* before the reset below: an entry added after sets it again */
            unsigned n = __atomic_load_n(&t_def_n, __ATOMIC_ACQUIRE);
            if (n > DEFER_MAX)
                n = DEFER_MAX;
            for (; done < n; done++)
                run_entry(done);
            if (__atomic_compare_exchange_n(&t_def_n, &n, 0, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED))
                break;
        }
    } while (shim_t_deferred); /* an entry added since the list was emptied */
    t_def_running = 0;
}

unsigned heap_verify_quarantine(int symbolize)
{
    unsigned found = 0;
    if (!g_q)
        return 0;
    /* Held throughout: no block can leave (and be freed) while it is being read. Reports
     * take no heap lock, so this cannot deadlock. */
    shim_lock_take(&g_qlock);
    /* A forked child: only the blocks it freed itself, the newest g_qpushed - at_fork */
    uint64_t own = g_qpushed - g_qpushed_at_fork;
    size_t first = g_forked_child && own < g_qcount ? g_qcount - (size_t)own : 0;
    for (size_t k = first; k < g_qcount; k++) {
        const struct qent *q = &g_q[(g_qhead + k) % g_qcap];
        struct block e = block_of_qent(q);
        if (e.flags & F_TABLED) { /* known by its table entry, as at its eviction */
            uint64_t h;
            struct shard *s = shard_of(q->addr, &h);
            shim_lock_take(&s->lock);
            long i = find_slot(s, q->addr, h);
            e = (struct block){0};
            if (i >= 0)
                e = block_at(s, (size_t)i);
            shim_lock_drop(&s->lock);
            if (!(e.flags & F_FREED))
                continue;
        }
        if (!(e.flags & F_FILLED) || ((e.flags & F_GUARDED) && guard_opened(e.addr)))
            continue;
        size_t off = verify_freed(&e);
        if (off < e.size) {
            report_write_after_free(&e, off, 1, symbolize);
            found++;
        }
    }
    shim_lock_drop(&g_qlock);
    return found;
}

void heap_get_stats(struct heap_stats *st)
{
    memset(st, 0, sizeof *st);
    uint64_t entries = 0;
    for (unsigned i = 0; i < SHARDS; i++) {
        struct shard *s = &g_shards[i];
        shim_lock_take(&s->lock);
        st->allocs += s->allocs;
        st->frees += s->frees;
        entries += s->count;
        shim_lock_drop(&s->lock);
    }
    shim_lock_take(&g_qlock);
    st->quarantine_blocks = g_qcount;
    st->quarantine_bytes = g_qbytes;
    st->evictions = g_evictions;
    uint64_t qtabled = g_qtabled;
    shim_lock_drop(&g_qlock);
    /* The table's entries are the live blocks, the tabled quarantined ones, and blocks being
     * freed right now (counted live). */
    st->live_blocks = entries >= qtabled ? entries - qtabled : 0;
}

/* The quarantine lock first: heap_verify_quarantine takes shard locks under it. */
void heap_lock_all(void)
{
    atomic_store(&g_locking_all, true);
    shim_lock_take(&g_qlock);
    for (unsigned i = 0; i < SHARDS; i++)
        shim_lock_take(&g_shards[i].lock);
    shim_lock_take(&g_glock);
    sample_lock();
}

void heap_unlock_all(void)
{
    sample_unlock();
    shim_lock_drop(&g_glock);
    for (unsigned i = SHARDS; i-- > 0;)
        shim_lock_drop(&g_shards[i].lock);
    shim_lock_drop(&g_qlock);
    atomic_store(&g_locking_all, false);
}

void heap_fork_child(void)
{
    g_forked_child = true;
    g_epoch_flag ^= F_EPOCH;
    g_qpushed_at_fork = g_qpushed;
    for (unsigned i = 0; i < SHARDS; i++)
        g_allocs_at_fork[i] = g_shards[i].allocs;
}

void heap_reinit_locks(void)
{
    atomic_store(&g_locking_all, false);
    atomic_store(&g_peek_waiting, false); /* maybe set by a thread that is not in the child */
    shim_lock_reset(&g_qlock);
    shim_lock_reset(&g_glock);
    sample_reinit_lock();
    for (unsigned i = 0; i < SHARDS; i++)
        shim_lock_reset(&g_shards[i].lock);
}
