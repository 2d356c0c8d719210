/* SPDX-License-Identifier: Zlib */
/* Thread-safe pools: what a descriptor may ask (refusals name the field), DROP / GROW / max
   under several threads, hooks on the calling thread (and their refusals), the calls that need
   quiescence (iteration, release_all, trim, clear), stats while threads run, the registry from
   several threads, the debug sites, and a model check of ownership and counts at quiescent
   points between rounds of random operations. */
#define _POSIX_C_SOURCE 200809L /* barriers, posix_memalign */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pool_internal.h"
#include "testutil.h"
#include "threads_util.h"

/* ---- what may be asked -------------------------------------------------------------------- */

static double score(const void *item, void *user) {
    (void)item, (void)user;
    return 0.0;
}

static void refusals_name_the_field(void **state) {
    (void)state;
    static unsigned char buffer[1 << 16];
    struct {
        const char *field;
        sp_desc d;
    } cases[5];
    for (int i = 0; i < 5; i++) cases[i].d = ts_desc("refused");
    cases[0].field = "SP_OVERFLOW_RECLAIM";
    cases[0].d.overflow = SP_OVERFLOW_RECLAIM;
    cases[0].d.max = 8;
    cases[1].field = "priority";
    cases[1].d.priority = score;
    cases[2].field = "SP_ORDER_ACQUISITION";
    cases[2].d.order = SP_ORDER_ACQUISITION;
    cases[3].field = "buffer";
    cases[3].d.buffer = buffer;
    cases[3].d.buffer_size = sizeof buffer;
    cases[4].field = "magazine_size";
    cases[4].d.magazine_size = 65537;
    for (int i = 0; i < 5; i++) {
        log_reset();
        assert_null(sp_pool_create(&cases[i].d));
        assert_int_equal(atomic_load(&g_log.errors), 1);
        assert_non_null(strstr(g_log.last, cases[i].field));
        assert_non_null(strstr(g_log.last, "SP_THREADS_SAFE"));
    }
    /* a mode that does not exist is an invalid descriptor, not a refusal of SP_THREADS_SAFE */
    log_reset();
    sp_desc seven = ts_desc("seven");
    seven.threads = (sp_threads)7;
    assert_null(sp_pool_create(&seven));
    assert_int_equal(atomic_load(&g_log.errors), 1);
    assert_non_null(strstr(g_log.last, "invalid descriptor: unknown threads mode"));
    assert_null(strstr(g_log.last, "SP_THREADS_SAFE"));
    /* and RECLAIM set later */
    log_reset();
    sp_desc d = ts_desc("later");
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    assert_int_equal(sp_set_overflow(pool, SP_OVERFLOW_RECLAIM), SP_ERR_INVALID);
    assert_int_equal(atomic_load(&g_log.warnings), 1);
    assert_int_equal(sp_set_overflow(pool, SP_OVERFLOW_GROW), SP_OK);
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- DROP, GROW, max -------------------------------------------------------------------- */

typedef struct hold_arg {
    sp_pool *pool;
    int want;
    pthread_barrier_t *held;
    int got;
    atomic_int *over_max;
} hold_arg;

static void *hold_many(void *v) {
    hold_arg *a = (hold_arg *)v;
    void *items[64];
    a->got = 0;
    for (int i = 0; i < a->want; i++) {
        void *m = sp_acquire(a->pool);
        if (m) items[a->got++] = m;
        sp_stats st;
        sp_stats_get(a->pool, &st);
        if (st.max && st.size > st.max && st.grown_past_max == 0) atomic_fetch_add(a->over_max, 1);
    }
    pthread_barrier_wait(a->held); /* everyone holds what they got */
    for (int i = 0; i < a->got; i++) sp_release(a->pool, items[i]);
    return NULL;
}

static void drop_and_max_hold_for_built_members(void **state) {
    (void)state;
    log_reset();
    pthread_barrier_t held;
    pthread_barrier_init(&held, NULL, 4);
    atomic_int over = 0;
    sp_desc d = ts_desc_counted("drop");
    d.max = 64;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    hold_arg args[4];
    for (int i = 0; i < 4; i++) args[i] = (hold_arg){pool, 32, &held, 0, &over};
    run_threads(4, hold_many, args, sizeof args[0]);
    int got = args[0].got + args[1].got + args[2].got + args[3].got;
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(atomic_load(&over), 0);
    assert_int_equal(st.size, 64); /* never more than max */
    /* DROP may refuse while free members sit in other threads' caches: at most two magazines
       (2 x 8) in each of the other three */
    assert_true(got <= 64 && got >= 64 - 3 * 2 * 8);
    assert_int_equal(st.dropped, (uint64_t)(128 - got));
    assert_int_equal(st.leased, 0);
    sp_pool_destroy(pool);

    d = ts_desc("grow");
    d.max = 16;
    d.overflow = SP_OVERFLOW_GROW;
    pool = sp_pool_create(&d);
    assert_non_null(pool);
    for (int i = 0; i < 4; i++) args[i] = (hold_arg){pool, 16, &held, 0, &over};
    run_threads(4, hold_many, args, sizeof args[0]);
    sp_stats_get(pool, &st);
    assert_int_equal(args[0].got + args[1].got + args[2].got + args[3].got, 64);
    assert_int_equal(st.grown_past_max, st.size - 16);
    assert_true(st.size >= 64);
    assert_int_equal(st.dropped, 0);
    assert_true(atomic_load(&g_log.warnings) > 0); /* grew past max */
    sp_pool_destroy(pool);
    pthread_barrier_destroy(&held);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- hooks ------------------------------------------------------------------------------- */

static _Thread_local int tl_me;
static atomic_int g_created, g_disposed, g_wrong_thread, g_refused_inside;

static void h_create(void *item, void *user) {
    (void)item, (void)user;
    atomic_fetch_add(&g_created, 1);
}

static void h_dispose(void *item, void *user) {
    (void)item, (void)user;
    atomic_fetch_add(&g_disposed, 1);
}

static void h_acquire(void *item, const void *arg, void *user) {
    member *m = (member *)item;
    (void)arg;
    m->hook_thread = tl_me;
    /* its own member cannot be released inside the hook; the pool cannot be trimmed */
    if (sp_release((sp_pool *)user, item) == SP_ERR_NOT_LEASED) atomic_fetch_add(&g_refused_inside, 1);
    if (sp_trim((sp_pool *)user, 0) == 0) atomic_fetch_add(&g_refused_inside, 1);
}

static void h_release(void *item, void *user) {
    member *m = (member *)item;
    if (m->hook_thread != tl_me) atomic_fetch_add(&g_wrong_thread, 1);
    if (sp_release((sp_pool *)user, item) == SP_ERR_NOT_LEASED) atomic_fetch_add(&g_refused_inside, 1);
}

typedef struct hook_arg {
    sp_pool *pool;
    int me, n;
} hook_arg;

static void *hook_churn(void *v) {
    hook_arg *a = (hook_arg *)v;
    tl_me = a->me;
    for (int i = 0; i < a->n; i++) {
        member *m = (member *)sp_acquire(a->pool);
        if (!m) continue;
        if (m->hook_thread != a->me) atomic_fetch_add(&g_wrong_thread, 1);
        sp_release(a->pool, m);
    }
    return NULL;
}

static void hooks_run_on_the_calling_thread(void **state) {
    (void)state;
    log_reset();
    atomic_store(&g_created, 0);
    atomic_store(&g_disposed, 0);
    atomic_store(&g_wrong_thread, 0);
    atomic_store(&g_refused_inside, 0);
    sp_desc d = ts_desc("hooks");
    d.create = h_create;
    d.dispose = h_dispose;
    d.on_acquire = h_acquire;
    d.on_release = h_release;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    pool->cfg.user = pool; /* white-box, before any member is built: the hooks call their pool */
    hook_arg args[4];
    for (int i = 0; i < 4; i++) args[i] = (hook_arg){pool, i + 1, 500};
    run_threads(4, hook_churn, args, sizeof args[0]);
    assert_int_equal(atomic_load(&g_wrong_thread), 0);
    assert_int_equal(atomic_load(&g_refused_inside), 3 * 4 * 500);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.acquired, 2000);
    assert_int_equal(st.released, 2000);
    assert_int_equal((int)st.created, atomic_load(&g_created));
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_disposed), atomic_load(&g_created));
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- the calls that need quiescence -------------------------------------------------------- */

