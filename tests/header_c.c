/* Compiles the public header as plain C (built as C99 and C11) and makes one round trip through
   the library, so a missing symbol or a C99-incompatible construct fails the build. */
#include <spawnpool.h>

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
    if (!ok) {
        fprintf(stderr, "header round trip failed\n");
        return 1;
    }
    return 0;
}
