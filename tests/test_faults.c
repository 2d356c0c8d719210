/* SPDX-License-Identifier: Zlib */
/* Allocator fault injection: every scenario that allocates is run once for every N, with the
   N-th allocation failing, until N passes the number of calls the scenario makes. Each failure
   must surface as NULL, SP_ERR_NOMEM or fewer members built; nothing may leak (the counting
   allocator is back to zero after destroy, and LeakSanitizer checks the rest in the ASan build);
   and the pool must stay consistent and usable once the allocator recovers.

   The pools' memory goes through the counting allocator of testutil. The registry's own tables
   come from the C library, so this file also wraps malloc/calloc/realloc at link time
   (-Wl,--wrap, see tests/CMakeLists.txt): calls made by the library's objects, and only those,
   pass through sf_libc_* below and can be failed the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
   Failing the C library's allocator (for the registry)
   ------------------------------------------------------------------------------------------ */

static uint64_t sf_libc_calls;   /* counted while sf_libc_fail_at != 0 */
static uint64_t sf_libc_fail_at; /* 0: never fail */

static int sf_libc_should_fail(void) {
    if (sf_libc_fail_at == 0) return 0;
    return ++sf_libc_calls == sf_libc_fail_at;
}

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);

void *__wrap_malloc(size_t size) { return sf_libc_should_fail() ? NULL : __real_malloc(size); }
void *__wrap_calloc(size_t n, size_t size) { return sf_libc_should_fail() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *ptr, size_t size) {
    return sf_libc_should_fail() ? NULL : __real_realloc(ptr, size);
}

static void sf_libc_arm(uint64_t n) {
    sf_libc_calls = 0;
    sf_libc_fail_at = n;
}

/* ---------------------------------------------------------------------------------------------
   Checks
   ------------------------------------------------------------------------------------------ */

/* The invariants that must hold whatever failed: counts agree with each other, with the hooks
   and with what iteration and handles show. */
static void sf_expect_consistent(const sp_pool *p, const test_env *env) {
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.size, s.leased + s.free);
    assert_true(s.created - s.disposed == s.size);
    assert_int_equal(env->hooks.created, (int)s.created);
    assert_int_equal(env->hooks.disposed, (int)s.disposed);
    assert_int_equal(env->hooks.acquired, (int)s.acquired);
    assert_int_equal(env->hooks.released, (int)s.released);
    assert_int_equal(env->hooks.create_saw_dirty, 0);
    if (s.max) assert_true(s.size <= s.max);
    size_t n = 0;
    for (void *it = sp_first(p); it; it = sp_next(p, it)) {
        assert_true(sp_is_leased(p, it));
        assert_ptr_equal(sp_resolve(p, sp_handle_of(p, it)), it);
        n++;
        assert_true(n <= s.leased);
    }
    assert_int_equal(n, s.leased);
    if (s.size > 0) assert_true(env->alloc.live_bytes > 0);
}

/* With the allocator healthy again the pool works: it hands out `more` new members on top of
   what it has, they are writable, and they go back. */
static void sf_expect_usable(sp_pool *p, test_env *env, size_t more) {
    env->alloc.fail_at = 0;
    sp_stats s;
    sp_stats_get(p, &s);
    void *got[64];
    size_t want = s.free + more;
    assert_true(want <= 64);
    for (size_t i = 0; i < want; i++) {
        got[i] = sp_acquire(p);
        assert_non_null(got[i]);
        memset(got[i], 0x5A, 16);
    }
    sf_expect_consistent(p, env);
    for (size_t i = want; i-- > 0;) assert_int_equal(sp_release(p, got[i]), SP_OK);
    sf_expect_consistent(p, env);
}

/* Destroys the pool and checks that every byte and every member went back. */
static void sf_destroy_clean(sp_pool *p, test_env *env) {
    sp_pool_destroy(p);
    assert_int_equal(env->hooks.created, env->hooks.disposed);
    EXPECT_NO_LEAK(&env->alloc);
}

