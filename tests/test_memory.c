/* SPDX-License-Identifier: Zlib */
/* Memory: what a big pool holds per member (at most the aligned item size + 16 bytes at 100k
   members in its reserved range, and the huge page its largest span commits ahead; twice the
   item size + 16 in the fallback's geometric ranges;
   SP_DEBUG builds add their documented per-slot debug record on top), that `bytes` does not under-report what the allocator gave out, and that a warm pool
   never calls the allocator while a churn stays within its size, under every overflow policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* SP__DBG_BYTES */
#include "source.h"      /* SP__HUGE_PAGE */

#include <stdlib.h>

/* A pool's shortcut into the map of owners (one leaf, for the chunk of its top span) answers
   exactly what the map answers, for every address: in its chunk (an owner or none), in another
   chunk with a leaf or without, beyond the map's 48 bits, and with no shortcut at all. */
static void the_chunk_shortcut_answers_as_the_map(void **state) {
    (void)state;
    if (UINTPTR_MAX <= UINT32_MAX) skip(); /* one chunk: nothing to take a shortcut past */
    enum { LEAF = 1 << SP__MAP_BITS };
    sp__owner_map *m = calloc(1, sizeof *m);
    sp__owner_slot *near_leaf = calloc(LEAF, sizeof *near_leaf), *far_leaf = calloc(LEAF, sizeof *far_leaf);
    assert_non_null(m);
    assert_non_null(near_leaf);
    assert_non_null(far_leaf);
    const uint64_t c = 0x7f12u, far = c + 1u, bare = c + 2u; /* chunks: ours, another, no leaf */
    atomic_store(&m->leaf[c], near_leaf);
    atomic_store(&m->leaf[far], far_leaf);
    int ours = 1, theirs = 2;
    atomic_store(&near_leaf[5], (void *)&ours);
    atomic_store(&far_leaf[5], (void *)&theirs);
    const uint64_t seg = (uint64_t)5 << SP__SEGMENT_SHIFT;
    const uint64_t probes[] = {
        (c << 32) | seg,        (c << 32) | seg | 0x1234u, (c << 32),           (c << 32) | (seg * 2u),
        (far << 32) | seg,      (far << 32),               (bare << 32) | seg,  (uint64_t)1 << 48,
        ((uint64_t)1 << 48) | (c << 32) | seg, UINT64_MAX,  0u,                  seg,
    };
    sp__owner_near near = sp__owner_near_of(m, (const void *)(uintptr_t)((c << 32) | seg));
    assert_true(near != 0u);
    assert_int_equal(sp__owner_near_of(m, (const void *)(uintptr_t)(bare << 32)), 0u); /* no leaf */
    assert_int_equal(sp__owner_near_of(NULL, (const void *)(uintptr_t)(c << 32)), 0u);
    assert_int_equal(sp__owner_near_of(m, (const void *)(uintptr_t)((uint64_t)1 << 48)), 0u);
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        const void *a = (const void *)(uintptr_t)probes[i];
        assert_ptr_equal(sp__owner_near_at(near, m, a), sp__owner_at(m, a));
        assert_ptr_equal(sp__owner_near_at(0u, m, a), sp__owner_at(m, a));
    }
    assert_ptr_equal(sp__owner_near_at(near, m, (const void *)(uintptr_t)((c << 32) | seg | 8u)), &ours);
    assert_ptr_equal(sp__owner_near_at(near, m, (const void *)(uintptr_t)((far << 32) | seg)), &theirs);
    free(far_leaf);
    free(near_leaf);
    free(m);
}

static void check_bytes_per_member(size_t item, size_t aligned, bool fallback) {
    enum { N = 100000 };
    test_alloc ta = {0};
    sp_desc d = {.name = "big", .item_size = item};
    if (fallback) d.allocator = test_alloc_make(&ta); /* alloc/free only: no reservation */
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, N), N);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.size, N);
    assert_true(s.bytes >= ta.live_bytes);
    if (fallback) assert_int_equal(s.bytes_reserved, 0);
    /* Without virtual memory (SP_NO_VIRTUAL_MEMORY) the default allocator's pool is a fallback too. */
    bool ranges = s.bytes_reserved == 0;
    /* A span of 4 MiB of members or more commits them up to a huge page boundary: at most one
       huge page (2 MiB) ahead. */
    size_t budget = (ranges ? 2 * aligned : aligned + SP__HUGE_PAGE / N) + 16 + SP__DBG_BYTES;
    if (s.bytes / N > budget) {
        print_error("item %zu: %zu bytes for %d members, %zu per member, budget %zu\n", item,
                    s.bytes, N, s.bytes / N, budget);
        fail();
    }
    /* Leasing them all costs nothing more. */
    for (int i = 0; i < N; i++) assert_non_null(sp_acquire(p));
    sp_stats leased;
    sp_stats_get(p, &leased);
    assert_int_equal(leased.bytes, s.bytes);
    assert_int_equal(leased.leased, N);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

