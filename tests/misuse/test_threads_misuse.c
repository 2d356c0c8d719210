/* SPDX-License-Identifier: Zlib */
/* Threading mistakes a debug build catches, made on purpose, against the debug variant of the
   library (SP_DEBUG=1; ThreadSanitizer runs it in make test):
   - a plain pool (no .threads = SP_THREADS_SAFE) entered by two threads at once, the most
     common one: the call that overlaps another thread's is refused, with one line that says
     what to do (rate-limited: the first, then at each power of two), and the pool stays whole;
   - the same for an sp_dense, whose line says what a dense pool offers instead (there is no
     thread-safe mode: a pool per thread, or a lock);
   - the acquisition site of a thread-safe pool's member, recorded before the member is handed
     out, so that a release through a stale pointer on another thread, and its acquisition
     there, neither race with the record nor leave it naming the wrong site. */
#define _POSIX_C_SOURCE 200809L /* barriers, posix_memalign */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h" /* first: spawnpool.h with the site macros (sp_internal.h turns them off) */

#include <spawnpool_dense.h>

#include "sp_internal.h"

#include "threads_util.h"

#include <sched.h>
#include <time.h>

/* White-box: the dense pool's own check of its invariants (0: consistent). */
int sp__dense_check(const sp_dense *d);

static int lines_logged(void) { return atomic_load(&g_log.errors) + atomic_load(&g_log.warnings); }

/* The overlap's line is logged for the first refusal, then at each power of two. */
static int lines_for_refusals(long refused) {
    int lines = 0;
    for (long n = 1; n <= refused; n *= 2) lines++;
    return lines;
}

/* ---- a plain pool entered from two threads ------------------------------------------------- */

static sp_pool *g_plain;
static atomic_int g_step;
static void *g_other_member;
static void *g_refused_acquire;
static sp_result g_refused_release;

/* The main thread's acquisition runs this hook: it is inside the pool until the other thread's
   calls have returned. */
static void hold_the_pool(void *item, const void *arg, void *user) {
    (void)item, (void)arg, (void)user;
    if (atomic_load(&g_step) != 0) return;
    atomic_store(&g_step, 1);
    while (atomic_load(&g_step) != 2) sched_yield();
}

static void *overlap(void *v) {
    (void)v;
    while (atomic_load(&g_step) != 1) sched_yield();
    g_refused_acquire = sp_acquire(g_plain);
    g_refused_release = sp_release(g_plain, g_other_member);
    atomic_store(&g_step, 2);
    return NULL;
}

static void a_call_overlapping_another_threads_is_refused_with_one_line(void **state) {
    (void)state;
    log_reset();
    atomic_store(&g_step, 3);
    sp_desc d;
    memset(&d, 0, sizeof d);
    d.name = "plain";
    d.item_size = 32;
    d.on_acquire = hold_the_pool;
    d.logger.log = tlog_fn;
    d.logger.user = &g_log;
    g_plain = sp_pool_create(&d);
    assert_non_null(g_plain);
    g_other_member = sp_acquire(g_plain);
    assert_non_null(g_other_member);
    atomic_store(&g_step, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, overlap, NULL), 0);
    void *mine = sp_acquire(g_plain); /* inside it until the other thread's calls returned */
    pthread_join(t, NULL);
    assert_non_null(mine);
    assert_null(g_refused_acquire);
    assert_int_equal(g_refused_release, SP_ERR_INVALID);
    assert_int_equal(lines_logged(), 2); /* the first overlap, and the second (a power of two) */
    assert_non_null(strstr(g_log.last, "sp_release while another thread is inside a call on this pool"));
    assert_non_null(strstr(g_log.last, ".threads = SP_THREADS_SAFE"));
    assert_non_null(strstr(g_log.last, "(2 so far)"));
    /* nothing changed: both members leased, the pool whole */
    sp_stats st;
    sp_stats_get(g_plain, &st);
    assert_int_equal(st.leased, 2);
    assert_int_equal(st.acquired, 2);
    assert_true(sp_is_leased(g_plain, g_other_member));
    assert_true(sp__pool_check(g_plain));
    assert_int_equal(sp_release(g_plain, mine), SP_OK);
    assert_int_equal(sp_release(g_plain, g_other_member), SP_OK);
    sp_pool_destroy(g_plain);
    assert_int_equal(lines_logged(), 2);
}

