/* SPDX-License-Identifier: Zlib */
/* A pool's allocator callbacks (alloc and free, and the vm's commit, decommit and release) are
   called in the middle of growth, trim and teardown: they count as hooks of the pool. An
   allocator that destroys the pool it allocates for is refused (it used to free the pool under
   the growth: a heap use-after-free); one that acquires from it is refused (it used to re-enter
   the growth: the same chunk built twice, one leaked). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "sp_os.h"
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

/* The same allocation without an attack: for tests of the virtual-memory functions alone. */
static void *calm_alloc(size_t size, size_t align, void *user) {
    (void)user;
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
                                           .allocator = {.alloc = ha_alloc, .free = ha_free, .user = h},
                                           .logger = {ha_log, h}});
    assert_non_null(p);
    h->pool = p;
    return p;
}

/* Was a heap use-after-free in the growth (ASan). */
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

/* The same attacks from a virtual-memory allocator's commit (the growth of a reserved range). */
static void *hv_reserve(size_t size, void *user) {
    (void)user;
    return sp__os_reserve(size);
}

static bool hv_commit(void *addr, size_t size, void *user) {
    hostile_alloc *h = (hostile_alloc *)user;
    if (h->pool && h->destroy) {
        h->destroy = 0;
        sp_pool_destroy(h->pool);
    }
    if (h->pool && h->acquire) {
        h->acquire = 0;
        (void)sp_acquire(h->pool);
        (void)sp_prewarm(h->pool, 1);
    }
    return sp__os_commit(addr, size);
}

static void hv_decommit(void *addr, size_t size, void *user) {
    (void)user;
    (void)sp__os_decommit(addr, size);
}

static void hv_release(void *addr, size_t size, void *user) {
    (void)user;
    sp__os_release(addr, size);
}

static void commit_attacking_its_pool_is_refused(void **state) {
    (void)state;
    if (!sp__os_has_virtual_memory()) skip();
    for (int attack = 0; attack < 2; attack++) {
        hostile_alloc h;
        memset(&h, 0, sizeof h);
        sp_pool *p = sp_pool_create(&(sp_desc){
            .name = "hostile", .item_size = 32, .chunk_items = 2,
            .allocator = {.alloc = calm_alloc, .free = ha_free, .user = &h, .reserve = hv_reserve,
                          .commit = hv_commit, .decommit = hv_decommit, .release = hv_release},
            .logger = {ha_log, &h}});
        assert_non_null(p);
        h.pool = p;
        h.destroy = attack == 0;
        h.acquire = attack == 1;
        void *a = sp_acquire(p); /* the first member: the range commits its first pages */
        assert_non_null(a);
        assert_int_equal(h.refusals, attack == 0 ? 1 : 2); /* acquire and prewarm, each refused */
        sp_stats st;
        sp_stats_get(p, &st);
        assert_int_equal(st.leased, 1);
        assert_true(sp__pool_check(p));
        sp_release_all(p);
        h.pool = NULL;
        sp_pool_destroy(p);
    }
}

int main(void) {
    if (getenv("SP_TEST_FILTER")) cmocka_set_test_filter(getenv("SP_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allocator_destroying_its_pool_during_growth_is_refused),
        cmocka_unit_test(allocator_acquiring_from_its_pool_during_growth_is_refused),
        cmocka_unit_test(commit_attacking_its_pool_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
