/* SPDX-License-Identifier: Zlib */
/* Thread-safe pools over the life of a process: threads that exit while hooks running under a
   pool's lock create, destroy and first-touch other pools (one lock order: no deadlock, and
   ThreadSanitizer sees no inversion); short-lived threads that leave the pool's memory flat;
   a racing release that loses to a running on_release (the double-release line); and the
   process's own lifecycle: fork() while other threads hold members, caches and the pool lock,
   exit() while threads are inside pools, pools that are never destroyed. docs/threads.md,
   "Lifecycle", has the contract. Each check holds whatever the interleaving; a hang is caught by
   a watchdog (alarm) and fails the test. */
#define _POSIX_C_SOURCE 200809L /* barriers, posix_memalign, fork, alarm */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"
#include "threads_util.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int lines_logged(void) { return atomic_load(&g_log.errors) + atomic_load(&g_log.warnings); }

static inline void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- one lock order ------------------------------------------------------------------------ */

/* What a hook of the pool `busy` does while its lock is held (create runs under it, an sp_each
   callback inside its window): creates a thread-safe pool, touches it and a few long-lived ones
   for the first time on this thread (the thread's table of caches grows), and destroys it. */
#define TOUCHED 12
static sp_pool *g_touched[TOUCHED];
static atomic_int g_hook_calls;

static void create_touch_destroy(void) {
    sp_desc d = ts_desc("short");
    sp_pool *p = sp_pool_create(&d);
    if (p) sp_release(p, sp_acquire(p));
    for (int i = 0; i < TOUCHED; i++) sp_release(g_touched[i], sp_acquire(g_touched[i]));
    sp_pool_destroy(p);
    atomic_fetch_add(&g_hook_calls, 1);
}

static void create_hook(void *item, void *user) {
    (void)item, (void)user;
    create_touch_destroy();
}

static bool each_hook(void *item, void *user) {
    (void)item, (void)user;
    create_touch_destroy();
    return false; /* one a walk */
}

/* The exiters use `busy` at any time (its growth runs create hooks under its lock) and
   `walked` between the main thread's walks of it (ordered by use_walked), and exit: thread exit
   returns their caches while hooks run under either pool's lock. */
typedef struct exiter_arg {
    sp_pool *busy, *walked;
    pthread_mutex_t *use_walked;
    atomic_int *stop;
} exiter_arg;

static void *touch_and_exit(void *v) {
    exiter_arg *a = (exiter_arg *)v;
    void *m = sp_acquire(a->busy);
    if (m) sp_release(a->busy, m);
    pthread_mutex_lock(a->use_walked);
    m = sp_acquire(a->walked);
    if (m) sp_release(a->walked, m);
    pthread_mutex_unlock(a->use_walked);
    return NULL;
}

static void *spawn_exiters(void *v) {
    exiter_arg *a = (exiter_arg *)v;
    while (!atomic_load(a->stop)) {
        pthread_t t;
        if (pthread_create(&t, NULL, touch_and_exit, a) == 0) pthread_join(t, NULL);
    }
    return NULL;
}

