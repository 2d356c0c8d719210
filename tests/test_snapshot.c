/* SPDX-License-Identifier: Zlib */
/* Snapshot and restore (spawnpool.h, SNAPSHOT AND RESTORE). The central check is replay: a pool
   runs a random sequence, is saved midway and goes on; then it is destroyed, the snapshot
   restored, and the same sequence from the save on must give the same slots, handle ids,
   resolves, walks, member bytes and stats, for every order, policy and kind of memory. Then
   every refusal (one line, nothing allocated), allocator failure at every call, the io
   callbacks, hooks, and fixed buffers. White-box: slot indices come from pool_internal.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "pool_internal.h" /* index_of, item_at, span_of: slot indices of members */
#include "spawnpool_dense.h"

int sp__dense_check(const sp_dense *d);

#include <stdlib.h>
#include <string.h>

typedef struct member {
    uint32_t serial;
    uint32_t step;
    char text[16];
} member;

#define MAXL 256
#define MAXH 64
#define TRACE 200000

typedef struct run {
    uint32_t leased[MAXL]; /* slot indices of the members the test holds */
    size_t n;
    sp_handle handles[MAXH];
    size_t nh;
    uint32_t rng;
    uint32_t step;
} run;

typedef struct trace {
    uint64_t *v;
    size_t n;
} trace;

static void note(trace *t, uint64_t v) {
    assert_true(t->n < TRACE);
    t->v[t->n++] = v;
}

/* A handle as the trace keeps it: its id, with the life relative to the pool's first; when the
   saved pool had no tag yet, without the tag (a pool takes its tag with its first handle, and
   the restored pool's is another: see SNAPSHOT AND RESTORE). */
static bool untagged_save;
static uint64_t handle_note(const sp_pool *p, sp_handle h) {
    if (!h.id) return 0;
    uint64_t life = (h.id >> TEST_LIFE_SHIFT) - p->handles.life_base;
    uint64_t tag = untagged_save ? 0u : (h.id >> TEST_TAG_SHIFT) & TEST_TAG_MASK;
    return life << TEST_LIFE_SHIFT | tag << TEST_TAG_SHIFT | (h.id & TEST_SLOT_MASK);
}

static uint32_t slot_of(const sp_pool *p, const void *item) { return item ? index_of(p, item) : SP__NIL; }
static void *member_at(const sp_pool *p, uint32_t idx) { return item_at(p, idx); }

static bool held(const run *r, uint32_t idx) {
    for (size_t i = 0; i < r->n; i++)
        if (r->leased[i] == idx) return true;
    return false;
}

static void took(sp_pool *p, run *r, trace *t, void *item) {
    uint32_t idx = slot_of(p, item);
    note(t, idx);
    if (!item) return;
    member *m = (member *)item;
    m->step = r->step;
    if (!held(r, idx) && r->n < MAXL) r->leased[r->n++] = idx;
}

static void remember(run *r, sp_handle h) {
    if (!h.id) return;
    if (r->nh < MAXH)
        r->handles[r->nh++] = h;
    else
        r->handles[test_rand(&r->rng) % MAXH] = h;
}

/* One random operation, the same on any pool in the same state. */
static void step(sp_pool *p, run *r, trace *t) {
    r->step++;
    uint32_t op = test_rand(&r->rng) % 16u;
    switch (op) {
    case 0: case 1: case 2: case 3: case 4:
        if (r->n < MAXL) took(p, r, t, sp_acquire(p));
        break;
    case 5: {
        sp_handle h = {0};
        if (r->n < MAXL) took(p, r, t, sp_acquire_handle(p, NULL, &h));
        note(t, handle_note(p, h));
        remember(r, h);
        break;
    }
    case 6:
        if (r->n < MAXL) took(p, r, t, sp_acquire_force(p, NULL));
        break;
    case 7: case 8: case 9: case 10: {
        if (!r->n) break;
        size_t i = test_rand(&r->rng) % r->n;
        note(t, (uint64_t)sp_release(p, member_at(p, r->leased[i])));
        r->leased[i] = r->leased[--r->n];
        break;
    }
    case 11: {
        if (!r->n) break;
        sp_handle h = sp_handle_of(p, member_at(p, r->leased[test_rand(&r->rng) % r->n]));
        note(t, handle_note(p, h));
        remember(r, h);
        break;
    }
    case 12:
        for (size_t i = 0; i < r->nh; i++) note(t, slot_of(p, sp_resolve(p, r->handles[i])));
        break;
    case 13:
        if (test_rand(&r->rng) % 4u == 0)
            note(t, sp_trim(p, test_rand(&r->rng) % 4u));
        else
            note(t, sp_prewarm(p, test_rand(&r->rng) % 3u));
        break;
    case 14:
        if (test_rand(&r->rng) % 16u == 0) {
            note(t, sp_release_all(p));
            r->n = 0;
        }
        break;
    default: { /* the walk's order, and the bytes of what it visits */
        int k = 0;
        for (void *it = sp_first(p); it && k < 8; it = sp_next(p, it), k++) {
            note(t, slot_of(p, it));
            note(t, ((member *)it)->step);
        }
        sp_stats st;
        sp_stats_get(p, &st);
        note(t, st.size), note(t, st.leased), note(t, st.peak_leased), note(t, st.acquired);
        note(t, st.released), note(t, st.reclaimed), note(t, st.dropped), note(t, st.created);
        break;
    }
    }
}

/* The stats that describe the pool's life (not bytes: the new pool's memory is its own). */
static void stats_same(const sp_stats *want, const sp_pool *b) {
    sp_stats x = *want, y;
    sp_stats_get(b, &y);
    assert_int_equal(x.size, y.size);
    assert_int_equal(x.leased, y.leased);
    assert_int_equal(x.free, y.free);
    assert_int_equal(x.max, y.max);
    assert_int_equal(x.peak_leased, y.peak_leased);
    assert_int_equal(x.created, y.created);
    assert_int_equal(x.disposed, y.disposed);
    assert_int_equal(x.acquired, y.acquired);
    assert_int_equal(x.released, y.released);
    assert_int_equal(x.reclaimed, y.reclaimed);
    assert_int_equal(x.dropped, y.dropped);
    assert_int_equal(x.grown_past_max, y.grown_past_max);
}