static sp_desc sf_desc(test_env *env, const char *name) {
    sp_desc d = test_env_desc(env, name, 16);
    d.chunk_items = 3; /* many small chunks: many allocation points */
    return d;
}

/* Runs scenario(N) for N = 1, 2, ... until a run makes fewer than N allocator calls (so no
   failure was injected), and checks that the scenario took at least one failure on the way. */
typedef int (*sf_scenario)(uint64_t fail_at); /* returns 1 when the failure was hit */

static void sf_run_for_every_n(sf_scenario scenario) {
    uint64_t n = 1;
    int hits = 0;
    for (; n < 10000; n++) {
        if (!scenario(n)) break;
        hits++;
    }
    assert_true(n < 10000);
    assert_true(hits > 0);
}

/* ---------------------------------------------------------------------------------------------
   Scenarios
   ------------------------------------------------------------------------------------------ */

/* sp_pool_create with `initial` members: all or nothing. */
static int sf_create_with_initial(uint64_t fail_at) {
    test_env env;
    sp_desc d = sf_desc(&env, "create");
    d.initial = 10;
    env.alloc.fail_at = fail_at;
    sp_pool *p = sp_pool_create(&d);
    int hit = env.alloc.allocs >= fail_at;
    if (hit) {
        assert_null(p);
        assert_int_equal(env.hooks.created, env.hooks.disposed);
        EXPECT_NO_LEAK(&env.alloc);
        return 1;
    }
    assert_non_null(p);
    EXPECT_STATS(p, .size = 10, .free = 10, .created = 10);
    sf_expect_usable(p, &env, 4);
    sf_destroy_clean(p, &env);
    return 0;
}

/* Growth by acquisition: a failed acquire returns NULL and changes nothing; the next succeeds. */
static int sf_growth_by_acquire(uint64_t fail_at) {
    test_env env;
    sp_desc d = sf_desc(&env, "growth");
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    env.alloc.fail_at = env.alloc.allocs + fail_at;
    void *m[20];
    size_t n = 0, nulls = 0;
    while (n < 20) {
        sp_stats before, after;
        sp_stats_get(p, &before);
        void *it = sp_acquire(p);
        sp_stats_get(p, &after);
        if (!it) {
            nulls++;
            assert_int_equal(nulls, 1);
            assert_true(env.alloc.allocs >= env.alloc.fail_at);
            assert_int_equal(after.size, before.size);
            assert_int_equal(after.leased, before.leased);
            assert_int_equal(after.created, before.created);
            assert_int_equal(after.acquired, before.acquired);
            assert_int_equal(after.dropped, before.dropped);
            sf_expect_consistent(p, &env);
            continue;
        }
        m[n++] = it;
    }
    int hit = env.alloc.allocs >= env.alloc.fail_at;
    assert_true(nulls <= (hit ? 1u : 0u));
    sf_expect_consistent(p, &env);
    EXPECT_STATS(p, .size = 20, .leased = 20, .peak_leased = 20, .created = 20, .acquired = 20);
    for (size_t i = 0; i < n; i++) assert_int_equal(sp_release(p, m[i]), SP_OK);
    sf_expect_usable(p, &env, 5);
    sf_destroy_clean(p, &env);
    return hit;
}

/* sp_prewarm builds fewer members when the allocator fails, and all of them are real. */
static int sf_prewarm(uint64_t fail_at) {
    test_env env;
    sp_desc d = sf_desc(&env, "prewarm");
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    env.alloc.fail_at = env.alloc.allocs + fail_at;
    size_t built = sp_prewarm(p, 20);
    int hit = env.alloc.allocs >= env.alloc.fail_at;
    if (hit) assert_true(built < 20);
    else assert_int_equal(built, 20);
    sf_expect_consistent(p, &env);
    EXPECT_STATS(p, .size = built, .free = built, .created = built);
    /* The rest can be built once the allocator recovers. */
    env.alloc.fail_at = 0;
    assert_int_equal(sp_prewarm(p, 20 - built), 20 - built);
    sf_expect_usable(p, &env, 3);
    sf_destroy_clean(p, &env);
    return hit;
}

