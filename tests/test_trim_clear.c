/* SPDX-License-Identifier: Zlib */
/* sp_trim and sp_clear: which members they destroy, which hooks run, that emptied chunks go back
   to the allocator, and that lives (generations) keep counting across them, so a handle taken
   before a trim or clear never resolves after, even to a member built in the same memory. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* sp__debug_set_life, SP__LIFE_MAX */

#include <stdlib.h>
#include <string.h>

static void trim_disposes_free_members_down_to_keep_free(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "trim", 32);
    sp_pool *p = sp_pool_create(&d);
    void *m[10];
    for (int i = 0; i < 10; i++) m[i] = sp_acquire(p);
    for (int i = 0; i < 6; i++) sp_release(p, m[i]);
    EXPECT_STATS(p, .size = 10, .leased = 4, .free = 6, .peak_leased = 10, .created = 10,
                 .acquired = 10, .released = 6);
    assert_int_equal(sp_trim(p, 2), 4);
    EXPECT_STATS(p, .size = 6, .leased = 4, .free = 2, .peak_leased = 10, .created = 10,
                 .disposed = 4, .acquired = 10, .released = 6);
    assert_int_equal(env.hooks.disposed, 4);
    assert_int_equal(env.hooks.released, 6);
    assert_int_equal(sp_trim(p, 5), 0);
    assert_int_equal(sp_trim(p, 2), 0);
    assert_int_equal(sp_trim(p, 0), 2);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 10, .created = 10, .disposed = 6,
                 .acquired = 10, .released = 6);
    assert_int_equal(sp_trim(p, 0), 0);
    sp_pool_destroy(p);
    assert_int_equal(env.hooks.disposed, 10);
    EXPECT_NO_LEAK(&env.alloc);
}

static void trim_never_touches_leased_members(void **state) {
    (void)state;
    enum { ITEM = 24 };
    test_env env;
    sp_desc d = test_env_desc(&env, "trim", ITEM);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    unsigned char *m[16];
    sp_handle h[16];
    for (int i = 0; i < 16; i++) {
        m[i] = sp_acquire(p);
        memset(m[i], i + 1, ITEM);
        h[i] = sp_handle_of(p, m[i]);
    }
    for (int i = 0; i < 16; i += 3) sp_release(p, m[i]); /* 0 3 6 9 12 15 */
    assert_int_equal(sp_trim(p, 0), 6);
    for (int i = 0; i < 16; i++) {
        if (i % 3 == 0) continue;
        assert_true(sp_is_leased(p, m[i]));
        assert_ptr_equal(sp_resolve(p, h[i]), m[i]);
        for (int b = 0; b < ITEM; b++) assert_int_equal(m[i][b], i + 1);
    }
    void *order[10];
    int n = 0;
    for (void *it = sp_first(p); it; it = sp_next(p, it)) order[n++] = it;
    assert_int_equal(n, 10);
    for (int i = 0, k = 0; i < 16; i++)
        if (i % 3) assert_ptr_equal(order[k++], m[i]);
    EXPECT_STATS(p, .size = 10, .leased = 10, .peak_leased = 16, .created = 16, .disposed = 6,
                 .acquired = 16, .released = 6);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* Members are built in slot order and trim takes the highest slots first (header contract), so
   with the first member leased, the ranges after the first empty out. A custom allocator has no
   virtual memory: the fallback's ranges of 4, 4 and 8 members (slots 0-3, 4-7, 8-15: each as
   large as all before it). */
