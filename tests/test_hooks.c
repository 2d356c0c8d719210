/* SPDX-License-Identifier: Zlib */
/* Hooks: which hook runs on which path and in what order, that every built member is disposed
   exactly once, and re-entrancy: hooks that acquire and release members of their own pool (a
   parent releasing its children, a bullet spawning a spark) and of other pools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* sp__pool_check: white-box invariants */

#include <string.h>

static void on_acquire_runs_on_every_acquisition_with_the_callers_arg(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooks", 16);
    d.max = 2;
    sp_pool *p = sp_pool_create(&d);
    int x = 1, y = 2;
    void *a = sp_acquire_with(p, &x);
    assert_int_equal(env.hooks.acquired, 1);
    assert_ptr_equal(env.hooks.last_arg, &x);
    assert_ptr_equal(env.hooks.last_acquired, a);
    void *b = sp_acquire(p);
    assert_int_equal(env.hooks.acquired, 2);
    assert_null(env.hooks.last_arg);
    assert_ptr_equal(env.hooks.last_acquired, b);
    void *c = sp_acquire_force(p, &y); /* saturated: reclaims a */
    assert_ptr_equal(c, a);
    assert_int_equal(env.hooks.acquired, 3);
    assert_ptr_equal(env.hooks.last_arg, &y);
    sp_release(p, b);
    void *e = sp_acquire_with(p, &y); /* recycled member */
    assert_ptr_equal(e, b);
    assert_int_equal(env.hooks.acquired, 4);
    assert_ptr_equal(env.hooks.last_arg, &y);
    assert_null(sp_acquire_with(p, &x)); /* dropped: no hook */
    assert_int_equal(env.hooks.acquired, 4);
    assert_ptr_equal(env.hooks.last_arg, &y);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void initial_and_prewarm_build_without_acquiring(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooks", 16);
    d.initial = 3;
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, 2), 2);
    assert_string_equal(env.hooks.trace, "CCCCC");
    assert_int_equal(env.hooks.acquired, 0);
    sp_acquire(p);
    assert_string_equal(env.hooks.trace, "CCCCCA");
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_that_builds_runs_create_then_on_acquire(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooks", 16);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    assert_string_equal(env.hooks.trace, "CA");
    assert_ptr_equal(env.hooks.last_created, a);
    assert_ptr_equal(env.hooks.last_acquired, a);
    sp_release(p, a);
    sp_acquire(p);
    assert_string_equal(env.hooks.trace, "CARA");
    sp_pool_destroy(p);
    assert_string_equal(env.hooks.trace, "CARAD");
    EXPECT_NO_LEAK(&env.alloc);
}

static void on_release_runs_on_every_release_path(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooks", 16);
    d.max = 3;
    d.overflow = SP_OVERFLOW_RECLAIM;
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p), *b = sp_acquire(p), *c = sp_acquire(p);
    test_hooks_trace_reset(&env.hooks);
    assert_int_equal(sp_release(p, b), SP_OK);
    assert_string_equal(env.hooks.trace, "R");
    assert_ptr_equal(env.hooks.last_released, b);
    b = sp_acquire(p);
    void *r = sp_acquire(p); /* reclaims a, the oldest */
    assert_ptr_equal(r, a);
    assert_string_equal(env.hooks.trace, "RARA");
    assert_ptr_equal(env.hooks.last_released, a);
    test_hooks_trace_reset(&env.hooks);
    assert_int_equal(sp_release_all(p), 3);
    assert_string_equal(env.hooks.trace, "RRR");
    assert_int_equal(env.hooks.released, 5);
    EXPECT_STATS(p, .size = 3, .free = 3, .peak_leased = 3, .created = 3, .acquired = 5, .released = 5,
                 .reclaimed = 1);
    (void)c;
    sp_pool_destroy(p);
    assert_int_equal(env.hooks.released, 5);
    EXPECT_NO_LEAK(&env.alloc);
}

