/* SPDX-License-Identifier: Zlib */
/* Registry: named pools a scene owns. Adding, refusing duplicates, lookup and spawn by name,
   finding a member's pool from the pointer alone, releasing through the registry, removal, and
   destroying every pool with the registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void added_pool_is_found_by_name_and_named_after_it(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    assert_non_null(reg);
    sp_desc d = test_env_desc(&env, NULL, 16);
    sp_pool *bullets = sp_registry_add(reg, "bullets", &d);
    assert_non_null(bullets);
    assert_string_equal(sp_pool_name(bullets), "bullets");
    assert_ptr_equal(sp_registry_get(reg, "bullets"), bullets);
    char key[] = "sparks";
    sp_pool *sparks = sp_registry_add(reg, key, &d);
    strcpy(key, "XXXXXX"); /* the registry keeps its own copy of the name */
    assert_ptr_equal(sp_registry_get(reg, "sparks"), sparks);
    assert_null(sp_registry_get(reg, "XXXXXX"));
    assert_null(sp_registry_get(reg, "bullet"));
    assert_null(sp_registry_get(reg, "unknown"));
    assert_int_equal(sp_registry_count(reg), 2);
    assert_ptr_equal(sp_registry_pool_at(reg, 0), bullets);
    assert_ptr_equal(sp_registry_pool_at(reg, 1), sparks);
    assert_null(sp_registry_pool_at(reg, 2));
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
}

static void duplicate_and_empty_names_are_refused(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 16);
    sp_pool *first = sp_registry_add(reg, "enemies", &d);
    assert_non_null(first);
    sp_acquire(first);
    size_t blocks = env.alloc.live_blocks;
    d.initial = 3;
    assert_null(sp_registry_add(reg, "enemies", &d));
    assert_int_equal(env.alloc.live_blocks, blocks); /* nothing kept */
    assert_int_equal(env.hooks.created - env.hooks.disposed, 1);
    assert_ptr_equal(sp_registry_get(reg, "enemies"), first);
    EXPECT_STATS(first, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    assert_null(sp_registry_add(reg, "", &d));
    assert_null(sp_registry_add(reg, NULL, &d));
    assert_int_equal(sp_registry_count(reg), 1);
    /* An invalid desc is refused too. */
    sp_desc bad = d;
    bad.item_size = 0;
    assert_null(sp_registry_add(reg, "bad", &bad));
    assert_null(sp_registry_get(reg, "bad"));
    assert_int_equal(sp_registry_count(reg), 1);
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
}

static void spawn_acquires_from_the_named_pool_with_arg(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 16);
    sp_pool *p = sp_registry_add(reg, "bullets", &d);
    int arg = 5;
    void *b = sp_spawn(reg, "bullets", &arg);
    assert_non_null(b);
    assert_ptr_equal(env.hooks.last_arg, &arg);
    assert_true(sp_is_leased(p, b));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    assert_null(sp_spawn(reg, "missiles", &arg));
    assert_null(sp_spawn(reg, "", NULL));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
}

static void owner_finds_the_pool_a_member_came_from(void **state) {
    (void)state;
    enum { POOLS = 12, EACH = 40 };
    test_env env[POOLS];
    sp_registry *reg = sp_registry_create();
    sp_pool *pools[POOLS];
    char *items[POOLS][EACH];
    for (int i = 0; i < POOLS; i++) {
        char name[16];
        snprintf(name, sizeof name, "pool%d", i);
        sp_desc d = test_env_desc(&env[i], NULL, (size_t)(8 + 8 * (i % 4)));
        d.chunk_items = (size_t)(1 + i % 5); /* many chunks, interleaved between pools */
        d.allocator.alloc = NULL;            /* C library: chunks of all pools mix in memory */
        d.allocator.free = NULL;
        pools[i] = sp_registry_add(reg, name, &d);
        assert_non_null(pools[i]);
    }
    for (int k = 0; k < EACH; k++)
        for (int i = 0; i < POOLS; i++) items[i][k] = sp_acquire(pools[i]);
    for (int i = 0; i < POOLS; i++)
        for (int k = 0; k < EACH; k += 3) sp_release(pools[i], items[i][k]);
    for (int i = 0; i < POOLS; i++) {
        for (int k = 0; k < EACH; k++) {
            /* Leased or free, a built member belongs to its pool. */
            assert_ptr_equal(sp_registry_owner(reg, items[i][k]), pools[i]);
            assert_null(sp_registry_owner(reg, items[i][k] + 1));
        }
    }
    int local;
    char *heap = malloc(16);
    assert_null(sp_registry_owner(reg, &local));
    assert_null(sp_registry_owner(reg, heap));
    assert_null(sp_registry_owner(reg, NULL));
    free(heap);
    sp_registry_destroy(reg);
}

