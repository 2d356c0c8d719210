/* SPDX-License-Identifier: Zlib */
/* Pool tags across pool lifetimes: a handle never resolves in any pool other than the one that
   issued it, even after its tag has served many later pools, sp_pool and sp_dense alike; a tag
   whose lives run out is retired for good (white-box). The process uses only TAGS of the 131072
   tags (sp__tags_limit), so that every tag comes back within a few hundred pools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h"
#include "spawnpool_dense.h"

#include <string.h>

#define LIFE_OF(h) ((uint32_t)((h).id >> TEST_LIFE_SHIFT))
#define TAG_OF(h) ((uint32_t)(((h).id >> TEST_TAG_SHIFT) & TEST_TAG_MASK))
#define SLOT_OF(h) ((uint32_t)((h).id & 0xFFFFFFu))

void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life);

enum { TAGS = 64, ROUNDS = 2 * TAGS + 10 }; /* every tag comes back at least twice */

/* A level that rebuilds its pool: the first pool's handle (and the previous level's) must never
   resolve in a later pool, though its tag comes back every TAGS pools that take one. Each later pool
   hands out the same slot, so only the life tells the handles apart. */
static void destroyed_pools_handles_never_resolve_in_a_later_pool(void **state) {
    (void)state;
    test_log tl = {0};
    sp_desc d = {.name = "level", .item_size = 16, .logger = test_log_make(&tl)};
    sp_pool *first = sp_pool_create(&d);
    sp_handle h_first;
    assert_non_null(sp_acquire_handle(first, NULL, &h_first));
    sp_pool_destroy(first); /* leaked on purpose: its handle outlives it */
    sp_handle h_prev = h_first;
    int same_tag = 0;
    for (int round = 0; round < ROUNDS; round++) {
        sp_pool *p = sp_pool_create(&d);
        assert_non_null(p);
        sp_handle h;
        void *m = sp_acquire_handle(p, NULL, &h);
        assert_non_null(m);
        if (TAG_OF(h) == TAG_OF(h_first)) {
            same_tag++;
            assert_int_equal(SLOT_OF(h), SLOT_OF(h_first)); /* the very same slot */
            int warned = tl.warnings;
            assert_null(sp_resolve(p, h_first));
            assert_int_equal(tl.warnings, warned + 1); /* another pool's handle: one warning */
            assert_true(test_log_last_has(&tl, "belongs to another pool"));
        } else {
            assert_null(sp_resolve(p, h_first));
        }
        assert_null(sp_resolve(p, h_prev));
        assert_ptr_equal(sp_resolve(p, h), m);
        assert_true(sp__pool_check(p)); /* no slot's life below the pool's first */
        sp_release(p, m);
        sp_pool_destroy(p);
        h_prev = h;
    }
    assert_true(same_tag >= 2);
    assert_int_equal(tl.errors, 0);
}

/* The same for sp_dense, and across the two kinds: they share the tag table and its lives. */
static void destroyed_dense_handles_never_resolve_in_a_later_pool_of_either_kind(void **state) {
    (void)state;
    test_log tl = {0};
    sp_dense_desc dd = {.name = "sparks", .item_size = 16, .logger = test_log_make(&tl)};
    sp_desc pd = {.name = "bullets", .item_size = 16, .logger = test_log_make(&tl)};
    sp_dense *first = sp_dense_create(&dd);
    sp_handle h_first = sp_dense_add_handle(first, NULL);
    assert_false(sp_handle_is_null(h_first));
    sp_dense_destroy(first);
    sp_pool *first_pool = sp_pool_create(&pd);
    sp_handle h_first_pool;
    assert_non_null(sp_acquire_handle(first_pool, NULL, &h_first_pool));
    sp_pool_destroy(first_pool);
    int same_tag = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (round & 1) {
            sp_dense *d = sp_dense_create(&dd);
            assert_non_null(d);
            sp_handle h = sp_dense_add_handle(d, NULL);
            assert_false(sp_handle_is_null(h));
            same_tag += TAG_OF(h) == TAG_OF(h_first) || TAG_OF(h) == TAG_OF(h_first_pool);
            assert_null(sp_dense_resolve(d, h_first));
            assert_null(sp_dense_resolve(d, h_first_pool));
            assert_int_equal(sp_dense_resolve_index(d, h), 0);
            sp_dense_destroy(d);
        } else {
            sp_pool *p = sp_pool_create(&pd);
            assert_non_null(p);
            sp_handle h;
            assert_non_null(sp_acquire_handle(p, NULL, &h));
            same_tag += TAG_OF(h) == TAG_OF(h_first) || TAG_OF(h) == TAG_OF(h_first_pool);
            assert_null(sp_resolve(p, h_first));
            assert_null(sp_resolve(p, h_first_pool));
            sp_pool_destroy(p);
        }
    }
    assert_true(same_tag >= 2);
    assert_int_equal(tl.errors, 0);
}