static void bytes_per_member_at_100k_is_at_most_aligned_size_plus_16(void **state) {
    (void)state;
    for (int fallback = 0; fallback < 2; fallback++) {
        check_bytes_per_member(16, 16, fallback);
        check_bytes_per_member(64, 64, fallback);
        check_bytes_per_member(256, 256, fallback);
    }
}

/* Warm up to `warm` members, then `ops` random operations that never need more than the pool's
   size: not one allocator call. */
static void churn(sp_overflow overflow, size_t max, size_t warm, int ops, uint32_t seed) {
    test_env env;
    sp_desc d = test_env_desc(&env, "churn", 32);
    d.overflow = overflow;
    d.max = max;
    sp_pool *p = sp_pool_create(&d);
    void **live = calloc(warm, sizeof *live);
    assert_non_null(live);
    for (size_t i = 0; i < warm; i++) live[i] = sp_acquire(p);
    for (size_t i = 0; i < warm; i++) assert_int_equal(sp_release(p, live[i]), SP_OK);
    uint64_t allocs = env.alloc.allocs, frees = env.alloc.frees;
    size_t n = 0;
    uint32_t rng = seed;
    for (int op = 0; op < ops; op++) {
        uint32_t r = test_rand(&rng);
        if (n == 0 || (n < warm && (r & 1))) {
            live[n] = sp_acquire(p);
            assert_non_null(live[n]);
            n++;
        } else if ((r & 0xFF) == 0x80 && overflow == SP_OVERFLOW_RECLAIM && n == warm) {
            /* Saturated: a reclaim, which must not allocate either. */
            void *r2 = sp_acquire(p);
            assert_non_null(r2);
        } else {
            size_t k = (r >> 8) % n;
            if ((r & 0x3FF) == 0x3FF) {
                sp_handle h = sp_handle_of(p, live[k]);
                assert_ptr_equal(sp_resolve(p, h), live[k]);
            }
            /* A reclaim may have ended this member's life: release only what is leased. */
            if (sp_is_leased(p, live[k])) assert_int_equal(sp_release(p, live[k]), SP_OK);
            live[k] = live[--n];
        }
    }
    assert_int_equal(env.alloc.allocs, allocs);
    assert_int_equal(env.alloc.frees, frees);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.size, warm);
    assert_int_equal(s.created, warm);
    free(live);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void warm_pool_never_calls_the_allocator_during_churn(void **state) {
    (void)state;
    churn(SP_OVERFLOW_DROP, 0, 1000, 1000000, 7);
    /* The other policies take shorter runs: the suite stays fast under ASan. */
    churn(SP_OVERFLOW_DROP, 1000, 1000, 300000, 8);
    churn(SP_OVERFLOW_RECLAIM, 700, 700, 300000, 9);
    churn(SP_OVERFLOW_GROW, 300, 900, 300000, 10); /* warmed past its soft max */
}

/* Small pools made one after another start their spans at different cache lines of their
   blocks (span colours: every block starts at a 64 KiB boundary), so that a thread going from
   pool to pool does not find all their first members in one cache set. The first member each
   pool hands out has the same slot in each, so its address within a page says its colour. */
static void small_pools_made_in_turn_start_on_different_cache_lines(void **state) {
    (void)state;
    enum { POOLS = 16 };
    for (int bounded = 0; bounded < 2; bounded++) {
        sp_pool *pools[POOLS];
        void *first[POOLS];
        bool line_used[64] = {false};
        int lines = 0;
        size_t reserved = 0;
        for (int i = 0; i < POOLS; i++) {
            pools[i] = sp_pool_create(&(sp_desc){.item_size = 64, .max = bounded ? 24u : 0u});
            assert_non_null(pools[i]);
            first[i] = sp_acquire(pools[i]);
            uintptr_t a = (uintptr_t)first[i];
            assert_true(a != 0 && a % 64u == 0);
            sp_stats s;
            sp_stats_get(pools[i], &s);
            reserved += s.bytes_reserved;
            size_t line = (size_t)(a % 4096u) / 64u;
            lines += !line_used[line];
            line_used[line] = true;
        }
        /* Without virtual memory (SP_NO_VIRTUAL_MEMORY) spans are the allocator's: not coloured. */
        if (reserved) assert_true(lines >= POOLS / 2);
        for (int i = 0; i < POOLS; i++) {
            assert_int_equal(sp_release(pools[i], first[i]), SP_OK);
            sp_pool_destroy(pools[i]);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytes_per_member_at_100k_is_at_most_aligned_size_plus_16),
        cmocka_unit_test(warm_pool_never_calls_the_allocator_during_churn),
        cmocka_unit_test(small_pools_made_in_turn_start_on_different_cache_lines),
        cmocka_unit_test(the_chunk_shortcut_answers_as_the_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
