/* SPDX-License-Identifier: Zlib */
/* Iteration: sp_first/sp_next visit every leased member once, in the pool's order (oldest
   acquisition first, or memory order), and stay safe when the current member is released. The
   last test is a deterministic stress test: a fixed-seed random mix of acquire, acquire_force,
   release, release_all and misuse runs against a tiny model of the pool (an array in acquisition
   order plus the counters), and after every step the iteration order, the reclaim victims, the
   stats and the handles of ended lives must match the model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* sp__pool_check: white-box invariants */

#include <string.h>

/* Collects the iteration order into out; returns the count (stops at cap + 1 to catch loops). */
static size_t collect(const sp_pool *p, void **out, size_t cap) {
    size_t n = 0;
    for (void *it = sp_first(p); it; it = sp_next(p, it)) {
        if (n == cap) return cap + 1;
        out[n++] = it;
    }
    return n;
}

/* The slot index a handle names (its low 24 bits): memory order is ascending slot index. */
static uint32_t slot_of_handle(sp_handle h) { return (uint32_t)(h.id & 0xFFFFFFu); }

static void expect_order(const sp_pool *p, void *const *want, size_t n) {
    void *got[256];
    size_t m = collect(p, got, 256);
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++) assert_ptr_equal(got[i], want[i]);
}

