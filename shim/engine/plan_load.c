/* plan_load.c - tlsan_plan_load: the plan handed over is checked at once, its findings reported
 * with the checker's own text (checker_report.h), its shared roots marked for checksum=shared
 * (declared in engine.h). */
#include "engine/arena.h"
#include "engine/sentinel_ranges.h"
#include "engine/state.h"
#include "engine/work.h"

#include "checker_report.h"
#include "checksum.h"
#include "depot.h"
#include "heap/heap.h"
#include "modules.h"
#include "out.h"
#include "check/plan_query.h" /* the checker's interface to the shim */
#include "runtime_report.h"
#include "shim.h"
#include "trace.h"
#include "tlsan/check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The name a plan handed over goes by in its error messages and source positions. */
#define PLAN_LOAD_LABEL "tlsan_plan_load"

static void mark_name_plan_shared(void *ctx, const char *name)
{
    (void)ctx;
    struct name *n = engine_name(name, true);
    if (n)
        n->plan_shared = true;
}

/* checksum=shared: every root of the plan whose bytes intersect another root's. Lock held. */
static void mark_plan_shared(const tlsan_plan *p)
{
    plan_query_shared_roots(p, mark_name_plan_shared, NULL);
}

/* A finding of the plan handed over: the shim's headline, the checker's own body (the lines
 * `tlsan check` prints for it), where the plan was loaded. */
static void report_plan_finding(const tlsan_report *rep, const tlsan_finding *f,
                                const tlsan_plan *p, uint32_t stack)
{
    char where[300];
    struct outbuf wb = {where, 0, sizeof where - 1};
    if (tlsan_plan_name(p))
        out_appendf(&wb, "plan '%s'", tlsan_plan_name(p));
    else
        out_appendf(&wb, "the loaded plan");
    where[wb.len] = 0;
    struct report *r = report_begin_finding(f, where);
    if (!r)
        return;
    checker_report_body(r, rep, f, PLAN_LOAD_LABEL);
    report_stack(r, "plan loaded at", stack);
    report_end_finding(r, f, where);
}

int tlsan_rt_plan_load(const char *plan_json, size_t json_bytes)
{
    if (!engine_active())
        return 0;
    uint32_t stack = depot_capture(1);
    if (!plan_json) {
        usage_warning("tlsan_plan_load: NULL plan ignored");
        return -1;
    }
    trace_plan(plan_json, json_bytes, stack);
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_report *rep = NULL;
    tlsan_error err;
    memset(&err, 0, sizeof err);
    int result = -1;
    tlsan_status st =
        tlsan_read_buffer(plan_json, json_bytes, PLAN_LOAD_LABEL, &plan, &cache, &err);
    if (st != TLSAN_OK) {
        char msg[1100];
        if (st == TLSAN_ERR_INVALID)
            tlsan_error_format(&err, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "%s", tlsan_status_name(st));
        out_printf("tlsan: tlsan_plan_load: invalid plan: %s\n", msg);
        goto done;
    }
    st = plan ? tlsan_check(plan, NULL, &rep) : tlsan_check_cache(cache, NULL, &rep);
    if (st != TLSAN_OK) {
        out_printf("tlsan: tlsan_plan_load: cannot check the plan: %s\n", tlsan_status_name(st));
        goto done;
    }
    engine_lock();
    if (plan) {
        mark_plan_shared(plan);
    } else {
        for (size_t i = 0; i < tlsan_cache_n_plans(cache); i++)
            mark_plan_shared(tlsan_cache_plan(cache, i));
    }
    /* Names already bound pick the mark up through their name (hash_wanted). */
    engine_unlock();
    size_t n = tlsan_report_count(rep);
    for (size_t i = 0; i < n; i++) {
        const tlsan_finding *f = tlsan_report_finding(rep, i);
        const tlsan_plan *p = plan;
        if (!p && f->plan_index >= 0)
            p = tlsan_cache_plan(cache, (size_t)f->plan_index);
        if (!p)
            p = tlsan_cache_plan(cache, 0);
        if (p)
            report_plan_finding(rep, f, p, stack);
    }
    result = (int)n;
done:
    tlsan_report_free(rep);
    tlsan_plan_free(plan);
    tlsan_cache_free(cache);
    return result;
}
