/* SPDX-License-Identifier: Zlib */
// Compiles the public header as C++ and makes one round trip through the library, so the
// extern "C" block and every declaration are valid C++.
#include <spawnpool.h>
#include <spawnpool_dense.h>

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
    if (!ok) {
        std::fprintf(stderr, "header round trip failed\n");
        return 1;
    }
    return 0;
}