static void clear_runs_dispose_not_on_release_on_leased_members(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooks", 16);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp_acquire(p);
    sp_acquire(p);
    sp_release(p, a);
    test_hooks_trace_reset(&env.hooks);
    assert_int_equal(sp_clear(p), 3);
    assert_string_equal(env.hooks.trace, "DDD");
    assert_int_equal(env.hooks.released, 1);
    EXPECT_STATS(p, .peak_leased = 3, .created = 3, .disposed = 3, .acquired = 3, .released = 1);
    sp_pool_destroy(p);
    assert_string_equal(env.hooks.trace, "DDD");
    EXPECT_NO_LEAK(&env.alloc);
}

static void destroy_runs_dispose_not_on_release_on_leased_members(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooks", 16);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp_acquire(p);
    sp_acquire(p);
    sp_release(p, a);
    test_hooks_trace_reset(&env.hooks);
    sp_pool_destroy(p);
    assert_string_equal(env.hooks.trace, "DDD");
    assert_int_equal(env.hooks.released, 1);
    EXPECT_NO_LEAK(&env.alloc);
}

/* Each member gets a serial number in create; dispose ticks it off, so a member disposed twice
   or never shows. */
typedef struct serial_item {
    int serial;
} serial_item;

typedef struct serial_book {
    int next;
    int disposed[256];
    int dispose_of_unknown;
} serial_book;

static void serial_create(void *item, void *user) {
    serial_book *book = (serial_book *)user;
    ((serial_item *)item)->serial = book->next++;
}
static void serial_dispose(void *item, void *user) {
    serial_book *book = (serial_book *)user;
    int s = ((serial_item *)item)->serial;
    if (s < 0 || s >= book->next || s >= 256) book->dispose_of_unknown++;
    else book->disposed[s]++;
}

static void dispose_runs_exactly_once_per_built_member(void **state) {
    (void)state;
    test_alloc ta = {0};
    serial_book book;
    memset(&book, 0, sizeof book);
    sp_desc d = {.name = "serial", .item_size = sizeof(serial_item), .initial = 4, .chunk_items = 4,
                 .create = serial_create, .dispose = serial_dispose, .user = &book,
                 .allocator = test_alloc_make(&ta)};
    sp_pool *p = sp_pool_create(&d);
    void *items[12];
    for (int i = 0; i < 12; i++) items[i] = sp_acquire(p);
    for (int i = 0; i < 12; i += 2) sp_release(p, items[i]);
    assert_int_equal(sp_trim(p, 2), 4); /* 6 free, keep 2 */
    assert_int_equal(sp_clear(p), 8);
    for (int i = 0; i < 10; i++) sp_acquire(p);
    sp_release(p, sp_first(p));
    assert_int_equal(sp_trim(p, 0), 1);
    sp_pool_destroy(p);
    assert_int_equal(book.next, 22);
    assert_int_equal(book.dispose_of_unknown, 0);
    for (int s = 0; s < book.next; s++) assert_int_equal(book.disposed[s], 1);
    EXPECT_NO_LEAK(&ta);
}

/* --- re-entrancy ---------------------------------------------------------------------------- */

typedef struct family_item {
    struct family_item *children[3];
    int nchildren;
    int released_results[3];
} family_item;

typedef struct family_ctx {
    sp_pool *pool;
    int releases;
    int bad_results;
} family_ctx;

/* A parent's life ends its children's. */
static void family_release(void *item, void *user) {
    family_ctx *ctx = (family_ctx *)user;
    family_item *it = (family_item *)item;
    ctx->releases++;
    for (int i = 0; i < it->nchildren; i++) {
        if (sp_release(ctx->pool, it->children[i]) != SP_OK) ctx->bad_results++;
    }
    it->nchildren = 0;
}

static sp_pool *family_pool(family_ctx *ctx, test_alloc *ta, size_t max, sp_overflow overflow) {
    memset(ctx, 0, sizeof *ctx);
    sp_desc d = {.name = "family", .item_size = sizeof(family_item), .max = max,
                 .overflow = overflow, .chunk_items = 2, .on_release = family_release,
                 .user = ctx, .allocator = test_alloc_make(ta)};
    ctx->pool = sp_pool_create(&d);
    return ctx->pool;
}

