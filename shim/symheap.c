/* symheap.c - the symbolizer's own heap (symheap.h).
 *
 * One reservation of address space (MAP_NORESERVE: pages cost memory only once touched),
 * carved by a bump pointer into blocks of power-of-two sizes, 32 bytes to 256 MiB; a freed
 * block goes on its size's free list and serves the next request of that size. A block starts
 * with a 16-byte header (its size class and, for an alignment above 16, how far the pointer
 * handed out is from the block's start), so free and realloc need no table. libdw's
 * allocations are few and mostly long-lived (its caches of line tables and DIEs), so this
 * simple scheme wastes little. */
#include "symheap.h"
#include "lock.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define HEADER_BYTES 16u
#define MIN_CLASS    5u  /* 32 bytes */
#define MAX_CLASS    28u /* 256 MiB */

__thread int symheap_t_active __attribute__((tls_model("initial-exec")));
uintptr_t symheap_g_lo, symheap_g_hi;

struct header {
    uint32_t size_class; /* log2 of the block's bytes */
    uint32_t pad_bytes;  /* from the block's start to the pointer handed out */
    uint64_t unused;
};

static shim_lock g_lock = SHIM_LOCK_INIT;
static uintptr_t g_bump;                  /* next free byte of the reservation */
static void *g_free_lists[MAX_CLASS + 1]; /* a freed block's first word links the next */
static int g_reserve_failed;

/* Reserves the range once: 1 GiB, or less under an address-space limit. Lock held. */
static bool reserve_locked(void)
{
    if (symheap_g_hi)
        return true;
    if (g_reserve_failed)
        return false;
    for (size_t bytes = (size_t)1 << 30; bytes >= ((size_t)32 << 20); bytes /= 2) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            g_bump = symheap_g_lo = (uintptr_t)p;
            __atomic_store_n(&symheap_g_hi, (uintptr_t)p + bytes, __ATOMIC_RELEASE);
            return true;
        }
    }
    g_reserve_failed = 1;
    return false;
}

bool symheap_enter(void)
{
    if (!__atomic_load_n(&symheap_g_hi, __ATOMIC_ACQUIRE)) {
        shim_lock_take(&g_lock);
        bool ok = reserve_locked();
        shim_lock_drop(&g_lock);
        if (!ok)
            return false;
    }
    symheap_t_active++;
    return true;
}

void symheap_leave(void)
{
    symheap_t_active--;
}

static unsigned class_for(size_t bytes)
{
    unsigned k = MIN_CLASS;
    while (k <= MAX_CLASS && ((size_t)1 << k) < bytes)
        k++;
    return k;
}

static struct header *header_of(const void *p)
{
    return (struct header *)((uintptr_t)p - HEADER_BYTES);
}

void *symheap_alloc(size_t size_bytes, size_t align)
{
    if (align < HEADER_BYTES)
        align = HEADER_BYTES;
    size_t extra = HEADER_BYTES + (align > HEADER_BYTES ? align : 0);
    if (size_bytes > ((size_t)1 << MAX_CLASS) - extra) {
        errno = ENOMEM;
        return NULL;
    }
    unsigned k = class_for(size_bytes + extra);
    size_t block_bytes = (size_t)1 << k;
    uintptr_t block = 0;
    shim_lock_take(&g_lock);
    if (reserve_locked()) {
        if (g_free_lists[k]) {
            block = (uintptr_t)g_free_lists[k];
            memcpy(&g_free_lists[k], (void *)block, sizeof(void *));
        } else if (symheap_g_hi - g_bump >= block_bytes) {
            block = g_bump;
            g_bump += block_bytes;
        }
    }
    shim_lock_drop(&g_lock);
    if (!block) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t user = (block + HEADER_BYTES + align - 1) & ~(uintptr_t)(align - 1);
    struct header *h = header_of((void *)user);
    h->size_class = k;
    h->pad_bytes = (uint32_t)(user - block);
    return (void *)user;
}

void *symheap_calloc(size_t count, size_t size_bytes)
{
    size_t n;
    if (__builtin_mul_overflow(count, size_bytes, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = symheap_alloc(n, 0);
    if (p)
        memset(p, 0, n); /* a block from a free list holds old bytes */
    return p;
}

size_t symheap_size(const void *p)
{
    const struct header *h = header_of(p);
    return ((size_t)1 << h->size_class) - h->pad_bytes;
}

void symheap_free(void *p)
{
    if (!p)
        return;
    const struct header *h = header_of(p);
    unsigned k = h->size_class;
    void *block = (char *)p - h->pad_bytes;
    shim_lock_take(&g_lock);
    memcpy(block, &g_free_lists[k], sizeof(void *));
    g_free_lists[k] = block;
    shim_lock_drop(&g_lock);
}

void *symheap_realloc(void *p, size_t size_bytes)
{
    if (p && size_bytes <= symheap_size(p))
        return p;
    void *q = symheap_alloc(size_bytes, 0);
    if (q && p) {
        memcpy(q, p, symheap_size(p));
        symheap_free(p);
    }
    return q;
}

void symheap_lock(void)
{
    shim_lock_take(&g_lock);
}

void symheap_unlock(void)
{
    shim_lock_drop(&g_lock);
}

void symheap_reinit_lock(void)
{
    shim_lock_reset(&g_lock);
}