typedef struct config {
    sp_order order;
    sp_overflow overflow;
    size_t max, chunk;
    bool counting_alloc; /* spans from alloc/free (the fallback's kind of memory) */
    bool hooks;
    bool fixed;
} config;

static sp_desc config_desc(const config *c, test_env *env, void *buffer, size_t buffer_size) {
    sp_desc d = test_env_desc(env, "replay", sizeof(member));
    if (!c->hooks) {
        d.create = NULL, d.on_acquire = NULL, d.on_release = NULL, d.dispose = NULL, d.user = NULL;
    }
    if (!c->counting_alloc || c->fixed) memset(&d.allocator, 0, sizeof d.allocator);
    d.order = c->order;
    d.overflow = c->overflow;
    d.max = c->max;
    d.chunk_items = c->chunk;
    d.buffer = buffer;
    d.buffer_size = buffer_size;
    return d;
}

/* Saves after `before` steps, goes on for `after`; the restored pool must do the same. */
static void replay(const config *c, uint32_t seed, int before, int after) {
    test_env ea, eb;
    size_t bsize = 0;
    void *ba = NULL, *bb = NULL;
    if (c->fixed) {
        sp_desc probe = config_desc(c, &ea, NULL, 0);
        bsize = sp_buffer_size(&probe, c->max);
        ba = aligned_alloc(64, (bsize + 63u) & ~(size_t)63u);
        bb = aligned_alloc(64, (bsize + 63u) & ~(size_t)63u);
    }
    sp_desc da = config_desc(c, &ea, ba, bsize);
    sp_pool *a = sp_pool_create(&da);
    assert_non_null(a);
    trace ta = {calloc(TRACE, sizeof(uint64_t)), 0}, tb = {calloc(TRACE, sizeof(uint64_t)), 0};
    run r = {.rng = seed};
    for (int i = 0; i < before; i++) step(a, &r, &ta);
    /* the save, and what the test holds then */
    size_t size = sp_snapshot_size(a, NULL);
    assert_true(size > 0);
    unsigned char *buf = malloc(size);
    assert_int_equal(sp_snapshot(a, buf, size, NULL), SP_OK);
    assert_true(sp__pool_check(a));
    run saved = r;
    untagged_save = !a->handles.tagged;
    sp_stats at_save;
    sp_stats_get(a, &at_save);
    uint32_t saved_bytes[MAXL];
    for (size_t i = 0; i < r.n; i++) saved_bytes[i] = ((member *)member_at(a, r.leased[i]))->step;
    ta.n = 0;
    for (int i = 0; i < after; i++) step(a, &r, &ta);
    sp_pool_destroy(a);
    /* the restore goes the same way */
    sp_desc db = config_desc(c, &eb, bb, bsize);
    sp_pool *b = sp_restore(&db, buf, size, NULL);
    if (!b) fail_msg("restore refused: %s", eb.log.last_message);
    assert_true(sp__pool_check(b));
    stats_same(&at_save, b);
    for (size_t i = 0; i < saved.n; i++) {
        assert_true(sp_is_leased(b, member_at(b, saved.leased[i])));
        assert_int_equal(((member *)member_at(b, saved.leased[i]))->step, saved_bytes[i]);
    }
    if (c->hooks) { /* no hook ran at restore */
        assert_int_equal(eb.hooks.created + eb.hooks.acquired + eb.hooks.released + eb.hooks.disposed, 0);
    }
    r = saved;
    for (int i = 0; i < after; i++) step(b, &r, &tb);
    assert_true(sp__pool_check(b));
    assert_int_equal(ta.n, tb.n);
    for (size_t i = 0; i < ta.n; i++)
        if (ta.v[i] != tb.v[i]) fail_msg("replay diverged at trace entry %zu: %llx vs %llx", i,
                                         (unsigned long long)ta.v[i], (unsigned long long)tb.v[i]);
    sp_pool_destroy(b);
    if (c->counting_alloc && !c->fixed) {
        EXPECT_NO_LEAK(&ea.alloc);
        EXPECT_NO_LEAK(&eb.alloc);
    }
    free(buf);
    free(ta.v);
    free(tb.v);
    free(ba);
    free(bb);
}

static const config configs[] = {
    {SP_ORDER_MEMORY, SP_OVERFLOW_DROP, 0, 0, false, false, false},
    {SP_ORDER_MEMORY, SP_OVERFLOW_DROP, 0, 4, true, false, false},
    {SP_ORDER_MEMORY, SP_OVERFLOW_RECLAIM, 60, 8, false, true, false},
    {SP_ORDER_MEMORY, SP_OVERFLOW_GROW, 40, 3, true, true, false},
    {SP_ORDER_ACQUISITION, SP_OVERFLOW_RECLAIM, 60, 0, false, false, false},
    {SP_ORDER_ACQUISITION, SP_OVERFLOW_RECLAIM, 60, 5, true, true, false},
    {SP_ORDER_ACQUISITION, SP_OVERFLOW_DROP, 0, 2, true, false, false},
    {SP_ORDER_ACQUISITION, SP_OVERFLOW_GROW, 30, 0, false, true, false},
    {SP_ORDER_MEMORY, SP_OVERFLOW_RECLAIM, 50, 0, false, false, true},
    {SP_ORDER_ACQUISITION, SP_OVERFLOW_DROP, 50, 0, false, true, true},
};

static void replay_is_exact_in_every_order_and_memory(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (uint32_t seed = 1; seed <= 3; seed++) replay(&configs[c], seed * 7919u + (uint32_t)c, 3000, 8000);
}

static void replay_from_an_empty_and_a_new_pool(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        replay(&configs[c], 11u + (uint32_t)c, 0, 500);
        replay(&configs[c], 13u + (uint32_t)c, 1, 500);
    }
}

/* ---- handles --------------------------------------------------------------------------- */

