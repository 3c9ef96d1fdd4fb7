/* elfsym.c - functions found in a loaded object's own dynamic symbol table (elfsym.h).
 *
 * The dynamic section's addresses: glibc relocates DT_SYMTAB, DT_STRTAB, DT_*HASH and
 * DT_VERSYM in place (they then hold absolute addresses) for every object it loads, but not
 * for the vDSO, which the kernel maps with link-time values. A value below the load bias is
 * therefore taken as link-time and the bias added. Every table read must lie in one of the
 * object's PT_LOAD segments, so a malformed or unusual object is skipped, never read wild. */
#include "elfsym.h"

#include <elf.h>
#include <stdbool.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

struct dynsyms {
    uintptr_t bias, lo, hi; /* [lo, hi): the object's loaded segments, absolute */
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz;
    const uint32_t *gnu_hash;
    const ElfW(Word) * sysv_hash;
    const ElfW(Half) * versym;
};

static bool inside(const struct dynsyms *d, const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p;
    return a >= d->lo && a <= d->hi && bytes <= d->hi - a;
}

static uintptr_t absolute(const struct dynsyms *d, ElfW(Addr) v)
{
    return v < d->bias ? d->bias + v : v;
}

/* Fills d from the object's program headers; false when it has no usable dynamic tables. */
static bool read_dynamic(const struct dl_phdr_info *info, struct dynsyms *d)
{
    memset(d, 0, sizeof *d);
    d->bias = info->dlpi_addr;
    d->lo = UINTPTR_MAX;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = d->bias + ph->p_vaddr;
            if (a < d->lo)
                d->lo = a;
            if (a + ph->p_memsz > d->hi)
                d->hi = a + ph->p_memsz;
        } else if (ph->p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(d->bias + ph->p_vaddr);
        }
    }
    if (!dyn || d->lo >= d->hi || !inside(d, dyn, sizeof *dyn))
        return false;
    for (; inside(d, dyn, sizeof *dyn) && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            d->symtab = (const ElfW(Sym) *)absolute(d, dyn->d_un.d_ptr);
            break;
        case DT_STRTAB:
            d->strtab = (const char *)absolute(d, dyn->d_un.d_ptr);
            break;
        case DT_STRSZ:
            d->strsz = dyn->d_un.d_val;
            break;
        case DT_GNU_HASH:
            d->gnu_hash = (const uint32_t *)absolute(d, dyn->d_un.d_ptr);
            break;
        case DT_HASH:
            d->sysv_hash = (const ElfW(Word) *)absolute(d, dyn->d_un.d_ptr);
            break;
        case DT_VERSYM:
            d->versym = (const ElfW(Half) *)absolute(d, dyn->d_un.d_ptr);
            break;
        default:
            break;
        }
    }
    if (d->gnu_hash && !inside(d, d->gnu_hash, 4 * sizeof(uint32_t)))
        d->gnu_hash = NULL;
    if (d->sysv_hash && !inside(d, d->sysv_hash, 2 * sizeof(ElfW(Word))))
        d->sysv_hash = NULL;
    return d->symtab && d->strtab && d->strsz && inside(d, d->strtab, d->strsz) &&
           (d->gnu_hash || d->sysv_hash);
}

/* Symbol i, when it is the defined, visible function `name`. */
static const ElfW(Sym) * match(const struct dynsyms *d, uint32_t i, const char *name)
{
    const ElfW(Sym) *s = &d->symtab[i];
    if (!inside(d, s, sizeof *s) || s->st_name >= d->strsz ||
        strncmp(d->strtab + s->st_name, name, d->strsz - s->st_name) != 0)
        return NULL;
    if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value == 0)
        return NULL;
    unsigned bind = ELF64_ST_BIND(s->st_info);
    if (bind != STB_GLOBAL && bind != STB_WEAK)
        return NULL;
    /* A hidden version (0x8000) is not what an unversioned reference binds to. */
    if (d->versym && inside(d, &d->versym[i], sizeof d->versym[i]) && (d->versym[i] & 0x8000))
        return NULL;
    return s;
}

static const ElfW(Sym) * gnu_lookup(const struct dynsyms *d, const char *name)
{
    const uint32_t *h = d->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], shift = h[3];
    if (!nbuckets || !bloom_size)
        return NULL;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)&h[4];
    const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
    const uint32_t *chain = &buckets[nbuckets];
    if (!inside(d, bloom, (size_t)bloom_size * sizeof *bloom) ||
        !inside(d, buckets, (size_t)nbuckets * sizeof *buckets))
        return NULL;
    uint32_t hash = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        hash = hash * 33 + *c;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
    ElfW(Addr) mask = (ElfW(Addr))1 << (hash % bits) | (ElfW(Addr))1 << ((hash >> shift) % bits);
    if ((word & mask) != mask)
        return NULL;
    uint32_t i = buckets[hash % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        const uint32_t *c = &chain[i - symoffset];
        if (!inside(d, c, sizeof *c))
            return NULL;
        if ((*c | 1) == (hash | 1)) {
            const ElfW(Sym) *s = match(d, i, name);
            if (s)
                return s;
        }
        if (*c & 1)
            return NULL;
    }
}

static const ElfW(Sym) * sysv_lookup(const struct dynsyms *d, const char *name)
{
    const ElfW(Word) *h = d->sysv_hash;
    ElfW(Word) nbucket = h[0], nchain = h[1];
    const ElfW(Word) *bucket = &h[2], *chain = &bucket[nbucket];
    if (!nbucket || !inside(d, bucket, ((size_t)nbucket + nchain) * sizeof *bucket))
        return NULL;
    uint32_t hash = 0;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        hash = (hash << 4) + *c;
        uint32_t g = hash & 0xf0000000u;
        hash ^= g >> 24;
        hash &= ~g;
    }
    /* At most nchain steps: a looping chain ends too. */
    ElfW(Word) i = bucket[hash % nbucket];
    for (ElfW(Word) steps = 0; i != STN_UNDEF && i < nchain && steps < nchain; steps++) {
        const ElfW(Sym) *s = match(d, i, name);
        if (s)
            return s;
        i = chain[i];
    }
    return NULL;
}

struct query {
    const char *name;
    const void *in_object, *not_in;
    void *found;
    char *object; /* the caller's buffer, or NULL */
    size_t cap;
};

static bool holds(const struct dynsyms *d, const void *p)
{
    return p && (uintptr_t)p >= d->lo && (uintptr_t)p < d->hi;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct query *q = arg;
    struct dynsyms d;
    if (!read_dynamic(info, &d))
        return 0;
    if (q->in_object ? !holds(&d, q->in_object) : holds(&d, q->not_in))
        return 0;
    const ElfW(Sym) *s = d.gnu_hash ? gnu_lookup(&d, q->name) : sysv_lookup(&d, q->name);
    if (!s)
        return q->in_object ? 1 : 0;
    q->found = (void *)(d.bias + s->st_value);
    if (q->object && q->cap) {
        /* Copied here: once the walk ends the object may be unloaded, and its name with it. */
        const char *path = info->dlpi_name ? info->dlpi_name : "";
        size_t n = strlen(path);
        if (n >= q->cap)
            n = q->cap - 1;
        memcpy(q->object, path, n);
        q->object[n] = '\0';
    }
    return 1;
}

void *elfsym_lookup(const char *name, const void *in_object, const void *not_in, char *object,
                    size_t cap)
{
    struct query q = {name, in_object, not_in, NULL, object, cap};
    dl_iterate_phdr(visit, &q);
    return q.found;
}
