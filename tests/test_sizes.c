/* SPDX-License-Identifier: Zlib */
/* Size classes (include/spawnpool_sizes.h) and zeroed acquisition (sp_acquire_zeroed): the
   class a size gets, release by pointer alone through the shared source's map and through the
   ranges of spans from an allocator, resize's copy and failure rules, handles, stats, every
   refusal with its one line, allocator failure at every allocation, and a thread-safe set under
   two threads (also run under ThreadSanitizer in make test). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign (threads_util.h) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <spawnpool_sizes.h>

#include "testutil.h"
#include "threads_util.h"

static const size_t defaults[] = {16,  32,  48,   64,   96,   128,  192,  256,  384,
                                  512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
#define DEFAULTS (sizeof defaults / sizeof *defaults)

static int all_bytes(const void *p, unsigned char v, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != v) return 0;
    return 1;
}

static int lines(const test_log *l) { return l->errors + l->warnings; }

/* Marks a buffer's first and last bytes (up to 32 each: enough to catch two owners or a short
   class, and cheap under valgrind); ends_are checks them. */
static void ends_mark(void *p, size_t n, unsigned char v) {
    size_t k = n < 32 ? n : 32;
    memset(p, v, k);
    memset((unsigned char *)p + n - k, v, k);
}
static int ends_are(const void *p, size_t n, unsigned char v) {
    size_t k = n < 32 ? n : 32;
    return all_bytes(p, v, k) && all_bytes((const unsigned char *)p + n - k, v, k);
}

/* A set whose lines go to env's logger; tables and pools from env's counting allocator when
   counted (spans from the allocator: the ranges path), else the defaults (the shared source). */
static sp_sizes *make_set(test_env *env, const size_t *classes, size_t count, bool counted) {
    memset(env, 0, sizeof *env);
    sp_sizes_desc d = {.name = "bodies", .classes = classes, .class_count = count, .logger = test_log_make(&env->log)};
    if (counted) d.allocator = test_alloc_make(&env->alloc);
    return sp_sizes_create(&d);
}

/* ---- classes ----------------------------------------------------------------------------- */

static void default_table_is_two_classes_a_doubling(void **state) {
    (void)state;
    test_env env;
    sp_sizes *s = make_set(&env, NULL, 0, false);
    assert_non_null(s);
    assert_int_equal(sp_sizes_class_count(s), DEFAULTS);
    for (size_t i = 0; i < DEFAULTS; i++) assert_int_equal(sp_sizes_class_size(s, i), defaults[i]);
    assert_int_equal(sp_sizes_class_size(s, DEFAULTS), 0);
    assert_null(sp_sizes_pool(s, DEFAULTS));
    assert_string_equal(sp_pool_name(sp_sizes_pool(s, 3)), "bodies:64");
    sp_sizes_destroy(s);
    assert_int_equal(lines(&env.log), 0);
}

/* Every size gets the smallest class that holds it, for a table of odd sizes where one step of
   the size table holds several classes. */
static void every_size_gets_the_smallest_class_that_fits(void **state) {
    (void)state;
    static const size_t odd[] = {1, 2, 3, 5, 8, 12, 13, 100, 1000, 4097, 70000, 1 << 20};
    const size_t *tables[] = {NULL, odd};
    size_t counts[] = {0, sizeof odd / sizeof *odd};
    for (int t = 0; t < 2; t++) {
        test_env env;
        sp_sizes *s = make_set(&env, tables[t], counts[t], false);
        assert_non_null(s);
        size_t n = sp_sizes_class_count(s), largest = sp_sizes_class_size(s, n - 1u);
        for (size_t size = 1; size <= largest; size += size < 9000 ? 1u : 97u) {
            size_t want = 0;
            for (size_t i = 0; i < n && !want; i++)
                if (sp_sizes_class_size(s, i) >= size) want = sp_sizes_class_size(s, i);
            void *m = sp_sizes_acquire(s, size);
            assert_non_null(m);
            assert_int_equal(sp_sizes_usable_size(s, m), want);
            ends_mark(m, size, 0x5A); /* the whole size is the member's: its last byte too */
            assert_int_equal(sp_sizes_release(s, m), SP_OK);
        }
        void *m = sp_sizes_acquire(s, largest);
        assert_int_equal(sp_sizes_usable_size(s, m), largest);
        sp_sizes_release(s, m);
        sp_stats total;
        sp_sizes_stats_total(s, &total);
        assert_int_equal(total.leased, 0);
        assert_int_equal(total.acquired, total.released);
        sp_sizes_destroy(s);
        assert_int_equal(lines(&env.log), 0);
    }
}