/* Trim hands chunks back (and may reshape its own tables), then the pool grows again; a failure
   anywhere in between is survived. */
static int sf_trim_then_regrow(uint64_t fail_at) {
    test_env env;
    sp_desc d = sf_desc(&env, "trim");
    d.max = 30;
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    void *m[30];
    for (int i = 0; i < 24; i++) {
        m[i] = sp_acquire(p);
        assert_non_null(m[i]);
    }
    for (int i = 0; i < 24; i += 2) sp_release(p, m[i]); /* every other: chunks half empty */
    env.alloc.fail_at = env.alloc.allocs + fail_at;
    assert_int_equal(sp_trim(p, 0), 12);
    sf_expect_consistent(p, &env);
    for (int i = 1; i < 24; i += 2) sp_release(p, m[i]);
    assert_int_equal(sp_trim(p, 2), 10);
    sf_expect_consistent(p, &env);
    size_t got = 0, nulls = 0;
    while (got < 30 && nulls < 2) {
        void *it = sp_acquire(p);
        if (!it) {
            nulls++;
            assert_true(env.alloc.allocs >= env.alloc.fail_at);
            sf_expect_consistent(p, &env);
            continue;
        }
        m[got++] = it;
    }
    assert_true(nulls <= 1);
    assert_int_equal(got, 30);
    assert_null(sp_acquire(p)); /* at max: a drop, not a failure */
    sf_expect_consistent(p, &env);
    int hit = env.alloc.allocs >= env.alloc.fail_at;
    for (size_t i = 0; i < got; i++) assert_int_equal(sp_release(p, m[i]), SP_OK);
    assert_int_equal(sp_clear(p), 30);
    sf_expect_usable(p, &env, 6);
    sf_destroy_clean(p, &env);
    return hit;
}

/* sp_registry_add: the pool's own allocation fails; the registry is unchanged and the name is
   free for the next try. */
static int sf_registry_add(uint64_t fail_at) {
    sp_registry *reg = sp_registry_create();
    assert_non_null(reg);
    test_env env_a, env_b;
    sp_desc da = sf_desc(&env_a, NULL);
    da.initial = 5;
    assert_non_null(sp_registry_add(reg, "a", &da));
    sp_desc db = sf_desc(&env_b, NULL);
    db.initial = 7;
    env_b.alloc.fail_at = fail_at;
    sp_pool *b = sp_registry_add(reg, "b", &db);
    int hit = env_b.alloc.allocs >= fail_at;
    if (hit) {
        assert_null(b);
        assert_int_equal(sp_registry_count(reg), 1);
        assert_null(sp_registry_get(reg, "b"));
        assert_int_equal(env_b.hooks.created, env_b.hooks.disposed);
        EXPECT_NO_LEAK(&env_b.alloc);
        /* the hooks counted the refused pool's members too: start afresh for the next one */
        size_t item_size = env_b.hooks.item_size;
        memset(&env_b.hooks, 0, sizeof env_b.hooks);
        env_b.hooks.item_size = item_size;
        env_b.alloc.fail_at = 0;
        b = sp_registry_add(reg, "b", &db);
    }
    assert_non_null(b);
    assert_ptr_equal(sp_registry_get(reg, "b"), b);
    assert_int_equal(sp_registry_count(reg), 2);
    void *x = sp_spawn(reg, "b", NULL);
    assert_ptr_equal(sp_registry_owner(reg, x), b);
    assert_int_equal(sp_registry_release(reg, x), SP_OK);
    sf_expect_consistent(b, &env_b);
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env_a.alloc);
    EXPECT_NO_LEAK(&env_b.alloc);
    return hit;
}

/* The registry's own tables (names, the pool list, the address ranges that sp_registry_owner
   searches) grow through the C library: fail each of those calls in turn while pools are added
   and grown. Every member must still be found by owner lookup afterwards. */
