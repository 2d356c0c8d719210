/* SPDX-License-Identifier: Zlib */
/* Misuse and failure: NULL arguments, double release, pointers that are not this pool's members
   (stack, heap, interior, another pool's), invalid descriptors, and allocator failure. Each
   survivable misuse must return its code, change nothing, and log one warning naming the pool;
   nothing may leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* sp__pool_check: white-box invariants */

#include <stdlib.h>
#include <string.h>

/* Everything observable about a pool, to show that a misuse changed nothing. */
typedef struct snapshot {
    sp_stats stats;
    test_hooks hooks;
    void *order[64];
    int n;
} snapshot;

static void take(snapshot *s, const sp_pool *p, const test_hooks *h) {
    memset(s, 0, sizeof *s);
    sp_stats_get(p, &s->stats);
    s->hooks = *h;
    for (void *it = sp_first(p); it && s->n < 64; it = sp_next(p, it)) s->order[s->n++] = it;
}

static void expect_unchanged(const snapshot *before, const sp_pool *p, const test_hooks *h) {
    snapshot now;
    assert_true(sp__pool_check(p));
    take(&now, p, h);
    assert_memory_equal(&now.stats, &before->stats, sizeof now.stats);
    assert_int_equal(now.hooks.created, before->hooks.created);
    assert_int_equal(now.hooks.acquired, before->hooks.acquired);
    assert_int_equal(now.hooks.released, before->hooks.released);
    assert_int_equal(now.hooks.disposed, before->hooks.disposed);
    assert_int_equal(now.n, before->n);
    assert_memory_equal(now.order, before->order, sizeof now.order);
}

static void release_of_null_is_a_noop_returning_ok(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "errs", 16);
    sp_pool *p = sp_pool_create(&d);
    sp_acquire(p);
    snapshot before;
    take(&before, p, &env.hooks);
    assert_int_equal(sp_release(p, NULL), SP_OK);
    expect_unchanged(&before, p, &env.hooks);
    assert_int_equal(env.log.errors + env.log.warnings + env.log.infos, 0);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void double_release_returns_not_leased_and_changes_nothing(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "errs", 16);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p), *b = sp_acquire(p);
    sp_acquire(p);
    assert_int_equal(sp_release(p, a), SP_OK);
    snapshot before;
    take(&before, p, &env.hooks);
    assert_int_equal(sp_release(p, a), SP_ERR_NOT_LEASED);
    expect_unchanged(&before, p, &env.hooks);
    assert_int_equal(env.log.warnings, 1);
    assert_int_equal(env.log.errors, 0);
    assert_string_equal(env.log.last_pool, "errs");
    /* Again with two free members, one of them prewarmed. */
    assert_int_equal(sp_prewarm(p, 1), 1);
    void *spare = sp_acquire(p);
    assert_int_equal(sp_release(p, spare), SP_OK);
    take(&before, p, &env.hooks);
    assert_int_equal(sp_release(p, spare), SP_ERR_NOT_LEASED);
    expect_unchanged(&before, p, &env.hooks);
    assert_int_equal(env.log.warnings, 2);
    /* The free list was not corrupted: the free members come out once each. */
    void *x = sp_acquire(p), *y = sp_acquire(p);
    assert_non_null(x);
    assert_non_null(y);
    assert_ptr_not_equal(x, y);
    assert_ptr_not_equal(x, b);
    assert_ptr_not_equal(y, b);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 6, .released = 2);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* Releases ptr into p and checks it is refused as foreign, with one warning and no change. */
static void expect_foreign(sp_pool *p, test_env *env, void *ptr) {
    snapshot before;
    take(&before, p, &env->hooks);
    int warnings = env->log.warnings, errors = env->log.errors;
    assert_int_equal(sp_release(p, ptr), SP_ERR_FOREIGN);
    expect_unchanged(&before, p, &env->hooks);
    assert_int_equal(env->log.warnings, warnings + 1);
    assert_int_equal(env->log.errors, errors);
    assert_string_equal(env->log.last_pool, sp_pool_name(p));
}

