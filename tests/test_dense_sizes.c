/* SPDX-License-Identifier: Zlib */
/* sp_dense with large elements, and the per-pool element ceiling: 2^24 elements, or fewer when
   their memory would pass PTRDIFF_MAX bytes. With a 32-bit size_t (WebAssembly, 32-bit ARM) a
   dense pool used to refuse every item_size or item_align above 63 (issue 14). The white-box
   tests ask what a 32-bit size_t allows from any build, through sp__dense_items_max with its
   largest block (2^31 - 1); the suite also runs under WebAssembly (make test-web), where that is
   the real size_t. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <spawnpool_dense.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t sp__dense_items_max(const sp_dense_desc *desc, size_t bytes_max);
int sp__dense_check(const sp_dense *d);

/* 2^wide where size_t has 64 bits, 2^narrow where it has 32. */
#define POW2(wide, narrow) ((size_t)1 << (SIZE_MAX > 0xFFFFFFFFu ? (wide) : (narrow)))
#define MAX_ITEMS ((size_t)1 << 24)
#define BYTES_MAX_32 ((size_t)0x7FFFFFFF) /* PTRDIFF_MAX with a 32-bit size_t */
#define BYTES_MAX ((size_t)PTRDIFF_MAX)   /* this build's */

/* Element i's bytes: a pattern of its key, so a move or an overlap shows. */
static void fill(unsigned char *p, size_t size, uint32_t key) {
    for (size_t b = 0; b < size; b++) p[b] = (unsigned char)(key * 31u + b);
}

static int holds(const unsigned char *p, size_t size, uint32_t key) {
    for (size_t b = 0; b < size; b++)
        if (p[b] != (unsigned char)(key * 31u + b)) return 0;
    return 1;
}

typedef struct big_case {
    size_t size, align, stride;
} big_case;

/* The sizes a game stores in a packed array: 64-byte particles aligned to a cache line, odd
   sizes, several KiB. */
static const big_case big_cases[] = {
    {64, 64, 64}, {100, 4, 100}, {72, 0, 72}, {3000, 64, 3008}, {4096, 0, 4096}, {16384, 256, 16384},
};

/* Adds, removes (swap-remove moves whole elements) and resolves elements of every size above,
   checking each element's bytes and alignment. */
static void elements_of_several_kib_live_in_a_growing_pool(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof big_cases / sizeof big_cases[0]; c++) {
        const big_case *bc = &big_cases[c];
        test_alloc ta = {0};
        test_log tl = {0};
        sp_dense *d = sp_dense_create(&(sp_dense_desc){.name = "big", .item_size = bc->size,
                                                        .item_align = bc->align,
                                                        .allocator = test_alloc_make(&ta),
                                                        .logger = test_log_make(&tl)});
        if (!d) fail_msg("item_size %zu, item_align %zu refused: %s", bc->size, bc->align, tl.last_message);
        assert_int_equal(sp_dense_stride(d), bc->stride);
        enum { N = 300 };
        sp_handle h[N];
        unsigned char *init = (unsigned char *)malloc(bc->size);
        for (uint32_t k = 0; k < N; k++) {
            fill(init, bc->size, k);
            h[k] = sp_dense_add_handle(d, init);
            assert_int_not_equal(h[k].id, 0);
        }
        for (uint32_t k = 0; k < N; k += 3) assert_int_equal(sp_dense_remove_handle(d, h[k]), SP_OK);
        for (uint32_t k = 0; k < N; k++) {
            unsigned char *p = (unsigned char *)sp_dense_resolve(d, h[k]);
            if (k % 3 == 0) {
                assert_null(p);
                continue;
            }
            assert_non_null(p);
            if (bc->align) assert_int_equal((uintptr_t)p % bc->align, 0);
            if (!holds(p, bc->size, k)) fail_msg("item_size %zu: element %u damaged", bc->size, k);
        }
        assert_int_equal(sp__dense_check(d), 0);
        assert_int_equal(tl.errors + tl.warnings, 0);
        free(init);
        sp_dense_destroy(d);
        assert_int_equal(ta.live_bytes, 0);
    }
}

