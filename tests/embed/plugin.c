/* SPDX-License-Identifier: Zlib */
/* A shared library that embeds spawnpool, as an ECS or a messaging library would: it links the
   static library and exports only its own functions (embed_host.c loads two copies). With the
   static library's symbols hidden (SP_STATIC_HIDDEN), each copy calls its own spawnpool, and
   the library may be unloaded while threads that used its thread-safe pool are still alive. */
#include <spawnpool.h>

#include <stddef.h>

#define EMBED_API __attribute__((visibility("default")))

static sp_pool *pool; /* made on first use */

typedef void (*embed_any_fn)(void);

/* Where this library's calls to sp_acquire go: its own copy, or (with the symbols exported)
   whichever copy the dynamic linker found first. */
EMBED_API embed_any_fn embed_sp_acquire(void) { return (embed_any_fn)sp_acquire; }

/* Any thread: the pool made on first use, one member acquired and released. 0 on success. */
EMBED_API int embed_touch(void) {
    static sp_desc d = {.name = "embedded", .item_size = 32, .threads = SP_THREADS_SAFE};
    if (!pool) pool = sp_pool_create(&d); /* (the host calls it on one thread first) */
    void *m = pool ? sp_acquire(pool) : NULL;
    return m && sp_release(pool, m) == SP_OK ? 0 : 1;
}

/* Before the library is unloaded. */
EMBED_API void embed_fini(void) {
    sp_pool_destroy(pool);
    pool = NULL;
}
