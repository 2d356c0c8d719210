/* SPDX-License-Identifier: Zlib */
/*
    bench_embed.c -- the embed workload: what a library does that embeds spawnpool as its block
    allocator (an ECS makes a pool per block size in every world; a messaging library keeps a
    pool per size class and alternates between them on one thread).

        spbench --workload embed [--quick]

    Rows (workload "embed", n the count the metric is about, item size 0):
    - world_ns (spawnpool, malloc): one world made, used and torn down: 53 pools of 16 to 2,048
      bytes, 24 members acquired from each, half of them released, then every pool destroyed
      (malloc: the same objects from malloc, freed at the end), the median over the worlds;
    - world_os_calls: the system calls of the library's virtual memory per world, in steady
      state (after the first worlds);
    - world_reserved_bytes: the address space a live world's pools hold, and
      world_process_reserved_bytes what the process's shared source reserved for them;
    - pools1000_reserved_bytes, pools1000_process_reserved_bytes: the same for 1,000 live pools
      of 100 64-byte members;
    - pools_no_handle_ok: of 100,000 live pools with a member each, those that worked (created,
      acquired, released, destroyed), and pools_no_handle_ns the time per pool;
    - pools_handle_ok: of 65,536 live pools with a handle each, those whose handle resolved;
    - ts_alternating_ns, ts_one_pool_ns: a thread's acquire and release pair on 8 thread-safe
      pools in turn, and on one.
    Peers that are not malloc do not take part: the workload is about spawnpool's own costs.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_util.h"

/* White-box counters of the library (src/sp_os.h, src/source.h). */
unsigned long sp__os_calls(void);
size_t sp__source_process_reserved(void);

enum { WORLD_POOLS = 53, WORLD_MEMBERS = 24, TS_POOLS = 8 };

static void emit(const char *impl, const char *metric, size_t n, double value, const char *unit) {
    printf("embed,%zu,0,%s,%s,%.4f,%s\n", n, impl, metric, value, unit);
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n ? v[n / 2] : 0.0;
}

/* Destroying a world with members still leased is the point of the workload: no lines. */
static void quiet(sp_log_level level, const char *pool, const char *message, void *user) {
    (void)level, (void)pool, (void)message, (void)user;
}

static size_t world_size(int i) { return (size_t)16u << (i % 8); } /* 16 .. 2048 */

/* One world: its pools, each with 24 members acquired and 12 released. */
typedef struct world {
    sp_pool *pools[WORLD_POOLS];
    void *members[WORLD_POOLS][WORLD_MEMBERS];
} world;

static bool world_make(world *w) {
    for (int i = 0; i < WORLD_POOLS; i++) {
        w->pools[i] = sp_pool_create(&(sp_desc){.item_size = world_size(i), .logger = {quiet, NULL}});
        if (!w->pools[i]) return false;
        for (int k = 0; k < WORLD_MEMBERS; k++) {
            w->members[i][k] = sp_acquire(w->pools[i]);
            if (!w->members[i][k]) return false;
            memset(w->members[i][k], k, 8);
        }
        for (int k = 0; k < WORLD_MEMBERS; k += 2) sp_release(w->pools[i], w->members[i][k]);
    }
    return true;
}

static void world_unmake(world *w) {
    for (int i = 0; i < WORLD_POOLS; i++) sp_pool_destroy(w->pools[i]);
}

static size_t world_reserved(const world *w) {
    size_t bytes = 0;
    for (int i = 0; i < WORLD_POOLS; i++) {
        sp_stats s;
        sp_stats_get(w->pools[i], &s);
        bytes += s.bytes_reserved;
    }
    return bytes;
}

/* The same objects from malloc. */
static void world_malloc(void) {
    static void *members[WORLD_POOLS][WORLD_MEMBERS];
    for (int i = 0; i < WORLD_POOLS; i++) {
        for (int k = 0; k < WORLD_MEMBERS; k++) {
            members[i][k] = malloc(world_size(i));
            if (members[i][k]) memset(members[i][k], k, 8);
        }
        for (int k = 0; k < WORLD_MEMBERS; k += 2) free(members[i][k]);
    }
    for (int i = 0; i < WORLD_POOLS; i++)
        for (int k = 1; k < WORLD_MEMBERS; k += 2) free(members[i][k]);
}

static int run_worlds(size_t worlds) {
    static world w;
    double *t = malloc(worlds * sizeof *t), *m = malloc(worlds * sizeof *m);
    if (!t || !m) return 1;
    for (size_t i = 0; i < 50; i++) { /* warm: the source's cache, malloc's arenas */
        if (!world_make(&w)) return 1;
        world_unmake(&w);
        world_malloc();
    }
    unsigned long calls = sp__os_calls();
    for (size_t i = 0; i < worlds; i++) {
        uint64_t t0 = now_ns();
        if (!world_make(&w)) {
            fprintf(stderr, "spbench: embed: a world failed\n");
            return 1;
        }
        world_unmake(&w);
        uint64_t t1 = now_ns();
        world_malloc();
        uint64_t t2 = now_ns();
        t[i] = (double)(t1 - t0);
        m[i] = (double)(t2 - t1);
    }
    double os_calls = (double)(sp__os_calls() - calls) / (double)worlds;
    emit("spawnpool", "world_ns", worlds, median(t, worlds), "ns");
    emit("malloc", "world_ns", worlds, median(m, worlds), "ns");
    emit("spawnpool", "world_os_calls", worlds, os_calls, "calls");
    size_t before = sp__source_process_reserved();
    if (!world_make(&w)) return 1;
    emit("spawnpool", "world_reserved_bytes", WORLD_POOLS, (double)world_reserved(&w), "bytes");
    emit("spawnpool", "world_process_reserved_bytes", WORLD_POOLS,
         (double)(sp__source_process_reserved() - before), "bytes");
    world_unmake(&w);
    free(t);
    free(m);
    return 0;
}