static void thread_exits_race_hooks_that_create_destroy_and_touch_pools(void **state) {
    (void)state;
    log_reset();
    alarm(60); /* a deadlock fails the test instead of hanging it */
    atomic_store(&g_hook_calls, 0);
    for (int i = 0; i < TOUCHED; i++) {
        sp_desc d = ts_desc("touched");
        assert_non_null(g_touched[i] = sp_pool_create(&d));
    }
    sp_desc d = ts_desc_counted("busy");
    d.create = create_hook;
    sp_pool *busy = sp_pool_create(&d);
    d = ts_desc_counted("walked");
    sp_pool *walked = sp_pool_create(&d);
    assert_non_null(busy);
    assert_non_null(walked);
    void *held = sp_acquire(walked); /* something for the walks to visit */
    assert_non_null(held);
    pthread_mutex_t use_walked = PTHREAD_MUTEX_INITIALIZER;
    atomic_int stop = 0;
    exiter_arg a = {busy, walked, &use_walked, &stop};
    pthread_t spawner[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&spawner[i], NULL, spawn_exiters, &a), 0);
    for (int round = 0; round < 100; round++) {
        assert_int_equal(sp_prewarm(busy, 2), 2); /* create hooks under busy's lock */
        pthread_mutex_lock(&use_walked);
        assert_int_equal(sp_each(walked, each_hook, NULL), 1); /* its callback in a window */
        pthread_mutex_unlock(&use_walked);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(spawner[i], NULL);
    alarm(0);
    assert_true(atomic_load(&g_hook_calls) >= 300);
    assert_int_equal(sp_release(walked, held), SP_OK);
    sp_pool_destroy(busy);
    sp_pool_destroy(walked);
    for (int i = 0; i < TOUCHED; i++) sp_pool_destroy(g_touched[i]);
    pthread_mutex_destroy(&use_walked);
    assert_int_equal(lines_logged(), 0);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- short-lived threads ------------------------------------------------------------------ */

/* Waves of two threads that meet at a barrier, acquire a few members, meet again, release them
   and exit: every wave's threads take over the caches the last one left (the pool keeps one
   per thread alive at once) and visit the depot after each other. That is not traffic that
   larger magazines would serve (each thread visits once or twice), so the pool's memory must
   stay what the first waves made it. */
typedef struct wave_arg {
    sp_pool *pool;
    pthread_barrier_t *meet;
} wave_arg;

static void *wave_thread(void *v) {
    wave_arg *a = (wave_arg *)v;
    void *held[5];
    pthread_barrier_wait(a->meet);
    for (int i = 0; i < 5; i++) held[i] = sp_acquire(a->pool);
    pthread_barrier_wait(a->meet);
    for (int i = 0; i < 5; i++) sp_release(a->pool, held[i]);
    return NULL;
}

static void short_lived_threads_leave_the_pool_flat(void **state) {
    (void)state;
    log_reset();
    sp_desc d = ts_desc_counted("waves");
    d.magazine_size = 0; /* the default, 64 */
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    pthread_barrier_t meet;
    pthread_barrier_init(&meet, NULL, 2);
    wave_arg args[2] = {{pool, &meet}, {pool, &meet}};
    sp_stats warm;
    for (int wave = 0; wave < 400; wave++) {
        run_threads(2, wave_thread, args, sizeof args[0]);
        if (wave == 3) sp_stats_get(pool, &warm); /* both caches made, the members built */
    }
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.bytes, warm.bytes);
    assert_int_equal(st.size, warm.size);
    assert_int_equal(st.leased, 0);
    assert_int_equal(st.acquired, 400 * 2 * 5);
    pthread_barrier_destroy(&meet);
    sp_pool_destroy(pool);
    assert_int_equal(lines_logged(), 0);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- a racing release that loses to a running hook ----------------------------------------- */

/* The winner's on_release (or on_acquire) waits until the other thread's release of the same
   member has returned: that release is a double release, and says so, not "re-entry" (which
   is a hook releasing its own member on its own thread). */
static atomic_int g_in_hook, g_loser_done;
static void *g_raced;
static sp_pool *g_race_pool;

static void wait_for_loser(void) {
    atomic_store(&g_in_hook, 1);
    while (!atomic_load(&g_loser_done)) sched_yield();
}

static void slow_release(void *item, void *user) {
    (void)item, (void)user;
    wait_for_loser();
}

static void slow_acquire(void *item, const void *arg, void *user) {
    (void)item, (void)arg, (void)user;
    wait_for_loser();
}

static void *release_raced(void *v) {
    (void)v;
    sp_release(g_race_pool, g_raced);
    return NULL;
}

static void *acquire_raced(void *v) {
    (void)v;
    void *m = sp_acquire(g_race_pool);
    if (m != g_raced) atomic_store(&g_loser_done, -1);
    return NULL;
}

static void *loser(void *v) {
    (void)v;
    while (!atomic_load(&g_in_hook)) sched_yield();
    sp_result r = sp_release(g_race_pool, g_raced);
    atomic_store(&g_loser_done, r == SP_ERR_NOT_LEASED ? 1 : 2);
    return NULL;
}

static void a_release_that_loses_to_a_running_hook_is_a_double_release(void **state) {
    (void)state;
    for (int hook = 0; hook < 2; hook++) { /* the winner's on_release; another's on_acquire */
        log_reset();
        atomic_store(&g_in_hook, 0);
        atomic_store(&g_loser_done, 0);
        sp_desc d = ts_desc("raced");
        d.max = 1; /* the winner's acquisition gets the raced member */
        if (hook == 0) d.on_release = slow_release;
        else d.on_acquire = slow_acquire;
        g_race_pool = sp_pool_create(&d);
        assert_non_null(g_race_pool);
        atomic_store(&g_loser_done, 1); /* no waiting in the hooks yet */
        g_raced = sp_acquire(g_race_pool);
        assert_non_null(g_raced);
        if (hook == 1) { /* a stale pointer, released while its next life is being acquired */
            assert_int_equal(sp_release(g_race_pool, g_raced), SP_OK);
            assert_int_equal(sp_trim(g_race_pool, 1), 0); /* a window: this thread's cache drained */
        }
        atomic_store(&g_in_hook, 0);
        atomic_store(&g_loser_done, 0);
        pthread_t winner, other;
        assert_int_equal(pthread_create(&winner, NULL, hook == 0 ? release_raced : acquire_raced, NULL), 0);
        assert_int_equal(pthread_create(&other, NULL, loser, NULL), 0);
        pthread_join(winner, NULL);
        pthread_join(other, NULL);
        assert_int_equal(atomic_load(&g_loser_done), 1);
        assert_int_equal(atomic_load(&g_log.warnings), 1);
        assert_non_null(strstr(g_log.last, "double release?"));
        if (hook == 1) assert_int_equal(sp_release(g_race_pool, g_raced), SP_OK);
        sp_stats st;
        sp_stats_get(g_race_pool, &st);
        assert_int_equal(st.leased, 0);
        sp_pool_destroy(g_race_pool);
    }
}

/* ---- fork() -------------------------------------------------------------------------------- */

/* ThreadSanitizer: a child of fork() has only the forking thread, and would report a thread
   that had finished in the parent, not yet joined, as leaked. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "report_thread_leaks=0"; }

/* Runs fn in a child process, which ends with _exit(0) when fn returns; the child's checks
   end it with 1 (and a line) on failure, and a watchdog with SIGALRM when it hangs. */
#define CHILD_CHECK(c)                                                                            \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #c);                        \
            _exit(1);                                                                             \
        }                                                                                         \
    } while (0)

