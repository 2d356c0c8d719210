/* SPDX-License-Identifier: Zlib */
/* Handles: a handle resolves while its member's life lasts and never after (release, reclaim,
   clear), never in another live pool, never when forged, and never by generation wrap-around:
   an exhausted slot is retired (white-box, through sp__debug_set_life). sp_is_leased too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h"

#include <stdlib.h>
#include <string.h>

#define LIFE_OF(h) ((h).id >> TEST_LIFE_SHIFT)
#define TAG_OF(h) (((h).id >> TEST_TAG_SHIFT) & TEST_TAG_MASK)
#define SLOT_OF(h) ((h).id & 0xFFFFFFu)

static void handle_resolves_while_the_life_lasts(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "handles", 24);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp_handle h = sp_handle_of(p, a);
    assert_false(sp_handle_is_null(h));
    assert_true(LIFE_OF(h) != 0);
    assert_true(sp_handle_eq(h, sp_handle_of(p, a))); /* stable within a life */
    assert_ptr_equal(sp_resolve(p, h), a);
    /* Other members coming and going, and growth across many chunks, do not move a. */
    void *others[600];
    for (int i = 0; i < 600; i++) others[i] = sp_acquire(p);
    for (int i = 0; i < 600; i += 3) sp_release(p, others[i]);
    assert_ptr_equal(sp_resolve(p, h), a);
    assert_int_equal(sp_release(p, a), SP_OK);
    assert_null(sp_resolve(p, h));
    assert_true(sp_handle_is_null(sp_handle_of(p, a)));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void every_life_gets_a_new_handle(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "handles", 24);
    d.max = 1;
    sp_pool *p = sp_pool_create(&d);
    sp_handle seen[50];
    for (int i = 0; i < 50; i++) {
        void *a = sp_acquire(p);
        seen[i] = sp_handle_of(p, a);
        assert_ptr_equal(sp_resolve(p, seen[i]), a);
        for (int j = 0; j < i; j++) {
            assert_false(sp_handle_eq(seen[i], seen[j]));
            assert_null(sp_resolve(p, seen[j]));
        }
        sp_release(p, a);
        assert_null(sp_resolve(p, seen[i]));
    }
    EXPECT_STATS(p, .size = 1, .free = 1, .peak_leased = 1, .created = 1, .acquired = 50, .released = 50);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void acquire_handle_gives_the_handle_of_the_new_life_on_every_path(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "handles", 24); /* test_env's hooks: on_acquire included */
    d.max = 3;
    d.initial = 1;
    sp_pool *p = sp_pool_create(&d);
    sp_handle h[3];
    void *m[3];
    m[0] = sp_acquire_handle(p, NULL, &h[0]); /* a prewarmed free member */
    m[1] = sp_acquire_handle(p, NULL, &h[1]); /* built on demand: the slow path */
    m[2] = sp_acquire_handle(p, NULL, NULL);  /* no handle wanted */
    for (int i = 0; i < 3; i++) assert_non_null(m[i]);
    for (int i = 0; i < 2; i++) {
        assert_true(sp_handle_eq(h[i], sp_handle_of(p, m[i])));
        assert_ptr_equal(sp_resolve(p, h[i]), m[i]);
    }
    sp_handle dropped = h[0];
    assert_null(sp_acquire_handle(p, NULL, &dropped)); /* saturated DROP */
    assert_true(sp_handle_is_null(dropped));
    /* A recycled member: a new life, a new handle, the old one stale. */
    sp_release(p, m[0]);
    sp_handle again;
    assert_ptr_equal(sp_acquire_handle(p, NULL, &again), m[0]);
    assert_false(sp_handle_eq(again, h[0]));
    assert_true(sp_handle_eq(again, sp_handle_of(p, m[0])));
    assert_null(sp_resolve(p, h[0]));
    /* A reclaim (RECLAIM now): the reclaimed member's new life. */
    sp_set_overflow(p, SP_OVERFLOW_RECLAIM);
    sp_handle reclaimed;
    void *r = sp_acquire_handle(p, NULL, &reclaimed);
    assert_non_null(r);
    assert_true(sp_handle_eq(reclaimed, sp_handle_of(p, r)));
    sp_handle none = h[1];
    assert_null(sp_acquire_handle(NULL, NULL, &none));
    assert_true(sp_handle_is_null(none));
    assert_int_equal(env.hooks.acquired, 5);
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void handle_of_anything_but_a_leased_member_is_null(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "handles", 32);
    d.initial = 2;
    sp_pool *p = sp_pool_create(&d);
    sp_pool *q = sp_pool_create(&d);
    char *a = sp_acquire(p);
    char *free_member = sp_acquire(p);
    sp_release(p, free_member);
    void *theirs = sp_acquire(q);
    int local = 0;
    assert_true(sp_handle_is_null(sp_handle_of(p, NULL)));
    assert_true(sp_handle_is_null(sp_handle_of(NULL, a)));
    assert_true(sp_handle_is_null(sp_handle_of(p, free_member)));
    assert_true(sp_handle_is_null(sp_handle_of(p, a + 1)));
    assert_true(sp_handle_is_null(sp_handle_of(p, a + 16)));
    assert_true(sp_handle_is_null(sp_handle_of(p, &local)));
    assert_true(sp_handle_is_null(sp_handle_of(p, theirs)));
    assert_false(sp_handle_is_null(sp_handle_of(p, a)));
    sp_pool_destroy(p);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
}

