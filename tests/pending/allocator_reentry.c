/* SPDX-License-Identifier: Zlib */
/* PENDING (the fix is in src/pool.c, being rewritten by `core`): a pool's allocator callbacks are
   callbacks of the pool, called in the middle of growth, trim and clear, but they are not
   guarded as hooks are. An allocator that destroys the pool it allocates for frees the pool
   under the growth (heap-use-after-free); one that acquires from it re-enters the growth.
   Move this file to tests/test_allocator_reentry.c once pool.c raises hook_depth around its
   allocator calls (and refuses acquisitions from inside them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

typedef struct hostile_alloc {
    sp_pool *pool;
    int destroy, acquire;
    int lines, refusals;
} hostile_alloc;

static void *ha_alloc(size_t size, size_t align, void *user) {
    hostile_alloc *h = (hostile_alloc *)user;
    if (h->pool && h->destroy) {
        h->destroy = 0;
        sp_pool_destroy(h->pool);
    }
    if (h->pool && h->acquire) {
        h->acquire = 0;
        (void)sp_acquire(h->pool);
    }
    if (align < sizeof(void *)) align = sizeof(void *);
    return aligned_alloc(align, (size + align - 1u) / align * align + align);
}

static void ha_free(void *ptr, size_t size, void *user) {
    (void)size;
    (void)user;
    free(ptr);
}

static void ha_log(sp_log_level level, const char *name, const char *message, void *user) {
    (void)level;
    (void)name;
    hostile_alloc *h = (hostile_alloc *)user;
    h->lines++;
    if (strstr(message, "refused")) h->refusals++;
}

static sp_pool *ha_pool(hostile_alloc *h) {
    memset(h, 0, sizeof *h);
    sp_pool *p = sp_pool_create(&(sp_desc){.name = "hostile", .item_size = 32, .chunk_items = 2,
                                           .allocator = {ha_alloc, ha_free, h},
                                           .logger = {ha_log, h}});
    assert_non_null(p);
    h->pool = p;
    return p;
}

/* Today: heap-use-after-free in the growth (ASan). */
static void allocator_destroying_its_pool_during_growth_is_refused(void **state) {
    (void)state;
    hostile_alloc h;
    sp_pool *p = ha_pool(&h);
    void *a = sp_acquire(p);
    void *b = sp_acquire(p);
    assert_non_null(a);
    assert_non_null(b);
    h.destroy = 1;
    void *c = sp_acquire(p); /* a new chunk: the allocator runs, and attacks */
    assert_non_null(c);
    assert_int_equal(h.refusals, 1);
    assert_true(sp__pool_check(p));
    sp_release_all(p);
    h.pool = NULL;
    sp_pool_destroy(p);
}

/* An allocator that acquires from the pool it is growing: refused with one line (or served
   from what exists), never a member handed out twice or a corrupted chunk table. */
static void allocator_acquiring_from_its_pool_during_growth_is_refused(void **state) {
    (void)state;
    hostile_alloc h;
    sp_pool *p = ha_pool(&h);
    void *a = sp_acquire(p);
    void *b = sp_acquire(p);
    assert_non_null(a);
    assert_non_null(b);
    h.acquire = 1;
    void *c = sp_acquire(p);
    assert_non_null(c);
    assert_int_equal(h.refusals, 1);
    assert_true(sp__pool_check(p));
    sp_release_all(p);
    h.pool = NULL;
    sp_pool_destroy(p);
}

int main(void) {
    if (getenv("SP_TEST_FILTER")) cmocka_set_test_filter(getenv("SP_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allocator_destroying_its_pool_during_growth_is_refused),
        cmocka_unit_test(allocator_acquiring_from_its_pool_during_growth_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