typedef struct keep_arg {
    sp_pool *pool;
    int keep, got;
} keep_arg;

static void *churn_and_keep(void *v) {
    keep_arg *a = (keep_arg *)v;
    for (int r = 0; r < 200; r++) {
        void *m[8];
        for (int i = 0; i < 8; i++) m[i] = sp_acquire(a->pool);
        for (int i = 0; i < 8; i++) sp_release(a->pool, m[i]);
    }
    for (int i = 0; i < a->keep; i++) a->got += sp_acquire(a->pool) != NULL;
    return NULL;
}

static bool count_each(void *item, void *user) {
    (void)item;
    (*(int *)user)++;
    return true;
}

static atomic_int g_on_release;
static void count_on_release(void *item, void *user) {
    (void)item, (void)user;
    atomic_fetch_add(&g_on_release, 1);
}

static void quiescent_calls_see_every_thread(void **state) {
    (void)state;
    log_reset();
    atomic_store(&g_on_release, 0);
    sp_desc d = ts_desc("quiet");
    d.on_release = count_on_release;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    keep_arg args[4];
    for (int i = 0; i < 4; i++) args[i] = (keep_arg){pool, 10 + i, 0};
    run_threads(4, churn_and_keep, args, sizeof args[0]);
    assert_int_equal(args[0].got + args[1].got + args[2].got + args[3].got, 46);
    int n = 0;
    assert_int_equal(sp_each(pool, count_each, &n), 46);
    assert_int_equal(n, 46);
    n = 0;
    for (void *m = sp_first(pool); m; m = sp_next(pool, m)) n++;
    assert_int_equal(n, 46);
    n = 0;
    for (sp_iter it = sp_iter_first(pool); it.item; sp_iter_next(pool, &it)) n++;
    assert_int_equal(n, 46);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.leased, 46);
    assert_int_equal(st.free, st.size - 46);
    int released_before = atomic_load(&g_on_release);
    assert_int_equal(sp_release_all(pool), 46);
    assert_int_equal(atomic_load(&g_on_release) - released_before, 46);
    sp_stats_get(pool, &st);
    assert_int_equal(st.leased, 0);
    assert_int_equal(st.released, st.acquired);
    size_t size = st.size;
    assert_int_equal(sp_trim(pool, 4), size - 4); /* the free members in every cache too */
    sp_stats_get(pool, &st);
    assert_int_equal(st.size, 4);
    /* and the pool works on after the windows */
    void *m = sp_acquire(pool);
    assert_non_null(m);
    assert_true(sp_is_leased(pool, m));
    sp_handle h = sp_handle_of(pool, m);
    assert_ptr_equal(sp_resolve(pool, h), m);
    assert_int_equal(sp_clear(pool), 4);
    assert_null(sp_resolve(pool, h));
    assert_true(sp__pool_check(pool));
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
    assert_int_equal(atomic_load(&g_log.errors), 0);
}

