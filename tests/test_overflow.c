/* SPDX-License-Identifier: Zlib */
/* Overflow policies on a saturated pool (DROP, RECLAIM with and without a priority hook, GROW),
   sp_acquire_force, and a mutable max. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* sp__pool_check, sp__debug_set_life: white-box checks */

#include <string.h>

static sp_pool *make(test_env *env, sp_overflow overflow, size_t max) {
    sp_desc d = test_env_desc(env, "over", 32);
    d.overflow = overflow;
    d.max = max;
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    return p;
}

static void growth_stops_at_max_and_drop_returns_null_silently(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_DROP, 2);
    void *a = sp_acquire(p), *b = sp_acquire(p);
    assert_non_null(a);
    assert_non_null(b);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2);
    assert_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2, .dropped = 1);
    assert_null(sp_acquire_with(p, &env));
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2, .dropped = 2);
    assert_int_equal(env.hooks.acquired, 2);
    assert_int_equal(env.hooks.released, 0);
    assert_int_equal(env.log.errors + env.log.warnings + env.log.infos, 0);
    /* Still leased, untouched. */
    assert_true(sp_is_leased(p, a));
    assert_true(sp_is_leased(p, b));
    sp_release(p, a);
    assert_ptr_equal(sp_acquire(p), a);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 3,
                 .released = 1, .dropped = 2);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void reclaim_takes_the_oldest_member(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_RECLAIM, 3);
    void *a = sp_acquire(p), *b = sp_acquire(p), *c = sp_acquire(p);
    test_hooks_trace_reset(&env.hooks);
    int arg = 7;
    void *r = sp_acquire_with(p, &arg);
    assert_ptr_equal(r, a);
    assert_string_equal(env.hooks.trace, "RA"); /* on_release, then on_acquire */
    assert_ptr_equal(env.hooks.last_released, a);
    assert_ptr_equal(env.hooks.last_acquired, a);
    assert_ptr_equal(env.hooks.last_arg, &arg);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 4,
                 .released = 1, .reclaimed = 1);
    /* The reclaimed member counts as newly acquired: b is the oldest now, then c, then a. */
    assert_ptr_equal(sp_acquire(p), b);
    assert_ptr_equal(sp_acquire(p), c);
    assert_ptr_equal(sp_acquire(p), a);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 7,
                 .released = 4, .reclaimed = 4);
    assert_int_equal(env.log.errors + env.log.warnings, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* A RECLAIM pool without hooks or priority takes a shorter path (the oldest member moves to the
   tail of the lease list in one step): the same outcome, checked the same way. */
static void reclaim_without_hooks_takes_the_oldest_and_ends_its_life(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "plain", 32);
    d.create = NULL, d.on_acquire = NULL, d.on_release = NULL, d.dispose = NULL;
    d.max = 3;
    d.overflow = SP_OVERFLOW_RECLAIM;
    sp_pool *p = sp_pool_create(&d);
    void *m[3];
    sp_handle h[3];
    for (int i = 0; i < 3; i++) m[i] = sp_acquire_handle(p, NULL, &h[i]);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            sp_handle now;
            assert_ptr_equal(sp_acquire_handle(p, NULL, &now), m[i]); /* the oldest, in turn */
            assert_null(sp_resolve(p, h[i]));                        /* its old life ended */
            assert_ptr_equal(sp_resolve(p, now), m[i]);
            assert_false(sp_handle_eq(now, h[i]));
            h[i] = now;
            assert_true(sp__pool_check(p));
        }
    }
    /* Acquisition order: m[0] was reclaimed longest ago of the three. */
    assert_ptr_equal(sp_first(p), m[0]);
    assert_ptr_equal(sp_next(p, m[0]), m[1]);
    assert_ptr_equal(sp_next(p, m[1]), m[2]);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 9,
                 .released = 6, .reclaimed = 6);
    /* A busy member is skipped and a member at its last life retires: both take the general
       path, with the same results as with hooks (see the tests below and test_handles.c). */
    sp__debug_set_life(p, m[0], TEST_LIFE_MAX);
    void *r = sp_acquire(p);
    assert_non_null(r);
    assert_true(sp__pool_check(p));
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 4, .disposed = 1,
                 .acquired = 10, .released = 7, .reclaimed = 7);
    assert_int_equal(env.log.errors + env.log.warnings, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void reclaim_skips_released_members_and_follows_reacquisition(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_RECLAIM, 3);
    void *a = sp_acquire(p), *b = sp_acquire(p), *c = sp_acquire(p);
    sp_release(p, a);
    void *a2 = sp_acquire(p); /* the only free member: a again, now the newest */
    assert_ptr_equal(a2, a);
    assert_ptr_equal(sp_acquire(p), b);
    assert_ptr_equal(sp_acquire(p), c);
    assert_ptr_equal(sp_acquire(p), a);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 7,
                 .released = 4, .reclaimed = 3);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void reclaim_ends_the_victims_life(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_RECLAIM, 1);
    void *a = sp_acquire(p);
    sp_handle h = sp_handle_of(p, a);
    assert_ptr_equal(sp_resolve(p, h), a);
    assert_ptr_equal(sp_acquire(p), a);
    assert_null(sp_resolve(p, h));
    sp_handle h2 = sp_handle_of(p, a);
    assert_false(sp_handle_is_null(h2));
    assert_false(sp_handle_eq(h, h2));
    assert_ptr_equal(sp_resolve(p, h2), a);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