/* The same sizes in a caller's buffer, deliberately misaligned, under RECLAIM. */
static void elements_of_several_kib_live_in_a_fixed_buffer(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof big_cases / sizeof big_cases[0]; c++) {
        const big_case *bc = &big_cases[c];
        test_log tl = {0};
        sp_dense_desc desc = {.name = "fixed", .item_size = bc->size, .item_align = bc->align,
                              .overflow = SP_OVERFLOW_RECLAIM, .logger = test_log_make(&tl)};
        desc.buffer_size = sp_dense_buffer_size(&desc, 20);
        assert_true(desc.buffer_size >= 20 * bc->stride);
        unsigned char *memory = (unsigned char *)malloc(desc.buffer_size + 1);
        desc.buffer = memory + 1;
        sp_dense *d = sp_dense_create(&desc);
        if (!d) fail_msg("item_size %zu in a buffer refused: %s", bc->size, tl.last_message);
        assert_true(sp_dense_capacity(d) >= 20);
        unsigned char *init = (unsigned char *)malloc(bc->size);
        uint32_t added = (uint32_t)sp_dense_capacity(d) + 5; /* the last 5 reclaim the oldest */
        for (uint32_t k = 0; k < added; k++) {
            fill(init, bc->size, k);
            unsigned char *p = (unsigned char *)sp_dense_add(d, init);
            assert_non_null(p);
            assert_true(p >= memory + 1 && p + bc->size <= memory + 1 + desc.buffer_size);
            if (bc->align) assert_int_equal((uintptr_t)p % bc->align, 0);
        }
        sp_stats st;
        sp_dense_stats_get(d, &st);
        assert_int_equal(st.reclaimed, 5);
        for (size_t i = 0; i < sp_dense_count(d); i++) {
            const unsigned char *p = (const unsigned char *)sp_dense_at(d, i);
            uint32_t key = 5; /* the first 5 were reclaimed: one of the others, each once */
            for (; key < added; key++)
                if (holds(p, bc->size, key)) break;
            if (key == added) fail_msg("item_size %zu: element %zu damaged", bc->size, i);
        }
        assert_int_equal(sp__dense_check(d), 0);
        free(init);
        sp_dense_destroy(d);
        free(memory);
    }
}

/* The ceiling with a 32-bit size_t, computed from this build: exact (the most elements whose
   layout fits in 2^31 - 1 bytes, not one fewer), and ample for large elements. */
static void the_element_ceiling_is_exact_for_a_32_bit_size_t(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 8, 24, 63, 64, 100, 116, 128, 1000, 4096, 5000, 65536,
                                   (size_t)1 << 20, (size_t)1 << 26, (size_t)1 << 30};
    static const size_t aligns[] = {0, 1, 8, 64, 4096};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
            for (int reclaim = 0; reclaim < 2; reclaim++) {
                sp_dense_desc desc = {.item_size = sizes[s], .item_align = aligns[a],
                                      .overflow = reclaim ? SP_OVERFLOW_RECLAIM : SP_OVERFLOW_DROP};
                size_t n = sp__dense_items_max(&desc, BYTES_MAX_32);
                if (n == 0) fail_msg("item %zu align %zu: refused with a 32-bit size_t", sizes[s], aligns[a]);
                assert_true(n <= MAX_ITEMS);
                /* This build's sp_dense_buffer_size computes the same layout without wrapping
                   (a 64-bit size_t holds any of these sums; with a 32-bit one it is the same
                   ceiling, so the next count is refused). */
                size_t bytes = sp_dense_buffer_size(&desc, n);
                if (bytes == 0 || bytes > BYTES_MAX_32)
                    fail_msg("item %zu align %zu: %zu elements take %zu bytes", sizes[s], aligns[a], n, bytes);
                if (n == MAX_ITEMS) continue;
                size_t next = sp_dense_buffer_size(&desc, n + 1);
                if (SIZE_MAX > 0xFFFFFFFFu) {
                    if (next <= BYTES_MAX_32)
                        fail_msg("item %zu align %zu: %zu elements would fit too", sizes[s], aligns[a], n + 1);
                } else {
                    assert_int_equal(next, 0);
                }
            }
        }
    }
    /* What a wasm32 game gets: 2^24 64-byte particles aligned to 64 (1.2 GiB), and 4 KiB
       elements as far as 2 GiB goes. */
    assert_int_equal(sp__dense_items_max(&(sp_dense_desc){.item_size = 64, .item_align = 64}, BYTES_MAX_32),
                     MAX_ITEMS);
    size_t n4k = sp__dense_items_max(&(sp_dense_desc){.item_size = 4096}, BYTES_MAX_32);
    assert_true(n4k > BYTES_MAX_32 / (4096 + 12) - 1 && n4k <= BYTES_MAX_32 / (4096 + 12));
}

