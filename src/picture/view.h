/* view: pictures of memory plans (tlsan view, tlsan check --svg).
 *
 * People who debug memory planners look at one picture: steps across, byte offsets down,
 * one rectangle per storage root spanning its derived lifetime and its bytes. This module
 * computes what that picture shows (view_model_build: lifetimes per branch path, views
 * inside their roots, which tensors the checker's findings involve) and writes it either as
 * one self-contained HTML page (data embedded as JSON, drawn by embedded JavaScript with
 * zoom, pan, hover and a branch-path selector) or as a static SVG for CI artifacts
 * (view_svg.c).
 *
 * Lifetimes come from lifetime.h and a view's accesses from view_access.h, the same code the
 * checker judges with, so the picture never disagrees with the report. */
#ifndef TLSAN_VIEW_H
#define TLSAN_VIEW_H

#include "check/lifetime.h"
#include "check/view_access.h"
#include "tlsan/check.h"

#include <stdio.h>

/* Paths over all ifs enumerated one by one; a plan with more is drawn on the union of its
 * paths only (every lifetime then contains the lifetime of every path). */
#define VIEW_MAX_PATHS 64u

/* One input to draw: a plan or a cache, with the report tlsan_check gave it (borrowed). */
typedef struct view_unit {
    const char *label; /* the file name as the user gave it */
    const tlsan_plan *plan;
    const tlsan_cache *cache;
    const tlsan_report *report;
} view_unit;

enum {
    VIEW_MARK_NONE = 0,
    VIEW_MARK_FLAGGED = 1,  /* named by a finding that is not about a pair sharing bytes */
    VIEW_MARK_CONFLICT = 2, /* one of a pair of a live-overlap, bad-inplace or unordered-reuse */
};

/* What the picture of one plan shows. Tensor-indexed arrays cover views too. */
typedef struct view_model {
    const tlsan_plan *plan;
    const tlsan_report *report;
    size_t plan_index; /* index of the plan in its report */
    size_t n_paths;    /* paths enumerated (1 without ifs); 0: too many, union only */
    uint64_t paths_total;
    uint32_t *path_arms; /* n_paths * n_ifs: the arm of every if on each path */
    life *life;          /* per tensor: union of its lifetimes over the paths */
    uint32_t *dep;       /* tensors whose lifetime depends on the path */
    size_t n_dep;
    life *dep_life; /* n_paths * n_dep: their lifetime on each path */
    uint8_t *mark;  /* per tensor: VIEW_MARK_* */
    /* Own accesses of every tensor (not its views'), ascending op: for the ops that read
     * and write it. CSR: acc_start has n_tensors + 1 entries. */
    uint32_t *acc_start, *acc_op;
    uint8_t *acc_rw;
    /* Per view: its accesses and those of the views below it, from the checker's builder
     * (view_access_build_every_view), which its drawn lifetime is derived from. */
    view_access views;
    uint64_t *live_max; /* n_arenas * (n_ops + 2): most live root bytes at each step from -1
                           to n_ops over the paths drawn */
} view_model;

/* Builds the model of plan `plan_index` of `report` (the plan must be the one checked).
 * 0, or -1 when out of memory (then nothing is left to free). */
int view_model_build(view_model *m, const tlsan_plan *plan, const tlsan_report *report,
                     size_t plan_index);
void view_model_free(view_model *m);

/* True when finding f concerns the plan of model m (a cache-key collision concerns two). */
bool view_finding_in_plan(const view_model *m, const tlsan_finding *f);
/* The tensor index in m's plan of the finding's tensor i, NO_INDEX when it has none there. */
uint32_t view_finding_tensor(const view_model *m, const tlsan_finding *f, size_t i);
/* The arena (index) a tensor lies in: its storage root's. */
static inline uint32_t view_tensor_arena(const tlsan_plan *p, uint32_t t)
{
    return p->tensors[p->tensors[t].root].arena;
}

/* True when the file starts with the magic of a tlsan trace (docs/trace-format.md), so
 * `tlsan view` replays it instead of reading it as a plan. False when unreadable. */
bool view_file_is_trace(const char *path);

/* Writes one HTML page showing every plan of the units (a cache: one section per plan).
 * 0, or -1 when the stream or an allocation failed. */
int view_write_html(const view_unit *units, size_t n_units, FILE *out);

/* Writes one static SVG of the same charts (union of the branch paths, live bytes as the
 * most over the paths). 0, or -1 when the stream or an allocation failed. */
int view_write_svg(const view_unit *units, size_t n_units, FILE *out);

/* The embedded page assets (generated from src/picture/view.js and src/picture/view.css at build
 * time), NUL-terminated UTF-8. */
extern const unsigned char view_asset_js[];
extern const unsigned char view_asset_css[];

#endif