/* n live pools of `members` members of `size` bytes: their reservation, or how many worked
   (with a handle each: those whose handle resolved). */
static int run_many(size_t n, size_t members, size_t size, bool handles, const char *prefix) {
    sp_pool **pools = calloc(n, sizeof *pools);
    void **first = calloc(n, sizeof *first);
    sp_handle *h = calloc(n, sizeof *h);
    if (!pools || !first || !h) return 1;
    size_t before = sp__source_process_reserved(), ok = 0, reserved = 0;
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
        pools[i] = sp_pool_create(&(sp_desc){.item_size = size, .logger = {quiet, NULL}});
        if (!pools[i]) continue;
        for (size_t k = 0; k < members; k++) {
            void *m = handles && k == 0 ? sp_acquire_handle(pools[i], NULL, &h[i]) : sp_acquire(pools[i]);
            if (k == 0) first[i] = m;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!pools[i] || !first[i]) continue;
        sp_stats s;
        sp_stats_get(pools[i], &s);
        reserved += s.bytes_reserved;
        bool works = s.leased == members && (!handles || sp_resolve(pools[i], h[i]) == first[i]);
        ok += works && sp_release(pools[i], first[i]) == SP_OK;
    }
    size_t process = sp__source_process_reserved() - before;
    for (size_t i = 0; i < n; i++) sp_pool_destroy(pools[i]);
    uint64_t t1 = now_ns();
    char metric[64];
    if (members > 1) {
        snprintf(metric, sizeof metric, "%s_reserved_bytes", prefix);
        emit("spawnpool", metric, n, (double)reserved, "bytes");
        snprintf(metric, sizeof metric, "%s_process_reserved_bytes", prefix);
        emit("spawnpool", metric, n, (double)process, "bytes");
    } else {
        snprintf(metric, sizeof metric, "%s_ok", prefix);
        emit("spawnpool", metric, n, (double)ok, "pools");
        snprintf(metric, sizeof metric, "%s_ns", prefix);
        emit("spawnpool", metric, n, (double)(t1 - t0) / (double)n, "ns");
    }
    free(pools);
    free(first);
    free(h);
    return 0;
}

/* A thread's pair on thread-safe pools in turn (the messaging library's object and its buffer,
   its size classes), and on one: the minimum over repeats. */
static int run_alternating(bool quick) {
    sp_pool *pools[TS_POOLS];
    for (int i = 0; i < TS_POOLS; i++) {
        pools[i] = sp_pool_create(&(sp_desc){.item_size = 64, .threads = SP_THREADS_SAFE});
        if (!pools[i]) return 1;
    }
    size_t ops = quick ? 200000 : 2000000, repeats = quick ? 5 : 15;
    double best[2] = {1e30, 1e30};
    for (size_t r = 0; r < repeats; r++) {
        for (int mode = 0; mode < 2; mode++) {
            uint64_t t0 = now_ns();
            for (size_t i = 0; i < ops; i++) {
                sp_pool *p = pools[mode ? 0 : i % TS_POOLS];
                void *m = sp_acquire(p);
                *(volatile char *)m = 1;
                sp_release(p, m);
            }
            double ns = (double)(now_ns() - t0) / (double)ops;
            if (ns < best[mode]) best[mode] = ns;
        }
    }
    emit("spawnpool", "ts_alternating_ns", TS_POOLS, best[0], "ns");
    emit("spawnpool", "ts_one_pool_ns", 1, best[1], "ns");
    for (int i = 0; i < TS_POOLS; i++) sp_pool_destroy(pools[i]);
    return 0;
}

int bench_embed_run(bool quick) {
    fprintf(stderr, "embed: worlds\n");
    if (run_worlds(quick ? 200 : 1000)) return 1;
    fprintf(stderr, "embed: 1000 live pools of 100 members\n");
    if (run_many(1000, 100, 64, false, "pools1000")) return 1;
    fprintf(stderr, "embed: live pools without handles\n");
    if (run_many(quick ? 10000 : 100000, 1, 16, false, "pools_no_handle")) return 1;
    fprintf(stderr, "embed: live pools with a handle each\n");
    if (run_many(quick ? 10000 : 65536, 1, 16, true, "pools_handle")) return 1;
    fprintf(stderr, "embed: thread-safe pools in turn\n");
    return run_alternating(quick);
}
