/* replay: the plan a recorded run performed, rebuilt from its trace (docs/trace-format.md,
 * "Meaning for replay"), so the static checker judges what really ran: the real op order,
 * the real addresses, the real streams and events, with the real stacks. */
#ifndef TLSAN_REPLAY_H
#define TLSAN_REPLAY_H

#include "replay/trace_read.h"

#include <stdbool.h>
#include <stdio.h>

/* Builds and finalizes the plan of trace `t`, named `name`. With `symbolize`, stacks become
 * "function+0xOFF at FILE:LINE (module+0xOFF)" frames read from the module files;
 * otherwise "module+0xOFF". An op that names a tensor never bound, or a view of one, is a
 * bad annotation of the engine: the name is left out and one line per name goes to `warn`
 * (when not NULL). Returns TLSAN_OK with *out owned by the caller, or the builder's error
 * (TLSAN_ERR_INVALID when the rebuilt plan breaks a rule, e.g. a tensor past its arena). */
tlsan_status replay_build(const trace_data *t, const char *name, bool symbolize, FILE *warn,
                          tlsan_plan **out, tlsan_error *err);

#endif
