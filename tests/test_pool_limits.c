/* SPDX-License-Identifier: Zlib */
/* sp_pool at its limits: sp_buffer_size never wraps, every invalid descriptor is refused with a
   line naming the field at fault, resolve warnings are rate-limited per pool and kind, and a
   name that does not fit is cut with an info line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* 2^wide where size_t has 64 bits, 2^narrow where it has 32 (WebAssembly): the overflow cases
   below need products past SIZE_MAX, which smaller numbers reach with a 32-bit size_t. */
#define POW2(wide, narrow) ((size_t)1 << (SIZE_MAX > 0xFFFFFFFFu ? (wide) : (narrow)))

/* 2^40-byte items times 2^24 members is 2^64 bytes: no buffer can hold it, so 0, never a wrapped
   small number. Every answer that is not 0 is at least members * item_size. */
static void buffer_size_returns_0_instead_of_wrapping(void **state) {
    (void)state;
    sp_desc d = {.item_size = POW2(40, 20)};
    assert_int_equal(sp_buffer_size(&d, (size_t)1 << 24), 0);
    static const size_t items[] = {1, 8, 24, 4096, (size_t)1 << 20, POW2(32, 16), POW2(40, 20),
                                   POW2(44, 22) + 8, SIZE_MAX >> 9, SIZE_MAX >> 8};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        for (uint32_t shift = 0; shift <= 24; shift++) {
            sp_desc di = {.item_size = items[i]};
            size_t members = (size_t)1 << shift;
            size_t bytes = sp_buffer_size(&di, members);
            if (bytes == 0) continue;
            if (bytes / members < items[i]) fail_msg("item %zu x %zu members: %zu bytes wrapped", items[i], members, bytes);
        }
    }
    /* A size that fits is still exact enough to hold the pool. */
    sp_desc small = {.item_size = 24};
    assert_true(sp_buffer_size(&small, 100) >= 100 * 24);
}

/* Issue 9 item 13: `initial` above the slot limit is refused for that reason, and SIZE_MAX does not
   blame chunk_items, which was never set; every descriptor line names the field at fault (and
   item_size 0 says what to put there; issue 23, item 9). */
