/* deepbind.h - objects opened with dlopen(RTLD_DEEPBIND): the shim's functions bound in them.
 *
 * A library opened with RTLD_DEEPBIND looks its symbols up in itself and its dependencies
 * before the global scope, so its malloc, free, operator new ... are glibc's and libstdc++'s,
 * not the preloaded shim's: a block the program allocated (which starts 16 bytes into glibc's
 * chunk) freed by the library would reach glibc's free (an abort), and a block the library
 * allocated freed by the program would be an invalid free for the shim. AddressSanitizer
 * refuses such a dlopen; the shim binds them instead: after the dlopen, each relocation of the
 * objects it loaded that names a function the shim interposes (libtlsan.map) and holds the
 * definition the shim wraps (or a lazy binding that would resolve to it) is pointed at the
 * shim's (a GOT made read-only by RELRO is opened for the write and closed again). What the
 * objects allocated before that, in their constructors, is glibc's: deepbind_glibc_block tells
 * such a block from a bad pointer. */
#ifndef TLSAN_SHIM_DEEPBIND_H
#define TLSAN_SHIM_DEEPBIND_H

#include <stdbool.h>
#include <stddef.h>

/* dlopen(file, flags) with RTLD_DEEPBIND for the program's call at `caller` (its return
 * address): a bare name is searched along the caller's RUNPATH or RPATH first, as glibc would
 * for that caller (it sees the shim), then `next` (the real dlopen) opens it and the objects
 * it loaded are bound (deepbind_bind). */
void *deepbind_dlopen(void *(*next)(const char *, int), const char *file, int flags,
                      const void *caller);
/* The number of loaded objects now, for deepbind_bind after the dlopen. */
size_t deepbind_objects(void);
/* Binds the shim's functions in the objects loaded after the first `before` ones, by the
 * dlopen that returned `handle`. Returns the relocations rewritten; one line, once, when
 * some could not be (the program then runs as it would have: glibc's functions there). */
size_t deepbind_bind(void *handle, size_t before);
/* True once a library was opened with RTLD_DEEPBIND. */
bool deepbind_seen(void);
/* p, a pointer the shim's table does not know, after deepbind_seen: true when it is the start
 * of a chunk glibc's malloc handed out and has not taken back (the header and the next
 * chunk's in-use bit, read without faulting, pass glibc's own checks of free), so that the
 * shim frees it with glibc's free instead of reporting an invalid free. */
bool deepbind_glibc_block(const void *p);

#endif
