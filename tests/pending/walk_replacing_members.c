/* SPDX-License-Identifier: Zlib */
/* PENDING (the fix is in src/pool.c, being rewritten by `core`): in SP_ORDER_ACQUISITION, a walk
   whose callback (or loop body) releases its member and acquires a replacement -- a particle
   that dies and spawns one, the ordinary game pattern -- never ends: every replacement is
   appended behind the walk's place, so the walk visits it, which replaces it again, forever
   (memory order ends: the replacement takes the freed slot, behind the walk). sp_each and the
   sp_iter cursor both hang; issue 9 asks that every operation end.
   Proposed rule (as sp_release_all's): in acquisition order a walk visits only the members
   leased when it started: it stops at the first member whose acquisition stamp is newer than
   the newest one at its start. Move this file to tests/ with the fix. */
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
    assert_int_equal(sp_each(walked, die_and_spawn, NULL), LEASED); /* today: 1000 */
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
    assert_int_equal(steps, LEASED); /* today: 1000 */
    sp_release_all(p);
    sp_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_replacing_every_member_ends_in_acquisition_order),
        cmocka_unit_test(iter_replacing_every_member_ends_in_acquisition_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
