/* SPDX-License-Identifier: Zlib */
/* The misuse suite: every misuse the library can detect, made on purpose. Each one must give
   exactly one clear log line that names the pool and the misuse, change nothing (stats and
   internal invariants identical before and after), and let the process go on.

   Built against a copy of the library with SP_DEBUG=1 (the debug checks are part of what is
   tested), in every build type. A write after release is only made where no tool would stop the
   process for it: under ASan and valgrind it is examples/misuse's job to show their reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h" /* first: spawnpool.h with the site macros (sp_internal.h turns them off) */

#include "sp_internal.h"

#include <stdio.h>
#include <string.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define UNDER_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UNDER_ASAN)
#  define UNDER_ASAN 1
#endif
#ifndef UNDER_ASAN
#  define UNDER_ASAN 0
#endif
#ifdef SP_HAVE_VALGRIND
#  include <valgrind/valgrind.h>
#  define UNDER_VALGRIND (RUNNING_ON_VALGRIND != 0)
#else
#  define UNDER_VALGRIND 0
#endif

typedef struct fixture {
    test_env env;
    sp_pool *pool;
    sp_stats before;
    int lines_before;
} fixture;

static int lines(const test_log *tl) { return tl->errors + tl->warnings + tl->infos; }

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    sp_desc d = test_env_desc(&f.env, "bullets", 32);
    d.max = 8;
    f.pool = sp_pool_create(&d);
    assert_non_null(f.pool);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = (fixture *)*state;
    sp_release_all(f->pool);
    sp_pool_destroy(f->pool);
    EXPECT_NO_LEAK(&f->env.alloc);
    return 0;
}

/* Snapshot before a misuse... */
static void arm(fixture *f) {
    sp_stats_get(f->pool, &f->before);
    f->lines_before = lines(&f->env.log);
}

/* ...and after it: one line naming the pool and mentioning `what`, nothing changed. */
static void expect_one_line_nothing_changed(fixture *f, const char *what) {
    assert_int_equal(lines(&f->env.log) - f->lines_before, 1);
    assert_string_equal(f->env.log.last_pool, "bullets");
    if (!test_log_last_has(&f->env.log, what)) fail_msg("log line \"%s\" lacks \"%s\"", f->env.log.last_message, what);
    sp_stats after;
    sp_stats_get(f->pool, &after);
    assert_memory_equal(&f->before, &after, sizeof after);
    assert_true(sp__pool_check(f->pool));
}

static void double_release_is_reported_and_changes_nothing(void **state) {
    fixture *f = (fixture *)*state;
    void *a = sp_acquire(f->pool);
    assert_int_equal(sp_release(f->pool, a), SP_OK);
    arm(f);
    assert_int_equal(sp_release(f->pool, a), SP_ERR_NOT_LEASED);
    expect_one_line_nothing_changed(f, "double release");
}

static void foreign_pointer_is_reported_and_changes_nothing(void **state) {
    fixture *f = (fixture *)*state;
    int on_the_stack = 0;
    sp_acquire(f->pool);
    arm(f);
    assert_int_equal(sp_release(f->pool, &on_the_stack), SP_ERR_FOREIGN);
    expect_one_line_nothing_changed(f, "not the start of a member");
}

static void interior_pointer_is_reported_and_changes_nothing(void **state) {
    fixture *f = (fixture *)*state;
    char *a = (char *)sp_acquire(f->pool);
    arm(f);
    assert_int_equal(sp_release(f->pool, a + 4), SP_ERR_FOREIGN);
    expect_one_line_nothing_changed(f, "not the start of a member");
    assert_true(sp_is_leased(f->pool, a));
}

