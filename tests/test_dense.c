/* SPDX-License-Identifier: Zlib */
/* Tests for sp_dense (include/spawnpool_dense.h): the packed array, swap-remove and on_move,
   handles across moves, the overflow policies, fixed buffers, allocator failure, misuse, and a
   deterministic model test that runs a few hundred thousand random operations against a plain
   reference implementation and checks every answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <spawnpool_dense.h>

#include <stdlib.h>
#include <string.h>

/* White-box hooks from src/dense.c. */
int sp__dense_check(const sp_dense *d);
void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life);

typedef struct particle {
    uint32_t key;
    float x, y;
} particle;

/* on_move recorder */
typedef struct moves {
    int calls;
    size_t last_from, last_to;
    uint32_t last_key;
} moves;

static void record_move(void *item, size_t from, size_t to, void *user) {
    moves *m = (moves *)user;
    m->calls++;
    m->last_from = from;
    m->last_to = to;
    m->last_key = ((const particle *)item)->key;
}

static particle part(uint32_t key) {
    particle p = {key, (float)key, -(float)key};
    return p;
}

static uint32_t key_at(const sp_dense *d, size_t i) {
    return ((const particle *)sp_dense_data(d))[i].key;
}

/* A pool with a counting allocator and a capturing logger; the caller checks for leaks. */
typedef struct fixture {
    test_alloc ta;
    test_log tl;
    moves mv;
    sp_dense_desc desc;
} fixture;

static void fixture_init(fixture *f) {
    memset(f, 0, sizeof *f);
    f->desc.name = "sparks";
    f->desc.item_size = sizeof(particle);
    f->desc.allocator = test_alloc_make(&f->ta);
    f->desc.logger = test_log_make(&f->tl);
    f->desc.on_move = record_move;
    f->desc.user = &f->mv;
}

static void fixture_destroy(fixture *f, sp_dense *d) {
    assert_int_equal(sp__dense_check(d), 0);
    sp_dense_destroy(d);
    assert_int_equal(f->ta.live_bytes, 0);
    assert_int_equal(f->ta.live_blocks, 0);
}

/* ---------------------------------------------------------------------------------------------
   Packing and moves
   ------------------------------------------------------------------------------------------ */

static void swap_remove_keeps_the_array_packed(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    assert_non_null(d);
    for (uint32_t k = 0; k < 10; k++) {
        particle p = part(k);
        particle *at = (particle *)sp_dense_add(d, &p);
        assert_non_null(at);
        assert_ptr_equal(at, (particle *)sp_dense_data(d) + k);
    }
    assert_int_equal(sp_dense_count(d), 10);
    assert_int_equal(sp_dense_stride(d), sizeof(particle));

    assert_int_equal(sp_dense_remove_at(d, 3), SP_OK); /* 9 moves into 3 */
    assert_int_equal(sp_dense_count(d), 9);
    assert_int_equal(key_at(d, 3), 9);
    assert_int_equal(sp_dense_remove_at(d, 8), SP_OK); /* the last: nothing moves */
    assert_int_equal(sp_dense_count(d), 8);
    assert_int_equal(sp_dense_remove(d, sp_dense_at(d, 0)), SP_OK); /* 7 moves into 0 */
    uint32_t expect[] = {7, 1, 2, 9, 4, 5, 6};
    assert_int_equal(sp_dense_count(d), 7);
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(key_at(d, i), expect[i]);
        assert_int_equal(sp_dense_index_of(d, sp_dense_at(d, i)), i);
    }
    assert_null(sp_dense_at(d, 7));
    assert_int_equal(sp_dense_index_of(d, (particle *)sp_dense_data(d) + 7), SIZE_MAX);
    fixture_destroy(&f, d);
}

static void on_move_reports_each_move(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    for (uint32_t k = 0; k < 5; k++) {
        particle p = part(k);
        sp_dense_add(d, &p);
    }
    sp_dense_remove_at(d, 1);
    assert_int_equal(f.mv.calls, 1);
    assert_int_equal(f.mv.last_from, 4);
    assert_int_equal(f.mv.last_to, 1);
    assert_int_equal(f.mv.last_key, 4);
    sp_dense_remove_at(d, 3); /* the tail: no move */
    assert_int_equal(f.mv.calls, 1);
    sp_dense_clear(d); /* clear moves nothing */
    assert_int_equal(f.mv.calls, 1);

    /* growth relocates the array but keeps indices: no on_move */
    for (uint32_t k = 0; k < 1000; k++) {
        particle p = part(k);
        sp_dense_add(d, &p);
    }
    assert_int_equal(f.mv.calls, 1);
    fixture_destroy(&f, d);
}