typedef struct prio_item {
    double priority;
    int id;
} prio_item;

static int priority_calls;
static double prio_of(const void *item, void *user) {
    (void)user;
    priority_calls++;
    return ((const prio_item *)item)->priority;
}
static void prio_acquire(void *item, const void *arg, void *user) {
    (void)user;
    if (arg) *(prio_item *)item = *(const prio_item *)arg;
}

static sp_pool *make_prio(test_alloc *ta, size_t max) {
    sp_desc d = {.name = "prio", .item_size = sizeof(prio_item), .max = max,
                 .overflow = SP_OVERFLOW_RECLAIM, .on_acquire = prio_acquire, .priority = prio_of,
                 .allocator = test_alloc_make(ta)};
    return sp_pool_create(&d);
}

static void reclaim_takes_the_lowest_priority_member(void **state) {
    (void)state;
    test_alloc ta = {0};
    sp_pool *p = make_prio(&ta, 4);
    const prio_item in[4] = {{5.0, 0}, {-2.0, 1}, {3.0, 2}, {9.0, 3}};
    prio_item *items[4];
    for (int i = 0; i < 4; i++) items[i] = sp_acquire_with(p, &in[i]);
    priority_calls = 0;
    prio_item next = {100.0, 4};
    prio_item *r = sp_acquire_with(p, &next);
    assert_ptr_equal(r, items[1]);
    assert_int_equal(r->id, 4);
    assert_true(priority_calls >= 1);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 5,
                 .released = 1, .reclaimed = 1);
    /* Now 3.0 (id 2) is the lowest. */
    next.id = 5;
    assert_ptr_equal(sp_acquire_with(p, &next), items[2]);
    /* Then 5.0 (id 0). */
    next.id = 6;
    assert_ptr_equal(sp_acquire_with(p, &next), items[0]);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 7,
                 .released = 3, .reclaimed = 3);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

static void reclaim_priority_ties_take_the_oldest(void **state) {
    (void)state;
    test_alloc ta = {0};
    sp_pool *p = make_prio(&ta, 4);
    const prio_item in[4] = {{5.0, 0}, {1.0, 1}, {3.0, 2}, {1.0, 3}};
    prio_item *items[4];
    for (int i = 0; i < 4; i++) items[i] = sp_acquire_with(p, &in[i]);
    prio_item low = {1.0, 4};
    /* 1 and 3 tie at 1.0: 1 is older. */
    assert_ptr_equal(sp_acquire_with(p, &low), items[1]);
    /* items[1] is the newest now, still at 1.0: 3 is the older of the tie. */
    low.id = 5;
    assert_ptr_equal(sp_acquire_with(p, &low), items[3]);
    low.id = 6;
    assert_ptr_equal(sp_acquire_with(p, &low), items[1]);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 7,
                 .released = 3, .reclaimed = 3);
    /* All equal: plain oldest-first order, as without a priority hook. */
    sp_release_all(p);
    prio_item same = {0.0, 0};
    for (int i = 0; i < 4; i++) items[i] = sp_acquire_with(p, &same);
    for (int round = 0; round < 8; round++) assert_ptr_equal(sp_acquire_with(p, &same), items[round % 4]);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

/* An acquisition-order pool's lease-list links are slot indices scaled (times 8 today, times
   16 in byte offsets), so a link may equal its own slot's index: slot 8 followed by slot 1
   holds 8, slot 32 followed by slot 2 holds 32 in bytes. A hook running on such a member must
   leave its link alone (the memory-order mark is "next == own index", and a hook clears it
   while it runs): a priority callback that walks the pool sees every member, and nothing
   else. */