/* 0 when the child ended well, else 1 (and a line): the caller stops its threads before it
   asserts. */
static int child_failed(void (*fn)(void *), void *arg) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        alarm(20);
        fn(arg);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    print_error("child: %s %d\n", WIFSIGNALED(status) ? "killed by signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return 1;
}

/* The members a thread holds and caches when another one forks: in the child that thread does
   not exist. What it held stays leased (the child may release it: it has the pointers); what
   it had in its magazines is the child's to acquire. */
typedef struct holder {
    sp_pool *pool;
    void *held[10];
    pthread_barrier_t ready, forked;
} holder;

static void *hold_and_cache(void *v) {
    holder *h = (holder *)v;
    for (int i = 0; i < 10; i++) h->held[i] = sp_acquire(h->pool);
    for (int i = 5; i < 10; i++) sp_release(h->pool, h->held[i]); /* in this thread's cache */
    pthread_barrier_wait(&h->ready);
    pthread_barrier_wait(&h->forked); /* alive while the main thread forks */
    for (int i = 0; i < 5; i++) sp_release(h->pool, h->held[i]);
    return NULL;
}

static void child_takes_the_cached_members(void *v) {
    holder *h = (holder *)v;
    sp_stats st;
    sp_stats_get(h->pool, &st);
    CHILD_CHECK(st.leased == 5 && st.size == 10);
    void *got[10];
    int n = 0;
    while (n < 10 && (got[n] = sp_acquire(h->pool)) != NULL) n++;
    CHILD_CHECK(n == 5); /* max 10: the five the other thread had cached, then a drop */
    for (int i = 0; i < n; i++) CHILD_CHECK(sp_release(h->pool, got[i]) == SP_OK);
    CHILD_CHECK(sp__pool_check(h->pool));
    for (int i = 0; i < 5; i++) CHILD_CHECK(sp_release(h->pool, h->held[i]) == SP_OK);
    sp_stats_get(h->pool, &st);
    CHILD_CHECK(st.leased == 0 && st.released == st.acquired);
    sp_pool_destroy(h->pool);
    CHILD_CHECK(lines_logged() == 0);
}

