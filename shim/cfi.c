/* cfi.c - the fast stack walk from .eh_frame rules, remembered per code address (cfi.h). */
#include "cfi.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)
#define CFI_WALK 1
#endif

#ifdef CFI_WALK

/* DWARF register numbers on x86_64, and the return address column. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA  16

/* A frame larger than this, or a walk that moves the stack pointer further in one step, is
 * not trusted: libunwind decides. */
#define FRAME_BYTES_MAX ((uintptr_t)1 << 24)

/* ---- reading .eh_frame ---- */

/* A bounded reader over [p, end). */
struct cursor {
    const unsigned char *p, *end;
    bool bad;
};

static unsigned char take_u8(struct cursor *c)
{
    if (c->p >= c->end) {
        c->bad = true;
        return 0;
    }
    return *c->p++;
}

static uint64_t take_bytes(struct cursor *c, unsigned n)
{
    uint64_t v = 0;
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        return 0;
    }
    memcpy(&v, c->p, n); /* little-endian */
    c->p += n;
    return v;
}

static uint64_t take_uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        unsigned char b = take_u8(c);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = true;
    return 0;
}

static int64_t take_sleb(struct cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    unsigned char b;
    do {
        b = take_u8(c);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && !c->bad);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A pointer in the DW_EH_PE encoding `enc`, absolute or relative to its own address (or to
 * `datarel_base`, 0: not supported); false for the encodings compilers do not emit here. */
static bool take_encoded(struct cursor *c, unsigned char enc, uintptr_t datarel_base, uint64_t *out)
{
    if (enc == 0xff)
        return false; /* omitted */
    uintptr_t field = (uintptr_t)c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00:
        v = take_bytes(c, 8);
        break; /* absptr */
    case 0x02:
        v = take_bytes(c, 2);
        break; /* udata2 */
    case 0x03:
        v = take_bytes(c, 4);
        break; /* udata4 */
    case 0x04:
        v = take_bytes(c, 8);
        break; /* udata8 */
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)take_bytes(c, 2);
        break; /* sdata2 */
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)take_bytes(c, 4);
        break; /* sdata4 */
    case 0x0c:
        v = take_bytes(c, 8);
        break; /* sdata8 */
    default:
        return false;
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10:
        v += field;
        break; /* pcrel */
    case 0x30: /* datarel */
        if (!datarel_base)
            return false;
        v += datarel_base;
        break;
    default:
        return false;
    }
    if (enc & 0x80)
        return false; /* indirect */
    *out = v;
    return !c->bad;
}

/* How one register is recovered in the caller. */
enum how { HOW_SAME, HOW_UNDEF, HOW_OFFSET, HOW_OTHER };
struct reg_rule {
    enum how how;
    int64_t offset; /* HOW_OFFSET: saved at CFA + offset */
};
/* One row of the CFI table, for the registers the walk uses. */
struct row {
    bool cfa_ok; /* CFA = register + offset (not an expression) */
    uint64_t cfa_reg;
    int64_t cfa_offset;
    struct reg_rule rbp, ra;
};

struct cie_info {
    uint64_t code_align;
    int64_t data_align;
    unsigned char fde_enc;
    bool augmented; /* "z": FDEs carry an augmentation length */
    const unsigned char *insns, *insns_end;
};

