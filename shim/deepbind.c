/* deepbind.c - objects opened with dlopen(RTLD_DEEPBIND): the shim's functions bound in them
 * (deepbind.h). */
#include "deepbind.h"
#include "elfsym.h"
#include "out.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* The functions of libtlsan.map a deep-bound object may call: what the shim interposes for
 * every object (the allocator, C++'s operators, SIGSEGV's disposition, _exit). */
static const char *const g_names[] = {"malloc",
                                      "free",
                                      "calloc",
                                      "realloc",
                                      "reallocarray",
                                      "posix_memalign",
                                      "aligned_alloc",
                                      "memalign",
                                      "valloc",
                                      "pvalloc",
                                      "malloc_usable_size",
                                      "cfree",
                                      "_exit",
                                      "_Exit",
                                      "sigaction",
                                      "signal",
                                      "bsd_signal",
                                      "ssignal",
                                      "sysv_signal",
                                      "__sysv_signal",
                                      "__libc_malloc",
                                      "__libc_free",
                                      "__libc_calloc",
                                      "__libc_realloc",
                                      "__libc_memalign",
                                      "__libc_valloc",
                                      "__libc_pvalloc",
                                      "_Znwm",
                                      "_Znam",
                                      "_ZnwmRKSt9nothrow_t",
                                      "_ZnamRKSt9nothrow_t",
                                      "_ZnwmSt11align_val_t",
                                      "_ZnamSt11align_val_t",
                                      "_ZnwmSt11align_val_tRKSt9nothrow_t",
                                      "_ZnamSt11align_val_tRKSt9nothrow_t",
                                      "_ZdlPv",
                                      "_ZdaPv",
                                      "_ZdlPvm",
                                      "_ZdaPvm",
                                      "_ZdlPvSt11align_val_t",
                                      "_ZdaPvSt11align_val_t",
                                      "_ZdlPvmSt11align_val_t",
                                      "_ZdaPvmSt11align_val_t",
                                      "_ZdlPvRKSt9nothrow_t",
                                      "_ZdaPvRKSt9nothrow_t",
                                      "_ZdlPvSt11align_val_tRKSt9nothrow_t",
                                      "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
#define NAMES (sizeof g_names / sizeof g_names[0])

static atomic_bool g_seen;

/* What one binding pass knows of each name: the shim's definition, the one it wraps (the next
 * after it), and the one the opened object's own scope finds (for a lazy slot). */
struct pass {
    void *mine[NAMES], *real[NAMES], *deep[NAMES];
    size_t before, index, rewritten, refused;
    long page;
};

static int count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    ++*(size_t *)data;
    return 0;
}

size_t deepbind_objects(void)
{
    size_t n = 0;
    dl_iterate_phdr(count_cb, &n);
    return n;
}

bool deepbind_seen(void)
{
    return atomic_load_explicit(&g_seen, memory_order_relaxed);
}

static int name_index(const char *name)
{
    for (size_t i = 0; i < NAMES; i++)
        if (strcmp(name, g_names[i]) == 0)
            return (int)i;
    return -1;
}

/* Writes v into *slot, opening a RELRO page for it (and closing it again). */
static bool rewrite(void **slot, void *v, uintptr_t relro_lo, uintptr_t relro_hi, long page)
{
    uintptr_t a = (uintptr_t)slot;
    bool relro = a >= relro_lo && a < relro_hi;
    void *pg = (void *)(a & ~(uintptr_t)(page - 1));
    int saved = errno;
    if (relro && mprotect(pg, (size_t)page, PROT_READ | PROT_WRITE) != 0) {
        errno = saved;
        return false;
    }
    __atomic_store_n(slot, v, __ATOMIC_RELEASE);
    if (relro)
        mprotect(pg, (size_t)page, PROT_READ);
    errno = saved;
    return true;
}

#if defined(__x86_64__)
/* The relocations of one object: every JUMP_SLOT and GLOB_DAT naming a function of g_names
 * the object does not define, whose slot holds the definition the shim wraps (or, for a lazy
 * slot still pointing into the object's own PLT, would resolve to it), gets the shim's. */