static void release_into_the_wrong_pool_is_reported_and_changes_neither(void **state) {
    fixture *f = (fixture *)*state;
    sp_desc d = {.name = "sparks", .item_size = 32};
    sp_pool *sparks = sp_pool_create(&d);
    void *spark = sp_acquire(sparks);
    sp_stats sparks_before, sparks_after;
    sp_stats_get(sparks, &sparks_before);
    arm(f);
    assert_int_equal(sp_release(f->pool, spark), SP_ERR_FOREIGN);
    expect_one_line_nothing_changed(f, "not the start of a member");
    /* what to do: the pool cannot know the owner here, but the registry can */
    assert_true(test_log_last_has(&f->env.log, "sp_registry_release"));
    sp_stats_get(sparks, &sparks_after);
    assert_memory_equal(&sparks_before, &sparks_after, sizeof sparks_after);
    assert_true(sp_is_leased(sparks, spark));
    assert_int_equal(sp_release(sparks, spark), SP_OK);
    sp_pool_destroy(sparks);
}

/* In a registry the line names the pool the member belongs to. */
static void release_into_the_wrong_registry_pool_names_the_owner(void **state) {
    (void)state;
    test_scene scene;
    test_scene_open(&scene);
    sp_desc d = {.item_size = 32};
    sp_pool *ships = sp_registry_add(scene.reg, "ships", &d);
    sp_pool *sparks = sp_registry_add(scene.reg, "sparks", &d);
    void *spark = sp_acquire(sparks);
    assert_non_null(spark);
    int before = test_scene_lines(&scene);
    assert_int_equal(sp_release(ships, spark), SP_ERR_FOREIGN);
    assert_int_equal(test_scene_lines(&scene), before + 1);
    assert_string_equal(scene.log.last_pool, "ships");
    assert_true(test_log_last_has(&scene.log, "a member of pool 'sparks'"));
    assert_true(test_log_last_has(&scene.log, "sp_registry_release"));
    assert_true(sp_is_leased(sparks, spark));
    /* a pointer no pool owns gets the general advice, naming no pool */
    int on_the_stack = 0;
    assert_int_equal(sp_release(ships, &on_the_stack), SP_ERR_FOREIGN);
    assert_false(test_log_last_has(&scene.log, "a member of pool"));
    assert_int_equal(sp_registry_release(scene.reg, spark), SP_OK);
    sp_registry_destroy(scene.reg);
    EXPECT_NO_LEAK(&scene.alloc);
}

static void stale_handle_resolves_to_null_silently(void **state) {
    fixture *f = (fixture *)*state;
    void *a = sp_acquire(f->pool);
    sp_handle h = sp_handle_of(f->pool, a);
    sp_release(f->pool, a);
    sp_acquire(f->pool); /* same memory, next life */
    arm(f);
    assert_null(sp_resolve(f->pool, h));
    /* A stale handle is the expected case (the target died): no log line. */
    assert_int_equal(lines(&f->env.log), f->lines_before);
}

static void forged_handle_is_reported(void **state) {
    fixture *f = (fixture *)*state;
    void *a = sp_acquire(f->pool);
    sp_handle real = sp_handle_of(f->pool, a);
    sp_handle future = {real.id + ((uint64_t)5 << TEST_LIFE_SHIFT)}; /* a life this slot never had */
    arm(f);
    assert_null(sp_resolve(f->pool, future));
    expect_one_line_nothing_changed(f, "forged");
    sp_handle no_slot = {(real.id & ~(uint64_t)0xFFFFFF) | 0xFFFFFE};
    arm(f);
    assert_null(sp_resolve(f->pool, no_slot));
    expect_one_line_nothing_changed(f, "forged");
}

static void handle_of_another_pool_is_reported(void **state) {
    fixture *f = (fixture *)*state;
    sp_desc d = {.name = "sparks", .item_size = 32};
    sp_pool *sparks = sp_pool_create(&d);
    sp_handle theirs = sp_handle_of(sparks, sp_acquire(sparks));
    sp_acquire(f->pool);
    arm(f);
    assert_null(sp_resolve(f->pool, theirs));
    expect_one_line_nothing_changed(f, "another pool");
    sp_release_all(sparks);
    sp_pool_destroy(sparks);
}

/* A hook that releases the very member it is processing. */
static sp_pool *reentry_pool;
static sp_result reentry_result;
static void release_self(void *item, void *user) {
    (void)user;
    reentry_result = sp_release(reentry_pool, item);
}
static void release_self_on_acquire(void *item, const void *arg, void *user) {
    (void)arg;
    release_self(item, user);
}

