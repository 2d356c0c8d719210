/* SPDX-License-Identifier: Zlib */
/* What one thread parks in its cache of a thread-safe pool (its two magazines), in members and
   in bytes: the default bound (thread_cache_bytes, 256 KiB) leaves small members their default
   magazines and their growth, and caps large members, at creation and when cross-thread
   traffic grows the magazines; an explicit bound, one below two members (a member a
   magazine) and SIZE_MAX (no bound); and the worked example of docs/threads.md ("How much the
   caches hold"), number for number. White-box: the thread's magazines through src/threads.h.
   They also run under ThreadSanitizer (build/tsan in `make test`). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <spawnpool_sizes.h>

#include "sp_internal.h"
#include "threads.h"
#include "testutil.h"
#include "threads_util.h"

enum { KIB = 1024 };

static sp_desc sized_desc(const char *name, size_t item_size) {
    sp_desc d = ts_desc_counted(name);
    d.item_size = item_size;
    d.magazine_size = 0; /* the default, 64 */
    return d;
}

/* This thread leases n members, then releases them all: the most its cache held on the way
   (both magazines full, just before the depot takes one), and their capacity then. */
static void fill_own_cache(sp_pool *pool, size_t n, size_t *members, size_t *capacity) {
    void **held = (void **)calloc(n, sizeof *held);
    assert_non_null(held);
    for (size_t i = 0; i < n; i++) assert_non_null(held[i] = sp_acquire(pool));
    *members = *capacity = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(sp_release(pool, held[i]), SP_OK);
        size_t m, c;
        sp__ts_thread_cached(pool, &m, &c);
        if (m > *members) *members = m, *capacity = c;
    }
    free(held);
}

/* ---- the default bound -------------------------------------------------------------------- */

static void small_members_keep_the_default_magazines(void **state) {
    (void)state;
    log_reset();
    static const size_t sizes[] = {16, 64, 128, 1024, 2048};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        sp_desc d = sized_desc("small", sizes[i]);
        sp_pool *pool = sp_pool_create(&d);
        assert_non_null(pool);
        assert_int_equal(sp__ts_magazine_size(pool), 64);
        /* 16x growth up to 128 B members; 131072 / 1024 and / 2048 above */
        assert_int_equal(sp__ts_magazine_most(pool), sizes[i] <= 128 ? 1024 : 131072 / sizes[i]);
        size_t members, capacity;
        fill_own_cache(pool, 300, &members, &capacity);
        assert_int_equal(members, 128); /* both magazines full: the bound did not cut them */
        assert_int_equal(capacity, 128);
        assert_true(sp__pool_check(pool));
        sp_pool_destroy(pool);
    }
    assert_int_equal(atomic_load(&g_live_bytes), 0);
    assert_int_equal(atomic_load(&g_log.warnings) + atomic_load(&g_log.errors), 0);
}

