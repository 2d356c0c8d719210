/* SPDX-License-Identifier: Zlib */
/*
    bench_sizes.c -- the sizes workload: size classes (include/spawnpool_sizes.h) in a churn of
    mixed sizes, against the allocators a library would otherwise call and against the table of
    pools it would otherwise keep by hand.

        spbench --workload sizes [--quick] [--impl LIST]

    Rows (ns a release + acquire pair, min and median over the repeats):
    - sizes, n live 1k / 64k / 1M, item size 0: sizes uniform over the default classes (a class
      at random, then a size at random inside it, 1 B .. 8 KiB), a random live buffer released
      and another acquired at each step. spawnpool_sizes (sp_sizes_acquire / sp_sizes_release:
      the pointer alone), spawnpool_pools (the same 18 pools in a table the caller keeps: it
      finds the class with the same kind of byte table and passes it back at release, as the
      ported messaging library did), glibc, mimalloc, tcmalloc, and jemalloc in a process of its
      own (with spawnpool_sizes beside it, rows tagged "@jemalloc").
    - sizes, item size 64: every request 64 bytes: the set against one plain pool of 64 B.
    - sizes_threads, n 2 threads, item size 0: each thread churns its own 1,000 live buffers in
      one thread-safe set (spawnpool_sizes_ts) and in a table of thread-safe pools
      (spawnpool_pools_ts); ns a pair per thread.
    - sizes_memory, n 65,536 live of mixed sizes: stats bytes of the set (its pools and its own
      tables, spawnpool_sizes) and of the same pools created one by one (spawnpool_pools).
    Every implementation goes through the same two indirect calls an operation. Cells of 1k and
    64k take turns segment by segment (each implementation measured in the others' company);
    at 1M the set and the table of pools take turns, and each peer runs alone after them (five
    sets of 1.7 GB at once would not fit beside the other users of a shared machine).
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_util.h"
#include "spawnpool_sizes.h"

static const size_t classes[] = {16,  32,  48,   64,   96,   128,  192,  256,  384,
                                 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
enum { CLASSES = sizeof classes / sizeof classes[0], SIZE_SEQ = 1 << 16, TS_LIVE = 1000 };

static volatile uint64_t sink;

static const char *rows_of; /* "jemalloc" in jemalloc's process */