static void hook_releasing_its_own_member_is_refused(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "bullets", 16);
    d.on_release = release_self;
    sp_pool *p = sp_pool_create(&d);
    reentry_pool = p;
    void *a = sp_acquire(p);
    reentry_result = SP_OK;
    assert_int_equal(sp_release(p, a), SP_OK);
    assert_int_equal(reentry_result, SP_ERR_NOT_LEASED);
    assert_int_equal(lines(&env.log), 1);
    assert_string_equal(env.log.last_pool, "bullets");
    assert_true(test_log_last_has(&env.log, "hook is processing"));
    assert_true(sp__pool_check(p));
    EXPECT_STATS(p, .size = 1, .free = 1, .created = 1, .acquired = 1, .released = 1, .peak_leased = 1);
    sp_pool_destroy(p);

    d.on_release = NULL;
    d.on_acquire = release_self_on_acquire;
    p = sp_pool_create(&d);
    reentry_pool = p;
    a = sp_acquire(p);
    assert_non_null(a);
    assert_int_equal(reentry_result, SP_ERR_NOT_LEASED);
    assert_int_equal(lines(&env.log), 2);
    assert_true(sp_is_leased(p, a)); /* the acquisition stands */
    assert_true(sp__pool_check(p));
    sp_release(p, a);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static sp_pool *destroy_target;
static void destroy_from_hook(void *item, void *user) {
    (void)item;
    (void)user;
    sp_pool_destroy(destroy_target);
}

static void destroying_a_pool_from_its_own_hook_is_refused(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "bullets", 16);
    d.on_release = destroy_from_hook;
    sp_pool *p = sp_pool_create(&d);
    destroy_target = p;
    void *a = sp_acquire(p);
    assert_int_equal(sp_release(p, a), SP_OK);
    assert_int_equal(lines(&env.log), 1);
    assert_string_equal(env.log.last_pool, "bullets");
    assert_true(test_log_last_has(&env.log, "sp_pool_destroy"));
    assert_true(sp__pool_check(p)); /* still alive and whole */
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void write_after_release_is_reported_at_the_next_acquisition(void **state) {
    fixture *f = (fixture *)*state;
    if (UNDER_ASAN || UNDER_VALGRIND) skip(); /* they stop at the write itself: see examples/misuse */
    int *a = (int *)sp_acquire(f->pool);
    *a = 1;
    sp_release(f->pool, a);
    *a = 2; /* the misuse */
    int before = lines(&f->env.log);
    int *again = (int *)sp_acquire(f->pool);
    assert_ptr_equal(again, a);
    assert_int_equal(lines(&f->env.log) - before, 1);
    assert_string_equal(f->env.log.last_pool, "bullets");
    assert_true(test_log_last_has(&f->env.log, "written after its release"));
    assert_true(test_log_last_has(&f->env.log, "test_misuse.c:")); /* where it was released */
    /* and how to find the write itself */
    assert_true(test_log_last_has(&f->env.log, "AddressSanitizer or valgrind"));
    assert_int_equal(*again, 2); /* reported, not repaired: contents are the game's */
}

/* The release site reported is the last release's: after a release without a site (here the
   plain function), the report says so instead of naming an earlier release, or "?:0". */
static void write_after_an_unsited_release_does_not_name_an_older_site(void **state) {
    fixture *f = (fixture *)*state;
    if (UNDER_ASAN || UNDER_VALGRIND) skip(); /* they stop at the write itself */
    int *a = (int *)sp_acquire(f->pool);
    sp_release(f->pool, a); /* recorded: this line */
    assert_ptr_equal(sp_acquire(f->pool), a);
    (sp_release)(f->pool, a); /* the function: no site */
    *a = 3; /* the misuse */
    int before = lines(&f->env.log);
    assert_ptr_equal(sp_acquire(f->pool), a);
    assert_int_equal(lines(&f->env.log) - before, 1);
    assert_true(test_log_last_has(&f->env.log, "written after its release (released without a site"));
    assert_false(test_log_last_has(&f->env.log, "test_misuse.c"));
    assert_false(test_log_last_has(&f->env.log, "?:0"));
}

