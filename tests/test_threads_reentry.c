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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hooks_cannot_tear_down_their_pool),
        cmocka_unit_test(each_callback_may_release_and_acquire_but_not_destroy),
        cmocka_unit_test(teardown_refuses_acquisitions_from_dispose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