static void empty_pool_has_no_first(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    d.initial = 4;
    sp_pool *p = sp_pool_create(&d);
    assert_null(sp_first(p));
    void *a = sp_acquire(p);
    assert_ptr_equal(sp_first(p), a);
    assert_null(sp_next(p, a));
    sp_release(p, a);
    assert_null(sp_first(p));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void iteration_visits_every_leased_member_once_oldest_first(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    d.chunk_items = 3;
    d.order = SP_ORDER_ACQUISITION;
    sp_pool *p = sp_pool_create(&d);
    void *m[10];
    for (int i = 0; i < 10; i++) m[i] = sp_acquire(p);
    expect_order(p, m, 10);
    sp_release(p, m[0]);
    sp_release(p, m[4]);
    sp_release(p, m[9]);
    void *want1[] = {m[1], m[2], m[3], m[5], m[6], m[7], m[8]};
    expect_order(p, want1, 7);
    /* Re-acquired members join at the end, whatever memory they reuse. */
    void *x = sp_acquire(p), *y = sp_acquire(p);
    void *want2[] = {m[1], m[2], m[3], m[5], m[6], m[7], m[8], x, y};
    expect_order(p, want2, 9);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void iteration_in_memory_order_follows_the_slots_not_the_acquisitions(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    d.chunk_items = 3; /* four chunks */
    sp_pool *p = sp_pool_create(&d); /* DROP: SP_ORDER_MEMORY by default */
    void *m[10];
    for (int i = 0; i < 10; i++) m[i] = sp_acquire(p);
    expect_order(p, m, 10); /* a fresh pool builds in slot order */
    sp_release(p, m[0]);
    sp_release(p, m[4]);
    sp_release(p, m[9]);
    /* The free list hands back m[9]'s slot, then m[4]'s: x and y keep their places in memory
       instead of joining at the end. */
    void *x = sp_acquire(p), *y = sp_acquire(p);
    assert_ptr_equal(x, m[9]);
    assert_ptr_equal(y, m[4]);
    void *want[] = {m[1], m[2], m[3], y, m[5], m[6], m[7], m[8], x};
    expect_order(p, want, 9);
    for (int i = 1; i < 9; i++)
        assert_true(slot_of_handle(sp_handle_of(p, want[i - 1])) < slot_of_handle(sp_handle_of(p, want[i])));
    /* Same order for sp_leased_each and sp_each. */
    assert_int_equal(sp_leased_each(p, NULL, NULL), 9);
    sp_release_all(p);
    assert_null(sp_first(p));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void next_of_anything_but_a_leased_member_is_null(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    sp_pool *p = sp_pool_create(&d);
    char *a = sp_acquire(p), *b = sp_acquire(p);
    sp_acquire(p);
    sp_release(p, b);
    int local;
    assert_null(sp_next(p, b));
    assert_null(sp_next(p, a + 1));
    assert_null(sp_next(p, &local));
    assert_null(sp_next(p, NULL));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void releasing_the_current_member_after_taking_next_is_safe(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    void *m[20];
    for (int i = 0; i < 20; i++) m[i] = sp_acquire(p);
    int visited = 0;
    for (void *it = sp_first(p), *nx; it; it = nx) {
        nx = sp_next(p, it);
        assert_ptr_equal(it, m[visited]);
        if (visited % 2 == 0) assert_int_equal(sp_release(p, it), SP_OK);
        visited++;
    }
    assert_int_equal(visited, 20);
    void *odd[10];
    for (int i = 0; i < 10; i++) odd[i] = m[2 * i + 1];
    expect_order(p, odd, 10);
    /* Release everything from inside the loop. */
    visited = 0;
    for (void *it = sp_first(p), *nx; it; it = nx) {
        nx = sp_next(p, it);
        assert_int_equal(sp_release(p, it), SP_OK);
        visited++;
    }
    assert_int_equal(visited, 10);
    assert_null(sp_first(p));
    EXPECT_STATS(p, .size = 20, .free = 20, .peak_leased = 20, .created = 20, .acquired = 20,
                 .released = 20);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void reclaim_in_memory_order_takes_each_member_in_turn(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    d.max = 4;
    d.overflow = SP_OVERFLOW_RECLAIM;
    d.order = SP_ORDER_MEMORY;
    sp_pool *p = sp_pool_create(&d);
    void *m[4];
    for (int i = 0; i < 4; i++) m[i] = sp_acquire(p);
    /* Round robin from the slot after the last victim, not the same member every time. */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 4; i++) assert_ptr_equal(sp_acquire(p), m[i]);
    expect_order(p, m, 4); /* reclaimed members keep their place */
    sp_release(p, m[1]);   /* the next in turn is free now: it is simply handed out */
    assert_ptr_equal(sp_acquire(p), m[1]);
    assert_ptr_equal(sp_acquire(p), m[0]); /* the turn goes on where it was */
    assert_ptr_equal(sp_acquire(p), m[1]);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void reclaimed_member_moves_to_the_end(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "iter", 16);
    d.max = 4;
    d.overflow = SP_OVERFLOW_RECLAIM;
    sp_pool *p = sp_pool_create(&d);
    void *m[4];
    for (int i = 0; i < 4; i++) m[i] = sp_acquire(p);
    assert_ptr_equal(sp_acquire(p), m[0]);
    void *want[] = {m[1], m[2], m[3], m[0]};
    expect_order(p, want, 4);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* --- deterministic stress against a model ------------------------------------------------- */

enum { MODEL_CAP = 512, DEAD_CAP = 64 };

typedef struct model {
    void *leased[MODEL_CAP]; /* in acquisition order */
    sp_handle handles[MODEL_CAP];
    size_t n;
    sp_handle dead[DEAD_CAP]; /* handles of ended lives, a ring */
    size_t dead_n;
    size_t max;
    sp_overflow overflow;
    bool ordered;            /* SP_ORDER_ACQUISITION; otherwise memory (slot) order */
    uint32_t cursor;         /* memory order: where the next reclaim looks first */
    test_counts c;
} model;

/* Index (into m->leased) of the member a reclaim takes: the oldest, or in memory order the
   first at or after the cursor's slot, wrapping around. */
static size_t model_victim(model *m) {
    if (m->ordered) return 0;
    size_t best = SIZE_MAX, lowest = SIZE_MAX;
    for (size_t i = 0; i < m->n; i++) {
        uint32_t s = slot_of_handle(m->handles[i]);
        if (s >= m->cursor && (best == SIZE_MAX || s < slot_of_handle(m->handles[best]))) best = i;
        if (lowest == SIZE_MAX || s < slot_of_handle(m->handles[lowest])) lowest = i;
    }
    if (best == SIZE_MAX) best = lowest;
    m->cursor = slot_of_handle(m->handles[best]) + 1u;
    return best;
}

/* The iteration order the model predicts, into out. */
static void model_order(const model *m, void **out) {
    size_t idx[MODEL_CAP];
    for (size_t i = 0; i < m->n; i++) idx[i] = i;
    if (!m->ordered) { /* insertion sort by slot index */
        for (size_t i = 1; i < m->n; i++) {
            size_t k = idx[i], j = i;
            for (; j > 0 && slot_of_handle(m->handles[idx[j - 1]]) > slot_of_handle(m->handles[k]); j--)
                idx[j] = idx[j - 1];
            idx[j] = k;
        }
    }
    for (size_t i = 0; i < m->n; i++) out[i] = m->leased[idx[i]];
}

static void model_kill(model *m, size_t i) {
    m->dead[m->dead_n++ % DEAD_CAP] = m->handles[i];
    memmove(&m->leased[i], &m->leased[i + 1], (m->n - i - 1) * sizeof m->leased[0]);
    memmove(&m->handles[i], &m->handles[i + 1], (m->n - i - 1) * sizeof m->handles[0]);
    m->n--;
    m->c.leased--;
    m->c.free++;
    m->c.released++;
}

static size_t model_find(const model *m, const void *item) {
    for (size_t i = 0; i < m->n; i++)
        if (m->leased[i] == item) return i;
    return SIZE_MAX;
}

static void model_append(model *m, sp_pool *p, void *item) {
    assert_true(m->n < MODEL_CAP);
    m->leased[m->n] = item;
    m->handles[m->n] = sp_handle_of(p, item);
    assert_false(sp_handle_is_null(m->handles[m->n]));
    m->n++;
}

/* One acquisition; force says sp_acquire_force. Predicts the outcome, then checks it. */
static void model_acquire(model *m, sp_pool *p, int force) {
    void *got = force ? sp_acquire_force(p, NULL) : sp_acquire(p);
    int saturated = m->c.free == 0 && m->max != 0 && m->c.size >= m->max;
    if (!saturated) {
        assert_non_null(got);
        assert_int_equal(model_find(m, got), SIZE_MAX);
        if (m->c.free == 0) {
            m->c.size++;
            m->c.created++;
            if (m->max != 0 && m->c.size > m->max) m->c.grown_past_max++;
        } else {
            m->c.free--;
        }
        m->c.leased++;
        m->c.acquired++;
        model_append(m, p, got);
    } else if (m->overflow == SP_OVERFLOW_GROW) {
        assert_non_null(got);
        m->c.size++;
        m->c.created++;
        m->c.grown_past_max++;
        m->c.leased++;
        m->c.acquired++;
        model_append(m, p, got);
    } else if (m->overflow == SP_OVERFLOW_RECLAIM || force) {
        assert_true(m->n > 0);
        size_t victim = model_victim(m);
        assert_ptr_equal(got, m->leased[victim]);
        model_kill(m, victim);
        m->c.free--;
        m->c.leased++;
        m->c.acquired++;
        m->c.reclaimed++;
        model_append(m, p, got);
    } else {
        assert_null(got);
        m->c.dropped++;
    }
    if (m->c.leased > m->c.peak_leased) m->c.peak_leased = m->c.leased;
}

static void model_check(const model *m, const sp_pool *p) {
    assert_true(sp__pool_check(p));
    void *got[MODEL_CAP], *want[MODEL_CAP];
    size_t n = collect(p, got, MODEL_CAP);
    assert_int_equal(n, m->n);
    model_order(m, want);
    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(got[i], want[i]);
        assert_ptr_equal(sp_resolve(p, m->handles[i]), m->leased[i]);
    }
    size_t dead = m->dead_n < DEAD_CAP ? m->dead_n : DEAD_CAP;
    for (size_t i = 0; i < dead; i++) assert_null(sp_resolve(p, m->dead[i]));
    EXPECT_STATS(p, .size = m->c.size, .leased = m->c.leased, .free = m->c.free,
                 .peak_leased = m->c.peak_leased, .created = m->c.created, .acquired = m->c.acquired,
                 .released = m->c.released, .reclaimed = m->c.reclaimed, .dropped = m->c.dropped,
                 .grown_past_max = m->c.grown_past_max);
}

static void run_model(sp_overflow overflow, sp_order order, size_t max, uint32_t seed) {
    test_env env;
    sp_desc d = test_env_desc(&env, "model", 24);
    d.overflow = overflow;
    d.order = order;
    d.max = max;
    d.chunk_items = 16;
    sp_pool *p = sp_pool_create(&d);
    static model m;
    memset(&m, 0, sizeof m);
    m.max = max;
    m.overflow = overflow;
    m.ordered = order == SP_ORDER_ACQUISITION || (order == SP_ORDER_DEFAULT && overflow == SP_OVERFLOW_RECLAIM);
    uint32_t rng = seed;
    for (int step = 0; step < 20000; step++) {
        uint32_t r = test_rand(&rng) % 1000;
        /* Drift the load up and down so the pool both saturates and drains. */
        int phase_up = (step / 2000) % 2 == 0;
        uint32_t acquire_share = phase_up ? 650 : 350;
        if (r < acquire_share) {
            if (m.n < MODEL_CAP - 1) model_acquire(&m, p, r % 7 == 0);
        } else if (r < 990) {
            if (m.n > 0) {
                size_t i = test_rand(&rng) % m.n;
                void *item = m.leased[i];
                assert_int_equal(sp_release(p, item), SP_OK);
                model_kill(&m, i);
                /* Misuse now and then: nothing may change. */
                if (r % 5 == 0) assert_int_equal(sp_release(p, item), SP_ERR_NOT_LEASED);
            }
        } else if (r < 992) {
            size_t n = m.n;
            assert_int_equal(sp_release_all(p), n);
            while (m.n) model_kill(&m, 0);
        } else {
            model_check(&m, p);
        }
        if (step % 101 == 0) model_check(&m, p);
    }
    model_check(&m, p);
    assert_int_equal(env.hooks.created, (int)m.c.created);
    assert_int_equal(env.hooks.acquired, (int)m.c.acquired);
    assert_int_equal(env.hooks.released, (int)m.c.released);
    assert_int_equal(env.log.errors, 0);
    sp_pool_destroy(p);
    assert_int_equal(env.hooks.disposed, (int)m.c.created);
    EXPECT_NO_LEAK(&env.alloc);
}

static void iteration_and_stats_match_a_model_under_random_churn(void **state) {
    (void)state;
    run_model(SP_OVERFLOW_DROP, SP_ORDER_DEFAULT, 0, 1);
    run_model(SP_OVERFLOW_DROP, SP_ORDER_DEFAULT, 100, 2);
    run_model(SP_OVERFLOW_DROP, SP_ORDER_ACQUISITION, 100, 6);
    run_model(SP_OVERFLOW_RECLAIM, SP_ORDER_DEFAULT, 64, 3);
    run_model(SP_OVERFLOW_RECLAIM, SP_ORDER_DEFAULT, 5, 4);
    run_model(SP_OVERFLOW_RECLAIM, SP_ORDER_MEMORY, 64, 7);
    run_model(SP_OVERFLOW_RECLAIM, SP_ORDER_MEMORY, 5, 8);
    run_model(SP_OVERFLOW_GROW, SP_ORDER_DEFAULT, 40, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_pool_has_no_first),
        cmocka_unit_test(iteration_visits_every_leased_member_once_oldest_first),
        cmocka_unit_test(iteration_in_memory_order_follows_the_slots_not_the_acquisitions),
        cmocka_unit_test(next_of_anything_but_a_leased_member_is_null),
        cmocka_unit_test(releasing_the_current_member_after_taking_next_is_safe),
        cmocka_unit_test(reclaimed_member_moves_to_the_end),
        cmocka_unit_test(reclaim_in_memory_order_takes_each_member_in_turn),
        cmocka_unit_test(iteration_and_stats_match_a_model_under_random_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