static void null_and_forged_handles_resolve_to_null(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "handles", 32);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp_handle h = sp_handle_of(p, a);
    assert_null(sp_resolve(p, sp_handle_null()));
    assert_null(sp_resolve(NULL, h));
    sp_handle f;
    f.id = h.id ^ (1ull << TEST_LIFE_SHIFT); /* another life */
    assert_null(sp_resolve(p, f));
    f.id = h.id + (1ull << TEST_LIFE_SHIFT);
    assert_null(sp_resolve(p, f));
    f.id = h.id ^ (1ull << TEST_TAG_SHIFT); /* another pool tag */
    assert_null(sp_resolve(p, f));
    f.id = (h.id & ~0xFFFFFFull) | 0xFFFFFFull; /* a slot that does not exist */
    assert_null(sp_resolve(p, f));
    f.id = h.id & ((1ull << TEST_LIFE_SHIFT) - 1); /* life 0 */
    assert_null(sp_resolve(p, f));
    /* Random ids: either NULL, or a leased member whose own handle is exactly that id. */
    void *more[40];
    for (int i = 0; i < 40; i++) more[i] = sp_acquire(p);
    for (int i = 0; i < 40; i += 2) sp_release(p, more[i]);
    uint32_t seed = 12345;
    for (int i = 0; i < 20000; i++) {
        uint64_t id = ((uint64_t)test_rand(&seed) << 32) | test_rand(&seed);
        if (i & 1) id = (id & ~0xFFF000000ull) | (h.id & 0xFFF000000ull); /* our tag */
        if (i % 3 == 0) id = (id & ~0xFFFFFFull) | (id & 0x3Full);          /* small slots */
        if (i % 4 == 1) id = (id & ((1ull << TEST_LIFE_SHIFT) - 1)) | ((id & 3u) + 1) << TEST_LIFE_SHIFT; /* early lives */
        sp_handle r = {id};
        void *m = sp_resolve(p, r);
        if (m) assert_true(sp_handle_of(p, m).id == id);
    }
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* Whatever the slot's state (leased, leased with a hook running on it, free), a handle that
   names it with another tag never resolves, even where the tag differs only in the bits that
   lie beside the slot word's flags once the pool's tag is subtracted (bits 32..35), with the
   life that makes the rest of the word match; and a member whose hook is running resolves
   through its own handle (the inline resolve hands it to the library). */