static void saved_handles_resolve_and_stale_ones_stay_stale(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "handles", sizeof(member));
    d.order = SP_ORDER_ACQUISITION;
    sp_pool *p = sp_pool_create(&d);
    sp_handle live[8], stale[8];
    uint32_t slots[8];
    for (int i = 0; i < 8; i++) {
        member *m = sp_acquire_handle(p, NULL, &stale[i]);
        sp_release(p, m);
        m = sp_acquire_handle(p, NULL, &live[i]);
        m->serial = 100u + (uint32_t)i;
        slots[i] = slot_of(p, m);
    }
    size_t size = sp_snapshot_size(p, NULL);
    void *buf = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, NULL), SP_OK);
    /* the saved tag is held: refused, one line, nothing made */
    int errors = env.log.errors;
    assert_null(sp_restore(&d, buf, size, NULL));
    assert_int_equal(env.log.errors, errors + 1);
    assert_true(test_log_last_has(&env.log, "tag"));
    sp_pool_destroy(p);
    test_env env2;
    sp_desc d2 = test_env_desc(&env2, "handles", sizeof(member));
    d2.order = SP_ORDER_ACQUISITION;
    sp_pool *q = sp_restore(&d2, buf, size, NULL);
    assert_non_null(q);
    for (int i = 0; i < 8; i++) {
        member *m = sp_resolve(q, live[i]);
        assert_non_null(m);
        assert_int_equal(m->serial, 100u + (uint32_t)i);
        assert_int_equal(slot_of(q, m), slots[i]);
        assert_null(sp_resolve(q, stale[i]));
    }
    assert_int_equal(env2.log.warnings, 0); /* stale: silent */
    /* a released member's handle goes stale in the restored pool too */
    sp_release(q, sp_resolve(q, live[3]));
    assert_null(sp_resolve(q, live[3]));
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
    EXPECT_NO_LEAK(&env2.alloc);
    free(buf);
}

static void a_pool_without_handles_takes_a_tag_later(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "untagged", sizeof(member));
    sp_pool *p = sp_pool_create(&d);
    void *m = sp_acquire(p);
    size_t size = sp_snapshot_size(p, NULL);
    void *buf = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, NULL), SP_OK);
    sp_pool *q = sp_restore(&d, buf, size, NULL); /* no tag: both may live */
    assert_non_null(q);
    sp_handle h = sp_handle_of(q, member_at(q, slot_of(p, m)));
    assert_true(h.id != 0);
    assert_ptr_equal(sp_resolve(q, h), member_at(q, slot_of(p, m)));
    sp_pool_destroy(p);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
    free(buf);
}

/* ---- io callbacks and hooks ------------------------------------------------------------- */

typedef struct owned {
    char *name; /* from the C library: create makes it, dispose frees it */
    int hp;
} owned;

static int owned_live;
static char *text_copy(const char *t) { /* strdup is POSIX, not C11 */
    size_t n = strlen(t) + 1u;
    char *c = malloc(n);
    memcpy(c, t, n);
    return c;
}
static void owned_create(void *item, void *user) {
    (void)user;
    ((owned *)item)->name = text_copy("fresh");
    owned_live++;
}
static void owned_dispose(void *item, void *user) {
    (void)user;
    free(((owned *)item)->name);
    owned_live--;
}
static void owned_save(const void *item, void *out, size_t bytes, void *user) {
    (void)user;
    const owned *o = (const owned *)item;
    memset(out, 0, bytes);
    memcpy(out, &o->hp, sizeof o->hp);
    strncpy((char *)out + sizeof o->hp, o->name, bytes - sizeof o->hp - 1u);
}
static int load_refuse_at; /* 0: load every member */
static int loads;
static bool owned_load(void *item, const void *in, size_t bytes, void *user) {
    (void)user, (void)bytes;
    if (++loads == load_refuse_at) return false;
    owned *o = (owned *)item;
    memcpy(&o->hp, in, sizeof o->hp);
    o->name = text_copy((const char *)in + sizeof o->hp);
    owned_live++;
    return true;
}

static void callbacks_save_and_load_members_with_resources(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "owned", sizeof(owned));
    d.create = owned_create, d.dispose = owned_dispose, d.on_acquire = NULL, d.on_release = NULL;
    sp_snapshot_io io = {32, owned_save, owned_load, NULL};
    owned_live = 0;
    sp_pool *p = sp_pool_create(&d);
    owned *m[6];
    for (int i = 0; i < 6; i++) {
        m[i] = sp_acquire(p);
        free(m[i]->name);
        m[i]->name = text_copy(i % 2 ? "orc" : "elf");
        m[i]->hp = 10 * i;
    }
    sp_release(p, m[1]); /* a free member keeps what it holds */
    size_t size = sp_snapshot_size(p, &io);
    void *buf = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, &io), SP_OK);
    /* raw io against a callback snapshot: refused */
    assert_null(sp_restore(&d, buf, size, NULL));
    assert_true(test_log_last_has(&env.log, "save/load"));
    /* load refusing the fourth member: dispose runs on the three loaded, nothing leaks */
    loads = 0, load_refuse_at = 4;
    int before = owned_live;
    assert_null(sp_restore(&d, buf, size, &io));
    assert_int_equal(owned_live, before);
    loads = 0, load_refuse_at = 0;
    sp_pool *q = sp_restore(&d, buf, size, &io);
    assert_non_null(q);
    assert_int_equal(owned_live, before + 6);
    assert_false(sp_is_leased(q, member_at(q, slot_of(p, m[1]))));
    assert_ptr_equal(sp_acquire(q), member_at(q, slot_of(p, m[1]))); /* the free one, as it was */
    for (int i = 0; i < 6; i++) {
        owned *o = member_at(q, slot_of(p, m[i]));
        assert_string_equal(o->name, i % 2 ? "orc" : "elf");
        assert_int_equal(o->hp, 10 * i);
    }
    sp_pool_destroy(p);
    sp_release_all(q);
    sp_pool_destroy(q);
    assert_int_equal(owned_live, 0);
    EXPECT_NO_LEAK(&env.alloc);
    free(buf);
}