/* Two threads churn one plain pool with no synchronisation at all. Every overlapping call is
   refused, so the pool never sees two at once: no member has two owners, no line but the
   overlap's (no "double release?", "not the start of a member", "re-entry", no wrapped count),
   and the counters are exact. */
typedef struct racer {
    sp_pool *pool;
    int me;
    atomic_int *violations;
    pthread_barrier_t *start;
    long refused, acquired;
} racer;

static void *churn_unsynchronised(void *v) {
    racer *r = (racer *)v;
    member *held[8];
    pthread_barrier_wait(r->start); /* together, so that their calls overlap */
    for (int round = 0; round < 4000; round++) {
        int got = 0;
        for (int i = 0; i < 8; i++) {
            member *m = (member *)sp_acquire(r->pool);
            if (!m) {
                r->refused++;
                continue;
            }
            take(m, r->me, r->violations);
            held[got++] = m;
            r->acquired++;
        }
        while (got > 0) {
            member *m = held[got - 1];
            give_up(m, r->me, r->violations);
            sp_result res = sp_release(r->pool, m);
            if (res == SP_ERR_INVALID) { /* refused: still ours, try again */
                take(m, r->me, r->violations);
                r->refused++;
                sched_yield();
                continue;
            }
            if (res != SP_OK) atomic_fetch_add(r->violations, 1);
            got--;
        }
    }
    return NULL;
}

static void a_plain_pool_churned_by_two_threads_stays_whole(void **state) {
    (void)state;
    log_reset();
    sp_desc d = ts_desc("plain");
    d.threads = SP_THREADS_NONE;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    atomic_int violations = 0;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    racer r[2] = {{pool, 1, &violations, &start, 0, 0}, {pool, 2, &violations, &start, 0, 0}};
    run_threads(2, churn_unsynchronised, r, sizeof r[0]);
    pthread_barrier_destroy(&start);
    assert_int_equal(atomic_load(&violations), 0);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.leased, 0);
    assert_int_equal(st.acquired, (uint64_t)(r[0].acquired + r[1].acquired));
    assert_int_equal(st.released, st.acquired);
    assert_true(sp__pool_check(pool));
    /* one line per power of two of the overlaps: a handful, all of them the overlap's */
    long refused = r[0].refused + r[1].refused;
    int expected = lines_for_refusals(refused);
    assert_int_equal(lines_logged(), expected);
    if (refused) assert_non_null(strstr(g_log.last, "SP_THREADS_SAFE"));
    sp_pool_destroy(pool);
    assert_int_equal(lines_logged(), expected); /* no leak line */
}

/* ---- a dense pool entered from two threads ------------------------------------------------- */

static sp_dense *g_dense;
static sp_handle g_dense_kept;
static void *g_dense_refused_add;
static sp_handle g_dense_refused_handle;
static sp_result g_dense_refused_remove;
static size_t g_dense_refused_clear;

static sp_dense_desc dense_desc(const char *name, sp_dense_move_fn on_move) {
    sp_dense_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.item_size = 16;
    d.on_move = on_move;
    d.logger.log = tlog_fn;
    d.logger.user = &g_log;
    return d;
}

/* The main thread's remove runs this on_move: it is inside the pool until the other thread's
   calls have returned. */
static void hold_the_dense(void *item, size_t from, size_t to, void *user) {
    (void)item, (void)from, (void)to, (void)user;
    if (atomic_load(&g_step) != 0) return;
    atomic_store(&g_step, 1);
    while (atomic_load(&g_step) != 2) sched_yield();
}

