/* symbolize: turning a module + offset into "function+0xOFF at FILE:LINE (module+0xOFF)",
 * offline, from the module files named in a trace (elfutils' libdwfl; debug info found
 * through build ids and the usual debug directories). A frame whose module cannot be read
 * keeps the module + offset form. Not thread-safe: one symbolizer per thread. */
#ifndef TLSAN_SYMBOLIZE_H
#define TLSAN_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

typedef struct symbolizer symbolizer;

/* Returns NULL when out of memory. */
symbolizer *symbolizer_create(void);
void symbolizer_free(symbolizer *s);

/* Formats the frame at `offset` bytes past the load bias `bias` of the module file `path`
 * (a return address: the call site looked up is one byte before) into buf. Returns buf. */
char *symbolizer_frame(symbolizer *s, const char *path, uint64_t bias, uint64_t offset, char *buf,
                       size_t buf_bytes);

#endif