static void a_member_rebuilt_after_trim_is_not_reported_as_written(void **state) {
    fixture *f = (fixture *)*state;
    int *a = (int *)sp_acquire(f->pool);
    *a = 7;
    sp_release(f->pool, a); /* checksum taken of 7 */
    assert_int_equal(sp_trim(f->pool, 0), 1); /* disposed: the slot holds no member now */
    int before = lines(&f->env.log);
    int *again = (int *)sp_acquire(f->pool); /* rebuilt, zeroed, in the same slot */
    assert_non_null(again);
    assert_int_equal(*again, 0);
    assert_int_equal(lines(&f->env.log) - before, 0);
    sp_release(f->pool, again);
}

static void destroy_with_leased_members_names_the_sites(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "enemies", 16);
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 3; i++) sp_acquire(p);
    int line = __LINE__ - 1;
    sp_acquire(p);
    sp_pool_destroy(p);
    /* "destroyed with 4 member(s) still leased", then one line per site */
    assert_int_equal(lines(&env.log), 3);
    assert_string_equal(env.log.last_pool, "enemies");
    char want[64];
    snprintf(want, sizeof want, "test_misuse.c:%d", line + 2);
    assert_true(test_log_last_has(&env.log, want));
    assert_true(test_log_last_has(&env.log, "1 leaked"));
    EXPECT_NO_LEAK(&env.alloc);
}

static void leak_report_groups_leased_members_by_site(void **state) {
    fixture *f = (fixture *)*state;
    for (int i = 0; i < 5; i++) sp_acquire(f->pool);
    int line = __LINE__ - 1;
    int before = lines(&f->env.log);
    assert_int_equal(sp_leak_report(f->pool, SP_LOG_INFO), 5);
    assert_int_equal(f->env.log.infos, 1);
    assert_int_equal(lines(&f->env.log) - before, 1);
    char want[80];
    assert_true(test_log_last_has(&f->env.log, "5 leased, acquired at "));
    snprintf(want, sizeof want, "test_misuse.c:%d", line);
    assert_true(test_log_last_has(&f->env.log, want));
}

static void null_arguments_are_refused_without_a_crash(void **state) {
    (void)state;
    assert_null(sp_pool_create(NULL));
    assert_null(sp_acquire(NULL));
    assert_int_equal(sp_release(NULL, (void *)state), SP_ERR_INVALID);
    assert_int_equal(sp_set_max(NULL, 3), SP_ERR_INVALID);
    assert_null(sp_resolve(NULL, sp_handle_null()));
    assert_int_equal(sp_leak_report(NULL, SP_LOG_WARN), 0);
    sp_pool_destroy(NULL);
    sp_registry_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(double_release_is_reported_and_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(foreign_pointer_is_reported_and_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(interior_pointer_is_reported_and_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(release_into_the_wrong_pool_is_reported_and_changes_neither, setup, teardown),
        cmocka_unit_test(release_into_the_wrong_registry_pool_names_the_owner),
        cmocka_unit_test_setup_teardown(stale_handle_resolves_to_null_silently, setup, teardown),
        cmocka_unit_test_setup_teardown(forged_handle_is_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(handle_of_another_pool_is_reported, setup, teardown),
        cmocka_unit_test(hook_releasing_its_own_member_is_refused),
        cmocka_unit_test(destroying_a_pool_from_its_own_hook_is_refused),
        cmocka_unit_test_setup_teardown(write_after_release_is_reported_at_the_next_acquisition, setup, teardown),
        cmocka_unit_test_setup_teardown(write_after_an_unsited_release_does_not_name_an_older_site, setup, teardown),
        cmocka_unit_test_setup_teardown(a_member_rebuilt_after_trim_is_not_reported_as_written, setup, teardown),
        cmocka_unit_test(destroy_with_leased_members_names_the_sites),
        cmocka_unit_test_setup_teardown(leak_report_groups_leased_members_by_site, setup, teardown),
        cmocka_unit_test(null_arguments_are_refused_without_a_crash),
    };
    return cmocka_run_group_tests_name("misuse", tests, NULL, NULL);
}