static bool parse_cie(const unsigned char *cie, struct cie_info *ci)
{
    uint32_t len, id;
    memcpy(&len, cie, 4);
    if (len == 0 || len == 0xffffffffu)
        return false;
    struct cursor c = {cie + 4, cie + 4 + len, false};
    id = (uint32_t)take_bytes(&c, 4);
    unsigned char version = take_u8(&c);
    if (id != 0 || (version != 1 && version != 3))
        return false;
    const char *aug = (const char *)c.p;
    size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
    c.p += aug_len + 1;
    ci->code_align = take_uleb(&c);
    ci->data_align = take_sleb(&c);
    uint64_t ra = version == 1 ? take_u8(&c) : take_uleb(&c);
    if (c.bad || ra != REG_RA)
        return false;
    ci->fde_enc = 0x00;
    ci->augmented = aug[0] == 'z';
    if (ci->augmented) {
        uint64_t data_len = take_uleb(&c);
        if (c.bad || data_len > (uint64_t)(c.end - c.p))
            return false;
        struct cursor d = {c.p, c.p + data_len, false};
        for (const char *a = aug + 1; *a; a++) {
            uint64_t ignored;
            if (*a == 'R')
                ci->fde_enc = take_u8(&d);
            else if (*a == 'L')
                take_u8(&d);
            else if (*a == 'P') {
                unsigned char enc = take_u8(&d);
                /* The personality pointer's value does not matter, only its size. */
                if (!take_encoded(&d, enc & 0x0f, 0, &ignored))
                    return false;
            } else
                return false; /* 'S' (a signal frame) or unknown: libunwind's */
        }
        if (d.bad)
            return false;
        c.p += data_len;
    } else if (aug[0]) {
        return false;
    }
    ci->insns = c.p;
    ci->insns_end = c.end;
    return !c.bad;
}

static void set_rule(struct row *r, uint64_t reg, enum how how, int64_t offset)
{
    struct reg_rule rule = {how, offset};
    if (reg == REG_RBP)
        r->rbp = rule;
    else if (reg == REG_RA)
        r->ra = rule;
}

#define STATE_STACK 8

/* Runs CFA instructions over *r from code address loc while the row still applies to pc
 * (an advance past pc ends it). `initial` is the row after the CIE's instructions, for
 * DW_CFA_restore. False on an instruction the walk does not follow. */
static bool run_insns(struct cursor *c, uint64_t loc, uint64_t pc, const struct cie_info *ci,
                      const struct row *initial, struct row *r)
{
    struct row saved[STATE_STACK];
    unsigned depth = 0;
    while (c->p < c->end && !c->bad) {
        unsigned char op = take_u8(c);
        uint64_t reg, delta = 0;
        int64_t off;
        switch (op & 0xc0) {
        case 0x40: /* advance_loc */
            delta = op & 0x3f;
            goto advance;
        case 0x80: /* offset */
            off = (int64_t)take_uleb(c) * ci->data_align;
            set_rule(r, op & 0x3f, HOW_OFFSET, off);
            continue;
        case 0xc0: /* restore */
            reg = op & 0x3f;
            if (reg == REG_RBP)
                r->rbp = initial->rbp;
            else if (reg == REG_RA)
                r->ra = initial->ra;
            continue;
        default:
            break;
        }
        switch (op) {
        case 0x00:
            continue; /* nop */
        case 0x02:
            delta = take_u8(c);
            goto advance;
        case 0x03:
            delta = take_bytes(c, 2);
            goto advance;
        case 0x04:
            delta = take_bytes(c, 4);
            goto advance;
        case 0x05: /* offset_extended */
            reg = take_uleb(c);
            set_rule(r, reg, HOW_OFFSET, (int64_t)take_uleb(c) * ci->data_align);
            continue;
        case 0x06: /* restore_extended */
            reg = take_uleb(c);
            if (reg == REG_RBP)
                r->rbp = initial->rbp;
            else if (reg == REG_RA)
                r->ra = initial->ra;
            continue;
        case 0x07:
            set_rule(r, take_uleb(c), HOW_UNDEF, 0);
            continue;
        case 0x08:
            set_rule(r, take_uleb(c), HOW_SAME, 0);
            continue;
        case 0x09: /* register */
            reg = take_uleb(c);
            take_uleb(c);
            set_rule(r, reg, HOW_OTHER, 0);
            continue;
        case 0x0a: /* remember_state: the whole row, CFA included, as GCC expects */
            if (depth == STATE_STACK)
                return false;
            saved[depth++] = *r;
            continue;
        case 0x0b: /* restore_state */
            if (depth == 0)
                return false;
            *r = saved[--depth];
            continue;
        case 0x0c: /* def_cfa */
            r->cfa_reg = take_uleb(c);
            r->cfa_offset = (int64_t)take_uleb(c);
            r->cfa_ok = true;
            continue;
        case 0x0d:
            r->cfa_reg = take_uleb(c);
            continue; /* def_cfa_register */
        case 0x0e:
            r->cfa_offset = (int64_t)take_uleb(c);
            continue; /* def_cfa_offset */
        case 0x0f:    /* def_cfa_expression: libunwind's */
            return false;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = take_uleb(c);
            off = (int64_t)take_uleb(c);
            if (off < 0 || (uint64_t)off > (uint64_t)(c->end - c->p))
                return false;
            c->p += off;
            set_rule(r, reg, HOW_OTHER, 0);
            continue;
        case 0x11: /* offset_extended_sf */
            reg = take_uleb(c);
            set_rule(r, reg, HOW_OFFSET, take_sleb(c) * ci->data_align);
            continue;
        case 0x12: /* def_cfa_sf */
            r->cfa_reg = take_uleb(c);
            r->cfa_offset = take_sleb(c) * ci->data_align;
            r->cfa_ok = true;
            continue;
        case 0x13:
            r->cfa_offset = take_sleb(c) * ci->data_align;
            continue; /* def_cfa_offset_sf */
        case 0x14:    /* val_offset */
            reg = take_uleb(c);
            take_uleb(c);
            set_rule(r, reg, HOW_OTHER, 0);
            continue;
        case 0x15: /* val_offset_sf */
            reg = take_uleb(c);
            take_sleb(c);
            set_rule(r, reg, HOW_OTHER, 0);
            continue;
        case 0x2e:
            take_uleb(c);
            continue; /* GNU_args_size */
        case 0x2f:    /* GNU_negative_offset_extended */
            reg = take_uleb(c);
            set_rule(r, reg, HOW_OFFSET, -(int64_t)take_uleb(c) * ci->data_align);
            continue;
        default:
            return false; /* set_loc and anything else */
        }
    advance:
        loc += delta * ci->code_align;
        if (loc > pc)
            return !c->bad;
    }
    return !c->bad;
}

