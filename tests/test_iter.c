/* SPDX-License-Identifier: Zlib */
/* Walking the leased members while the walk's body changes the pool: sp_each and the sp_iter
   cursor against a model, in both orders; the 32-bit acquisition stamps wrapping under a
   long-leased member; sp_release_all's set; what sp_clear counts; the reclaim's tie rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

static sp_pool *make_pool(test_env *env, sp_order order, size_t chunk_items) {
    sp_desc d = test_env_desc(env, "iter", 16);
    d.order = order;
    d.chunk_items = chunk_items;
    return sp_pool_create(&d);
}

/* ---- the cursor walks what sp_each walks ---------------------------------------------------- */

static void cursor_walks_every_leased_member_in_the_pools_order(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        sp_pool *p = make_pool(&env, (sp_order)order, 3);
        sp_iter it = sp_iter_first(p);
        assert_null(it.item); /* empty */
        void *items[10];
        for (int i = 0; i < 10; i++) items[i] = sp_acquire(p);
        sp_release(p, items[3]);
        sp_release(p, items[7]);
        items[3] = sp_acquire(p); /* slot 7's or 3's again: the newest acquisition */
        size_t n = 0;
        void *seen[10];
        for (it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) seen[n++] = it.item;
        assert_int_equal(n, 9);
        /* the same order as sp_first/sp_next */
        size_t k = 0;
        for (void *m = sp_first(p); m; m = sp_next(p, m)) assert_ptr_equal(seen[k++], m);
        assert_int_equal(k, 9);
        sp_iter_next(p, &it); /* at the end it stays there */
        assert_null(it.item);
        sp_release_all(p);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

static void cursor_goes_on_when_the_body_releases_its_member_and_the_next(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        sp_pool *p = make_pool(&env, (sp_order)order, 4);
        void *items[9];
        for (int i = 0; i < 9; i++) items[i] = sp_acquire(p);
        size_t n = 0;
        for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) {
            assert_ptr_equal(it.item, items[2 * n]);
            n++;
            void *next = sp_next(p, it.item);
            assert_int_equal(sp_release(p, it.item), SP_OK); /* the bullet */
            if (next) assert_int_equal(sp_release(p, next), SP_OK); /* and its target */
        }
        assert_int_equal(n, 5);
        EXPECT_STATS(p, .size = 9, .free = 9, .peak_leased = 9, .created = 9, .acquired = 9, .released = 9);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* A collision check, ported literally: two nested cursors over one pool, and a hit releases
   both members. Every pair of members alive at the same time is looked at once. */
static void nested_cursors_survive_releasing_both_members_of_a_pair(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        sp_pool *p = make_pool(&env, (sp_order)order, 4);
        int *items[12];
        for (int i = 0; i < 12; i++) {
            items[i] = (int *)sp_acquire(p);
            *items[i] = i;
        }
        int hits = 0, pairs = 0;
        for (sp_iter a = sp_iter_first(p); a.item; sp_iter_next(p, &a)) {
            int *x = (int *)a.item;
            bool x_alive = true;
            for (sp_iter b = sp_iter_first(p); b.item && x_alive; sp_iter_next(p, &b)) {
                int *y = (int *)b.item;
                if (y == x) continue;
                pairs++;
                if (*x % 3 == 0 && *y == *x + 1) { /* a hit: both go */
                    assert_int_equal(sp_release(p, y), SP_OK);
                    assert_int_equal(sp_release(p, x), SP_OK);
                    hits++;
                    x_alive = false;
                }
            }
        }
        assert_int_equal(hits, 4);
        sp_stats st;
        sp_stats_get(p, &st);
        assert_int_equal(st.leased, 4);
        assert_true(pairs > 0);
        assert_true(sp__pool_check(p));
        sp_release_all(p);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* ---- against a model: whatever the body releases and acquires -------------------------------- */

typedef struct model_member {
    void *ptr;
    uint64_t seq;  /* acquisition number */
    uint32_t slot; /* from its handle */
} model_member;

typedef struct model {
    sp_pool *pool;
    bool memory;
    model_member m[256];
    size_t n;
    uint64_t seq;
    uint32_t rng;
    int acquire_budget;
    /* the walk: it visits only the members leased when it began, the ones acquired up to
       start_seq (acquisition order), or lying below end_slot (memory order: the slot after the
       last one leased; a member acquired meanwhile into a free slot below it is visited when it
       lies after the walk's place) */
    uint64_t start_seq;
    uint32_t end_slot;
    bool started;
    uint64_t last_seq;
    uint32_t last_slot;
    size_t visits;
} model;

static void model_acquire(model *md) {
    sp_handle h;
    void *ptr = sp_acquire_handle(md->pool, NULL, &h);
    assert_non_null(ptr);
    assert_true(md->n < 256);
    md->m[md->n].ptr = ptr;
    md->m[md->n].seq = ++md->seq;
    md->m[md->n].slot = (uint32_t)(h.id & 0xFFFFFFu);
    md->n++;
}

static void model_release_at(model *md, size_t i) {
    assert_int_equal(sp_release(md->pool, md->m[i].ptr), SP_OK);
    md->m[i] = md->m[--md->n];
}

static size_t model_find(const model *md, const void *ptr) {
    for (size_t i = 0; i < md->n; i++)
        if (md->m[i].ptr == ptr) return i;
    return SIZE_MAX;
}

static void model_walk_begins(model *md) {
    md->start_seq = md->seq;
    md->end_slot = 0;
    for (size_t i = 0; i < md->n; i++)
        if (md->m[i].slot + 1u > md->end_slot) md->end_slot = md->m[i].slot + 1u;
}

/* The member the walk must visit next: the first after the place of the last visit. */
static size_t model_expected(const model *md) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < md->n; i++) {
        const model_member *e = &md->m[i];
        if (md->memory ? e->slot >= md->end_slot : e->seq > md->start_seq) continue;
        bool after = !md->started || (md->memory ? e->slot > md->last_slot : e->seq > md->last_seq);
        if (!after) continue;
        if (best == SIZE_MAX || (md->memory ? e->slot < md->m[best].slot : e->seq < md->m[best].seq)) best = i;
    }
    return best;
}

