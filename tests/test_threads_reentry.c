/* SPDX-License-Identifier: Zlib */
/* Callbacks of a thread-safe pool that call back into it: hooks, sp_each callbacks and dispose
   during teardown may try to destroy, clear or trim their own pool, release the member they
   were given or another one, or acquire from a pool being torn down. Each is refused with one
   line or done correctly, as in a plain pool (test_reentry): never freed memory, a hang or a
   member with two owners. One thread: the windows and the per-thread hook tracking are what is
   tested here; test_threads covers the races. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign (threads_util.h) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"

#include "threads_util.h"

/* What the callbacks below do, and what they saw. */
typedef struct reentry {
    sp_pool *pool;
    void *other;      /* a leased member that a callback releases */
    int refused;      /* calls refused (a result that says so) */
    void *acquired;   /* what a callback's acquisition got */
    int calls;
} reentry;

static reentry g_re;

/* Log lines so far (warnings and errors). */
static int lines_logged(void) { return atomic_load(&g_log.errors) + atomic_load(&g_log.warnings); }

static void release_tears_down(void *item, void *user) {
    (void)user;
    int before = lines_logged();
    sp_pool_destroy(g_re.pool);
    (void)sp_clear(g_re.pool);
    (void)sp_trim(g_re.pool, 0);
    g_re.refused += lines_logged() - before; /* one line each */
    if (sp_release(g_re.pool, item) == SP_ERR_NOT_LEASED) g_re.refused++; /* its own member */
    if (g_re.other && sp_release(g_re.pool, g_re.other) == SP_OK) g_re.other = NULL;
    g_re.calls++;
}

static void hooks_cannot_tear_down_their_pool(void **state) {
    (void)state;
    log_reset();
    memset(&g_re, 0, sizeof g_re);
    sp_desc d = ts_desc_counted("reentry");
    d.on_release = release_tears_down;
    sp_pool *pool = g_re.pool = sp_pool_create(&d);
    assert_non_null(pool);
    member *a = (member *)sp_acquire(pool);
    member *b = (member *)sp_acquire(pool);
    assert_non_null(a);
    assert_non_null(b);
    g_re.other = b;
    assert_int_equal(sp_release(pool, a), SP_OK);
    /* destroy, clear, trim: one line each; its own member: refused; the other: released (its
       own on_release ran inside, refusing the same three and its own member) */
    assert_int_equal(g_re.calls, 2);
    assert_int_equal(g_re.refused, 2 * 4);
    assert_null(g_re.other);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.leased, 0);
    assert_int_equal(st.released, 2);
    assert_int_equal(st.free, st.size);
    assert_true(sp__pool_check(pool));
    /* still a working pool */
    void *c = sp_acquire(pool);
    assert_non_null(c);
    g_re.other = NULL;
    assert_int_equal(sp_release(pool, c), SP_OK);
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* sp_each runs in a window (the 0.3 walk): its callback releases the next member, acquires a
   new one, and tries to destroy the pool. */
static bool each_meddles(void *item, void *user) {
    reentry *re = (reentry *)user;
    re->calls++;
    if (re->calls == 1) {
        int before = lines_logged();
        sp_pool_destroy(re->pool);
        (void)sp_clear(re->pool);
        re->refused += lines_logged() - before;
        if (re->other && sp_release(re->pool, re->other) == SP_OK) re->other = NULL;
        re->acquired = sp_acquire(re->pool);
    }
    (void)item;
    return true;
}

static void each_callback_may_release_and_acquire_but_not_destroy(void **state) {
    (void)state;
    log_reset();
    memset(&g_re, 0, sizeof g_re);
    sp_desc d = ts_desc("each");
    sp_pool *pool = g_re.pool = sp_pool_create(&d);
    assert_non_null(pool);
    void *m[4];
    for (int i = 0; i < 4; i++) assert_non_null(m[i] = sp_acquire(pool));
    g_re.other = m[3];
    (void)sp_each(pool, each_meddles, &g_re);
    assert_int_equal(g_re.refused, 2);
    assert_null(g_re.other);
    assert_non_null(g_re.acquired);
    /* the walk visits only the members leased when it began, never m[3] once released */
    assert_true(g_re.calls >= 3 && g_re.calls <= 4);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.leased, 4); /* m[0..2] and the acquired one */
    assert_true(sp_is_leased(pool, g_re.acquired));
    assert_true(sp__pool_check(pool));
    for (int i = 0; i < 3; i++) assert_int_equal(sp_release(pool, m[i]), SP_OK);
    assert_int_equal(sp_release(pool, g_re.acquired), SP_OK);
    assert_int_equal(sp_release(pool, m[0]), SP_ERR_NOT_LEASED); /* a double release: refused */
    sp_pool_destroy(pool);
}

/* dispose during destroy: acquisitions from the pool being torn down are refused, and a release
   of a leased member inside it does not hand anything out twice. */
static void dispose_acquires(void *item, void *user) {
    (void)item, (void)user;
    g_re.calls++;
    if (sp_acquire(g_re.pool) == NULL) g_re.refused++;
}