/* ---- release by pointer, stats ----------------------------------------------------------- */

/* Many members of every class at once (several spans a class), released in a scrambled order
   by pointer alone; each class's stats and the totals agree. Both lookups: the shared source's
   map, and the ranges of spans from an allocator. */
static void release_finds_the_class_from_the_pointer_alone(void **state) {
    (void)state;
    for (int counted = 0; counted < 2; counted++) {
        test_env env;
        sp_sizes *s = make_set(&env, NULL, 0, counted);
        assert_non_null(s);
        enum { N = 3000 };
        void **held = (void **)calloc(N, sizeof *held);
        size_t *sizes = (size_t *)calloc(N, sizeof *sizes);
        uint32_t seed = 7;
        size_t per_class[DEFAULTS] = {0};
        for (int i = 0; i < N; i++) {
            sizes[i] = 1u + test_rand(&seed) % 8192u;
            held[i] = sp_sizes_acquire(s, sizes[i]);
            assert_non_null(held[i]);
            memset(held[i], i & 0xFF, sizes[i]);
            for (size_t k = 0; k < DEFAULTS; k++)
                if (defaults[k] >= sizes[i]) {
                    per_class[k]++;
                    break;
                }
        }
        for (size_t k = 0; k < DEFAULTS; k++) {
            sp_stats st;
            sp_sizes_stats_get(s, k, &st);
            assert_int_equal(st.leased, per_class[k]);
            assert_int_equal(st.acquired, per_class[k]);
        }
        for (int i = 0; i < N; i++) { /* a stride coprime with N scrambles the order */
            int j = (int)(((long)i * 1237) % N);
            assert_true(all_bytes(held[j], (unsigned char)(j & 0xFF), sizes[j]));
            assert_int_equal(sp_sizes_release(s, held[j]), SP_OK);
        }
        sp_stats total;
        sp_sizes_stats_total(s, &total);
        assert_int_equal(total.leased, 0);
        assert_int_equal(total.acquired, N);
        assert_int_equal(total.released, N);
        assert_true(total.bytes > 0);
        sp_stats sum = {0};
        for (size_t k = 0; k < DEFAULTS; k++) {
            sp_stats st;
            sp_stats_get(sp_sizes_pool(s, k), &st);
            sum.bytes += st.bytes;
            sum.size += st.size;
        }
        assert_int_equal(total.size, sum.size);
        assert_true(total.bytes > sum.bytes); /* the set's own tables on top */
        free(held);
        free(sizes);
        sp_sizes_destroy(s);
        assert_int_equal(lines(&env.log), 0);
        if (counted) EXPECT_NO_LEAK(&env.alloc);
    }
}

/* ---- refusals ------------------------------------------------------------------------------ */