static void create_names_the_field_at_fault(void **state) {
    (void)state;
    test_log tl = {0};
    static unsigned char big[1 << 14];
    static unsigned char small[16];
    struct {
        sp_desc desc;
        const char *says;
    } cases[] = {
        {{.item_size = 0}, "item_size is 0 (set it to sizeof the member type)"},
        {{.item_size = 8, .threads = (sp_threads)7}, "unknown threads mode"},
        {{.item_size = 8, .item_align = 12}, "item_align is not a power of two"},
        {{.item_size = 8, .item_align = (size_t)1 << 17}, "item_align is larger than 65536"},
        {{.item_size = SIZE_MAX - 4}, "item_size is too large"},
        {{.item_size = 8, .overflow = (sp_overflow)9}, "unknown overflow policy"},
        {{.item_size = 8, .order = (sp_order)9}, "unknown order"},
        {{.item_size = 8, .max = ((size_t)1 << 24) + 1}, "max is larger than 16777216"},
        {{.item_size = 8, .initial = (size_t)1 << 25}, "initial is larger than 16777216 (a pool holds at most 2^24 slots)"},
        {{.item_size = 8, .initial = SIZE_MAX}, "initial is larger than 16777216"},
        {{.item_size = 8, .initial = 10, .max = 5}, "initial is larger than max"},
        {{.item_size = 8, .chunk_items = ((size_t)1 << 24) + 1}, "chunk_items is larger than 16777216"},
        {{.item_size = POW2(50, 23), .chunk_items = (size_t)1 << 20}, "chunk_items * item_size overflows"},
        {{.item_size = POW2(50, 23), .initial = (size_t)1 << 20}, "initial * item_size overflows"},
        {{.item_size = POW2(55, 23), .max = 200}, "max * item_size overflows"},
        {{.item_size = 8, .allocator = {.alloc = NULL, .free = test_alloc_make(NULL).free}},
         "allocator needs both alloc and free"},
        {{.item_size = 8, .buffer_size = 64}, "buffer_size without a buffer"},
        {{.item_size = 8, .buffer = big, .buffer_size = sizeof big, .overflow = SP_OVERFLOW_GROW},
         "GROW cannot grow a fixed buffer"},
        {{.item_size = 8, .buffer = small, .buffer_size = sizeof small}, "buffer is too small for one member"},
        {{.item_size = 8, .buffer = big, .buffer_size = sizeof big, .initial = 4000},
         "initial is larger than the buffer holds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cases[i].desc.name = "bad";
        cases[i].desc.logger = test_log_make(&tl);
        int before = tl.errors + tl.warnings;
        assert_null(sp_pool_create(&cases[i].desc));
        assert_int_equal(tl.errors + tl.warnings, before + 1);
        if (!test_log_last_has(&tl, cases[i].says) || !test_log_last_has(&tl, "sp_pool_create: invalid descriptor: "))
            fail_msg("case %zu: '%s' does not say '%s'", i, tl.last_message, cases[i].says);
        assert_string_equal(tl.last_pool, "bad");
    }
}

/* Decision 7: a stale handle is silent; another pool's handle and a forged one each warn the first
   time and then at every power of two, with the count: 200,000 forged lookups, 18 lines. */
static void resolve_warnings_are_rate_limited_per_pool_and_kind(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "targets", 16);
    sp_pool *p = sp_pool_create(&d);
    sp_pool *other = sp_pool_create(&d);
    sp_handle h, theirs;
    void *m = sp_acquire_handle(p, NULL, &h);
    assert_non_null(sp_acquire_handle(other, NULL, &theirs));
    sp_handle forged = {h.id + ((uint64_t)9 << TEST_LIFE_SHIFT)}; /* a life never handed out */
    for (int i = 0; i < 200000; i++) assert_null(sp_resolve(p, forged));
    assert_int_equal(env.log.warnings, 18);
    assert_true(test_log_last_has(&env.log, "forged? (131072 so far)"));
    for (int i = 0; i < 5; i++) assert_null(sp_resolve(p, theirs)); /* lines at 1, 2 and 4 */
    assert_int_equal(env.log.warnings, 18 + 3);
    assert_true(test_log_last_has(&env.log, "belongs to another pool (4 so far)"));
    /* The other pool keeps its own counts. */
    sp_handle forged_there = {theirs.id + ((uint64_t)9 << TEST_LIFE_SHIFT)};
    assert_null(sp_resolve(other, forged_there));
    assert_int_equal(env.log.warnings, 22);
    assert_true(test_log_last_has(&env.log, "(1 so far)"));
    /* Stale: silent, however often. */
    sp_release(p, m);
    for (int i = 0; i < 100000; i++) assert_null(sp_resolve(p, h));
    assert_int_equal(env.log.warnings, 22);
    sp_pool_destroy(other);
    sp_pool_destroy(p);
}

/* A name longer than 47 bytes is cut, with one info line saying so; a name that fits is kept
   whole, silently. */
static void a_long_name_is_cut_with_an_info_line(void **state) {
    (void)state;
    test_env env;
    const char *longname = "enemy_projectiles_of_the_third_boss_in_the_ice_world";
    sp_desc d = test_env_desc(&env, longname, 8);
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(strlen(sp_pool_name(p)), 47);
    assert_memory_equal(sp_pool_name(p), longname, 47);
    assert_int_equal(env.log.infos, 1);
    assert_true(test_log_last_has(&env.log, "name cut to 47 bytes (it had 52)"));
    sp_pool_destroy(p);
    d.name = "bullets";
    p = sp_pool_create(&d);
    assert_string_equal(sp_pool_name(p), "bullets");
    assert_int_equal(env.log.infos, 1);
    sp_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buffer_size_returns_0_instead_of_wrapping),
        cmocka_unit_test(create_names_the_field_at_fault),
        cmocka_unit_test(resolve_warnings_are_rate_limited_per_pool_and_kind),
        cmocka_unit_test(a_long_name_is_cut_with_an_info_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
