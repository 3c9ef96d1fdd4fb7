/* splitmix64: a tiny generator whose whole state is the caller's one word, so that a random
 * plan is reproduced from its seed alone. Shared by the tests' random plan generators and the
 * benchmark's plan generator. */
#ifndef TLSAN_TESTS_SPLITMIX_H
#define TLSAN_TESTS_SPLITMIX_H

#include <stdbool.h>
#include <stdint.h>

static inline uint64_t splitmix_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in 0..n-1 (n > 0); the modulo bias is irrelevant for test data. */
static inline uint64_t splitmix_below(uint64_t *s, uint64_t n)
{
    return splitmix_next(s) % n;
}

/* True with probability pct/100. */
static inline bool splitmix_chance(uint64_t *s, unsigned pct)
{
    return splitmix_below(s, 100) < pct;
}

#endif