static void handles_survive_moves_and_die_on_remove(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    sp_handle h[100];
    for (uint32_t k = 0; k < 100; k++) {
        particle p = part(k);
        h[k] = sp_dense_add_handle(d, &p);
        assert_false(sp_handle_is_null(h[k]));
        assert_true(sp_handle_eq(sp_dense_handle_at(d, k), h[k]));
    }
    /* remove the even keys from the front, which moves odd ones around (and the array grew
       on the way, which moved everything) */
    for (uint32_t k = 0; k < 100; k += 2) assert_int_equal(sp_dense_remove_handle(d, h[k]), SP_OK);
    assert_int_equal(sp_dense_count(d), 50);
    for (uint32_t k = 0; k < 100; k++) {
        particle *p = (particle *)sp_dense_resolve(d, h[k]);
        if (k % 2 == 0) {
            assert_null(p);
            assert_int_equal(sp_dense_resolve_index(d, h[k]), SIZE_MAX);
        } else {
            assert_non_null(p);
            assert_int_equal(p->key, k);
            size_t i = sp_dense_resolve_index(d, h[k]);
            assert_ptr_equal(sp_dense_at(d, i), p);
            assert_true(sp_handle_eq(sp_dense_handle_at(d, i), h[k]));
        }
    }
    /* a removed element's slot is reused: its new life gets a different handle */
    particle p = part(1000);
    sp_handle fresh = sp_dense_add_handle(d, &p);
    for (uint32_t k = 0; k < 100; k++) assert_false(sp_handle_eq(fresh, h[k]));
    assert_null(sp_dense_resolve(d, h[98]));
    assert_int_equal(((particle *)sp_dense_resolve(d, fresh))->key, 1000);
    fixture_destroy(&f, d);
}

/* ---------------------------------------------------------------------------------------------
   Overflow
   ------------------------------------------------------------------------------------------ */

static void reclaim_replaces_the_oldest_in_place(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    f.desc.max = 4;
    f.desc.overflow = SP_OVERFLOW_RECLAIM;
    sp_dense *d = sp_dense_create(&f.desc);
    sp_handle h[4];
    for (uint32_t k = 0; k < 4; k++) {
        particle p = part(k);
        h[k] = sp_dense_add_handle(d, &p);
    }
    /* removing key 0 moves 3 to index 0; add 4 (not full); the oldest is now key 1 */
    sp_dense_remove_handle(d, h[0]);
    particle p4 = part(4);
    sp_handle h4 = sp_dense_add_handle(d, &p4);
    int calls = f.mv.calls;
    particle p5 = part(5);
    particle *at = (particle *)sp_dense_add(d, &p5); /* full: reclaims key 1 at index 1 */
    assert_non_null(at);
    assert_ptr_equal(at, sp_dense_at(d, 1));
    assert_int_equal(at->key, 5);
    assert_int_equal(f.mv.calls, calls); /* in place: nothing moved */
    assert_null(sp_dense_resolve(d, h[1]));
    assert_non_null(sp_dense_resolve(d, h[2]));
    /* the next four reclaims take keys 2, 3, 4, 5: oldest first, wherever they sit */
    for (uint32_t i = 0; i < 4; i++) {
        particle q = part(10 + i);
        assert_non_null(sp_dense_add(d, &q));
    }
    assert_null(sp_dense_resolve(d, h[2]));
    assert_null(sp_dense_resolve(d, h[3]));
    assert_null(sp_dense_resolve(d, h4));
    assert_int_equal(sp_dense_count(d), 4);
    for (size_t i = 0; i < 4; i++) assert_true(key_at(d, i) >= 10);

    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.reclaimed, 5);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.acquired, 10);
    assert_int_equal(st.released, 6);
    assert_int_equal(st.leased, 4);
    assert_int_equal(st.peak_leased, 4);
    assert_int_equal(f.tl.warnings + f.tl.errors, 0); /* expected condition: silent */
    fixture_destroy(&f, d);
}

