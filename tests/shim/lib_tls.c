/* lib_tls: a shared library with thread-local storage, for prog_robust's dlopen-tls mode.
 * Loading and unloading it from several threads makes ld.so grow and free its TLS slot
 * tables (_dl_update_slotinfo), and the shim's own stack capture reaches the same code
 * through __tls_get_addr: a free re-entered on the block it is freeing. */
#include <stdlib.h>
#include <string.h>

__thread char lib_tls_buf[4096];
__thread char *lib_tls_ptr;
static char *g_text;

__attribute__((constructor)) static void lib_tls_init(void)
{
    g_text = strdup("constructed");
}

__attribute__((destructor)) static void lib_tls_fini(void)
{
    free(g_text);
}

int lib_work(int i)
{
    if (!lib_tls_ptr)
        lib_tls_ptr = malloc(100);
    lib_tls_buf[i % 4096] = (char)i;
    lib_tls_ptr[i % 100] = (char)i;
    return lib_tls_buf[i % 4096] + (int)strlen(g_text);
}

void lib_thread_done(void)
{
    free(lib_tls_ptr);
    lib_tls_ptr = NULL;
}