typedef struct busy_probe {
    sp_pool *pool;
    sp_handle own; /* the member's handle, taken before the hook */
    int resolved_in_hook, foreign_in_hook;
} busy_probe;

static int tag_variants_resolving(sp_pool *p, sp_handle h) {
    int n = 0;
    uint64_t tag = TAG_OF(h), idx = SLOT_OF(h), life = LIFE_OF(h);
    for (uint64_t t = 1; t <= 0xFFFu; t++) {
        if (t == tag) continue;
        for (uint64_t l = life - 1u; l <= life + 1u; l++) {
            sp_handle f = {l << TEST_LIFE_SHIFT | t << 24 | idx};
            if (sp_resolve(p, f)) n++;
        }
    }
    return n;
}

static busy_probe the_probe; /* the desc's user belongs to test_env's create hooks */

static void busy_probe_release(void *item, void *user) {
    (void)user;
    busy_probe *b = &the_probe;
    if (sp_resolve(b->pool, b->own) == item) b->resolved_in_hook++;
    b->foreign_in_hook += tag_variants_resolving(b->pool, b->own);
}

static void another_tag_never_resolves_in_any_slot_state(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "tags", 32);
    busy_probe b = {0};
    d.on_release = busy_probe_release;
    sp_pool *p = sp_pool_create(&d);
    b.pool = p;
    the_probe = b;
    void *a = sp_acquire(p);
    void *c = sp_acquire(p);
    sp_handle ha = sp_handle_of(p, a), hc = sp_handle_of(p, c);
    assert_int_equal(tag_variants_resolving(p, ha), 0); /* leased */
    the_probe.own = hc;
    assert_int_equal(sp_release(p, c), SP_OK); /* busy while on_release runs */
    assert_int_equal(the_probe.resolved_in_hook, 1);
    assert_int_equal(the_probe.foreign_in_hook, 0);
    assert_null(sp_resolve(p, hc)); /* stale */
    sp_handle next_life = {hc.id + (1ull << TEST_LIFE_SHIFT)}; /* the free slot's word has this life */
    assert_null(sp_resolve(p, next_life));
    assert_int_equal(tag_variants_resolving(p, next_life), 0); /* free */
    assert_ptr_equal(sp_resolve(p, ha), a);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* The inline resolve compares a slot's 8 bytes: the free-list link, which holds the slot's own
   index exactly while the member is leased with no flag set, and the word. Every other state
   must leave that mark behind, or a handle of a tag whose top 4 bits differ by the word's flags
   would match: a hook running on a marked member (on_acquire of a hooked pool, dispose during
   sp_clear), and a slot retired with no dispose hook to run (fails without the retirement
   clearing the link). */
/* A 32-byte pool of the test environment without hooks: every member leased by the plain paths
   carries the mark. */
static sp_desc hookless_desc(test_env *env, const char *name) {
    sp_desc d = test_env_desc(env, name, 32);
    d.create = NULL;
    d.on_acquire = NULL;
    d.on_release = NULL;
    d.dispose = NULL;
    return d;
}

typedef struct mark_probe {
    sp_pool *pool;
    sp_handle own;
    int in_hook, foreign_in_hook, own_in_acquire;
} mark_probe;

static mark_probe the_mark_probe;

static void mark_probe_acquire(void *item, const void *arg, void *user) {
    (void)arg;
    (void)user;
    mark_probe *m = &the_mark_probe;
    sp_handle h = sp_handle_of(m->pool, item);
    if (sp_resolve(m->pool, h) == item) m->own_in_acquire++; /* busy: through the library */
    m->in_hook++;
    m->foreign_in_hook += tag_variants_resolving(m->pool, h);
}

static void mark_probe_dispose(void *item, void *user) {
    (void)item;
    (void)user;
    mark_probe *m = &the_mark_probe;
    if (sp_handle_is_null(m->own)) return;
    m->in_hook++;
    m->foreign_in_hook += tag_variants_resolving(m->pool, m->own);
}

