/* SPDX-License-Identifier: Zlib */
/* Registry calls made from hooks, at every moment a hook can run: while the registry destroys
   its pools, while a pool is being added or removed, and from the hooks of its own pools. The
   registry must never be freed under a pool, never show a destroyed pool, never destroy one
   twice, and must report every refusal with exactly one line. Also: one clear line per misuse. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno: capturing the default logger's stderr */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Expects exactly one line since `before`, containing every needle. */
static void expect_one_line(const test_scene *s, int before, const char *a, const char *b) {
    if (test_scene_lines(s) - before != 1 || !test_log_last_has(&s->log, a) || (b && !test_log_last_has(&s->log, b)))
        fail_msg("expected one line with '%s' '%s', got %d line(s), last: '%s: %s'", a, b ? b : "",
                 test_scene_lines(s) - before, s->log.last_pool, s->log.last_message);
}

/* What a hook does: set before the call that runs it. */
typedef enum action {
    DO_NOTHING,
    DO_DESTROY_REGISTRY,
    DO_REMOVE_SELF,
    DO_REGISTRY_CALLS, /* every registry call, each of which must be refused during destroy */
    DO_REMOVE_OTHER,
    DO_DESTROY_OTHER_DIRECTLY,
    DO_ADD_SAME_NAME, /* and seven more pools, which fill the list's first eight places */
} action;

typedef struct hook_ctx {
    test_scene *s;
    action act;
    int calls;
    int refusals_seen;    /* registry calls that came back refused */
    int lines_before;
    sp_result result;
    sp_pool *victim;
    const char *other;
    sp_pool *gone[8]; /* pools whose destroy has finished (seen from later dispose hooks) */
    int gone_count;
    sp_pool *current; /* the pool whose dispose hooks run now */
    action then;      /* what DO_ADD_SAME_NAME does next time */
} hook_ctx;

static hook_ctx ctx;

static void act(void *item) {
    ctx.calls++;
    test_scene *s = ctx.s;
    switch (ctx.act) {
    case DO_NOTHING:
        break;
    case DO_DESTROY_REGISTRY:
        sp_registry_destroy(s->reg);
        break;
    case DO_REMOVE_SELF:
        ctx.result = sp_registry_remove(s->reg, "self");
        break;
    case DO_REGISTRY_CALLS: {
        int before = test_scene_lines(s);
        ctx.refusals_seen += sp_spawn(s->reg, "a", NULL) == NULL;
        ctx.refusals_seen += sp_registry_get(s->reg, "a") == NULL;
        sp_desc d = {.item_size = 8};
        ctx.refusals_seen += sp_registry_add(s->reg, "late", &d) == NULL;
        ctx.refusals_seen += sp_registry_remove(s->reg, "b") != SP_OK;
        ctx.refusals_seen += sp_registry_release(s->reg, item) != SP_OK;
        ctx.refusals_seen += sp_registry_owner(s->reg, item) == NULL;
        sp_registry_destroy(s->reg);
        ctx.lines_before += test_scene_lines(s) - before; /* lines these calls logged */
        /* count and pool_at list only pools that still exist (reading their names would be a
           use-after-free otherwise, which ASan reports) */
        for (size_t i = 0; i < sp_registry_count(s->reg); i++) {
            sp_pool *p = sp_registry_pool_at(s->reg, i);
            for (int g = 0; g < ctx.gone_count; g++) assert_ptr_not_equal(p, ctx.gone[g]);
            assert_non_null(sp_pool_name(p));
        }
        break;
    }
    case DO_REMOVE_OTHER:
        ctx.result = sp_registry_remove(s->reg, ctx.other);
        break;
    case DO_DESTROY_OTHER_DIRECTLY:
        sp_pool_destroy(ctx.victim); /* once: then NULL, a no-op */
        ctx.victim = NULL;
        break;
    case DO_ADD_SAME_NAME: {
        ctx.act = ctx.then; /* once */
        sp_desc d = {.item_size = 8};
        assert_non_null(sp_registry_add(s->reg, "self", &d));
        for (int i = 0; i < 7; i++) {
            char name[8];
            snprintf(name, sizeof name, "n%d", i);
            assert_non_null(sp_registry_add(s->reg, name, &d));
        }
        break;
    }
    }
}