static void child_of_fork_gets_what_other_threads_cached(void **state) {
    (void)state;
    log_reset();
    holder h;
    sp_desc d = ts_desc("forked");
    d.max = 10;
    h.pool = sp_pool_create(&d);
    assert_non_null(h.pool);
    pthread_barrier_init(&h.ready, NULL, 2);
    pthread_barrier_init(&h.forked, NULL, 2);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_and_cache, &h), 0);
    pthread_barrier_wait(&h.ready);
    int failed = child_failed(child_takes_the_cached_members, &h);
    pthread_barrier_wait(&h.forked);
    pthread_join(t, NULL);
    assert_int_equal(failed, 0);
    sp_stats st;
    sp_stats_get(h.pool, &st); /* the parent is untouched by the child's work */
    assert_int_equal(st.leased, 0);
    assert_int_equal(st.acquired, 10);
    sp_pool_destroy(h.pool);
    pthread_barrier_destroy(&h.ready);
    pthread_barrier_destroy(&h.forked);
    assert_int_equal(lines_logged(), 0);
}

/* Another thread holds the pool's lock (its create hook is running) when the main thread
   forks: fork waits for it, so that the child's lock is free and the pool whole. */
static atomic_int g_creating;

static void slow_create(void *item, void *user) {
    (void)item, (void)user;
    if (atomic_load(&g_creating) != 1) return;
    atomic_store(&g_creating, 2); /* the main thread forks now */
    nap_ms(100);
}

static void *grow_slowly(void *v) {
    sp_pool *pool = (sp_pool *)v;
    void *m = sp_acquire(pool);
    sp_release(pool, m);
    return NULL;
}

static void child_uses_the_pool(void *v) {
    sp_pool *pool = (sp_pool *)v;
    void *held[100];
    for (int i = 0; i < 100; i++) CHILD_CHECK((held[i] = sp_acquire(pool)) != NULL);
    for (int i = 0; i < 100; i++) CHILD_CHECK(sp_release(pool, held[i]) == SP_OK);
    CHILD_CHECK(sp__pool_check(pool));
    sp_pool_destroy(pool);
}

static void fork_while_another_thread_holds_the_pool_lock(void **state) {
    (void)state;
    log_reset();
    sp_desc d = ts_desc("locked");
    d.create = slow_create;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    atomic_store(&g_creating, 1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, grow_slowly, pool), 0);
    while (atomic_load(&g_creating) != 2) sched_yield();
    int failed = child_failed(child_uses_the_pool, pool);
    pthread_join(t, NULL);
    assert_int_equal(failed, 0);
    sp_pool_destroy(pool);
    assert_int_equal(lines_logged(), 0);
}

/* Threads churn while the main thread forks again and again: in each child the pool is whole
   (every member leased, in a magazine or loose exactly once: sp__pool_check), its counters say
   what the members' states say, and it works. */
typedef struct churner {
    sp_pool *pool;
    atomic_int *stop;
} churner;

