/* tlsan_trace_events TRACE: prints how many events a trace holds (bench/replay.sh sizes its
 * runs by it). Exit status 2 when the trace cannot be read. */
#include "replay/trace_read.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tlsan_trace_events TRACE\n");
        return 2;
    }
    trace_data *t = NULL;
    tlsan_error err = {0};
    if (trace_read_file(argv[1], &t, &err) != TLSAN_OK) {
        char buf[1200];
        fprintf(stderr, "tlsan_trace_events: %s\n", tlsan_error_format(&err, buf, sizeof buf));
        return 2;
    }
    printf("%zu\n", trace_n_events(t));
    trace_data_free(t);
    return 0;
}
