/* realloc_grow TOTAL STEP [ROUNDS]: grows one buffer to TOTAL bytes in STEP-byte reallocs,
 * writing each step's new bytes, checks every byte and frees it, ROUNDS times (default 1);
 * prints the sum of the bytes. The realloc row of bench/shim.sh: a buffer grown step by step
 * (a string builder, a vector) is quadratic when every realloc moves. */
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + i / 4096);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: realloc_grow TOTAL STEP [ROUNDS]\n");
        return 2;
    }
    size_t total = strtoull(argv[1], NULL, 10), step = strtoull(argv[2], NULL, 10);
    int rounds = argc > 3 ? atoi(argv[3]) : 1;
    if (!step || step > total)
        return 2;
    unsigned long long sum = 0;
    for (int r = 0; r < rounds; r++) {
        unsigned char *buf = NULL;
        size_t n;
        for (n = step; n <= total; n += step) {
            unsigned char *q = realloc(buf, n);
            if (!q) {
                fprintf(stderr, "realloc_grow: out of memory at %zu bytes\n", n);
                return 1;
            }
            buf = q;
            for (size_t i = n - step; i < n; i++)
                buf[i] = pattern(i);
        }
        for (size_t i = 0; i < n - step; i++) {
            if (buf[i] != pattern(i)) {
                fprintf(stderr, "realloc_grow: byte %zu changed\n", i);
                return 1;
            }
            sum += buf[i];
        }
        free(buf);
    }
    printf("%llu\n", sum);
    return 0;
}