static void owner_ignores_slots_that_hold_no_built_member(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 32);
    d.chunk_items = 8;
    sp_pool *p = sp_registry_add(reg, "p", &d);
    char *a = sp_acquire(p);
    char *b = sp_acquire(p);
    /* b's successor slot in the chunk is reserved but not built yet (member stride is 32 and
       members are laid out in order within a chunk, or b - a tells us otherwise). */
    ptrdiff_t stride = b - a;
    if (stride == 32 || stride == -32) {
        char *next = b + stride;
        if (next != a) assert_null(sp_registry_owner(reg, next));
    }
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
}

static void registry_release_sends_a_member_back_to_its_own_pool(void **state) {
    (void)state;
    test_env env, env2;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 16);
    sp_desc d2 = test_env_desc(&env2, NULL, 48);
    sp_pool *bullets = sp_registry_add(reg, "bullets", &d);
    sp_pool *enemies = sp_registry_add(reg, "enemies", &d2);
    void *b = sp_spawn(reg, "bullets", NULL);
    void *e = sp_spawn(reg, "enemies", NULL);
    assert_int_equal(sp_registry_release(reg, e), SP_OK);
    EXPECT_STATS(enemies, .size = 1, .free = 1, .peak_leased = 1, .created = 1, .acquired = 1,
                 .released = 1);
    EXPECT_STATS(bullets, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    assert_int_equal(env2.hooks.released, 1);
    assert_int_equal(env.hooks.released, 0);
    /* A second time: the pool's own answer, passed through. */
    assert_int_equal(sp_registry_release(reg, e), SP_ERR_NOT_LEASED);
    assert_string_equal(env2.log.last_pool, "enemies");
    int local;
    char *heap = malloc(8);
    assert_int_equal(sp_registry_release(reg, &local), SP_ERR_FOREIGN);
    assert_int_equal(sp_registry_release(reg, heap), SP_ERR_FOREIGN);
    assert_int_equal(sp_registry_release(reg, (char *)b + 1), SP_ERR_FOREIGN);
    free(heap);
    assert_int_equal(sp_registry_release(reg, b), SP_OK);
    EXPECT_STATS(bullets, .size = 1, .free = 1, .peak_leased = 1, .created = 1, .acquired = 1,
                 .released = 1);
    EXPECT_STATS(enemies, .size = 1, .free = 1, .peak_leased = 1, .created = 1, .acquired = 1,
                 .released = 1);
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
    EXPECT_NO_LEAK(&env2.alloc);
}

static void remove_destroys_the_named_pool(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 16);
    d.initial = 2;
    sp_pool *a = sp_registry_add(reg, "a", &d);
    sp_pool *b = sp_registry_add(reg, "b", &d);
    sp_registry_add(reg, "c", &d);
    void *in_b = sp_acquire(b);
    assert_int_equal(sp_registry_remove(reg, "b"), SP_OK);
    assert_int_equal(env.hooks.disposed, 2);
    assert_null(sp_registry_get(reg, "b"));
    assert_null(sp_registry_owner(reg, in_b));
    assert_int_equal(sp_registry_count(reg), 2);
    assert_ptr_equal(sp_registry_pool_at(reg, 0), a);
    assert_int_equal(sp_registry_remove(reg, "b"), SP_ERR_INVALID);
    assert_int_equal(sp_registry_remove(reg, "zzz"), SP_ERR_INVALID);
    /* The name is free again. */
    assert_non_null(sp_registry_add(reg, "b", &d));
    assert_int_equal(sp_registry_count(reg), 3);
    sp_registry_destroy(reg);
    assert_int_equal(env.hooks.disposed, env.hooks.created);
    EXPECT_NO_LEAK(&env.alloc);
}

static void registry_destroy_destroys_every_pool_and_logs_leaks_per_pool(void **state) {
    (void)state;
    test_env env[5];
    sp_registry *reg = sp_registry_create();
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        sp_desc d = test_env_desc(&env[i], NULL, 16);
        d.initial = 3;
        sp_pool *p = sp_registry_add(reg, name, &d);
        if (i % 2 == 0) sp_spawn(reg, name, NULL);
        assert_non_null(p);
        assert_int_equal(env[i].hooks.created, 3);
    }
    sp_registry_destroy(reg);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(env[i].hooks.disposed, 3);
        EXPECT_NO_LEAK(&env[i].alloc);
        if (i % 2 == 0) { /* p0, p2 and p4 leaked one each, and say so under their names */
            assert_true(env[i].log.warnings >= 1);
            assert_true(test_log_last_has(&env[i].log, "1"));
            char name[8];
            snprintf(name, sizeof name, "p%d", i);
            assert_string_equal(env[i].log.last_pool, name);
        } else {
            assert_int_equal(env[i].log.warnings + env[i].log.errors, 0);
        }
    }
    sp_registry_destroy(NULL);
}

