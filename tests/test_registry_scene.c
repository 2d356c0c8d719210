/* SPDX-License-Identifier: Zlib */
/* What a game's scene asks of its registry: teardown that releases (parents return their
   children) before it disposes, handles resolved without naming the pool, and name lookups that
   stay right (and O(1)) while pools come and go every level. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* ---- scene teardown: sp_registry_release_all ---------------------------------------------------- */

/* A ship takes two thrusters from their own pool when it spawns and gives them back when it is
   released: the parent-child pattern of a game's entities. */
typedef struct ship {
    void *thrusters[2];
} ship;

static sp_registry *ships_registry;
static int ship_release_errors;

static void ship_spawn(void *item, const void *arg, void *user) {
    (void)arg;
    (void)user;
    ship *s = (ship *)item;
    for (int i = 0; i < 2; i++) s->thrusters[i] = sp_spawn(ships_registry, "thrusters", NULL);
}

static void ship_release(void *item, void *user) {
    (void)user;
    ship *s = (ship *)item;
    for (int i = 0; i < 2; i++) {
        if (sp_registry_release(ships_registry, s->thrusters[i]) != SP_OK) ship_release_errors++;
        s->thrusters[i] = NULL;
    }
}

static void fleet_open(test_scene *s, sp_order order) {
    test_scene_open(s);
    ships_registry = s->reg;
    ship_release_errors = 0;
    /* parents first: a pass then reaches the thrusters after the ships returned theirs */
    assert_non_null(sp_registry_add(s->reg, "ships", &(sp_desc){.item_size = sizeof(ship), .order = order,
                                                                 .on_acquire = ship_spawn,
                                                                 .on_release = ship_release}));
    assert_non_null(sp_registry_add(s->reg, "thrusters", &(sp_desc){.item_size = 32, .order = order}));
    for (int i = 0; i < 5; i++) assert_non_null(sp_spawn(s->reg, "ships", NULL));
    /* and two thrusters nobody owns, which the pass releases itself */
    assert_non_null(sp_spawn(s->reg, "thrusters", NULL));
    assert_non_null(sp_spawn(s->reg, "thrusters", NULL));
}

static void release_all_lets_parents_return_children_so_destroy_reports_no_leak(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_scene s;
        fleet_open(&s, (sp_order)order);
        sp_stats st;
        sp_stats_get(sp_registry_get(s.reg, "thrusters"), &st);
        assert_int_equal(st.leased, 12);
        /* 5 ships, then the 2 thrusters they did not own; their 10 went back through on_release */
        assert_int_equal(sp_registry_release_all(s.reg), 7);
        assert_int_equal(ship_release_errors, 0);
        for (size_t i = 0; i < sp_registry_count(s.reg); i++) {
            sp_stats_get(sp_registry_pool_at(s.reg, i), &st);
            assert_int_equal(st.leased, 0);
        }
        int before = test_scene_lines(&s);
        sp_registry_destroy(s.reg);
        assert_int_equal(test_scene_lines(&s), before); /* no leak line */
        EXPECT_NO_LEAK(&s.alloc);
    }
}

/* The same scene without the release pass: the children are reported as leaked, which is what
   the game used to see. */
static void destroy_without_release_all_reports_the_children_as_leaked(void **state) {
    (void)state;
    test_scene s;
    fleet_open(&s, SP_ORDER_ACQUISITION);
    sp_registry_destroy(s.reg);
    assert_true(s.log.warnings >= 2); /* ships, then thrusters */
    assert_string_equal(s.log.last_pool, "thrusters");
    EXPECT_NO_LEAK(&s.alloc);
}

/* Two pools whose on_release each acquire from the other: every pass releases something and
   leaves something leased, forever. The passes are counted, so it ends. */