static void hooks_run_after_restore_as_on_any_pool(void **state) {
    (void)state;
    test_env env, env2;
    sp_desc d = test_env_desc(&env, "hooks", sizeof(member));
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 5; i++) sp_acquire(p);
    size_t size = sp_snapshot_size(p, NULL);
    void *buf = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, NULL), SP_OK);
    sp_pool_destroy(p);
    sp_desc d2 = test_env_desc(&env2, "hooks", sizeof(member));
    sp_pool *q = sp_restore(&d2, buf, size, NULL);
    assert_non_null(q);
    assert_int_equal(env2.hooks.created + env2.hooks.acquired + env2.hooks.disposed, 0);
    EXPECT_STATS(q, .size = 5, .leased = 5, .peak_leased = 5, .created = 5, .acquired = 5);
    assert_int_equal(sp_release_all(q), 5);
    assert_int_equal(env2.hooks.released, 5);
    sp_acquire(q);
    assert_int_equal(env2.hooks.acquired, 1);
    sp_pool_destroy(q);
    assert_int_equal(env2.hooks.disposed, 5);
    EXPECT_NO_LEAK(&env2.alloc);
    free(buf);
}

/* ---- refusals ----------------------------------------------------------------------------- */

static void expect_refused(const sp_desc *d, test_env *env, const void *buf, size_t size, const char *needle) {
    int errors = env->log.errors;
    size_t live = env->alloc.live_bytes;
    assert_null(sp_restore(d, buf, size, NULL));
    assert_int_equal(env->log.errors, errors + 1);
    if (needle && !test_log_last_has(&env->log, needle)) fail_msg("'%s' not in '%s'", needle, env->log.last_message);
    assert_int_equal(env->alloc.live_bytes, live);
}

static void every_bad_buffer_and_descriptor_is_refused(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "refusals", sizeof(member));
    d.order = SP_ORDER_ACQUISITION;
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 20; i++) sp_acquire(p);
    size_t size = sp_snapshot_size(p, NULL);
    unsigned char *buf = malloc(size), *bad = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, NULL), SP_OK);
    /* snapshot refusals */
    int errors = env.log.errors;
    assert_int_equal(sp_snapshot(p, buf, size - 1u, NULL), SP_ERR_INVALID);
    assert_int_equal(sp_snapshot(p, NULL, size, NULL), SP_ERR_INVALID);
    sp_snapshot_io half = {0, NULL, owned_load, NULL};
    assert_int_equal(sp_snapshot(p, buf, size, &half), SP_ERR_INVALID);
    assert_int_equal(env.log.errors, errors + 3);
    assert_int_equal(sp_snapshot(NULL, buf, size, NULL), SP_ERR_INVALID);
    sp_pool_destroy(p);
    /* truncated at every length */
    for (size_t n = 0; n < size; n += (n < 200u ? 1u : 97u)) expect_refused(&d, &env, buf, n, NULL);
    /* corrupt: every byte flipped after the envelope fails the checksum */
    for (size_t i = 8; i < size; i += (i < 400u ? 1u : 61u)) {
        memcpy(bad, buf, size);
        bad[i] ^= 0x40u;
        expect_refused(&d, &env, bad, size, i >= 16u && i < 24u ? NULL : "checksum"); /* (the size field: its own line) */
    }
    memcpy(bad, buf, size);
    bad[0] ^= 1u;
    expect_refused(&d, &env, bad, size, "magic");
    memcpy(bad, buf, size);
    bad[4] = 2u;
    expect_refused(&d, &env, bad, size, "version");
    /* a descriptor of another kind */
    sp_desc other = d;
    other.item_size = sizeof(member) + 8u;
    expect_refused(&other, &env, buf, size, "item_size");
    other = d;
    other.order = SP_ORDER_MEMORY;
    expect_refused(&other, &env, buf, size, "order");
    other = d;
    other.chunk_items = 3;
    expect_refused(&other, &env, buf, size, "chunk_items");
    other = d;
    other.threads = SP_THREADS_SAFE;
    expect_refused(&other, &env, buf, size, "thread-safe");
    expect_refused(&d, &env, NULL, size, "buf is NULL");
    errors = env.log.errors;
    assert_null(sp_restore(NULL, buf, size, NULL));
    /* the good buffer still restores */
    sp_pool *q = sp_restore(&d, buf, size, NULL);
    assert_non_null(q);
    EXPECT_STATS(q, .size = 20, .leased = 20, .peak_leased = 20, .created = 20, .acquired = 20);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
    free(buf);
    free(bad);
}

static bool snapshot_from_hook_refused;
static void try_snapshot(void *item, void *user) {
    (void)item;
    sp_pool *p = *(sp_pool **)user;
    unsigned char buf[4096];
    snapshot_from_hook_refused = sp_snapshot(p, buf, sizeof buf, NULL) == SP_ERR_INVALID;
}

static void thread_safe_pools_and_hooks_are_refused(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "ts", sizeof(member));
    d.create = NULL, d.on_acquire = NULL, d.on_release = NULL, d.dispose = NULL, d.user = NULL;
    d.threads = SP_THREADS_SAFE;
    sp_pool *p = sp_pool_create(&d);
    if (p) {
        int errors = env.log.errors;
        assert_int_equal(sp_snapshot_size(p, NULL), 0);
        unsigned char buf[256];
        assert_int_equal(sp_snapshot(p, buf, sizeof buf, NULL), SP_ERR_INVALID);
        assert_int_equal(env.log.errors, errors + 2);
        sp_pool_destroy(p);
    }
    sp_pool *q = NULL;
    sp_desc h = test_env_desc(&env, "hook", sizeof(member));
    h.create = NULL, h.on_release = NULL, h.dispose = NULL;
    h.on_acquire = NULL;
    h.on_release = try_snapshot;
    h.user = &q;
    q = sp_pool_create(&h);
    void *m = sp_acquire(q);
    snapshot_from_hook_refused = false;
    sp_release(q, m);
    assert_true(snapshot_from_hook_refused);
    sp_pool_destroy(q);
    EXPECT_NO_LEAK(&env.alloc);
}

/* ---- allocator failure and fixed buffers ----------------------------------------------------- */

static void allocator_failure_at_every_call_leaves_nothing(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "faults", sizeof(member));
    d.order = SP_ORDER_ACQUISITION, d.chunk_items = 4;
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 40; i++) sp_acquire(p);
    for (int i = 0; i < 40; i += 3) sp_release(p, sp_first(p));
    size_t size = sp_snapshot_size(p, NULL);
    void *buf = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, NULL), SP_OK);
    sp_stats want;
    sp_stats_get(p, &want);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
    for (uint64_t n = 1;; n++) {
        env.alloc.allocs = 0;
        env.alloc.fail_at = n;
        sp_pool *q = sp_restore(&d, buf, size, NULL);
        env.alloc.fail_at = 0;
        if (!q) {
            EXPECT_NO_LEAK(&env.alloc);
            continue;
        }
        assert_true(n > 2); /* the pool record, at least, was asked for */
        sp_stats got;
        sp_stats_get(q, &got);
        assert_int_equal(got.leased, want.leased);
        assert_true(sp__pool_check(q));
        sp_pool_destroy(q);
        EXPECT_NO_LEAK(&env.alloc);
        break;
    }
    free(buf);
}

