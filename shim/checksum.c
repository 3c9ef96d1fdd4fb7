/* checksum.c - XXH3 64-bit via XXH3_64bits_dispatch: libxxhash picks the widest vector kernel
 * at run time, about 3x the portable XXH3_64bits on a tensor-sized buffer, which is what
 * keeps checksum=all within a small factor of the engine's own memory traffic.
 *
 * The AVX2/AVX-512 kernels return with the upper halves of the vector registers dirty (no
 * vzeroupper). The engine's own code, often built for plain SSE2, then pays an AVX-SSE
 * transition on every vector instruction: measured on the example engine, its softmax ran
 * 20x slower after each hash. So a vzeroupper follows every hash on CPUs that have AVX. */
#include "checksum.h"

#include <stdbool.h>
#include <xxh_x86dispatch.h>

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx"))) static void zero_upper(void)
{
    __builtin_ia32_vzeroupper();
}

static bool has_avx(void)
{
    static int known; /* 0 unknown, 1 no, 2 yes; a race only repeats the query */
    if (!known) {
        __builtin_cpu_init(); /* may run before libgcc's constructor did */
        known = __builtin_cpu_supports("avx") ? 2 : 1;
    }
    return known == 2;
}
#endif

uint64_t checksum_bytes(const void *p, size_t n)
{
    uint64_t h = XXH3_64bits_dispatch(p, n);
#if defined(__x86_64__) || defined(__i386__)
    if (has_avx())
        zero_upper();
#endif
    return h;
}
