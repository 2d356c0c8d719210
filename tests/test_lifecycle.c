/* SPDX-License-Identifier: Zlib */
/* Pool lifecycle: what creation, prewarming, growth and destruction build and destroy, the
   contents a member keeps between lives, alignment, names, and the small pure helpers. Hook
   ordering and re-entrancy live in test_hooks.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void create_builds_initial_members_running_create_once_each(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 32);
    d.initial = 5;
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    EXPECT_STATS(p, .size = 5, .free = 5, .created = 5);
    assert_int_equal(env.hooks.created, 5);
    assert_int_equal(env.hooks.acquired, 0);
    assert_int_equal(env.hooks.released, 0);
    assert_int_equal(env.hooks.disposed, 0);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    sp_pool_destroy(p);
    assert_int_equal(env.hooks.disposed, 5);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_builds_a_member_only_when_none_is_free(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 32);
    d.initial = 2;
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    EXPECT_STATS(p, .size = 2, .leased = 1, .free = 1, .peak_leased = 1, .created = 2, .acquired = 1);
    void *b = sp_acquire(p);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2);
    assert_int_equal(env.hooks.created, 2);
    void *c = sp_acquire(p);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_ptr_not_equal(a, b);
    assert_ptr_not_equal(b, c);
    assert_ptr_not_equal(a, c);
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 3);
    assert_int_equal(env.hooks.created, 3);
    assert_ptr_equal(env.hooks.last_created, c);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_prefers_a_free_member_to_building_one(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 8);
    sp_pool *p = sp_pool_create(&d);
    EXPECT_STATS(p, .size = 0);
    void *a = sp_acquire(p);
    assert_int_equal(sp_release(p, a), SP_OK);
    EXPECT_STATS(p, .size = 1, .free = 1, .peak_leased = 1, .created = 1, .acquired = 1, .released = 1);
    void *b = sp_acquire(p);
    assert_ptr_equal(a, b);
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 2, .released = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void prewarm_builds_free_members_without_acquiring(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 24);
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, 4), 4);
    EXPECT_STATS(p, .size = 4, .free = 4, .created = 4);
    assert_int_equal(env.hooks.created, 4);
    assert_int_equal(env.hooks.acquired, 0);
    assert_int_equal(sp_prewarm(p, 3), 3);
    EXPECT_STATS(p, .size = 7, .free = 7, .created = 7);
    /* The prewarmed members serve the next acquisitions: nothing more is built. */
    for (int i = 0; i < 7; i++) assert_non_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 7, .leased = 7, .peak_leased = 7, .created = 7, .acquired = 7);
    assert_int_equal(sp_prewarm(p, 0), 0);
    EXPECT_STATS(p, .size = 7, .leased = 7, .peak_leased = 7, .created = 7, .acquired = 7);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void prewarm_stops_at_max(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 24);
    d.max = 3;
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, 10), 3);
    EXPECT_STATS(p, .size = 3, .free = 3, .created = 3);
    assert_int_equal(sp_prewarm(p, 1), 0);
    EXPECT_STATS(p, .size = 3, .free = 3, .created = 3);
    assert_int_equal(env.hooks.created, 3);
    sp_pool_destroy(p);

    /* Leased members count against max too. */
    d = test_env_desc(&env, "life", 24);
    d.max = 3;
    p = sp_pool_create(&d);
    assert_non_null(sp_acquire(p));
    assert_non_null(sp_acquire(p));
    assert_int_equal(sp_prewarm(p, 5), 1);
    EXPECT_STATS(p, .size = 3, .leased = 2, .free = 1, .peak_leased = 2, .created = 3, .acquired = 2);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void memory_is_reserved_a_chunk_at_a_time_but_members_built_one_by_one(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 40);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    uint64_t allocs_after_first = env.alloc.allocs;
    assert_true(allocs_after_first >= 1);
    assert_non_null(sp_acquire(p));
    assert_non_null(sp_acquire(p));
    assert_non_null(sp_acquire(p));
    /* Members 2..4 fit in the first chunk. */
    assert_int_equal(env.alloc.allocs, allocs_after_first);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 4);
    assert_non_null(sp_acquire(p));
    assert_true(env.alloc.allocs > allocs_after_first);
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 5);
    assert_int_equal(env.hooks.created, 5);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void new_members_are_zeroed_before_create(void **state) {
    (void)state;
    enum { ITEM = 100 };
    test_env env;
    sp_desc d = test_env_desc(&env, "life", ITEM);
    d.initial = 3;
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, 3), 3);
    void *items[10];
    for (int i = 0; i < 10; i++) {
        items[i] = sp_acquire(p);
        assert_non_null(items[i]);
        memset(items[i], 0xFF, ITEM);
    }
    assert_int_equal(env.hooks.created, 10);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    /* Dirty members die (trim and clear) and new ones are built where they were. */
    for (int i = 0; i < 5; i++) assert_int_equal(sp_release(p, items[i]), SP_OK);
    assert_int_equal(sp_trim(p, 0), 5);
    for (int i = 0; i < 5; i++) memset(sp_acquire(p), 0xFF, ITEM);
    assert_int_equal(sp_clear(p), 10);
    for (int i = 0; i < 10; i++) assert_non_null(sp_acquire(p));
    assert_int_equal(env.hooks.created, 25);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void recycled_member_keeps_its_contents(void **state) {
    (void)state;
    enum { ITEM = 48 };
    test_env env;
    sp_desc d = test_env_desc(&env, "life", ITEM);
    d.max = 1;
    sp_pool *p = sp_pool_create(&d);
    unsigned char *a = sp_acquire(p);
    assert_non_null(a);
    for (int i = 0; i < ITEM; i++) a[i] = (unsigned char)(i * 7 + 1);
    assert_int_equal(sp_release(p, a), SP_OK);
    unsigned char *b = sp_acquire(p);
    assert_ptr_equal(a, b);
    for (int i = 0; i < ITEM; i++) assert_int_equal(b[i], (unsigned char)(i * 7 + 1));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 2, .released = 1);
    assert_int_equal(env.hooks.created, 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void destroy_disposes_every_member_and_returns_all_memory(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 16);
    d.initial = 3;
    d.chunk_items = 2;
    sp_pool *p = sp_pool_create(&d);
    void *items[5];
    for (int i = 0; i < 5; i++) items[i] = sp_acquire(p);
    assert_int_equal(sp_release(p, items[0]), SP_OK);
    EXPECT_STATS(p, .size = 5, .leased = 4, .free = 1, .peak_leased = 5, .created = 5, .acquired = 5,
                 .released = 1);
    sp_pool_destroy(p);
    assert_int_equal(env.hooks.disposed, 5);
    assert_int_equal(env.hooks.released, 1); /* destroy runs dispose, not on_release */
    EXPECT_NO_LEAK(&env.alloc);
    assert_int_equal(env.alloc.frees, env.alloc.allocs);
}