/* Where nothing fits in 2^31 - 1 bytes, the descriptor is refused; just below, one element. */
static void a_32_bit_size_t_refuses_only_what_cannot_fit(void **state) {
    (void)state;
    sp_dense_desc desc = {.item_size = (size_t)1 << 30};
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 1);
    desc.item_size = BYTES_MAX_32 - 100;
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 0);
    desc.item_size = BYTES_MAX_32;
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 0);
    desc.item_size = SIZE_MAX; /* rounding up to the alignment must not wrap */
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 0);
    /* a buffer may need up to item_align - 1 bytes of padding before the first element */
    desc = (sp_dense_desc){.item_size = 8, .item_align = (size_t)1 << 29};
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 2);
    desc.item_align = (size_t)1 << 30;
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 0);
    desc.item_align = (size_t)1 << 31;
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 0);
    desc = (sp_dense_desc){.item_size = 4096, .max = MAX_ITEMS}; /* 64 GiB */
    assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX_32), 0);
    desc.max = 1000;
    assert_true(sp__dense_items_max(&desc, BYTES_MAX_32) > 500000);
}

/* With a 64-bit size_t nothing changed for what was accepted before the per-pool ceiling
   (item_size and item_align up to SIZE_MAX >> 26 = 2^38 - 1): 2^24 elements each. */
static void a_64_bit_size_t_keeps_2_24_elements_up_to_2_38_bytes(void **state) {
    (void)state;
    if (SIZE_MAX <= 0xFFFFFFFFu) skip();
    static const size_t sizes[] = {1, 24, 4096, (size_t)1 << 20, POW2(32, 16), POW2(38, 16) - 8, POW2(38, 16) - 1};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int reclaim = 0; reclaim < 2; reclaim++) {
            sp_dense_desc desc = {.item_size = sizes[s], .overflow = reclaim ? SP_OVERFLOW_RECLAIM : SP_OVERFLOW_DROP};
            assert_int_equal(sp__dense_items_max(&desc, BYTES_MAX), MAX_ITEMS);
            assert_int_not_equal(sp_dense_buffer_size(&desc, MAX_ITEMS), 0);
        }
    }
    sp_dense_desc aligned = {.item_size = 8, .item_align = POW2(37, 16)};
    assert_int_equal(sp__dense_items_max(&aligned, BYTES_MAX), MAX_ITEMS);
}

/* An allocator that records what it is asked for and fails: the pool's largest requests can be
   seen without the memory. */
typedef struct refusing_alloc {
    size_t largest;
    int calls;
} refusing_alloc;

static void *refusing_alloc_fn(size_t size, size_t align, void *user) {
    (void)align;
    refusing_alloc *r = (refusing_alloc *)user;
    r->calls++;
    if (size > r->largest) r->largest = size;
    if (size > 4096) return NULL;
    return malloc(size);
}

