/* prog_valgrind: the annotation API without the shim, under Valgrind memcheck. tlsan.h turns
 * the annotations into client requests there: an arena is a mempool, a bound tensor a chunk,
 * a released tensor no-access, so memcheck flags the faulting read itself.
 *
 * usage: prog_valgrind clean|uar|inplace
 *   clean    bind, write, read, release: memcheck reports nothing
 *   uar      reads a tensor after its release: one invalid read, in read_released()
 *   inplace  y takes over x's bytes in place (TLSAN_BIND_INPLACE, TLSAN_RELEASE_HANDOVER) and
 *            is read after x's release: nothing to report */
#include "tlsan/tlsan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES 4096

__attribute__((noinline)) static float read_released(const float *x)
{
    return x[3];
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    char *arena = aligned_alloc(64, ARENA_BYTES);
    if (!arena)
        return 1;
    tlsan_arena_create("a0", arena, ARENA_BYTES);
    float *x = (float *)arena;
    tlsan_tensor_bind(arena, "x", x, 64 * sizeof(float), 0);
    for (int i = 0; i < 64; i++)
        x[i] = (float)i;
    float sum = 0;
    if (strcmp(mode, "inplace") == 0) {
        float *y = x; /* an in-place relu: y reuses x's bytes */
        tlsan_tensor_bind(arena, "y", y, 64 * sizeof(float), TLSAN_BIND_INPLACE);
        for (int i = 0; i < 64; i++)
            y[i] = y[i] > 10 ? y[i] : 0;
        tlsan_tensor_release(arena, "x", x, TLSAN_RELEASE_HANDOVER);
        for (int i = 0; i < 64; i++)
            sum += y[i];
        tlsan_tensor_release(arena, "y", y, 0);
    } else {
        for (int i = 0; i < 64; i++)
            sum += x[i];
        tlsan_tensor_release(arena, "x", x, 0);
        if (strcmp(mode, "uar") == 0)
            sum += read_released(x);
    }
    tlsan_arena_destroy(arena, ARENA_BYTES);
    free(arena);
    printf("%s %.1f\n", mode, (double)sum);
    return 0;
}