static void release_of_a_stack_pointer_returns_foreign(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "errs", 16);
    sp_pool *p = sp_pool_create(&d);
    sp_acquire(p);
    long local[4] = {0};
    expect_foreign(p, &env, &local[0]);
    expect_foreign(p, &env, &local[2]);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void release_of_an_interior_pointer_returns_foreign(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "errs", 64);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    char *items[8];
    for (int i = 0; i < 8; i++) items[i] = sp_acquire(p);
    sp_release(p, items[5]); /* interior of a free member too */
    for (int i = 0; i < 8; i++) {
        expect_foreign(p, &env, items[i] + 1);
        expect_foreign(p, &env, items[i] + 32);
        expect_foreign(p, &env, items[i] + 63);
    }
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void release_of_another_pools_member_returns_foreign(void **state) {
    (void)state;
    test_env env, env2;
    sp_desc d = test_env_desc(&env, "mine", 16);
    sp_desc d2 = test_env_desc(&env2, "theirs", 16);
    sp_pool *p = sp_pool_create(&d);
    sp_pool *q = sp_pool_create(&d2);
    void *mine = sp_acquire(p);
    void *theirs = sp_acquire(q);
    snapshot q_before;
    take(&q_before, q, &env2.hooks);
    expect_foreign(p, &env, theirs);
    expect_unchanged(&q_before, q, &env2.hooks);
    assert_true(sp_is_leased(q, theirs));
    assert_true(sp_is_leased(p, mine));
    sp_pool_destroy(p);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
    EXPECT_NO_LEAK(&env2.alloc);
}

/* Under ASan, a library that peeks at a header before the pointer, or at the pointed-to bytes,
   trips on these small heap blocks. */
static void release_of_a_heap_block_returns_foreign_without_reading_it(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "errs", 16);
    sp_pool *p = sp_pool_create(&d);
    sp_acquire(p);
    char *tiny = malloc(1);
    char *page = malloc(4096);
    assert_non_null(tiny);
    assert_non_null(page);
    expect_foreign(p, &env, tiny);
    expect_foreign(p, &env, page);
    expect_foreign(p, &env, page + 2048);
    assert_false(sp_is_leased(p, tiny));
    assert_true(sp_handle_is_null(sp_handle_of(p, tiny)));
    assert_null(sp_next(p, tiny));
    free(tiny);
    free(page);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* Pointers into the pool's own memory that are not members: the slot records after a chunk's
   members, and (fixed mode) the pool structure itself. */
static void release_of_the_pools_own_bookkeeping_returns_foreign(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "errs", 32);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    char *m[4];
    for (int i = 0; i < 4; i++) m[i] = sp_acquire(p);
    char *last = m[0];
    for (int i = 1; i < 4; i++)
        if (m[i] > last) last = m[i];
    expect_foreign(p, &env, last + 32); /* one past the chunk's last member */
    expect_foreign(p, &env, last + 64);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);

    static _Alignas(64) unsigned char buf[4096];
    d = test_env_desc(&env, "errs", 32);
    size_t size = sp_buffer_size(&d, 8);
    assert_true(size <= sizeof buf);
    d.buffer = buf;
    d.buffer_size = size;
    p = sp_pool_create(&d);
    sp_acquire(p);
    expect_foreign(p, &env, p);
    expect_foreign(p, &env, buf);
    expect_foreign(p, &env, buf + size - 1);
    sp_pool_destroy(p);
}

static void null_pool_arguments_are_harmless(void **state) {
    (void)state;
    int x = 0;
    assert_int_equal(sp_release(NULL, &x), SP_ERR_INVALID);
    assert_null(sp_acquire(NULL));
    assert_null(sp_acquire_with(NULL, &x));
    assert_null(sp_acquire_force(NULL, &x));
    assert_int_equal(sp_release_all(NULL), 0);
    assert_int_equal(sp_prewarm(NULL, 5), 0);
    assert_int_equal(sp_trim(NULL, 0), 0);
    assert_int_equal(sp_clear(NULL), 0);
    assert_int_equal(sp_set_max(NULL, 1), SP_ERR_INVALID);
    assert_true(sp_handle_is_null(sp_handle_of(NULL, &x)));
    assert_null(sp_resolve(NULL, sp_handle_null()));
    assert_false(sp_is_leased(NULL, &x));
    assert_null(sp_first(NULL));
    assert_null(sp_next(NULL, &x));
    assert_null(sp_pool_name(NULL));
    assert_int_equal(sp_buffer_size(NULL, 4), 0);
    sp_pool_destroy(NULL);
    assert_null(sp_pool_create(NULL));
}

