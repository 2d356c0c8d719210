/* SPDX-License-Identifier: Zlib */
/* A walk (sp_each, sp_leased_each, the sp_iter cursor) visits only the members leased when it
   began, so that it always ends, whatever its callback or loop body acquires. In acquisition
   order a callback that releases its member and acquires a replacement -- a particle that dies
   and spawns one -- used to run forever: each replacement was appended behind the walk's place
   and visited. In memory order a callback that only acquires, under GROW, grew the pool on every
   step until memory ran out: members built during the walk are not visited now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

#define LEASED 5
#define CAP 1000 /* far more steps than members: the walk did not end */

static sp_pool *walked;
static size_t calls;

static bool die_and_spawn(void *item, void *user) {
    (void)user;
    assert_int_equal(sp_release(walked, item), SP_OK);
    assert_non_null(sp_acquire(walked));
    return ++calls < CAP;
}

static void each_replacing_every_member_ends_in_acquisition_order(void **state) {
    (void)state;
    walked = sp_pool_create(&(sp_desc){.name = "particles", .item_size = 16,
                                       .order = SP_ORDER_ACQUISITION});
    assert_non_null(walked);
    for (int i = 0; i < LEASED; i++) assert_non_null(sp_acquire(walked));
    calls = 0;
    assert_int_equal(sp_each(walked, die_and_spawn, NULL), LEASED); /* was 1000: the walk never ended */
    assert_true(sp__pool_check(walked));
    sp_release_all(walked);
    sp_pool_destroy(walked);
}

static void iter_replacing_every_member_ends_in_acquisition_order(void **state) {
    (void)state;
    sp_pool *p = sp_pool_create(&(sp_desc){.name = "particles", .item_size = 16,
                                           .order = SP_ORDER_ACQUISITION});
    assert_non_null(p);
    for (int i = 0; i < LEASED; i++) assert_non_null(sp_acquire(p));
    size_t steps = 0;
    for (sp_iter it = sp_iter_first(p); it.item && steps < CAP; sp_iter_next(p, &it), steps++) {
        assert_int_equal(sp_release(p, it.item), SP_OK);
        assert_non_null(sp_acquire(p));
    }
    assert_int_equal(steps, LEASED); /* was 1000: the walk never ended */
    sp_release_all(p);
    sp_pool_destroy(p);
}

static size_t acquisitions;
static test_log quiet;

static bool spawn_one(void *item, void *user) {
    (void)item;
    (void)user;
    if (sp_acquire(walked)) acquisitions++;
    return ++calls < CAP;
}

/* Each visit acquires one more member; no member is free, so each builds one (GROW: past max). */
static void each_acquiring_under_grow_ends_in_both_orders(void **state) {
    (void)state;
    for (int ordered = 0; ordered < 2; ordered++) {
        walked = sp_pool_create(&(sp_desc){.name = "spawners", .item_size = 16, .chunk_items = 4,
                                           .max = LEASED, .overflow = SP_OVERFLOW_GROW,
                                           .order = ordered ? SP_ORDER_ACQUISITION : SP_ORDER_MEMORY,
                                           .logger = test_log_make(&quiet)});
        assert_non_null(walked);
        for (int i = 0; i < LEASED; i++) assert_non_null(sp_acquire(walked));
        calls = acquisitions = 0;
        assert_int_equal(sp_each(walked, spawn_one, NULL), LEASED); /* was 1000 */
        assert_int_equal(acquisitions, LEASED);
        assert_true(sp__pool_check(walked));
        size_t steps = 0;
        for (sp_iter it = sp_iter_first(walked); it.item && steps < CAP; sp_iter_next(walked, &it), steps++)
            assert_non_null(sp_acquire(walked));
        assert_int_equal(steps, 2 * LEASED);
        assert_int_equal(sp_release_all(walked), 4 * LEASED);
        sp_pool_destroy(walked);
    }
}

/* Memory order: the replacement takes the slot just freed, behind the walk (as before). */
static void each_replacing_every_member_ends_in_memory_order(void **state) {
    (void)state;
    walked = sp_pool_create(&(sp_desc){.name = "particles", .item_size = 16, .order = SP_ORDER_MEMORY});
    assert_non_null(walked);
    for (int i = 0; i < LEASED; i++) assert_non_null(sp_acquire(walked));
    calls = 0;
    assert_int_equal(sp_each(walked, die_and_spawn, NULL), LEASED);
    assert_true(sp__pool_check(walked));
    sp_release_all(walked);
    sp_pool_destroy(walked);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_replacing_every_member_ends_in_acquisition_order),
        cmocka_unit_test(iter_replacing_every_member_ends_in_acquisition_order),
        cmocka_unit_test(each_acquiring_under_grow_ends_in_both_orders),
        cmocka_unit_test(each_replacing_every_member_ends_in_memory_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