static void bad_input_is_refused_with_one_line_and_changes_nothing(void **state) {
    (void)state;
    for (int counted = 0; counted < 2; counted++) {
        test_env env;
        sp_sizes *s = make_set(&env, NULL, 0, counted);
        void *m = sp_sizes_acquire(s, 40);
        sp_stats before, after;
        sp_sizes_stats_total(s, &before);
        int n = lines(&env.log);

        assert_null(sp_sizes_acquire(s, 0));
        assert_int_equal(lines(&env.log), ++n);
        assert_true(test_log_last_has(&env.log, "size 0"));
        assert_null(sp_sizes_acquire(s, 8193));
        assert_int_equal(lines(&env.log), ++n);
        assert_true(test_log_last_has(&env.log, "above the largest class (8192)"));
        assert_null(sp_sizes_acquire_zeroed(s, 0));
        assert_int_equal(lines(&env.log), ++n);
        assert_null(sp_sizes_acquire(s, SIZE_MAX));
        assert_int_equal(lines(&env.log), ++n);

        /* foreign pointers: the heap, a plain pool's member, a pointer inside a member */
        char *heap = (char *)malloc(64);
        assert_int_equal(sp_sizes_release(s, heap), SP_ERR_FOREIGN);
        assert_int_equal(lines(&env.log), ++n);
        assert_true(test_log_last_has(&env.log, "not the start of a member of this size-class set"));
        sp_pool *plain = sp_pool_create(&(sp_desc){.item_size = 48, .logger = test_log_make(&env.log)});
        void *other = sp_acquire(plain);
        assert_int_equal(sp_sizes_release(s, other), SP_ERR_FOREIGN);
        assert_int_equal(lines(&env.log), ++n);
        assert_int_equal(sp_sizes_usable_size(s, other), 0);
        assert_int_equal(lines(&env.log), ++n);
        assert_true(sp_handle_is_null(sp_sizes_handle_of(s, other)));
        assert_int_equal(lines(&env.log), ++n);
        assert_null(sp_sizes_resize(s, other, 100));
        assert_int_equal(lines(&env.log), ++n);
        assert_int_equal(sp_sizes_release(s, (char *)m + 8), SP_ERR_FOREIGN);
        assert_int_equal(lines(&env.log), ++n);
        sp_release(plain, other);
        sp_pool_destroy(plain);
        free(heap);

        assert_int_equal(sp_sizes_release(s, NULL), SP_OK); /* free(NULL) */
        assert_int_equal(lines(&env.log), n);
        assert_int_equal(sp_sizes_usable_size(s, NULL), 0);
        assert_int_equal(lines(&env.log), n);

        sp_sizes_stats_total(s, &after);
        assert_int_equal(after.leased, before.leased);
        assert_int_equal(after.acquired, before.acquired);
        assert_int_equal(after.released, before.released);

        /* double release: the class pool's refusal and line */
        assert_int_equal(sp_sizes_release(s, m), SP_OK);
        assert_int_equal(sp_sizes_release(s, m), SP_ERR_NOT_LEASED);
        assert_int_equal(lines(&env.log), ++n);
        assert_true(test_log_last_has(&env.log, "double release"));
        assert_string_equal(env.log.last_pool, "bodies:48");
        assert_null(sp_sizes_resize(s, m, 100)); /* released: nothing moves */
        assert_int_equal(lines(&env.log), ++n);
        assert_true(test_log_last_has(&env.log, "not leased"));
        sp_sizes_stats_total(s, &after);
        assert_int_equal(after.leased, 0);
        assert_int_equal(after.released, 1);
        sp_sizes_destroy(s);
        if (counted) EXPECT_NO_LEAK(&env.alloc);
    }
}

static void a_null_set_is_refused_with_one_line(void **state) {
    (void)state;
    /* (through the default logger, to stderr: the calls must not crash and return their
       documented values) */
    assert_null(sp_sizes_acquire(NULL, 10));
    assert_null(sp_sizes_acquire_zeroed(NULL, 10));
    assert_int_equal(sp_sizes_release(NULL, (void *)defaults), SP_ERR_INVALID);
    assert_null(sp_sizes_resize(NULL, NULL, 10));
    assert_int_equal(sp_sizes_usable_size(NULL, defaults), 0);
    assert_null(sp_sizes_resolve(NULL, (sp_handle){1}));
    assert_int_equal(sp_sizes_class_count(NULL), 0);
    sp_stats st;
    memset(&st, 0xFF, sizeof st);
    sp_sizes_stats_total(NULL, &st);
    assert_int_equal(st.bytes, 0);
    sp_sizes_destroy(NULL);
    assert_null(sp_sizes_create(NULL));
}

