#include "core/strtab.h"

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
    for (int k = 0; k < STRTAB_RECENT; k++)
        t->recent[k] = STRTAB_NONE;
}

/* Makes prefix pi the latest of the recent ones. */
static void note_recent(strtab *t, uint32_t pi)
{
    if (t->recent[0] == pi)
        return;
    int at = STRTAB_RECENT - 1;
    for (int k = 1; k < STRTAB_RECENT - 1; k++)
        if (t->recent[k] == pi)
            at = k;
    for (int k = at; k > 0; k--)
        t->recent[k] = t->recent[k - 1];
    t->recent[0] = pi;
}

void strtab_free(strtab *t)
{
    free(t->chars);
    free(t->offsets);
    free(t->slots);
    free(t->hashed);
    for (uint32_t i = 0; i < t->n_prefixes; i++)
        free(t->prefixes[i].dense);
    free(t->prefixes);
    strtab_init(t);
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
    for (uint32_t k = 0; k < t->n_hashed; k++) {
        uint32_t id = t->hashed[k];
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

/* A name PREFIX + number + SUFFIX: the number is the longest run of decimal digits (the
 * last of equally long ones), canonical (no leading zero) and at most 9 digits; prefix and
 * suffix at most STRTAB_PREFIX_BYTES each. Sets *plen, *slen and *num, or returns false.
 * "t123", "conv_12", "t5_v2" (123 and 5: views of tensor 5), "blk.12.attn_q". */
static bool split_number(const char *s, size_t len, size_t *plen, size_t *slen, uint32_t *num)
{
    size_t best = 0, best_at = 0;
    for (size_t i = 0; i < len;) {
        if (s[i] < '0' || s[i] > '9') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j - i >= best) {
            best = j - i;
            best_at = i;
        }
        i = j;
    }
    if (best == 0 || best > 9 || (best > 1 && s[best_at] == '0') || best_at > STRTAB_PREFIX_BYTES ||
        len - best_at - best > STRTAB_PREFIX_BYTES)
        return false;
    uint32_t v = 0;
    for (size_t i = best_at; i < best_at + best; i++)
        v = v * 10 + (uint32_t)(s[i] - '0');
    *plen = best_at;
    *slen = len - best_at - best;
    *num = v;
    return true;
}

static bool prefix_is(const strtab_prefix *pr, const char *s, size_t plen, const char *suf,
                      size_t slen)
{
    return pr->len == plen && pr->suffix_len == slen && memcmp(pr->text, s, plen) == 0 &&
           memcmp(pr->suffix, suf, slen) == 0;
}

/* The longest run of decimal digits in len bytes. */
static uint8_t longest_digit_run(const char *s, size_t len)
{
    size_t best = 0, run = 0;
    for (size_t i = 0; i < len; i++) {
        run = s[i] >= '0' && s[i] <= '9' ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    return (uint8_t)best;
}

static bool bytes_equal(const char *a, const char *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* Whether the name is prefix pr's text, a number and pr's suffix exactly as split_number()
 * would split it, without scanning it for its runs of digits: the digits between are a whole
 * run (the text ends and the suffix starts with a non-digit), at least as long as any run in
 * the text and longer than any in the suffix, canonical and at most 9 digits. Sets *num. */
static bool split_as(const strtab_prefix *pr, const char *s, size_t len, uint32_t *num)
{
    size_t plen = pr->len, slen = pr->suffix_len;
    if (len <= plen + slen)
        return false;
    size_t digits = len - plen - slen;
    /* the last and first bytes first: they tell most other prefixes apart */
    char last = s[len - 1];
    if (slen ? last != pr->suffix[slen - 1] : last < '0' || last > '9')
        return false;
    if (plen && s[0] != pr->text[0])
        return false;
    if (digits > 9 || digits < pr->text_run || digits <= pr->suffix_run ||
        (digits > 1 && s[plen] == '0') || !bytes_equal(pr->text, s, plen) ||
        !bytes_equal(pr->suffix, s + len - slen, slen))
        return false;
    uint32_t v = 0;
    for (size_t i = plen; i < plen + digits; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    *num = v;
    return true;
}

/* The index of the (prefix, suffix) pair, or STRTAB_NONE. */
static uint32_t find_prefix(const strtab *t, const char *s, size_t plen, const char *suf,
                            size_t slen)
{
    for (uint32_t i = 0; i < t->n_prefixes; i++)
        if (prefix_is(&t->prefixes[i], s, plen, suf, slen))
            return i;
    return STRTAB_NONE;
}

/* Where a numbered name lives: the dense entry `num` of prefix `pi`, unless the prefix is
 * mixed (then possibly the hash table). */
typedef struct place {
    bool numbered; /* PREFIX + canonical number */
    uint32_t pi;   /* its prefix, STRTAB_NONE when unknown */
    uint32_t num;
} place;

static place place_of(const strtab *t, const char *s, size_t len)
{
    place w = {false, STRTAB_NONE, 0};
    /* names come in runs of a few prefixes: most are found by matching a recent one */
    for (int k = 0; k < STRTAB_RECENT; k++) {
        uint32_t pi = t->recent[k];
        if (pi < t->n_prefixes && split_as(&t->prefixes[pi], s, len, &w.num)) {
            w.numbered = true;
            w.pi = pi;
            return w;
        }
    }
    size_t plen, slen;
    if (!split_number(s, len, &plen, &slen, &w.num))
        return w;
    w.numbered = true;
    w.pi = find_prefix(t, s, plen, s + len - slen, slen);
    return w;
}

/* The id of a name at place w found without the hash table, or STRTAB_NONE; *ask_hash tells
 * whether the hash table may still hold it. */
static uint32_t dense_find(const strtab *t, place w, bool *ask_hash)
{
    *ask_hash = true;
    if (!w.numbered)
        return STRTAB_NONE;
    if (w.pi == STRTAB_NONE) {
        /* a numbered name of an unknown prefix is only ever hashed when the prefixes ran out */
        *ask_hash = t->n_prefixes >= STRTAB_PREFIXES;
        return STRTAB_NONE;
    }
    const strtab_prefix *pr = &t->prefixes[w.pi];
    if (w.num < pr->cap && pr->dense[w.num])
        return pr->dense[w.num] - 1;
    *ask_hash = pr->mixed;
    return STRTAB_NONE;
}

uint32_t strtab_find(const strtab *t, const char *s, size_t len)
{
    bool ask_hash;
    uint32_t id = dense_find(t, place_of(t, s, len), &ask_hash);
    if (id != STRTAB_NONE || !ask_hash || t->n_slots == 0)
        return id;
    size_t slot;
    return lookup(t, s, len, strtab_hash(s, len), &slot);
}

/* Appends the string as a new id, or STRTAB_NONE when out of memory or room. */
static uint32_t append(strtab *t, const char *s, size_t len)
{
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
    uint32_t id = t->n++;
    t->offsets[id] = (uint32_t)t->chars_len;
    memcpy(t->chars + t->chars_len, s, len);
    t->chars[t->chars_len + len] = '\0';
    t->chars_len += len + 1;
    return id;
}

/* Makes room for number num in prefix pi's dense array when the total stays within a few
 * entries per id (sparse numbers go to the hash table instead). 0 when there is room, 1
 * when the number is too sparse, -1 when out of memory. */
static int dense_room(strtab *t, uint32_t pi, uint32_t num)
{
    strtab_prefix *pr = &t->prefixes[pi];
    if (num < pr->cap)
        return 0;
    size_t cap = pr->cap ? 2 * (size_t)pr->cap : 64;
    while (cap <= num)
        cap *= 2;
    if (t->dense_entries + (cap - pr->cap) > 4 * (size_t)t->n + 4096)
        return 1;
    uint32_t *d = realloc(pr->dense, cap * sizeof *d);
    if (!d)
        return -1;
    memset(d + pr->cap, 0, (cap - pr->cap) * sizeof *d);
    t->dense_entries += cap - pr->cap;
    pr->dense = d;
    pr->cap = (uint32_t)cap;
    return 0;
}

uint32_t strtab_intern(strtab *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return STRTAB_NONE;
    place w = place_of(t, s, len);
    bool ask_hash;
    uint32_t id = dense_find(t, w, &ask_hash);
    if (id != STRTAB_NONE) {
        note_recent(t, w.pi);
        return id;
    }
    if (w.numbered && w.pi == STRTAB_NONE && t->n_prefixes < STRTAB_PREFIXES) {
        if (t->n_prefixes % 8 == 0) {
            strtab_prefix *np = realloc(t->prefixes, (t->n_prefixes + 8) * sizeof *t->prefixes);
            if (!np)
                return STRTAB_NONE;
            t->prefixes = np;
        }
        strtab_prefix *pr = &t->prefixes[t->n_prefixes];
        memset(pr, 0, sizeof *pr);
        size_t plen = 0, slen = 0;
        uint32_t num = 0;
        split_number(s, len, &plen, &slen, &num);
        pr->len = (uint32_t)plen;
        memcpy(pr->text, s, plen);
        pr->suffix_len = (uint32_t)slen;
        memcpy(pr->suffix, s + len - slen, slen);
        pr->text_run = longest_digit_run(pr->text, plen);
        pr->suffix_run = longest_digit_run(pr->suffix, slen);
        w.pi = t->n_prefixes++;
        ask_hash = false;
    }
    if (w.numbered && w.pi != STRTAB_NONE) {
        if (ask_hash && t->n_slots) { /* a mixed prefix: it may have been hashed */
            size_t slot;
            id = lookup(t, s, len, strtab_hash(s, len), &slot);
            if (id != STRTAB_NONE)
                return id;
        }
        int room = dense_room(t, w.pi, w.num);
        if (room < 0)
            return STRTAB_NONE;
        if (room == 0) {
            id = append(t, s, len);
            if (id != STRTAB_NONE) {
                t->prefixes[w.pi].dense[w.num] = id + 1;
                note_recent(t, w.pi);
            }
            return id;
        }
        t->prefixes[w.pi].mixed = true; /* too sparse: hashed, and looked for there from now */
    }
    /* The hash table, at a load of at most 1/2 so that probes stay short. */
    if ((size_t)(t->n_hashed + 1) * 2 > t->n_slots) {
        if (rehash(t, t->n_slots ? t->n_slots * 2 : 64) != 0)
            return STRTAB_NONE;
    }
    uint64_t h = strtab_hash(s, len);
    size_t slot;
    id = lookup(t, s, len, h, &slot);
    if (id != STRTAB_NONE)
        return id;
    if (t->n_hashed == t->cap_hashed) {
        uint32_t cap = t->cap_hashed ? t->cap_hashed * 2 : 64;
        uint32_t *hs = realloc(t->hashed, (size_t)cap * sizeof *hs);
        if (!hs)
            return STRTAB_NONE;
        t->hashed = hs;
        t->cap_hashed = cap;
    }
    id = append(t, s, len);
    if (id == STRTAB_NONE)
        return STRTAB_NONE;
    t->hashed[t->n_hashed++] = id;
    t->slots[slot] = SLOT_TAG(h) | (uint64_t)(id + 1);
    return id;
}

uint32_t strtab_intern_cstr(strtab *t, const char *s)
{
    return strtab_intern(t, s, strlen(s));
}
