/* SPDX-License-Identifier: Zlib */
/* Builds against an installed spawnpool (CMake package or pkg-config) and makes one round trip. */
#include <spawnpool.h>

#include <stdio.h>

int main(void) {
    sp_desc desc = {0};
    desc.name = "installed";
    desc.item_size = 24;
    sp_pool *pool = sp_pool_create(&desc);
    void *item = sp_acquire(pool);
    int ok = item && sp_release(pool, item) == SP_OK;
    sp_pool_destroy(pool);
    printf("consumer: %s (spawnpool %s)\n", ok ? "ok" : "FAILED", SP_VERSION);
    return ok ? 0 : 1;
}