/* 8 KiB members: 2 x 64 of them would park 1 MiB a thread; the bound leaves 2 x 16, 256 KiB. */
static void large_members_are_capped_in_bytes(void **state) {
    (void)state;
    log_reset();
    static const size_t sizes[] = {4096, 8192, 65536, 1u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        sp_desc d = sized_desc("large", sizes[i]);
        sp_pool *pool = sp_pool_create(&d);
        assert_non_null(pool);
        size_t per_mag = sizes[i] <= 131072 ? 131072 / sizes[i] : 1; /* a 1 MiB member: one */
        assert_int_equal(sp__ts_magazine_size(pool), per_mag);
        assert_int_equal(sp__ts_magazine_most(pool), per_mag);
        size_t members, capacity;
        fill_own_cache(pool, 100, &members, &capacity);
        assert_int_equal(members, 2 * per_mag);
        assert_int_equal(capacity, 2 * per_mag);
        if (per_mag > 1) assert_true(members * sizes[i] <= 256 * KIB);
        /* the rest went to the depot, where any thread takes them */
        sp_stats st;
        sp_stats_get(pool, &st);
        assert_int_equal(st.leased, 0);
        assert_int_equal(st.free, st.size);
        assert_true(sp__pool_check(pool));
        sp_pool_destroy(pool);
    }
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* An explicit magazine_size above the bound is cut to it too. */
static void magazine_size_above_the_bound_is_cut(void **state) {
    (void)state;
    sp_desc d = sized_desc("cut", 8192);
    d.magazine_size = 64;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    assert_int_equal(sp__ts_magazine_size(pool), 16);
    sp_pool_destroy(pool);
}

/* ---- growth ------------------------------------------------------------------------------- */

#define QCAP 64
typedef struct handoff {
    pthread_mutex_t m;
    pthread_cond_t cv;
    void *items[QCAP][2];
    int head, count, done;
} handoff;

typedef struct pc_arg {
    sp_pool *pools[2];
    handoff *q;
    int n; /* 0: the consumer */
    atomic_int *violations;
} pc_arg;

/* Producer: a member of each pool, handed to the consumer, which releases both. */
static void *pc_run(void *v) {
    pc_arg *a = (pc_arg *)v;
    handoff *q = a->q;
    for (int i = 0; a->n == 0 || i < a->n; i++) {
        void *pair[2] = {NULL, NULL};
        if (a->n) {
            pair[0] = sp_acquire(a->pools[0]);
            pair[1] = sp_acquire(a->pools[1]);
            if (!pair[0] || !pair[1]) atomic_fetch_add(a->violations, 1);
        }
        pthread_mutex_lock(&q->m);
        if (a->n) {
            while (q->count == QCAP) pthread_cond_wait(&q->cv, &q->m);
            int at = (q->head + q->count++) % QCAP;
            q->items[at][0] = pair[0];
            q->items[at][1] = pair[1];
        } else {
            while (q->count == 0 && !q->done) pthread_cond_wait(&q->cv, &q->m);
            if (q->count == 0) {
                pthread_mutex_unlock(&q->m);
                return NULL;
            }
            pair[0] = q->items[q->head][0];
            pair[1] = q->items[q->head][1];
            q->head = (q->head + 1) % QCAP;
            q->count--;
        }
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->m);
        for (int k = 0; k < 2 && !a->n; k++)
            if (pair[k] && sp_release(a->pools[k], pair[k]) != SP_OK) atomic_fetch_add(a->violations, 1);
    }
    pthread_mutex_lock(&q->m);
    q->done = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->m);
    return NULL;
}

/* The same producer/consumer traffic through a pool of 64-byte members and one of 8 KiB
   members, both with magazines of 8 and a bound of 128 KiB: the small pool's magazines grow
   (16 x 8 = 128 a magazine at most), the large pool's stay at 8 (2 x 8 x 8 KiB = 128 KiB), and
   a thread's cache of it never holds more than that. */
static void growth_stops_at_the_bound(void **state) {
    (void)state;
    log_reset();
    sp_desc small = ts_desc_counted("grow_small");
    sp_desc large = sized_desc("grow_large", 8192);
    small.magazine_size = large.magazine_size = 8;
    small.thread_cache_bytes = large.thread_cache_bytes = 128 * KIB;
    pc_arg args[2];
    handoff q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.m, NULL);
    pthread_cond_init(&q.cv, NULL);
    atomic_int violations = 0;
    args[0] = (pc_arg){{sp_pool_create(&small), sp_pool_create(&large)}, &q, 20000, &violations};
    args[1] = args[0];
    args[1].n = 0;
    sp_pool **pools = args[0].pools;
    assert_non_null(pools[0]);
    assert_non_null(pools[1]);
    assert_int_equal(sp__ts_magazine_most(pools[0]), 128);
    assert_int_equal(sp__ts_magazine_most(pools[1]), 8);
    run_threads(2, pc_run, args, sizeof args[0]);
    assert_int_equal(atomic_load(&violations), 0);
    uint32_t grown = sp__ts_magazine_size(pools[0]);
    assert_true(grown > 8 && grown <= 128); /* the traffic grows magazines ... */
    assert_int_equal(sp__ts_magazine_size(pools[1]), 8); /* ... within the bound */
    size_t members, capacity;
    fill_own_cache(pools[0], 2 * grown + 10, &members, &capacity);
    assert_int_equal(members, 2 * (size_t)grown); /* new magazines: the grown size */
    fill_own_cache(pools[1], 2 * grown + 10, &members, &capacity);
    assert_int_equal(members, 16);
    assert_true(members * 8192 <= 128 * KIB);
    for (int k = 0; k < 2; k++) {
        sp_stats st;
        sp_stats_get(pools[k], &st);
        assert_int_equal(st.acquired, 20000 + 2 * (uint64_t)grown + 10);
        assert_int_equal(st.leased, 0);
        assert_true(sp__pool_check(pools[k]));
        sp_pool_destroy(pools[k]);
    }
    pthread_cond_destroy(&q.cv);
    pthread_mutex_destroy(&q.m);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
    assert_int_equal(atomic_load(&g_log.warnings) + atomic_load(&g_log.errors), 0);
}