static void pool_destroyed_directly_leaves_its_registry(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 16);
    sp_pool *a = sp_registry_add(reg, "a", &d);
    sp_pool *b = sp_registry_add(reg, "b", &d);
    void *in_a = sp_acquire(a);
    void *in_b = sp_acquire(b);
    sp_release(a, in_a);
    sp_pool_destroy(a);
    assert_null(sp_registry_get(reg, "a"));
    assert_int_equal(sp_registry_count(reg), 1);
    assert_ptr_equal(sp_registry_pool_at(reg, 0), b);
    assert_null(sp_registry_owner(reg, in_a)); /* freed memory: must not be read */
    assert_int_equal(sp_registry_release(reg, in_a), SP_ERR_FOREIGN);
    assert_ptr_equal(sp_registry_owner(reg, in_b), b);
    assert_non_null(sp_registry_add(reg, "a", &d));
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
}

static void owner_forgets_chunks_that_trim_returned(void **state) {
    (void)state;
    test_env env;
    sp_registry *reg = sp_registry_create();
    sp_desc d = test_env_desc(&env, NULL, 32);
    d.chunk_items = 4;
    sp_pool *p = sp_registry_add(reg, "p", &d);
    void *m[12];
    for (int i = 0; i < 12; i++) m[i] = sp_acquire(p);
    for (int i = 4; i < 12; i++) sp_release(p, m[i]);
    assert_int_equal(sp_trim(p, 0), 8);
    for (int i = 0; i < 4; i++) assert_ptr_equal(sp_registry_owner(reg, m[i]), p);
    for (int i = 4; i < 12; i++) {
        assert_null(sp_registry_owner(reg, m[i]));
        assert_int_equal(sp_registry_release(reg, m[i]), SP_ERR_FOREIGN);
    }
    /* New chunks are found again. */
    for (int i = 4; i < 12; i++) m[i] = sp_acquire(p);
    for (int i = 0; i < 12; i++) assert_ptr_equal(sp_registry_owner(reg, m[i]), p);
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&env.alloc);
}

static void fixed_buffer_pools_are_found_by_owner(void **state) {
    (void)state;
    static _Alignas(64) unsigned char buf[2][4096];
    test_env env[2];
    sp_registry *reg = sp_registry_create();
    sp_pool *p[2];
    void *m[2][4];
    for (int k = 0; k < 2; k++) {
        sp_desc d = test_env_desc(&env[k], NULL, 24);
        d.buffer = buf[k];
        d.buffer_size = sp_buffer_size(&d, 4);
        p[k] = sp_registry_add(reg, k ? "right" : "left", &d);
        assert_non_null(p[k]);
        for (int i = 0; i < 4; i++) m[k][i] = sp_acquire(p[k]);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++) assert_ptr_equal(sp_registry_owner(reg, m[k][i]), p[k]);
    assert_null(sp_registry_owner(reg, p[0])); /* the pool structure itself is no member */
    assert_int_equal(sp_registry_release(reg, m[1][2]), SP_OK);
    assert_false(sp_is_leased(p[1], m[1][2]));
    sp_registry_destroy(reg);
    for (int k = 0; k < 2; k++) assert_int_equal(env[k].alloc.allocs, 0);
}

