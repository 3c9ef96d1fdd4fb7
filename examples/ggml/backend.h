/* backend.h - finding and starting ggml's CPU backend in the prebuilt package, shared by the
 * ggml examples. The package ships one CPU backend per x86-64 level (libggml-cpu-haswell.so,
 * -skylakex, -zen4, ...) beside libggml-base.so; ggml_backend_load_all_from_path scores them
 * against the running CPU and registers the best one. */
#ifndef EXAMPLES_GGML_BACKEND_H
#define EXAMPLES_GGML_BACKEND_H

#include <ggml-backend.h>

/* Loads the backends from `dir`, or, when NULL, from the folder of the loaded
 * libggml-base.so (ggml_addon_graphs: none to load, the addon's are built in). Returns 0, or -1
 * (with a message on stderr) when no CPU backend registered. */
int example_load_backends(const char *dir);

/* ggml_addon_graphs: loads the Node addon FILE (dlopen RTLD_LOCAL) whose built-in ggml the
 * program then uses (addon.c); call it before any ggml function. In the programs linked to
 * libggml it fails. Returns 0, or -1 with a message on stderr. */
int example_open_addon(const char *file);

/* Starts the CPU backend with a fixed thread count, so that outputs do not depend on the
 * machine's core count. NULL when there is none. */
ggml_backend_t example_cpu_backend(int threads);

#endif