static void fixed_buffers_restore_into_a_buffer_that_holds_as_many(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "fixed", sizeof(member));
    memset(&d.allocator, 0, sizeof d.allocator);
    d.max = 32;
    size_t bytes = sp_buffer_size(&d, 32);
    void *a = aligned_alloc(64, (bytes + 63u) & ~(size_t)63u), *b = aligned_alloc(64, (bytes + 63u) & ~(size_t)63u);
    d.buffer = a, d.buffer_size = bytes;
    sp_pool *p = sp_pool_create(&d);
    for (int i = 0; i < 32; i++) ((member *)sp_acquire(p))->serial = (uint32_t)i;
    size_t size = sp_snapshot_size(p, NULL);
    void *buf = malloc(size);
    assert_int_equal(sp_snapshot(p, buf, size, NULL), SP_OK);
    sp_desc small = d;
    small.buffer = b, small.max = 0, small.buffer_size = sp_buffer_size(&d, 16);
    expect_refused(&small, &env, buf, size, "buffer");
    sp_desc heap = d;
    heap.buffer = NULL, heap.buffer_size = 0;
    expect_refused(&heap, &env, buf, size, "fixed");
    sp_desc same = d;
    same.buffer = b;
    sp_pool *q = sp_restore(&same, buf, size, NULL);
    assert_non_null(q);
    assert_null(sp_acquire(q)); /* full, as the saved one was */
    for (uint32_t i = 0; i < 32; i++) assert_int_equal(((member *)member_at(q, i))->serial, ((member *)member_at(p, i))->serial);
    sp_pool_destroy(p);
    sp_pool_destroy(q);
    free(a);
    free(b);
    free(buf);
}

/* ---- sp_dense ---------------------------------------------------------------------------- */

typedef struct dense_run {
    sp_handle handles[MAXH];
    size_t nh;
    uint32_t rng, step;
} dense_run;

static void dense_step(sp_dense *d, dense_run *r, trace *t) {
    r->step++;
    uint32_t op = test_rand(&r->rng) % 10u;
    member init = {r->step, r->step, "dense"};
    switch (op) {
    case 0: case 1: case 2: {
        void *m = sp_dense_add(d, &init);
        note(t, m ? sp_dense_index_of(d, m) : SIZE_MAX);
        break;
    }
    case 3: case 4: {
        sp_handle h = sp_dense_add_handle(d, &init);
        note(t, h.id);
        if (h.id) {
            if (r->nh < MAXH) r->handles[r->nh++] = h;
            else r->handles[test_rand(&r->rng) % MAXH] = h;
        }
        break;
    }
    case 5: case 6:
        if (sp_dense_count(d)) note(t, (uint64_t)sp_dense_remove_at(d, test_rand(&r->rng) % sp_dense_count(d)));
        break;
    case 7:
        if (r->nh) note(t, (uint64_t)sp_dense_remove_handle(d, r->handles[test_rand(&r->rng) % r->nh]));
        break;
    case 8:
        for (size_t i = 0; i < r->nh; i++) note(t, sp_dense_resolve_index(d, r->handles[i]));
        break;
    default: {
        for (size_t i = 0; i < sp_dense_count(d) && i < 8; i++) {
            note(t, ((member *)sp_dense_at(d, i))->serial);
            note(t, sp_dense_handle_at(d, i).id);
        }
        sp_stats st;
        sp_dense_stats_get(d, &st);
        note(t, st.size), note(t, st.leased), note(t, st.peak_leased), note(t, st.acquired);
        note(t, st.released), note(t, st.reclaimed), note(t, st.dropped), note(t, st.created);
        note(t, st.grown_past_max);
        break;
    }
    }
}

static void dense_replay(sp_overflow overflow, size_t max, size_t chunk, bool fixed, uint32_t seed, int before, int after) {
    test_env env;
    sp_desc pd = test_env_desc(&env, "dense", sizeof(member));
    sp_dense_desc dd = {.name = "dense", .item_size = sizeof(member), .max = max, .chunk_items = chunk,
                        .overflow = overflow, .allocator = pd.allocator, .logger = pd.logger};
    void *ba = NULL, *bb = NULL;
    if (fixed) {
        dd.allocator = (sp_allocator){0};
        dd.buffer_size = sp_dense_buffer_size(&dd, max);
        ba = malloc(dd.buffer_size), bb = malloc(dd.buffer_size);
        dd.buffer = ba;
    }
    sp_dense *a = sp_dense_create(&dd);
    assert_non_null(a);
    trace ta = {calloc(TRACE, sizeof(uint64_t)), 0}, tb = {calloc(TRACE, sizeof(uint64_t)), 0};
    dense_run r = {.rng = seed};
    for (int i = 0; i < before; i++) dense_step(a, &r, &ta);
    size_t size = sp_dense_snapshot_size(a, NULL);
    unsigned char *buf = malloc(size);
    assert_int_equal(sp_dense_snapshot(a, buf, size, NULL), SP_OK);
    dense_run saved = r;
    sp_stats at_save;
    sp_dense_stats_get(a, &at_save);
    /* the saved tag is held by a: refused */
    int errors = env.log.errors;
    sp_dense_desc db = dd;
    db.buffer = bb;
    assert_null(sp_dense_restore(&db, buf, size, NULL));
    assert_int_equal(env.log.errors, errors + 1);
    assert_true(test_log_last_has(&env.log, "tag"));
    ta.n = 0;
    for (int i = 0; i < after; i++) dense_step(a, &r, &ta);
    sp_dense_destroy(a);
    sp_dense *b = sp_dense_restore(&db, buf, size, NULL);
    if (!b) fail_msg("restore refused: %s", env.log.last_message);
    assert_int_equal(sp__dense_check(b), 0);
    sp_stats now;
    sp_dense_stats_get(b, &now);
    assert_int_equal(now.leased, at_save.leased);
    assert_int_equal(now.size, at_save.size);
    assert_int_equal(now.acquired, at_save.acquired);
    assert_int_equal(now.peak_leased, at_save.peak_leased);
    r = saved;
    for (int i = 0; i < after; i++) dense_step(b, &r, &tb);
    assert_int_equal(sp__dense_check(b), 0);
    assert_int_equal(ta.n, tb.n);
    for (size_t i = 0; i < ta.n; i++)
        if (ta.v[i] != tb.v[i]) fail_msg("dense replay diverged at trace entry %zu: %llx vs %llx", i,
                                         (unsigned long long)ta.v[i], (unsigned long long)tb.v[i]);
    /* refusals: corrupt, truncated, another desc, nothing allocated */
    size_t live = env.alloc.live_bytes;
    buf[size / 2] ^= 4u;
    assert_null(sp_dense_restore(&db, buf, size, NULL));
    assert_true(test_log_last_has(&env.log, "checksum"));
    buf[size / 2] ^= 4u;
    assert_null(sp_dense_restore(&db, buf, size - 1u, NULL));
    sp_dense_desc other = db;
    other.item_size += 4u;
    assert_null(sp_dense_restore(&other, buf, size, NULL));
    assert_int_equal(env.alloc.live_bytes, live);
    sp_dense_destroy(b);
    if (!fixed) EXPECT_NO_LEAK(&env.alloc);
    free(buf);
    free(ta.v);
    free(tb.v);
    free(ba);
    free(bb);
}

