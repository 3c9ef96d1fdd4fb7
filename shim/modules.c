/* modules.c - the loaded modules, from dl_iterate_phdr.
 *
 * Entries live in a static array and never move, so a pointer handed out stays valid and
 * readers need no lock: an entry is written completely before the count that publishes it
 * (release store). A rescan (under a lock) adds modules not seen before and marks the ones
 * gone (dlclose) so their address range no longer matches; their ids stay valid for stacks
 * recorded earlier. */
#include "modules.h"
#include "lock.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MODULES_MAX 1024

static struct shim_module g_mods[MODULES_MAX];
/* The first address of each module's mapping: for PIE objects base (the load bias) is
 * where p_vaddr 0 would be, and the code starts above it. */
static uintptr_t g_lo[MODULES_MAX];
static atomic_int g_gone[MODULES_MAX];
static atomic_uint g_count;
static shim_lock g_lock = SHIM_LOCK_INIT;
/* Set during a rescan to flag modules still present. */
static unsigned char g_seen[MODULES_MAX];

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_vaddr < lo)
            lo = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    uintptr_t base = info->dlpi_addr;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    char exe[512];
    if (!name[0]) {
        /* The main program has no name here; /proc/self/exe does (readlink, no malloc). */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = exe;
    }
    unsigned count = atomic_load_explicit(&g_count, memory_order_relaxed);
    for (unsigned i = 0; i < count; i++) {
        if (!atomic_load_explicit(&g_gone[i], memory_order_relaxed) && g_mods[i].base == base &&
            strcmp(g_mods[i].path, name) == 0) {
            g_seen[i] = 1;
            return 0;
        }
    }
    if (count >= MODULES_MAX)
        return 0;
    struct shim_module *m = &g_mods[count];
    m->id = count + 1;
    m->base = base;
    m->size_bytes = hi; /* [base, base + hi) covers every segment */
    size_t n = strlen(name);
    if (n >= sizeof m->path)
        n = sizeof m->path - 1;
    memcpy(m->path, name, n);
    m->path[n] = '\0';
    g_lo[count] = base + lo;
    g_seen[count] = 1;
    atomic_store_explicit(&g_count, count + 1, memory_order_release);
    return 0;
}

static void rescan(void)
{
    shim_lock_take(&g_lock);
    unsigned before = atomic_load_explicit(&g_count, memory_order_relaxed);
    memset(g_seen, 0, sizeof g_seen);
    dl_iterate_phdr(scan_one, NULL);
    for (unsigned i = 0; i < before; i++)
        if (!g_seen[i])
            atomic_store_explicit(&g_gone[i], 1, memory_order_relaxed);
    shim_lock_drop(&g_lock);
}

static const struct shim_module *find(uintptr_t addr)
{
    unsigned count = atomic_load_explicit(&g_count, memory_order_acquire);
    for (unsigned i = 0; i < count; i++) {
        if (atomic_load_explicit(&g_gone[i], memory_order_relaxed))
            continue;
        if (addr >= g_lo[i] && addr < g_mods[i].base + g_mods[i].size_bytes)
            return &g_mods[i];
    }
    return NULL;
}

void modules_refresh(void)
{
    rescan();
}

const struct shim_module *modules_find(uintptr_t addr)
{
    const struct shim_module *m = find(addr);
    if (m)
        return m;
    rescan();
    return find(addr);
}

const struct shim_module *modules_get(uint32_t id)
{
    if (id == 0 || id > atomic_load_explicit(&g_count, memory_order_acquire))
        return NULL;
    return &g_mods[id - 1];
}

uint32_t modules_count(void)
{
    return atomic_load_explicit(&g_count, memory_order_acquire);
}

void modules_lock(void)
{
    shim_lock_take(&g_lock);
}

void modules_unlock(void)
{
    shim_lock_drop(&g_lock);
}

void modules_reinit_lock(void)
{
    shim_lock_reset(&g_lock);
}

/* /proc/self/maps is read in a stack buffer (no allocation); its lines are sorted by
 * address, so one pass follows [lo, hi) from mapping to mapping. */
bool modules_range_usable(uintptr_t lo, uintptr_t hi, bool write)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t start = lo & ~(page - 1);
        return msync((void *)start, hi - start, MS_ASYNC) == 0 || errno != ENOMEM;
    }
    char buf[4096];
    size_t len = 0;
    bool skipping = false; /* the rest of a line longer than buf */
    uintptr_t cur = lo;
    int verdict = -1; /* -1: not known yet */
    while (verdict < 0) {
        ssize_t got = read(fd, buf + len, sizeof buf - len);
        if (got <= 0)
            break;
        len += (size_t)got;
        size_t i = 0;
        for (;;) {
            char *nl = memchr(buf + i, '\n', len - i);
            if (!nl && len - i < sizeof buf)
                break;
            size_t end = nl ? (size_t)(nl - buf) : len;
            if (!skipping && verdict < 0) {
                /* "START-END PERMS ..." in hex. */
                const char *c = buf + i, *e = buf + end;
                uintptr_t m0 = 0, m1 = 0;
                for (; c < e && *c != '-'; c++)
                    m0 = m0 * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10);
                for (c++; c < e && *c != ' '; c++)
                    m1 = m1 * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10);
                c++;
                bool ok = e - c >= 2 && c[0] == 'r' && (!write || c[1] == 'w');
                if (m1 > cur) {
                    if (m0 > cur || !ok)
                        verdict = 0; /* a hole, or bytes the engine cannot use */
                    else if ((cur = m1) >= hi)
                        verdict = 1;
                }
            }
            skipping = !nl;
            i = nl ? end + 1 : len;
            if (i >= len)
                break;
        }
        memmove(buf, buf + i, len - i);
        len -= i;
    }
    close(fd);
    return verdict == 1;
}