/* Names are the registry's keys in full: two long names that share a long prefix are two. */
static void long_names_are_distinct_keys(void **state) {
    (void)state;
    char a[120], b[120];
    memset(a, 'x', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memcpy(b, a, sizeof b);
    b[sizeof b - 2] = 'y';
    sp_registry *reg = sp_registry_create();
    sp_desc d = {.item_size = 8};
    sp_pool *pa = sp_registry_add(reg, a, &d);
    sp_pool *pb = sp_registry_add(reg, b, &d);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_ptr_equal(sp_registry_get(reg, a), pa);
    assert_ptr_equal(sp_registry_get(reg, b), pb);
    assert_non_null(sp_pool_name(pa));
    sp_registry_destroy(reg);
}

static void null_registry_arguments_are_harmless(void **state) {
    (void)state;
    int x;
    sp_desc d = {.item_size = 8};
    assert_null(sp_registry_add(NULL, "a", &d));
    assert_null(sp_registry_get(NULL, "a"));
    assert_null(sp_spawn(NULL, "a", NULL));
    assert_null(sp_registry_owner(NULL, &x));
    assert_int_equal(sp_registry_count(NULL), 0);
    assert_null(sp_registry_pool_at(NULL, 0));
    sp_result r = sp_registry_release(NULL, &x);
    assert_true(r == SP_ERR_FOREIGN || r == SP_ERR_INVALID);
    sp_registry *reg = sp_registry_create();
    assert_null(sp_registry_add(reg, "a", NULL));
    assert_null(sp_registry_get(reg, NULL));
    sp_registry_destroy(reg);
}

/* A registry made with an allocator and a logger uses them for its own tables and lines, and its
   pools use them unless their desc names their own. */
static void registry_with_desc_routes_memory_and_lines_through_it(void **state) {
    (void)state;
    test_alloc ta = {0};
    test_log tl = {0};
    sp_registry_desc rd = {.allocator = test_alloc_make(&ta), .logger = test_log_make(&tl)};
    sp_registry *reg = sp_registry_create_with(&rd);
    assert_non_null(reg);
    uint64_t after_create = ta.allocs;
    assert_true(after_create >= 1); /* the registry itself */
    sp_desc d = {.item_size = 32, .initial = 4};
    sp_pool *bullets = sp_registry_add(reg, "bullets", &d);
    assert_non_null(bullets);
    assert_true(ta.allocs > after_create + 1); /* the pool's memory came from the registry's allocator */
    int stack_value = 0;
    assert_int_equal(sp_registry_release(reg, &stack_value), SP_ERR_FOREIGN);
    assert_int_equal(tl.warnings, 1); /* through the registry's logger, not stderr */
    assert_string_equal(tl.last_pool, "registry");
    void *b = sp_spawn(reg, "bullets", NULL);
    assert_int_equal(sp_registry_release(reg, b), SP_OK);
    assert_int_equal(sp_registry_release(reg, b), SP_ERR_NOT_LEASED);
    assert_int_equal(tl.warnings, 2); /* the pool inherited the logger */
    assert_string_equal(tl.last_pool, "bullets");
    assert_null(sp_registry_add(reg, "bullets", &d)); /* duplicate: logged there too */
    assert_int_equal(tl.errors, 1);
    sp_registry_destroy(reg);
    EXPECT_NO_LEAK(&ta);

    sp_registry_desc half = {.allocator = {.alloc = test_alloc_make(&ta).alloc}, .logger = test_log_make(&tl)};
    assert_null(sp_registry_create_with(&half));
    assert_int_equal(tl.errors, 2);
    sp_registry *plain = sp_registry_create_with(NULL);
    assert_non_null(plain);
    sp_registry_destroy(plain);
}

/* Every allocation a registry and its pools make can fail: nothing leaks, and the registry stays
   usable. */
static void registry_with_desc_survives_each_allocation_failing(void **state) {
    (void)state;
    for (uint64_t n = 1; n < 40; n++) {
        test_alloc ta = {0};
        test_log tl = {0};
        ta.fail_at = n;
        sp_registry_desc rd = {.allocator = test_alloc_make(&ta), .logger = test_log_make(&tl)};
        sp_registry *reg = sp_registry_create_with(&rd);
        if (reg) {
            char name[16];
            for (int k = 0; k < 12; k++) {
                snprintf(name, sizeof name, "pool%d", k);
                sp_desc d = {.item_size = 24, .initial = 2};
                sp_registry_add(reg, name, &d);
            }
            sp_pool *p = sp_registry_get(reg, "pool0");
            if (p) {
                void *a = sp_acquire(p);
                if (a) {
                    assert_ptr_equal(sp_registry_owner(reg, a), p);
                    assert_int_equal(sp_registry_release(reg, a), SP_OK);
                }
            }
            sp_registry_destroy(reg);
        }
        EXPECT_NO_LEAK(&ta);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(added_pool_is_found_by_name_and_named_after_it),
        cmocka_unit_test(duplicate_and_empty_names_are_refused),
        cmocka_unit_test(spawn_acquires_from_the_named_pool_with_arg),
        cmocka_unit_test(owner_finds_the_pool_a_member_came_from),
        cmocka_unit_test(owner_ignores_slots_that_hold_no_built_member),
        cmocka_unit_test(registry_release_sends_a_member_back_to_its_own_pool),
        cmocka_unit_test(remove_destroys_the_named_pool),
        cmocka_unit_test(registry_destroy_destroys_every_pool_and_logs_leaks_per_pool),
        cmocka_unit_test(pool_destroyed_directly_leaves_its_registry),
        cmocka_unit_test(owner_forgets_chunks_that_trim_returned),
        cmocka_unit_test(fixed_buffer_pools_are_found_by_owner),
        cmocka_unit_test(long_names_are_distinct_keys),
        cmocka_unit_test(null_registry_arguments_are_harmless),
        cmocka_unit_test(registry_with_desc_routes_memory_and_lines_through_it),
        cmocka_unit_test(registry_with_desc_survives_each_allocation_failing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