typedef struct bad_case {
    const char *what;
    void (*mutate)(sp_desc *d, void *buffer);
} bad_case;

static _Alignas(64) unsigned char case_buffer[4096];

static void bad_item_size_zero(sp_desc *d, void *b) { (void)b; d->item_size = 0; }
static void bad_align_3(sp_desc *d, void *b) { (void)b; d->item_align = 3; }
static void bad_align_24(sp_desc *d, void *b) { (void)b; d->item_align = 24; }
static void bad_item_size_huge(sp_desc *d, void *b) { (void)b; d->item_size = SIZE_MAX; }
static void bad_item_size_wraps_chunk(sp_desc *d, void *b) {
    (void)b;
    d->item_size = SIZE_MAX / 2;
    d->chunk_items = 4;
}
static void bad_chunk_items_huge(sp_desc *d, void *b) { (void)b; d->chunk_items = SIZE_MAX / 8; }
static void bad_align_huge(sp_desc *d, void *b) {
    (void)b;
    d->item_align = (SIZE_MAX >> 1) + 1; /* a power of two no size can round up to */
}
static void bad_buffer_too_small_for_one(sp_desc *d, void *b) {
    d->buffer = b;
    d->buffer_size = 8;
}
static void bad_buffer_size_zero(sp_desc *d, void *b) {
    d->buffer = b;
    d->buffer_size = 0;
}
static void bad_initial_past_buffer(sp_desc *d, void *b) {
    sp_desc probe = *d;
    d->buffer = b;
    d->buffer_size = sp_buffer_size(&probe, 4);
    d->initial = 8;
}
static void bad_overflow_policy(sp_desc *d, void *b) {
    (void)b;
    d->overflow = (sp_overflow)7;
}
static void bad_half_allocator(sp_desc *d, void *b) {
    (void)b;
    d->allocator.free = NULL;
}
static void bad_grow_with_buffer(sp_desc *d, void *b) {
    d->buffer = b;
    d->buffer_size = sizeof case_buffer;
    d->overflow = SP_OVERFLOW_GROW;
}

static void invalid_descriptors_are_refused_with_a_logged_reason_and_no_leak(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {"item_size 0", bad_item_size_zero},
        {"align 3", bad_align_3},
        {"align 24", bad_align_24},
        {"item_size SIZE_MAX", bad_item_size_huge},
        {"chunk bytes overflow", bad_item_size_wraps_chunk},
        {"chunk_items overflow", bad_chunk_items_huge},
        {"align overflow", bad_align_huge},
        {"buffer too small for one member", bad_buffer_too_small_for_one},
        {"buffer of 0 bytes", bad_buffer_size_zero},
        {"initial past the buffer", bad_initial_past_buffer},
        {"GROW with a buffer", bad_grow_with_buffer},
        {"unknown overflow policy", bad_overflow_policy},
        {"alloc without free", bad_half_allocator},
    };
    char first_reason[512] = "";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "bad", 32);
        cases[i].mutate(&d, case_buffer);
        sp_pool *p = sp_pool_create(&d);
        if (p != NULL || env.log.errors + env.log.warnings < 1) {
            print_error("case \"%s\": pool %p, %d errors, %d warnings\n", cases[i].what, (void *)p,
                        env.log.errors, env.log.warnings);
            sp_pool_destroy(p);
            fail();
        }
        assert_string_equal(env.log.last_pool, "bad");
        assert_int_equal(env.hooks.created, 0);
        /* A reason, not a generic refusal: item_size 0 and align 3 do not read the same. */
        assert_true(strlen(env.log.last_message) > 0);
        if (i == 0) strcpy(first_reason, env.log.last_message);
        if (i == 1) assert_string_not_equal(env.log.last_message, first_reason);
        EXPECT_NO_LEAK(&env.alloc);
    }
    /* The same desc without the flaw is fine: the cases above fail for their one reason. */
    test_env env;
    sp_desc d = test_env_desc(&env, "good", 32);
    d.initial = 4;
    sp_desc probe = d;
    d.buffer = case_buffer;
    d.buffer_size = sp_buffer_size(&probe, 4);
    assert_true(d.buffer_size > 0 && d.buffer_size <= sizeof case_buffer);
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    EXPECT_STATS(p, .size = 4, .free = 4, .created = 4);
    sp_pool_destroy(p);
    assert_int_equal(env.log.errors + env.log.warnings, 0);
}