/* A priority callback scores every leased member of a memory-order RECLAIM pool: the hook's
   busy bit takes each one's mark, and the mark comes back after the hook (white-box: the link
   holds the slot's own index), or every member would resolve through the library from then on
   (fails without slot_remark). Inside the callback, no other tag resolves either. */
static double mark_probe_priority(const void *item, void *user) {
    (void)user;
    mark_probe *m = &the_mark_probe;
    sp_handle h = sp_handle_of(m->pool, item);
    m->in_hook++;
    m->foreign_in_hook += tag_variants_resolving(m->pool, h);
    return (double)(uintptr_t)item; /* the lowest address goes */
}

static void marks_come_back_after_a_priority_callback(void **state) {
    (void)state;
    enum { N = 4 };
    test_env env;
    sp_desc d = hookless_desc(&env, "scored");
    d.max = N;
    d.overflow = SP_OVERFLOW_RECLAIM;
    d.order = SP_ORDER_MEMORY;
    d.priority = mark_probe_priority;
    memset(&the_mark_probe, 0, sizeof the_mark_probe);
    sp_pool *p = sp_pool_create(&d);
    the_mark_probe.pool = p;
    void *m[N];
    sp_handle h[N];
    for (int i = 0; i < N; i++) {
        m[i] = sp_acquire(p);
        h[i] = sp_handle_of(p, m[i]);
    }
    void *again = sp_acquire(p); /* saturated: scores all four, reclaims the lowest address */
    assert_non_null(again);
    assert_int_equal(the_mark_probe.in_hook, N);
    assert_int_equal(the_mark_probe.foreign_in_hook, 0);
    for (int i = 0; i < N; i++) {
        if (m[i] == again) /* the victim: the old life is gone */
            assert_null(sp_resolve(p, h[i]));
        else
            assert_ptr_equal(sp_resolve(p, h[i]), m[i]);
    }
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void another_tag_never_resolves_after_the_mark(void **state) {
    (void)state;
    test_env env;
    sp_desc d = hookless_desc(&env, "marks");
    /* Retired: the plain acquisition marked it; its last life ends in sp_release. */
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    void *b = sp_acquire(p);
    sp__debug_set_life(p, a, SP__LIFE_MAX);
    sp_handle ha = sp_handle_of(p, a), hb = sp_handle_of(p, b);
    assert_ptr_equal(sp_resolve(p, ha), a);
    assert_int_equal(tag_variants_resolving(p, ha), 0); /* leased, marked */
    assert_int_equal(sp_release(p, a), SP_OK);          /* retires */
    assert_null(sp_resolve(p, ha));
    assert_int_equal(tag_variants_resolving(p, ha), 0); /* retired */
    assert_ptr_equal(sp_resolve(p, hb), b);
    sp_pool_destroy(p);
    /* A hook on a member: on_acquire (the lease marks it after the hook), dispose of a leased
       member in sp_clear (marked by the plain acquisition before). */
    memset(&the_mark_probe, 0, sizeof the_mark_probe);
    d.on_acquire = mark_probe_acquire;
    p = sp_pool_create(&d);
    the_mark_probe.pool = p;
    void *c = sp_acquire(p);
    assert_int_equal(the_mark_probe.in_hook, 1);
    assert_int_equal(the_mark_probe.own_in_acquire, 1);
    sp_handle hc = sp_handle_of(p, c);
    assert_ptr_equal(sp_resolve(p, hc), c); /* marked after the hook */
    assert_int_equal(tag_variants_resolving(p, hc), 0);
    sp_pool_destroy(p);
    assert_int_equal(the_mark_probe.foreign_in_hook, 0);
    memset(&the_mark_probe, 0, sizeof the_mark_probe);
    d.on_acquire = NULL;
    d.dispose = mark_probe_dispose;
    p = sp_pool_create(&d);
    the_mark_probe.pool = p;
    void *e = sp_acquire(p);
    the_mark_probe.own = sp_handle_of(p, e);
    assert_ptr_equal(sp_resolve(p, the_mark_probe.own), e);
    sp_clear(p);
    assert_int_equal(the_mark_probe.in_hook, 1);
    assert_int_equal(the_mark_probe.foreign_in_hook, 0);
    assert_null(sp_resolve(p, the_mark_probe.own));
    the_mark_probe.own = sp_handle_null();
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void handle_from_another_live_pool_never_resolves(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "twins", 32);
    sp_pool *p = sp_pool_create(&d);
    sp_pool *q = sp_pool_create(&d);
    /* Same desc, same history: same slots, same lives. Only the pool tells them apart. */
    void *pa[10], *qa[10];
    sp_handle ph[10], qh[10];
    for (int i = 0; i < 10; i++) {
        pa[i] = sp_acquire(p);
        qa[i] = sp_acquire(q);
        ph[i] = sp_handle_of(p, pa[i]);
        qh[i] = sp_handle_of(q, qa[i]);
    }
    for (int i = 0; i < 10; i++) {
        assert_false(sp_handle_eq(ph[i], qh[i]));
        assert_ptr_equal(sp_resolve(p, ph[i]), pa[i]);
        assert_ptr_equal(sp_resolve(q, qh[i]), qa[i]);
        assert_null(sp_resolve(q, ph[i]));
        assert_null(sp_resolve(p, qh[i]));
    }
    sp_pool_destroy(p);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
}

static void live_pools_have_distinct_tags(void **state) {
    (void)state;
    enum { N = 40 };
    test_env env;
    sp_desc d = test_env_desc(&env, "tags", 8);
    sp_pool *pools[N];
    for (int i = 0; i < N; i++) pools[i] = sp_pool_create(&d);
    /* Free some tags and take new ones: still all distinct among the live pools. */
    for (int i = 0; i < N; i += 3) sp_pool_destroy(pools[i]);
    for (int i = 0; i < N; i += 3) pools[i] = sp_pool_create(&d);
    uint64_t tags[N];
    for (int i = 0; i < N; i++) {
        sp_handle h = sp_handle_of(pools[i], sp_acquire(pools[i]));
        tags[i] = TAG_OF(h);
        for (int j = 0; j < i; j++) assert_true(tags[i] != tags[j]);
    }
    for (int i = 0; i < N; i++) sp_pool_destroy(pools[i]);
    EXPECT_NO_LEAK(&env.alloc);
}

static void is_leased_is_true_only_for_leased_members(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "leased", 32);
    sp_pool *p = sp_pool_create(&d);
    sp_pool *q = sp_pool_create(&d);
    char *a = sp_acquire(p);
    char *b = sp_acquire(p);
    void *theirs = sp_acquire(q);
    int local;
    assert_true(sp_is_leased(p, a));
    assert_true(sp_is_leased(p, b));
    sp_release(p, b);
    assert_false(sp_is_leased(p, b));
    assert_false(sp_is_leased(p, a + 1));
    assert_false(sp_is_leased(p, NULL));
    assert_false(sp_is_leased(NULL, a));
    assert_false(sp_is_leased(p, &local));
    assert_false(sp_is_leased(p, theirs));
    assert_true(sp_is_leased(q, theirs));
    sp_pool_destroy(p);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
}