static void on_create(void *item, void *user) { (void)user; act(item); }
static void on_acquire(void *item, const void *arg, void *user) { (void)arg; (void)user; act(item); }
static void on_release(void *item, void *user) { (void)user; act(item); }
static void on_dispose(void *item, void *user) {
    sp_pool *pool = *(sp_pool **)user; /* set after creation */
    if (pool && pool != ctx.current) {
        if (ctx.current && ctx.gone_count < 8) ctx.gone[ctx.gone_count++] = ctx.current;
        ctx.current = pool;
    }
    act(item);
}

typedef enum hook_kind { HOOK_CREATE, HOOK_ACQUIRE, HOOK_RELEASE, HOOK_DISPOSE } hook_kind;

static sp_pool *add_hooked(test_scene *s, const char *name, hook_kind kind) {
    sp_desc d = {.item_size = 16, .chunk_items = 4};
    if (kind == HOOK_CREATE) d.create = on_create;
    if (kind == HOOK_ACQUIRE) d.on_acquire = on_acquire;
    if (kind == HOOK_RELEASE) d.on_release = on_release;
    if (kind == HOOK_DISPOSE) d.dispose = on_dispose;
    static sp_pool *ids[16];
    static int next_id;
    sp_pool **id = &ids[next_id++ % 16];
    d.user = id;
    sp_pool *p = sp_registry_add(s->reg, name, &d);
    assert_non_null(p);
    *id = p;
    return p;
}

static void ctx_reset(test_scene *s, action a) {
    memset(&ctx, 0, sizeof ctx);
    ctx.s = s;
    ctx.act = a;
}

/* ---- issue 9 item 1: destroy from a hook of one of its own pools ----------------------------- */

static void registry_destroy_from_a_hook_of_its_pool_is_refused_whole(void **state) {
    (void)state;
    for (int kind = HOOK_CREATE; kind <= HOOK_DISPOSE; kind++) {
        test_scene s;
        test_scene_open(&s);
        sp_pool *other = add_hooked(&s, "other", HOOK_ACQUIRE);
        sp_pool *self = add_hooked(&s, "self", (hook_kind)kind);
        void *held = sp_acquire(other);
        ctx_reset(&s, DO_DESTROY_REGISTRY);
        int before = test_scene_lines(&s);
        void *m = sp_acquire(self);      /* create (growth), on_acquire */
        sp_release(self, m);             /* on_release */
        if (kind == HOOK_DISPOSE) sp_trim(self, 0);
        assert_int_equal(ctx.calls, 1);
        expect_one_line(&s, before, "sp_registry_destroy while a hook of its pool 'self' runs", "refused");
        /* Nothing changed: both pools registered, usable, found by name and by address. */
        ctx.act = DO_NOTHING;
        assert_int_equal(sp_registry_count(s.reg), 2);
        assert_ptr_equal(sp_registry_get(s.reg, "self"), self);
        for (int i = 0; i < 40; i++) assert_non_null(sp_acquire(self)); /* grows: new chunks indexed */
        assert_ptr_equal(sp_registry_owner(s.reg, held), other);
        assert_int_equal(sp_registry_release(s.reg, held), SP_OK);
        sp_registry_destroy(s.reg);
        EXPECT_NO_LEAK(&s.alloc);
    }
}