static void invalid_descriptors_are_refused_with_one_line(void **state) {
    (void)state;
    static const size_t unsorted[] = {32, 16}, duplicate[] = {16, 16}, zero[] = {0, 16};
    static const size_t huge[] = {16, ((size_t)1 << 30) + 1u};
    size_t many[SP_SIZES_MAX_CLASSES + 1];
    for (size_t i = 0; i < SP_SIZES_MAX_CLASSES + 1; i++) many[i] = 16u * (i + 1u);
    struct {
        sp_sizes_desc d;
        const char *why;
    } cases[] = {
        {{.classes = unsorted, .class_count = 2}, "strictly ascending"},
        {{.classes = duplicate, .class_count = 2}, "strictly ascending"},
        {{.classes = zero, .class_count = 2}, "0 bytes"},
        {{.classes = huge, .class_count = 2}, "SP_SIZES_CLASS_LIMIT"},
        {{.classes = many, .class_count = SP_SIZES_MAX_CLASSES + 1}, "SP_SIZES_MAX_CLASSES"},
        {{.classes = NULL, .class_count = 3}, "class_count without classes"},
        {{.classes = many, .class_count = 0}, "classes without class_count"},
        {{.overflow = SP_OVERFLOW_RECLAIM}, "RECLAIM"},
        {{.item_align = 3}, "align"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_env env;
        memset(&env, 0, sizeof env);
        cases[i].d.logger = test_log_make(&env.log);
        cases[i].d.allocator = test_alloc_make(&env.alloc);
        assert_null(sp_sizes_create(&cases[i].d));
        assert_int_equal(lines(&env.log), 1);
        if (!test_log_last_has(&env.log, cases[i].why)) fail_msg("case %zu: %s", i, env.log.last_message);
        EXPECT_NO_LEAK(&env.alloc);
    }
    /* the most classes a table may have is fine */
    test_env env;
    sp_sizes *s = make_set(&env, many, SP_SIZES_MAX_CLASSES, true);
    assert_non_null(s);
    void *m = sp_sizes_acquire(s, 16u * SP_SIZES_MAX_CLASSES);
    assert_int_equal(sp_sizes_usable_size(s, m), 16u * SP_SIZES_MAX_CLASSES);
    sp_sizes_release(s, m);
    sp_sizes_destroy(s);
    EXPECT_NO_LEAK(&env.alloc);
}

/* ---- zeroed acquisition -------------------------------------------------------------------- */

static void zeroed_acquisition_is_zero_after_any_history(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "zeroed", 100);
    d.create = NULL, d.on_acquire = NULL, d.on_release = NULL, d.dispose = NULL;
    d.initial = 2; /* prewarmed members */
    sp_pool *p = sp_pool_create(&d);
    unsigned char *a = (unsigned char *)sp_acquire_zeroed(p), *b = (unsigned char *)sp_acquire_zeroed(p);
    assert_true(all_bytes(a, 0, 100) && all_bytes(b, 0, 100));
    unsigned char *c = (unsigned char *)sp_acquire_zeroed(p); /* built for this acquisition */
    assert_true(all_bytes(c, 0, 100));
    memset(a, 0x77, 100);
    memset(c, 0x66, 100);
    sp_release(p, a);
    sp_release(p, c);
    unsigned char *again = (unsigned char *)sp_acquire_zeroed(p); /* recycled: memset */
    assert_ptr_equal(again, c);
    assert_true(all_bytes(again, 0, 100));
    assert_true(all_bytes(sp_acquire_zeroed(p), 0, 100));
    EXPECT_STATS(p, .size = 3, .leased = 3, .peak_leased = 3, .created = 3, .acquired = 5, .released = 2);
    sp_release_all(p);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);

    /* a reclaimed member is zeroed too */
    d = test_env_desc(&env, "reclaim", 64);
    d.create = NULL, d.on_acquire = NULL, d.on_release = NULL, d.dispose = NULL;
    d.max = 1;
    d.overflow = SP_OVERFLOW_RECLAIM;
    p = sp_pool_create(&d);
    unsigned char *only = (unsigned char *)sp_acquire_zeroed(p);
    memset(only, 0x11, 64);
    assert_ptr_equal(sp_acquire_zeroed(p), only);
    assert_true(all_bytes(only, 0, 64));
    sp_release(p, only);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&env.alloc);
}