static void drop_is_counted_silently(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    f.desc.max = 3;
    sp_dense *d = sp_dense_create(&f.desc);
    for (uint32_t k = 0; k < 3; k++) assert_non_null(sp_dense_add(d, NULL));
    assert_null(sp_dense_add(d, NULL));
    assert_true(sp_handle_is_null(sp_dense_add_handle(d, NULL)));
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(st.leased, 3);
    assert_int_equal(st.max, 3);
    assert_int_equal(st.size, 3); /* growth stops at max */
    assert_int_equal(f.tl.warnings + f.tl.errors, 0);
    sp_dense_remove_at(d, 0);
    assert_non_null(sp_dense_add(d, NULL));
    fixture_destroy(&f, d);
}

static void grow_policy_goes_past_max_and_counts_it(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    f.desc.max = 4;
    f.desc.chunk_items = 4;
    f.desc.overflow = SP_OVERFLOW_GROW;
    sp_dense *d = sp_dense_create(&f.desc);
    for (uint32_t k = 0; k < 10; k++) assert_non_null(sp_dense_add(d, NULL));
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.leased, 10);
    assert_int_equal(st.size, 12);
    assert_int_equal(st.grown_past_max, 8);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(f.tl.warnings, 2); /* one per growth past max */
    fixture_destroy(&f, d);
}

/* ---------------------------------------------------------------------------------------------
   Memory
   ------------------------------------------------------------------------------------------ */

static void fixed_buffer_never_calls_the_allocator(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    f.desc.overflow = SP_OVERFLOW_RECLAIM;
    size_t need = sp_dense_buffer_size(&f.desc, 50);
    assert_true(need >= 50 * sizeof(particle));
    /* an odd address: the layout must align itself */
    unsigned char *raw = (unsigned char *)malloc(need + 1);
    f.desc.buffer = raw + 1;
    f.desc.buffer_size = need;
    sp_dense *d = sp_dense_create(&f.desc);
    assert_non_null(d);
    assert_true(sp_dense_capacity(d) >= 50);
    size_t cap = sp_dense_capacity(d);
    sp_handle first = sp_dense_add_handle(d, NULL);
    for (size_t i = 1; i < cap * 3; i++) {
        particle p = part((uint32_t)i);
        assert_non_null(sp_dense_add(d, &p));
        if (i % 7 == 0) sp_dense_remove_at(d, i % sp_dense_count(d));
    }
    assert_null(sp_dense_resolve(d, first));
    assert_int_equal(sp_dense_reserve(d, cap * 2), cap);
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.size, cap);
    assert_true(st.bytes <= need);
    assert_true(st.reclaimed > 0);
    assert_int_equal(sp__dense_check(d), 0);
    sp_dense_destroy(d);
    assert_int_equal(f.ta.allocs, 0);
    assert_int_equal(f.ta.frees, 0);
    free(raw);

    /* too small for one element, or for `initial` */
    unsigned char small[16];
    f.desc.buffer = small;
    f.desc.buffer_size = sizeof small;
    assert_null(sp_dense_create(&f.desc));
    assert_int_equal(f.tl.errors, 1);
    assert_string_equal(f.tl.last_pool, "sparks");

    /* DROP keeps no order links (only RECLAIM needs the oldest), so it needs less room */
    f.desc.overflow = SP_OVERFLOW_DROP;
    f.desc.buffer = NULL;
    f.desc.buffer_size = 0;
    assert_true(sp_dense_buffer_size(&f.desc, 50) + 50 * 8 <= need);
}

static void reserve_makes_later_adds_allocation_free(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    f.desc.initial = 100;
    sp_dense *d = sp_dense_create(&f.desc);
    assert_int_equal(sp_dense_capacity(d), 100);
    assert_int_equal(sp_dense_reserve(d, 1000), 1000);
    uint64_t allocs = f.ta.allocs;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 1000; i++) assert_non_null(sp_dense_add(d, NULL));
        while (sp_dense_count(d)) sp_dense_remove_at(d, sp_dense_count(d) / 2);
    }
    assert_int_equal(f.ta.allocs, allocs);
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.created, 1000);
    assert_int_equal(st.size, 1000);
    assert_int_equal(st.free, 1000);
    assert_true(st.bytes >= 1000 * sizeof(particle));
    fixture_destroy(&f, d);
}