/* The FDE covering pc, from the module's .eh_frame_hdr binary search table. */
static const unsigned char *find_fde(uintptr_t pc)
{
    struct dl_find_object fo;
    if (_dl_find_object((void *)pc, &fo) != 0 || !fo.dlfo_eh_frame)
        return NULL;
    const unsigned char *hdr = fo.dlfo_eh_frame;
    /* version 1, and the table as linkers write it: udata4 count, datarel sdata4 pairs. */
    if (hdr[0] != 1 || hdr[3] != 0x3b)
        return NULL;
    struct cursor c = {hdr + 4, hdr + 4 + 16, false};
    uint64_t ignored, count;
    if (!take_encoded(&c, hdr[1], (uintptr_t)hdr, &ignored) ||
        !take_encoded(&c, hdr[2], (uintptr_t)hdr, &count) || count == 0)
        return NULL;
    const unsigned char *table = c.p;
    size_t lo = 0, hi = (size_t)count; /* the last entry starting at or before pc */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t start;
        memcpy(&start, table + mid * 8, 4);
        if ((uintptr_t)hdr + (intptr_t)start <= pc)
            lo = mid;
        else
            hi = mid;
    }
    int32_t start, fde;
    memcpy(&start, table + lo * 8, 4);
    memcpy(&fde, table + lo * 8 + 4, 4);
    if ((uintptr_t)hdr + (intptr_t)start > pc)
        return NULL;
    return hdr + fde;
}