/* One visit: check it is the expected member, then change the pool at random. */
static void model_visit(model *md, void *item) {
    size_t want = model_expected(md);
    assert_true(want != SIZE_MAX);
    assert_ptr_equal(item, md->m[want].ptr);
    md->started = true;
    md->last_seq = md->m[want].seq;
    md->last_slot = md->m[want].slot;
    md->visits++;
    uint32_t r = test_rand(&md->rng);
    if (r & 1u) { /* the member and maybe the one that would be next */
        size_t self = model_find(md, item);
        model_release_at(md, self);
        if (r & 2u) {
            size_t nx = model_expected(md);
            if (nx != SIZE_MAX) model_release_at(md, nx);
        }
    }
    for (uint32_t k = (r >> 2) & 3u; k > 0 && md->n > 0; k--) /* arbitrary others */
        model_release_at(md, test_rand(&md->rng) % md->n);
    if ((r >> 4) & 1u && md->n > 0) { /* the one before in the walk's order, if any */
        size_t before = SIZE_MAX;
        for (size_t i = 0; i < md->n; i++) {
            bool is_before = md->memory ? md->m[i].slot < md->last_slot : md->m[i].seq < md->last_seq;
            if (is_before && (before == SIZE_MAX || (md->memory ? md->m[i].slot > md->m[before].slot
                                                                 : md->m[i].seq > md->m[before].seq)))
                before = i;
        }
        if (before != SIZE_MAX) model_release_at(md, before);
    }
    for (uint32_t k = (r >> 5) & 3u; k > 0 && md->acquire_budget > 0; k--, md->acquire_budget--)
        model_acquire(md);
}

static bool model_each_fn(void *item, void *user) {
    model_visit((model *)user, item);
    return true;
}