static void growth_with_a_failing_allocator_leaves_the_pool_consistent(void **state) {
    (void)state;
    /* Fail each allocation in turn, from creation through several growths: every failure must
       return NULL, keep the contents and handles, log one error, and leak nothing. */
    for (uint64_t fail = 1; fail <= 12; fail++) {
        fixture f;
        fixture_init(&f);
        f.desc.initial = 8;
        f.ta.fail_at = fail;
        sp_dense *d = sp_dense_create(&f.desc);
        if (!d) {
            assert_int_equal(f.tl.errors, 1);
            assert_int_equal(f.ta.live_bytes, 0);
            continue;
        }
        sp_handle h[600];
        uint32_t added = 0, failed = 0;
        for (uint32_t k = 0; k < 600; k++) {
            particle p = part(k);
            size_t before = sp_dense_count(d);
            h[k] = sp_dense_add_handle(d, &p);
            if (sp_handle_is_null(h[k])) {
                failed++;
                assert_int_equal(sp_dense_count(d), before);
                assert_int_equal(f.tl.errors, (int)failed);
                assert_true(test_log_last_has(&f.tl, "out of memory"));
            } else {
                added++;
            }
            assert_int_equal(sp__dense_check(d), 0);
        }
        assert_true(failed <= 1);
        assert_int_equal(sp_dense_count(d), added);
        for (uint32_t k = 0; k < 600; k++) {
            if (sp_handle_is_null(h[k])) continue;
            const particle *p = (const particle *)sp_dense_resolve(d, h[k]);
            assert_non_null(p);
            assert_int_equal(p->key, k);
        }
        sp_stats st;
        sp_dense_stats_get(d, &st);
        assert_int_equal(st.dropped, 0); /* a failed allocation is not a drop */
        fixture_destroy(&f, d);
    }
}

/* ---------------------------------------------------------------------------------------------
   Misuse and handles
   ------------------------------------------------------------------------------------------ */

static void stale_and_forged_handles_are_rejected(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    sp_dense *other = sp_dense_create(&f.desc);
    sp_handle a = sp_dense_add_handle(d, NULL);
    sp_handle b = sp_dense_add_handle(d, NULL);
    sp_handle theirs = sp_dense_add_handle(other, NULL);
    assert_int_equal(a.id & 0xFFFFFF, theirs.id & 0xFFFFFF); /* same slot, different tag */
    assert_null(sp_dense_resolve(d, theirs));
    assert_null(sp_dense_resolve(d, sp_handle_null()));

    assert_int_equal(sp_dense_remove_handle(d, a), SP_OK);
    assert_null(sp_dense_resolve(d, a));
    assert_non_null(sp_dense_resolve(d, b));
    int warnings = f.tl.warnings;
    assert_int_equal(sp_dense_remove_handle(d, a), SP_ERR_NOT_LEASED); /* double remove */
    assert_int_equal(f.tl.warnings, warnings + 1);
    assert_string_equal(f.tl.last_pool, "sparks");
    assert_int_equal(sp_dense_remove_handle(d, theirs), SP_ERR_FOREIGN);
    assert_int_equal(sp_dense_remove_handle(d, sp_handle_null()), SP_OK);
    assert_int_equal(f.tl.warnings, warnings + 2);

    /* forged: a life never issued, a slot never used, life 0, random bits */
    sp_handle future = {b.id + ((uint64_t)5 << TEST_LIFE_SHIFT)};
    sp_handle far_slot = {(b.id & ~(uint64_t)0xFFFFFF) | 0x123456};
    sp_handle life0 = {b.id & (((uint64_t)1 << TEST_LIFE_SHIFT) - 1)};
    assert_null(sp_dense_resolve(d, future));
    assert_null(sp_dense_resolve(d, far_slot));
    assert_null(sp_dense_resolve(d, life0));
    assert_int_equal(sp_dense_remove_handle(d, future), SP_ERR_FOREIGN);
    assert_int_equal(sp_dense_remove_handle(d, far_slot), SP_ERR_FOREIGN);
    assert_int_equal(sp_dense_remove_handle(d, life0), SP_ERR_FOREIGN);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        sp_handle r = {x};
        if (r.id != b.id) assert_null(sp_dense_resolve(d, r));
    }
    assert_int_equal(sp_dense_count(d), 1);
    assert_int_equal(sp_dense_count(other), 1);
    sp_dense_destroy(other);
    fixture_destroy(&f, d);
}

