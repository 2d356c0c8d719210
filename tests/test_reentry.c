/* SPDX-License-Identifier: Zlib */
#define _POSIX_C_SOURCE 200809L /* fileno, dup, dup2 */
/* What a callback may do to its own pool (docs/safety.md, "What a callback may do"): priority
   and sp_each callbacks are hooks, priority only scores, a teardown refuses acquisitions,
   sp_release_all releases what was leased when it began, and each refusal is one line that
   names what happened. Every test here hung, crashed or handed a member to two owners before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

/* One callback context for every test: what the callbacks do, and what they saw. */
typedef struct ctx {
    sp_pool *pool;
    int calls;         /* callback calls */
    int cap;           /* a callback that would go on forever stops here (the old hangs) */
    int acquired;      /* non-NULL acquisitions made by callbacks */
    int refused;       /* NULL acquisitions / refused calls seen by callbacks */
    int mode;          /* what the callback does, per test */
    void *items[16];
    size_t n;
} ctx;

static sp_desc desc_for(test_env *env, ctx *c, sp_order order, size_t item_size) {
    memset(env, 0, sizeof *env);
    memset(c, 0, sizeof *c);
    c->cap = 1000;
    sp_desc d = {.name = "reentry", .item_size = item_size, .order = order, .user = c};
    d.allocator = test_alloc_make(&env->alloc);
    d.logger = test_log_make(&env->log);
    return d;
}

/* ---- priority: a hook, and a pure scoring function --------------------------------------- */

enum { PR_DESTROY, PR_CLEAR, PR_TRIM, PR_RELEASE_SELF_AND_NEXT, PR_ACQUIRE, PR_PREWARM, PR_RELEASE_ALL };

static double hostile_priority(const void *item, void *user) {
    ctx *c = (ctx *)user;
    c->calls++;
    void *self = (void *)(uintptr_t)item;
    switch (c->mode) {
    case PR_DESTROY: sp_pool_destroy(c->pool); break;
    case PR_CLEAR: c->refused += sp_clear(c->pool) == 0; break;
    case PR_TRIM: c->refused += sp_trim(c->pool, 0) == 0; break;
    case PR_RELEASE_SELF_AND_NEXT: {
        void *next = sp_next(c->pool, self);
        c->refused += sp_release(c->pool, self) == SP_ERR_INVALID;
        if (next) c->refused += sp_release(c->pool, next) == SP_ERR_INVALID;
        break;
    }
    case PR_ACQUIRE: c->refused += sp_acquire_force(c->pool, NULL) == NULL; break;
    case PR_PREWARM: c->refused += sp_prewarm(c->pool, 4) == 0; break;
    case PR_RELEASE_ALL: c->refused += sp_release_all(c->pool) == 0; break;
    default: break;
    }
    return 1.0; /* a tie: the first in the pool's order */
}

static void priority_is_a_hook_and_only_scores(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        for (int mode = PR_DESTROY; mode <= PR_RELEASE_ALL; mode++) {
            test_env env;
            ctx c;
            sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
            d.max = 3;
            d.overflow = SP_OVERFLOW_RECLAIM;
            d.priority = hostile_priority;
            sp_pool *p = sp_pool_create(&d);
            c.pool = p;
            c.mode = mode;
            void *a = sp_acquire(p), *b = sp_acquire(p), *x = sp_acquire(p);
            void *got = sp_acquire(p); /* saturated: reclaims, scoring all three */
            assert_ptr_equal(got, a);  /* every member ties: the first in the pool's order */
            assert_int_equal(c.calls, 3);
            if (mode != PR_DESTROY) assert_int_equal(c.refused, mode == PR_RELEASE_SELF_AND_NEXT ? 5 : 3);
            assert_int_equal(env.log.warnings, 3 + (mode == PR_RELEASE_SELF_AND_NEXT ? 2 : 0));
            /* One owner each: three distinct leased members, nothing free, the pool intact. */
            assert_true(sp_is_leased(p, a) && sp_is_leased(p, b) && sp_is_leased(p, x));
            assert_true(sp__pool_check(p));
            EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 4,
                         .released = 1, .reclaimed = 1);
            sp_release_all(p);
            sp_pool_destroy(p);
            EXPECT_NO_LEAK(&env.alloc);
        }
    }
}

/* ---- sp_each and sp_leased_each callbacks are hooks ---------------------------------------- */

