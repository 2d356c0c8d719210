/* SPDX-License-Identifier: Zlib */
/* Fixed-memory mode: with desc.buffer, the pool, its bookkeeping and its members live inside the
   caller's buffer, the allocator is never called, nothing is written outside the buffer, max is
   clamped to what fits, and sp_buffer_size is exact enough to size a buffer for n members. */
#define _GNU_SOURCE /* mallinfo2: shows a hidden malloc in a non-ASan build */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* SP__DBG_BYTES */

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

enum { GUARD = 64, GUARD_BYTE = 0xC3 };

/* Bytes the C library's malloc has handed out: glibc's mallinfo2, or under WebAssembly
   emscripten's dlmalloc mallinfo. */
static size_t heap_bytes_in_use(void) {
#ifdef __EMSCRIPTEN__
    return (size_t)mallinfo().uordblks;
#else
    return mallinfo2().uordblks;
#endif
}

/* A buffer of `size` bytes at `offset` from a 64-aligned base, with guard bytes on both sides. */
typedef struct guarded {
    unsigned char *base;
    unsigned char *buf;
    size_t size;
} guarded;

static guarded guarded_make(size_t size, size_t offset) {
    guarded g;
    g.size = size;
    g.base = aligned_alloc(64, (GUARD + offset + size + GUARD + 63) / 64 * 64);
    assert_non_null(g.base);
    memset(g.base, GUARD_BYTE, GUARD + offset + size + GUARD);
    g.buf = g.base + GUARD + offset;
    memset(g.buf, 0xEE, size); /* dirty, so zeroing before create shows */
    return g;
}

static void guarded_check_and_free(guarded *g) {
    for (size_t i = 0; i < GUARD; i++) {
        assert_int_equal(g->buf[-(ptrdiff_t)i - 1], GUARD_BYTE);
        assert_int_equal(g->buf[g->size + i], GUARD_BYTE);
    }
    free(g->base);
}

static int inside(const guarded *g, const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)g->buf, hi = lo + g->size;
    return a >= lo && a + n <= hi;
}

static sp_desc fixed_desc(test_env *env, size_t item_size) {
    sp_desc d = test_env_desc(env, "fixed", item_size);
    return d;
}

/* Members a buffer of `size` bytes at `offset` holds (0 when the pool cannot be created). */
static size_t capacity_of(const sp_desc *proto, size_t size, size_t offset) {
    test_env env;
    sp_desc d = fixed_desc(&env, proto->item_size);
    d.item_align = proto->item_align;
    guarded g = guarded_make(size, offset);
    d.buffer = g.buf;
    d.buffer_size = size;
    sp_pool *p = sp_pool_create(&d);
    size_t n = 0;
    if (p) {
        while (sp_acquire(p)) n++;
        sp_stats s;
        sp_stats_get(p, &s);
        assert_int_equal(s.max, n);
        assert_int_equal(s.size, n);
        assert_true(s.bytes <= size);
        sp_pool_destroy(p);
    }
    assert_int_equal(env.alloc.allocs, 0);
    guarded_check_and_free(&g);
    return n;
}

static void fixed_pool_keeps_everything_inside_the_buffer(void **state) {
    (void)state;
    enum { ITEM = 40, N = 64 };
    test_env env;
    sp_desc d = fixed_desc(&env, ITEM);
    size_t size = sp_buffer_size(&d, N);
    assert_true(size >= N * ITEM);
    guarded g = guarded_make(size, 0);
    d.buffer = g.buf;
    d.buffer_size = size;
    d.initial = 10;
    size_t heap_before = heap_bytes_in_use();
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    assert_true(inside(&g, p, 1));
    void *items[4 * N];
    size_t n = 0;
    while (n < 4 * N && (items[n] = sp_acquire(p)) != NULL) {
        assert_true(inside(&g, items[n], ITEM));
        assert_int_equal((uintptr_t)items[n] % 8, 0);
        memset(items[n], 0x11, ITEM);
        n++;
    }
    assert_true(n >= N);
    assert_int_equal(heap_bytes_in_use(), heap_before);
    EXPECT_STATS(p, .size = n, .leased = n, .peak_leased = n, .created = n, .acquired = n, .dropped = 1);
    /* Every other path, still without the allocator. */
    for (size_t i = 0; i < n; i += 2) assert_int_equal(sp_release(p, items[i]), SP_OK);
    sp_trim(p, 3);
    sp_prewarm(p, 5);
    sp_release_all(p);
    sp_clear(p);
    for (size_t i = 0; i < N; i++) assert_true(inside(&g, sp_acquire(p), ITEM));
    sp_pool_destroy(p);
    assert_int_equal(env.alloc.allocs, 0);
    assert_int_equal(env.alloc.frees, 0);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    assert_int_equal(env.hooks.disposed, env.hooks.created);
    guarded_check_and_free(&g);
}