static void exhausted_slot_retires_instead_of_wrapping(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    sp_handle old = sp_dense_add_handle(d, NULL);
    sp_dense_remove_handle(d, old);
    sp_dense_add(d, NULL); /* reuses slot 0 at life 2 */
    sp__dense_set_life(d, 0, TEST_LIFE_MAX);
    sp_handle last = sp_dense_handle_at(d, 0);
    assert_int_equal(last.id >> TEST_LIFE_SHIFT, TEST_LIFE_MAX);
    sp_dense_remove_at(d, 0);
    assert_int_equal(sp__dense_check(d), 0);
    sp_handle next = sp_dense_add_handle(d, NULL);
    assert_int_not_equal(next.id & 0xFFFFFF, last.id & 0xFFFFFF); /* slot 0 retired */
    assert_null(sp_dense_resolve(d, last));
    assert_null(sp_dense_resolve(d, old));
    assert_int_equal(sp_dense_remove_handle(d, last), SP_ERR_NOT_LEASED);

    /* RECLAIM on an exhausted slot moves the element to a fresh slot, in place */
    fixture g;
    fixture_init(&g);
    g.desc.max = 2;
    g.desc.overflow = SP_OVERFLOW_RECLAIM;
    sp_dense *r = sp_dense_create(&g.desc);
    sp_dense_add(r, NULL);
    sp_dense_add(r, NULL);
    sp__dense_set_life(r, 0, TEST_LIFE_MAX);
    sp_handle h0 = sp_dense_handle_at(r, 0);
    particle p = part(77);
    particle *at = (particle *)sp_dense_add(r, &p);
    assert_ptr_equal(at, sp_dense_at(r, 0));
    assert_null(sp_dense_resolve(r, h0));
    sp_handle h = sp_dense_handle_at(r, 0);
    assert_int_not_equal(h.id & 0xFFFFFF, h0.id & 0xFFFFFF);
    assert_int_equal(((particle *)sp_dense_resolve(r, h))->key, 77);
    fixture_destroy(&g, r);
    fixture_destroy(&f, d);
}

static void misuse_returns_errors_and_logs_one_line(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    sp_dense_add(d, NULL);
    sp_dense_add(d, NULL);
    particle outside;
    int w = f.tl.warnings;
    assert_int_equal(sp_dense_remove(d, &outside), SP_ERR_FOREIGN);
    assert_int_equal(sp_dense_remove(d, (char *)sp_dense_data(d) + 1), SP_ERR_FOREIGN);
    assert_int_equal(sp_dense_remove(d, (particle *)sp_dense_data(d) + 2), SP_ERR_NOT_LEASED);
    assert_int_equal(sp_dense_remove_at(d, 2), SP_ERR_INVALID);
    assert_int_equal(f.tl.warnings, w + 4);
    assert_string_equal(f.tl.last_pool, "sparks");
    assert_int_equal(sp_dense_remove(d, NULL), SP_OK);
    assert_int_equal(sp_dense_count(d), 2);
    assert_int_equal(sp_dense_index_of(d, &outside), SIZE_MAX);
    assert_true(sp_handle_is_null(sp_dense_handle_at(d, 2)));

    /* NULL pools: queries answer zero, nothing crashes */
    assert_int_equal(sp_dense_count(NULL), 0);
    assert_null(sp_dense_data(NULL));
    assert_null(sp_dense_name(NULL));
    assert_null(sp_dense_resolve(NULL, sp_dense_handle_at(d, 0)));
    assert_int_equal(sp_dense_clear(NULL), 0);
    sp_stats st;
    memset(&st, 0xAB, sizeof st);
    sp_dense_stats_get(NULL, &st);
    assert_int_equal(st.leased, 0);
    sp_dense_destroy(NULL);
    fixture_destroy(&f, d);
}