static void bind_object(struct dl_phdr_info *info, struct pass *p)
{
    uintptr_t bias = info->dlpi_addr, lo = UINTPTR_MAX, hi = 0, relro_lo = 0, relro_hi = 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            lo = bias + ph->p_vaddr < lo ? bias + ph->p_vaddr : lo;
            hi = bias + ph->p_vaddr + ph->p_memsz > hi ? bias + ph->p_vaddr + ph->p_memsz : hi;
        } else if (ph->p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(bias + ph->p_vaddr);
        } else if (ph->p_type == PT_GNU_RELRO) {
            relro_lo = bias + ph->p_vaddr;
            relro_hi = relro_lo + ph->p_memsz;
        }
    }
    if (!dyn)
        return;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) * rel[2] = {NULL, NULL};
    size_t relsz[2] = {0, 0};
    for (; dyn->d_tag != DT_NULL; dyn++) {
        /* ld.so relocated these in place, except where the dynamic section is read-only. */
        uintptr_t v = dyn->d_un.d_ptr < bias ? bias + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)v;
            break;
        case DT_STRTAB:
            strtab = (const char *)v;
            break;
        case DT_JMPREL:
            rel[0] = (const ElfW(Rela) *)v;
            break;
        case DT_PLTRELSZ:
            relsz[0] = dyn->d_un.d_val;
            break;
        case DT_RELA:
            rel[1] = (const ElfW(Rela) *)v;
            break;
        case DT_RELASZ:
            relsz[1] = dyn->d_un.d_val;
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab)
        return;
    for (int t = 0; t < 2; t++) {
        for (size_t k = 0; rel[t] && k < relsz[t] / sizeof *rel[t]; k++) {
            const ElfW(Rela) *r = &rel[t][k];
            unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
                continue;
            const ElfW(Sym) *s = &symtab[ELF64_R_SYM(r->r_info)];
            int i = s->st_shndx == SHN_UNDEF ? name_index(strtab + s->st_name) : -1;
            if (i < 0 || !p->mine[i] || !p->real[i])
                continue;
            void **slot = (void **)(bias + r->r_offset);
            uintptr_t v = (uintptr_t)*slot;
            bool lazy = type == R_X86_64_JUMP_SLOT && v >= lo && v < hi;
            if (v != (uintptr_t)p->real[i] && !(lazy && p->deep[i] == p->real[i]))
                continue;
            if (rewrite(slot, p->mine[i], relro_lo, relro_hi, p->page))
                p->rewritten++;
            else
                p->refused++;
        }
    }
}
#else
static void bind_object(struct dl_phdr_info *info, struct pass *p)
{
    (void)info;
    p->refused++;
}
#endif

static int bind_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct pass *p = data;
    if (p->index++ >= p->before)
        bind_object(info, p);
    return 0;
}

size_t deepbind_bind(void *handle, size_t before)
{
    atomic_store_explicit(&g_seen, true, memory_order_relaxed);
    struct pass q;
    memset(&q, 0, sizeof q);
    q.before = before;
    q.page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < NAMES; i++) {
        q.mine[i] = elfsym_lookup(g_names[i], (const void *)deepbind_bind, NULL, NULL, 0);
        q.real[i] = dlsym(RTLD_NEXT, g_names[i]);
        q.deep[i] = handle ? dlsym(handle, g_names[i]) : NULL;
    }
    dl_iterate_phdr(bind_cb, &q);
    if (q.refused)
        out_printf("tlsan: a library opened with RTLD_DEEPBIND: %zu of its calls to the "
                   "allocator could not be bound to the shim's (blocks passed between it and "
                   "the program may be misreported)\n",
                   q.refused);
    return q.rewritten;
}

/* ---- the caller's search path ----
 *
 * glibc searches a bare name along the RUNPATH (or RPATH) of the object that called dlopen,
 * which it takes from dlopen's return address: here the shim. So the part of its search that
 * depends on the caller is made here, for the program's caller: a caller with DT_RUNPATH has
 * LD_LIBRARY_PATH's directories, then its RUNPATH's, searched first; a library with DT_RPATH
 * (and no RUNPATH) its RPATH's (the program's own RPATH glibc searches from any caller). The
 * first directory holding the file gives its path; otherwise glibc searches the rest (the
 * cache, the default directories) from the name. $ORIGIN is the caller's directory; a
 * directory with another $ token is skipped. */

/* dir (len bytes) + "/" + file into out (cap bytes), $ORIGIN replaced by origin; false when
 * it does not fit or holds another token. */
static bool join(char *out, size_t cap, const char *dir, size_t len, const char *origin,
                 const char *file)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const char *piece = dir + i;
        size_t take = 1;
        if (dir[i] == '$') {
            bool braced = len - i >= 9 && strncmp(dir + i, "${ORIGIN}", 9) == 0;
            if (!braced && !(len - i >= 7 && strncmp(dir + i, "$ORIGIN", 7) == 0))
                return false;
            piece = origin;
            take = strlen(origin);
            i += braced ? 9 : 7;
        } else {
            i++;
        }
        if (n + take >= cap)
            return false;
        memcpy(out + n, piece, take);
        n += take;
    }
    int w = snprintf(out + n, cap - n, "%s%s", n ? "/" : "", file);
    return w >= 0 && (size_t)w < cap - n;
}