static void zeroed_acquisition_is_refused_in_a_pool_with_hooks(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "hooked", 32); /* create and on_acquire installed */
    sp_pool *p = sp_pool_create(&d);
    assert_null(sp_acquire_zeroed(p));
    assert_int_equal(lines(&env.log), 1);
    assert_true(test_log_last_has(&env.log, "create or on_acquire"));
    EXPECT_STATS(p, .size = 0);
    d.create = NULL, d.on_acquire = NULL;
    sp_pool_destroy(p);
    p = sp_pool_create(&d); /* on_release and dispose only: fine */
    void *m = sp_acquire_zeroed(p);
    assert_non_null(m);
    sp_release(p, m);
    sp_pool_destroy(p);
    assert_null(sp_acquire_zeroed(NULL));
    EXPECT_NO_LEAK(&env.alloc);
}

static void sizes_zeroed_acquisition_zeroes_the_whole_class(void **state) {
    (void)state;
    for (int counted = 0; counted < 2; counted++) {
        test_env env;
        sp_sizes *s = make_set(&env, NULL, 0, counted);
        unsigned char *m = (unsigned char *)sp_sizes_acquire(s, 700); /* the 768 class */
        memset(m, 0xEE, 768);
        sp_sizes_release(s, m);
        unsigned char *z = (unsigned char *)sp_sizes_acquire_zeroed(s, 520);
        assert_ptr_equal(z, m);
        assert_true(all_bytes(z, 0, 768));
        sp_sizes_release(s, z);
        sp_sizes_destroy(s);
        assert_int_equal(lines(&env.log), 0);
        if (counted) EXPECT_NO_LEAK(&env.alloc);
    }
}

/* ---- resize --------------------------------------------------------------------------------- */

static void resize_moves_between_classes_with_realloc_rules(void **state) {
    (void)state;
    test_env env;
    sp_sizes *s = make_set(&env, NULL, 0, false);
    unsigned char *m = (unsigned char *)sp_sizes_resize(s, NULL, 100); /* NULL: an acquisition */
    assert_int_equal(sp_sizes_usable_size(s, m), 128);
    for (int i = 0; i < 128; i++) m[i] = (unsigned char)i;
    assert_ptr_equal(sp_sizes_resize(s, m, 120), m); /* the same class */
    assert_ptr_equal(sp_sizes_resize(s, m, 97), m);
    unsigned char *big = (unsigned char *)sp_sizes_resize(s, m, 3000);
    assert_non_null(big);
    assert_ptr_not_equal(big, m);
    assert_int_equal(sp_sizes_usable_size(s, big), 3072);
    for (int i = 0; i < 128; i++) assert_int_equal(big[i], (unsigned char)i); /* all 128 kept */
    assert_false(sp_is_leased(sp_sizes_pool(s, 5), m));                    /* the old is free */
    unsigned char *small = (unsigned char *)sp_sizes_resize(s, big, 20);  /* shrink: 20 copied */
    assert_int_equal(sp_sizes_usable_size(s, small), 32);
    for (int i = 0; i < 20; i++) assert_int_equal(small[i], (unsigned char)i);
    sp_stats total;
    sp_sizes_stats_total(s, &total);
    assert_int_equal(total.leased, 1);
    /* refused: size 0 and above the largest, the member untouched */
    int n = lines(&env.log);
    assert_null(sp_sizes_resize(s, small, 0));
    assert_null(sp_sizes_resize(s, small, 9000));
    assert_int_equal(lines(&env.log), n + 2);
    assert_true(sp_is_leased(sp_sizes_pool(s, 1), small));
    for (int i = 0; i < 20; i++) assert_int_equal(small[i], (unsigned char)i);
    sp_sizes_release(s, small);
    sp_sizes_destroy(s);
}

/* A saturated target class (DROP) or a failing allocator: NULL, the old member untouched and
   still leased, nothing leaked. */