static void refusing_free_fn(void *ptr, size_t size, void *user) {
    (void)size;
    (void)user;
    free(ptr);
}

/* Elements so large that 2^24 of them pass PTRDIFF_MAX (2^40 bytes with a 64-bit size_t, 1 KiB
   with a 32-bit one): max and initial are checked against the pool's ceiling, max = 0 means
   the ceiling, and reserve and growth ask for at most the ceiling, never for a wrapped size. */
static void large_elements_stop_at_the_pool_ceiling(void **state) {
    (void)state;
    test_log tl = {0};
    refusing_alloc ra = {0, 0};
    sp_dense_desc desc = {.name = "huge", .item_size = POW2(40, 10), .overflow = SP_OVERFLOW_GROW,
                          .allocator = {.alloc = refusing_alloc_fn, .free = refusing_free_fn, .user = &ra},
                          .logger = test_log_make(&tl)};
    size_t ceiling = sp__dense_items_max(&desc, BYTES_MAX);
    assert_true(ceiling > 1000 && ceiling < MAX_ITEMS);
    assert_int_not_equal(sp_dense_buffer_size(&desc, ceiling), 0);
    assert_int_equal(sp_dense_buffer_size(&desc, ceiling + 1), 0);

    desc.max = MAX_ITEMS;
    assert_null(sp_dense_create(&desc));
    assert_int_equal(tl.errors, 1);
    assert_true(test_log_last_has(&tl, "max is 16777216, above"));
    desc.max = 0;
    desc.initial = ceiling + 1;
    assert_null(sp_dense_create(&desc));
    assert_int_equal(tl.errors, 2);
    assert_true(test_log_last_has(&tl, "initial is"));
    desc.initial = 0;
    desc.max = ceiling;
    sp_dense *d = sp_dense_create(&desc);
    assert_non_null(d);
    sp_dense_destroy(d);

    /* reserve clamps to the ceiling: one request for exactly that many elements, which fails */
    desc.max = 0;
    ra = (refusing_alloc){0, 0};
    d = sp_dense_create(&desc);
    assert_non_null(d);
    assert_int_equal(sp_dense_reserve(d, SIZE_MAX), 0);
    assert_int_equal(ra.calls, 2); /* the header, then the items block */
    assert_true(ra.largest >= ceiling * POW2(40, 10) && ra.largest <= BYTES_MAX);
    char says[96];
    snprintf(says, sizeof says, "out of memory growing to %zu elements", ceiling);
    if (!test_log_last_has(&tl, says)) fail_msg("'%s' does not say '%s'", tl.last_message, says);
    sp_dense_destroy(d);

    /* growth by a chunk_items past the ceiling (GROW, max 0) asks for the ceiling too */
    ra = (refusing_alloc){0, 0};
    desc.chunk_items = SIZE_MAX;
    d = sp_dense_create(&desc);
    assert_null(sp_dense_add(d, NULL));
    assert_true(test_log_last_has(&tl, says));
    assert_true(ra.largest >= ceiling * POW2(40, 10) && ra.largest <= BYTES_MAX);
    assert_int_equal(sp_dense_count(d), 0);
    assert_int_equal(sp__dense_check(d), 0);
    sp_dense_destroy(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(elements_of_several_kib_live_in_a_growing_pool),
        cmocka_unit_test(elements_of_several_kib_live_in_a_fixed_buffer),
        cmocka_unit_test(the_element_ceiling_is_exact_for_a_32_bit_size_t),
        cmocka_unit_test(a_32_bit_size_t_refuses_only_what_cannot_fit),
        cmocka_unit_test(a_64_bit_size_t_keeps_2_24_elements_up_to_2_38_bytes),
        cmocka_unit_test(large_elements_stop_at_the_pool_ceiling),
    };
    return cmocka_run_group_tests_name("dense_sizes", tests, NULL, NULL);
}
