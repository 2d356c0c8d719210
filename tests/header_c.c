/* SPDX-License-Identifier: Zlib */
/* Compiles the public header as plain C (built as C99 and C11) and makes one round trip through
   the library, so a missing symbol or a C99-incompatible construct fails the build. */
#include <spawnpool.h>
#include <spawnpool_dense.h>
#include <spawnpool_sizes.h>

#include <stdio.h>

int main(void) {
    sp_desc desc = {0};
    desc.name = "header";
    desc.item_size = sizeof(double);
    sp_pool *pool = sp_pool_create(&desc);
    void *item = sp_acquire(pool);
    sp_handle handle = sp_handle_of(pool, item);
    int ok = item != NULL && sp_resolve(pool, handle) == item && sp_release(pool, item) == SP_OK &&
             sp_resolve(pool, handle) == NULL;
    sp_pool_destroy(pool);
    sp_dense_desc ddesc = {0};
    ddesc.item_size = sizeof(double);
    sp_dense *dense = sp_dense_create(&ddesc);
    sp_handle dh = sp_dense_add_handle(dense, NULL);
    ok = ok && sp_dense_resolve(dense, dh) == sp_dense_data(dense) &&
         sp_dense_remove_handle(dense, dh) == SP_OK && sp_dense_count(dense) == 0;
    sp_dense_destroy(dense);
    sp_sizes_desc sdesc = {0};
    sdesc.name = "header";
    sp_sizes *sizes = sp_sizes_create(&sdesc);
    void *buffer = sp_sizes_acquire_zeroed(sizes, 100);
    buffer = sp_sizes_resize(sizes, buffer, 1000);
    ok = ok && buffer != NULL && sp_sizes_usable_size(sizes, buffer) == 1024 &&
         sp_sizes_release(sizes, buffer) == SP_OK;
    sp_sizes_destroy(sizes);
    if (!ok) {
        fprintf(stderr, "header round trip failed\n");
        return 1;
    }
    return 0;
}