int cfi_rule_at(uintptr_t pc, struct cfi_rule *rule)
{
    const unsigned char *fde = find_fde(pc);
    if (!fde)
        return 0;
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (len == 0 || len == 0xffffffffu || cie_off == 0)
        return 0;
    struct cie_info ci;
    if (!parse_cie(fde + 4 - cie_off, &ci))
        return 0;
    struct cursor c = {fde + 8, fde + 4 + len, false};
    uint64_t begin, range;
    if (!take_encoded(&c, ci.fde_enc, 0, &begin) ||
        !take_encoded(&c, ci.fde_enc & 0x0f, 0, &range) || pc < begin || pc - begin >= range)
        return 0;
    if (ci.augmented) {
        uint64_t skip = take_uleb(&c);
        if (c.bad || skip > (uint64_t)(c.end - c.p))
            return 0;
        c.p += skip;
    }
    struct row r = {false, 0, 0, {HOW_SAME, 0}, {HOW_SAME, 0}};
    struct cursor init = {ci.insns, ci.insns_end, false};
    if (!run_insns(&init, 0, UINT64_MAX, &ci, &r, &r))
        return 0;
    struct row initial = r;
    if (!run_insns(&c, begin, pc, &ci, &initial, &r))
        return 0;
    memset(rule, 0, sizeof *rule);
    if (r.ra.how == HOW_UNDEF) {
        rule->outermost = 1;
        return 1;
    }
    if (!r.cfa_ok || (r.cfa_reg != REG_RSP && r.cfa_reg != REG_RBP) || r.ra.how != HOW_OFFSET ||
        r.ra.offset != -8 || r.cfa_offset <= 0 || (uint64_t)r.cfa_offset >= FRAME_BYTES_MAX)
        return 0;
    if (r.rbp.how == HOW_OFFSET) {
        if (r.rbp.offset >= -8 || r.rbp.offset < -(int64_t)FRAME_BYTES_MAX)
            return 0;
        rule->rbp_saved = 1;
        rule->rbp_offset = (int32_t)r.rbp.offset;
    } else if (r.rbp.how != HOW_SAME) {
        return 0;
    }
    rule->cfa_is_rbp = r.cfa_reg == REG_RBP;
    rule->cfa_offset = (int32_t)r.cfa_offset;
    return 1;
}

/* ---- the rules remembered ---- */

/* An open-addressing table of code address -> packed rule, mapped at first use. A slot is
 * claimed by setting its address to SLOT_CLAIMED, then the rule is stored and the address
 * published (release), so a reader that sees the address sees its rule. */
#define RULE_SLOTS   8192u
#define RULE_PROBES  16u
#define SLOT_CLAIMED ((uintptr_t)1)

struct rule_slot {
    _Atomic uintptr_t pc;
    _Atomic uint64_t rule;
};

static _Atomic(struct rule_slot *) g_rules;

/* Packed: bit 0 known, 1 usable, 2 outermost, 3 cfa_is_rbp, 4 rbp_saved; bits 32..63 the
 * CFA offset; the rbp offset in bits 8..31 (negative, at most 2^24 bytes). */
static uint64_t pack(int usable, const struct cfi_rule *r)
{
    if (!usable)
        return 1;
    return 3u | (uint64_t)r->outermost << 2 | (uint64_t)r->cfa_is_rbp << 3 |
           (uint64_t)r->rbp_saved << 4 | ((uint64_t)(uint32_t)-r->rbp_offset & 0xffffffu) << 8 |
           (uint64_t)(uint32_t)r->cfa_offset << 32;
}

static int unpack(uint64_t v, struct cfi_rule *r)
{
    if (!(v & 2))
        return 0;
    r->outermost = (v >> 2) & 1;
    r->cfa_is_rbp = (v >> 3) & 1;
    r->rbp_saved = (v >> 4) & 1;
    r->rbp_offset = -(int32_t)((v >> 8) & 0xffffffu);
    r->cfa_offset = (int32_t)(v >> 32);
    return 1;
}