static void destroy_with_leased_members_logs_how_many_leaked(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "leaky", 16);
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 4; i++) assert_non_null(sp_acquire(p));
    assert_int_equal(sp_release(p, sp_first(p)), SP_OK);
    assert_int_equal(env.log.errors + env.log.warnings, 0);
    sp_pool_destroy(p);
    /* One line, or (SP_DEBUG) one per acquisition site: here a single site, for all three. */
    assert_true(env.log.warnings >= 1 && env.log.warnings <= 2);
    assert_int_equal(env.log.errors, 0);
    assert_true(test_log_last_has(&env.log, "3"));
    assert_string_equal(env.log.last_pool, "leaky");
    EXPECT_NO_LEAK(&env.alloc);

    /* Nothing leased, nothing to say. */
    d = test_env_desc(&env, "tidy", 16);
    p = sp_pool_create(&d);
    sp_release(p, sp_acquire(p));
    sp_pool_destroy(p);
    assert_int_equal(env.log.errors + env.log.warnings, 0);
    EXPECT_NO_LEAK(&env.alloc);
}

static void destroy_of_null_is_a_noop(void **state) {
    (void)state;
    sp_pool_destroy(NULL);
}

static void release_all_releases_every_member_and_counts_them(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 16);
    sp_pool *p = sp_pool_create(&d);
    void *items[6];
    for (int i = 0; i < 6; i++) items[i] = sp_acquire(p);
    assert_int_equal(sp_release(p, items[2]), SP_OK);
    assert_int_equal(sp_release_all(p), 5);
    EXPECT_STATS(p, .size = 6, .free = 6, .peak_leased = 6, .created = 6, .acquired = 6, .released = 6);
    assert_int_equal(env.hooks.released, 6);
    for (int i = 0; i < 6; i++) assert_false(sp_is_leased(p, items[i]));
    assert_int_equal(sp_release_all(p), 0);
    EXPECT_STATS(p, .size = 6, .free = 6, .peak_leased = 6, .created = 6, .acquired = 6, .released = 6);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void peak_leased_remembers_the_most_leased_at_once(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "life", 16);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p), *b = sp_acquire(p), *c = sp_acquire(p);
    sp_release(p, a);
    sp_release(p, b);
    EXPECT_STATS(p, .size = 3, .leased = 1, .free = 2, .peak_leased = 3, .created = 3, .acquired = 3,
                 .released = 2);
    a = sp_acquire(p);
    EXPECT_STATS(p, .size = 3, .leased = 2, .free = 1, .peak_leased = 3, .created = 3, .acquired = 4,
                 .released = 2);
    for (int i = 0; i < 3; i++) assert_non_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 7, .released = 2);
    (void)c;
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* The pool keeps peak_leased and headroom = peak_leased - leased (an acquisition at headroom 0
   raises the peak, any other lowers headroom): leased walked up and down through free members
   (the fast paths, no growth) in both orders, then reclaims (leased stays), a clear (leased
   lives disposed) and acquisitions after it, against counts kept here. */