static void allocator_failure_during_creation_leaks_nothing(void **state) {
    (void)state;
    int refused = 0;
    for (uint64_t k = 1; k < 50; k++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "failing", 24);
        d.initial = 600;
        d.chunk_items = 256;
        env.alloc.fail_at = k;
        sp_pool *p = sp_pool_create(&d);
        if (p) {
            /* k is past the last allocation creation makes: it must have built everything. */
            assert_true(env.alloc.allocs < k);
            EXPECT_STATS(p, .size = 600, .free = 600, .created = 600);
            sp_pool_destroy(p);
            EXPECT_NO_LEAK(&env.alloc);
            break;
        }
        refused++;
        EXPECT_NO_LEAK(&env.alloc);
        /* Members built before the failure were disposed again. */
        assert_int_equal(env.hooks.disposed, env.hooks.created);
    }
    assert_true(refused >= 3); /* at least three chunks: three points of failure */
}

/* Makes the k-th allocation from now fail while 60 more members are acquired (crossing chunk,
   chunk-table and address-map growth), then checks that exactly one acquisition failed, that
   it changed nothing, and that the pool (and its registry, when it has one) works on. */
static bool fail_once_while_growing(uint64_t k, int in_registry) {
    enum { FIRST = 4, MORE = 60, AFTER = 5, TOTAL = FIRST + MORE - 1 + AFTER };
    test_env env;
    sp_desc d = test_env_desc(&env, "failing", 24);
    d.chunk_items = 4;
    sp_registry *reg = in_registry ? sp_registry_create() : NULL;
    sp_pool *p = reg ? sp_registry_add(reg, "failing", &d) : sp_pool_create(&d);
    assert_non_null(p);
    void *items[TOTAL + 2];
    size_t n = 0;
    for (int i = 0; i < FIRST; i++) items[n++] = sp_acquire(p);
    env.alloc.fail_at = env.alloc.allocs + k;
    int nulls = 0;
    for (int i = 0; i < MORE; i++) {
        sp_stats before;
        sp_stats_get(p, &before);
        size_t live = env.alloc.live_bytes;
        void *it = sp_acquire(p);
        if (!it) {
            nulls++;
            sp_stats after;
            sp_stats_get(p, &after);
            /* A bookkeeping table may have grown before the failing allocation: bytes may move,
               but only by what the allocator really holds for the pool. */
            assert_int_equal(after.bytes - before.bytes, env.alloc.live_bytes - live);
            after.bytes = before.bytes;
            assert_memory_equal(&before, &after, sizeof before);
            assert_true(sp__pool_check(p));
            continue;
        }
        items[n++] = it;
    }
    /* Past the growth's last allocation nothing failed: the caller has tried every point. */
    bool reached = env.alloc.allocs >= env.alloc.fail_at;
    if (nulls != (reached ? 1 : 0)) {
        print_error("failing allocation %llu: %d acquisitions failed\n", (unsigned long long)k, nulls);
        fail();
    }
    env.alloc.fail_at = 0;
    for (int i = 0; i < AFTER; i++) items[n++] = sp_acquire(p);
    /* All distinct, leased, resolvable, owned; counters agree. */
    assert_int_equal(n, TOTAL + (reached ? 0u : 1u));
    for (size_t i = 0; i < n; i++) {
        assert_non_null(items[i]);
        assert_true(sp_is_leased(p, items[i]));
        assert_ptr_equal(sp_resolve(p, sp_handle_of(p, items[i])), items[i]);
        if (reg) assert_ptr_equal(sp_registry_owner(reg, items[i]), p);
        for (size_t j = 0; j < i; j++) assert_ptr_not_equal(items[i], items[j]);
    }
    EXPECT_STATS(p, .size = n, .leased = n, .peak_leased = n, .created = n, .acquired = n);
    assert_int_equal(env.hooks.created, n);
    assert_int_equal(env.hooks.acquired, n);
    assert_int_equal(sp_release_all(p), n);
    if (reg) sp_registry_destroy(reg);
    else sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
    assert_int_equal(env.hooks.disposed, n);
    return reached;
}

