#include "strtab.h"

#include <stdlib.h>
#include <string.h>

/* inlined, so that hashing a short name is a few instructions and no call into the library */
#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t strtab_hash(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

void strtab_init(strtab *t)
{
    memset(t, 0, sizeof *t);
}

void strtab_free(strtab *t)
{
    free(t->chars);
    free(t->offsets);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

#define SLOT_ID(v)  ((uint32_t)(v)-1u)
#define SLOT_TAG(h) ((h)&0xffffffff00000000ull)

static uint32_t lookup(const strtab *t, const char *s, size_t len, uint64_t h, size_t *slot_out)
{
    size_t mask = t->n_slots - 1;
    size_t i = (size_t)h & mask;
    uint64_t tag = SLOT_TAG(h);
    for (;;) {
        uint64_t v = t->slots[i];
        if (v == 0) {
            *slot_out = i;
            return STRTAB_NONE;
        }
        if (SLOT_TAG(v) == tag) {
            uint32_t id = SLOT_ID(v);
            const char *c = t->chars + t->offsets[id];
            /* no stored string holds a NUL, so a match ends exactly at len */
            if (strncmp(c, s, len) == 0 && c[len] == '\0') {
                *slot_out = i;
                return id;
            }
        }
        i = (i + 1) & mask;
    }
}

static int rehash(strtab *t, size_t n_slots)
{
    uint64_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    size_t mask = n_slots - 1;
    for (uint32_t id = 0; id < t->n; id++) {
        const char *c = t->chars + t->offsets[id];
        uint64_t h = strtab_hash(c, strlen(c));
        size_t i = (size_t)h & mask;
        while (slots[i])
            i = (i + 1) & mask;
        slots[i] = SLOT_TAG(h) | (uint64_t)(id + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

uint32_t strtab_find(const strtab *t, const char *s, size_t len)
{
    if (t->n_slots == 0)
        return STRTAB_NONE;
    size_t slot;
    return lookup(t, s, len, strtab_hash(s, len), &slot);
}

uint32_t strtab_intern(strtab *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return STRTAB_NONE;
    /* Keep the load factor at most 1/2 so probes stay short. */
    if ((size_t)(t->n + 1) * 2 > t->n_slots) {
        if (rehash(t, t->n_slots ? t->n_slots * 2 : 64) != 0)
            return STRTAB_NONE;
    }
    uint64_t h = strtab_hash(s, len);
    size_t slot;
    uint32_t id = lookup(t, s, len, h, &slot);
    if (id != STRTAB_NONE)
        return id;
    if (t->n >= UINT32_MAX - 2 || t->chars_len + len + 1 > UINT32_MAX)
        return STRTAB_NONE;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        uint32_t *off = realloc(t->offsets, (size_t)cap * sizeof *off);
        if (!off)
            return STRTAB_NONE;
        t->offsets = off;
        t->cap = cap;
    }
    if (t->chars_len + len + 1 > t->chars_cap) {
        size_t cap = t->chars_cap ? t->chars_cap : 4096;
        while (cap < t->chars_len + len + 1)
            cap *= 2;
        char *c = realloc(t->chars, cap);
        if (!c)
            return STRTAB_NONE;
        t->chars = c;
        t->chars_cap = cap;
    }
    id = t->n++;
    t->offsets[id] = (uint32_t)t->chars_len;
    memcpy(t->chars + t->chars_len, s, len);
    t->chars[t->chars_len + len] = '\0';
    t->chars_len += len + 1;
    t->slots[slot] = SLOT_TAG(h) | (uint64_t)(id + 1);
    return id;
}

uint32_t strtab_intern_cstr(strtab *t, const char *s)
{
    return strtab_intern(t, s, strlen(s));
}