static family_item *family_make(sp_pool *p) {
    family_item *parent = sp_acquire(p);
    for (int i = 0; i < 3; i++) parent->children[i] = sp_acquire(p);
    parent->nchildren = 3;
    return parent;
}

static void on_release_of_a_parent_releases_its_children_in_the_same_pool(void **state) {
    (void)state;
    test_alloc ta = {0};
    family_ctx ctx;
    sp_pool *p = family_pool(&ctx, &ta, 0, SP_OVERFLOW_DROP);
    void *other = sp_acquire(p);
    family_item *parent = family_make(p);
    family_item *kids[3] = {parent->children[0], parent->children[1], parent->children[2]};
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 5);
    assert_int_equal(sp_release(p, parent), SP_OK);
    assert_true(sp__pool_check(p));
    assert_int_equal(ctx.bad_results, 0);
    assert_int_equal(ctx.releases, 4);
    EXPECT_STATS(p, .size = 5, .leased = 1, .free = 4, .peak_leased = 5, .created = 5, .acquired = 5,
                 .released = 4);
    assert_false(sp_is_leased(p, parent));
    for (int i = 0; i < 3; i++) assert_false(sp_is_leased(p, kids[i]));
    assert_true(sp_is_leased(p, other));
    assert_ptr_equal(sp_first(p), other);
    assert_null(sp_next(p, other));
    /* The four freed members are all usable again, and distinct. */
    void *again[4];
    for (int i = 0; i < 4; i++) {
        again[i] = sp_acquire(p);
        assert_non_null(again[i]);
        assert_ptr_not_equal(again[i], other);
        for (int j = 0; j < i; j++) assert_ptr_not_equal(again[i], again[j]);
    }
    EXPECT_STATS(p, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 9, .released = 4);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