/* ---- stats while threads run ---------------------------------------------------------------- */

typedef struct watch_arg {
    sp_pool *pool;
    int me;
    atomic_int *stop, *backwards;
} watch_arg;

static void *watch_or_churn(void *v) {
    watch_arg *a = (watch_arg *)v;
    if (a->me > 0) {
        for (int r = 0; r < 3000; r++) {
            void *m = sp_acquire(a->pool);
            sp_release(a->pool, m);
        }
        atomic_fetch_sub(a->stop, 1);
        return NULL;
    }
    uint64_t acquired = 0, released = 0;
    while (atomic_load(a->stop) > 0) {
        sp_stats st;
        sp_stats_get(a->pool, &st);
        if (st.acquired < acquired || st.released < released) atomic_fetch_add(a->backwards, 1);
        acquired = st.acquired;
        released = st.released;
    }
    return NULL;
}

static void stats_are_monotone_while_threads_run(void **state) {
    (void)state;
    sp_desc d = ts_desc("watched");
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    atomic_int stop = 3, backwards = 0;
    watch_arg args[4];
    for (int i = 0; i < 4; i++) args[i] = (watch_arg){pool, i, &stop, &backwards};
    run_threads(4, watch_or_churn, args, sizeof args[0]);
    assert_int_equal(atomic_load(&backwards), 0);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.acquired, 9000);
    assert_int_equal(st.released, 9000);
    sp_pool_destroy(pool);
}

/* ---- the registry ------------------------------------------------------------------------ */

typedef struct reg_arg {
    sp_registry *reg;
    int me;
    atomic_int *bad;
} reg_arg;

static void *spawn_and_release(void *v) {
    reg_arg *a = (reg_arg *)v;
    void *held[32];
    for (int r = 0; r < 100; r++) {
        for (int i = 0; i < 32; i++) {
            held[i] = sp_spawn(a->reg, (i + a->me) & 1 ? "sparks" : "smoke", NULL);
            if (!held[i]) atomic_fetch_add(a->bad, 1);
        }
        for (int i = 0; i < 32; i++)
            if (sp_registry_release(a->reg, held[i]) != SP_OK) atomic_fetch_add(a->bad, 1);
    }
    return NULL;
}

