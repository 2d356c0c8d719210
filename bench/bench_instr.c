/* SPDX-License-Identifier: Zlib */
/*
    bench_instr.c -- spinstr, the fast paths in a loop for valgrind --tool=callgrind.

        spinstr lifo|churn|pair IMPL K [N]     acquire+release pairs of one implementation
        spinstr resolve|resolve_inline|resolve_base|handles|reclaim K
                                               spawnpool's other fast paths
        spinstr has IMPL                       exit status 0 if this build has IMPL

    IMPL: spawnpool (the default pool, created the way users create it: initial = 0, grown by
    acquisition, 64-byte members, memory order, no hooks), spawnpool_ordered (the same in
    acquisition order), spawnpool_presized (initial = max = N: every member built at creation),
    and the floors of bench_floors.h (bench_impls.c's checked free lists and the bare one,
    the same code spbench times: make bench-instr counts those of bench/instr.sh),
    spawnpool_ts (a thread-safe pool, once the library has them: 0.4.0).
    lifo: bursts of N (default 1000) acquisitions released newest first, as spbench's lifo
    workload; churn: N live (default 1000), release a random one and acquire its replacement;
    pair: acquire one member and release it at once, with 500 of 1000 leased (the 0.2 rows).
    Every pair goes through the implementation's bench_impl function pointers, the same call
    for all of them.

    Setup runs uninstrumented. Then CALLGRIND_START_INSTRUMENTATION, a warm-up as long as the
    measurement (churn: at least N ops; so that --cache-sim=yes starts from caches in their steady state, not cold
    ones), CALLGRIND_ZERO_STATS, exactly the ops measured, CALLGRIND_STOP_INSTRUMENTATION.
    Callgrind's totals divided by the op count (printed on stdout: K rounded up to whole
    bursts for lifo) are events per operation; they repeat exactly from run to run.
    bench/instr.sh runs each mode with --toggle-collect on the implementation's two functions
    (what the library itself executes) and once over the whole loop.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "bench.h"
#include "bench_floors.h"

enum { ITEM_SIZE = 64, LIVE = 1000 };

static volatile uintptr_t instr_sink;

/* sp_resolve is inline (include/spawnpool.h): this function holds one, so that callgrind can
   count what a resolve executes (--toggle-collect=instr_resolve; its ret counted too). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void *instr_resolve(const sp_pool *pool, sp_handle h) {
    return sp_resolve(pool, h);
}

/* ---------------------------------------------------------------------------------------------
   spawnpool configurations: sp_acquire / sp_release behind the bench_impl calls (each wrapper
   is a tail jump, so --toggle-collect=sp_acquire counts the library alone).
   ------------------------------------------------------------------------------------------ */

static void *instr_sp_acquire(void *state) { return sp_acquire(state); }
static void instr_sp_release(void *state, void *item) { (void)sp_release(state, item); }
static void instr_sp_close(void *state) { sp_pool_destroy(state); }

static bool instr_sp_open(void **state, const sp_desc *desc) {
    sp_pool *pool = sp_pool_create(desc);
    if (pool == NULL) {
        fprintf(stderr, "spinstr: sp_pool_create failed\n");
        return false;
    }
    *state = pool;
    return true;
}
static bool instr_default_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    return instr_sp_open(state, &(sp_desc){.name = "instr", .item_size = item_size});
}
static bool instr_ordered_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    return instr_sp_open(state, &(sp_desc){.name = "instr", .item_size = item_size,
                                           .order = SP_ORDER_ACQUISITION});
}
static bool instr_presized_open(void **state, size_t item_size, size_t capacity) {
    return instr_sp_open(state, &(sp_desc){.name = "instr", .item_size = item_size,
                                           .initial = capacity, .max = capacity});
}

/* The thread-safe pool (sp_desc.threads = SP_THREADS_SAFE), the rest as the default pool:
   its pair on one thread is what the thread-safe mode costs against the plain pool. */
static bool instr_ts_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    return instr_sp_open(state, &(sp_desc){.name = "instr", .item_size = item_size,
                                           .threads = SP_THREADS_SAFE});
}

static const bench_impl instr_impls[] = {
    {"spawnpool", instr_default_open, instr_sp_close, instr_sp_acquire, instr_sp_release, NULL},
    {"spawnpool_ordered", instr_ordered_open, instr_sp_close, instr_sp_acquire, instr_sp_release,
     NULL},
    {"spawnpool_presized", instr_presized_open, instr_sp_close, instr_sp_acquire,
     instr_sp_release, NULL},
    {"spawnpool_ts", instr_ts_open, instr_sp_close, instr_sp_acquire, instr_sp_release, NULL},
};

