/* elfsym.h - a function defined by a loaded object, read from the object's own dynamic symbol
 * table (PT_DYNAMIC: DT_SYMTAB, DT_STRTAB, DT_GNU_HASH or DT_HASH, DT_VERSYM), as the dynamic
 * linker would find it, but in any object: one loaded with dlopen(RTLD_LOCAL), which
 * dlsym(RTLD_DEFAULT / RTLD_NEXT) cannot see, or one whose name says nothing of what it holds.
 *
 * Only defined functions (STT_FUNC, global or weak, not a hidden version) are found; an IFUNC
 * is not (its resolver would have to run). Objects are walked with dl_iterate_phdr, which
 * holds the loader's lock meanwhile: do not call these from inside a dl_iterate_phdr callback.
 * No allocation; thread-safe. */
#ifndef TLSAN_SHIM_ELFSYM_H
#define TLSAN_SHIM_ELFSYM_H

#include <stddef.h>

/* The address of function `name`:
 *   in_object != NULL: as defined by the loaded object whose mapping holds that address;
 *   in_object == NULL: as defined by the first loaded object (dl_iterate_phdr's order: the
 *                      program, then the libraries in load order) that defines it, leaving out
 *                      the object holding `not_in` (the caller's own object, say).
 * On success, `object` (cap bytes, may be NULL) gets the object's path ("" for the main
 * program). Returns NULL when no object qualifies. */
void *elfsym_lookup(const char *name, const void *in_object, const void *not_in, char *object,
                    size_t cap);

#endif
