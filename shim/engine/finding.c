/* finding.c - the run-time findings' reports. */
#include "engine/finding.h"

#include "runtime_report.h"

struct report *live_corruption_begin(const char *tensor, const char *arena, uint64_t lo_bytes,
                                     uint64_t hi_bytes, const char *where)
{
    return report_begin(TLSAN_KIND_LIVE_CORRUPTION, 1,
                        "on tensor '%s' in arena '%s' bytes [%llu, %llu)%s%s", tensor, arena,
                        (unsigned long long)lo_bytes, (unsigned long long)hi_bytes,
                        where ? " in " : "", where ? where : "");
}