static void registry_spawns_and_releases_from_threads(void **state) {
    (void)state;
    log_reset();
    sp_registry *reg = sp_registry_create();
    assert_non_null(reg);
    sp_desc d = ts_desc_counted("sparks");
    d.chunk_items = 8; /* the fallback's ranges: the registry's index changes as threads spawn */
    assert_non_null(sp_registry_add(reg, "sparks", &d));
    d = ts_desc("smoke"); /* its reservation (the fallback's ranges in a fallback build) */
    assert_non_null(sp_registry_add(reg, "smoke", &d));
    atomic_int bad = 0;
    reg_arg args[4];
    for (int i = 0; i < 4; i++) args[i] = (reg_arg){reg, i, &bad};
    run_threads(4, spawn_and_release, args, sizeof args[0]);
    assert_int_equal(atomic_load(&bad), 0);
    sp_stats a, b;
    sp_stats_get(sp_registry_get(reg, "sparks"), &a);
    sp_stats_get(sp_registry_get(reg, "smoke"), &b);
    assert_int_equal(a.acquired + b.acquired, 4 * 100 * 32);
    assert_int_equal(a.leased + b.leased, 0);
    sp_registry_destroy(reg);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- debug sites --------------------------------------------------------------------------- */

static void *leak_three(void *v) {
    sp_pool *pool = *(sp_pool **)v;
    for (int i = 0; i < 3; i++) (void)sp_acquire_at(pool, __FILE__, __LINE__);
    return NULL;
}

static void leak_report_names_sites_of_every_thread(void **state) {
    (void)state;
    log_reset();
    sp_desc d = ts_desc("leaky");
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    sp_pool *same[4] = {pool, pool, pool, pool};
    run_threads(4, leak_three, same, sizeof same[0]);
    assert_int_equal(sp_leak_report(pool, SP_LOG_WARN), 12);
    if (SP_DEBUG) assert_non_null(strstr(g_log.last, "test_threads_policies.c"));
    assert_int_equal(sp_release_all(pool), 12);
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- a call that needs quiescence, made while another thread is inside the pool ---------- */

static pthread_barrier_t g_inside, g_checked;

static void wait_in_hook(void *item, const void *arg, void *user) {
    (void)item, (void)arg, (void)user;
    pthread_barrier_wait(&g_inside); /* the main thread calls sp_trim now */
    pthread_barrier_wait(&g_checked);
}

static void *acquire_once(void *v) {
    sp_pool *pool = *(sp_pool **)v;
    void *m = sp_acquire(pool);
    sp_release(pool, m);
    return NULL;
}

static void debug_build_reports_a_call_that_needs_quiescence(void **state) {
    (void)state;
    if (!SP_DEBUG) skip(); /* the mark is a debug build's */
    log_reset();
    sp_desc d = ts_desc("busy");
    d.on_acquire = wait_in_hook;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    pthread_barrier_init(&g_inside, NULL, 2);
    pthread_barrier_init(&g_checked, NULL, 2);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, acquire_once, &pool), 0);
    pthread_barrier_wait(&g_inside);
    sp_stats st;
    sp_stats_get(pool, &st); /* fine at any time */
    assert_int_equal(atomic_load(&g_log.errors), 0);
    assert_int_equal(sp_trim(pool, 1000), 0); /* needs quiescence: the other thread is inside */
    assert_int_equal(atomic_load(&g_log.errors), 1);
    assert_non_null(strstr(g_log.last, "sp_trim while another thread is inside"));
    pthread_barrier_wait(&g_checked);
    pthread_join(t, NULL);
    sp_pool_destroy(pool);
    pthread_barrier_destroy(&g_inside);
    pthread_barrier_destroy(&g_checked);
    assert_int_equal(atomic_load(&g_log.errors), 1);
}

/* ---- model check at quiescent points ---------------------------------------------------- */

#define MODEL_THREADS 4
#define MODEL_HELD 24
#define EXCHANGE 16
typedef struct model {
    sp_pool *pool;
    pthread_barrier_t round_end, round_start;
    _Atomic(member *) exchange[EXCHANGE]; /* members in flight between threads */
    member *held[MODEL_THREADS][MODEL_HELD];
    int held_n[MODEL_THREADS];
    atomic_int violations, stop;
} model;

typedef struct model_arg {
    model *m;
    int me;
} model_arg;