static void trim_returns_emptied_chunks_to_the_allocator(void **state) {
    (void)state;
    enum { ITEM = 64, CHUNK = 4 };
    test_env env;
    sp_desc d = test_env_desc(&env, "trim", ITEM);
    d.chunk_items = CHUNK;
    sp_pool *p = sp_pool_create(&d);
    void *m[16];
    for (int i = 0; i < 16; i++) m[i] = sp_acquire(p);
    for (int i = 1; i < 16; i++) sp_release(p, m[i]);
    size_t blocks = env.alloc.live_blocks, bytes = env.alloc.live_bytes;
    sp_stats before;
    sp_stats_get(p, &before);
    /* keep 4 free: slots 5..15 go, so range 2 (slots 8..15) is empty. */
    assert_int_equal(sp_trim(p, 4), 11);
    assert_true(env.alloc.live_blocks + 1 <= blocks);
    assert_true(env.alloc.live_bytes + 2 * CHUNK * ITEM <= bytes);
    sp_stats after;
    sp_stats_get(p, &after);
    assert_true(after.bytes + 2 * CHUNK * ITEM <= before.bytes);
    /* keep none: range 1 goes too; range 0 holds the leased member and stays. */
    blocks = env.alloc.live_blocks;
    bytes = env.alloc.live_bytes;
    assert_int_equal(sp_trim(p, 0), 4);
    assert_true(env.alloc.live_blocks + 1 <= blocks);
    assert_true(env.alloc.live_bytes + CHUNK * ITEM <= bytes);
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 16, .created = 16, .disposed = 15,
                 .acquired = 16, .released = 15);
    assert_true(sp_is_leased(p, m[0]));
    /* Pointers into returned chunks are foreign now, and are never read. */
    for (int i = 4; i < 16; i++) {
        assert_false(sp_is_leased(p, m[i]));
        assert_true(sp_handle_is_null(sp_handle_of(p, m[i])));
        assert_int_equal(sp_release(p, m[i]), SP_ERR_FOREIGN);
    }
    /* The pool grows again on demand, building fresh members. */
    uint64_t allocs = env.alloc.allocs;
    for (int i = 1; i < 16; i++) assert_non_null(sp_acquire(p));
    assert_true(env.alloc.allocs > allocs);
    EXPECT_STATS(p, .size = 16, .leased = 16, .peak_leased = 16, .created = 31, .disposed = 15,
                 .acquired = 31, .released = 15);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void trim_of_an_all_free_pool_returns_every_chunk(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "trim", 128);
    d.chunk_items = 8;
    d.initial = 64;
    sp_pool *p = sp_pool_create(&d);
    size_t bytes = env.alloc.live_bytes, blocks = env.alloc.live_blocks;
    sp_stats before;
    sp_stats_get(p, &before);
    assert_true(bytes >= 64 * 128);
    assert_int_equal(sp_trim(p, 0), 64);
    /* Every range went back (8, 16 and 32 members, and 8 of the next); at most bookkeeping is
       left. */
    assert_true(env.alloc.live_bytes + 64 * 128 <= bytes);
    assert_true(env.alloc.live_blocks + 4 <= blocks);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_true(s.bytes + 64 * 128 <= before.bytes);
    EXPECT_STATS(p, .created = 64, .disposed = 64);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void clear_destroys_every_member_and_keeps_the_pool_usable(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "clear", 48);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    void *m[10];
    sp_handle h[10];
    for (int i = 0; i < 10; i++) {
        m[i] = sp_acquire(p);
        h[i] = sp_handle_of(p, m[i]);
    }
    for (int i = 0; i < 3; i++) sp_release(p, m[i]);
    size_t bytes = env.alloc.live_bytes;
    test_hooks_trace_reset(&env.hooks);
    assert_int_equal(sp_clear(p), 10);
    assert_int_equal(env.hooks.disposed, 10);
    assert_int_equal(env.hooks.released, 3);
    EXPECT_STATS(p, .peak_leased = 10, .created = 10, .disposed = 10, .acquired = 10, .released = 3);
    assert_true(env.alloc.live_bytes + 12 * 48 <= bytes); /* the 3 chunks are back */
    assert_null(sp_first(p));
    for (int i = 0; i < 10; i++) {
        assert_null(sp_resolve(p, h[i]));
        assert_false(sp_is_leased(p, m[i])); /* freed memory: must not be read */
    }
    assert_int_equal(sp_clear(p), 0);
    void *x = sp_acquire(p);
    assert_non_null(x);
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 10, .created = 11, .disposed = 10,
                 .acquired = 11, .released = 3);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* An allocator that keeps freed blocks and hands them back for the same size, so the pool's
   next chunk is exactly the memory of its last one. */
