// Compiles the public header as C++ and makes one round trip through the library, so the
// extern "C" block and every declaration are valid C++.
#include <spawnpool.h>

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
    if (!ok) {
        std::fprintf(stderr, "header round trip failed\n");
        return 1;
    }
    return 0;
}
