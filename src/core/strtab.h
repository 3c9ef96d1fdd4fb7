/* strtab: interned strings. Every name in a plan (arenas, tensors, ops, streams, events,
 * ifs, arms, loops, memory kinds, stack frames) is stored once and referred to by a dense
 * 32-bit id, so plan records stay small and name lookups become array lookups.
 *
 * Planners name things PREFIX + number + SUFFIX ("t0" .. "t999999", "conv_12", "t5_v2",
 * "blk.12.attn_q"), and a plan refers to them in about the order they were made. Such a name
 * (its longest run of digits, the last of equally long ones, a canonical decimal number of
 * at most 9 digits; prefix and suffix of at most STRTAB_PREFIX_BYTES bytes each) is found
 * through its (prefix, suffix) pair (one of at most STRTAB_PREFIXES, scanned) in a dense
 * array indexed by the number: no hash, no string comparison, and neighbouring names sit in
 * neighbouring entries, where a hash table would miss the cache on every lookup. The other
 * names, and numbers too sparse for an array, go to an XXH3 hash table. */
#ifndef TLSAN_STRTAB_H
#define TLSAN_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STRTAB_NONE UINT32_MAX

#define STRTAB_PREFIXES     64
#define STRTAB_PREFIX_BYTES 32
#define STRTAB_RECENT       4 /* prefixes tried by matching before a name is split */

typedef struct strtab_prefix {
    char text[STRTAB_PREFIX_BYTES], suffix[STRTAB_PREFIX_BYTES];
    uint32_t len, suffix_len;
    uint8_t text_run, suffix_run; /* longest run of digits in text and in suffix */
    uint32_t cap;                 /* entries of dense */
    uint32_t *dense;              /* number -> id + 1; 0 = none */
    bool mixed; /* a name of this prefix lives in the hash table (number too large) */
} strtab_prefix;

typedef struct strtab {
    char *chars;      /* all strings, each NUL-terminated */
    size_t chars_len; /* bytes used */
    size_t chars_cap;
    uint32_t *offsets; /* id -> offset in chars: all names share one block of at most 4 GiB */
    uint32_t n;        /* number of ids */
    uint32_t cap;
    uint64_t *slots;  /* open addressing: (hash >> 32) << 32 | (id + 1); 0 = empty. The
                         stored hash bits spare most probes a visit to the strings. */
    size_t n_slots;   /* power of two */
    uint32_t *hashed; /* the ids in the hash table (for rehashing) */
    uint32_t n_hashed, cap_hashed;
    strtab_prefix *prefixes;
    uint32_t n_prefixes;
    /* the prefixes of the latest dense lookups, latest first (plans interleave a few:
                  "t12", "t12_v", "w7"): tried by matching their text and suffix, before the
                  name is split; entries >= n_prefixes are unused */
    uint32_t recent[STRTAB_RECENT];
    size_t dense_entries; /* total cap of all dense arrays, bounded by the number of ids */
} strtab;

/* XXH3 (64 bits) of len bytes. Planners' names are often sequential ("t0" .. "t999999");
 * a byte-at-a-time hash such as FNV-1a leaves those in runs of neighbouring low bits, so
 * probes grew long; XXH3 spreads them evenly and is faster on short keys as well. */
uint64_t strtab_hash(const char *s, size_t len);

void strtab_init(strtab *t);
void strtab_free(strtab *t);
/* Interns `len` bytes at `s`, which must hold no NUL byte (every name reaches the table as
 * a C string). Returns the id, or STRTAB_NONE when out of memory or when the table would
 * exceed UINT32_MAX-1 strings or 4 GiB of text. */
uint32_t strtab_intern(strtab *t, const char *s, size_t len);
/* Like strtab_intern() for a NUL-terminated string. */
uint32_t strtab_intern_cstr(strtab *t, const char *s);
/* Looks a string up without adding it; STRTAB_NONE when absent. */
uint32_t strtab_find(const strtab *t, const char *s, size_t len);
/* The NUL-terminated string of an id (valid until the next intern). */
static inline const char *strtab_str(const strtab *t, uint32_t id)
{
    return t->chars + t->offsets[id];
}
static inline uint32_t strtab_len(const strtab *t, uint32_t id)
{
    return (uint32_t)strlen(strtab_str(t, id));
}

#endif
