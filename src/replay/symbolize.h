/* symbolize: a module + offset becomes its function, file and line, with the functions inlined
 * at that address, from the module file's symbols and DWARF (elfutils' libdwfl; debug info
 * found through build ids and the usual debug directories). A frame whose module cannot be
 * read, or has no symbol there, keeps the module + offset form.
 *
 * Used offline by `tlsan replay` (libdw linked, symbolizer_create) and inside the process by
 * the shim at report time (libdw loaded with dlopen when the first report is made,
 * symbolizer_create_with; shim/symbolizer.c). All memory comes from malloc: the shim runs it
 * on its own heap (shim/symheap.h). Not thread-safe: one symbolizer per thread, or a lock. */
#ifndef TLSAN_SYMBOLIZE_H
#define TLSAN_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct symbolizer symbolizer;
struct symbolize_libdw; /* replay/symbolize_libdw.h */

/* The symbolizer of `tlsan replay`, on the linked libdw. NULL when out of memory. */
symbolizer *symbolizer_create(void);
/* A symbolizer calling libdw through `api` (which must outlive it). NULL when out of memory. */
symbolizer *symbolizer_create_with(const struct symbolize_libdw *api);
void symbolizer_free(symbolizer *s);

/* One source-level frame of a return address: the function, where in it, and whether it was
 * inlined into the next frame (which then has the same address). */
typedef struct symbol_frame {
    const char *function; /* NULL when unknown */
    const char *file;     /* as the debug info names it (usually absolute); NULL when unknown */
    int line;             /* 0 when unknown */
    uint64_t function_offset_bytes; /* the address past the function's symbol (not inlined) */
    bool inlined;
} symbol_frame;

/* The source frames of the return address `offset` bytes past the load bias `bias` of module
 * file `path` (the call looked up is one byte before it): innermost first (the inlined
 * functions, then the function holding the code). Returns how many were stored (at most
 * `max`); 0 when nothing is known (no readable file, no symbol). The strings live as long as
 * s. */
size_t symbolizer_lookup(symbolizer *s, const char *path, uint64_t bias, uint64_t offset,
                         symbol_frame *out, size_t max);

/* Whether a frame is a wrapper around the program's call rather than the call itself, and so
 * dropped from the start of a stack: a function of include/tlsan/tlsan.h (the annotation
 * API's inline wrappers), or glibc's aligned allocators (posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc), through which the program reached the shim's hook. */
bool symbol_frame_is_wrapper(const symbol_frame *f, const char *module_path);

/* One captured frame: a return address `offset` bytes past the load bias `bias` of module
 * file `module_path` (NULL when no module held it; offset is then the address). */
typedef struct symbol_raw_frame {
    const char *module_path;
    uint64_t bias, offset;
} symbol_raw_frame;

/* One frame of a symbolized stack: raw frame `raw`, and what is known of it (sym.function NULL
 * when nothing). */
typedef struct symbol_stack_frame {
    size_t raw;
    symbol_frame sym;
} symbol_stack_frame;

/* Symbolizes a captured stack, innermost first, each raw frame as its inlined functions and
 * the function holding it (s NULL: nothing looked up, one unknown frame each), with the
 * wrappers at its start dropped (symbol_frame_is_wrapper), so that frame 0 is the program's
 * call. `exact_first`: raw frame 0 is a faulting instruction itself (a stack captured in a
 * signal handler), not a return address. Returns how many frames were stored, at most max. The
 * one rule for the shim's reports and tlsan replay's. */
size_t symbolizer_stack_frames(symbolizer *s, const symbol_raw_frame *raw, size_t n_raw,
                               bool exact_first, symbol_stack_frame *out, size_t max);

/* The bytes of a function name to show: without the symbol version a name from the dynamic
 * symbol table may carry ("__libc_start_main@@GLIBC_2.34"). */
size_t symbol_name_length(const char *function);

/* The last component of a path. */
const char *symbolize_base_name(const char *path);

/* Formats one symbolized frame of raw frame `raw` (symbolizer_stack_frames' frames, or
 * symbolizer_lookup's) as "function+0xOFF at FILE:LINE (module+0xOFF)", an inlined one as
 * "function at FILE:LINE (module+0xOFF, inlined)", files and modules by their base names;
 * "module+0xOFF" when nothing is known (f->function NULL). Returns buf. */
char *symbol_frame_text(const symbol_raw_frame *raw, const symbol_frame *f, char *buf,
                        size_t buf_bytes);

#endif