static bool each_tears_down(void *item, void *user) {
    ctx *c = (ctx *)user;
    (void)item;
    c->calls++;
    sp_pool_destroy(c->pool);
    c->refused += sp_clear(c->pool) == 0;
    c->refused += sp_trim(c->pool, 0) == 0;
    return true;
}

static void leased_tears_down(void *item, const char *file, int line, void *user) {
    (void)file, (void)line;
    each_tears_down(item, user);
}

static void each_callbacks_cannot_destroy_clear_or_trim_their_pool(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        ctx c;
        sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
        d.initial = 6; /* free members for trim to take */
        sp_pool *p = sp_pool_create(&d);
        c.pool = p;
        for (int i = 0; i < 3; i++) sp_acquire(p);
        assert_int_equal(sp_each(p, each_tears_down, &c), 3);
        assert_int_equal(sp_leased_each(p, leased_tears_down, &c), 3);
        assert_int_equal(c.calls, 6);
        assert_int_equal(c.refused, 12);
        assert_int_equal(env.log.warnings, 18);
        assert_true(test_log_last_has(&env.log, "sp_trim called from one of this pool's hooks"));
        assert_true(sp__pool_check(p));
        EXPECT_STATS(p, .size = 6, .leased = 3, .free = 3, .peak_leased = 3, .created = 6, .acquired = 3);
        sp_release_all(p);
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* ---- teardown refuses acquisitions --------------------------------------------------------- */

static void dispose_acquires(void *item, void *user) {
    ctx *c = (ctx *)user;
    (void)item;
    if (++c->calls > c->cap) return; /* the old endless clear */
    void *got = sp_acquire(c->pool);
    if (got) c->acquired++;
    else c->refused++;
}

static void clear_ends_when_dispose_acquires_from_its_pool(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        ctx c;
        sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
        d.initial = 4;
        d.dispose = dispose_acquires;
        sp_pool *p = sp_pool_create(&d);
        c.pool = p;
        sp_acquire(p);
        sp_acquire(p);
        assert_int_equal(sp_clear(p), 4);
        assert_int_equal(c.calls, 4);
        assert_int_equal(c.acquired, 0);
        assert_int_equal(c.refused, 4);
        assert_int_equal(env.log.warnings, 4);
        assert_true(test_log_last_has(&env.log, "acquire while the pool is being cleared: refused"));
        assert_true(sp__pool_check(p));
        EXPECT_STATS(p, .peak_leased = 2, .created = 4, .disposed = 4, .acquired = 2);
        assert_non_null(sp_acquire(p)); /* usable again once the clear is over */
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* Under ASan the old behaviour (a free member handed out, then freed by the same destroy) is a
   use-after-free; everywhere, the acquisitions must all be refused. */
static void destroy_refuses_acquisitions_from_dispose_even_with_free_members(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        ctx c;
        sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
        d.initial = 5;
        d.dispose = dispose_acquires;
        sp_pool *p = sp_pool_create(&d);
        c.pool = p;
        sp_acquire(p);
        sp_pool_destroy(p);
        assert_int_equal(c.calls, 5);
        assert_int_equal(c.acquired, 0);
        assert_int_equal(c.refused, 5);
        assert_true(test_log_last_has(&env.log, "acquire while the pool is being destroyed: refused"));
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* A dispose hook may release other members during a teardown: they are released (on_release
   runs) and then disposed, once each. */
static void dispose_releases_others(void *item, void *user) {
    ctx *c = (ctx *)user;
    c->calls++;
    for (size_t i = 0; i < c->n; i++) {
        if (c->items[i] && c->items[i] != item && sp_is_leased(c->pool, c->items[i])) {
            assert_int_equal(sp_release(c->pool, c->items[i]), SP_OK);
            c->items[i] = NULL;
            break;
        }
    }
}

static void count_release(void *item, void *user) {
    (void)item;
    ((ctx *)user)->acquired--; /* counts on_release runs, downwards */
}

static void teardown_disposes_what_dispose_releases_once(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        for (int destroy = 0; destroy <= 1; destroy++) {
            test_env env;
            ctx c;
            sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
            d.initial = 8;
            d.dispose = dispose_releases_others;
            d.on_release = count_release;
            sp_pool *p = sp_pool_create(&d);
            c.pool = p;
            for (c.n = 0; c.n < 6; c.n++) c.items[c.n] = sp_acquire(p);
            if (destroy) {
                sp_pool_destroy(p);
            } else {
                assert_int_equal(sp_clear(p), 8);
                assert_true(sp__pool_check(p));
                EXPECT_STATS(p, .peak_leased = 6, .created = 8, .disposed = 8, .acquired = 6, .released = 3);
                sp_pool_destroy(p);
            }
            assert_int_equal(c.calls, 8);
            assert_int_equal(c.acquired, -3); /* three released by dispose hooks, on_release ran */
            EXPECT_NO_LEAK(&env.alloc);
        }
    }
}

/* ---- sp_release_all releases exactly what was leased when it began -------------------------- */

static void release_acquires_a_replacement(void *item, void *user) {
    ctx *c = (ctx *)user;
    (void)item;
    if (c->mode == 0 || ++c->calls > c->cap) return; /* the old endless release_all */
    if (sp_acquire(c->pool)) c->acquired++;
}

static void release_all_releases_only_what_was_leased_when_it_began(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        ctx c;
        sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
        d.on_release = release_acquires_a_replacement;
        sp_pool *p = sp_pool_create(&d);
        c.pool = p;
        void *old[5];
        for (int i = 0; i < 5; i++) old[i] = sp_acquire(p);
        for (int i = 0; i < 2; i++) sp_release(p, old[i]); /* holes in front */
        c.mode = 1;
        sp_handle h[3];
        for (int i = 0; i < 3; i++) h[i] = sp_handle_of(p, old[i + 2]);
        assert_int_equal(sp_release_all(p), 3);
        assert_int_equal(c.calls, 3);
        assert_int_equal(c.acquired, 3);
        for (int i = 0; i < 3; i++) assert_null(sp_resolve(p, h[i])); /* the old lives ended */
        assert_true(sp__pool_check(p));
        sp_stats st;
        sp_stats_get(p, &st);
        assert_int_equal(st.leased, 3); /* the replacements stay */
        c.mode = 0;
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* ---- sp_acquire_force inside a hook, nothing reclaimable: NULL, a line, no drop ------------ */

static void acquire_forces(void *item, const void *arg, void *user) {
    ctx *c = (ctx *)user;
    (void)item, (void)arg;
    if (c->calls++ == 0) c->items[0] = sp_acquire_force(c->pool, NULL);
}

static void force_counts_no_drop_when_every_leased_member_is_busy(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        test_env env;
        ctx c;
        sp_desc d = desc_for(&env, &c, (sp_order)order, 32);
        d.max = 1;
        d.on_acquire = acquire_forces;
        sp_pool *p = sp_pool_create(&d);
        c.pool = p;
        c.items[0] = (void *)&c;
        assert_non_null(sp_acquire(p));
        assert_null(c.items[0]);
        assert_int_equal(env.log.warnings, 1);
        assert_true(test_log_last_has(&env.log, "every leased member is busy in a hook"));
        EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
        sp_release_all(p);
        sp_pool_destroy(p);
    }
}

/* ---- messages ------------------------------------------------------------------------------- */

static void create_releases_itself(void *item, void *user) {
    ctx *c = (ctx *)user;
    c->refused += sp_release(c->pool, item) == SP_ERR_NOT_LEASED;
}

static void dispose_releases_itself(void *item, void *user) { create_releases_itself(item, user); }

static void create_or_dispose_releasing_its_member_is_told_so(void **state) {
    (void)state;
    test_env env;
    ctx c;
    sp_desc d = desc_for(&env, &c, SP_ORDER_MEMORY, 32);
    d.create = create_releases_itself;
    d.dispose = dispose_releases_itself;
    sp_pool *p = sp_pool_create(&d);
    c.pool = p;
    assert_int_equal(sp_prewarm(p, 1), 1);
    assert_int_equal(c.refused, 1);
    assert_true(test_log_last_has(&env.log, "its create/dispose hook is running (re-entry)"));
    assert_int_equal(sp_trim(p, 0), 1);
    assert_int_equal(c.refused, 2);
    assert_true(test_log_last_has(&env.log, "its create/dispose hook is running (re-entry)"));
    assert_int_equal(env.log.warnings, 2);
    sp_acquire(p); /* built: create refused again */
    assert_int_equal(sp_clear(p), 1); /* the dispose of a leased member */
    assert_int_equal(c.refused, 4);
    assert_true(test_log_last_has(&env.log, "its create/dispose hook is running (re-entry)"));
    assert_int_equal(env.log.warnings, 4);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* Runs fn with stderr sent to a file; returns the lines it printed. */
static int stderr_lines_of(void (*fn)(void)) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    int lines = 0;
    char buf[512];
    while (fgets(buf, sizeof buf, tmp)) {
        assert_non_null(strstr(buf, ": pool is NULL"));
        lines++;
    }
    fclose(tmp);
    return lines;
}

static void null_pool_calls(void) {
    sp_stats st;
    sp_iter it = sp_iter_first(NULL);
    int dummy = 0;
    (void)sp_acquire(NULL);
    (void)sp_acquire_with(NULL, NULL);
    (void)sp_acquire_force(NULL, NULL);
    (void)sp_acquire_handle(NULL, NULL, NULL);
    (void)sp_acquire_at(NULL, "f.c", 1);
    (void)sp_release(NULL, &dummy);
    (void)sp_release_all(NULL);
    (void)sp_prewarm(NULL, 1);
    (void)sp_trim(NULL, 0);
    (void)sp_clear(NULL);
    (void)sp_set_max(NULL, 1);
    (void)sp_set_overflow(NULL, SP_OVERFLOW_DROP);
    (void)sp_pool_name(NULL);
    (void)sp_handle_of(NULL, &dummy);
    (void)sp_resolve(NULL, sp_handle_null());
    (void)sp_is_leased(NULL, &dummy);
    (void)sp_first(NULL);
    (void)sp_next(NULL, &dummy);
    (void)sp_each(NULL, NULL, NULL);
    sp_iter_next(NULL, &it);
    sp_stats_get(NULL, &st);
    (void)sp_leased_each(NULL, NULL, NULL);
    (void)sp_leak_report(NULL, SP_LOG_WARN);
}

static void silent_null_calls(void) {
    test_env env;
    sp_desc d = test_env_desc(&env, "silent", 8);
    sp_pool *p = sp_pool_create(&d);
    sp_pool_destroy(NULL);
    assert_int_equal(sp_release(p, NULL), SP_OK);
    assert_int_equal(sp_release(NULL, NULL), SP_OK);
    sp_pool_destroy(p);
}

static void a_null_pool_gets_one_error_line_per_call(void **state) {
    (void)state;
    assert_int_equal(stderr_lines_of(null_pool_calls), 24);
    assert_int_equal(stderr_lines_of(silent_null_calls), 0);
}

static void set_overflow_refusals_name_the_reason(void **state) {
    (void)state;
    test_env env;
    ctx c;
    static unsigned char buffer[4096];
    sp_desc d = desc_for(&env, &c, SP_ORDER_MEMORY, 16);
    d.buffer = buffer;
    d.buffer_size = sizeof buffer;
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_set_overflow(p, SP_OVERFLOW_GROW), SP_ERR_INVALID);
    assert_true(test_log_last_has(&env.log, "sp_set_overflow: GROW cannot grow a fixed buffer: refused"));
    assert_int_equal(sp_set_overflow(p, (sp_overflow)9), SP_ERR_INVALID);
    assert_true(test_log_last_has(&env.log, "sp_set_overflow: unknown overflow policy: refused"));
    assert_int_equal(env.log.warnings, 2);
    sp_pool_destroy(p);
}

/* ---- other callbacks: each may touch the pool as the header says, never worse --------------- */

enum { HOOK_CREATE, HOOK_ACQUIRE, HOOK_RELEASE, HOOK_DISPOSE };

typedef struct tear_ctx {
    sp_pool *pool;
    int which, runs, refused;
} tear_ctx;

static void tear(tear_ctx *t, int which) {
    if (t->which != which || !t->pool) return;
    t->runs++;
    sp_pool_destroy(t->pool);
    t->refused += sp_clear(t->pool) == 0;
    t->refused += sp_trim(t->pool, 0) == 0;
    t->refused += sp_set_max(t->pool, 8) == SP_OK; /* allowed: it only changes the cap */
    t->refused += sp_set_overflow(t->pool, SP_OVERFLOW_GROW) == SP_OK;
}

static void tear_create(void *item, void *user) { (void)item, tear((tear_ctx *)user, HOOK_CREATE); }
static void tear_acquire(void *item, const void *arg, void *user) {
    (void)item, (void)arg, tear((tear_ctx *)user, HOOK_ACQUIRE);
}
static void tear_release(void *item, void *user) { (void)item, tear((tear_ctx *)user, HOOK_RELEASE); }
static void tear_dispose(void *item, void *user) { (void)item, tear((tear_ctx *)user, HOOK_DISPOSE); }

static void no_hook_can_destroy_clear_or_trim_its_pool(void **state) {
    (void)state;
    for (int order = SP_ORDER_ACQUISITION; order <= SP_ORDER_MEMORY; order++) {
        for (int which = HOOK_CREATE; which <= HOOK_DISPOSE; which++) {
            test_env env;
            tear_ctx t = {NULL, which, 0, 0};
            sp_desc d = {.name = "tear", .item_size = 16, .order = (sp_order)order, .user = &t,
                         .create = tear_create, .on_acquire = tear_acquire,
                         .on_release = tear_release, .dispose = tear_dispose};
            memset(&env, 0, sizeof env);
            d.allocator = test_alloc_make(&env.alloc);
            d.logger = test_log_make(&env.log);
            sp_pool *p = sp_pool_create(&d);
            t.pool = p;
            void *a = sp_acquire(p);
            assert_int_equal(sp_release(p, a), SP_OK);
            assert_int_equal(sp_trim(p, 0), 1); /* dispose runs here */
            assert_int_equal(t.runs, 1);
            assert_int_equal(t.refused, 4);
            assert_int_equal(env.log.warnings, 3);
            assert_true(sp__pool_check(p));
            t.pool = NULL;
            sp_pool_destroy(p);
            EXPECT_NO_LEAK(&env.alloc);
        }
    }
}

/* ---- a deterministic stress: every callback does random things to its own pool -------------
   Hooks, priority, sp_each callbacks and sp_iter loop bodies acquire, release (their own member,
   others), release_all, clear, trim, destroy, prewarm, walk, and change max and overflow, up to
   a nesting depth. The hooks keep the set of owners (on_acquire adds, on_release and dispose
   of a leased member remove): a member handed to a second owner, a release of a member nobody
   owns, a broken invariant, a leak or a hang fails the test; ASan catches freed memory. */

typedef struct hostile {
    sp_pool *pool;
    uint32_t rng;
    int depth;
    void *owned[512];
    size_t owned_n;
    bool in_priority;
    int callbacks; /* callbacks of the pool running: destroy is tried only there (refused) */
} hostile;

static hostile hx;

static size_t owned_find(const void *item) {
    for (size_t i = 0; i < hx.owned_n; i++)
        if (hx.owned[i] == item) return i;
    return SIZE_MAX;
}

static void owned_drop(const void *item) {
    size_t i = owned_find(item);
    assert_true(i != SIZE_MAX); /* released by no owner */
    hx.owned[i] = hx.owned[--hx.owned_n];
}

static void hostile_actions(void *self, int budget);

static bool hostile_each(void *item, void *user) {
    (void)user;
    hx.callbacks++;
    hostile_actions(item, 1);
    hx.callbacks--;
    return (test_rand(&hx.rng) & 7u) != 0;
}

static void hostile_leased(void *item, const char *file, int line, void *user) {
    (void)file, (void)line;
    hostile_each(item, user);
}

static void hostile_actions(void *self, int budget) {
    if (hx.depth >= 3 || !hx.pool) return; /* (no pool yet while `initial` is built) */
    hx.depth++;
    sp_pool *p = hx.pool;
    for (int k = 0; k < budget; k++) {
        uint32_t r = test_rand(&hx.rng);
        switch (r % 16u) {
        case 0: (void)sp_acquire(p); break;
        case 1: (void)sp_acquire_force(p, NULL); break;
        case 2: { sp_handle h; (void)sp_acquire_handle(p, NULL, &h); break; }
        case 3: if (self) (void)sp_release(p, self); break;
        case 4: if (hx.owned_n) (void)sp_release(p, hx.owned[(r >> 8) % hx.owned_n]); break;
        case 5: (void)sp_release_all(p); break;
        case 6: (void)sp_clear(p); break;
        case 7: (void)sp_trim(p, (r >> 8) & 3u); break;
        case 8: if (hx.callbacks > 0) sp_pool_destroy(p); break; /* refused in callbacks */
        case 9: (void)sp_prewarm(p, (r >> 8) & 3u); break;
        case 10: (void)sp_each(p, hostile_each, NULL); break;
        case 11:
            for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it))
                if ((test_rand(&hx.rng) & 3u) == 0) hostile_actions(it.item, 1);
            break;
        case 12: (void)sp_set_max(p, (r >> 8) % 12u); break;
        case 13: (void)sp_set_overflow(p, (sp_overflow)((r >> 8) % 3u)); break;
        case 14: (void)sp_leased_each(p, hostile_leased, NULL); break;
        default: if (hx.owned_n) { /* release the member and the one after it */
                void *m = hx.owned[(r >> 8) % hx.owned_n], *next = sp_next(p, m);
                (void)sp_release(p, m);
                if (next) (void)sp_release(p, next);
            }
            break;
        }
    }
    hx.depth--;
}

