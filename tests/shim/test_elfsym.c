/* elfsym: a function found through a loaded object's own hash table (shim/elfsym.h) agrees
 * with a brute-force reading of the same object: every dynamic symbol of libc and libm walked
 * in order, thousands of names looked up (and as many names that are not there), the
 * definitions compared with dlsym on the object's handle; the walk over all objects finds
 * the first definer and leaves out the object asked to be left out; an object with only a
 * SysV hash table (DT_HASH) is read through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "elfsym.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- the brute-force twin: the object's symbol table read in order ---- */

struct object {
    const char *want; /* part of its path */
    char path[512];
    uintptr_t bias, lo, hi;
    const ElfW(Sym) * symtab;
    const char *strtab;
    const ElfW(Half) * versym;
    uint32_t n_syms;
};

static uintptr_t absolute(uintptr_t bias, ElfW(Addr) v)
{
    return v < bias ? bias + v : v;
}

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object *o = arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, o->want))
        return 0;
    snprintf(o->path, sizeof o->path, "%s", info->dlpi_name);
    o->bias = info->dlpi_addr;
    o->lo = UINTPTR_MAX;
    const uint32_t *gnu = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            if (o->bias + ph->p_vaddr < o->lo)
                o->lo = o->bias + ph->p_vaddr;
            if (o->bias + ph->p_vaddr + ph->p_memsz > o->hi)
                o->hi = o->bias + ph->p_vaddr + ph->p_memsz;
        }
        if (ph->p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(o->bias + ph->p_vaddr); d->d_tag; d++) {
            if (d->d_tag == DT_SYMTAB)
                o->symtab = (const ElfW(Sym) *)absolute(o->bias, d->d_un.d_ptr);
            else if (d->d_tag == DT_STRTAB)
                o->strtab = (const char *)absolute(o->bias, d->d_un.d_ptr);
            else if (d->d_tag == DT_VERSYM)
                o->versym = (const ElfW(Half) *)absolute(o->bias, d->d_un.d_ptr);
            else if (d->d_tag == DT_GNU_HASH)
                gnu = (const uint32_t *)absolute(o->bias, d->d_un.d_ptr);
        }
    }
    /* The symbol count: one past the last index any GNU hash chain reaches. */
    if (gnu) {
        uint32_t nb = gnu[0], off = gnu[1], bloom = gnu[2];
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&gnu[4] + bloom);
        const uint32_t *chain = buckets + nb;
        uint32_t last = 0;
        for (uint32_t b = 0; b < nb; b++)
            if (buckets[b] > last)
                last = buckets[b];
        if (last >= off)
            while (!(chain[last - off] & 1))
                last++;
        o->n_syms = last + 1;
    }
    return 1;
}

/* The visible function `name` defines, by walking every symbol; 0 when none. */
static uintptr_t brute(const struct object *o, const char *name)
{
    for (uint32_t i = 1; i < o->n_syms; i++) {
        const ElfW(Sym) *s = &o->symtab[i];
        if (strcmp(o->strtab + s->st_name, name) != 0)
            continue;
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC || !s->st_value)
            continue;
        if (ELF64_ST_BIND(s->st_info) != STB_GLOBAL && ELF64_ST_BIND(s->st_info) != STB_WEAK)
            continue;
        if (o->versym && (o->versym[i] & 0x8000))
            continue;
        return o->bias + s->st_value;
    }
    return 0;
}

static void load(struct object *o, const char *want)
{
    memset(o, 0, sizeof *o);
    o->want = want;
    dl_iterate_phdr(find_object, o);
    assert_non_null(o->symtab);
    assert_true(o->n_syms > 100);
}