static void peak_leased_is_exact_through_the_fast_paths(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "peak", 16);
        d.order = (sp_order)order;
        d.initial = 8;
        d.max = 8;
        d.overflow = SP_OVERFLOW_RECLAIM;
        sp_pool *p = sp_pool_create(&d);
        void *m[8];
        size_t leased = 0, peak = 0;
        uint64_t acquired = 0;
        static const size_t targets[] = {3, 1, 3, 4, 0, 4, 5, 2, 8, 7, 8};
        sp_stats st;
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
            while (leased < targets[t]) {
                m[leased++] = sp_acquire(p);
                assert_non_null(m[leased - 1]);
                acquired++;
                if (leased > peak) peak = leased;
            }
            while (leased > targets[t]) assert_int_equal(sp_release(p, m[--leased]), SP_OK);
            sp_stats_get(p, &st);
            assert_int_equal(st.leased, leased);
            assert_int_equal(st.peak_leased, peak);
            assert_int_equal(st.acquired, acquired);
            assert_int_equal(st.released, acquired - leased);
            assert_int_equal(st.size, 8);
        }
        for (int i = 0; i < 3; i++) assert_non_null(sp_acquire(p)); /* saturated: reclaims */
        sp_stats_get(p, &st);
        assert_int_equal(st.leased, 8);
        assert_int_equal(st.peak_leased, 8);
        assert_int_equal(st.reclaimed, 3);
        assert_int_equal(st.acquired, acquired + 3);
        sp_clear(p);
        sp_stats_get(p, &st);
        assert_int_equal(st.leased, 0);
        assert_int_equal(st.peak_leased, 8);
        for (int i = 0; i < 2; i++) assert_non_null(sp_acquire(p));
        sp_stats_get(p, &st);
        assert_int_equal(st.leased, 2);
        assert_int_equal(st.peak_leased, 8);
        sp_release_all(p);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