static void emit(const char *workload, size_t n, size_t size, const char *impl, const char *metric, double v,
                 const char *unit) {
    char tagged[64];
    if (rows_of && strcmp(impl, rows_of) != 0) {
        snprintf(tagged, sizeof tagged, "%s@%s", impl, rows_of);
        impl = tagged;
    }
    printf("%s,%zu,%zu,%s,%s,%.4f,%s\n", workload, n, size, impl, metric, v, unit);
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quiet(sp_log_level level, const char *pool, const char *message, void *user) {
    (void)level, (void)pool, (void)message, (void)user;
}

/* ---- the implementations ------------------------------------------------------------------ */

typedef struct sized_impl {
    const char *name;
    bool (*open)(void **state, bool threads);
    void (*close)(void *state);
    void *(*acquire)(void *state, size_t size, unsigned char *cls);
    void (*release)(void *state, void *item, unsigned char cls);
} sized_impl;

static bool set_open(void **state, bool threads) {
    *state = sp_sizes_create(&(sp_sizes_desc){.name = "bench", .logger = {quiet, NULL},
                                              .threads = threads ? SP_THREADS_SAFE : SP_THREADS_NONE});
    return *state != NULL;
}
static void set_close(void *state) { sp_sizes_destroy(state); }
static void *set_acquire(void *state, size_t size, unsigned char *cls) {
    (void)cls;
    return sp_sizes_acquire(state, size);
}
static void set_release(void *state, void *item, unsigned char cls) {
    (void)cls;
    sp_sizes_release(state, item);
}

/* The table a library keeps by hand: its pools and a byte table from size to class. */
typedef struct pools_state {
    sp_pool *pools[CLASSES];
    unsigned char class_of_step[8192 / 16 + 1]; /* by 16-byte step */
} pools_state;

static bool pools_open(void **state, bool threads) {
    pools_state *p = calloc(1, sizeof *p);
    if (!p) return false;
    for (size_t k = 0; k < CLASSES; k++) {
        p->pools[k] = sp_pool_create(&(sp_desc){.item_size = classes[k], .logger = {quiet, NULL},
                                               .threads = threads ? SP_THREADS_SAFE : SP_THREADS_NONE});
        if (!p->pools[k]) return false;
    }
    for (size_t b = 0, k = 0; b <= 8192 / 16; b++) {
        while (classes[k] < b * 16) k++;
        p->class_of_step[b] = (unsigned char)k;
    }
    *state = p;
    return true;
}
static void pools_close(void *state) {
    pools_state *p = state;
    for (size_t k = 0; k < CLASSES; k++) sp_pool_destroy(p->pools[k]);
    free(p);
}
static void *pools_acquire(void *state, size_t size, unsigned char *cls) {
    pools_state *p = state;
    unsigned char k = p->class_of_step[(size + 15u) >> 4];
    *cls = k;
    return sp_acquire(p->pools[k]);
}
static void pools_release(void *state, void *item, unsigned char cls) { sp_release(((pools_state *)state)->pools[cls], item); }

/* One plain pool of 64-byte members: the same-size cells' reference. */
static bool pool64_open(void **state, bool threads) {
    (void)threads;
    *state = sp_pool_create(&(sp_desc){.item_size = 64, .logger = {quiet, NULL}});
    return *state != NULL;
}
static void pool64_close(void *state) { sp_pool_destroy(state); }
static void *pool64_acquire(void *state, size_t size, unsigned char *cls) {
    (void)size, (void)cls;
    return sp_acquire(state);
}
static void pool64_release(void *state, void *item, unsigned char cls) {
    (void)cls;
    sp_release(state, item);
}

/* malloc-like peers, each with its own entry points (bench_impls.c). */
typedef struct peer_state {
    bench_malloc_fn malloc_fn;
    bench_free_fn free_fn;
} peer_state;

static bool peer_open_named(void **state, const char *name) {
    peer_state *p = malloc(sizeof *p);
    if (!p || !bench_peer_malloc(name, &p->malloc_fn, &p->free_fn)) {
        free(p);
        return false;
    }
    *state = p;
    return true;
}
static bool glibc_open(void **state, bool threads) { return (void)threads, peer_open_named(state, "glibc"); }
static bool mimalloc_open(void **state, bool threads) { return (void)threads, peer_open_named(state, "mimalloc"); }
static bool tcmalloc_open(void **state, bool threads) { return (void)threads, peer_open_named(state, "tcmalloc"); }
static bool jemalloc_open(void **state, bool threads) { return (void)threads, peer_open_named(state, "jemalloc"); }
static void peer_close(void *state) { free(state); }
static void *peer_acquire(void *state, size_t size, unsigned char *cls) {
    (void)cls;
    return ((peer_state *)state)->malloc_fn(size);
}
static void peer_release(void *state, void *item, unsigned char cls) {
    (void)cls;
    ((peer_state *)state)->free_fn(item);
}

static const sized_impl impl_set = {"spawnpool_sizes", set_open, set_close, set_acquire, set_release};
static const sized_impl impl_pools = {"spawnpool_pools", pools_open, pools_close, pools_acquire, pools_release};
static const sized_impl impl_pool64 = {"spawnpool", pool64_open, pool64_close, pool64_acquire, pool64_release};
static const sized_impl peers[] = {
    {"glibc", glibc_open, peer_close, peer_acquire, peer_release},
    {"mimalloc", mimalloc_open, peer_close, peer_acquire, peer_release},
    {"tcmalloc", tcmalloc_open, peer_close, peer_acquire, peer_release},
    {"jemalloc", jemalloc_open, peer_close, peer_acquire, peer_release},
};

/* ---- the churn ----------------------------------------------------------------------------- */

/* Sizes uniform over the classes: a class at random, then a size inside it. */
static void sizes_fill(size_t *seq, size_t same) {
    uint64_t rng = 42;
    for (size_t i = 0; i < SIZE_SEQ; i++) {
        if (same) {
            seq[i] = same;
            continue;
        }
        size_t k = rng_below(&rng, CLASSES), lo = k ? classes[k - 1] + 1u : 1u;
        seq[i] = lo + rng_below(&rng, classes[k] - lo + 1u);
    }
}

typedef struct cell {
    const sized_impl *impl;
    void *state;
    void **live;
    unsigned char *cls;
    size_t n;
    const size_t *seq;
    size_t at;  /* next entry of seq */
    uint64_t rng;
    double *times;
    bool ok;
} cell;

static bool cell_open(cell *c, const sized_impl *impl, size_t n, const size_t *seq, size_t repeats) {
    memset(c, 0, sizeof *c);
    c->impl = impl, c->n = n, c->seq = seq, c->rng = 7;
    if (!impl->open(&c->state, false)) return false;
    c->live = calloc(n, sizeof *c->live);
    c->cls = calloc(n, 1);
    c->times = calloc(repeats, sizeof *c->times);
    c->ok = c->live && c->cls && c->times;
    for (size_t i = 0; c->ok && i < n; i++) {
        size_t size = seq[c->at++ & (SIZE_SEQ - 1u)];
        c->live[i] = impl->acquire(c->state, size, &c->cls[i]);
        if (!c->live[i]) c->ok = false;
        else *(unsigned char *)c->live[i] = (unsigned char)i;
    }
    if (!c->ok) fprintf(stderr, "spbench sizes: %s failed to fill %zu\n", impl->name, n);
    return c->ok;
}

static void cell_close(cell *c) {
    if (c->live)
        for (size_t i = 0; i < c->n; i++)
            if (c->live[i]) c->impl->release(c->state, c->live[i], c->cls[i]);
    if (c->state) c->impl->close(c->state);
    free(c->live), free(c->cls), free(c->times);
}

/* ops pairs: a random live buffer released, one of the next size acquired in its place. */
static double cell_segment(cell *c, size_t ops) {
    uint64_t t0 = now_ns(), sum = 0;
    for (size_t k = 0; k < ops; k++) {
        size_t i = rng_below(&c->rng, c->n);
        c->impl->release(c->state, c->live[i], c->cls[i]);
        void *m = c->impl->acquire(c->state, c->seq[c->at++ & (SIZE_SEQ - 1u)], &c->cls[i]);
        if (!m) {
            c->ok = false;
            return 0;
        }
        *(unsigned char *)m = (unsigned char)k;
        sum += (uintptr_t)m;
        c->live[i] = m;
    }
    sink += sum;
    return (double)(now_ns() - t0) / (double)ops;
}

static void cell_emit(const cell *c, size_t n, size_t size, size_t repeats) {
    if (!c->ok) return;
    double sorted[64];
    memcpy(sorted, c->times, repeats * sizeof *sorted);
    qsort(sorted, repeats, sizeof *sorted, cmp_double);
    emit("sizes", n, size, c->impl->name, "ns_per_pair_min", sorted[0], "ns");
    emit("sizes", n, size, c->impl->name, "ns_per_pair_median", sorted[repeats / 2], "ns");
}

static void run_churn(const sized_impl *const *impls, size_t count, size_t n, size_t same, size_t ops,
                      size_t repeats) {
    static size_t seq[SIZE_SEQ];
    sizes_fill(seq, same);
    fprintf(stderr, "sizes n=%zu size=%zu\n", n, same);
    /* 1M: the two spawnpool implementations (the first two) together, each peer alone */
    bool together = n <= 100000;
    cell cells[8];
    for (size_t g = 0; g < count;) {
        size_t from = g, to = together ? count : g == 0 && count > 1 && impls[1] == &impl_pools ? 2u : g + 1u;
        g = to;
        for (size_t i = from; i < to; i++) cell_open(&cells[i], impls[i], n, seq, repeats);
        for (size_t i = from; i < to; i++) /* warm: one segment each, not timed */
            if (cells[i].ok) cell_segment(&cells[i], ops);
        for (size_t r = 0; r < repeats; r++)
            for (size_t i = from; i < to; i++)
                if (cells[i].ok) cells[i].times[r] = cell_segment(&cells[i], ops);
        for (size_t i = from; i < to; i++) {
            cell_emit(&cells[i], n, same, repeats);
            cell_close(&cells[i]);
        }
    }
}

/* ---- two threads --------------------------------------------------------------------------- */

typedef struct ts_arg {
    const sized_impl *impl;
    void *state;
    const size_t *seq;
    size_t ops, repeats, me;
    pthread_barrier_t *barrier;
    double times[64];
    bool ok;
} ts_arg;

static void *ts_thread(void *v) {
    ts_arg *a = v;
    void *live[TS_LIVE];
    unsigned char cls[TS_LIVE];
    uint64_t rng = 11 + a->me;
    size_t at = a->me * 977u;
    a->ok = true;
    for (size_t i = 0; i < TS_LIVE; i++) live[i] = a->impl->acquire(a->state, a->seq[at++ & (SIZE_SEQ - 1u)], &cls[i]);
    for (size_t r = 0; r <= a->repeats; r++) { /* the first is a warm-up */
        pthread_barrier_wait(a->barrier);
        uint64_t t0 = now_ns();
        for (size_t k = 0; k < a->ops; k++) {
            size_t i = rng_below(&rng, TS_LIVE);
            if (live[i]) a->impl->release(a->state, live[i], cls[i]);
            live[i] = a->impl->acquire(a->state, a->seq[at++ & (SIZE_SEQ - 1u)], &cls[i]);
            if (!live[i]) a->ok = false;
            else *(unsigned char *)live[i] = (unsigned char)k;
        }
        if (r > 0) a->times[r - 1] = (double)(now_ns() - t0) / (double)a->ops;
    }
    for (size_t i = 0; i < TS_LIVE; i++)
        if (live[i]) a->impl->release(a->state, live[i], cls[i]);
    return NULL;
}

static void run_threads(const sized_impl *impl, const char *name, size_t ops, size_t repeats) {
    static size_t seq[SIZE_SEQ];
    sizes_fill(seq, 0);
    void *state;
    if (!impl->open(&state, true)) return;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    ts_arg args[2];
    pthread_t t[2];
    for (size_t i = 0; i < 2; i++) {
        args[i] = (ts_arg){.impl = impl, .state = state, .seq = seq, .ops = ops, .repeats = repeats, .me = i,
                           .barrier = &barrier};
        pthread_create(&t[i], NULL, ts_thread, &args[i]);
    }
    for (size_t i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    impl->close(state);
    if (!args[0].ok || !args[1].ok) {
        fprintf(stderr, "spbench sizes: %s failed under two threads\n", name);
        return;
    }
    double both[128];
    for (size_t r = 0; r < repeats; r++) both[r] = args[0].times[r], both[repeats + r] = args[1].times[r];
    qsort(both, 2 * repeats, sizeof *both, cmp_double);
    emit("sizes_threads", 2, 0, name, "ns_per_pair_min", both[0], "ns");
    emit("sizes_threads", 2, 0, name, "ns_per_pair_median", both[repeats], "ns");
}

/* ---- bookkeeping --------------------------------------------------------------------------- */

static void run_memory(size_t n) {
    static size_t seq[SIZE_SEQ];
    sizes_fill(seq, 0);
    void *set, *pools;
    if (!set_open(&set, false) || !pools_open(&pools, false)) return;
    void **a = calloc(n, sizeof *a), **b = calloc(n, sizeof *b);
    unsigned char *cls = calloc(n, 1);
    for (size_t i = 0; a && b && cls && i < n; i++) {
        a[i] = set_acquire(set, seq[i & (SIZE_SEQ - 1u)], NULL);
        b[i] = pools_acquire(pools, seq[i & (SIZE_SEQ - 1u)], &cls[i]);
    }
    sp_stats total;
    sp_sizes_stats_total(set, &total);
    size_t pools_bytes = 0;
    for (size_t k = 0; k < CLASSES; k++) {
        sp_stats st;
        sp_stats_get(((pools_state *)pools)->pools[k], &st);
        pools_bytes += st.bytes;
    }
    emit("sizes_memory", n, 0, "spawnpool_sizes", "bytes", (double)total.bytes, "B");
    emit("sizes_memory", n, 0, "spawnpool_pools", "bytes", (double)pools_bytes, "B");
    for (size_t i = 0; a && b && cls && i < n; i++) {
        set_release(set, a[i], 0);
        pools_release(pools, b[i], cls[i]);
    }
    free(a), free(b), free(cls);
    set_close(set);
    pools_close(pools);
}

int bench_sizes_run(bool quick, const char *impls) {
    size_t ops = quick ? 20000 : 100000, repeats = quick ? 7 : 21;
    const sized_impl *mixed[8], *same[2] = {&impl_set, &impl_pool64};
    size_t count = 0;
    bool jemalloc = impls && strcmp(impls, "jemalloc") == 0;
    if (jemalloc) rows_of = "jemalloc";
    mixed[count++] = &impl_set;
    if (!jemalloc) mixed[count++] = &impl_pools;
    for (size_t i = 0; i < sizeof peers / sizeof peers[0]; i++) {
        bool is_je = strcmp(peers[i].name, "jemalloc") == 0;
        if (is_je != jemalloc) continue;
        void *probe;
        if (!peers[i].open(&probe, false)) continue; /* says why */
        peers[i].close(probe);
        mixed[count++] = &peers[i];
    }
    static const size_t ns[] = {1000, 65536, 1000000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) run_churn(mixed, count, ns[k], 0, ops, repeats);
    if (jemalloc) return 0;
    for (size_t k = 0; k < 2; k++) run_churn(same, 2, ns[k], 64, ops, repeats);
    fprintf(stderr, "sizes_threads\n");
    run_threads(&impl_set, "spawnpool_sizes_ts", ops, repeats);
    run_threads(&impl_pools, "spawnpool_pools_ts", ops, repeats);
    fprintf(stderr, "sizes_memory\n");
    run_memory(65536);
    return 0;
}