static int cmp_addr(const void *x, const void *y) {
    uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
    return a < b ? -1 : a > b;
}

/* Every byte address across a chunk, and a stride past either end: only member starts are
   recognised, whatever the stride (odd, even, power of two). */
static void only_member_starts_are_recognised_at_every_byte(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 3, 5, 7, 12, 24, 40, 64, 100};
    enum { N = 16 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        test_env env;
        sp_desc d = test_env_desc(&env, "bytes", sizes[k]);
        d.chunk_items = N;
        sp_pool *p = sp_pool_create(&d);
        char *m[N];
        for (int i = 0; i < N; i++) m[i] = sp_acquire(p);
        qsort(m, N, sizeof m[0], cmp_addr);
        size_t stride = (size_t)(m[1] - m[0]);
        assert_true(stride >= sizes[k]);
        for (int i = 2; i < N; i++) assert_int_equal((size_t)(m[i] - m[i - 1]), stride);
        sp_release(p, m[5]); /* one free member: a start, but not leased */
        for (size_t off = 0; off < N * stride + stride; off++) {
            char *q = m[0] + off;
            int start = off % stride == 0 && off / stride < N && off / stride != 5;
            assert_int_equal(sp_is_leased(p, q), start);
            assert_int_equal(!sp_handle_is_null(sp_handle_of(p, q)), start);
        }
        for (size_t back = 1; back <= stride; back++) assert_false(sp_is_leased(p, m[0] - back));
        sp_pool_destroy(p);
        EXPECT_NO_LEAK(&env.alloc);
    }
}