static void failed_resize_leaves_the_member_untouched(void **state) {
    (void)state;
    test_env env;
    memset(&env, 0, sizeof env);
    sp_sizes *s = sp_sizes_create(&(sp_sizes_desc){.max = 1, .logger = test_log_make(&env.log),
                                                   .allocator = test_alloc_make(&env.alloc)});
    char *blocker = (char *)sp_sizes_acquire(s, 64);
    char *m = (char *)sp_sizes_acquire(s, 16);
    memcpy(m, "fifteen bytes!", 15);
    assert_null(sp_sizes_resize(s, m, 60)); /* the 64 class is full */
    assert_string_equal(m, "fifteen bytes!");
    assert_true(sp_is_leased(sp_sizes_pool(s, 0), m));
    sp_stats st;
    sp_sizes_stats_get(s, 3, &st);
    assert_int_equal(st.dropped, 1);
    /* allocator failure: the 256 class has no span yet */
    env.alloc.fail_at = env.alloc.allocs + 1u;
    assert_null(sp_sizes_resize(s, m, 200));
    assert_true(lines(&env.log) >= 1);
    assert_string_equal(m, "fifteen bytes!");
    assert_true(sp_is_leased(sp_sizes_pool(s, 0), m));
    env.alloc.fail_at = 0;
    char *moved = (char *)sp_sizes_resize(s, m, 200);
    assert_string_equal(moved, "fifteen bytes!");
    sp_sizes_release(s, moved);
    sp_sizes_release(s, blocker);
    sp_sizes_stats_total(s, &st);
    assert_int_equal(st.leased, 0);
    sp_sizes_destroy(s);
    EXPECT_NO_LEAK(&env.alloc);
}

/* ---- handles --------------------------------------------------------------------------------- */

static void handles_resolve_through_the_class_pools(void **state) {
    (void)state;
    test_env env, env2;
    sp_sizes *s = make_set(&env, NULL, 0, false);
    sp_sizes *other = make_set(&env2, NULL, 0, false);
    void *a = sp_sizes_acquire(s, 10), *b = sp_sizes_acquire(s, 5000);
    sp_handle ha = sp_sizes_handle_of(s, a), hb = sp_sizes_handle_of(s, b);
    assert_false(sp_handle_is_null(ha));
    assert_ptr_equal(sp_sizes_resolve(s, ha), a);
    assert_ptr_equal(sp_sizes_resolve(s, hb), b);
    assert_null(sp_sizes_resolve(other, ha)); /* no class of that set: silently */
    assert_null(sp_sizes_resolve(s, sp_handle_null()));
    sp_sizes_release(s, a);
    assert_null(sp_sizes_resolve(s, ha)); /* stale */
    void *a2 = sp_sizes_acquire(s, 10);
    assert_ptr_equal(a2, a);
    assert_null(sp_sizes_resolve(s, ha)); /* another life */
    assert_int_equal(sp_sizes_usable_size(s, b), 6144);
    sp_sizes_release(s, a2);
    sp_sizes_release(s, b);
    sp_sizes_destroy(other);
    sp_sizes_destroy(s);
    assert_int_equal(lines(&env.log) + lines(&env2.log), 0);
}

/* ---- debug checks ------------------------------------------------------------------------------ */

static void leaks_are_reported_per_class_with_their_sites(void **state) {
    (void)state;
    test_env env;
    sp_sizes *s = make_set(&env, NULL, 0, true);
    void *kept = sp_sizes_acquire(s, 300);
    assert_int_equal(sp_leak_report(sp_sizes_pool(s, 8), SP_LOG_WARN), 1);
    assert_string_equal(env.log.last_pool, "bodies:384");
#if SP_DEBUG
    if (!test_log_last_has(&env.log, "not recorded")) assert_true(test_log_last_has(&env.log, "test_sizes.c"));
#endif
    int n = lines(&env.log);
    sp_sizes_destroy(s); /* kept leaks: the class pool says so */
    assert_non_null(kept);
    assert_true(lines(&env.log) > n);
    assert_true(test_log_last_has(&env.log, "leak"));
    EXPECT_NO_LEAK(&env.alloc);
}

/* ---- allocator failure ------------------------------------------------------------------------ */

/* Every allocation of creation, growth of several classes and destruction fails once in turn:
   each failure is NULL with a line, nothing leaks, and the set works after it. */