static int cmp_ptr(const void *x, const void *y) {
    uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
    return a < b ? -1 : a > b;
}

/* Members of every size land on their alignment and never overlap, across chunks. */
static void members_are_aligned_and_never_overlap(void **state) {
    (void)state;
    static const struct {
        size_t size, align, expect_align;
    } cases[] = {
        {1, 0, 1}, {12, 0, 4}, {24, 0, 8}, {16, 0, 16}, {48, 0, 16}, {40, 0, 8},
        {8, 64, 64}, {3, 2, 2}, {100, 32, 32}, {7, 1, 1}, {100, 256, 256}, {24, 4096, 4096},
    };
    enum { N = 300 };
    void *items[N];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "align", cases[c].size);
        d.item_align = cases[c].align;
        d.chunk_items = 64;
        sp_pool *p = sp_pool_create(&d);
        assert_non_null(p);
        for (int i = 0; i < N; i++) {
            items[i] = sp_acquire(p);
            assert_non_null(items[i]);
            assert_int_equal((uintptr_t)items[i] % cases[c].expect_align, 0);
            memset(items[i], 0x77, cases[c].size);
        }
        qsort(items, N, sizeof items[0], cmp_ptr);
        for (int i = 1; i < N; i++)
            assert_true((uintptr_t)items[i] - (uintptr_t)items[i - 1] >= cases[c].size);
        EXPECT_STATS(p, .size = N, .leased = N, .peak_leased = N, .created = N, .acquired = N);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

static void pool_name_is_copied_and_never_null(void **state) {
    (void)state;
    test_env env;
    char name[16] = "sparks";
    sp_desc d = test_env_desc(&env, name, 8);
    sp_pool *p = sp_pool_create(&d);
    strcpy(name, "XXXXXX");
    assert_string_equal(sp_pool_name(p), "sparks");
    sp_pool_destroy(p);

    d = test_env_desc(&env, NULL, 8);
    p = sp_pool_create(&d);
    assert_non_null(sp_pool_name(p));
    assert_string_equal(sp_pool_name(p), "");
    sp_pool_destroy(p);
    assert_null(sp_pool_name(NULL));
    EXPECT_NO_LEAK(&env.alloc);
}

static void desc_is_copied_so_later_changes_do_not_matter(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "copy", 8);
    d.max = 2;
    sp_pool *p = sp_pool_create(&d);
    d.max = 100;
    d.on_acquire = NULL;
    d.overflow = SP_OVERFLOW_GROW;
    assert_non_null(sp_acquire(p));
    assert_non_null(sp_acquire(p));
    assert_null(sp_acquire(p));
    assert_int_equal(env.hooks.acquired, 2);
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2, .dropped = 1);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.max, 2);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void stats_of_a_null_pool_are_zero(void **state) {
    (void)state;
    sp_stats s;
    memset(&s, 0xFF, sizeof s);
    sp_stats_get(NULL, &s);
    sp_stats zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&s, &zero, sizeof s);
}