/* Same through RECLAIM: the victim's last life ends in the reclaim, so the reclaim hands out
   another member (a new one is built: the retired one no longer counts against max). */
static void exhausted_generation_retires_the_slot_on_reclaim(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "retire", 32);
    d.max = 1;
    d.overflow = SP_OVERFLOW_RECLAIM;
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp__debug_set_life(p, a, SP__LIFE_MAX);
    sp_handle last = sp_handle_of(p, a);
    assert_true(LIFE_OF(last) == SP__LIFE_MAX);
    void *b = sp_acquire(p); /* saturated: reclaims a, whose counter is exhausted */
    assert_non_null(b);
    assert_ptr_not_equal(b, a);
    assert_null(sp_resolve(p, last));
    assert_false(sp_is_leased(p, a));
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.size, 1);
    assert_int_equal(s.leased, 1);
    assert_int_equal(s.reclaimed, 1);
    assert_int_equal(s.created, 2);
    assert_int_equal(s.disposed, 1);
    assert_int_equal(env.hooks.disposed, 1);
    /* b reclaims itself from now on; a never comes back. */
    for (int i = 0; i < 10; i++) assert_ptr_equal(sp_acquire(p), b);
    assert_true(sp__pool_check(p));
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

/* A pool takes its tag with its first handle: pools that never issue one take none and are
   limited by memory only. When every tag is taken by a live pool (131072 of them; this test
   lets the process use 64: sp__tags_limit), a pool's first handle is refused with a line and
   the pool works on without handles; a destroyed pool's tag serves again. (The retirement
   tests above used up their tags' lives: forget that, as a fresh process would.) */
static void pool_tags_run_out_when_every_one_is_taken(void **state) {
    (void)state;
    sp__tags_reset();
    enum { LIMIT = 64 };
    sp__tags_limit(LIMIT);
    static sp_pool *pools[LIMIT + 1];
    test_log tl = {0};
    sp_desc d = {.name = "many", .item_size = 8, .logger = test_log_make(&tl)};
    for (size_t i = 0; i <= LIMIT; i++) assert_non_null(pools[i] = sp_pool_create(&d)); /* no tags */
    sp_handle h;
    for (size_t i = 0; i < LIMIT; i++) assert_non_null(sp_acquire_handle(pools[i], NULL, &h));
    assert_int_equal(tl.errors, 0);
    assert_null(sp_acquire_handle(pools[LIMIT], NULL, &h)); /* refused before anything is leased */
    assert_true(sp_handle_is_null(h));
    assert_int_equal(tl.errors + tl.warnings, 1);
    assert_true(test_log_last_has(&tl, "no pool tag free"));
    void *m = sp_acquire(pools[LIMIT]); /* the pool itself works */
    assert_non_null(m);
    /* Asked again and again, the line comes at refusals 2, 4, 8, ..., 64 of 101. */
    for (int i = 0; i < 100; i++) assert_true(sp_handle_is_null(sp_handle_of(pools[LIMIT], m)));
    assert_int_equal(tl.errors + tl.warnings, 7);
    sp_pool_destroy(pools[100 % LIMIT]);
    pools[100 % LIMIT] = sp_pool_create(&d);
    assert_non_null(pools[100 % LIMIT]);
    void *a = sp_acquire(pools[LIMIT]);
    assert_ptr_equal(sp_resolve(pools[LIMIT], sp_handle_of(pools[LIMIT], a)), a); /* its tag now */
    for (size_t i = 0; i <= LIMIT; i++) sp_pool_destroy(pools[i]);
    sp__tags_limit(0);
}

