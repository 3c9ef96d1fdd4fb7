/* modules.h - the loaded modules (path, base, size) so a raw address becomes module+offset.
 * Filled from dl_iterate_phdr; refreshed when an address falls in no known module (after a
 * dlopen). Never allocates; thread-safe. */
#ifndef TLSAN_SHIM_MODULES_H
#define TLSAN_SHIM_MODULES_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct shim_module {
    uint32_t id; /* 1-based, stable for the process */
    uintptr_t base;
    uintptr_t size_bytes;
    char path[512];
};

/* Finds the module holding addr (rescanning once if none does); NULL when none. */
const struct shim_module *modules_find(uintptr_t addr);
/* Module by id, NULL if unknown. */
const struct shim_module *modules_get(uint32_t id);
/* Number of modules known so far. */
uint32_t modules_count(void);
/* Rescans now (adds new modules, retires unloaded ones). */
void modules_refresh(void);
/* Whether [lo, hi) is mapped readable, and writable when `write`: every byte, by the
 * process's memory map (/proc/self/maps; without /proc, msync tells whether it is mapped at
 * all). No allocation. The annotation API checks an arena with it before touching it. */
bool modules_range_usable(uintptr_t lo, uintptr_t hi, bool write);
/* Fork handlers (shim.c): the rescan lock. */
void modules_lock(void);
void modules_unlock(void);
void modules_reinit_lock(void);

#endif