static void walks_match_a_model_whatever_the_body_releases_and_acquires(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        for (int cursor = 0; cursor <= 1; cursor++) {
            for (uint32_t seed = 1; seed <= 300; seed++) {
                test_env env;
                static model md;
                memset(&md, 0, sizeof md);
                md.pool = make_pool(&env, (sp_order)order, 4);
                md.memory = order == SP_ORDER_MEMORY;
                md.rng = seed * 2654435761u + 1u;
                size_t start = 1 + test_rand(&md.rng) % 40;
                for (size_t i = 0; i < start; i++) model_acquire(&md);
                for (size_t i = 0; i < start / 3; i++) model_release_at(&md, test_rand(&md.rng) % md.n);
                md.acquire_budget = 40;
                model_walk_begins(&md);
                size_t visits;
                if (cursor) {
                    visits = 0;
                    for (sp_iter it = sp_iter_first(md.pool); it.item; sp_iter_next(md.pool, &it)) {
                        model_visit(&md, it.item);
                        visits++;
                    }
                } else {
                    visits = sp_each(md.pool, model_each_fn, &md);
                }
                assert_int_equal(visits, md.visits);
                assert_true(model_expected(&md) == SIZE_MAX); /* nothing left behind */
                assert_true(sp__pool_check(md.pool));
                sp_release_all(md.pool);
                sp_pool_destroy(md.pool);
                EXPECT_NO_LEAK(&env.alloc);
            }
        }
    }
}

/* ---- the acquisition stamps wrap: 2^32 acquisitions under a long-leased member -------------- */

typedef struct wrap_walk {
    sp_pool *pool;
    void *seen[8];
    size_t count;
    void *release_at;      /* at this member: release it... */
    void *release_also;    /* ...and this one, then acquire one */
    void *acquired;
} wrap_walk;

static bool wrap_fn(void *item, void *user) {
    wrap_walk *w = (wrap_walk *)user;
    if (w->count == 8) return false;
    w->seen[w->count++] = item;
    if (item == w->release_at) {
        w->release_at = NULL; /* once: N may take T's slot */
        if (w->release_also) assert_int_equal(sp_release(w->pool, w->release_also), SP_OK);
        assert_int_equal(sp_release(w->pool, item), SP_OK);
        w->acquired = sp_acquire(w->pool);
    }
    return true;
}

static void each_visits_a_long_leased_member_once_after_the_stamps_wrap(void **state) {
    (void)state;
    /* P leased long ago; 2^31 + 5 acquisitions later T; at T the walk releases T and acquires
       N, which it does not visit (acquired meanwhile). Before, a wrapped comparison took P for
       newer than T: P T P N. */
    for (int cursor = 0; cursor <= 1; cursor++) {
        for (int prev_too = 0; prev_too <= 1; prev_too++) {
            test_env env;
            sp_pool *p = make_pool(&env, SP_ORDER_ACQUISITION, 0);
            void *q = sp_acquire(p), *pm = NULL;
            sp__debug_set_acquired(p, (UINT64_C(1) << 31) + 5u);
            if (prev_too) pm = sp_acquire(p); /* T's prev, released with T: the stamp search */
            void *t = sp_acquire(p);
            wrap_walk w = {.pool = p, .release_at = t, .release_also = pm};
            if (cursor) {
                for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) wrap_fn(it.item, &w);
            } else {
                sp_each(p, wrap_fn, &w);
            }
            assert_non_null(w.acquired);
            void *want[] = {q, pm, t};
            size_t k = 0;
            for (size_t i = 0; i < 3; i++)
                if (want[i]) assert_ptr_equal(w.seen[k++], want[i]);
            assert_int_equal(w.count, k);
            assert_true(sp__pool_check(p));
            sp_release_all(p);
            sp_pool_destroy(p);
            EXPECT_NO_LEAK(&env.alloc);
        }
    }
}

