/* heap.h - tracked heap blocks: the side table of live blocks (address -> size, alloc stack),
 * sentinel fills, the FIFO quarantine, redzones, and the checks on free and on eviction.
 * interpose.c calls these; the real allocator functions come from there. */
#ifndef TLSAN_SHIM_HEAP_H
#define TLSAN_SHIM_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* The sentinel: bytes FE 7F repeated from a block's start (the u16 0x7FFE little-endian).
 * Read at any aligned offset as f16, bf16, f32 or f64 it is a NaN, so a stale read shows up
 * in outputs; as an int32 it is the unusual 0x7FFE7FFE. */
#define SHIM_SENTINEL_U16 0x7FFEu

/* Fills [p, p+n) with the sentinel, phase taken from the address (even = 0xFE). */
void sentinel_fill(void *p, size_t n);
/* Returns the offset of the first byte in [p, p+n) that differs from the sentinel, or n. */
size_t sentinel_find_change(const void *p, size_t n);
/* The sentinel byte expected at address a. */
static inline unsigned char sentinel_byte(uintptr_t a)
{
    return (a & 1) ? 0x7F : 0xFE;
}

#endif