typedef struct walk_check {
    sp_pool *pool;
    void **members;
    size_t n;
    int bad;
} walk_check;

static double prio_walks_the_pool(const void *item, void *user) {
    (void)item;
    walk_check *w = user;
    size_t seen = 0;
    for (void *it = sp_first(w->pool); it && seen <= w->n; it = sp_next(w->pool, it), seen++) {
        bool member = false;
        for (size_t i = 0; i < w->n; i++) member = member || w->members[i] == it;
        if (!member) w->bad++;
    }
    if (seen != w->n) w->bad++;
    return 0.0;
}

static void priority_on_a_link_equal_to_its_index_keeps_the_lease_list(void **state) {
    (void)state;
    enum { N = 33 };
    test_alloc ta = {0};
    walk_check w = {0};
    void *items[N];
    sp_desc d = {.name = "links", .item_size = 16, .max = N, .overflow = SP_OVERFLOW_RECLAIM,
                 .order = SP_ORDER_ACQUISITION, .priority = prio_walks_the_pool, .user = &w,
                 .allocator = test_alloc_make(&ta)};
    sp_pool *p = sp_pool_create(&d);
    w.pool = p;
    w.members = items;
    w.n = N;
    /* Slots 0..8, then 1 again behind 8, then 9..32, then 2 again behind 32: the lease list is
       0, 3, ..., 8, 1, 9, ..., 32, 2. */
    for (uint32_t i = 0; i < N; i++) {
        items[i] = sp_acquire(p);
        assert_int_equal(sp_handle_of(p, items[i]).id & (SP__SLOT_LIMIT - 1u), i); /* slot i */
        if (i == 8 || i == 32) {
            void *again = items[i == 8 ? 1 : 2];
            assert_int_equal(sp_release(p, again), SP_OK);
            assert_ptr_equal(sp_acquire(p), again); /* the only free member, now the newest */
        }
    }
    /* The reclaim scores every member (ties: the oldest, items[0]). */
    assert_ptr_equal(sp_acquire(p), items[0]);
    assert_int_equal(w.bad, 0);
    assert_true(sp__pool_check(p));
    assert_ptr_equal(sp_first(p), items[3]);
    assert_int_equal(sp_release_all(p), N);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

static void grow_builds_past_max_counts_and_warns(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_GROW, 2);
    sp_acquire(p);
    sp_acquire(p);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2);
    assert_int_equal(env.log.warnings + env.log.errors, 0);
    void *c = sp_acquire(p);
    assert_non_null(c);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 3,
                 .grown_past_max = 1);
    assert_true(env.log.warnings >= 1);
    assert_int_equal(env.log.errors, 0);
    assert_string_equal(env.log.last_pool, "over");
    void *d = sp_acquire(p);
    assert_non_null(d);
    assert_ptr_not_equal(c, d);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 4,
                 .grown_past_max = 2);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.max, 2);
    /* A free member past max is reused without growing again. */
    sp_release(p, c);
    assert_ptr_equal(sp_acquire(p), c);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 5,
                 .released = 1, .grown_past_max = 2);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_force_on_a_drop_pool_reclaims_without_counting_a_drop(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_DROP, 2);
    int arg = 3;
    void *a = sp_acquire_force(p, &arg); /* not saturated: an ordinary acquisition */
    void *b = sp_acquire(p);
    assert_ptr_equal(env.hooks.last_arg, NULL);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2);
    test_hooks_trace_reset(&env.hooks);
    void *r = sp_acquire_force(p, &arg);
    assert_ptr_equal(r, a);
    assert_string_equal(env.hooks.trace, "RA");
    assert_ptr_equal(env.hooks.last_arg, &arg);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 3,
                 .released = 1, .reclaimed = 1);
    assert_ptr_equal(sp_acquire_force(p, NULL), b);
    /* Plain acquire on the same pool still drops. */
    assert_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 4,
                 .released = 2, .reclaimed = 2, .dropped = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_force_on_a_grow_pool_grows(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_GROW, 1);
    void *a = sp_acquire_force(p, NULL);
    void *b = sp_acquire_force(p, NULL);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2,
                 .grown_past_max = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_force_on_a_reclaim_pool_reclaims(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_RECLAIM, 1);
    void *a = sp_acquire_force(p, NULL);
    assert_ptr_equal(sp_acquire_force(p, NULL), a);
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 2,
                 .released = 1, .reclaimed = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void lowering_max_below_size_disturbs_no_leased_member(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_DROP, 0);
    void *items[5];
    sp_handle handles[5];
    for (int i = 0; i < 5; i++) {
        items[i] = sp_acquire(p);
        handles[i] = sp_handle_of(p, items[i]);
    }
    assert_int_equal(sp_set_max(p, 2), SP_OK);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.max, 2);
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 5);
    for (int i = 0; i < 5; i++) {
        assert_true(sp_is_leased(p, items[i]));
        assert_ptr_equal(sp_resolve(p, handles[i]), items[i]);
    }
    assert_int_equal(env.hooks.released + env.hooks.disposed, 0);
    /* Growth is blocked... */
    assert_null(sp_acquire(p));
    assert_int_equal(sp_prewarm(p, 3), 0);
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 5, .dropped = 1);
    /* ...but members already built are still handed out. */
    sp_release(p, items[3]);
    assert_ptr_equal(sp_acquire(p), items[3]);
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 6,
                 .released = 1, .dropped = 1);
    /* Raising it again lets the pool grow. */
    assert_int_equal(sp_set_max(p, 0), SP_OK);
    assert_non_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 6, .leased = 6, .peak_leased = 6, .created = 6, .acquired = 7,
                 .released = 1, .dropped = 1);
    assert_int_equal(sp_set_max(p, 7), SP_OK);
    assert_non_null(sp_acquire(p));
    assert_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 7, .leased = 7, .peak_leased = 7, .created = 7, .acquired = 8,
                 .released = 1, .dropped = 2);
    assert_int_equal(sp_set_max(NULL, 3), SP_ERR_INVALID);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void lowering_max_on_a_reclaim_pool_reclaims_the_oldest(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_RECLAIM, 0);
    void *a = sp_acquire(p);
    sp_acquire(p);
    sp_acquire(p);
    sp_set_max(p, 1);
    assert_ptr_equal(sp_acquire(p), a);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 4,
                 .released = 1, .reclaimed = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void lowering_max_on_a_grow_pool_counts_growth_past_it(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_GROW, 0);
    sp_acquire(p);
    sp_acquire(p);
    sp_set_max(p, 1);
    assert_int_equal(env.log.warnings, 0);
    assert_non_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 3,
                 .grown_past_max = 1);
    assert_true(env.log.warnings >= 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void prewarm_on_a_grow_pool_stops_at_max(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make(&env, SP_OVERFLOW_GROW, 3);
    assert_int_equal(sp_prewarm(p, 10), 3);
    EXPECT_STATS(p, .size = 3, .free = 3, .created = 3);
    assert_int_equal(env.log.warnings, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* chunk_items defaults to max when max is smaller: a pool capped at 10 big members does not
   reserve 256 of them. */
static void a_small_max_reserves_no_more_than_max(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "small", 1000);
    d.max = 10;
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 10; i++) assert_non_null(sp_acquire(p));
    assert_true(env.alloc.live_bytes <= 10 * 1000 + 4096);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_true(s.bytes <= 10 * 1000 + 4096);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(growth_stops_at_max_and_drop_returns_null_silently),
        cmocka_unit_test(reclaim_takes_the_oldest_member),
        cmocka_unit_test(reclaim_without_hooks_takes_the_oldest_and_ends_its_life),
        cmocka_unit_test(reclaim_skips_released_members_and_follows_reacquisition),
        cmocka_unit_test(reclaim_ends_the_victims_life),
        cmocka_unit_test(reclaim_takes_the_lowest_priority_member),
        cmocka_unit_test(reclaim_priority_ties_take_the_oldest),
        cmocka_unit_test(priority_on_a_link_equal_to_its_index_keeps_the_lease_list),
        cmocka_unit_test(grow_builds_past_max_counts_and_warns),
        cmocka_unit_test(acquire_force_on_a_drop_pool_reclaims_without_counting_a_drop),
        cmocka_unit_test(acquire_force_on_a_grow_pool_grows),
        cmocka_unit_test(acquire_force_on_a_reclaim_pool_reclaims),
        cmocka_unit_test(lowering_max_below_size_disturbs_no_leased_member),
        cmocka_unit_test(lowering_max_on_a_reclaim_pool_reclaims_the_oldest),
        cmocka_unit_test(lowering_max_on_a_grow_pool_counts_growth_past_it),
        cmocka_unit_test(prewarm_on_a_grow_pool_stops_at_max),
        cmocka_unit_test(a_small_max_reserves_no_more_than_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
