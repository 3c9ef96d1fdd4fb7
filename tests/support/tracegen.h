/* tracegen: writes traces by hand (docs/trace-format.md) for the reader and replay tests, with
 * the format's numbers from core/trace_format.h (tags: TRACE_STRING ...). */
#ifndef TLSAN_TEST_TRACEGEN_H
#define TLSAN_TEST_TRACEGEN_H

#include "core/trace_format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tracegen {
    unsigned char *buf;
    size_t n, cap;
} tracegen;

/* Starts a trace: the 32-byte header with this pid (parent pid 1). */
void tg_header(tracegen *g, uint32_t pid);
/* Appends one record: `fmt` has one letter per field, 'u' (uint64_t varint) or 's' (const char
 * * string). The payload size is computed. */
void tg_rec(tracegen *g, unsigned tag, const char *fmt, ...);
/* Appends raw bytes. */
void tg_raw(tracegen *g, const void *p, size_t n);
void tg_free(tracegen *g);

#endif