static void release_all_copes_with_hooks_releasing_later_members(void **state) {
    (void)state;
    test_alloc ta = {0};
    family_ctx ctx;
    sp_pool *p = family_pool(&ctx, &ta, 0, SP_OVERFLOW_DROP);
    family_make(p);
    void *loner = sp_acquire(p);
    family_make(p);
    size_t n = sp_release_all(p);
    assert_true(sp__pool_check(p));
    assert_true(n >= 1 && n <= 9);
    assert_int_equal(ctx.bad_results, 0);
    assert_int_equal(ctx.releases, 9);
    EXPECT_STATS(p, .size = 9, .free = 9, .peak_leased = 9, .created = 9, .acquired = 9, .released = 9);
    assert_null(sp_first(p));
    assert_false(sp_is_leased(p, loner));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

static void reclaim_of_a_parent_releases_its_children(void **state) {
    (void)state;
    test_alloc ta = {0};
    family_ctx ctx;
    sp_pool *p = family_pool(&ctx, &ta, 4, SP_OVERFLOW_RECLAIM);
    family_item *parent = family_make(p);
    EXPECT_STATS(p, .size = 4, .leased = 4, .peak_leased = 4, .created = 4, .acquired = 4);
    void *r = sp_acquire(p);
    assert_true(sp__pool_check(p));
    assert_ptr_equal(r, parent);
    assert_int_equal(ctx.bad_results, 0);
    assert_int_equal(ctx.releases, 4);
    EXPECT_STATS(p, .size = 4, .leased = 1, .free = 3, .peak_leased = 4, .created = 4, .acquired = 5,
                 .released = 4, .reclaimed = 1);
    assert_true(sp_is_leased(p, parent));
    assert_ptr_equal(sp_first(p), parent);
    assert_null(sp_next(p, parent));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

typedef struct spawner_item {
    struct spawner_item *child;
    int kind;
} spawner_item;

enum { KIND_PLAIN = 1, KIND_SPAWNER = 2, KIND_BULLET = 3, KIND_SPARK = 4 };

typedef struct spawner_ctx {
    sp_pool *pool;
    sp_pool *other; /* when set, children come from here */
    void *spark;
    int sparks;
} spawner_ctx;

static const int kind_spawner = KIND_SPAWNER, kind_bullet = KIND_BULLET, kind_spark = KIND_SPARK;

/* A spawner acquires its child during its own acquisition. */
static void spawner_acquire(void *item, const void *arg, void *user) {
    spawner_ctx *ctx = (spawner_ctx *)user;
    spawner_item *it = (spawner_item *)item;
    it->kind = arg ? *(const int *)arg : KIND_PLAIN;
    it->child = NULL;
    if (it->kind == KIND_SPAWNER) it->child = sp_acquire(ctx->other ? ctx->other : ctx->pool);
}

/* A bullet spawns a spark when it dies; a spawner gives its child back. */
static void spawner_release(void *item, void *user) {
    spawner_ctx *ctx = (spawner_ctx *)user;
    spawner_item *it = (spawner_item *)item;
    if (it->kind == KIND_BULLET) {
        ctx->spark = sp_acquire_with(ctx->pool, &kind_spark);
        ctx->sparks++;
    }
    if (it->kind == KIND_SPAWNER && it->child) {
        sp_release(ctx->other ? ctx->other : ctx->pool, it->child);
        it->child = NULL;
    }
}

static void on_acquire_may_acquire_from_its_own_pool(void **state) {
    (void)state;
    test_alloc ta = {0};
    spawner_ctx ctx = {0};
    /* chunk_items 1: every nested build needs new memory while the outer acquire is running. */
    sp_desc d = {.name = "spawner", .item_size = sizeof(spawner_item), .chunk_items = 1,
                 .on_acquire = spawner_acquire, .on_release = spawner_release, .user = &ctx,
                 .allocator = test_alloc_make(&ta)};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    spawner_item *parents[20];
    for (int i = 0; i < 20; i++) {
        parents[i] = sp_acquire_with(p, &kind_spawner);
        assert_non_null(parents[i]);
        assert_int_equal(parents[i]->kind, KIND_SPAWNER);
        assert_non_null(parents[i]->child);
        assert_ptr_not_equal(parents[i]->child, parents[i]);
        assert_int_equal(parents[i]->child->kind, KIND_PLAIN);
    }
    EXPECT_STATS(p, .size = 40, .leased = 40, .peak_leased = 40, .created = 40, .acquired = 40);
    assert_true(sp__pool_check(p));
    /* 40 distinct leased members, each visited once. */
    int visited = 0;
    for (void *it = sp_first(p); it; it = sp_next(p, it)) {
        int found = 0;
        for (int i = 0; i < 20; i++) found += (it == parents[i]) + (it == parents[i]->child);
        assert_int_equal(found, 1);
        visited++;
    }
    assert_int_equal(visited, 40);
    /* Releasing the parents releases the children from the hook. */
    for (int i = 0; i < 20; i++) assert_int_equal(sp_release(p, parents[i]), SP_OK);
    EXPECT_STATS(p, .size = 40, .free = 40, .peak_leased = 40, .created = 40, .acquired = 40,
                 .released = 40);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

static void on_release_may_acquire_from_its_own_pool(void **state) {
    (void)state;
    test_alloc ta = {0};
    spawner_ctx ctx = {0};
    sp_desc d = {.name = "bullets", .item_size = sizeof(spawner_item), .chunk_items = 1,
                 .on_acquire = spawner_acquire, .on_release = spawner_release, .user = &ctx,
                 .allocator = test_alloc_make(&ta)};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    spawner_item *bullet = sp_acquire_with(p, &kind_bullet);
    assert_int_equal(sp_release(p, bullet), SP_OK);
    /* The spark had to be built while the bullet was still being released. */
    assert_int_equal(ctx.sparks, 1);
    assert_non_null(ctx.spark);
    assert_ptr_not_equal(ctx.spark, bullet);
    assert_true(sp_is_leased(p, ctx.spark));
    assert_false(sp_is_leased(p, bullet));
    assert_int_equal(((spawner_item *)ctx.spark)->kind, KIND_SPARK);
    /* The bullet counts as leased while its on_release acquires the spark: peak 2. */
    EXPECT_STATS(p, .size = 2, .leased = 1, .free = 1, .peak_leased = 2, .created = 2,
                 .acquired = 2, .released = 1);
    /* Now the bullet's member is free: a second bullet reuses it, and its spark the other. */
    void *first_spark = ctx.spark;
    assert_int_equal(sp_release(p, first_spark), SP_OK);
    bullet = sp_acquire_with(p, &kind_bullet);
    assert_int_equal(sp_release(p, bullet), SP_OK);
    assert_int_equal(ctx.sparks, 2);
    assert_ptr_not_equal(ctx.spark, bullet);
    assert_true(sp_is_leased(p, ctx.spark));
    EXPECT_STATS(p, .size = 2, .leased = 1, .free = 1, .peak_leased = 2, .created = 2,
                 .acquired = 4, .released = 3);
    /* release_all may meet a bullet too: its spark is acquired during release_all. */
    sp_release(p, ctx.spark);
    sp_acquire_with(p, &kind_bullet);
    sp_release_all(p);
    assert_int_equal(ctx.sparks, 3);
    assert_true(sp__pool_check(p));
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.leased + s.free, s.size);
    assert_true(s.leased <= 1);
    assert_int_equal(s.acquired - s.released, s.leased);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

/* A spawner acquired from a saturated RECLAIM pool reclaims the oldest member for itself and
   its on_acquire reclaims the next oldest for its child: never the member being acquired. */
static void on_acquire_may_reclaim_from_its_own_saturated_pool(void **state) {
    (void)state;
    test_alloc ta = {0};
    spawner_ctx ctx = {0};
    sp_desc d = {.name = "spawner", .item_size = sizeof(spawner_item), .max = 3,
                 .overflow = SP_OVERFLOW_RECLAIM, .on_acquire = spawner_acquire, .user = &ctx,
                 .allocator = test_alloc_make(&ta)};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    spawner_item *x = sp_acquire(p), *y = sp_acquire(p), *z = sp_acquire(p);
    spawner_item *parent = sp_acquire_with(p, &kind_spawner);
    assert_ptr_equal(parent, x);
    assert_ptr_equal(parent->child, y);
    assert_int_equal(parent->kind, KIND_SPAWNER);
    assert_int_equal(y->kind, KIND_PLAIN);
    assert_true(sp__pool_check(p));
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 5,
                 .released = 2, .reclaimed = 2);
    /* Order: z, then the parent (its acquisition started first), then the child; or the child
       first if the library appends on completion. Either way all three, once each. */
    void *first = sp_first(p);
    assert_ptr_equal(first, z);
    void *second = sp_next(p, first), *third = sp_next(p, second);
    assert_true((second == x && third == y) || (second == y && third == x));
    assert_null(sp_next(p, third));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

/* "Except the member it is processing": a hook that releases its own member is refused, and
   the pool stays consistent. */
typedef struct selfish_ctx {
    sp_pool *pool;
    sp_result in_acquire, in_release;
} selfish_ctx;

static void selfish_acquire(void *item, const void *arg, void *user) {
    (void)arg;
    selfish_ctx *ctx = (selfish_ctx *)user;
    ctx->in_acquire = sp_release(ctx->pool, item);
}
static void selfish_release(void *item, void *user) {
    selfish_ctx *ctx = (selfish_ctx *)user;
    ctx->in_release = sp_release(ctx->pool, item);
}

static void hook_releasing_its_own_member_is_refused(void **state) {
    (void)state;
    test_alloc ta = {0};
    test_log tl = {0};
    selfish_ctx ctx = {0};
    sp_desc d = {.name = "selfish", .item_size = 16, .on_acquire = selfish_acquire,
                 .on_release = selfish_release, .user = &ctx, .allocator = test_alloc_make(&ta),
                 .logger = test_log_make(&tl)};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    void *a = sp_acquire(p);
    assert_non_null(a);
    assert_int_not_equal(ctx.in_acquire, SP_OK);
    assert_true(sp_is_leased(p, a));
    EXPECT_STATS(p, .size = 1, .leased = 1, .peak_leased = 1, .created = 1, .acquired = 1);
    assert_int_equal(sp_release(p, a), SP_OK);
    assert_int_not_equal(ctx.in_release, SP_OK);
    assert_false(sp_is_leased(p, a));
    EXPECT_STATS(p, .size = 1, .free = 1, .peak_leased = 1, .created = 1, .acquired = 1,
                 .released = 1);
    assert_int_equal(tl.warnings, 2);
    assert_string_equal(tl.last_pool, "selfish");
    assert_true(sp__pool_check(p));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

/* create may acquire from its own pool too: the member being built is not handed out. */
typedef struct builder_ctx {
    sp_pool *pool;
    void *spawned;
    void *building;
    int depth;
} builder_ctx;

static void builder_create(void *item, void *user) {
    builder_ctx *ctx = (builder_ctx *)user;
    if (ctx->spawned || ctx->depth) return;
    ctx->depth++;
    ctx->building = item;
    ctx->spawned = sp_acquire(ctx->pool);
    ctx->depth--;
}

static void create_may_acquire_from_its_own_pool(void **state) {
    (void)state;
    test_alloc ta = {0};
    builder_ctx ctx = {0};
    sp_desc d = {.name = "builder", .item_size = 24, .chunk_items = 1, .create = builder_create,
                 .user = &ctx, .allocator = test_alloc_make(&ta)};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    void *a = sp_acquire(p);
    assert_non_null(a);
    assert_non_null(ctx.spawned);
    assert_ptr_equal(ctx.building, a);
    assert_ptr_not_equal(ctx.spawned, a);
    assert_true(sp_is_leased(p, a));
    assert_true(sp_is_leased(p, ctx.spawned));
    assert_true(sp__pool_check(p));
    EXPECT_STATS(p, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

/* What the counters say while a member's on_release runs: it is still leased (its life ends
   after the hook, as sp_release's comment says), so stats agree with sp_is_leased, and a member
   acquired from the hook makes two leased at once. */
typedef struct watch_ctx {
    sp_pool *pool;
    size_t leased_seen;
    bool is_leased_seen;
    void *spawned;
} watch_ctx;

static void watch_release(void *item, void *user) {
    watch_ctx *ctx = (watch_ctx *)user;
    sp_stats s;
    sp_stats_get(ctx->pool, &s);
    ctx->leased_seen = s.leased;
    ctx->is_leased_seen = sp_is_leased(ctx->pool, item);
    if (!ctx->spawned) ctx->spawned = sp_acquire(ctx->pool);
}

static void member_counts_as_leased_while_its_on_release_runs(void **state) {
    (void)state;
    watch_ctx ctx = {0};
    sp_desc d = {.name = "watch", .item_size = 16, .on_release = watch_release, .user = &ctx};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    void *a = sp_acquire(p);
    assert_int_equal(sp_release(p, a), SP_OK);
    assert_true(ctx.is_leased_seen);
    assert_int_equal(ctx.leased_seen, 1);
    assert_non_null(ctx.spawned);
    EXPECT_STATS(p, .size = 2, .leased = 1, .free = 1, .peak_leased = 2, .created = 2, .acquired = 2,
                 .released = 1);
    sp_pool_destroy(p);
}

static void hooks_may_use_another_pool(void **state) {
    (void)state;
    test_alloc ta = {0};
    spawner_ctx ctx = {0};
    sp_desc kids = {.name = "kids", .item_size = 8, .allocator = test_alloc_make(&ta)};
    ctx.other = sp_pool_create(&kids);
    sp_desc d = {.name = "parents", .item_size = sizeof(spawner_item),
                 .on_acquire = spawner_acquire, .on_release = spawner_release, .user = &ctx,
                 .allocator = test_alloc_make(&ta)};
    sp_pool *p = ctx.pool = sp_pool_create(&d);
    spawner_item *a = sp_acquire_with(p, &kind_spawner);
    spawner_item *b = sp_acquire_with(p, &kind_spawner);
    assert_true(sp_is_leased(ctx.other, a->child));
    assert_true(sp_is_leased(ctx.other, b->child));
    EXPECT_STATS(ctx.other, .size = 2, .leased = 2, .peak_leased = 2, .created = 2, .acquired = 2);
    sp_release(p, a);
    EXPECT_STATS(ctx.other, .size = 2, .leased = 1, .free = 1, .peak_leased = 2, .created = 2,
                 .acquired = 2, .released = 1);
    sp_release_all(p);
    EXPECT_STATS(ctx.other, .size = 2, .free = 2, .peak_leased = 2, .created = 2, .acquired = 2,
                 .released = 2);
    sp_pool_destroy(p);
    sp_pool_destroy(ctx.other);
    EXPECT_NO_LEAK(&ta);
}

/* The user pointer reaches every hook, the priority hook included. */
typedef struct user_probe {
    int wrong;
    int calls;
} user_probe;
static user_probe probe;
static void probe_create(void *item, void *user) { (void)item; probe.calls++; probe.wrong += user != &probe; }
static void probe_acquire(void *item, const void *arg, void *user) { (void)item; (void)arg; probe.calls++; probe.wrong += user != &probe; }
static void probe_release(void *item, void *user) { (void)item; probe.calls++; probe.wrong += user != &probe; }
static void probe_dispose(void *item, void *user) { (void)item; probe.calls++; probe.wrong += user != &probe; }
static double probe_priority(const void *item, void *user) { (void)item; probe.calls++; probe.wrong += user != &probe; return 0.0; }

static void every_hook_gets_the_user_pointer(void **state) {
    (void)state;
    memset(&probe, 0, sizeof probe);
    sp_desc d = {.name = "probe", .item_size = 8, .max = 2, .overflow = SP_OVERFLOW_RECLAIM,
                 .create = probe_create, .on_acquire = probe_acquire, .on_release = probe_release,
                 .dispose = probe_dispose, .priority = probe_priority, .user = &probe};
    sp_pool *p = sp_pool_create(&d);
    sp_acquire(p);
    sp_acquire(p);
    sp_acquire(p); /* reclaim: priority runs */
    sp_pool_destroy(p);
    /* create 2, acquire 3, release 1, dispose 2, priority at least once */
    assert_true(probe.calls >= 9);
    assert_int_equal(probe.wrong, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(on_acquire_runs_on_every_acquisition_with_the_callers_arg),
        cmocka_unit_test(initial_and_prewarm_build_without_acquiring),
        cmocka_unit_test(acquire_that_builds_runs_create_then_on_acquire),
        cmocka_unit_test(on_release_runs_on_every_release_path),
        cmocka_unit_test(clear_runs_dispose_not_on_release_on_leased_members),
        cmocka_unit_test(destroy_runs_dispose_not_on_release_on_leased_members),
        cmocka_unit_test(dispose_runs_exactly_once_per_built_member),
        cmocka_unit_test(on_release_of_a_parent_releases_its_children_in_the_same_pool),
        cmocka_unit_test(release_all_copes_with_hooks_releasing_later_members),
        cmocka_unit_test(reclaim_of_a_parent_releases_its_children),
        cmocka_unit_test(on_acquire_may_acquire_from_its_own_pool),
        cmocka_unit_test(on_release_may_acquire_from_its_own_pool),
        cmocka_unit_test(on_acquire_may_reclaim_from_its_own_saturated_pool),
        cmocka_unit_test(hook_releasing_its_own_member_is_refused),
        cmocka_unit_test(create_may_acquire_from_its_own_pool),
        cmocka_unit_test(member_counts_as_leased_while_its_on_release_runs),
        cmocka_unit_test(hooks_may_use_another_pool),
        cmocka_unit_test(every_hook_gets_the_user_pointer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