static void *churn_until_stopped(void *v) {
    churner *c = (churner *)v;
    void *held[8];
    uint32_t seed = 77;
    while (!atomic_load(c->stop)) {
        int k = 1 + (int)(rnd(&seed) % 8u);
        for (int i = 0; i < k; i++) held[i] = sp_acquire(c->pool);
        for (int i = 0; i < k; i++) sp_release(c->pool, held[i]);
    }
    return NULL;
}

static bool count_leased(void *item, void *user) {
    (void)item;
    (*(size_t *)user)++;
    return true;
}

static void child_finds_a_whole_pool(void *v) {
    sp_pool *pool = (sp_pool *)v;
    sp_stats st;
    sp_stats_get(pool, &st);
    size_t walked = 0;
    (void)sp_each(pool, count_leased, &walked);
    CHILD_CHECK(walked == st.leased);
    CHILD_CHECK(st.acquired - st.released == st.leased);
    CHILD_CHECK(sp__pool_check(pool));
    void *held[64];
    for (int i = 0; i < 64; i++) CHILD_CHECK((held[i] = sp_acquire(pool)) != NULL);
    for (int i = 0; i < 64; i++) CHILD_CHECK(sp_release(pool, held[i]) == SP_OK);
    CHILD_CHECK(sp_release_all(pool) == st.leased); /* what the vanished threads held */
    sp_pool_destroy(pool);
    CHILD_CHECK(lines_logged() == 0);
}

static void fork_while_threads_churn_leaves_the_child_a_whole_pool(void **state) {
    (void)state;
    log_reset();
    sp_desc d = ts_desc("churned");
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    atomic_int stop = 0;
    churner c = {pool, &stop};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, churn_until_stopped, &c), 0);
    int failed = 0;
    for (int i = 0; i < 20; i++) {
        nap_ms(5);
        failed += child_failed(child_finds_a_whole_pool, pool);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(failed, 0);
    sp_pool_destroy(pool);
    assert_int_equal(lines_logged(), 0);
}

/* ---- exit() -------------------------------------------------------------------------------- */

/* exit() while other threads are inside a pool's calls, and with pools never destroyed (a
   library's, made on first use): the process ends normally. Nothing of spawnpool runs at exit
   that could pull a pool from under those threads; the never-destroyed pools' memory is
   reachable (no leak report from LeakSanitizer or valgrind). In a child, so that the test
   process goes on. */
/* never destroyed; volatile: a library reads its pointer again later, which this test does not
   (without it the compiler may drop the store, and the pool would look lost) */
static sp_pool *volatile g_forever, *volatile g_forever_plain;

static void exit_with_threads_inside(void *v) {
    (void)v;
    sp_desc d = ts_desc("forever");
    g_forever = sp_pool_create(&d);
    sp_desc plain = {.name = "forever_plain", .item_size = 16};
    g_forever_plain = sp_pool_create(&plain);
    CHILD_CHECK(g_forever && g_forever_plain && sp_acquire(g_forever_plain));
    atomic_int stop = 0;
    churner c = {g_forever, &stop};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHILD_CHECK(pthread_create(&t[i], NULL, churn_until_stopped, &c) == 0);
    nap_ms(20);
    exit(0); /* the threads are inside sp_acquire and sp_release */
}

static void exit_while_threads_are_inside_pools_ends_the_process(void **state) {
    (void)state;
    log_reset();
    assert_int_equal(child_failed(exit_with_threads_inside, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thread_exits_race_hooks_that_create_destroy_and_touch_pools),
        cmocka_unit_test(short_lived_threads_leave_the_pool_flat),
        cmocka_unit_test(a_release_that_loses_to_a_running_hook_is_a_double_release),
        cmocka_unit_test(child_of_fork_gets_what_other_threads_cached),
        cmocka_unit_test(fork_while_another_thread_holds_the_pool_lock),
        cmocka_unit_test(fork_while_threads_churn_leaves_the_child_a_whole_pool),
        cmocka_unit_test(exit_while_threads_are_inside_pools_ends_the_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
