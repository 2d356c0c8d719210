/* SPDX-License-Identifier: Zlib */
/* Which member comes out first, and where leaks say they came from: prewarmed and built-on-demand
   pools hand out members lowest address first, so a memory-order RECLAIM of a pool filled in
   order takes the oldest (the guide, section 7); a wrapper forwards its caller's site to the leak
   report (the guide's porting section); without debug records the report says how to get them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <string.h>

typedef struct entity {
    float x, y;
    int kind;
} entity;

enum { N = 32 };

static void acquires_in_address_order(sp_pool *p, entity **got) {
    for (int i = 0; i < N; i++) {
        got[i] = (entity *)sp_acquire(p);
        assert_non_null(got[i]);
        if (i > 0) assert_true((uintptr_t)got[i] > (uintptr_t)got[i - 1]);
    }
}

/* `.initial` builds the members at creation: they come out lowest address first. */
static void prewarmed_pool_hands_out_members_in_address_order(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "prewarmed", sizeof(entity));
    d.initial = N;
    sp_pool *p = sp_pool_create(&d);
    entity *got[N];
    acquires_in_address_order(p, got);
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* sp_prewarm later, and in several calls: each batch comes out in address order too, and a
   fixed-buffer pool does the same. */
static void sp_prewarm_and_fixed_buffers_hand_out_in_address_order(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "later", sizeof(entity));
    d.chunk_items = 64;
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, N / 2), N / 2);
    assert_int_equal(sp_prewarm(p, N / 2), N / 2);
    entity *got[N];
    for (int i = 0; i < N / 2; i++) got[i] = (entity *)sp_acquire(p);
    for (int i = 1; i < N / 2; i++) assert_true((uintptr_t)got[i] > (uintptr_t)got[i - 1]);
    sp_release_all(p);
    sp_pool_destroy(p);

    static unsigned char buffer[8192];
    sp_desc f = test_env_desc(&env, "fixed", sizeof(entity));
    f.buffer = buffer;
    f.buffer_size = sizeof buffer;
    f.initial = N;
    p = sp_pool_create(&f);
    acquires_in_address_order(p, got);
    sp_release_all(p);
    sp_pool_destroy(p);
}

/* Without prewarming, members are built as needed, lowest address first. */
static void built_on_demand_pool_hands_out_members_in_address_order(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "on demand", sizeof(entity));
    sp_pool *p = sp_pool_create(&d);
    entity *got[N];
    acquires_in_address_order(p, got);
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* The guide's claim: a memory-order RECLAIM goes round robin over the slots, which in a saturated
   pool filled in order is the oldest too, prewarmed or not. */
static void memory_order_reclaim_takes_the_oldest_of_a_pool_filled_in_order(void **state) {
    (void)state;
    for (int prewarmed = 0; prewarmed < 2; prewarmed++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "debris", sizeof(entity));
        d.max = N;
        d.initial = prewarmed ? N : 0;
        d.overflow = SP_OVERFLOW_RECLAIM;
        d.order = SP_ORDER_MEMORY;
        sp_pool *p = sp_pool_create(&d);
        entity *got[N];
        for (int i = 0; i < N; i++) {
            got[i] = (entity *)sp_acquire(p);
            got[i]->kind = i; /* acquisition number */
        }
        /* Each reclaim takes the oldest remaining acquisition. */
        for (int i = 0; i < N; i++) {
            entity *e = (entity *)sp_acquire(p);
            assert_ptr_equal(e, got[i]);
            assert_int_equal(e->kind, i);
            e->kind = N + i;
        }
        sp_release_all(p);
        sp_pool_destroy(p);
    }
}

/* ---- sites through a wrapper (the guide's porting section) ---------------------------------- */

/* A game's constructor. The _at function takes the caller's site and hands it to the library's
   _at call; the macro supplies it. (The plain sp_acquire_with inside would record this line.) */
static entity *entity_create_at(sp_pool *pool, float x, float y, const char *file, int line) {
    entity *e = (entity *)sp_acquire_with_at(pool, NULL, file, line);
    if (e) {
        e->x = x;
        e->y = y;
    }
    return e;
}
#define entity_create(...) entity_create_at(__VA_ARGS__, __FILE__, __LINE__)

typedef struct site_seen {
    const char *file;
    int line;
    int calls;
} site_seen;

static void note_site(void *item, const char *file, int line, void *user) {
    site_seen *s = (site_seen *)user;
    (void)item;
    s->file = file;
    s->line = line;
    s->calls++;
}

static void leak_report_names_the_wrappers_caller(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "entities", sizeof(entity));
    sp_pool *p = sp_pool_create(&d);
    int caller_line = __LINE__; entity_create(p, 1.0f, 2.0f); /* the caller's line */
    site_seen seen = {NULL, 0, 0};
    assert_int_equal(sp_leased_each(p, note_site, &seen), 1);
    assert_int_equal(seen.calls, 1);
#if SP_DEBUG
    char want[256];
    snprintf(want, sizeof want, "1 leaked, acquired at %s:%d", __FILE__, caller_line);
    assert_string_equal(seen.file, __FILE__);
    assert_int_equal(seen.line, caller_line);
    sp_leak_report(p, SP_LOG_WARN);
    assert_true(test_log_last_has(&env.log, "1 leased, acquired at"));
    assert_true(test_log_last_has(&env.log, want + strlen("1 leaked, acquired at ")));
    sp_pool_destroy(p); /* leaks it on purpose */
    assert_true(test_log_last_has(&env.log, want));
#else
    (void)caller_line;
    assert_null(seen.file);
    assert_int_equal(seen.line, 0);
    sp_leak_report(p, SP_LOG_WARN);
    assert_string_equal(env.log.last_message, "1 leased (sites not recorded: build with SP_DEBUG=1)");
    sp_pool_destroy(p);
    assert_string_equal(env.log.last_message, "1 leaked (sites not recorded: build with SP_DEBUG=1)");
#endif
    assert_null(strstr(env.log.last_message, "unknown site"));
}

/* With debug records, a member acquired through a plain call (no site) is reported as such,
   not as "an unknown site:0". */
static void leak_without_a_site_says_so(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "plain", sizeof(entity));
    sp_pool *p = sp_pool_create(&d);
    assert_non_null((sp_acquire)(p)); /* the function, not the site macro */
    sp_pool_destroy(p);
    assert_null(strstr(env.log.last_message, "unknown site"));
    assert_null(strstr(env.log.last_message, ":0"));
#if SP_DEBUG
    assert_true(test_log_last_has(&env.log, "1 leaked, acquired without a site"));
#else
    assert_true(test_log_last_has(&env.log, "sites not recorded: build with SP_DEBUG=1"));
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prewarmed_pool_hands_out_members_in_address_order),
        cmocka_unit_test(sp_prewarm_and_fixed_buffers_hand_out_in_address_order),
        cmocka_unit_test(built_on_demand_pool_hands_out_members_in_address_order),
        cmocka_unit_test(memory_order_reclaim_takes_the_oldest_of_a_pool_filled_in_order),
        cmocka_unit_test(leak_report_names_the_wrappers_caller),
        cmocka_unit_test(leak_without_a_site_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
