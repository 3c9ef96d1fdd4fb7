/* malloc_heavy: the allocator-bound workload of the shim overhead benchmark (bench/shim.sh).
 *
 * It allocates like a program that builds and drops many small objects: most requests are
 * 16 to 256 bytes, one in 16 is a few KiB, one in 1024 is 64 KiB; every block is written in
 * full and read back, and lives while 1024 newer blocks are made (a ring), so frees come in
 * allocation order with some blocks reallocated on the way. Deterministic (an LCG); prints a
 * checksum so the runs under the shim can be compared with the native one.
 *
 * usage: tlsan_malloc_heavy [N_ALLOCATIONS]   (default 2000000) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 1024

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    static unsigned char *ring[RING];
    static size_t sizes[RING];
    uint64_t seed = 42, sum = 0;
    for (long i = 0; i < n; i++) {
        uint64_t r = lcg(&seed);
        size_t size = 16 + r % 241;
        if (r % 16 == 0)
            size = 1024 + r % 4096;
        if (r % 1024 == 1)
            size = 65536;
        size_t slot = (size_t)i % RING;
        if (ring[slot]) {
            for (size_t k = 0; k < sizes[slot]; k += 64)
                sum += ring[slot][k];
            if (r % 8 == 3) { /* some blocks grow before they die */
                unsigned char *grown = realloc(ring[slot], sizes[slot] * 2);
                if (!grown)
                    return 1;
                memset(grown + sizes[slot], 0x5a, sizes[slot]);
                sum += grown[sizes[slot] * 2 - 1];
                ring[slot] = grown;
            }
            free(ring[slot]);
        }
        unsigned char *p = malloc(size);
        if (!p)
            return 1;
        memset(p, (int)(i & 0xff), size);
        ring[slot] = p;
        sizes[slot] = size;
    }
    for (size_t k = 0; k < RING; k++)
        free(ring[k]);
    printf("checksum %llu\n", (unsigned long long)sum);
    return 0;
}
