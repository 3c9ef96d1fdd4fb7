/* handle.h - the handle API of tlsan.h (version 2): tensor handles, views that follow their
 * root, in-place outputs from one declaration, ops declared by handle with a source location,
 * host accesses. The entry points (tlsan_rt_bind ... tlsan_rt_host_access) are declared in
 * engine.h; they translate handles to the interned names and call the version-1 entry points,
 * so every check, trace record and report is the one of a call by name.
 *
 * A handle is (slot << 32) | tenant: slot (1-based) indexes a table with one entry per name
 * that ever had a handle (struct name.handle_slot), tenant is the low 32 bits of the root's
 * `gen` at its bind (0 for a view's handle, which follows its base). The table also keeps each
 * name's op location, shown by the reports. All of it is under the engine's mutex. */
#ifndef TLSAN_SHIM_ENGINE_HANDLE_H
#define TLSAN_SHIM_ENGINE_HANDLE_H

#include <stdbool.h>
#include <stddef.h>

/* "FILE:LINE in FUNC" (or "FILE:LINE") of op `op` into buf (cap bytes, NUL-terminated) when an
 * op of that name was declared with a location; false otherwise (buf untouched). Takes the
 * engine's mutex: call with no lock held (reports are made so). */
bool engine_op_location(const char *op, char *buf, size_t cap);

#endif
