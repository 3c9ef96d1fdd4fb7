/* lib_deepbind: a shared library prog_robust's deepbind mode opens with RTLD_DEEPBIND, so that
 * its malloc and free are looked up in itself and libc before the program's scope (and the
 * preloaded shim's). Blocks go both ways between it and the program, and its constructor
 * allocates before anything could bind its calls to the shim's. */
#include <stdlib.h>
#include <string.h>

static char *g_made; /* allocated by the constructor */

__attribute__((constructor)) static void lib_deepbind_init(void)
{
    g_made = malloc(64);
    if (g_made)
        strcpy(g_made, "made by the constructor");
}

void *lib_deepbind_alloc(size_t n)
{
    return malloc(n);
}

void lib_deepbind_free(void *p)
{
    free(p);
}

void *lib_deepbind_realloc(void *p, size_t n)
{
    return realloc(p, n);
}

/* The constructor's block, handed over: the caller frees it. */
char *lib_deepbind_take(void)
{
    char *p = g_made;
    g_made = NULL;
    return p;
}