static void bytes_counts_what_the_pool_holds(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "bytes", 64);
    d.chunk_items = 16;
    sp_pool *p = sp_pool_create(&d);
    sp_stats s;
    void *m[100];
    for (int i = 0; i < 100; i++) assert_non_null(m[i] = sp_acquire(p));
    sp_stats_get(p, &s);
    /* Every byte the allocator handed out is the pool's, no more, no less; members alone take
       6400. The same after trim, clear and regrowth. */
    assert_int_equal(s.bytes, env.alloc.live_bytes);
    assert_true(s.bytes >= 100 * 64);
    for (int i = 0; i < 100; i += 2) sp_release(p, m[i]);
    sp_trim(p, 0);
    sp_stats_get(p, &s);
    assert_int_equal(s.bytes, env.alloc.live_bytes);
    sp_clear(p);
    sp_stats_get(p, &s);
    assert_int_equal(s.bytes, env.alloc.live_bytes);
    for (int i = 0; i < 300; i++) assert_non_null(sp_acquire(p));
    sp_stats_get(p, &s);
    assert_int_equal(s.bytes, env.alloc.live_bytes);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void result_strings_are_distinct_and_unknown_values_named(void **state) {
    (void)state;
    const sp_result all[] = {SP_OK, SP_ERR_NOT_LEASED, SP_ERR_FOREIGN, SP_ERR_INVALID, SP_ERR_NOMEM};
    for (size_t i = 0; i < 5; i++) {
        const char *si = sp_result_str(all[i]);
        assert_non_null(si);
        assert_true(strlen(si) > 0);
        assert_string_not_equal(si, "unknown result");
        for (size_t j = 0; j < i; j++) assert_string_not_equal(si, sp_result_str(all[j]));
    }
    assert_string_equal(sp_result_str(SP_RESULT_COUNT), "unknown result");
    assert_string_equal(sp_result_str((sp_result)1000), "unknown result");
    assert_string_equal(sp_result_str((sp_result)-1), "unknown result");
    assert_int_equal(SP_OK, 0);
}

/* With chunk_items left at its default, `initial` members come in one chunk: contiguous, and
   the next chunk only when the pool grows past them. */
static void initial_members_share_one_chunk_by_default(void **state) {
    (void)state;
    sp_desc d = {.item_size = 48, .initial = 1000};
    sp_pool *p = sp_pool_create(&d);
    char *lo = NULL, *hi = NULL;
    void *items[1000];
    for (int i = 0; i < 1000; i++) {
        char *it = (char *)(items[i] = sp_acquire(p));
        if (!lo || it < lo) lo = it;
        if (!hi || it > hi) hi = it;
    }
    assert_int_equal((size_t)(hi - lo), 999u * 48u);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.created, 1000);
    for (int i = 0; i < 1000; i++) sp_release(p, items[i]);
    sp_pool_destroy(p);

    sp_desc capped = {.item_size = 48, .initial = 1000, .max = 600};
    assert_null(sp_pool_create(&capped)); /* initial above max stays invalid */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_builds_initial_members_running_create_once_each),
        cmocka_unit_test(peak_leased_is_exact_through_the_fast_paths),
        cmocka_unit_test(acquire_builds_a_member_only_when_none_is_free),
        cmocka_unit_test(acquire_prefers_a_free_member_to_building_one),
        cmocka_unit_test(prewarm_builds_free_members_without_acquiring),
        cmocka_unit_test(prewarm_stops_at_max),
        cmocka_unit_test(memory_is_reserved_a_chunk_at_a_time_but_members_built_one_by_one),
        cmocka_unit_test(new_members_are_zeroed_before_create),
        cmocka_unit_test(recycled_member_keeps_its_contents),
        cmocka_unit_test(destroy_disposes_every_member_and_returns_all_memory),
        cmocka_unit_test(destroy_with_leased_members_logs_how_many_leaked),
        cmocka_unit_test(destroy_of_null_is_a_noop),
        cmocka_unit_test(release_all_releases_every_member_and_counts_them),
        cmocka_unit_test(peak_leased_remembers_the_most_leased_at_once),
        cmocka_unit_test(members_are_aligned_and_never_overlap),
        cmocka_unit_test(pool_name_is_copied_and_never_null),
        cmocka_unit_test(desc_is_copied_so_later_changes_do_not_matter),
        cmocka_unit_test(stats_of_a_null_pool_are_zero),
        cmocka_unit_test(bytes_counts_what_the_pool_holds),
        cmocka_unit_test(result_strings_are_distinct_and_unknown_values_named),
        cmocka_unit_test(initial_members_share_one_chunk_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