static void teardown_refuses_acquisitions_from_dispose(void **state) {
    (void)state;
    log_reset();
    memset(&g_re, 0, sizeof g_re);
    sp_desc d = ts_desc_counted("teardown");
    d.dispose = dispose_acquires;
    sp_pool *pool = g_re.pool = sp_pool_create(&d);
    assert_non_null(pool);
    void *m[5];
    for (int i = 0; i < 5; i++) assert_non_null(m[i] = sp_acquire(pool));
    for (int i = 0; i < 3; i++) assert_int_equal(sp_release(pool, m[i]), SP_OK);
    sp_stats st;
    sp_stats_get(pool, &st);
    size_t built = st.size;
    assert_true(built >= 5);
    sp_pool_destroy(pool); /* 2 still leased: a leak line, then every member disposed */
    assert_int_equal(g_re.calls, (int)built);
    assert_int_equal(g_re.refused, (int)built);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- a registry of thread-safe pools ---------------------------------------------------- */

/* Scene teardown: a ship (on_acquire) takes two thrusters and (on_release) gives them back, as
   in test_registry_scene, with thread-safe pools: release_all runs every on_release and
   destroy reports no leak. Plus sparks without hooks (the fast paths) that nobody holds. */
static sp_registry *g_reg;
static int g_ship_errors;

typedef struct ship {
    void *thrusters[2];
} ship;

static void ship_spawn(void *item, const void *arg, void *user) {
    (void)arg, (void)user;
    ship *s = (ship *)item;
    for (int i = 0; i < 2; i++) s->thrusters[i] = sp_spawn(g_reg, "thrusters", NULL);
}

static void ship_release(void *item, void *user) {
    (void)user;
    ship *s = (ship *)item;
    for (int i = 0; i < 2; i++)
        if (sp_registry_release(g_reg, s->thrusters[i]) != SP_OK) g_ship_errors++;
}

static void registry_teardown_releases_thread_safe_pools(void **state) {
    (void)state;
    log_reset();
    g_ship_errors = 0;
    g_reg = sp_registry_create();
    assert_non_null(g_reg);
    sp_desc d = ts_desc("ships");
    d.item_size = sizeof(ship);
    d.on_acquire = ship_spawn;
    d.on_release = ship_release;
    assert_non_null(sp_registry_add(g_reg, "ships", &d));
    d = ts_desc("thrusters");
    assert_non_null(sp_registry_add(g_reg, "thrusters", &d));
    d = ts_desc_counted("sparks");
    assert_non_null(sp_registry_add(g_reg, "sparks", &d));
    for (int i = 0; i < 5; i++) assert_non_null(sp_spawn(g_reg, "ships", NULL));
    for (int i = 0; i < 10; i++) assert_non_null(sp_spawn(g_reg, "sparks", NULL));
    /* 5 ships (their 10 thrusters went back through on_release) and 10 sparks */
    assert_int_equal(sp_registry_release_all(g_reg), 15);
    assert_int_equal(g_ship_errors, 0);
    for (size_t i = 0; i < sp_registry_count(g_reg); i++) {
        sp_stats st;
        sp_stats_get(sp_registry_pool_at(g_reg, i), &st);
        assert_int_equal(st.leased, 0);
    }
    sp_registry_destroy(g_reg);
    assert_int_equal(lines_logged(), 0); /* no leak line */
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* sp_registry_destroy from a hook of one of its thread-safe pools: refused as a whole, with the
   registry's line, before any pool is destroyed (the hooked pool is not the first). */
static void release_destroys_registry(void *item, void *user) {
    (void)item, (void)user;
    sp_registry_destroy(g_reg);
}

static void registry_destroy_from_a_thread_safe_hook_is_refused(void **state) {
    (void)state;
    log_reset();
    g_reg = sp_registry_create_with(&(sp_registry_desc){.logger = {tlog_fn, &g_log}});
    assert_non_null(g_reg);
    sp_desc d = ts_desc("first");
    sp_pool *first = sp_registry_add(g_reg, "first", &d);
    d = ts_desc("hooked");
    d.on_release = release_destroys_registry;
    sp_pool *hooked = sp_registry_add(g_reg, "hooked", &d);
    assert_non_null(first);
    assert_non_null(hooked);
    void *m = sp_acquire(hooked);
    assert_int_equal(sp_release(hooked, m), SP_OK);
    assert_int_equal(lines_logged(), 1);
    assert_non_null(strstr(g_log.last, "sp_registry_destroy while a hook of its pool 'hooked' runs"));
    assert_int_equal(sp_registry_count(g_reg), 2); /* nothing destroyed */
    void *f = sp_acquire(first);
    assert_non_null(f);
    assert_int_equal(sp_release(first, f), SP_OK);
    sp_registry_destroy(g_reg);
    assert_int_equal(lines_logged(), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hooks_cannot_tear_down_their_pool),
        cmocka_unit_test(each_callback_may_release_and_acquire_but_not_destroy),
        cmocka_unit_test(teardown_refuses_acquisitions_from_dispose),
        cmocka_unit_test(registry_teardown_releases_thread_safe_pools),
        cmocka_unit_test(registry_destroy_from_a_thread_safe_hook_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