static void dense_replay_is_exact(void **state) {
    (void)state;
    for (uint32_t seed = 1; seed <= 3; seed++) {
        dense_replay(SP_OVERFLOW_DROP, 0, 0, false, seed, 2000, 6000);
        dense_replay(SP_OVERFLOW_DROP, 50, 7, false, seed + 10u, 2000, 6000);
        dense_replay(SP_OVERFLOW_RECLAIM, 40, 0, false, seed + 20u, 2000, 6000);
        dense_replay(SP_OVERFLOW_GROW, 20, 3, false, seed + 30u, 2000, 6000);
        dense_replay(SP_OVERFLOW_RECLAIM, 30, 0, true, seed + 40u, 2000, 6000);
        dense_replay(SP_OVERFLOW_DROP, 30, 0, true, seed + 50u, 1, 300);
    }
}

/* ---- the registry ---------------------------------------------------------------------------- */

typedef struct turret {
    sp_handle target; /* an orc, in the other pool */
    int ammo;
} turret;

static sp_desc scene_descs[2];
static const sp_desc *scene_desc_of(const char *name, void *user) {
    (void)user;
    return strcmp(name, "orcs") == 0 ? &scene_descs[0] : strcmp(name, "turrets") == 0 ? &scene_descs[1] : NULL;
}

static void registry_saves_every_pool_and_cross_pool_handles(void **state) {
    (void)state;
    test_scene sc;
    test_scene_open(&sc);
    scene_descs[0] = (sp_desc){.item_size = sizeof(member), .order = SP_ORDER_ACQUISITION};
    scene_descs[1] = (sp_desc){.item_size = sizeof(turret)};
    sp_pool *orcs = sp_registry_add(sc.reg, "orcs", &scene_descs[0]);
    sp_pool *turrets = sp_registry_add(sc.reg, "turrets", &scene_descs[1]);
    sp_handle orc_h[5], turret_h[3];
    for (int i = 0; i < 5; i++) ((member *)sp_acquire_handle(orcs, NULL, &orc_h[i]))->serial = 40u + (uint32_t)i;
    sp_release(orcs, sp_resolve(orcs, orc_h[1]));
    for (int i = 0; i < 3; i++) {
        turret *t = sp_acquire_handle(turrets, NULL, &turret_h[i]);
        t->target = orc_h[i];
        t->ammo = 10 * i;
    }
    sp_registry_snapshot_io io = {NULL, scene_desc_of, NULL};
    size_t size = sp_registry_snapshot_size(sc.reg, &io);
    unsigned char *buf = malloc(size);
    assert_int_equal(sp_registry_snapshot(sc.reg, buf, size, &io), SP_OK);
    /* what the saved registry does next */
    sp_handle next_orc, next_turret;
    sp_acquire_handle(orcs, NULL, &next_orc);
    sp_acquire_handle(turrets, NULL, &next_turret);
    /* into a non-empty registry, or without descriptors: refused, the pools untouched */
    int lines = test_scene_lines(&sc);
    assert_int_equal(sp_registry_restore(sc.reg, buf, size, &io), SP_ERR_INVALID);
    sp_registry_snapshot_io no_descs = {NULL, NULL, NULL};
    assert_int_equal(sp_registry_restore(sc.reg, buf, size, &no_descs), SP_ERR_INVALID);
    assert_int_equal(test_scene_lines(&sc), lines + 2);
    assert_int_equal(sp_registry_count(sc.reg), 2);
    assert_int_equal(sp_registry_release_all(sc.reg), 9);
    sp_registry_destroy(sc.reg);
    EXPECT_NO_LEAK(&sc.alloc);

    test_scene back;
    test_scene_open(&back);
    /* a corrupt snapshot, and one whose second pool's desc differs: refused, the registry empty */
    buf[size - 3u] ^= 1u;
    assert_int_equal(sp_registry_restore(back.reg, buf, size, &io), SP_ERR_INVALID);
    buf[size - 3u] ^= 1u;
    scene_descs[1].item_size = sizeof(turret) + 8u;
    assert_int_equal(sp_registry_restore(back.reg, buf, size, &io), SP_ERR_INVALID);
    scene_descs[1].item_size = sizeof(turret);
    assert_int_equal(sp_registry_count(back.reg), 0);
    size_t live = back.alloc.live_bytes;
    assert_int_equal(sp_registry_restore(back.reg, buf, size, &io), SP_OK);
    assert_true(back.alloc.live_bytes > live);
    assert_int_equal(sp_registry_count(back.reg), 2);
    assert_string_equal(sp_pool_name(sp_registry_pool_at(back.reg, 0)), "orcs");
    sp_pool *orcs2 = sp_registry_get(back.reg, "orcs"), *turrets2 = sp_registry_get(back.reg, "turrets");
    assert_non_null(orcs2);
    assert_non_null(turrets2);
    for (int i = 0; i < 3; i++) { /* cross-pool handles, through the registry */
        turret *t = sp_registry_resolve(back.reg, turret_h[i]);
        assert_non_null(t);
        assert_int_equal(t->ammo, 10 * i);
        member *target = sp_registry_resolve(back.reg, t->target);
        if (i == 1) {
            assert_null(target); /* released before the save: stale */
        } else {
            assert_non_null(target);
            assert_int_equal(target->serial, 40u + (uint32_t)i);
            assert_ptr_equal(sp_registry_owner(back.reg, target), orcs2);
        }
    }
    sp_handle h;
    sp_acquire_handle(orcs2, NULL, &h);
    assert_true(h.id == next_orc.id);
    sp_acquire_handle(turrets2, NULL, &h);
    assert_true(h.id == next_turret.id);
    assert_int_equal(sp_registry_release_all(back.reg), 9);
    sp_registry_destroy(back.reg);
    EXPECT_NO_LEAK(&back.alloc);
    free(buf);
}