static void buffer_of_sp_buffer_size_holds_that_many_members(void **state) {
    (void)state;
    static const struct {
        size_t item, align;
    } kinds[] = {{1, 0}, {8, 0}, {24, 0}, {64, 0}, {100, 0}, {12, 64}};
    static const size_t counts[] = {1, 2, 7, 64, 300};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            sp_desc d = {.item_size = kinds[k].item, .item_align = kinds[k].align};
            size_t n = counts[c];
            size_t size = sp_buffer_size(&d, n);
            assert_true(size >= n * kinds[k].item);
            /* At any alignment of the buffer, n fit... */
            for (size_t off = 0; off < 16; off += 5) {
                size_t cap = capacity_of(&d, size, off);
                if (cap < n) {
                    print_error("item %zu align %zu: %zu bytes at offset %zu hold %zu, not %zu\n",
                                kinds[k].item, kinds[k].align, size, off, cap, n);
                    fail();
                }
            }
            /* ...and it is the least size that does: a byte less holds fewer at some start
               (the layout depends on the start through its alignment only). */
            size_t a = kinds[k].align > 8 ? kinds[k].align : 8, least = n;
            for (size_t off = 0; off < a && least == n; off++) {
                size_t less = capacity_of(&d, size - 1, off);
                if (less < least) least = less;
            }
            if (least >= n) {
                print_error("item %zu: %zu bytes hold %zu members at every start, asked for %zu\n",
                            kinds[k].item, size - 1, least, n);
                fail();
            }
            /* Monotonic and roughly linear. */
            assert_true(sp_buffer_size(&d, n + 1) > size);
        }
    }
    sp_desc bad = {.item_size = 0};
    assert_int_equal(sp_buffer_size(&bad, 10), 0);
    sp_desc huge = {.item_size = SIZE_MAX / 4};
    assert_int_equal(sp_buffer_size(&huge, 8), 0);
}

static void buffer_overhead_is_small_per_member(void **state) {
    (void)state;
    static const size_t items[] = {16, 64, 256};
    for (size_t i = 0; i < 3; i++) {
        sp_desc d = {.item_size = items[i]};
        size_t size = sp_buffer_size(&d, 100000);
        assert_true(size > 0);
        /* The same budget as an allocator-backed pool: aligned size + 16 per member (plus the
           debug record in SP_DEBUG builds). */
        assert_true(size / 100000 <= items[i] + 16 + SP__DBG_BYTES);
    }
}