enum { HOARD_CAP = 64 };
typedef struct hoard {
    void *block[HOARD_CAP];
    size_t size[HOARD_CAP];
    int in_use[HOARD_CAP];
    int n;
    int reused;
} hoard;

static void *hoard_alloc(size_t size, size_t align, void *user) {
    hoard *h = (hoard *)user;
    for (int i = h->n - 1; i >= 0; i--) {
        if (!h->in_use[i] && h->size[i] == size && (uintptr_t)h->block[i] % align == 0) {
            h->in_use[i] = 1;
            h->reused++;
            memset(h->block[i], TEST_ALLOC_FRESH, size);
            return h->block[i];
        }
    }
    if (h->n == HOARD_CAP) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < 64 ? 64 : align, size) != 0) return NULL;
    memset(p, TEST_ALLOC_FRESH, size);
    h->block[h->n] = p;
    h->size[h->n] = size;
    h->in_use[h->n] = 1;
    h->n++;
    return p;
}

static void hoard_free(void *ptr, size_t size, void *user) {
    hoard *h = (hoard *)user;
    for (int i = 0; i < h->n; i++) {
        if (h->block[i] == ptr) {
            assert_int_equal(h->size[i], size);
            assert_true(h->in_use[i]);
            memset(ptr, TEST_ALLOC_FREED, size);
            h->in_use[i] = 0;
            return;
        }
    }
    fail_msg("freed a block the hoard never gave out");
}

static void hoard_fini(hoard *h) {
    for (int i = 0; i < h->n; i++) {
        assert_false(h->in_use[i]);
        free(h->block[i]);
    }
}

static int contains(void *const *set, int n, const void *p) {
    for (int i = 0; i < n; i++)
        if (set[i] == p) return 1;
    return 0;
}

/* Takes handles of `n` fresh members, ends the pool's lives with `wipe`, rebuilds n members in the
   same memory, and checks no old handle resolves and no new handle equals an old one. */
static void check_generations_survive(int use_clear) {
    enum { N = 8 };
    hoard h;
    memset(&h, 0, sizeof h);
    sp_desc d = {.name = "gen", .item_size = 40, .chunk_items = 4,
                 .allocator = {.alloc = hoard_alloc, .free = hoard_free, .user = &h}};
    sp_pool *p = sp_pool_create(&d);
    for (int round = 0; round < 3; round++) {
        void *old[N];
        sp_handle oh[N];
        for (int i = 0; i < N; i++) {
            old[i] = sp_acquire(p);
            oh[i] = sp_handle_of(p, old[i]);
        }
        if (use_clear) {
            assert_int_equal(sp_clear(p), N);
        } else {
            sp_release_all(p);
            assert_int_equal(sp_trim(p, 0), N);
        }
        void *now[N];
        sp_handle nh[N];
        int reused = 0;
        for (int i = 0; i < N; i++) {
            now[i] = sp_acquire(p);
            nh[i] = sp_handle_of(p, now[i]);
            reused += contains(old, N, now[i]);
        }
        assert_true(reused > 0); /* the test means something only if memory came back */
        for (int i = 0; i < N; i++) {
            assert_null(sp_resolve(p, oh[i]));
            assert_ptr_equal(sp_resolve(p, nh[i]), now[i]);
            for (int j = 0; j < N; j++) assert_false(sp_handle_eq(nh[i], oh[j]));
        }
        sp_release_all(p);
        if (use_clear) sp_clear(p);
        else sp_trim(p, 0);
    }
    sp_pool_destroy(p);
    assert_true(h.reused > 0);
    hoard_fini(&h);
}

static void handle_taken_before_clear_never_resolves_after(void **state) {
    (void)state;
    check_generations_survive(1);
}