/* The same across the full 2^32: a stamp equal, modulo 2^32, to a newer one. */
static void release_all_after_the_stamps_wrap_releases_exactly_the_old_members(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make_pool(&env, SP_ORDER_ACQUISITION, 0);
    void *old = sp_acquire(p);
    sp__debug_set_acquired(p, UINT64_C(1) << 32); /* the next stamp is old's again, plus one */
    void *a = sp_acquire(p), *b = sp_acquire(p);
    assert_int_equal(sp_release_all(p), 3);
    assert_false(sp_is_leased(p, old) || sp_is_leased(p, a) || sp_is_leased(p, b));
    assert_true(sp__pool_check(p));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* The one case a walk cannot go on: its member and both neighbours released after the walk's
   own callbacks made 2^31 acquisitions (faked here). It ends, with an info line. */
static void a_walk_that_loses_its_place_ends_with_a_line(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make_pool(&env, SP_ORDER_ACQUISITION, 0);
    void *m[4];
    for (int i = 0; i < 4; i++) m[i] = sp_acquire(p);
    size_t visits = 0;
    for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) {
        visits++;
        if (it.item == m[1]) {
            sp__debug_set_acquired(p, UINT64_C(1) << 32);
            sp_release(p, m[0]);
            sp_release(p, m[1]);
            sp_release(p, m[2]);
        }
    }
    assert_int_equal(visits, 2);
    assert_int_equal(env.log.infos, 1);
    assert_true(test_log_last_has(&env.log, "iteration stopped"));
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* ---- sp_leased_each: fn may release members -------------------------------------------------- */

typedef struct leased_walk {
    sp_pool *pool;
    size_t visits;
} leased_walk;

static void release_self_and_next(void *item, const char *file, int line, void *user) {
    leased_walk *w = (leased_walk *)user;
    (void)file, (void)line;
    w->visits++;
    void *next = sp_next(w->pool, item);
    assert_int_equal(sp_release(w->pool, item), SP_OK);
    if (next) assert_int_equal(sp_release(w->pool, next), SP_OK);
}

static void leased_each_goes_on_when_fn_releases_members(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        sp_pool *p = make_pool(&env, (sp_order)order, 4);
        for (int i = 0; i < 7; i++) sp_acquire(p);
        leased_walk w = {p, 0};
        assert_int_equal(sp_leased_each(p, release_self_and_next, &w), 4);
        assert_int_equal(w.visits, 4);
        EXPECT_STATS(p, .size = 7, .free = 7, .peak_leased = 7, .created = 7, .acquired = 7, .released = 7);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* ---- small contract points (header: Stats, OVERFLOW POLICIES) -------------------------------- */

static void clear_does_not_count_toward_released(void **state) {
    (void)state;
    test_env env;
    sp_pool *p = make_pool(&env, SP_ORDER_MEMORY, 0);
    void *a = sp_acquire(p);
    sp_acquire(p);
    sp_acquire(p);
    sp_release(p, a);
    assert_int_equal(sp_clear(p), 3);
    /* the two leased members' lives ended by dispose, not by a release path */
    EXPECT_STATS(p, .peak_leased = 3, .created = 3, .disposed = 3, .acquired = 3, .released = 1);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static double flat_priority(const void *item, void *user) {
    (void)item, (void)user;
    return 7.0;
}

static void reclaim_takes_the_first_in_the_pools_order_on_priority_ties(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "ties", 16);
        d.order = (sp_order)order;
        d.max = 4;
        d.overflow = SP_OVERFLOW_RECLAIM;
        d.priority = flat_priority;
        sp_pool *p = sp_pool_create(&d);
        void *m[4];
        for (int i = 0; i < 4; i++) m[i] = sp_acquire(p);
        /* m[0] is the lowest slot and the oldest; make it neither in one order or the other */
        sp_release(p, m[0]);
        assert_ptr_equal(sp_acquire(p), m[0]); /* now the newest, still the lowest address */
        void *lowest = m[0], *oldest = m[1];
        void *got = sp_acquire(p); /* saturated: every member ties */
        assert_ptr_equal(got, order == SP_ORDER_MEMORY ? lowest : oldest);
        got = sp_acquire(p);
        assert_ptr_equal(got, order == SP_ORDER_MEMORY ? lowest : m[2]); /* memory: still the lowest */
        sp_release_all(p);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cursor_walks_every_leased_member_in_the_pools_order),
        cmocka_unit_test(cursor_goes_on_when_the_body_releases_its_member_and_the_next),
        cmocka_unit_test(nested_cursors_survive_releasing_both_members_of_a_pair),
        cmocka_unit_test(walks_match_a_model_whatever_the_body_releases_and_acquires),
        cmocka_unit_test(each_visits_a_long_leased_member_once_after_the_stamps_wrap),
        cmocka_unit_test(release_all_after_the_stamps_wrap_releases_exactly_the_old_members),
        cmocka_unit_test(a_walk_that_loses_its_place_ends_with_a_line),
        cmocka_unit_test(leased_each_goes_on_when_fn_releases_members),
        cmocka_unit_test(clear_does_not_count_toward_released),
        cmocka_unit_test(reclaim_takes_the_first_in_the_pools_order_on_priority_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