static void invalid_descriptors_are_refused_with_one_log_line(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense_desc bad[8];
    for (int i = 0; i < 8; i++) bad[i] = f.desc;
    bad[0].item_size = 0;
    bad[1].item_align = 3;
    bad[2].max = ((size_t)1 << 24) + 1;
    bad[3].max = 4, bad[3].initial = 5;
    bad[4].overflow = (sp_overflow)7;
    bad[5].allocator.free = NULL;
    bad[6].overflow = SP_OVERFLOW_GROW, bad[6].buffer = &f, bad[6].buffer_size = sizeof f;
    bad[7].item_size = SIZE_MAX / 2;
    for (int i = 0; i < 8; i++) {
        int errors = f.tl.errors;
        assert_null(sp_dense_create(&bad[i]));
        assert_int_equal(f.tl.errors, errors + 1);
        assert_string_equal(f.tl.last_pool, "sparks");
        assert_true(test_log_last_has(&f.tl, "invalid"));
        assert_int_equal(sp_dense_buffer_size(&bad[i], 10) == 0, i < 3 || i == 7);
    }
    assert_int_equal(f.ta.allocs, 0);
    assert_int_equal(sp_dense_buffer_size(&f.desc, 0), 0);
    assert_int_equal(sp_dense_buffer_size(NULL, 10), 0);
}

static void clear_ends_every_life_and_keeps_the_capacity(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    sp_dense *d = sp_dense_create(&f.desc);
    sp_handle h[50];
    for (int i = 0; i < 50; i++) h[i] = sp_dense_add_handle(d, NULL);
    size_t cap = sp_dense_capacity(d);
    assert_int_equal(sp_dense_clear(d), 50);
    assert_int_equal(sp_dense_count(d), 0);
    assert_int_equal(sp_dense_capacity(d), cap);
    for (int i = 0; i < 50; i++) assert_null(sp_dense_resolve(d, h[i]));
    assert_int_equal(sp__dense_check(d), 0);
    sp_handle again = sp_dense_add_handle(d, NULL);
    for (int i = 0; i < 50; i++) assert_false(sp_handle_eq(again, h[i]));
    assert_string_equal(sp_dense_name(d), "sparks");
    fixture_destroy(&f, d);
}

static void alignment_is_respected(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    f.desc.item_size = 24;
    f.desc.item_align = 64;
    f.desc.on_move = NULL;
    sp_dense *d = sp_dense_create(&f.desc);
    assert_int_equal(sp_dense_stride(d), 64);
    for (int i = 0; i < 200; i++) {
        void *p = sp_dense_add(d, NULL);
        assert_int_equal((uintptr_t)p % 64, 0);
    }
    fixture_destroy(&f, d);
}

/* ---------------------------------------------------------------------------------------------
   Model test: sp_dense against a reference that keeps the same array by hand. Deterministic:
   a fixed xorshift seed, so a failure reproduces exactly.
   ------------------------------------------------------------------------------------------ */

enum { MODEL_OPS = 300000, MODEL_HANDLES = 512 };

typedef struct model {
    uint32_t keys[4096]; /* the reference array, same order as the pool's */
    size_t n;
    uint32_t next_key;
    sp_handle handles[MODEL_HANDLES];
    uint32_t handle_keys[MODEL_HANDLES];
    unsigned char *alive; /* by key */
    uint64_t rng;
} model;

