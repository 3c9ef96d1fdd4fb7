/* prog_ggml_absent: a program without ggml that looks for ggml's functions in the global
 * scope, as a host probing for an already loaded ggml does (dlsym(RTLD_DEFAULT)). Natively it
 * finds none. Under the shim it finds the shim's hooks, whose real functions are in no loaded
 * object: each call must fail the way ggml reports a failure, the shim say so in one line,
 * and the program go on. Prints what it found and what each call returned; exit status 0. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef bool (*alloc_fn)(void *, void *);
typedef int (*compute_fn)(void *, void *);

int main(void)
{
    alloc_fn alloc;
    compute_fn sched, cpu;
    *(void **)&alloc = dlsym(RTLD_DEFAULT, "ggml_gallocr_alloc_graph");
    *(void **)&sched = dlsym(RTLD_DEFAULT, "ggml_backend_sched_graph_compute");
    *(void **)&cpu = dlsym(RTLD_DEFAULT, "ggml_graph_compute");
    if (!alloc || !sched || !cpu) {
        printf("no ggml\n");
        return 0;
    }
    printf("ggml_gallocr_alloc_graph: %d\n", (int)alloc(NULL, NULL));
    printf("ggml_backend_sched_graph_compute: %d\n", sched(NULL, NULL));
    printf("ggml_graph_compute: %d\n", cpu(NULL, NULL));
    return 0;
}