static sp_registry *pingpong_registry;
static void pingpong_a(void *item, void *user) {
    (void)item;
    (void)user;
    sp_spawn(pingpong_registry, "b", NULL);
}
static void pingpong_b(void *item, void *user) {
    (void)item;
    (void)user;
    sp_spawn(pingpong_registry, "a", NULL);
}
/* A pool whose on_release acquires a replacement from itself. */
static void replace_self(void *item, void *user) {
    (void)item;
    sp_spawn(pingpong_registry, (const char *)user, NULL);
}

static void release_all_ends_when_hooks_acquire_replacements(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    pingpong_registry = s.reg;
    sp_pool *a = sp_registry_add(s.reg, "a", &(sp_desc){.item_size = 16, .order = SP_ORDER_ACQUISITION,
                                                         .on_release = pingpong_a});
    sp_pool *b = sp_registry_add(s.reg, "b", &(sp_desc){.item_size = 16, .order = SP_ORDER_ACQUISITION,
                                                         .on_release = pingpong_b});
    sp_pool *c = sp_registry_add(s.reg, "c", &(sp_desc){.item_size = 16, .order = SP_ORDER_MEMORY,
                                                         .on_release = replace_self, .user = "c"});
    assert_non_null(sp_acquire(a));
    assert_non_null(sp_acquire(c));
    size_t released = sp_registry_release_all(s.reg);
    /* three pools: at most four passes, each releasing a's one, b's one and c's (at least) one */
    assert_true(released >= 4 * 3);
    assert_true(released <= 4 * 3 + 4 * 64); /* c's own walk is bounded by its slots */
    sp_stats st;
    sp_stats_get(a, &st);
    assert_int_equal(st.leased, 1); /* what the last pass's hooks acquired stays leased */
    sp_stats_get(b, &st);
    assert_int_equal(st.leased, 0);
    sp_stats_get(c, &st);
    assert_true(st.leased >= 1);
    sp_registry_destroy(s.reg); /* and is reported as leaked */
    assert_true(s.log.warnings >= 2);
    EXPECT_NO_LEAK(&s.alloc);
}

/* Hooks that run during sp_registry_release_all may call the registry: remove other pools (the
   walk copes with the list shrinking), add pools, but not start another release_all nor destroy
   the registry (one line each). */
typedef struct teardown_ctx {
    sp_registry *reg;
    int calls;
    size_t nested;
} teardown_ctx;

static void meddle(void *item, void *user) {
    (void)item;
    teardown_ctx *t = (teardown_ctx *)user;
    if (t->calls++ > 0) return;
    t->nested = sp_registry_release_all(t->reg);
    sp_registry_destroy(t->reg);
    assert_int_equal(sp_registry_remove(t->reg, "victim"), SP_OK);
    assert_non_null(sp_registry_add(t->reg, "late", &(sp_desc){.item_size = 8}));
    assert_non_null(sp_spawn(t->reg, "late", NULL));
}