static void *overlap_dense(void *v) {
    (void)v;
    while (atomic_load(&g_step) != 1) sched_yield();
    g_dense_refused_add = sp_dense_add(g_dense, NULL);
    g_dense_refused_handle = sp_dense_add_handle(g_dense, NULL);
    g_dense_refused_remove = sp_dense_remove_handle(g_dense, g_dense_kept);
    sp_dense_destroy(g_dense); /* refused too: the pool stays */
    g_dense_refused_clear = sp_dense_clear(g_dense);
    atomic_store(&g_step, 2);
    return NULL;
}

static void a_dense_call_overlapping_another_threads_is_refused_with_one_line(void **state) {
    (void)state;
    log_reset();
    atomic_store(&g_step, 3);
    sp_dense_desc d = dense_desc("sparks", hold_the_dense);
    g_dense = sp_dense_create(&d);
    assert_non_null(g_dense);
    assert_non_null(sp_dense_add(g_dense, NULL));
    g_dense_kept = sp_dense_add_handle(g_dense, NULL);
    assert_false(sp_handle_is_null(g_dense_kept));
    assert_non_null(sp_dense_add(g_dense, NULL));
    atomic_store(&g_step, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, overlap_dense, NULL), 0);
    /* the last element moves into place 0: on_move holds the pool until the other thread is done */
    assert_int_equal(sp_dense_remove_at(g_dense, 0), SP_OK);
    pthread_join(t, NULL);
    assert_null(g_dense_refused_add);
    assert_true(sp_handle_is_null(g_dense_refused_handle));
    assert_int_equal(g_dense_refused_remove, SP_ERR_INVALID);
    assert_int_equal(g_dense_refused_clear, 0);
    /* five refusals: lines for the first, second and fourth (the destroy) */
    assert_int_equal(lines_logged(), 3);
    assert_int_equal(atomic_load(&g_log.errors), 3);
    assert_non_null(strstr(g_log.last, "sp_dense_destroy while another thread is inside a call on this pool"));
    assert_non_null(strstr(g_log.last, "a dense pool takes one thread at a time"));
    assert_non_null(strstr(g_log.last, "(4 so far)"));
    /* nothing changed: the main thread's remove only */
    assert_int_equal(sp_dense_count(g_dense), 2);
    assert_non_null(sp_dense_resolve(g_dense, g_dense_kept));
    sp_stats st;
    sp_dense_stats_get(g_dense, &st);
    assert_int_equal(st.acquired, 3);
    assert_int_equal(st.released, 1);
    assert_int_equal(sp__dense_check(g_dense), 0);
    sp_dense_destroy(g_dense);
    assert_int_equal(lines_logged(), 3);
}

/* Two threads churn one dense pool with no synchronisation at all, each adding elements and
   removing them by handle (the elements move under the other thread's removes and growth, so
   neither touches them outside a call). Every overlapping call is refused, so the pool never
   sees two at once: every handle removes its own element once (no "has expired", no forged
   handle), no line but the overlap's, and the counters are exact. */
typedef struct dense_racer {
    sp_dense *d;
    atomic_int *violations;
    pthread_barrier_t *start;
    long refused, added;
} dense_racer;

static void *churn_dense_unsynchronised(void *v) {
    dense_racer *r = (dense_racer *)v;
    sp_handle held[8];
    pthread_barrier_wait(r->start); /* together, so that their calls overlap */
    for (int round = 0; round < 4000; round++) {
        int got = 0;
        for (int i = 0; i < 8; i++) {
            sp_handle h = sp_dense_add_handle(r->d, NULL);
            if (sp_handle_is_null(h)) {
                r->refused++;
                continue;
            }
            held[got++] = h;
            r->added++;
        }
        while (got > 0) {
            sp_result res = sp_dense_remove_handle(r->d, held[got - 1]);
            if (res == SP_ERR_INVALID) { /* refused: still ours, try again */
                r->refused++;
                sched_yield();
                continue;
            }
            if (res != SP_OK) atomic_fetch_add(r->violations, 1);
            got--;
        }
    }
    return NULL;
}