static void allocator_failure_at_every_allocation_leaks_nothing(void **state) {
    (void)state;
    for (uint64_t fail = 1;; fail++) {
        test_env env;
        memset(&env, 0, sizeof env);
        env.alloc.fail_at = fail;
        sp_sizes_desc d = {.logger = test_log_make(&env.log), .allocator = test_alloc_make(&env.alloc),
                           .chunk_items = 4};
        sp_sizes *s = sp_sizes_create(&d);
        bool failed = env.alloc.allocs >= fail;
        if (!s) {
            assert_true(failed);
            assert_true(lines(&env.log) >= 1);
            EXPECT_NO_LEAK(&env.alloc);
            continue;
        }
        void *held[64];
        int got = 0;
        for (int i = 0; i < 64; i++) {
            held[got] = sp_sizes_acquire(s, (size_t)(1 + (i * 131) % 8192));
            if (held[got]) got++;
        }
        failed = env.alloc.allocs >= fail;
        if (got < 64) assert_true(failed && lines(&env.log) >= 1);
        env.alloc.fail_at = 0;
        void *after = sp_sizes_acquire(s, 5000);
        assert_non_null(after);
        for (int i = 0; i < got; i++) assert_int_equal(sp_sizes_release(s, held[i]), SP_OK);
        sp_sizes_release(s, after);
        sp_stats st;
        sp_sizes_stats_total(s, &st);
        assert_int_equal(st.leased, 0);
        sp_sizes_destroy(s);
        EXPECT_NO_LEAK(&env.alloc);
        if (!failed) break; /* the scenario made fewer allocations than fail */
    }
}

/* ---- threads ---------------------------------------------------------------------------------- */

typedef struct sizes_arg {
    sp_sizes *set;
    int me;
    void **handoff; /* members this thread leaves for the other to release */
    atomic_int *bad;
} sizes_arg;

enum { TS_ROUNDS = 4000, TS_HANDOFF = 256 };

static void *sizes_churn(void *v) {
    sizes_arg *a = (sizes_arg *)v;
    uint32_t seed = 1234u + (uint32_t)a->me;
    void *held[8];
    size_t sz[8];
    for (int r = 0; r < TS_ROUNDS; r++) {
        for (int i = 0; i < 8; i++) {
            sz[i] = 1u + test_rand(&seed) % 8192u;
            held[i] = r % 3 ? sp_sizes_acquire(a->set, sz[i]) : sp_sizes_acquire_zeroed(a->set, sz[i]);
            if (!held[i]) {
                atomic_fetch_add(a->bad, 1);
                continue;
            }
            if (r % 3 == 0 && !ends_are(held[i], sz[i], 0)) atomic_fetch_add(a->bad, 1);
            ends_mark(held[i], sz[i], (unsigned char)(a->me + 1));
        }
        for (int i = 0; i < 8; i++) {
            if (!held[i]) continue;
            if (!ends_are(held[i], sz[i], (unsigned char)(a->me + 1))) atomic_fetch_add(a->bad, 1);
            if (i == 0) held[i] = sp_sizes_resize(a->set, held[i], 1u + test_rand(&seed) % 8192u);
            if (sp_sizes_release(a->set, held[i]) != SP_OK) atomic_fetch_add(a->bad, 1);
        }
    }
    for (int i = 0; i < TS_HANDOFF; i++) a->handoff[i] = sp_sizes_acquire(a->set, 1u + (size_t)i * 31u);
    return NULL;
}

static void *sizes_release_other(void *v) {
    sizes_arg *a = (sizes_arg *)v;
    for (int i = 0; i < TS_HANDOFF; i++)
        if (sp_sizes_release(a->set, a->handoff[i]) != SP_OK) atomic_fetch_add(a->bad, 1);
    return NULL;
}

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#  define NO_THREADS 1 /* single-threaded WebAssembly: thread-safe pools are refused */
#else
#  define NO_THREADS 0
#endif