/* The first directory of the colon-separated list holding file, as a path into out. */
static bool find_in(const char *list, const char *origin, const char *file, char *out, size_t cap)
{
    for (const char *d = list; list && *d;) {
        size_t len = strcspn(d, ":");
        if (len && join(out, cap, d, len, origin, file) && access(out, F_OK) == 0)
            return true;
        d += len + (d[len] == ':');
    }
    return false;
}

/* The caller's DT_RUNPATH and DT_RPATH strings, and its directory. */
static void caller_paths(const void *caller, const char **runpath, const char **rpath, char *origin,
                         size_t cap)
{
    Dl_info info;
    struct link_map *l = NULL;
    *runpath = *rpath = NULL;
    origin[0] = 0;
    if (!dladdr1(caller, &info, (void **)&l, RTLD_DL_LINKMAP) || !l || !l->l_ld)
        return;
    const char *strtab = NULL;
    ElfW(Addr) run = 0, rp = 0;
    bool has_run = false, has_rp = false;
    for (const ElfW(Dyn) *d = l->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)(d->d_un.d_ptr < l->l_addr ? l->l_addr + d->d_un.d_ptr
                                                              : d->d_un.d_ptr);
        else if (d->d_tag == DT_RUNPATH)
            run = d->d_un.d_val, has_run = true;
        else if (d->d_tag == DT_RPATH)
            rp = d->d_un.d_val, has_rp = true;
    }
    if (!strtab)
        return;
    *runpath = has_run ? strtab + run : NULL;
    *rpath = has_rp && !has_run && l->l_name && l->l_name[0] ? strtab + rp : NULL;
    const char *name = l->l_name && l->l_name[0] ? l->l_name : NULL;
    char exe[4096];
    if (!name) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return;
        exe[n] = 0;
        name = exe;
    }
    const char *slash = strrchr(name, '/');
    size_t len = slash ? (size_t)(slash - name) : 0;
    if (len >= cap)
        return;
    memcpy(origin, name, len);
    origin[len] = 0;
}

void *deepbind_dlopen(void *(*next)(const char *, int), const char *file, int flags,
                      const void *caller)
{
    char path[4096], origin[4096];
    const char *open = file;
    if (file && *file && !strchr(file, '/')) {
        const char *runpath, *rpath;
        int saved = errno;
        caller_paths(caller, &runpath, &rpath, origin, sizeof origin);
        if ((runpath && ((!getauxval(AT_SECURE) &&
                          find_in(getenv("LD_LIBRARY_PATH"), origin, file, path, sizeof path)) ||
                         find_in(runpath, origin, file, path, sizeof path))) ||
            (rpath && find_in(rpath, origin, file, path, sizeof path)))
            open = path;
        errno = saved;
    }
    size_t before = deepbind_objects();
    void *h = next(open, flags);
    if (h)
        deepbind_bind(h, before);
    return h;
}

/* ---- blocks glibc allocated ---- */

/* n bytes at a, read without faulting (a is a pointer of the program's, maybe a bad one). */
static bool read_safely(uintptr_t a, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)a, n};
    int saved = errno;
    bool ok = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
    errno = saved;
    return ok;
}

bool deepbind_glibc_block(const void *p)
{
    /* glibc's chunk: prev_size and size before the block, size's low bits the flags
     * (PREV_INUSE 1, IS_MMAPPED 2, NON_MAIN_ARENA 4); in use when the next chunk's PREV_INUSE
     * is set, or when it is mapped on its own (its size then whole pages). */
    uintptr_t a = (uintptr_t)p;
    uint64_t head[2], next;
    if (!a || (a & 15) || a < 16 || !read_safely(a - 16, head, sizeof head))
        return false;
    uint64_t size = head[1] & ~(uint64_t)7;
    long page = sysconf(_SC_PAGESIZE);
    if (size < 32 || (size & 15) || size > ((uint64_t)1 << 46))
        return false;
    if (head[1] & 2)
        return ((a - 16 - head[0]) & (uint64_t)(page - 1)) == 0 &&
               ((head[0] + size) & (uint64_t)(page - 1)) == 0;
    return read_safely(a - 16 + size + 8, &next, sizeof next) && (next & 1);
}
