/* SPDX-License-Identifier: Zlib */
/* sp_each (the lookup-free walk over leased members) and sp_set_overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

typedef struct walk {
    sp_pool *pool;
    void *seen[64];
    size_t count;
    int release_current, release_next_of, acquire_on;
    size_t stop_after;
} walk;

static bool visit(void *item, void *user) {
    walk *w = (walk *)user;
    w->seen[w->count++] = item;
    if (w->release_current) assert_int_equal(sp_release(w->pool, item), SP_OK);
    if (w->acquire_on && (int)w->count == w->acquire_on) assert_non_null(sp_acquire(w->pool));
    return w->stop_after == 0 || w->count < w->stop_after;
}

static sp_pool *pool_in_order(test_env *env, void **items, size_t n, sp_order order) {
    sp_desc d = test_env_desc(env, "each", 24);
    d.chunk_items = 3; /* several chunks */
    d.order = order;
    sp_pool *p = sp_pool_create(&d);
    for (size_t i = 0; i < n; i++) items[i] = sp_acquire(p);
    return p;
}

/* Most tests here walk in acquisition order, where the rules for a changing pool are richest. */
static sp_pool *pool_with(test_env *env, void **items, size_t n) {
    return pool_in_order(env, items, n, SP_ORDER_ACQUISITION);
}