/* White-box: push a slot's life counter to the end and check that the slot is retired instead
   of wrapping to a life that an old handle could match. */
static void exhausted_generation_retires_the_slot(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "retire", 32);
    sp_pool *p = sp_pool_create(&d);
    void *a = sp_acquire(p);
    sp__debug_set_life(p, a, SP__LIFE_MAX - 1);
    enum { CYCLES = 8 };
    sp_handle hs[CYCLES];
    void *ptrs[CYCLES];
    void *cur = a;
    for (int i = 0; i < CYCLES; i++) {
        assert_non_null(cur);
        hs[i] = sp_handle_of(p, cur);
        ptrs[i] = cur;
        assert_false(sp_handle_is_null(hs[i]));
        assert_true(LIFE_OF(hs[i]) != 0);
        assert_true(LIFE_OF(hs[i]) <= (uint64_t)SP__LIFE_MAX);
        assert_ptr_equal(sp_resolve(p, hs[i]), cur);
        assert_int_equal(sp_release(p, cur), SP_OK);
        cur = sp_acquire(p);
    }
    /* a serves at most the lives left before exhaustion, then never again. */
    int uses = 0;
    while (uses < CYCLES && ptrs[uses] == a) uses++;
    assert_true(uses >= 1 && uses <= 3);
    for (int i = uses; i < CYCLES; i++) assert_ptr_not_equal(ptrs[i], a);
    assert_ptr_not_equal(cur, a);
    assert_false(sp_is_leased(p, a));
    /* No handle of any ended life matches anything, and all differ. */
    for (int i = 0; i < CYCLES; i++) {
        assert_null(sp_resolve(p, hs[i]));
        for (int j = 0; j < i; j++) assert_false(sp_handle_eq(hs[i], hs[j]));
    }
    sp_handle now = sp_handle_of(p, cur);
    for (int i = 0; i < CYCLES; i++) assert_false(sp_handle_eq(now, hs[i]));
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.leased, 1);
    assert_int_equal(s.acquired, CYCLES + 1);
    assert_int_equal(s.released, CYCLES);
    assert_int_equal(s.leased + s.free, s.size);
    /* The retired slot is not handed out even when everything else is busy. */
    void *many[20];
    for (int i = 0; i < 20; i++) {
        many[i] = sp_acquire(p);
        assert_ptr_not_equal(many[i], a);
    }
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handle_resolves_while_the_life_lasts),
        cmocka_unit_test(every_life_gets_a_new_handle),
        cmocka_unit_test(acquire_handle_gives_the_handle_of_the_new_life_on_every_path),
        cmocka_unit_test(handle_of_anything_but_a_leased_member_is_null),
        cmocka_unit_test(null_and_forged_handles_resolve_to_null),
        cmocka_unit_test(handle_from_another_live_pool_never_resolves),
        cmocka_unit_test(another_tag_never_resolves_in_any_slot_state),
        cmocka_unit_test(another_tag_never_resolves_after_the_mark),
        cmocka_unit_test(marks_come_back_after_a_priority_callback),
        cmocka_unit_test(live_pools_have_distinct_tags),
        cmocka_unit_test(is_leased_is_true_only_for_leased_members),
        cmocka_unit_test(exhausted_generation_retires_the_slot),
        cmocka_unit_test(pool_tags_run_out_when_every_one_is_taken),
        cmocka_unit_test(exhausted_generation_retires_the_slot_on_reclaim),
        cmocka_unit_test(only_member_starts_are_recognised_at_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