static void a_dense_pool_churned_by_two_threads_stays_whole(void **state) {
    (void)state;
    log_reset();
    sp_dense_desc desc = dense_desc("sparks", NULL);
    sp_dense *d = sp_dense_create(&desc);
    assert_non_null(d);
    atomic_int violations = 0;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    dense_racer r[2] = {{d, &violations, &start, 0, 0}, {d, &violations, &start, 0, 0}};
    run_threads(2, churn_dense_unsynchronised, r, sizeof r[0]);
    pthread_barrier_destroy(&start);
    assert_int_equal(atomic_load(&violations), 0);
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(sp_dense_count(d), 0);
    assert_int_equal(st.acquired, (uint64_t)(r[0].added + r[1].added));
    assert_int_equal(st.released, st.acquired);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(sp__dense_check(d), 0);
    long refused = r[0].refused + r[1].refused;
    int expected = lines_for_refusals(refused);
    assert_int_equal(lines_logged(), expected);
    if (refused) assert_non_null(strstr(g_log.last, "a dense pool takes one thread at a time"));
    sp_dense_destroy(d);
    assert_int_equal(lines_logged(), expected);
}

/* ---- the acquisition site of a thread-safe pool's member --------------------------------- */

/* The main thread acquires the pool's only member at site B. Another thread, holding a pointer
   from an earlier life, releases it as soon as it is leased (it releases the new life, as
   documented) and acquires it again at site C. The record must say C, and be written where no
   other thread's record write can race with it: before the member is handed out. */
static sp_pool *g_ts;
static void *g_only;

static void *stale_release_then_acquire(void *v) {
    (void)v;
    while (!sp_is_leased(g_ts, g_only)) sched_yield();
    /* (a moment: the main thread's acquisition has returned, ThreadSanitizer sees both sides) */
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    if (sp_release(g_ts, g_only) != SP_OK) return NULL;
    void *again = sp_acquire_at(g_ts, "site_c.c", 3);
    return again == g_only ? g_only : NULL;
}

static void sites_are_recorded_before_a_thread_safe_member_is_handed_out(void **state) {
    (void)state;
    log_reset();
    sp_desc d = ts_desc("sites");
    d.max = 1; /* one member: every acquisition gets it */
    g_ts = sp_pool_create(&d);
    assert_non_null(g_ts);
    g_only = sp_acquire_at(g_ts, "site_a.c", 1);
    assert_non_null(g_only);
    assert_int_equal(sp_release(g_ts, g_only), SP_OK);
    (void)sp_trim(g_ts, 1); /* a window: this thread's cache drained, the member loose */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stale_release_then_acquire, NULL), 0);
    void *mine = sp_acquire_at(g_ts, "site_b.c", 2);
    void *theirs = NULL;
    pthread_join(t, &theirs);
    assert_ptr_equal(mine, g_only);
    assert_ptr_equal(theirs, g_only);
    /* leased once, in the other thread's life, acquired at site C */
    assert_int_equal(sp_leak_report(g_ts, SP_LOG_WARN), 1);
    assert_non_null(strstr(g_log.last, "acquired at site_c.c:3"));
    assert_int_equal(sp_release(g_ts, g_only), SP_OK);
    sp_pool_destroy(g_ts);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sites_are_recorded_before_a_thread_safe_member_is_handed_out),
        cmocka_unit_test(a_call_overlapping_another_threads_is_refused_with_one_line),
        cmocka_unit_test(a_plain_pool_churned_by_two_threads_stays_whole),
        cmocka_unit_test(a_dense_call_overlapping_another_threads_is_refused_with_one_line),
        cmocka_unit_test(a_dense_pool_churned_by_two_threads_stays_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