static const bench_impl *find_impl(const char *name) {
    for (size_t i = 0; i < sizeof instr_impls / sizeof instr_impls[0]; i++)
        if (strcmp(instr_impls[i].name, name) == 0) return &instr_impls[i];
    static const char *const floors[] = {BENCH_FLOORS};
    for (size_t i = 0; i < sizeof floors / sizeof floors[0]; i++)
        if (strcmp(name, floors[i]) == 0) return bench_impl_find(name);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
   Workloads
   ------------------------------------------------------------------------------------------ */

static uint64_t xorshift(uint64_t *x) {
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

/* ops random pairs over the n live members: release live[j], acquire its replacement. */
static void churn_ops(const bench_impl *impl, void *state, void **live, size_t n, size_t ops,
                      uint64_t *x) {
    for (size_t i = 0; i < ops; i++) {
        size_t j = (size_t)(((xorshift(x) >> 32) * (uint64_t)n) >> 32); /* uniform in [0, n) */
        impl->release(state, live[j]);
        live[j] = impl->acquire(state);
    }
}

/* bursts of n acquisitions, each burst released newest first. */
static void lifo_bursts(const bench_impl *impl, void *state, void **live, size_t n,
                        size_t bursts) {
    for (size_t b = 0; b < bursts; b++) {
        for (size_t i = 0; i < n; i++) live[i] = impl->acquire(state);
        for (size_t i = n; i-- > 0;) impl->release(state, live[i]);
    }
}

static void pair_ops(const bench_impl *impl, void *state, size_t ops) {
    for (size_t i = 0; i < ops; i++) impl->release(state, impl->acquire(state));
}

/* The pair workloads: returns the number of pairs measured, 0 on failure. */
static size_t run_pairs(const char *workload, const bench_impl *impl, size_t k, size_t n) {
    bool lifo = strcmp(workload, "lifo") == 0, churn = strcmp(workload, "churn") == 0;
    if (!lifo && !churn && strcmp(workload, "pair") != 0) return 0;
    if (!lifo && !churn) n = LIVE;
    void *state = NULL;
    void **live = calloc(n, sizeof *live);
    if (live == NULL || !impl->open(&state, ITEM_SIZE, n)) {
        free(live);
        return 0;
    }
    uint64_t x = 88172645463325252u;
    size_t measured = k;
    /* Setup: every member the workload needs built (a grown pool grows here, not measured). */
    for (size_t i = 0; i < n; i++) live[i] = impl->acquire(state);
    bool ok = true;
    for (size_t i = 0; i < n; i++) ok &= live[i] != NULL;
    if (!ok) fprintf(stderr, "spinstr: %s could not hold %zu members\n", impl->name, n);
    if (lifo) {
        for (size_t i = n; i-- > 0;) impl->release(state, live[i]);
        size_t bursts = (k + n - 1) / n;
        measured = bursts * n;
        CALLGRIND_START_INSTRUMENTATION;
        lifo_bursts(impl, state, live, n, bursts);
        CALLGRIND_ZERO_STATS;
        lifo_bursts(impl, state, live, n, bursts);
        CALLGRIND_STOP_INSTRUMENTATION;
    } else if (churn) {
        /* At 1M live the last-level cache needs about a million ops to reach its steady state. */
        CALLGRIND_START_INSTRUMENTATION;
        churn_ops(impl, state, live, n, k > n ? k : n, &x);
        CALLGRIND_ZERO_STATS;
        churn_ops(impl, state, live, n, k, &x);
        CALLGRIND_STOP_INSTRUMENTATION;
        for (size_t i = 0; i < n; i++) impl->release(state, live[i]);
    } else {
        /* Half the members leased: the pair runs in a pool neither empty nor full. */
        for (size_t i = n / 2; i < n; i++) impl->release(state, live[i]);
        CALLGRIND_START_INSTRUMENTATION;
        pair_ops(impl, state, k);
        CALLGRIND_ZERO_STATS;
        pair_ops(impl, state, k);
        CALLGRIND_STOP_INSTRUMENTATION;
        for (size_t i = 0; i < n / 2; i++) impl->release(state, live[i]);
    }
    impl->close(state);
    free(live);
    return ok ? measured : 0;
}

/* resolve, handles, reclaim: the default pool (reclaim: a RECLAIM pool of max 1000, grown by
   acquisition), 1000 members built; returns the ops measured, 0 on failure. */
static size_t run_spawnpool(const char *mode, size_t k) {
    bool reclaim = strcmp(mode, "reclaim") == 0;
    sp_pool *pool = sp_pool_create(&(sp_desc){.name = "instr", .item_size = ITEM_SIZE,
                                              .max = reclaim ? LIVE : 0,
                                              .overflow = reclaim ? SP_OVERFLOW_RECLAIM
                                                                  : SP_OVERFLOW_DROP});
    if (pool == NULL) return 0;
    uintptr_t acc = 0;
    if (strncmp(mode, "resolve", 7) == 0) {
        /* resolve: through instr_resolve (a call, counted inside); resolve_inline: sp_resolve
           in the loop itself, as a caller's loop has it; resolve_base: the same loop without
           the resolve. instr.sh reports inline minus base, per resolve. */
        static sp_handle ids[LIVE];
        for (size_t i = 0; i < LIVE; i++) ids[i] = sp_handle_of(pool, sp_acquire(pool));
        for (size_t i = 0; i < LIVE; i += 8) sp_release(pool, sp_resolve(pool, ids[i])); /* stale */
        int how = strcmp(mode, "resolve") == 0 ? 0 : strcmp(mode, "resolve_inline") == 0 ? 1 : 2;
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t r = 0; r < 2; r++) {
            if (r == 1) CALLGRIND_ZERO_STATS;
            if (how == 0)
                for (size_t i = 0; i < k; i++) acc += (uintptr_t)instr_resolve(pool, ids[i % LIVE]);
            else if (how == 1)
                for (size_t i = 0; i < k; i++) acc += (uintptr_t)sp_resolve(pool, ids[i % LIVE]);
            else
                for (size_t i = 0; i < k; i++) acc += (uintptr_t)ids[i % LIVE].id;
        }
        CALLGRIND_STOP_INSTRUMENTATION;
    } else if (strcmp(mode, "handles") == 0) {
        for (size_t i = 0; i < LIVE; i++) (void)sp_acquire(pool);
        sp_release_all(pool);
        for (size_t i = 0; i < LIVE / 2; i++) (void)sp_acquire(pool);
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t r = 0; r < 2; r++) {
            if (r == 1) CALLGRIND_ZERO_STATS;
            for (size_t i = 0; i < k; i++) {
                sp_handle h = {0};
                void *p = sp_acquire_handle(pool, NULL, &h);
                acc += (uintptr_t)h.id;
                sp_release(pool, p);
            }
        }
        CALLGRIND_STOP_INSTRUMENTATION;
    } else if (reclaim) {
        for (size_t i = 0; i < LIVE; i++) (void)sp_acquire(pool); /* saturated */
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t r = 0; r < 2; r++) {
            if (r == 1) CALLGRIND_ZERO_STATS;
            for (size_t i = 0; i < k; i++) acc += (uintptr_t)sp_acquire(pool);
        }
        CALLGRIND_STOP_INSTRUMENTATION;
    } else {
        sp_pool_destroy(pool);
        return 0;
    }
    sp_release_all(pool);
    sp_pool_destroy(pool);
    instr_sink = acc;
    return k;
}