/* A stale handle of the pool's own is still silent: only lives of earlier pools are foreign. */
static void own_stale_handles_stay_silent_after_the_tag_came_back(void **state) {
    (void)state;
    test_log tl = {0};
    sp_desc d = {.name = "quiet", .item_size = 8, .logger = test_log_make(&tl)};
    for (int round = 0; round <= TAGS; round++) { /* every tag serves a pool's handle */
        sp_pool *q = sp_pool_create(&d);
        sp_handle hq;
        assert_non_null(sp_acquire_handle(q, NULL, &hq));
        sp_pool_destroy(q);
    }
    tl.warnings = 0; /* (the leaks of the loop) */
    sp_pool *p = sp_pool_create(&d);
    sp_handle h;
    void *m = sp_acquire_handle(p, NULL, &h);
    assert_true(LIFE_OF(h) > 1); /* the tag served before: lives start above its old ones */
    sp_release(p, m);
    assert_null(sp_resolve(p, h));
    assert_int_equal(tl.warnings + tl.errors, 0);
    sp_pool_destroy(p);
}

/* Cycles pools until one gets tag `tag` again (every other tag is taken in turn), returns it. */
static sp_pool *pool_with_tag(const sp_desc *d, uint32_t tag, sp_handle *h) {
    for (int round = 0; round <= TAGS; round++) {
        sp_pool *p = sp_pool_create(d);
        assert_non_null(p);
        assert_non_null(sp_acquire_handle(p, NULL, h));
        if (TAG_OF(*h) == tag) return p;
        sp_pool_destroy(p);
    }
    fail_msg("tag %u never came back", tag);
    return NULL;
}

/* White-box: the destroy records the highest life the pool handed out, the tag's next pool starts
   above it, and a tag left with fewer than SP__TAG_LIFE_RESERVE lives is retired: never handed
   out again, so one fewer pool can be alive at once. */
static void a_tag_whose_lives_run_out_is_retired_for_good(void **state) {
    (void)state;
    sp__tags_reset();
    test_log tl = {0};
    sp_desc d = {.name = "worn", .item_size = 8, .logger = test_log_make(&tl)};
    const uint32_t last_usable = SP__LIFE_MAX - SP__TAG_LIFE_RESERVE - 1u;

    /* One below the threshold: the tag survives, and its next pool starts right above. */
    sp_pool *p = sp_pool_create(&d);
    sp_handle h;
    void *m = sp_acquire_handle(p, NULL, &h);
    uint32_t tag = TAG_OF(h);
    sp__debug_set_life(p, m, last_usable);
    sp_pool_destroy(p);
    assert_int_equal(sp__tag_high_water(tag), last_usable);
    assert_false(sp__tag_is_retired(tag));
    p = pool_with_tag(&d, tag, &h);
    assert_int_equal(LIFE_OF(h), last_usable + 1u);
    /* Its slots have the reserve of lives: the last one is SP__LIFE_MAX. */
    assert_int_equal(SP__LIFE_MAX - LIFE_OF(h) + 1u, SP__TAG_LIFE_RESERVE + 1u);
    sp_pool_destroy(p); /* high water is now last_usable + 1: no reserve left */
    assert_true(sp__tag_is_retired(tag));
    assert_int_equal(sp__tags_retired(), 1);

    /* Retired: TAGS - 1 pools with handles fit at once, none of them on that tag, and the next
       pool's first handle is refused (the pool itself works without). */
    static sp_pool *pools[TAGS];
    size_t n = 0;
    sp_handle hn = {0};
    while (n < TAGS && (pools[n] = sp_pool_create(&d)) != NULL && sp_acquire_handle(pools[n], NULL, &hn)) {
        assert_int_not_equal(TAG_OF(hn), tag);
        n++;
    }
    assert_int_equal(n, TAGS - 1);
    assert_true(test_log_last_has(&tl, "no pool tag free"));
    assert_non_null(sp_acquire(pools[n]));
    for (size_t i = 0; i <= n; i++) sp_pool_destroy(pools[i]);

    /* A dense pool's retired slot retires its tag too (its last life was handed out). */
    sp_dense_desc dd = {.name = "worn", .item_size = 8, .logger = test_log_make(&tl)};
    sp_dense *dn = sp_dense_create(&dd);
    sp_handle hd = sp_dense_add_handle(dn, NULL);
    sp__dense_set_life(dn, 0, SP__LIFE_MAX);
    assert_int_equal(sp_dense_remove_at(dn, 0), SP_OK); /* the slot retires */
    sp_dense_destroy(dn);
    assert_true(sp__tag_is_retired(TAG_OF(hd)));
    assert_int_equal(sp__tags_retired(), 2);
    sp__tags_reset();
    assert_int_equal(sp__tags_retired(), 0);
}

static int limit_tags(void **state) {
    (void)state;
    sp__tags_limit(TAGS);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(destroyed_pools_handles_never_resolve_in_a_later_pool),
        cmocka_unit_test(destroyed_dense_handles_never_resolve_in_a_later_pool_of_either_kind),
        cmocka_unit_test(own_stale_handles_stay_silent_after_the_tag_came_back),
        cmocka_unit_test(a_tag_whose_lives_run_out_is_retired_for_good),
    };
    return cmocka_run_group_tests(tests, limit_tags, NULL);
}
