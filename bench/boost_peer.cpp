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