static void each_visits_leased_members_oldest_first(void **state) {
    (void)state;
    test_env env;
    void *items[10];
    sp_pool *p = pool_with(&env, items, 10);
    sp_release(p, items[4]);
    walk w = {.pool = p};
    assert_int_equal(sp_each(p, visit, &w), 9);
    size_t k = 0;
    for (size_t i = 0; i < 10; i++)
        if (i != 4) assert_ptr_equal(w.seen[k++], items[i]);
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void each_lets_the_callback_release_its_member(void **state) {
    (void)state;
    test_env env;
    void *items[10];
    sp_pool *p = pool_with(&env, items, 10);
    walk w = {.pool = p, .release_current = 1};
    assert_int_equal(sp_each(p, visit, &w), 10);
    for (size_t i = 0; i < 10; i++) assert_ptr_equal(w.seen[i], items[i]);
    EXPECT_STATS(p, .size = 10, .free = 10, .peak_leased = 10, .created = 10, .acquired = 10, .released = 10);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* A walk visits the members leased when it began: one acquired meanwhile (appended behind the
   rest) is not visited, so a callback that keeps acquiring cannot keep the walk going. */
static void each_skips_members_acquired_during_the_walk(void **state) {
    (void)state;
    test_env env;
    void *items[5];
    sp_pool *p = pool_with(&env, items, 5);
    walk w = {.pool = p, .acquire_on = 2};
    assert_int_equal(sp_each(p, visit, &w), 5);
    for (size_t i = 0; i < 5; i++) assert_ptr_equal(w.seen[i], items[i]);
    EXPECT_STATS(p, .size = 6, .leased = 6, .peak_leased = 6, .created = 6, .acquired = 6);
    sp_release_all(p);
    sp_pool_destroy(p);
}

static bool acquire_then_release_current(void *item, void *user) {
    walk *w = (walk *)user;
    w->seen[w->count++] = item;
    if (w->count == 1) assert_non_null(sp_acquire(w->pool));
    assert_int_equal(sp_release(w->pool, item), SP_OK);
    return true;
}

static void each_ends_at_what_the_last_member_acquired_before_releasing_itself(void **state) {
    (void)state;
    for (size_t n = 1; n <= 3; n++) { /* alone in the list, and last behind others */
        test_env env;
        void *items[3];
        sp_pool *p = pool_with(&env, items, n);
        walk w = {.pool = p};
        for (size_t i = 0; i + 1 < n; i++) sp_release(p, items[i]); /* only the newest is left... */
        for (size_t i = 0; i + 1 < n; i++) items[i] = sp_acquire(p); /* ...then it is the oldest */
        /* the member acquired by the first call is found after the last one released itself
           (its links gone: the cursor's slow step), and not visited: acquired meanwhile */
        assert_int_equal(sp_each(p, acquire_then_release_current, &w), n);
        EXPECT_STATS(p, .size = n + 1, .leased = 1, .free = n, .peak_leased = n + 1, .created = n + 1,
                     .acquired = 2 * n, .released = 2 * n - 1);
        assert_int_equal(sp_release_all(p), 1);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

static bool on_last_reclaim_then_release(void *item, void *user) {
    walk *w = (walk *)user;
    w->seen[w->count++] = item;
    if (w->count == 2) {                               /* the last member, B */
        assert_ptr_equal(sp_acquire(w->pool), w->seen[0]); /* saturated: reclaims A, its prev */
        assert_int_equal(sp_release(w->pool, item), SP_OK);
    }
    return w->count < 8;
}

static void each_ends_at_what_the_last_member_acquired_even_when_its_prev_went(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "each", 24);
    d.max = 2;
    d.overflow = SP_OVERFLOW_RECLAIM; /* acquisition order by default */
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p), *b = sp_acquire(p);
    walk w = {.pool = p};
    /* A, B, and not A's new life: found after B though both of B's old neighbours are gone
       (B released, A reclaimed), but acquired after the walk began. */
    assert_int_equal(sp_each(p, on_last_reclaim_then_release, &w), 2);
    assert_ptr_equal(w.seen[0], a);
    assert_ptr_equal(w.seen[1], b);
    EXPECT_STATS(p, .size = 2, .leased = 1, .free = 1, .peak_leased = 2, .created = 2, .acquired = 3,
                 .released = 2, .reclaimed = 1);
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void each_stops_when_the_callback_says_so(void **state) {
    (void)state;
    test_env env;
    void *items[6];
    sp_pool *p = pool_with(&env, items, 6);
    walk w = {.pool = p, .stop_after = 3};
    assert_int_equal(sp_each(p, visit, &w), 3);
    assert_int_equal(sp_each(NULL, visit, &w), 0);
    assert_int_equal(sp_each(p, NULL, &w), 0);
    sp_release_all(p);
    sp_pool_destroy(p);
}

static bool release_next_too(void *item, void *user) {
    walk *w = (walk *)user;
    w->seen[w->count++] = item;
    void *next = sp_next(w->pool, item);
    sp_release(w->pool, item);
    if (next) sp_release(w->pool, next);
    return true;
}

static void each_goes_on_after_the_callback_releases_its_member_and_the_next(void **state) {
    (void)state;
    test_env env;
    void *items[6];
    sp_pool *p = pool_with(&env, items, 6);
    walk w = {.pool = p};
    /* A bullet that kills itself and its target: the walk goes on past both. */
    assert_int_equal(sp_each(p, release_next_too, &w), 3);
    for (size_t i = 0; i < 3; i++) assert_ptr_equal(w.seen[i], items[2 * i]);
    EXPECT_STATS(p, .size = 6, .free = 6, .peak_leased = 6, .created = 6, .acquired = 6, .released = 6);
    sp_pool_destroy(p);
}

static void each_in_memory_order_skips_members_released_during_the_walk(void **state) {
    (void)state;
    test_env env;
    void *items[6];
    sp_pool *p = pool_in_order(&env, items, 6, SP_ORDER_MEMORY);
    walk w = {.pool = p};
    /* Each visit releases its member and the next; the walk goes on past both. */
    assert_int_equal(sp_each(p, release_next_too, &w), 3);
    for (size_t i = 0; i < 3; i++) assert_ptr_equal(w.seen[i], items[2 * i]);
    EXPECT_STATS(p, .size = 6, .free = 6, .peak_leased = 6, .created = 6, .acquired = 6, .released = 6);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void each_in_memory_order_visits_by_address_and_what_is_acquired_after(void **state) {
    (void)state;
    test_env env;
    void *items[6];
    sp_pool *p = pool_in_order(&env, items, 6, SP_ORDER_MEMORY);
    sp_release(p, items[1]);
    sp_release(p, items[5]);
    void *again = sp_acquire(p); /* items[5]'s slot: last in memory, newest acquisition */
    assert_ptr_equal(again, items[5]);
    /* A member acquired during the walk lands in the free slot of items[1], behind the walk
       once it passed there: not visited. */
    walk w = {.pool = p, .acquire_on = 3};
    assert_int_equal(sp_each(p, visit, &w), 5);
    void *want[] = {items[0], items[2], items[3], items[4], items[5]};
    for (size_t i = 0; i < 5; i++) assert_ptr_equal(w.seen[i], want[i]);
    assert_true(sp_is_leased(p, items[1]));
    /* Released in the walk: the rest is still visited (no link to go stale). */
    walk all = {.pool = p, .release_current = 1};
    assert_int_equal(sp_each(p, visit, &all), 6);
    EXPECT_STATS(p, .size = 6, .free = 6, .peak_leased = 6, .created = 6, .acquired = 8, .released = 8);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void set_overflow_switches_policy_on_a_live_pool(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "policy", 16);
    d.max = 2;
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp_acquire(p);
    assert_null(sp_acquire(p)); /* DROP */
    assert_int_equal(sp_set_overflow(p, SP_OVERFLOW_RECLAIM), SP_OK);
    assert_ptr_equal(sp_acquire(p), a); /* the oldest comes back */
    assert_int_equal(sp_set_overflow(p, SP_OVERFLOW_GROW), SP_OK);
    assert_non_null(sp_acquire(p));
    assert_int_equal(sp_set_overflow(p, (sp_overflow)7), SP_ERR_INVALID);
    assert_int_equal(sp_set_overflow(NULL, SP_OVERFLOW_DROP), SP_ERR_INVALID);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 4, .released = 1,
                 .reclaimed = 1, .dropped = 1, .grown_past_max = 1);
    sp_release_all(p);
    sp_pool_destroy(p);

    static unsigned char buffer[4096];
    sp_desc fixed = {.name = "fixed", .item_size = 16, .buffer = buffer, .buffer_size = sizeof buffer};
    sp_pool *f = sp_pool_create(&fixed);
    assert_int_equal(sp_set_overflow(f, SP_OVERFLOW_GROW), SP_ERR_INVALID); /* cannot grow a buffer */
    assert_int_equal(sp_set_overflow(f, SP_OVERFLOW_RECLAIM), SP_OK);
    sp_pool_destroy(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_visits_leased_members_oldest_first),
        cmocka_unit_test(each_lets_the_callback_release_its_member),
        cmocka_unit_test(each_skips_members_acquired_during_the_walk),
        cmocka_unit_test(each_ends_at_what_the_last_member_acquired_before_releasing_itself),
        cmocka_unit_test(each_ends_at_what_the_last_member_acquired_even_when_its_prev_went),
        cmocka_unit_test(each_stops_when_the_callback_says_so),
        cmocka_unit_test(each_goes_on_after_the_callback_releases_its_member_and_the_next),
        cmocka_unit_test(each_in_memory_order_skips_members_released_during_the_walk),
        cmocka_unit_test(each_in_memory_order_visits_by_address_and_what_is_acquired_after),
        cmocka_unit_test(set_overflow_switches_policy_on_a_live_pool),
    };
    return cmocka_run_group_tests_name("each", tests, NULL, NULL);
}