static void *model_thread(void *v) {
    model_arg *a = (model_arg *)v;
    model *m = a->m;
    int me = a->me, id = me + 1;
    uint32_t seed = 77u + (uint32_t)me * 1000003u;
    for (;;) {
        pthread_barrier_wait(&m->round_start);
        if (atomic_load(&m->stop)) return NULL;
        for (int op = 0; op < 400; op++) {
            uint32_t r = rnd(&seed) % 4u;
            int *n = &m->held_n[me];
            if (r == 0 && *n < MODEL_HELD) { /* acquire */
                member *x = (member *)sp_acquire(m->pool);
                if (x) {
                    take(x, id, &m->violations);
                    m->held[me][(*n)++] = x;
                }
            } else if (r == 1 && *n > 0) { /* release one it holds */
                member *x = m->held[me][--(*n)];
                give_up(x, id, &m->violations);
                if (sp_release(m->pool, x) != SP_OK) atomic_fetch_add(&m->violations, 1);
            } else if (r == 2 && *n > 0) { /* hand one over */
                member *x = m->held[me][*n - 1];
                member *none = NULL;
                int k = (int)(rnd(&seed) % EXCHANGE);
                give_up(x, id, &m->violations);
                if (atomic_compare_exchange_strong(&m->exchange[k], &none, x))
                    (*n)--;
                else
                    take(x, id, &m->violations);
            } else if (r == 3 && *n < MODEL_HELD) { /* take one over */
                int k = (int)(rnd(&seed) % EXCHANGE);
                member *x = atomic_exchange(&m->exchange[k], NULL);
                if (x) {
                    take(x, id, &m->violations);
                    m->held[me][(*n)++] = x;
                }
            }
        }
        pthread_barrier_wait(&m->round_end);
    }
}

static void model_counts_and_ownership_hold_at_quiescent_points(void **state) {
    (void)state;
    log_reset();
    model *m = (model *)calloc(1, sizeof *m);
    assert_non_null(m);
    sp_desc d = ts_desc_counted("model");
    d.max = 80; /* below what the threads may want: drops happen */
    m->pool = sp_pool_create(&d);
    assert_non_null(m->pool);
    pthread_barrier_init(&m->round_start, NULL, MODEL_THREADS + 1);
    pthread_barrier_init(&m->round_end, NULL, MODEL_THREADS + 1);
    pthread_t t[MODEL_THREADS];
    model_arg args[MODEL_THREADS];
    for (int i = 0; i < MODEL_THREADS; i++) {
        args[i] = (model_arg){m, i};
        assert_int_equal(pthread_create(&t[i], NULL, model_thread, &args[i]), 0);
    }
    for (int round = 0; round < 25; round++) {
        pthread_barrier_wait(&m->round_start);
        pthread_barrier_wait(&m->round_end);
        /* quiescent: every member is held by one thread or in flight, never two */
        size_t owned = 0;
        for (int i = 0; i < MODEL_THREADS; i++) {
            owned += (size_t)m->held_n[i];
            for (int k = 0; k < m->held_n[i]; k++) {
                assert_int_equal(atomic_load(&m->held[i][k]->owner), i + 1);
                assert_true(sp_is_leased(m->pool, m->held[i][k]));
            }
        }
        for (int k = 0; k < EXCHANGE; k++) {
            member *x = atomic_load(&m->exchange[k]);
            if (!x) continue;
            owned++;
            assert_int_equal(atomic_load(&x->owner), 0);
            assert_true(sp_is_leased(m->pool, x));
        }
        sp_stats st;
        sp_stats_get(m->pool, &st);
        assert_int_equal(st.leased, owned);
        assert_int_equal(st.leased + st.free, st.size);
        assert_true(st.size <= 80);
        assert_int_equal(st.acquired - st.released, st.leased);
        assert_true(sp__pool_check(m->pool));
        assert_int_equal(atomic_load(&m->violations), 0);
    }
    atomic_store(&m->stop, 1);
    pthread_barrier_wait(&m->round_start);
    for (int i = 0; i < MODEL_THREADS; i++) pthread_join(t[i], NULL);
    sp_release_all(m->pool);
    sp_pool_destroy(m->pool);
    pthread_barrier_destroy(&m->round_start);
    pthread_barrier_destroy(&m->round_end);
    free(m);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals_name_the_field),
        cmocka_unit_test(drop_and_max_hold_for_built_members),
        cmocka_unit_test(hooks_run_on_the_calling_thread),
        cmocka_unit_test(quiescent_calls_see_every_thread),
        cmocka_unit_test(stats_are_monotone_while_threads_run),
        cmocka_unit_test(registry_spawns_and_releases_from_threads),
        cmocka_unit_test(leak_report_names_sites_of_every_thread),
        cmocka_unit_test(model_counts_and_ownership_hold_at_quiescent_points),
        cmocka_unit_test(debug_build_reports_a_call_that_needs_quiescence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