static void handle_taken_before_trim_never_resolves_after(void **state) {
    (void)state;
    check_generations_survive(0);
}

/* Slots at the end of their counter when clear/trim hands their chunk back: a chunk built in the
   same memory later must not restart them, nor wrap them to a life an old handle holds. */
static void exhausted_lives_stay_exhausted_across_clear_and_trim(void **state) {
    (void)state;
    enum { N = 4 };
    for (int use_clear = 0; use_clear < 2; use_clear++) {
        hoard h;
        memset(&h, 0, sizeof h);
        sp_desc d = {.name = "gen", .item_size = 40, .chunk_items = N,
                     .allocator = {.alloc = hoard_alloc, .free = hoard_free, .user = &h}};
        sp_pool *p = sp_pool_create(&d);
        void *m[N];
        sp_handle old[N];
        for (int i = 0; i < N; i++) m[i] = sp_acquire(p);
        sp__debug_set_life(p, m[0], SP__LIFE_MAX);
        sp__debug_set_life(p, m[1], SP__LIFE_MAX - 1);
        for (int i = 0; i < N; i++) old[i] = sp_handle_of(p, m[i]);
        if (use_clear) {
            sp_clear(p);
        } else {
            sp_release_all(p);
            sp_trim(p, 0);
        }
        sp_handle seen[64];
        int n = 0;
        for (int round = 0; round < 8; round++) {
            void *now[N];
            for (int i = 0; i < N; i++) {
                now[i] = sp_acquire(p);
                assert_non_null(now[i]);
                seen[n++] = sp_handle_of(p, now[i]);
            }
            for (int i = 0; i < N; i++) sp_release(p, now[i]);
        }
        /* (Whether the memory came back depends on the record: the record of an exhausted
           slot retires with it, and its memory need not be used again.) */
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < N; j++) assert_false(sp_handle_eq(seen[i], old[j]));
            for (int j = 0; j < i; j++) assert_false(sp_handle_eq(seen[i], seen[j]));
        }
        for (int j = 0; j < N; j++) assert_null(sp_resolve(p, old[j]));
        assert_true(sp__pool_check(p));
        sp_pool_destroy(p);
        hoard_fini(&h);
    }
}

static void handle_taken_before_clear_never_resolves_in_a_fixed_buffer(void **state) {
    (void)state;
    static _Alignas(64) unsigned char buf[8192];
    sp_desc d = {.name = "gen", .item_size = 32};
    size_t size = sp_buffer_size(&d, 4);
    assert_true(size > 0 && size <= sizeof buf);
    d.buffer = buf;
    d.buffer_size = size;
    sp_pool *p = sp_pool_create(&d);
    sp_handle seen[4 * 20];
    int n = 0;
    for (int round = 0; round < 20; round++) {
        void *m;
        while ((m = sp_acquire(p)) != NULL && n < 4 * 20) seen[n++] = sp_handle_of(p, m);
        if (round % 2) sp_clear(p);
        else {
            sp_release_all(p);
            sp_trim(p, 0);
        }
        for (int i = 0; i < n; i++) assert_null(sp_resolve(p, seen[i]));
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) assert_false(sp_handle_eq(seen[i], seen[j]));
    sp_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trim_disposes_free_members_down_to_keep_free),
        cmocka_unit_test(trim_never_touches_leased_members),
        cmocka_unit_test(trim_returns_emptied_chunks_to_the_allocator),
        cmocka_unit_test(trim_of_an_all_free_pool_returns_every_chunk),
        cmocka_unit_test(clear_destroys_every_member_and_keeps_the_pool_usable),
        cmocka_unit_test(handle_taken_before_clear_never_resolves_after),
        cmocka_unit_test(handle_taken_before_trim_never_resolves_after),
        cmocka_unit_test(handle_taken_before_clear_never_resolves_in_a_fixed_buffer),
        cmocka_unit_test(exhausted_lives_stay_exhausted_across_clear_and_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
