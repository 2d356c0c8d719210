/* SPDX-License-Identifier: Zlib */
// boost_peer.cpp -- boost::pool<> (Debian's libboost-dev, header only) behind extern "C" so
// the C driver can call it. pool<>::free is the O(1) unordered free, the one a game would use.
#include <boost/pool/pool.hpp>

#include <new>

#include "bench.h"

typedef boost::pool<> bench_boost_pool; // the default: blocks from new[]

extern "C" void *bench_boost_create(size_t item_size) {
    return new (std::nothrow) bench_boost_pool(item_size);
}

extern "C" void bench_boost_destroy(void *pool) {
    delete static_cast<bench_boost_pool *>(pool);
}

extern "C" void *bench_boost_malloc(void *pool) {
    return static_cast<bench_boost_pool *>(pool)->malloc();
}

extern "C" void bench_boost_free(void *pool, void *item) {
    static_cast<bench_boost_pool *>(pool)->free(item);
}

// boost::singleton_pool with its default mutex: the thread-safe boost pool (bench_threads.c).
// The size is a template argument, so it exists for the threads workloads' 64-byte members only.
#include <boost/pool/singleton_pool.hpp>

#include <type_traits>

struct bench_singleton_tag {};
typedef boost::singleton_pool<bench_singleton_tag, 64> bench_singleton;

// Without threads boost would pick null_mutex and the peer would measure an unlocked pool.
static_assert(!std::is_same<bench_singleton::mutex, boost::details::pool::null_mutex>::value,
              "boost::singleton_pool built without a mutex: the threads peer would be unlocked");

extern "C" void *bench_singleton_malloc(void) { return bench_singleton::malloc(); }

extern "C" void bench_singleton_free(void *item) { bench_singleton::free(item); }

extern "C" void bench_singleton_purge(void) { bench_singleton::purge_memory(); }