int main(int argc, char **argv) {
    static const char usage[] =
        "usage: spinstr lifo|churn|pair IMPL K [N]\n"
        "       spinstr resolve|resolve_inline|resolve_base|handles|reclaim K\n"
        "       spinstr has IMPL        (exit status 0 when this build has IMPL)\n"
        "IMPL: spawnpool spawnpool_ordered spawnpool_presized, or a floor: freelist checked_side\n"
        "      checked_bits checked_gen checked_dense checked_plan checked_plan_byte\n"
        "      spawnpool_ts (the thread-safe pool, from 0.4.0)\n";
    if (argc < 3) {
        fputs(usage, stderr);
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "has") == 0) return find_impl(argv[2]) != NULL ? 0 : 1;
    size_t measured = 0;
    if (strncmp(mode, "resolve", 7) == 0 || strcmp(mode, "handles") == 0 ||
        strcmp(mode, "reclaim") == 0) {
        size_t k = (size_t)strtoull(argv[2], NULL, 10);
        measured = k ? run_spawnpool(mode, k) : 0;
    } else {
        const bench_impl *impl = find_impl(argv[2]);
        size_t k = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : 0;
        size_t n = argc > 4 ? (size_t)strtoull(argv[4], NULL, 10) : LIVE;
        if (impl == NULL || k == 0 || n == 0 || n > ((size_t)1 << 32)) {
            fputs(usage, stderr);
            return 2;
        }
        measured = run_pairs(mode, impl, k, n);
    }
    if (measured == 0) {
        fprintf(stderr, "spinstr: %s failed\n", mode);
        return 1;
    }
    printf("%zu\n", measured); /* the op count instr.sh divides by */
    return 0;
}