/* ---- explicit bounds ---------------------------------------------------------------------- */

typedef struct churn_arg {
    sp_pool *pool;
    int me;
    atomic_int *violations;
    size_t most_cached; /* what the thread's cache held at most, in members */
} churn_arg;

static void *churn(void *v) {
    churn_arg *a = (churn_arg *)v;
    uint32_t seed = 0x9E3779B9u * (uint32_t)a->me + 1u;
    member *held[8];
    for (int r = 0; r < 2000; r++) {
        int k = 1 + (int)(rnd(&seed) % 8u), got = 0;
        for (int i = 0; i < k; i++) {
            member *m = (member *)sp_acquire(a->pool);
            if (!m) {
                atomic_fetch_add(a->violations, 1);
                continue;
            }
            take(m, a->me, a->violations);
            held[got++] = m;
        }
        while (got > 0) {
            member *m = held[--got];
            give_up(m, a->me, a->violations);
            if (sp_release(a->pool, m) != SP_OK) atomic_fetch_add(a->violations, 1);
        }
        size_t members, capacity;
        sp__ts_thread_cached(a->pool, &members, &capacity);
        if (members > a->most_cached) a->most_cached = members;
    }
    return NULL;
}

/* A bound below two members: magazines of one member, two a thread; the pool works as ever. */
static void a_bound_below_two_members_keeps_one_a_magazine(void **state) {
    (void)state;
    log_reset();
    sp_desc d = sized_desc("one", 4096);
    d.thread_cache_bytes = 1000;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    assert_int_equal(sp__ts_magazine_size(pool), 1);
    assert_int_equal(sp__ts_magazine_most(pool), 1);
    atomic_int violations = 0;
    churn_arg args[2] = {{pool, 1, &violations, 0}, {pool, 2, &violations, 0}};
    run_threads(2, churn, args, sizeof args[0]);
    assert_int_equal(atomic_load(&violations), 0);
    assert_true(args[0].most_cached <= 2 && args[1].most_cached <= 2);
    sp_stats st;
    sp_stats_get(pool, &st);
    assert_int_equal(st.leased, 0);
    assert_int_equal(st.acquired, st.released);
    assert_true(st.size <= 2 * 8 + 2 * 2); /* what two threads held at once, and cached */
    assert_true(sp__pool_check(pool));
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
    assert_int_equal(atomic_load(&g_log.warnings) + atomic_load(&g_log.errors), 0);
}

/* SIZE_MAX: no bound in bytes, the magazines of 0.5 (64, growing to 1024). A smaller explicit
   bound: members / 2 a magazine. */
