/* helper_nounwind.c - frames without unwind tables, linked into prog_fds (built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables and frame pointers, tests/shim/
 * CMakeLists.txt). A stack captured through them makes libunwind leave its DWARF path and
 * walk the frame-pointer chain, the path on which it validates every address it reads.
 * Each function is its own frame (noinline) and calls the next one through a volatile
 * pointer, so no call is folded into its caller. */
#include <stdlib.h>

void *nounwind_alloc(size_t n, int depth);
void nounwind_free(void *p, int depth);

static void *(*volatile g_malloc)(size_t) = malloc;
static void (*volatile g_free)(void *) = free;
static void *(*volatile g_alloc_again)(size_t, int) = nounwind_alloc;
static void (*volatile g_free_again)(void *, int) = nounwind_free;

/* malloc(n) from `depth` nested frames of this file. */
__attribute__((noinline)) void *nounwind_alloc(size_t n, int depth)
{
    void *p = depth > 0 ? g_alloc_again(n, depth - 1) : g_malloc(n);
    __asm__ volatile("" : "+r"(p)::"memory"); /* not a tail call: the frame stays */
    return p;
}

/* free(p) from `depth` nested frames of this file. */
__attribute__((noinline)) void nounwind_free(void *p, int depth)
{
    if (depth > 0)
        g_free_again(p, depth - 1);
    else
        g_free(p);
    __asm__ volatile("" ::: "memory");
}