/* ---- callbacks that try to change the pool while it is saved ------------------------------- */

/* A save that tries everything that would change its pool: each attempt must be refused with a
   line, so that the snapshot still describes the pool its header was written from. */
typedef struct meddler {
    sp_pool *pool;
    sp_dense *dense;
    test_log *log;
    int calls, all_refused;
} meddler;

static void meddling_save(const void *item, void *out, size_t bytes, void *user) {
    meddler *m = (meddler *)user;
    memcpy(out, item, bytes);
    int before = m->log->warnings + m->log->errors;
    void *mine = (void *)(uintptr_t)item;
    if (m->pool) {
        assert_null(sp_acquire(m->pool));
        assert_true(test_log_last_has(m->log, "called from this pool's snapshot save callback"));
        assert_int_equal(sp_release(m->pool, mine), SP_ERR_INVALID);
        assert_int_equal(sp_release_all(m->pool), 0);
        assert_int_equal(sp_prewarm(m->pool, 8), 0);
        assert_int_equal(sp_trim(m->pool, 0), 0);
        assert_int_equal(sp_clear(m->pool), 0);
        sp_pool_destroy(m->pool);
        m->all_refused += m->log->warnings + m->log->errors - before == 7;
    } else {
        assert_null(sp_dense_add(m->dense, NULL));
        assert_true(test_log_last_has(m->log, "called from this pool's snapshot save callback"));
        assert_int_equal(sp_dense_remove(m->dense, mine), SP_ERR_INVALID);
        assert_int_equal(sp_dense_remove_at(m->dense, 0), SP_ERR_INVALID);
        assert_int_equal(sp_dense_reserve(m->dense, 1000), 0);
        assert_int_equal(sp_dense_clear(m->dense), 0);
        sp_dense_destroy(m->dense);
        m->all_refused += m->log->warnings + m->log->errors - before == 6;
    }
    m->calls++;
}

static bool plain_load(void *item, const void *in, size_t bytes, void *user) {
    (void)user;
    memcpy(item, in, bytes);
    return true;
}

static void a_save_callback_cannot_change_its_pool(void **state) {
    (void)state;
    test_log log;
    memset(&log, 0, sizeof log);
    sp_desc d = {.name = "meddled", .item_size = sizeof(member), .initial = 4, .logger = test_log_make(&log)};
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    member *a = (member *)sp_acquire(p), *b = (member *)sp_acquire(p);
    assert_non_null(a);
    assert_non_null(b);
    a->serial = 1, b->serial = 2;
    assert_int_equal(sp_release(p, a), SP_OK);
    meddler m = {p, NULL, &log, 0, 0};
    sp_snapshot_io io = {.save = meddling_save, .load = plain_load, .user = &m};
    size_t size = sp_snapshot_size(p, &io);
    void *buf = malloc(size);
    assert_non_null(buf);
    assert_int_equal(sp_snapshot(p, buf, size, &io), SP_OK);
    assert_int_equal(m.calls, 4); /* every built member */
    assert_int_equal(m.all_refused, m.calls);
    /* The pool is as it was, and so is what the snapshot says of it. */
    sp_stats was;
    sp_stats_get(p, &was);
    assert_int_equal(was.leased, 1);
    assert_int_equal(was.size, 4);
    assert_true(sp_is_leased(p, b));
    sp_acquire(p); /* and it works again once the save is done */
    sp_pool_destroy(p);
    sp_pool *q = sp_restore(&d, buf, size, &io);
    assert_non_null(q);
    sp_stats now;
    sp_stats_get(q, &now);
    assert_int_equal(now.leased, 1);
    assert_int_equal(now.size, 4);
    assert_int_equal(((member *)sp_first(q))->serial, 2);
    sp_pool_destroy(q);

    log.warnings = log.errors = 0;
    sp_dense *dn = sp_dense_create(&(sp_dense_desc){.name = "meddled", .item_size = sizeof(member),
                                                    .logger = test_log_make(&log)});
    assert_non_null(dn);
    for (int i = 0; i < 3; i++) assert_non_null(sp_dense_add(dn, NULL));
    meddler md = {NULL, dn, &log, 0, 0};
    io.user = &md;
    size = sp_dense_snapshot_size(dn, &io);
    void *dbuf = malloc(size);
    assert_non_null(dbuf);
    assert_int_equal(sp_dense_snapshot(dn, dbuf, size, &io), SP_OK);
    assert_int_equal(md.calls, 3);
    assert_int_equal(md.all_refused, 3);
    assert_int_equal(sp_dense_count(dn), 3);
    assert_non_null(sp_dense_add(dn, NULL)); /* and it works again */
    sp_dense_destroy(dn);
    free(dbuf);
    free(buf);
}

/* desc_of (like io_of and load) runs while the restore adds the registry's pools: calls that
   would change them are refused, each with a line, and the restore goes on. */
typedef struct restore_meddler {
    sp_registry *reg;
    sp_desc desc;
    int calls;
} restore_meddler;