static void thread_safe_set_serves_two_threads(void **state) {
    (void)state;
    if (NO_THREADS) { /* the set is refused as its pools are, with their line */
        log_reset();
        assert_null(sp_sizes_create(&(sp_sizes_desc){.threads = SP_THREADS_SAFE, .logger = {tlog_fn, &g_log}}));
        assert_int_equal(atomic_load(&g_log.errors), 1);
        return;
    }
    for (int counted = 0; counted < 2; counted++) {
        log_reset();
        atomic_store(&g_live_bytes, 0);
        sp_sizes_desc d = {.name = "shared", .threads = SP_THREADS_SAFE, .logger = {tlog_fn, &g_log}};
        if (counted) d.allocator = (sp_allocator){.alloc = talloc, .free = tfree};
        sp_sizes *s = sp_sizes_create(&d);
        assert_non_null(s);
        atomic_int bad = 0;
        void *handoff[2][TS_HANDOFF];
        sizes_arg args[2] = {{s, 0, handoff[0], &bad}, {s, 1, handoff[1], &bad}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, sizes_churn, &args[i]);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        /* each thread releases what the other acquired, both at once */
        sizes_arg swapped[2] = {{s, 0, handoff[1], &bad}, {s, 1, handoff[0], &bad}};
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, sizes_release_other, &swapped[i]);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&bad), 0);
        sp_stats st;
        sp_sizes_stats_total(s, &st);
        assert_int_equal(st.leased, 0);
        assert_int_equal(st.acquired, st.released);
        /* every round's eight, the handoffs, and the resizes that changed class */
        assert_true(st.acquired >= 2u * (TS_ROUNDS * 8u + TS_HANDOFF));
        sp_sizes_destroy(s);
        assert_int_equal(atomic_load(&g_log.warnings) + atomic_load(&g_log.errors), 0);
        if (counted) assert_int_equal(atomic_load(&g_live_bytes), 0);
    }
}

/* ---- a class pool's callback destroying the set ---------------------------------------------- */

typedef struct destroyer {
    sp_sizes *set;
    int lines, inside;
    char last[256];
} destroyer;

/* A logger that destroys the set at the first line a class pool logs (not at its own refusal's
   line, which would otherwise ask again). */
static void destroying_log(sp_log_level level, const char *pool, const char *message, void *user) {
    destroyer *d = (destroyer *)user;
    (void)level, (void)pool;
    d->lines++;
    snprintf(d->last, sizeof d->last, "%s", message);
    if (d->inside++ == 0) sp_sizes_destroy(d->set);
    d->inside--;
}

static void destroy_from_a_class_callback_is_refused(void **state) {
    (void)state;
    destroyer d = {0};
    d.set = sp_sizes_create(&(sp_sizes_desc){.name = "bodies", .logger = {destroying_log, &d}});
    assert_non_null(d.set);
    void *m = sp_sizes_acquire(d.set, 100);
    assert_non_null(m);
    assert_int_equal(sp_sizes_release(d.set, m), SP_OK);
    assert_int_not_equal(sp_sizes_release(d.set, m), SP_OK); /* the class pool logs: destroy inside */
    assert_int_equal(d.lines, 2);
    assert_non_null(strstr(d.last, "sp_sizes_destroy while a callback of its class 'bodies:128' runs"));
    void *again = sp_sizes_acquire(d.set, 100); /* the set is whole */
    assert_non_null(again);
    assert_int_equal(sp_sizes_release(d.set, again), SP_OK);
    sp_sizes_destroy(d.set);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_table_is_two_classes_a_doubling),
        cmocka_unit_test(every_size_gets_the_smallest_class_that_fits),
        cmocka_unit_test(release_finds_the_class_from_the_pointer_alone),
        cmocka_unit_test(bad_input_is_refused_with_one_line_and_changes_nothing),
        cmocka_unit_test(a_null_set_is_refused_with_one_line),
        cmocka_unit_test(invalid_descriptors_are_refused_with_one_line),
        cmocka_unit_test(zeroed_acquisition_is_zero_after_any_history),
        cmocka_unit_test(zeroed_acquisition_is_refused_in_a_pool_with_hooks),
        cmocka_unit_test(sizes_zeroed_acquisition_zeroes_the_whole_class),
        cmocka_unit_test(resize_moves_between_classes_with_realloc_rules),
        cmocka_unit_test(failed_resize_leaves_the_member_untouched),
        cmocka_unit_test(handles_resolve_through_the_class_pools),
        cmocka_unit_test(leaks_are_reported_per_class_with_their_sites),
        cmocka_unit_test(allocator_failure_at_every_allocation_leaks_nothing),
        cmocka_unit_test(thread_safe_set_serves_two_threads),
        cmocka_unit_test(destroy_from_a_class_callback_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