static void registry_calls_from_hooks_during_release_all(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    teardown_ctx t = {.reg = s.reg, .nested = 99};
    sp_pool *m = sp_registry_add(s.reg, "meddler", &(sp_desc){.item_size = 16, .on_release = meddle, .user = &t});
    sp_pool *v = sp_registry_add(s.reg, "victim", &(sp_desc){.item_size = 16});
    sp_pool *k = sp_registry_add(s.reg, "kept", &(sp_desc){.item_size = 16});
    for (int i = 0; i < 3; i++) {
        assert_non_null(sp_acquire(m));
        assert_non_null(sp_acquire(v));
        assert_non_null(sp_acquire(k));
    }
    int warnings = s.log.warnings;
    size_t released = sp_registry_release_all(s.reg);
    assert_int_equal(t.nested, 0);
    /* the nested release_all, the destroy, and the victim's leak report (one line per site at
       SP_DEBUG) */
    assert_true(s.log.warnings - warnings >= 3);
    assert_int_equal(sp_registry_count(s.reg), 3); /* meddler, kept, late */
    assert_null(sp_registry_get(s.reg, "victim"));
    /* meddler's 3, kept's 3 and late's 1 (on the next pass, or this one) */
    assert_int_equal(released, 7);
    for (size_t i = 0; i < sp_registry_count(s.reg); i++) {
        sp_stats st;
        sp_stats_get(sp_registry_pool_at(s.reg, i), &st);
        assert_int_equal(st.leased, 0);
    }
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

static void release_all_on_an_empty_or_null_registry(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    assert_int_equal(sp_registry_release_all(s.reg), 0);
    sp_registry_add(s.reg, "idle", &(sp_desc){.item_size = 8, .initial = 4});
    assert_int_equal(sp_registry_release_all(s.reg), 0);
    assert_int_equal(sp_registry_release_all(NULL), 0); /* one line on stderr */
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- sp_registry_resolve -------------------------------------------------------------------- */

static void resolve_finds_the_member_in_whichever_pool_issued_the_handle(void **state) {
    (void)state;
    enum { POOLS = 40 }; /* past the tables' first sizes */
    test_scene s;
    test_scene_open(&s);
    sp_pool *pools[POOLS];
    void *members[POOLS];
    sp_handle handles[POOLS];
    for (int i = 0; i < POOLS; i++) {
        char name[16];
        snprintf(name, sizeof name, "pool%d", i);
        pools[i] = sp_registry_add(s.reg, name, &(sp_desc){.item_size = 16 + (size_t)i});
        assert_non_null(pools[i]);
        members[i] = sp_acquire_handle(pools[i], NULL, &handles[i]);
        assert_non_null(members[i]);
    }
    for (int i = 0; i < POOLS; i++) assert_ptr_equal(sp_registry_resolve(s.reg, handles[i]), members[i]);

    int before = test_scene_lines(&s);
    assert_null(sp_registry_resolve(s.reg, sp_handle_null()));
    /* stale: released */
    assert_int_equal(sp_release(pools[3], members[3]), SP_OK);
    assert_null(sp_registry_resolve(s.reg, handles[3]));
    /* a pool that left the registry, and one that never was in it: silently NULL */
    assert_int_equal(sp_release(pools[7], members[7]), SP_OK);
    assert_int_equal(sp_registry_remove(s.reg, "pool7"), SP_OK);
    assert_null(sp_registry_resolve(s.reg, handles[7]));
    sp_pool *outside = sp_pool_create(&(sp_desc){.item_size = 16});
    sp_handle hout;
    assert_non_null(sp_acquire_handle(outside, NULL, &hout));
    assert_null(sp_registry_resolve(s.reg, hout));
    assert_int_equal(test_scene_lines(&s), before);
    /* the others still resolve after the removal shuffled the tables */
    for (int i = 0; i < POOLS; i++)
        if (i != 3 && i != 7) assert_ptr_equal(sp_registry_resolve(s.reg, handles[i]), members[i]);
    /* a forged id with a registered tag is the pool's to report */
    sp_handle forged = {handles[5].id + ((uint64_t)1000 << TEST_LIFE_SHIFT)};
    assert_null(sp_registry_resolve(s.reg, forged));
    assert_int_equal(test_scene_lines(&s), before + 1);
    assert_string_equal(s.log.last_pool, "pool5");
    sp_pool_destroy(outside);
    for (int i = 0; i < POOLS; i++)
        if (i != 3 && i != 7) sp_release(pools[i], members[i]);
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- names: O(1) lookups that stay right while pools come and go ----------------------------- */

static void names_stay_found_through_add_and_remove_churn(void **state) {
    (void)state;
    enum { NAMES = 300, ROUNDS = 4000 };
    test_scene s;
    test_scene_open(&s);
    sp_pool *model[NAMES] = {0}; /* what the registry should answer for name i */
    size_t live = 0;
    uint32_t rng = 12345u;
    for (int round = 0; round < ROUNDS; round++) {
        int i = (int)(test_rand(&rng) % NAMES);
        char name[16];
        snprintf(name, sizeof name, "e%d", i);
        if (model[i]) {
            assert_int_equal(sp_registry_remove(s.reg, name), SP_OK);
            model[i] = NULL;
            live--;
        } else {
            model[i] = sp_registry_add(s.reg, name, &(sp_desc){.item_size = 8});
            assert_non_null(model[i]);
            live++;
        }
        if (round % 97 == 0 || round == ROUNDS - 1) {
            assert_int_equal(sp_registry_count(s.reg), live);
            for (int k = 0; k < NAMES; k++) {
                snprintf(name, sizeof name, "e%d", k);
                assert_ptr_equal(sp_registry_get(s.reg, name), model[k]);
                if (model[k]) {
                    sp_handle h;
                    void *m = sp_acquire_handle(model[k], NULL, &h);
                    assert_ptr_equal(sp_registry_resolve(s.reg, h), m);
                    assert_ptr_equal(sp_registry_owner(s.reg, m), model[k]);
                    assert_int_equal(sp_registry_release(s.reg, m), SP_OK);
                }
            }
        }
    }
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* The list and both tables grow together: each of those allocations failing refuses the add,
   keeps every pool found, leaks nothing, and the next add succeeds. */
static void add_that_cannot_grow_the_tables_fails_cleanly(void **state) {
    (void)state;
    for (uint64_t fail = 1; fail <= 4; fail++) {
        test_scene s;
        test_scene_open(&s);
        test_alloc pools_alloc = {0};
        sp_desc d = {.item_size = 16, .allocator = test_alloc_make(&pools_alloc)};
        sp_pool *pools[9];
        char name[16];
        for (int i = 0; i < 8; i++) {
            snprintf(name, sizeof name, "p%d", i);
            pools[i] = sp_registry_add(s.reg, name, &d);
            assert_non_null(pools[i]);
        }
        size_t bytes = s.alloc.live_bytes;
        s.alloc.allocs = 0;
        s.alloc.fail_at = fail; /* 1..3: list, names, tags; 4: the name's copy */
        int errors = s.log.errors;
        assert_null(sp_registry_add(s.reg, "p8", &d));
        assert_int_equal(s.log.errors, errors + 1);
        assert_true(test_log_last_has(&s.log, "out of memory"));
        if (fail <= 3) assert_int_equal(s.alloc.live_bytes, bytes); /* (4: the grown tables stay) */
        assert_int_equal(sp_registry_count(s.reg), 8);
        assert_null(sp_registry_get(s.reg, "p8"));
        for (int i = 0; i < 8; i++) {
            snprintf(name, sizeof name, "p%d", i);
            assert_ptr_equal(sp_registry_get(s.reg, name), pools[i]);
        }
        s.alloc.fail_at = 0;
        pools[8] = sp_registry_add(s.reg, "p8", &d);
        assert_non_null(pools[8]);
        for (int i = 0; i < 9; i++) {
            sp_handle h;
            void *m = sp_acquire_handle(pools[i], NULL, &h);
            assert_ptr_equal(sp_registry_resolve(s.reg, h), m);
            snprintf(name, sizeof name, "p%d", i);
            assert_ptr_equal(sp_registry_get(s.reg, name), pools[i]);
            sp_release(pools[i], m);
        }
        sp_registry_destroy(s.reg);
        EXPECT_NO_LEAK(&s.alloc);
        EXPECT_NO_LEAK(&pools_alloc);
    }
}

int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(release_all_lets_parents_return_children_so_destroy_reports_no_leak),
        cmocka_unit_test(destroy_without_release_all_reports_the_children_as_leaked),
        cmocka_unit_test(release_all_ends_when_hooks_acquire_replacements),
        cmocka_unit_test(registry_calls_from_hooks_during_release_all),
        cmocka_unit_test(release_all_on_an_empty_or_null_registry),
        cmocka_unit_test(resolve_finds_the_member_in_whichever_pool_issued_the_handle),
        cmocka_unit_test(names_stay_found_through_add_and_remove_churn),
        cmocka_unit_test(add_that_cannot_grow_the_tables_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