/* A dispose hook that runs because the registry removes its pool is a hook too. */
static void registry_destroy_from_a_dispose_hook_during_remove_is_refused(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_pool *keep = add_hooked(&s, "keep", HOOK_ACQUIRE);
    sp_pool *self = add_hooked(&s, "self", HOOK_DISPOSE);
    assert_int_equal(sp_prewarm(self, 1), 1);
    ctx_reset(&s, DO_DESTROY_REGISTRY);
    int before = test_scene_lines(&s);
    assert_int_equal(sp_registry_remove(s.reg, "self"), SP_OK);
    assert_int_equal(ctx.calls, 1);
    expect_one_line(&s, before, "sp_registry_destroy while a hook of its pool 'self' runs", NULL);
    assert_int_equal(sp_registry_count(s.reg), 1);
    assert_ptr_equal(sp_registry_pool_at(s.reg, 0), keep);
    assert_non_null(sp_spawn(s.reg, "keep", NULL));
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* The dispose hooks that sp_registry_destroy itself runs call it again. */
static void registry_destroy_reentered_during_its_destroy_is_refused(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_pool *self = add_hooked(&s, "self", HOOK_DISPOSE);
    assert_int_equal(sp_prewarm(self, 1), 1);
    ctx_reset(&s, DO_DESTROY_REGISTRY);
    int before = test_scene_lines(&s);
    sp_registry_destroy(s.reg);
    assert_int_equal(ctx.calls, 1);
    expect_one_line(&s, before, "sp_registry_destroy: the registry is being destroyed", "refused");
    EXPECT_NO_LEAK(&s.alloc);
}

/* The registry's own create hooks: the pool sp_registry_add is building is not registered yet,
   but its registry must not go away under it. */
static void registry_destroy_from_a_create_hook_of_a_pool_being_added_is_refused(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    ctx_reset(&s, DO_DESTROY_REGISTRY);
    sp_desc d = {.item_size = 16, .initial = 1, .create = on_create};
    int before = test_scene_lines(&s);
    sp_pool *self = sp_registry_add(s.reg, "self", &d);
    assert_non_null(self);
    expect_one_line(&s, before, "sp_registry_destroy while a hook of its pool 'self' runs", NULL);
    ctx.act = DO_NOTHING;
    assert_ptr_equal(sp_registry_get(s.reg, "self"), self);
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- issue 9 item 2: hooks during sp_registry_destroy see no half-torn registry --------------- */

static void registry_calls_from_dispose_hooks_during_destroy_are_refused(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_pool *pools[3] = {add_hooked(&s, "a", HOOK_DISPOSE), add_hooked(&s, "b", HOOK_DISPOSE),
                         add_hooked(&s, "c", HOOK_DISPOSE)};
    for (int i = 0; i < 3; i++) assert_int_equal(sp_prewarm(pools[i], 2), 2);
    ctx_reset(&s, DO_REGISTRY_CALLS);
    int before = test_scene_lines(&s);
    sp_registry_destroy(s.reg);
    assert_int_equal(ctx.calls, 6);
    /* spawn, get, add, remove, release, owner and destroy: each refused, with one line each */
    assert_int_equal(ctx.refusals_seen, 6 * 6);
    assert_int_equal(ctx.lines_before, 7 * 6);
    assert_int_equal(test_scene_lines(&s) - before, 7 * 6);
    assert_true(test_log_last_has(&s.log, "the registry is being destroyed: refused"));
    assert_int_equal(ctx.gone_count, 2); /* a and b were gone when c's hooks looked */
    EXPECT_NO_LEAK(&s.alloc);
}

/* A dispose hook destroys a later pool of the registry directly: the registry forgets it, and
   does not destroy it a second time. */
static void pool_destroyed_directly_by_a_hook_during_registry_destroy_is_destroyed_once(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_pool *a = add_hooked(&s, "a", HOOK_DISPOSE);
    test_env env;
    sp_desc d = test_env_desc(&env, NULL, 16);
    d.logger = test_log_make(&s.log);
    d.initial = 3;
    assert_non_null(sp_registry_add(s.reg, "b", &d));
    assert_non_null(sp_registry_add(s.reg, "c", &d));
    assert_int_equal(sp_prewarm(a, 1), 1);
    ctx_reset(&s, DO_DESTROY_OTHER_DIRECTLY);
    ctx.victim = sp_registry_get(s.reg, "c"); /* sp_registry_get is refused during the destroy */
    assert_non_null(ctx.victim);
    sp_registry_destroy(s.reg);
    assert_int_equal(env.hooks.created, 6);
    assert_int_equal(env.hooks.disposed, 6); /* c's three once, b's three */
    EXPECT_NO_LEAK(&env.alloc);
    EXPECT_NO_LEAK(&s.alloc);
}

/* Outside a registry destroy, a hook may remove another pool; it is gone at once. */
static void remove_from_a_dispose_hook_of_another_pool_removes_it(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_pool *self = add_hooked(&s, "self", HOOK_DISPOSE);
    add_hooked(&s, "b", HOOK_ACQUIRE);
    sp_pool *c = add_hooked(&s, "c", HOOK_ACQUIRE);
    assert_int_equal(sp_prewarm(self, 1), 1);
    ctx_reset(&s, DO_REMOVE_OTHER);
    ctx.other = "b";
    assert_int_equal(sp_registry_remove(s.reg, "self"), SP_OK);
    assert_int_equal(ctx.result, SP_OK);
    assert_int_equal(sp_registry_count(s.reg), 1);
    assert_ptr_equal(sp_registry_pool_at(s.reg, 0), c);
    assert_null(sp_registry_get(s.reg, "b"));
    assert_null(sp_registry_get(s.reg, "self"));
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- issue 9 item 10: remove reports the pool's refusal -------------------------------------- */

static void registry_remove_from_the_pools_own_hook_fails_and_keeps_it(void **state) {
    (void)state;
    for (int kind = HOOK_CREATE; kind <= HOOK_DISPOSE; kind++) {
        test_scene s;
        test_scene_open(&s);
        sp_pool *self = add_hooked(&s, "self", (hook_kind)kind);
        ctx_reset(&s, DO_REMOVE_SELF);
        ctx.result = SP_OK;
        int before = test_scene_lines(&s);
        void *m = sp_acquire(self);
        assert_non_null(m);
        sp_release(self, m);
        if (kind == HOOK_DISPOSE) sp_trim(self, 0);
        assert_int_equal(ctx.calls, 1);
        assert_int_equal(ctx.result, SP_ERR_INVALID);
        expect_one_line(&s, before, "sp_registry_remove called from one of this pool's hooks", "refused");
        assert_string_equal(s.log.last_pool, "self");
        ctx.act = DO_NOTHING;
        assert_int_equal(sp_registry_count(s.reg), 1);
        assert_ptr_equal(sp_registry_get(s.reg, "self"), self);
        assert_non_null(sp_spawn(s.reg, "self", NULL));
        assert_int_equal(sp_registry_remove(s.reg, "self"), SP_OK);
        assert_int_equal(sp_registry_count(s.reg), 0);
        sp_registry_destroy(s.reg);
        EXPECT_NO_LEAK(&s.alloc);
    }
}

/* The same from a dispose hook while the pool is destroyed directly: refused, not destroyed
   twice, and the pool leaves the registry when its destroy ends. */
static void registry_remove_from_a_dispose_hook_of_a_pool_being_destroyed_is_refused(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_pool *self = add_hooked(&s, "self", HOOK_DISPOSE);
    sp_pool *keep = add_hooked(&s, "keep", HOOK_ACQUIRE);
    assert_int_equal(sp_prewarm(self, 1), 1);
    ctx_reset(&s, DO_REMOVE_SELF);
    int before = test_scene_lines(&s);
    sp_pool_destroy(self);
    assert_int_equal(ctx.calls, 1);
    assert_int_equal(ctx.result, SP_ERR_INVALID);
    expect_one_line(&s, before, "sp_registry_remove called from one of this pool's hooks", NULL);
    assert_int_equal(sp_registry_count(s.reg), 1);
    assert_ptr_equal(sp_registry_pool_at(s.reg, 0), keep);
    assert_null(sp_registry_get(s.reg, "self"));
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- a create hook of the pool being added adds pools itself -------------------------------- */

static void add_from_a_create_hook_keeps_names_unique_and_the_list_in_bounds(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    ctx_reset(&s, DO_ADD_SAME_NAME);
    sp_desc d = {.item_size = 16, .initial = 1, .create = on_create};
    int before = test_scene_lines(&s);
    /* The hook registers "self" and seven more: the list's first eight places are then full. */
    assert_null(sp_registry_add(s.reg, "self", &d));
    expect_one_line(&s, before, "sp_registry_add: a pool named 'self' already exists", NULL);
    assert_int_equal(sp_registry_count(s.reg), 8);
    sp_pool *inner = sp_registry_get(s.reg, "self");
    assert_non_null(inner);
    assert_ptr_equal(sp_registry_pool_at(s.reg, 0), inner);
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- a create hook asks who owns its member --------------------------------------------------- */

/* The guide's "pooled" test: a create hook asks the registry whether its member is pooled. The
   members built at creation (desc.initial) must get the same answer as those built later. */
static sp_registry *owner_reg;
static int owner_null, owner_found;
static void create_asks_owner(void *item, void *user) {
    (void)user;
    if (sp_registry_owner(owner_reg, item))
        owner_found++;
    else
        owner_null++;
}

static void create_hook_of_initial_members_finds_their_owner(void **state) {
    (void)state;
    static unsigned char buffer[4096];
    for (int fixed = 0; fixed < 2; fixed++) {
        test_scene s;
        test_scene_open(&s);
        owner_reg = s.reg;
        owner_null = owner_found = 0;
        sp_desc d = {.item_size = 16, .initial = 5, .max = 8, .create = create_asks_owner};
        if (fixed) {
            d.buffer = buffer;
            d.buffer_size = sizeof buffer;
        }
        sp_pool *p = sp_registry_add(s.reg, "ents", &d);
        assert_non_null(p);
        for (int i = 0; i < 3; i++) assert_non_null(sp_acquire(p)); /* builds 0 more */
        assert_int_equal(sp_prewarm(p, 3), 3);                     /* builds 3 more */
        assert_int_equal(owner_null, 0);
        assert_int_equal(owner_found, 8);
        sp_registry_destroy(s.reg);
        EXPECT_NO_LEAK(&s.alloc);
    }
}

/* ---- every registry call from every hook, at random ------------------------------------------ */

/* Hooks that call a random registry function (spawn, release through a handle, get, owner,
   resolve, add, remove, destroy, release_all, sp_pool_destroy of another pool), nested up to
   three deep, while the test does the same from outside and tears the scene down and rebuilds
   it now and then. ASan reports any use of a destroyed pool or registry; the checks below catch
   a registry that disagrees with itself. */
enum { CHAOS_NAMES = 6, CHAOS_HELD = 48 };
typedef struct chaos {
    sp_registry *reg;
    test_alloc alloc;
    test_log log;
    uint32_t rng;
    int depth;
    sp_handle held[CHAOS_HELD];
    unsigned long calls, refused_destroys;
} chaos;
static chaos ch;

static void chaos_name(char *out, size_t size) {
    snprintf(out, size, "r%u", (unsigned)(test_rand(&ch.rng) % CHAOS_NAMES));
}

static void chaos_hook_create(void *item, void *user);
static void chaos_hook_acquire(void *item, const void *arg, void *user);
static void chaos_hook_release(void *item, void *user);
static void chaos_hook_dispose(void *item, void *user);

static sp_desc chaos_desc(void) {
    sp_desc d = {.item_size = 24, .chunk_items = 4, .max = 64, .create = chaos_hook_create,
                 .on_acquire = chaos_hook_acquire, .on_release = chaos_hook_release,
                 .dispose = chaos_hook_dispose};
    uint32_t r = test_rand(&ch.rng);
    d.order = r & 1u ? SP_ORDER_ACQUISITION : SP_ORDER_MEMORY;
    d.overflow = r & 2u ? SP_OVERFLOW_RECLAIM : SP_OVERFLOW_DROP;
    d.initial = (r >> 2) % 3u;
    return d;
}

/* One random registry call; `item` is the member whose hook is running (NULL outside hooks). */
static void chaos_step(void *item) {
    ch.calls++;
    char name[8];
    chaos_name(name, sizeof name);
    uint32_t pick = test_rand(&ch.rng) % 12u;
    switch (pick) {
    case 0:
    case 1: {
        sp_pool *p = sp_registry_get(ch.reg, name);
        sp_handle h = {0};
        void *m = p ? sp_acquire_handle(p, NULL, &h) : NULL;
        if (m) ch.held[test_rand(&ch.rng) % CHAOS_HELD] = h;
        break;
    }
    case 2:
    case 3: {
        sp_handle h = ch.held[test_rand(&ch.rng) % CHAOS_HELD];
        void *m = sp_registry_resolve(ch.reg, h);
        if (m) {
            sp_pool *owner = sp_registry_owner(ch.reg, m);
            if (!ch.reg || !owner) break;
            assert_true(sp_is_leased(owner, m));
            sp_registry_release(ch.reg, m); /* may be refused: its own hook may be running */
        }
        break;
    }
    case 4:
        if (item) (void)sp_registry_owner(ch.reg, item);
        (void)sp_spawn(ch.reg, name, NULL);
        break;
    case 5: {
        sp_desc d = chaos_desc();
        (void)sp_registry_add(ch.reg, name, &d);
        break;
    }
    case 6:
        (void)sp_registry_remove(ch.reg, name);
        break;
    case 7:
        if (ch.depth > 0) { /* from a hook: always refused */
            sp_registry *before = ch.reg;
            sp_registry_destroy(ch.reg);
            ch.refused_destroys++;
            assert_ptr_equal(ch.reg, before);
        }
        break;
    case 8:
        if (ch.depth < 2) (void)sp_registry_release_all(ch.reg);
        break;
    case 9: {
        /* another pool destroyed directly (its own is refused) */
        size_t n = sp_registry_count(ch.reg);
        if (n && test_rand(&ch.rng) % 4u == 0) sp_pool_destroy(sp_registry_pool_at(ch.reg, test_rand(&ch.rng) % n));
        break;
    }
    default: {
        /* pool calls on a registry pool: refused on the pool whose hook runs */
        sp_pool *p = sp_registry_get(ch.reg, name);
        uint32_t which = test_rand(&ch.rng) % 4u;
        if (!p) break;
        if (which == 0) sp_trim(p, 1);
        if (which == 1) sp_prewarm(p, 2);
        if (which == 2 && test_rand(&ch.rng) % 4u == 0) sp_clear(p);
        if (which == 3 && ch.depth < 2) sp_release_all(p);
        break;
    }
    }
}

static void chaos_hook(void *item) {
    if (ch.depth >= 3 || test_rand(&ch.rng) % 3u == 0) return;
    ch.depth++;
    chaos_step(item);
    ch.depth--;
}
static void chaos_hook_create(void *item, void *user) { (void)user; chaos_hook(item); }
static void chaos_hook_acquire(void *item, const void *arg, void *user) { (void)arg; (void)user; chaos_hook(item); }
static void chaos_hook_release(void *item, void *user) { (void)user; chaos_hook(item); }
static void chaos_hook_dispose(void *item, void *user) { (void)user; chaos_hook(item); }

/* Everything the registry says about itself agrees. */
static void chaos_check(void) {
    size_t n = sp_registry_count(ch.reg), found = 0;
    for (int i = 0; i < CHAOS_NAMES; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        sp_pool *p = sp_registry_get(ch.reg, name);
        if (!p) continue;
        found++;
        size_t k = 0;
        while (k < n && sp_registry_pool_at(ch.reg, k) != p) k++;
        assert_true(k < n);
        void *first = sp_first(p);
        if (first) assert_ptr_equal(sp_registry_owner(ch.reg, first), p);
    }
    assert_int_equal(found, n);
    for (int i = 0; i < CHAOS_HELD; i++) {
        void *m = sp_registry_resolve(ch.reg, ch.held[i]);
        if (m) assert_non_null(sp_registry_owner(ch.reg, m));
    }
}

static void chaos_open(void) {
    sp_registry_desc rd = {.allocator = test_alloc_make(&ch.alloc), .logger = test_log_make(&ch.log)};
    ch.reg = sp_registry_create_with(&rd);
    assert_non_null(ch.reg);
}

static void hooks_calling_random_registry_functions_never_break_it(void **state) {
    (void)state;
    for (uint32_t seed = 1; seed <= 3; seed++) {
        memset(&ch, 0, sizeof ch);
        ch.rng = 0x9E3779B9u * seed;
        chaos_open();
        for (int step = 0; step < 20000; step++) {
            if (step % 2500 == 2499) { /* scene change */
                sp_registry_release_all(ch.reg);
                sp_registry_destroy(ch.reg);
                assert_int_equal(ch.alloc.live_bytes, 0);
                chaos_open();
                continue;
            }
            chaos_step(NULL);
            chaos_check();
        }
        sp_registry_destroy(ch.reg);
        EXPECT_NO_LEAK(&ch.alloc);
        assert_true(ch.refused_destroys > 0);
    }
}

/* The add that loses its name to a create hook destroys its pool, whose dispose hooks may try to
   destroy the registry: still refused, the pool being added is still on the stack. */
static void add_that_lost_its_name_refuses_destroy_from_its_dispose_hooks(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    ctx_reset(&s, DO_ADD_SAME_NAME);
    ctx.then = DO_DESTROY_REGISTRY;
    sp_desc d = {.item_size = 16, .initial = 1, .create = on_create, .dispose = on_dispose};
    static sp_pool *unknown;
    d.user = &unknown;
    int before = test_scene_lines(&s);
    assert_null(sp_registry_add(s.reg, "self", &d));
    assert_int_equal(ctx.calls, 2); /* the create hook, then the dispose hook */
    assert_int_equal(test_scene_lines(&s) - before, 2);
    assert_true(test_log_last_has(&s.log, "sp_registry_destroy while a hook of its pool 'self' runs"));
    ctx.act = DO_NOTHING;
    assert_int_equal(sp_registry_count(s.reg), 8);
    assert_non_null(sp_spawn(s.reg, "self", NULL));
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* ---- issue 9 item 13: one clear line per misuse ---------------------------------------------- */

static void each_registry_misuse_logs_one_line_that_names_it(void **state) {
    (void)state;
    test_scene s;
    test_scene_open(&s);
    sp_desc d = {.item_size = 16, .logger = test_log_make(&s.log)};
    sp_pool *a = sp_registry_add(s.reg, "a", &d);
    assert_non_null(a);
    int local = 0, before;

    before = test_scene_lines(&s);
    assert_int_equal(sp_registry_release(s.reg, &local), SP_ERR_FOREIGN);
    expect_one_line(&s, before, "sp_registry_release of", "no pool of this registry owns it");
    assert_string_equal(s.log.last_pool, "registry");

    before = test_scene_lines(&s);
    assert_null(sp_registry_add(s.reg, "a", &d));
    expect_one_line(&s, before, "sp_registry_add: a pool named 'a' already exists", NULL);

    before = test_scene_lines(&s);
    assert_null(sp_registry_add(NULL, "b", &d));
    expect_one_line(&s, before, "sp_registry_add: registry is NULL", NULL);

    before = test_scene_lines(&s);
    assert_null(sp_registry_add(s.reg, "", &d));
    expect_one_line(&s, before, "sp_registry_add: name is empty", NULL);

    before = test_scene_lines(&s);
    assert_null(sp_registry_add(s.reg, NULL, &d));
    expect_one_line(&s, before, "sp_registry_add: name is NULL", NULL);

    before = test_scene_lines(&s);
    assert_null(sp_registry_add(s.reg, "c", NULL));
    expect_one_line(&s, before, "sp_registry_add: desc is NULL", NULL);

    before = test_scene_lines(&s);
    assert_int_equal(sp_registry_remove(s.reg, "zzz"), SP_ERR_INVALID);
    expect_one_line(&s, before, "sp_registry_remove: no pool named 'zzz'", NULL);

    before = test_scene_lines(&s);
    assert_int_equal(sp_registry_remove(s.reg, NULL), SP_ERR_INVALID);
    expect_one_line(&s, before, "sp_registry_remove: name is NULL", NULL);

    before = test_scene_lines(&s);
    assert_null(sp_spawn(s.reg, "zzz", NULL));
    expect_one_line(&s, before, "sp_spawn: no pool named 'zzz'", NULL);

    /* an unknown name is an answer to a question, not a misuse */
    before = test_scene_lines(&s);
    assert_null(sp_registry_get(s.reg, "zzz"));
    assert_null(sp_registry_owner(s.reg, &local));
    assert_int_equal(test_scene_lines(&s), before);

    /* a double release through the registry is the pool's line, once */
    void *m = sp_spawn(s.reg, "a", NULL);
    assert_int_equal(sp_registry_release(s.reg, m), SP_OK);
    before = test_scene_lines(&s);
    assert_int_equal(sp_registry_release(s.reg, m), SP_ERR_NOT_LEASED);
    expect_one_line(&s, before, "double release", NULL);
    assert_string_equal(s.log.last_pool, "a");

    assert_int_equal(sp_registry_count(s.reg), 1);
    sp_registry_destroy(s.reg);
    EXPECT_NO_LEAK(&s.alloc);
}

/* An argument runs only the tests whose names match it (a crash in one then hides no other). */
/* A NULL registry has no logger of its own: the line goes to the default logger, on stderr. */
static void null_registry_calls_each_log_one_line_on_stderr(void **state) {
    (void)state;
    FILE *capture = tmpfile();
    assert_non_null(capture);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(capture), 2) >= 0);
    int x = 0;
    sp_desc d = {.item_size = 8};
    (void)sp_registry_add(NULL, "a", &d);
    (void)sp_registry_remove(NULL, "a");
    (void)sp_registry_get(NULL, "a");
    (void)sp_spawn(NULL, "a", NULL);
    (void)sp_registry_owner(NULL, &x);
    (void)sp_registry_release(NULL, &x);
    (void)sp_registry_resolve(NULL, sp_handle_null());
    (void)sp_registry_release_all(NULL);
    (void)sp_registry_count(NULL);
    (void)sp_registry_pool_at(NULL, 0);
    sp_registry_destroy(NULL); /* like free(NULL): silent */
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(capture);
    static const char *calls[] = {"sp_registry_add", "sp_registry_remove", "sp_registry_get",
                                  "sp_spawn", "sp_registry_owner", "sp_registry_release",
                                  "sp_registry_resolve", "sp_registry_release_all",
                                  "sp_registry_count", "sp_registry_pool_at"};
    char line[256], want[96];
    size_t n = 0;
    while (fgets(line, sizeof line, capture)) {
        assert_true(n < sizeof calls / sizeof calls[0]);
        snprintf(want, sizeof want, "%s: registry is NULL\n", calls[n]);
        if (!strstr(line, want)) fail_msg("line %zu: '%s', expected '%s'", n, line, want);
        n++;
    }
    assert_int_equal(n, sizeof calls / sizeof calls[0]);
    fclose(capture);
}

int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_destroy_from_a_hook_of_its_pool_is_refused_whole),
        cmocka_unit_test(registry_destroy_from_a_dispose_hook_during_remove_is_refused),
        cmocka_unit_test(registry_destroy_reentered_during_its_destroy_is_refused),
        cmocka_unit_test(registry_destroy_from_a_create_hook_of_a_pool_being_added_is_refused),
        cmocka_unit_test(registry_calls_from_dispose_hooks_during_destroy_are_refused),
        cmocka_unit_test(pool_destroyed_directly_by_a_hook_during_registry_destroy_is_destroyed_once),
        cmocka_unit_test(remove_from_a_dispose_hook_of_another_pool_removes_it),
        cmocka_unit_test(registry_remove_from_the_pools_own_hook_fails_and_keeps_it),
        cmocka_unit_test(registry_remove_from_a_dispose_hook_of_a_pool_being_destroyed_is_refused),
        cmocka_unit_test(add_from_a_create_hook_keeps_names_unique_and_the_list_in_bounds),
        cmocka_unit_test(add_that_lost_its_name_refuses_destroy_from_its_dispose_hooks),
        cmocka_unit_test(create_hook_of_initial_members_finds_their_owner),
        cmocka_unit_test(each_registry_misuse_logs_one_line_that_names_it),
        cmocka_unit_test(null_registry_calls_each_log_one_line_on_stderr),
        cmocka_unit_test(hooks_calling_random_registry_functions_never_break_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
