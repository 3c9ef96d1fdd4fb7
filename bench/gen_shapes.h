/* gen_shapes: the benchmark's multi-stream plan shapes (tlsan_gen_plan --shape streams or
 * branchy), written straight to JSON with their exact expected findings. */
#ifndef TLSAN_BENCH_GEN_SHAPES_H
#define TLSAN_BENCH_GEN_SHAPES_H

#include <stdbool.h>
#include <stdint.h>

/* Writes the plan to out_path and its expected findings ("KIND a b" per line, names sorted,
 * in any line order) to expected_path. `branchy` adds conditional tenants. Returns the exit
 * status: 0 written, 2 on an I/O error. */
int gen_streams_write(const char *out_path, const char *expected_path, uint64_t n_roots,
                      uint64_t seed, uint64_t k_drop, bool branchy);

#endif