static void hx_hook_actions(void *item, int budget) {
    hx.callbacks++;
    hostile_actions(item, budget);
    hx.callbacks--;
}

static void hx_create(void *item, void *user) { (void)user, hx_hook_actions(item, 1); }

static void hx_acquire(void *item, const void *arg, void *user) {
    (void)arg, (void)user;
    assert_false(hx.in_priority);
    assert_true(owned_find(item) == SIZE_MAX); /* a second owner */
    assert_true(hx.owned_n < 512);
    hx.owned[hx.owned_n++] = item;
    hx_hook_actions(item, 1);
}

static void hx_release(void *item, void *user) {
    (void)user;
    assert_false(hx.in_priority);
    owned_drop(item);
    hx_hook_actions(item, 1);
}

static void hx_dispose(void *item, void *user) {
    (void)user;
    if (owned_find(item) != SIZE_MAX) owned_drop(item); /* a leased member torn down */
    hx_hook_actions(item, 1);
}

static double hx_priority(const void *item, void *user) {
    (void)user;
    hx.in_priority = true;
    hx_hook_actions((void *)(uintptr_t)item, 2);
    hx.in_priority = false;
    return (double)(((uintptr_t)item >> 4) % 5u);
}

static void hostile_callbacks_never_break_the_pool(void **state) {
    (void)state;
    for (uint32_t seed = 1; seed <= 400; seed++) {
        test_env env;
        memset(&env, 0, sizeof env);
        memset(&hx, 0, sizeof hx);
        hx.rng = seed * 2246822519u + 7u;
        uint32_t r = test_rand(&hx.rng);
        sp_desc d = {.name = "hostile", .item_size = 24, .chunk_items = 4,
                     .order = (sp_order)(1u + (r & 1u)), .overflow = (sp_overflow)((r >> 1) % 3u),
                     .max = (r >> 3) % 10u, .initial = (r >> 7) % 4u,
                     .create = hx_create, .on_acquire = hx_acquire, .on_release = hx_release,
                     .dispose = hx_dispose, .priority = (r >> 9) & 1u ? hx_priority : NULL};
        if (d.max && d.initial > d.max) d.initial = d.max;
        d.allocator = test_alloc_make(&env.alloc);
        d.logger = test_log_make(&env.log);
        hx.pool = sp_pool_create(&d);
        assert_non_null(hx.pool);
        for (int op = 0; op < 60; op++) {
            hostile_actions(NULL, 1);
            assert_true(sp__pool_check(hx.pool));
            sp_stats st;
            sp_stats_get(hx.pool, &st);
            assert_int_equal(st.leased, hx.owned_n);
        }
        sp_pool_destroy(hx.pool); /* leaked members are disposed (and leave the owners) */
        assert_int_equal(hx.owned_n, 0);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(priority_is_a_hook_and_only_scores),
        cmocka_unit_test(each_callbacks_cannot_destroy_clear_or_trim_their_pool),
        cmocka_unit_test(clear_ends_when_dispose_acquires_from_its_pool),
        cmocka_unit_test(destroy_refuses_acquisitions_from_dispose_even_with_free_members),
        cmocka_unit_test(teardown_disposes_what_dispose_releases_once),
        cmocka_unit_test(release_all_releases_only_what_was_leased_when_it_began),
        cmocka_unit_test(force_counts_no_drop_when_every_leased_member_is_busy),
        cmocka_unit_test(create_or_dispose_releasing_its_member_is_told_so),
        cmocka_unit_test(a_null_pool_gets_one_error_line_per_call),
        cmocka_unit_test(set_overflow_refusals_name_the_reason),
        cmocka_unit_test(no_hook_can_destroy_clear_or_trim_its_pool),
        cmocka_unit_test(hostile_callbacks_never_break_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
