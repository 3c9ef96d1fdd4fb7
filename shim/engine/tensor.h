/* tensor.h - the bind and view of a tensor by name (tensor.c), for the entry points that make
 * them on the program's behalf: the version-2 calls (handle.c) bind and declare views through
 * these, so that a usage warning names the function the program called (`api`, such as
 * "tlsan_host_access"), not the version-1 call made for it. tlsan_rt_tensor_bind and
 * tlsan_rt_view_bind are these with their own names. */
#ifndef TLSAN_SHIM_ENGINE_TENSOR_H
#define TLSAN_SHIM_ENGINE_TENSOR_H

#include <stddef.h>

void engine_tensor_bind(const char *api, const void *arena_base, const char *name, const void *addr,
                        size_t size_bytes, unsigned flags);
void engine_view_bind(const char *api, const char *name, const char *base_name,
                      size_t view_offset_bytes, size_t size_bytes);

#endif