static void explicit_bounds_size_the_magazines(void **state) {
    (void)state;
    sp_desc d = sized_desc("unbounded", 8192);
    d.thread_cache_bytes = SIZE_MAX;
    sp_pool *pool = sp_pool_create(&d);
    assert_non_null(pool);
    assert_int_equal(sp__ts_magazine_size(pool), 64);
    assert_int_equal(sp__ts_magazine_most(pool), 1024);
    size_t members, capacity;
    fill_own_cache(pool, 200, &members, &capacity);
    assert_int_equal(members, 128); /* 1 MiB of 8 KiB members */
    sp_pool_destroy(pool);
    d = sized_desc("4k", 64);
    d.thread_cache_bytes = 4096;
    pool = sp_pool_create(&d);
    assert_non_null(pool);
    assert_int_equal(sp__ts_magazine_size(pool), 32);
    assert_int_equal(sp__ts_magazine_most(pool), 32);
    fill_own_cache(pool, 100, &members, &capacity);
    assert_int_equal(members * 64, 4096);
    sp_pool_destroy(pool);
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* ---- docs/threads.md's worked example ----------------------------------------------------- */

/* A messaging library's 14 size classes at the defaults: a magazine's starting size and its
   most, and what one thread parks at most over all 14 pools (2 x most x stride, summed). */
static void the_worked_example_holds(void **state) {
    (void)state;
    static const size_t classes[14] = {16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096, 8192};
    static const uint32_t first[14] = {64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 32, 16};
    static const uint32_t most[14] = {1024, 1024, 1024, 1024, 682, 512, 341, 256, 170, 128, 85, 64, 32, 16};
    size_t parked = 0, parked_unbounded = 0, parked_start = 0;
    for (size_t i = 0; i < 14; i++) {
        sp_desc d = sized_desc("class", classes[i]);
        sp_pool *pool = sp_pool_create(&d);
        assert_non_null(pool);
        assert_int_equal(sp__ts_magazine_size(pool), first[i]);
        assert_int_equal(sp__ts_magazine_most(pool), most[i]);
        parked += 2u * most[i] * classes[i];
        parked_start += 2u * first[i] * classes[i];
        parked_unbounded += 2u * 1024u * classes[i];
        sp_pool_destroy(pool);
    }
    assert_int_equal(parked, 3110400);            /* 2.97 MiB a thread, grown */
    assert_int_equal(parked_start, 1415168);      /* 1.35 MiB at the starting size */
    assert_int_equal(parked_unbounded, 39419904); /* 37.6 MiB grown without the bound */
    assert_int_equal(atomic_load(&g_live_bytes), 0);
}

/* A thread-safe size-class set passes the bound to its class pools: at the default its 8 KiB
   class parks 2 x 16 members a thread, and an explicit bound sizes every class. */
static void a_size_class_set_bounds_each_class(void **state) {
    (void)state;
    log_reset();
    static const size_t bounds[] = {0, 64 * KIB};
    for (size_t b = 0; b < 2; b++) {
        sp_sizes *set = sp_sizes_create(&(sp_sizes_desc){.threads = SP_THREADS_SAFE,
                                                        .thread_cache_bytes = bounds[b],
                                                        .allocator = {.alloc = talloc, .free = tfree},
                                                        .logger = {tlog_fn, &g_log}});
        assert_non_null(set);
        size_t bound = bounds[b] ? bounds[b] : 256 * KIB;
        for (size_t k = 0; k < sp_sizes_class_count(set); k++) {
            size_t size = sp_sizes_class_size(set, k), by_bytes = bound / 2 / size;
            size_t most = by_bytes < 1024 ? by_bytes : 1024;
            assert_int_equal(sp__ts_magazine_most(sp_sizes_pool(set, k)), most);
        }
        void *m = sp_sizes_acquire(set, 8000);
        assert_non_null(m);
        assert_int_equal(sp_sizes_release(set, m), SP_OK);
        sp_sizes_destroy(set);
    }
    assert_int_equal(atomic_load(&g_live_bytes), 0);
    assert_int_equal(atomic_load(&g_log.warnings) + atomic_load(&g_log.errors), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_members_keep_the_default_magazines),
        cmocka_unit_test(large_members_are_capped_in_bytes),
        cmocka_unit_test(magazine_size_above_the_bound_is_cut),
        cmocka_unit_test(growth_stops_at_the_bound),
        cmocka_unit_test(a_bound_below_two_members_keeps_one_a_magazine),
        cmocka_unit_test(explicit_bounds_size_the_magazines),
        cmocka_unit_test(the_worked_example_holds),
        cmocka_unit_test(a_size_class_set_bounds_each_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
