/* SPDX-License-Identifier: Zlib */
// Compiles the public header as C++ and makes one round trip through the library, so the
// extern "C" block and every declaration are valid C++.
#include <spawnpool.h>
#include <spawnpool_dense.h>
#include <spawnpool_sizes.h>

#include <cstdio>

int main() {
    sp_desc desc = {};
    desc.name = "header";
    desc.item_size = sizeof(double);
    sp_pool *pool = sp_pool_create(&desc);
    void *item = sp_acquire(pool);
    sp_handle handle = sp_handle_of(pool, item);
    bool ok = item != nullptr && sp_resolve(pool, handle) == item && sp_release(pool, item) == SP_OK &&
              sp_resolve(pool, handle) == nullptr && sp_handle_is_null(sp_handle_null());
    sp_pool_destroy(pool);
    sp_dense_desc ddesc = {};
    ddesc.item_size = sizeof(double);
    sp_dense *dense = sp_dense_create(&ddesc);
    sp_handle dh = sp_dense_add_handle(dense, nullptr);
    ok = ok && sp_dense_resolve(dense, dh) == sp_dense_data(dense) &&
         sp_dense_remove_handle(dense, dh) == SP_OK && sp_dense_count(dense) == 0;
    sp_dense_destroy(dense);
    sp_sizes_desc sdesc = {};
    sdesc.name = "header";
    sp_sizes *sizes = sp_sizes_create(&sdesc);
    void *buffer = sp_sizes_acquire_zeroed(sizes, 100);
    buffer = sp_sizes_resize(sizes, buffer, 1000);
    ok = ok && buffer != nullptr && sp_sizes_usable_size(sizes, buffer) == 1024 &&
         sp_sizes_release(sizes, buffer) == SP_OK;
    sp_sizes_destroy(sizes);
    if (!ok) {
        std::fprintf(stderr, "header round trip failed\n");
        return 1;
    }
    return 0;
}
