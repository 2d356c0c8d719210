/* SPDX-License-Identifier: Zlib */
/* bench_util.h -- the clock and the random numbers every workload file shares: one sequence for
   every implementation, so each measures the same operations. Include after the feature macro
   that declares clock_gettime (_GNU_SOURCE) and <time.h>. */
#ifndef SP_BENCH_UTIL_H
#define SP_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: tiny, and the same sequence for every implementation. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n below 2^32. */
static inline size_t rng_below(uint64_t *s, size_t n) { return (size_t)(((rng_next(s) >> 32) * (uint64_t)n) >> 32); }

#endif
