/* SPDX-License-Identifier: Zlib */
/*
    bench.h -- the benchmark driver's view of an allocator.

    Every implementation the suite compares (spawnpool in its three configurations, the bare
    free list that is the floor, boost::pool<>, GSlice, glibc, mimalloc, tcmalloc, jemalloc)
    sits behind the same four calls, so one workload loop measures all of them and each pays
    the same indirect call per operation. Workloads that only make sense for some of them
    (reclaim, resolve, memory) are written out in bench_main.c.
*/
#ifndef SP_BENCH_H
#define SP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spawnpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_impl {
    const char *name;
    /* Prepares for objects of item_size bytes; capacity is the most that will be live at
       once (0: unknown, grow on demand). Returns false, after saying why on stderr, when the
       implementation is not available here (a library that does not load). */
    bool (*open)(void **state, size_t item_size, size_t capacity);
    void (*close)(void *state);
    void *(*acquire)(void *state);
    void (*release)(void *state, void *item);
    /* The spawnpool pool behind state, for workloads that use its own API (iteration,
       stats); NULL for every other implementation. */
    sp_pool *(*pool)(void *state);
} bench_impl;

/* spawnpool's own pair, for the rows whose acquire and release are sp_acquire and sp_release on
   the pool in their state: the timing loops call these through pointers of their own types, as
   they call a floor's functions, so that the wrapper's jump is not counted as the pool's. */
typedef struct bench_pool_pair {
    void *(*acquire)(sp_pool *pool);
    sp_result (*release)(sp_pool *pool, void *item);
} bench_pool_pair;

/* sp_acquire and sp_release, the one such pair. */
extern const bench_pool_pair bench_spawnpool_pair;

/* impl's pool pair, or NULL when its rows call anything else (a peer, a floor, handles). */
const bench_pool_pair *bench_impl_pool_pair(const bench_impl *impl);

/* The implementations the generic workloads run, in report order. */
const bench_impl *const *bench_impls(size_t *count);

/* The implementation called name, or NULL. */
const bench_impl *bench_impl_find(const char *name);

/* Whether a comma-separated list (--impls, a workload's skip list) holds name exactly; NULL is
   the empty list (bench_main.c). */
bool bench_list_has(const char *list, const char *name);

/* The bare intrusive free list (the floor), also used directly by the reclaim and resolve
   references: fixed-size slots carved from chunks, a singly linked list through free ones. */
typedef struct bench_freelist {
    void *head;        /* first free slot */
    size_t slot_size;  /* item size rounded up to 16 */
    size_t chunk_items;
    void **chunks;     /* every chunk, for close */
    size_t chunk_count, chunk_cap;
} bench_freelist;

bool bench_freelist_init(bench_freelist *fl, size_t item_size, size_t capacity);
void bench_freelist_fini(bench_freelist *fl);
void *bench_freelist_grow(bench_freelist *fl); /* cold path: adds a chunk, returns a slot */

static inline void *bench_freelist_pop(bench_freelist *fl) {
    void *item = fl->head;
    if (item == NULL) return bench_freelist_grow(fl);
    fl->head = *(void **)item;
    return item;
}

static inline void bench_freelist_push(bench_freelist *fl, void *item) {
    *(void **)item = fl->head;
    fl->head = item;
}

/* boost::pool<> behind extern "C" (bench/boost_peer.cpp). */
void *bench_boost_create(size_t item_size);
void bench_boost_destroy(void *pool);
void *bench_boost_malloc(void *pool);
void bench_boost_free(void *pool, void *item);

/* boost::singleton_pool<tag, 64> with its default mutex (bench/boost_peer.cpp), for the threads
   workloads: one process-wide pool of 64-byte blocks. */
void *bench_singleton_malloc(void);
void bench_singleton_free(void *item);
void bench_singleton_purge(void);

/* The threads workloads (bench/bench_threads.c): threads_local, threads_cross, threads_mixed at
   each thread count of `threads` (count of them; NULL: 1, 2, 4, 8), CSV rows on stdout. impls is
   the --impl list or NULL. Returns the exit status. */
/* The embed workload (bench_embed.c). */
int bench_embed_run(bool quick);

/* A malloc-like peer's entry points by name (glibc, mimalloc, tcmalloc, jemalloc when
   preloaded): false, after saying why on stderr, when it is not available (bench_impls.c). */
typedef void *(*bench_malloc_fn)(size_t);
typedef void (*bench_free_fn)(void *);
bool bench_peer_malloc(const char *name, bench_malloc_fn *malloc_fn, bench_free_fn *free_fn);

/* The sizes workload (bench_sizes.c); impls "jemalloc" in jemalloc's own process. */
int bench_sizes_run(bool quick, const char *impls);

int bench_threads_run(const char *workload, bool quick, const char *impls,
                      const size_t *threads, size_t thread_count);

#ifdef __cplusplus
}
#endif

#endif /* SP_BENCH_H */
