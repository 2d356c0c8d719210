/* SPDX-License-Identifier: Zlib */
/* A reserved range that sp_trim shrank can grow back over slots that retired meanwhile (their
   lives used up): the growth gains no member to build there, and must look further (the next
   committed pages, or a range beyond the reservation) instead of building in no slot at all. It
   read the slot of index SP__NIL (a segfault), found by the fuzzer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

static void growth_over_retired_slots_builds_beyond_them(void **state) {
    (void)state;
    test_log tl;
    sp_pool *p = sp_pool_create(&(sp_desc){.name = "retired", .item_size = 32, .max = 1,
                                           .logger = test_log_make(&tl)});
    assert_non_null(p);
    void *a = sp_acquire(p);
    assert_non_null(a);
    uint64_t a_slot = sp_handle_of(p, a).id & (SP__SLOT_LIMIT - 1u);
    sp__debug_set_life(p, a, SP__LIFE_MAX); /* its last life: the release retires the slot */
    assert_int_equal(sp_release(p, a), SP_OK);
    sp_trim(p, 0); /* nothing built: the range's pages go back */
    void *b = sp_acquire(p);
    assert_non_null(b);
    /* Another slot (a fallback range freed by the trim may come back at the same address). */
    assert_true((sp_handle_of(p, b).id & (SP__SLOT_LIMIT - 1u)) != a_slot);
    assert_true(sp__pool_check(p));
    sp_stats st;
    sp_stats_get(p, &st);
    assert_int_equal(st.size, 1);
    assert_int_equal(st.leased, 1);
    sp_release_all(p);
    sp_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(growth_over_retired_slots_builds_beyond_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