static struct rule_slot *rules(void)
{
    struct rule_slot *t = atomic_load_explicit(&g_rules, memory_order_acquire);
    if (t)
        return t;
    void *m = mmap(NULL, RULE_SLOTS * sizeof *t, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct rule_slot *expect = NULL;
    if (!atomic_compare_exchange_strong(&g_rules, &expect, (struct rule_slot *)m)) {
        munmap(m, RULE_SLOTS * sizeof *t);
        return expect;
    }
    return m;
}

static int rule_for(uintptr_t pc, struct cfi_rule *r)
{
    struct rule_slot *t = rules();
    if (!t)
        return cfi_rule_at(pc, r);
    uint32_t home = (uint32_t)(((uint64_t)pc * 0x9e3779b97f4a7c15ull) >> 51) & (RULE_SLOTS - 1);
    for (uint32_t k = 0; k < RULE_PROBES; k++) {
        struct rule_slot *s = &t[(home + k) & (RULE_SLOTS - 1)];
        uintptr_t at = atomic_load_explicit(&s->pc, memory_order_acquire);
        if (at == pc)
            return unpack(atomic_load_explicit(&s->rule, memory_order_relaxed), r);
        if (at == 0)
            break;
    }
    int usable = cfi_rule_at(pc, r);
    uint64_t packed = pack(usable, r);
    for (uint32_t k = 0; k < RULE_PROBES; k++) {
        struct rule_slot *s = &t[(home + k) & (RULE_SLOTS - 1)];
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(&s->pc, &empty, SLOT_CLAIMED)) {
            atomic_store_explicit(&s->rule, packed, memory_order_relaxed);
            atomic_store_explicit(&s->pc, pc, memory_order_release);
            break;
        }
        if (empty == pc)
            break;
    }
    return usable;
}

/* ---- the walk ---- */

/* One frame outward: the caller's ip, sp and rbp by the rule at lookup_pc. 0: the walk
 * cannot go on here (libunwind's), 1: stepped, 2: this was the outermost frame. */
static int step(uintptr_t lookup_pc, uintptr_t *ip, uintptr_t *sp, uintptr_t *rbp)
{
    struct cfi_rule r;
    if (!rule_for(lookup_pc, &r))
        return 0;
    if (r.outermost)
        return 2;
    uintptr_t cfa = (r.cfa_is_rbp ? *rbp : *sp) + (uintptr_t)(intptr_t)r.cfa_offset;
    /* A frame lies above the stack pointer, within bounds, 8-aligned: else the registers are
     * not what the rule assumes, and nothing is read. */
    if (cfa < *sp + 8 || cfa - *sp > FRAME_BYTES_MAX || (cfa & 7))
        return 0;
    uintptr_t caller_ip, caller_rbp = *rbp;
    memcpy(&caller_ip, (const void *)(cfa - 8), sizeof caller_ip);
    if (r.rbp_saved) {
        uintptr_t at = cfa + (uintptr_t)(intptr_t)r.rbp_offset;
        if (at < *sp)
            return 0;
        memcpy(&caller_rbp, (const void *)at, sizeof caller_rbp);
    }
    *ip = caller_ip;
    *sp = cfa;
    *rbp = caller_rbp;
    return 1;
}

__attribute__((noinline)) int cfi_backtrace(void **frames, int max)
{
    uintptr_t ip, sp, rbp;
    /* The three registers at one instruction, whose row in this function's CFI describes
     * them: the walk starts from this very frame. */
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=r"(ip), "=r"(sp), "=r"(rbp));
    if (step(ip, &ip, &sp, &rbp) != 1)
        return -1;
    int n = 0;
    while (n < max) {
        if (ip == 0)
            return n;
        frames[n++] = (void *)ip;
        /* A return address may be the first byte after the function (a noreturn call): its
         * call is the byte before, as libunwind looks it up. */
        int s = step(ip - 1, &ip, &sp, &rbp);
        if (s == 0)
            return -1;
        if (s == 2)
            return n;
    }
    return n;
}

#else

int cfi_rule_at(uintptr_t pc, struct cfi_rule *rule)
{
    (void)pc;
    (void)rule;
    return 0;
}

int cfi_backtrace(void **frames, int max)
{
    (void)frames;
    (void)max;
    return -1;
}

#endif
