/* Test helpers: check a plan given as JSON text and compare its findings as
 * "kind tensor tensor" lines, sorted, joined with '\n' (the shape of the .expect files). */
#ifndef TLSAN_TEST_TCHECK_H
#define TLSAN_TEST_TCHECK_H

#include "tlsan/check.h"

/* Reads `json` (a plan or a cache), checks it and returns the findings as sorted lines
 * joined by '\n' (malloc'd; the caller frees), or "invalid: WHERE: WHAT" when the reader
 * refuses it. max_paths 0 is the default. */
char *tcheck_lines(const char *json, unsigned max_paths);

/* The same for a file. */
char *tcheck_file_lines(const char *path);

/* Reads a plan (not a cache) from JSON text; fails the test when invalid. */
tlsan_plan *tcheck_plan(const char *json);

/* Reads a whole file into a malloc'd NUL-terminated buffer, NULL when it cannot. */
char *tcheck_slurp(const char *path);

/* Like tcheck_lines() and tcheck_plan() with ' standing for " (readable test plans). */
char *tcheck_q(const char *json_q, unsigned max_paths);
tlsan_plan *tcheck_plan_q(const char *json_q);

/* Index of the tensor named `name` in a plan (src/check/plan.h); fails the test when absent. */
uint32_t tcheck_tensor(const tlsan_plan *p, const char *name);

#endif
