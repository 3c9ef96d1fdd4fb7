/* backend.c - the CPU backend of the prebuilt package, or of a Node addon with ggml built in
 * (EXAMPLE_GGML_ADDON: ggml_addon_graphs, whose ggml is addon.c's), backend.h. */
#include "backend.h"

#include <ggml.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#ifdef EXAMPLE_GGML_ADDON
/* The addon's ggml has its CPU backend built in: nothing to load. */
int example_load_backends(const char *dir)
{
    (void)dir;
#else
int example_open_addon(const char *file)
{
    fprintf(stderr,
            "ggml example: --addon %s: this program is linked to libggml; "
            "ggml_addon_graphs takes --addon\n",
            file);
    return -1;
}

int example_load_backends(const char *dir)
{
    char buf[4096];
    if (!dir) {
        /* dladdr names the file the loader mapped, with the path it was found under. */
        Dl_info info;
        if (!dladdr((void *)ggml_version, &info) || !info.dli_fname) {
            fprintf(stderr, "ggml example: cannot find libggml-base.so's folder\n");
            return -1;
        }
        const char *slash = strrchr(info.dli_fname, '/');
        size_t n = slash ? (size_t)(slash - info.dli_fname) : 1;
        if (n + 1 > sizeof buf)
            return -1;
        memcpy(buf, slash ? info.dli_fname : ".", n);
        buf[n] = '\0';
        dir = buf;
    }
    ggml_backend_load_all_from_path(dir);
#endif
    if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
        fprintf(stderr, "ggml example: no CPU backend in %s\n", dir);
        return -1;
    }
    return 0;
}

ggml_backend_t example_cpu_backend(int threads)
{
    ggml_backend_t be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (!be)
        return NULL;
    /* The set-threads entry point lives in the dynamically loaded backend, not in libggml. */
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(be));
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_set_n_threads");
    if (set_threads)
        set_threads(be, threads);
    return be;
}
