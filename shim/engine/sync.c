/* sync.c - events, waits and host syncs: recorded in the trace only (replay judges the order;
 * declared in engine.h). */
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

void tlsan_rt_event_record(int event, int stream)
{
    if (!engine_active())
        return;
    trace_record(event, stream, depot_capture(1));
}

void tlsan_rt_event_wait(int stream, int event)
{
    if (!engine_active())
        return;
    trace_wait(stream, event, depot_capture(1));
}

void tlsan_rt_host_sync(void)
{
    if (!engine_active())
        return;
    trace_sync(depot_capture(1));
}
