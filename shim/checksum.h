/* checksum.h - the tensor checksum: XXH3 64-bit through libxxhash's run-time dispatcher, so
 * the AVX2 (or AVX-512) kernel is used where the CPU has it without building for it. */
#ifndef TLSAN_SHIM_CHECKSUM_H
#define TLSAN_SHIM_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The checksum of n bytes at p. Never allocates; thread-safe. */
uint64_t checksum_bytes(const void *p, size_t n);

#endif