/* Every allocation the growth makes fails once in turn (a custom allocator without virtual
   memory: the fallback's geometric ranges and the slot array; in a registry, its index too). */
static void allocator_failure_on_acquire_leaves_the_pool_consistent(void **state) {
    (void)state;
    uint64_t k = 1;
    while (fail_once_while_growing(k, 0)) k++;
    assert_true(k > 6); /* ranges of 8, 16, 32 and 64 members, each with its slots */
}

static void allocator_failure_in_a_registry_pool_leaves_both_consistent(void **state) {
    (void)state;
    uint64_t k = 1;
    while (fail_once_while_growing(k, 1)) k++;
    assert_true(k > 6);
}

static void acquire_force_and_grow_return_null_on_allocator_failure(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "failing", 24);
    d.chunk_items = 1;
    d.max = 1;
    d.overflow = SP_OVERFLOW_GROW;
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire_force(p, NULL);
    assert_non_null(a);
    env.alloc.fail_at = env.alloc.allocs + 1;
    assert_null(sp_acquire_force(p, NULL));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    env.alloc.fail_at = env.alloc.allocs + 1;
    assert_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    env.alloc.fail_at = 0;
    assert_non_null(sp_acquire(p));
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2,
                 .grown_past_max = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void prewarm_stops_on_allocator_failure(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "failing", 24);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, 4), 4);
    env.alloc.fail_at = env.alloc.allocs + 1;
    size_t built = sp_prewarm(p, 8);
    assert_true(built < 8);
    EXPECT_STATS(p, .size = 4 + built, .free = 4 + built, .created = 4 + built);
    assert_int_equal(env.hooks.created, (int)(4 + built));
    env.alloc.fail_at = 0;
    assert_int_equal(sp_prewarm(p, 8 - built), 8 - built);
    EXPECT_STATS(p, .size = 12, .free = 12, .created = 12);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(release_of_null_is_a_noop_returning_ok),
        cmocka_unit_test(double_release_returns_not_leased_and_changes_nothing),
        cmocka_unit_test(release_of_a_stack_pointer_returns_foreign),
        cmocka_unit_test(release_of_an_interior_pointer_returns_foreign),
        cmocka_unit_test(release_of_another_pools_member_returns_foreign),
        cmocka_unit_test(release_of_a_heap_block_returns_foreign_without_reading_it),
        cmocka_unit_test(release_of_the_pools_own_bookkeeping_returns_foreign),
        cmocka_unit_test(null_pool_arguments_are_harmless),
        cmocka_unit_test(invalid_descriptors_are_refused_with_a_logged_reason_and_no_leak),
        cmocka_unit_test(allocator_failure_during_creation_leaks_nothing),
        cmocka_unit_test(allocator_failure_on_acquire_leaves_the_pool_consistent),
        cmocka_unit_test(allocator_failure_in_a_registry_pool_leaves_both_consistent),
        cmocka_unit_test(acquire_force_and_grow_return_null_on_allocator_failure),
        cmocka_unit_test(prewarm_stops_on_allocator_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