static const sp_desc *meddling_desc_of(const char *name, void *user) {
    restore_meddler *m = (restore_meddler *)user;
    (void)name;
    m->calls++;
    sp_registry_destroy(m->reg);
    assert_null(sp_registry_add(m->reg, "intruder", &m->desc));
    assert_int_equal(sp_registry_remove(m->reg, "a"), SP_ERR_INVALID);
    assert_int_equal(sp_registry_release_all(m->reg), 0);
    unsigned char scratch[64];
    assert_int_equal(sp_registry_snapshot(m->reg, scratch, sizeof scratch, NULL), SP_ERR_INVALID);
    assert_int_equal(sp_registry_restore(m->reg, scratch, sizeof scratch, NULL), SP_ERR_INVALID);
    return &m->desc;
}

/* io_of and the members' load run inside the restore too: a load that finds a pool restored
   already (by name) uses it as any pool and destroys it, which works as anywhere (the registry
   forgets it, the restore goes on with the others); the pool being restored is not handed out
   yet. */
static sp_snapshot_io meddling_io;
static int meddling_loads;
static bool meddling_load(void *item, const void *in, size_t bytes, void *user) {
    restore_meddler *m = (restore_meddler *)user;
    memcpy(item, in, bytes);
    meddling_loads++;
    sp_registry_destroy(m->reg);
    assert_int_equal(sp_registry_release_all(m->reg), 0);
    assert_null(sp_registry_get(m->reg, "b")); /* the pool being restored */
    sp_pool *a = sp_registry_get(m->reg, "a"); /* restored before "b"'s members load */
    assert_non_null(a);
    void *x = sp_acquire(a); /* "a" is whole: a plain pool again */
    assert_non_null(x);
    assert_int_equal(sp_release(a, x), SP_OK);
    sp_pool_destroy(a);
    assert_null(sp_registry_get(m->reg, "a"));
    return true;
}
static void copying_save(const void *item, void *out, size_t bytes, void *user) {
    (void)user;
    memcpy(out, item, bytes);
}
static const sp_snapshot_io *meddling_io_of(const char *name, void *user) {
    restore_meddler *m = (restore_meddler *)user;
    (void)name;
    if (m->reg) sp_registry_destroy(m->reg); /* (NULL while the snapshot is taken) */
    meddling_io = (sp_snapshot_io){.save = copying_save, .load = meddling_load, .user = m};
    return &meddling_io;
}

static void registry_restore_callbacks_cannot_change_the_registry(void **state) {
    (void)state;
    test_log log;
    memset(&log, 0, sizeof log);
    sp_registry *from = sp_registry_create_with(&(sp_registry_desc){.logger = test_log_make(&log)});
    assert_non_null(from);
    sp_desc d = {.item_size = sizeof(member), .logger = test_log_make(&log)};
    assert_non_null(sp_registry_add(from, "a", &d));
    assert_non_null(sp_registry_add(from, "b", &d));
    assert_non_null(sp_spawn(from, "b", NULL));
    restore_meddler m = {NULL, d, 0};
    sp_registry_snapshot_io io = {NULL, meddling_desc_of, &m};
    size_t size = sp_registry_snapshot_size(from, &io);
    void *buf = malloc(size);
    assert_non_null(buf);
    assert_int_equal(sp_registry_snapshot(from, buf, size, &io), SP_OK);
    sp_registry_snapshot_io with_load = {meddling_io_of, meddling_desc_of, &m};
    size_t size2 = sp_registry_snapshot_size(from, &with_load);
    void *buf2 = malloc(size2);
    assert_non_null(buf2);
    assert_int_equal(sp_registry_snapshot(from, buf2, size2, &with_load), SP_OK);
    sp_registry_release_all(from);
    sp_registry_destroy(from);
    sp_registry *to = sp_registry_create_with(&(sp_registry_desc){.logger = test_log_make(&log)});
    assert_non_null(to);
    m.reg = to;
    log.warnings = log.errors = 0;
    assert_int_equal(sp_registry_restore(to, buf, size, &io), SP_OK);
    assert_int_equal(m.calls, 2);
    assert_int_equal(log.warnings + log.errors, 2 * 6); /* six refusals a call */
    assert_true(test_log_last_has(&log, "during sp_registry_restore"));
    assert_int_equal(sp_registry_count(to), 2);
    assert_null(sp_registry_get(to, "intruder"));
    assert_int_equal(sp_registry_release_all(to), 1);
    sp_registry_destroy(to);

    /* The same snapshot again, through io_of and a load that meddles. */
    sp_registry *again = sp_registry_create_with(&(sp_registry_desc){.logger = test_log_make(&log)});
    assert_non_null(again);
    m.reg = again;
    meddling_loads = 0;
    log.warnings = log.errors = 0;
    assert_int_equal(sp_registry_restore(again, buf2, size2, &with_load), SP_OK);
    assert_int_equal(meddling_loads, 1); /* "b"'s one member */
    assert_true(log.warnings + log.errors >= 2 * 6 + 2 + 2);
    assert_int_equal(sp_registry_count(again), 1); /* "a" went in b's load */
    assert_null(sp_registry_get(again, "a"));
    assert_int_equal(sp_registry_release_all(again), 1);
    sp_registry_destroy(again);
    free(buf2);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_is_exact_in_every_order_and_memory),
        cmocka_unit_test(replay_from_an_empty_and_a_new_pool),
        cmocka_unit_test(saved_handles_resolve_and_stale_ones_stay_stale),
        cmocka_unit_test(a_pool_without_handles_takes_a_tag_later),
        cmocka_unit_test(callbacks_save_and_load_members_with_resources),
        cmocka_unit_test(hooks_run_after_restore_as_on_any_pool),
        cmocka_unit_test(every_bad_buffer_and_descriptor_is_refused),
        cmocka_unit_test(thread_safe_pools_and_hooks_are_refused),
        cmocka_unit_test(allocator_failure_at_every_call_leaves_nothing),
        cmocka_unit_test(fixed_buffers_restore_into_a_buffer_that_holds_as_many),
        cmocka_unit_test(dense_replay_is_exact),
        cmocka_unit_test(registry_saves_every_pool_and_cross_pool_handles),
        cmocka_unit_test(a_save_callback_cannot_change_its_pool),
        cmocka_unit_test(registry_restore_callbacks_cannot_change_the_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