static void max_is_clamped_to_capacity(void **state) {
    (void)state;
    test_env env;
    sp_desc d = fixed_desc(&env, 32);
    size_t size = sp_buffer_size(&d, 10);
    guarded g = guarded_make(size, 0);
    d.buffer = g.buf;
    d.buffer_size = size;
    d.max = 1000;
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    sp_stats s;
    sp_stats_get(p, &s);
    size_t cap = s.max;
    assert_true(cap >= 10 && cap < 1000);
    size_t n = 0;
    while (sp_acquire(p)) n++;
    assert_int_equal(n, cap);
    assert_int_equal(sp_set_max(p, 1000), SP_OK);
    sp_stats_get(p, &s);
    assert_int_equal(s.max, cap);
    assert_int_equal(sp_set_max(p, 0), SP_OK);
    sp_stats_get(p, &s);
    assert_int_equal(s.max, cap);
    assert_int_equal(sp_set_max(p, 5), SP_OK);
    sp_stats_get(p, &s);
    assert_int_equal(s.max, 5);
    assert_null(sp_acquire(p));
    EXPECT_STATS(p, .size = cap, .leased = cap, .peak_leased = cap, .created = cap, .acquired = cap,
                 .dropped = 2);
    sp_pool_destroy(p);
    assert_int_equal(env.alloc.allocs, 0);
    guarded_check_and_free(&g);
}

static void initial_may_fill_the_buffer(void **state) {
    (void)state;
    test_env env;
    sp_desc d = fixed_desc(&env, 24);
    size_t size = sp_buffer_size(&d, 20);
    guarded g = guarded_make(size, 3);
    d.buffer = g.buf;
    d.buffer_size = size;
    d.initial = 20;
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    sp_stats s;
    sp_stats_get(p, &s);
    assert_true(s.size >= 20);
    assert_int_equal(s.created, s.size);
    assert_int_equal(env.hooks.create_saw_dirty, 0);
    sp_pool_destroy(p);
    guarded_check_and_free(&g);
}

static void reclaim_and_handles_work_in_a_fixed_buffer(void **state) {
    (void)state;
    test_env env;
    sp_desc d = fixed_desc(&env, 16);
    d.overflow = SP_OVERFLOW_RECLAIM; /* (acquisition order: sized with it, its links) */
    size_t size = sp_buffer_size(&d, 4);
    guarded g = guarded_make(size, 0);
    d.buffer = g.buf;
    d.buffer_size = size;
    d.max = 4;
    sp_pool *p = sp_pool_create(&d);
    void *m[4];
    sp_handle h[4];
    for (int i = 0; i < 4; i++) {
        m[i] = sp_acquire(p);
        h[i] = sp_handle_of(p, m[i]);
    }
    assert_ptr_equal(sp_acquire(p), m[0]);
    assert_null(sp_resolve(p, h[0]));
    assert_ptr_equal(sp_resolve(p, h[1]), m[1]);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 5,
                 .released = 1, .reclaimed = 1);
    sp_pool_destroy(p);
    assert_int_equal(env.alloc.allocs, 0);
    guarded_check_and_free(&g);
}

static void zero_allocator_calls_during_churn_in_a_fixed_buffer(void **state) {
    (void)state;
    test_env env;
    sp_desc d = fixed_desc(&env, 48);
    size_t size = sp_buffer_size(&d, 100);
    guarded g = guarded_make(size, 0);
    d.buffer = g.buf;
    d.buffer_size = size;
    sp_pool *p = sp_pool_create(&d);
    void *live[100];
    size_t n = 0;
    uint32_t rng = 99;
    for (int i = 0; i < 100000; i++) {
        if (n < 100 && (n == 0 || test_rand(&rng) % 2)) {
            live[n] = sp_acquire(p);
            assert_non_null(live[n]);
            n++;
        } else {
            size_t k = test_rand(&rng) % n;
            assert_int_equal(sp_release(p, live[k]), SP_OK);
            live[k] = live[--n];
        }
    }
    sp_pool_destroy(p);
    assert_int_equal(env.alloc.allocs, 0);
    guarded_check_and_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_pool_keeps_everything_inside_the_buffer),
        cmocka_unit_test(buffer_of_sp_buffer_size_holds_that_many_members),
        cmocka_unit_test(buffer_overhead_is_small_per_member),
        cmocka_unit_test(max_is_clamped_to_capacity),
        cmocka_unit_test(initial_may_fill_the_buffer),
        cmocka_unit_test(reclaim_and_handles_work_in_a_fixed_buffer),
        cmocka_unit_test(zero_allocator_calls_during_churn_in_a_fixed_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