/* Every symbol of the object, and a changed copy of each name, against the twin. */
static void agree(const char *want, size_t min_found)
{
    struct object o;
    load(&o, want);
    void *handle = dlopen(o.path, RTLD_LAZY | RTLD_NOLOAD);
    assert_non_null(handle);
    const void *inside = (const void *)o.lo;
    size_t found = 0, absent = 0;
    for (uint32_t i = 1; i < o.n_syms; i++) {
        const char *name = o.strtab + o.symtab[i].st_name;
        if (!*name || strlen(name) > 200)
            continue;
        char path[512];
        uintptr_t want_addr = brute(&o, name);
        uintptr_t got = (uintptr_t)elfsym_lookup(name, inside, NULL, path, sizeof path);
        if (got != want_addr)
            fail_msg("%s in %s: elfsym %#lx, brute force %#lx", name, o.path, (unsigned long)got,
                     (unsigned long)want_addr);
        if (got) {
            found++;
            assert_string_equal(path, o.path);
            /* The dynamic linker agrees (on the object's own definitions). */
            uintptr_t d = (uintptr_t)dlsym(handle, name);
            if (d >= o.lo && d < o.hi && d != got)
                fail_msg("%s: dlsym %#lx, elfsym %#lx", name, (unsigned long)d, (unsigned long)got);
        }
        char other[256];
        snprintf(other, sizeof other, "%s_", name);
        other[0] ^= 1;
        if ((uintptr_t)elfsym_lookup(other, inside, NULL, NULL, 0) != brute(&o, other))
            fail_msg("%s: a name not in %s found", other, o.path);
        absent += !brute(&o, other);
    }
    dlclose(handle);
    if (found < min_found || absent < min_found)
        fail_msg("%s: only %zu functions found, %zu absent names", o.path, found, absent);
}

static void libc_agrees(void **state)
{
    (void)state;
    agree("libc.so", 1500);
}

static void libm_agrees(void **state)
{
    (void)state;
    void *libm = dlopen("libm.so.6", RTLD_NOW);
    assert_non_null(libm);
    agree("libm.so", 200);
    dlclose(libm);
}

/* Across objects: the first definer in load order; the object left out is skipped. The name
 * is one only libc defines: a sanitizer's runtime (loaded before libc, or linked into this
 * program) defines the functions it intercepts (fopen, malloc...). */
static void first_definer(void **state)
{
    (void)state;
    struct object libc;
    load(&libc, "libc.so");
    char path[512];
    void *p = elfsym_lookup("gnu_get_libc_version", NULL, NULL, path, sizeof path);
    assert_non_null(p);
    assert_ptr_equal(p, (void *)brute(&libc, "gnu_get_libc_version"));
    assert_string_equal(path, libc.path);
    assert_null(elfsym_lookup("gnu_get_libc_version", NULL, (const void *)libc.lo, NULL, 0));
    assert_null(elfsym_lookup("tlsan_no_such_function", NULL, NULL, NULL, 0));
    /* In an object that does not define it (this program), or in no object (the stack). */
    static char data[16];
    char stack[16];
    assert_null(elfsym_lookup("gnu_get_libc_version", data, NULL, NULL, 0));
    assert_null(elfsym_lookup("gnu_get_libc_version", stack, NULL, NULL, 0));
}

/* An object with only DT_HASH (linked --hash-style=sysv): found through the SysV table. */
static void sysv_hash(void **state)
{
    (void)state;
    void *lib = dlopen(SYSV_HASH_LIB, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    const char *names[] = {"sysv_one", "sysv_two", "sysv_three"};
    void *any = dlsym(lib, "sysv_one");
    assert_non_null(any);
    for (size_t i = 0; i < 3; i++) {
        char path[512];
        assert_ptr_equal(elfsym_lookup(names[i], any, NULL, path, sizeof path),
                         dlsym(lib, names[i]));
        assert_non_null(strstr(path, "sysv_hash"));
        /* RTLD_LOCAL: only a walk of the objects finds it. */
        assert_ptr_equal(elfsym_lookup(names[i], NULL, NULL, NULL, 0), dlsym(lib, names[i]));
    }
    assert_null(elfsym_lookup("sysv_four", any, NULL, NULL, 0));
    assert_null(elfsym_lookup("sysv_on", any, NULL, NULL, 0));
    dlclose(lib);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(libc_agrees),
        cmocka_unit_test(libm_agrees),
        cmocka_unit_test(first_definer),
        cmocka_unit_test(sysv_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