static uint64_t model_rand(model *m) {
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

/* The reference's swap-remove; returns whether something moved. */
static int model_erase(model *m, size_t i) {
    m->alive[m->keys[i]] = 0;
    m->n--;
    if (i == m->n) return 0;
    m->keys[i] = m->keys[m->n];
    return 1;
}

static void model_run(sp_overflow overflow, size_t max, size_t chunk, bool fixed, uint64_t seed) {
    fixture f;
    fixture_init(&f);
    f.desc.max = max;
    f.desc.chunk_items = chunk;
    f.desc.overflow = overflow;
    void *buffer = NULL;
    if (fixed) { /* room for exactly max elements: the buffer, not max, is the limit */
        f.desc.max = 0;
        f.desc.buffer_size = sp_dense_buffer_size(&f.desc, max);
        f.desc.buffer = buffer = malloc(f.desc.buffer_size);
    }
    sp_dense *d = sp_dense_create(&f.desc);
    if (fixed) assert_int_equal(sp_dense_capacity(d), max);
    assert_non_null(d);
    model *m = (model *)calloc(1, sizeof *m);
    m->alive = (unsigned char *)calloc(MODEL_OPS + 1, 1);
    m->rng = seed;
    uint64_t dropped = 0, reclaimed = 0;

    for (uint32_t op = 0; op < MODEL_OPS; op++) {
        uint64_t r = model_rand(m) % 1000;
        /* drift the target size so the pool fills, empties and overflows in turn */
        bool grow_phase = (op / 20000) % 2 == 0;
        if (r < (grow_phase ? 550u : 400u)) {
            uint32_t key = m->next_key++;
            particle p = part(key);
            int moves_before = f.mv.calls;
            sp_handle h = sp_dense_add_handle(d, &p);
            if (m->n == (max ? max : SIZE_MAX)) {
                if (overflow == SP_OVERFLOW_DROP) {
                    assert_true(sp_handle_is_null(h));
                    dropped++;
                } else {
                    /* oldest = smallest live key, since keys grow with every add */
                    size_t oldest = 0;
                    for (size_t i = 1; i < m->n; i++)
                        if (m->keys[i] < m->keys[oldest]) oldest = i;
                    m->alive[m->keys[oldest]] = 0;
                    m->keys[oldest] = key;
                    m->alive[key] = 1;
                    reclaimed++;
                    assert_int_equal(sp_dense_resolve_index(d, h), oldest);
                }
            } else {
                m->keys[m->n++] = key;
                m->alive[key] = 1;
                assert_int_equal(sp_dense_resolve_index(d, h), m->n - 1);
            }
            assert_int_equal(f.mv.calls, moves_before);
            if (!sp_handle_is_null(h)) {
                size_t slot = model_rand(m) % MODEL_HANDLES;
                m->handles[slot] = h;
                m->handle_keys[slot] = key;
            }
        } else if (r < 800) {
            if (m->n == 0) continue;
            size_t i = (size_t)(model_rand(m) % m->n);
            size_t last = m->n - 1;
            int calls = f.mv.calls;
            int moved = model_erase(m, i);
            if (r < 600) assert_int_equal(sp_dense_remove_at(d, i), SP_OK);
            else assert_int_equal(sp_dense_remove(d, sp_dense_at(d, i)), SP_OK);
            assert_int_equal(f.mv.calls, calls + moved);
            if (moved) {
                assert_int_equal(f.mv.last_from, last);
                assert_int_equal(f.mv.last_to, i);
                assert_int_equal(f.mv.last_key, m->keys[i]);
            }
        } else if (r < 900) {
            size_t slot = (size_t)(model_rand(m) % MODEL_HANDLES);
            sp_handle h = m->handles[slot];
            uint32_t key = m->handle_keys[slot];
            sp_result expect = sp_handle_is_null(h) ? SP_OK
                               : m->alive[key]      ? SP_OK
                                                    : SP_ERR_NOT_LEASED;
            if (!sp_handle_is_null(h) && m->alive[key]) {
                size_t i = 0;
                while (m->keys[i] != key) i++;
                model_erase(m, i);
            }
            assert_int_equal(sp_dense_remove_handle(d, h), expect);
        } else if (r < 999) {
            size_t slot = (size_t)(model_rand(m) % MODEL_HANDLES);
            sp_handle h = m->handles[slot];
            const particle *p = (const particle *)sp_dense_resolve(d, h);
            if (!sp_handle_is_null(h) && m->alive[m->handle_keys[slot]]) {
                assert_non_null(p);
                assert_int_equal(p->key, m->handle_keys[slot]);
            } else {
                assert_null(p);
            }
        } else {
            for (size_t i = 0; i < m->n; i++) m->alive[m->keys[i]] = 0;
            assert_int_equal(sp_dense_clear(d), m->n);
            m->n = 0;
        }

        assert_int_equal(sp_dense_count(d), m->n);
        if (op % 997 == 0 || op == MODEL_OPS - 1) {
            assert_int_equal(sp__dense_check(d), 0);
            for (size_t i = 0; i < m->n; i++) assert_int_equal(key_at(d, i), m->keys[i]);
        }
    }
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.dropped, dropped);
    assert_int_equal(st.reclaimed, reclaimed);
    assert_int_equal(st.leased, m->n);
    assert_true(overflow == SP_OVERFLOW_DROP ? dropped > 0 : reclaimed > 0);
    free(m->alive);
    free(m);
    fixture_destroy(&f, d);
    if (fixed) assert_int_equal(f.ta.allocs, 0);
    free(buffer);
}