static int sf_registry_growth(uint64_t fail_at) {
    enum { POOLS = 9, EACH = 7 };
    static const char *names[POOLS] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"};
    test_env env[POOLS];
    sp_pool *pools[POOLS] = {0};
    void *m[POOLS][EACH];
    memset(m, 0, sizeof m);

    sf_libc_arm(fail_at);
    sp_registry *reg = sp_registry_create();
    if (!reg) {
        sf_libc_arm(0);
        return 1; /* the registry itself could not be made: NULL is the answer */
    }
    size_t added = 0;
    for (int i = 0; i < POOLS; i++) {
        sp_desc d = sf_desc(&env[i], NULL);
        d.chunk_items = 2;
        pools[i] = sp_registry_add(reg, names[i], &d);
        if (!pools[i]) {
            /* a refused add leaves nothing behind */
            assert_null(sp_registry_get(reg, names[i]));
            assert_int_equal(sp_registry_count(reg), added);
            EXPECT_NO_LEAK(&env[i].alloc);
            continue;
        }
        added++;
        for (int k = 0; k < EACH; k++) {
            m[i][k] = sp_acquire(pools[i]);
            if (!m[i][k]) sf_expect_consistent(pools[i], &env[i]);
        }
    }
    int hit = sf_libc_calls >= fail_at;
    sf_libc_arm(0);

    /* Whatever failed, every member that was handed out is found and can be released. */
    assert_int_equal(sp_registry_count(reg), added);
    for (int i = 0; i < POOLS; i++) {
        if (!pools[i]) continue;
        assert_ptr_equal(sp_registry_get(reg, names[i]), pools[i]);
        for (int k = 0; k < EACH; k++) {
            if (!m[i][k]) continue;
            assert_ptr_equal(sp_registry_owner(reg, m[i][k]), pools[i]);
            assert_int_equal(sp_registry_release(reg, m[i][k]), SP_OK);
        }
        sf_expect_consistent(pools[i], &env[i]);
        sf_expect_usable(pools[i], &env[i], 3);
        void *again = sp_spawn(reg, names[i], NULL);
        assert_non_null(again);
        assert_ptr_equal(sp_registry_owner(reg, again), pools[i]);
    }
    sp_registry_destroy(reg);
    for (int i = 0; i < POOLS; i++) {
        if (!pools[i]) continue;
        assert_int_equal(env[i].hooks.created, env[i].hooks.disposed);
        EXPECT_NO_LEAK(&env[i].alloc);
    }
    return hit;
}

/* ---------------------------------------------------------------------------------------------
   Tests
   ------------------------------------------------------------------------------------------ */

static void create_with_initial_is_all_or_nothing_for_every_failing_call(void **state) {
    (void)state;
    sf_run_for_every_n(sf_create_with_initial);
}

static void failed_growth_returns_null_and_changes_nothing(void **state) {
    (void)state;
    sf_run_for_every_n(sf_growth_by_acquire);
}

static void failed_prewarm_builds_fewer_and_stays_consistent(void **state) {
    (void)state;
    sf_run_for_every_n(sf_prewarm);
}

static void trim_then_regrow_survives_every_failing_call(void **state) {
    (void)state;
    sf_run_for_every_n(sf_trim_then_regrow);
}

static void failed_registry_add_leaves_the_registry_unchanged(void **state) {
    (void)state;
    sf_run_for_every_n(sf_registry_add);
}

static void registry_growth_survives_every_failing_libc_call(void **state) {
    (void)state;
    sf_run_for_every_n(sf_registry_growth);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_with_initial_is_all_or_nothing_for_every_failing_call),
        cmocka_unit_test(failed_growth_returns_null_and_changes_nothing),
        cmocka_unit_test(failed_prewarm_builds_fewer_and_stays_consistent),
        cmocka_unit_test(trim_then_regrow_survives_every_failing_call),
        cmocka_unit_test(failed_registry_add_leaves_the_registry_unchanged),
        cmocka_unit_test(registry_growth_survives_every_failing_libc_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
