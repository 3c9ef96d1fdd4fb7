/* stats: arena statistics of a checked plan. */
#include "check/stats.h"

#include "check/overlap.h"

#include <stdlib.h>
#include <string.h>

/* Paths enumerated for the live-bytes lower bound before it falls back to must-live spans. */
#define STATS_MAX_PATHS 64u

__extension__ typedef unsigned __int128 u128;

/* Peak of live root bytes per arena over the given lifetimes; raises peak[] in place. */
static int live_peaks(const tlsan_plan *p, const life *lives, u128 *peak)
{
    size_t n_keys = p->n_ops + 3;
    uint32_t *count = calloc(n_keys + 1, sizeof *count);
    size_t n_ev = 0;
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (p->tensors[t].root == t && !life_empty(lives[t]))
            n_ev += 2;
    uint32_t *ev = malloc((n_ev ? n_ev : 1) * sizeof *ev); /* 2*t + is_end */
    u128 *cur = calloc(p->n_arenas ? p->n_arenas : 1, sizeof *cur);
    if (!count || !ev || !cur) {
        free(count);
        free(ev);
        free(cur);
        return -1;
    }
#define EV_KEY(t, end) ((size_t)((end) ? lives[t].last + 2 : lives[t].first + 1))
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (p->tensors[t].root == t && !life_empty(lives[t])) {
            count[EV_KEY(t, 0) + 1]++;
            count[EV_KEY(t, 1) + 1]++;
        }
    for (size_t k = 0; k < n_keys; k++)
        count[k + 1] += count[k];
    for (uint32_t t = 0; t < p->n_tensors; t++)
        if (p->tensors[t].root == t && !life_empty(lives[t])) {
            ev[count[EV_KEY(t, 0)]++] = 2 * t;
            ev[count[EV_KEY(t, 1)]++] = 2 * t + 1;
        }
    /* Within one step key, apply all changes before reading the peak. */
    size_t i = 0;
    while (i < n_ev) {
        size_t j = i;
        size_t key = EV_KEY(ev[i] / 2, ev[i] & 1);
        while (j < n_ev && EV_KEY(ev[j] / 2, ev[j] & 1) == key) {
            uint32_t t = ev[j] / 2;
            uint32_t a = p->tensors[t].arena;
            if (ev[j] & 1)
                cur[a] -= p->tensors[t].bytes;
            else
                cur[a] += p->tensors[t].bytes;
            j++;
        }
        for (size_t k = i; k < j; k++) {
            uint32_t a = p->tensors[ev[k] / 2].arena;
            if (cur[a] > peak[a])
                peak[a] = cur[a];
        }
        i = j;
    }
#undef EV_KEY
    free(count);
    free(ev);
    free(cur);
    return 0;
}

/* An in-place op may write its output over the input it reads last: at that step the two
 * roots need their bytes once, not twice. Counting the output from the next step on keeps the
 * bound a bound (it may only come out lower) where the plan declares in-place pairs. */
static void trim_inplace(const tlsan_plan *p, life *lives)
{
    for (uint32_t k = 0; k < p->n_ops; k++) {
        const op_rec *o = &p->ops[k];
        const op_extra *ox = op_x(p, o);
        for (uint32_t q = 0; q < ox->n_inplace; q++) {
            uint32_t ro = p->tensors[p->id_pool.v[ox->inplace_start + 2 * q]].root;
            uint32_t ri = p->tensors[p->id_pool.v[ox->inplace_start + 2 * q + 1]].root;
            if (ro == ri || p->tensors[ro].arena != p->tensors[ri].arena)
                continue;
            if (life_empty(lives[ro]) || life_empty(lives[ri]) || lives[ri].last != (int32_t)k ||
                lives[ro].first != (int32_t)k)
                continue;
            if (lives[ro].last > (int32_t)k)
                lives[ro].first = (int32_t)k + 1;
            else
                lives[ro] = (life){LIFE_NONE_FIRST, LIFE_NONE_LAST};
        }
    }
}

int stats_compute(const tlsan_plan *p, const access_index *ix, path_state *ps, if_set *set,
                  plan_stats *s)
{
    s->n_tensors = p->n_tensors;
    s->n_ops = p->n_ops;
    s->n_arenas = p->n_arenas;
    s->arenas = calloc(p->n_arenas ? p->n_arenas : 1, sizeof *s->arenas);
    u128 *peak = calloc(p->n_arenas ? p->n_arenas : 1, sizeof *peak);
    life *lives = malloc((p->n_tensors ? p->n_tensors : 1) * sizeof *lives);
    int rc = -1;
    if (!s->arenas || !peak || !lives)
        goto out;
    for (uint32_t t = 0; t < p->n_tensors; t++) {
        const tensor_rec *tr = &p->tensors[t];
        if (tr->root != t)
            continue;
        s->n_roots++;
        tlsan_arena_stats *as = &s->arenas[tr->arena];
        uint64_t end = root_end(tr);
        if (end > as->required_bytes)
            as->required_bytes = end;
    }
    /* Every path when few, else the spans that are live on every path (still a bound). */
    bool approx = false;
    if_set_clear(set);
    for (uint32_t f = 0; f < p->n_ifs; f++)
        set->ifs[set->n++] = f;
    if (if_set_paths(set, p) <= STATS_MAX_PATHS) {
        path_first(ps, set);
        do {
            for (uint32_t t = 0; t < p->n_tensors; t++)
                lives[t] = p->tensors[t].root == t ? root_life(ix, p, t, ps)
                                                   : (life){LIFE_NONE_FIRST, LIFE_NONE_LAST};
            trim_inplace(p, lives);
            if (live_peaks(p, lives, peak) != 0)
                goto out;
        } while (path_next(ps, set));
    } else {
        approx = true;
        for (uint32_t t = 0; t < p->n_tensors; t++)
            lives[t] = root_must(ix, p, t);
        trim_inplace(p, lives);
        if (live_peaks(p, lives, peak) != 0)
            goto out;
    }
    for (size_t a = 0; a < p->n_arenas; a++) {
        tlsan_arena_stats *as = &s->arenas[a];
        as->name = strtab_str(&p->strings, p->arenas[a].name);
        as->bytes = p->arenas[a].bytes;
        as->lower_bound_bytes = peak[a] > (u128)UINT64_MAX ? UINT64_MAX : (uint64_t)peak[a];
        as->efficiency =
            as->required_bytes ? (double)as->lower_bound_bytes / (double)as->required_bytes : 1.0;
        as->approximate = approx;
    }
    rc = 0;
out:
    free(peak);
    free(lives);
    return rc;
}