static void model_drop_growing_by_chunks(void **state) {
    (void)state;
    model_run(SP_OVERFLOW_DROP, 300, 16, false, 0x5EED0001u);
}

static void model_reclaim_growing_by_doubling(void **state) {
    (void)state;
    model_run(SP_OVERFLOW_RECLAIM, 200, 0, false, 0x5EED0002u);
}

static void model_fixed_buffer_reclaim(void **state) {
    (void)state;
    model_run(SP_OVERFLOW_RECLAIM, 128, 0, true, 0x5EED0003u);
}

static void model_fixed_buffer_drop(void **state) {
    (void)state;
    model_run(SP_OVERFLOW_DROP, 100, 0, true, 0x5EED0004u);
}

/* One tag table for both kinds of pool: with a dense pool and an sp_pool alive side by side,
   the first handle of each has the same slot index and life, and only the tag tells them apart. */
static void handles_never_cross_between_dense_and_plain_pools(void **state) {
    (void)state;
    sp_dense_desc dd = {.name = "dense", .item_size = sizeof(particle)};
    sp_dense *d = sp_dense_create(&dd);
    sp_desc pd = {.name = "plain", .item_size = sizeof(particle)};
    sp_pool *p = sp_pool_create(&pd);
    particle init = {0};
    sp_handle dense_h = sp_dense_add_handle(d, &init);
    void *member = sp_acquire(p);
    sp_handle pool_h = sp_handle_of(p, member);
    assert_false(sp_handle_is_null(dense_h));
    assert_false(sp_handle_is_null(pool_h));
    assert_true((dense_h.id >> TEST_TAG_SHIFT & TEST_TAG_MASK) != (pool_h.id >> TEST_TAG_SHIFT & TEST_TAG_MASK));
    assert_null(sp_resolve(p, dense_h));
    assert_null(sp_dense_resolve(d, pool_h));
    assert_ptr_equal(sp_resolve(p, pool_h), member);
    assert_non_null(sp_dense_resolve(d, dense_h));
    sp_release(p, member);
    sp_pool_destroy(p);
    sp_dense_destroy(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(swap_remove_keeps_the_array_packed),
        cmocka_unit_test(on_move_reports_each_move),
        cmocka_unit_test(handles_survive_moves_and_die_on_remove),
        cmocka_unit_test(reclaim_replaces_the_oldest_in_place),
        cmocka_unit_test(drop_is_counted_silently),
        cmocka_unit_test(grow_policy_goes_past_max_and_counts_it),
        cmocka_unit_test(fixed_buffer_never_calls_the_allocator),
        cmocka_unit_test(reserve_makes_later_adds_allocation_free),
        cmocka_unit_test(growth_with_a_failing_allocator_leaves_the_pool_consistent),
        cmocka_unit_test(stale_and_forged_handles_are_rejected),
        cmocka_unit_test(exhausted_slot_retires_instead_of_wrapping),
        cmocka_unit_test(misuse_returns_errors_and_logs_one_line),
        cmocka_unit_test(invalid_descriptors_are_refused_with_one_log_line),
        cmocka_unit_test(clear_ends_every_life_and_keeps_the_capacity),
        cmocka_unit_test(alignment_is_respected),
        cmocka_unit_test(model_drop_growing_by_chunks),
        cmocka_unit_test(model_reclaim_growing_by_doubling),
        cmocka_unit_test(model_fixed_buffer_reclaim),
        cmocka_unit_test(model_fixed_buffer_drop),
        cmocka_unit_test(handles_never_cross_between_dense_and_plain_pools),
    };
    return cmocka_run_group_tests_name("dense", tests, NULL, NULL);
}
