/* SPDX-License-Identifier: Zlib */
/* Spans: a pool's members live in spans, blocks of the process's shared source of address
   space (committed as they fill) where there is virtual memory, ranges from the allocator
   where there is not. Members never move; a pool with max holds them all in one span, every
   member at its index's place; pointers into a span's uncommitted part are refused without
   being read; sp_trim gives back spans without a built member and decommits the pages above a
   span's highest built member; a source that cannot give a block falls back to ranges with one
   info line; a commit that fails is an allocator failure; members start on cache lines. In a
   build without virtual memory (SP_NO_VIRTUAL_MEMORY, build/fallback) every pool takes the
   fallback: the tests that need the source say so and check the fallback instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "sp_internal.h" /* sp__pool_check */
#include "sp_os.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define SP_TEST_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#  define SP_TEST_ASAN 1
#endif
#ifdef SP_TEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif

static bool reserves(const sp_pool *p) {
    sp_stats s;
    sp_stats_get(p, &s);
    return s.bytes_reserved > 0;
}

static void members_never_move_and_share_one_range(void **state) {
    (void)state;
    enum { N = 5000 };
    for (int bounded = 0; bounded < 2; bounded++) {
        sp_desc d = {.name = "range", .item_size = 64, .max = bounded ? N : 0};
        sp_pool *p = sp_pool_create(&d);
        assert_non_null(p);
        assert_int_equal(reserves(p), 0); /* nothing yet: address space comes with use */
        static unsigned char *m[N];
        for (int i = 0; i < N; i++) {
            m[i] = sp_acquire(p);
            assert_non_null(m[i]);
            assert_int_equal((uintptr_t)m[i] % 64u, 0); /* 64-byte members never straddle lines */
            memset(m[i], i & 0xFF, 64);
        }
        assert_int_equal(reserves(p), sp__os_has_virtual_memory());
        if (bounded && reserves(p)) /* one span: every member at its index's place */
            for (int i = 1; i < N; i++) assert_ptr_equal(m[i], m[0] + (size_t)i * 64u);
        for (int i = 0; i < N; i++) assert_int_equal(m[i][63], i & 0xFF); /* nothing moved */
        assert_true(sp__pool_check(p));
        assert_int_equal(sp_release_all(p), N);
        sp_pool_destroy(p);
    }
}

static int by_address(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(unsigned char *const *)a, y = (uintptr_t)*(unsigned char *const *)b;
    return (x > y) - (x < y);
}

/* A pool grown by acquisition holds its members in several spans and releases each through the
   source's map of owners (by address where spans come from the allocator): members of every
   span come back, and what is not one of its leased members is refused with its line and
   changes nothing, whichever span it points into. */
static void a_pool_of_several_spans_releases_and_refuses_in_every_span(void **state) {
    (void)state;
    enum { N = 3000 }; /* 64-byte members: more than one 64 KiB block holds */
    test_log log;
    sp_desc d = {.name = "spans", .item_size = 64, .logger = test_log_make(&log)};
    sp_desc od = {.name = "other", .item_size = 64, .logger = test_log_make(&log)};
    sp_pool *p = sp_pool_create(&d), *other = sp_pool_create(&od);
    assert_non_null(p);
    assert_non_null(other);
    static unsigned char *m[N];
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    unsigned char *theirs = sp_acquire(other);
    sp_handle h = {0}; /* a lease in its word, in the top span */
    assert_non_null(sp_acquire_handle(p, NULL, &h));
    assert_false(sp_handle_is_null(h));
    sp_stats s;
    sp_stats_get(p, &s);
    assert_true(s.bytes > (size_t)N * 64u);

    for (size_t i = 0; i < N; i += 499) { /* the first span, the last, and between */
        assert_int_equal(sp_release(p, m[i] + 1), SP_ERR_FOREIGN); /* interior */
        assert_true(test_log_last_has(&log, "not the start of a member"));
    }
    assert_int_equal(sp_release(p, theirs), SP_ERR_FOREIGN); /* another pool's member */
    assert_true(sp_is_leased(other, theirs));
    for (size_t i = 0; i < N; i += 2) assert_int_equal(sp_release(p, m[i]), SP_OK);
    for (size_t i = 0; i < N; i += 2) { /* double releases, in every span */
        log.last_message[0] = '\0';
        assert_int_equal(sp_release(p, m[i]), SP_ERR_NOT_LEASED);
        assert_true(test_log_last_has(&log, "not leased"));
    }
    assert_int_equal(sp_release(p, sp_resolve(p, h)), SP_OK);
    assert_null(sp_resolve(p, h));
    for (size_t i = 1; i < N; i += 2) assert_int_equal(sp_release(p, m[i]), SP_OK);
    sp_stats_get(p, &s);
    assert_int_equal(s.leased, 0);
    assert_true(sp__pool_check(p));
    /* Acquired again: every member is one of those, none handed out twice, none lost. */
    static unsigned char *again[N + 1];
    for (size_t i = 0; i < N + 1; i++) assert_non_null(again[i] = sp_acquire(p));
    qsort(again, N + 1, sizeof again[0], by_address);
    for (size_t i = 1; i < N + 1; i++) assert_true(again[i - 1] < again[i]);
    sp_stats_get(p, &s);
    assert_int_equal(s.size, N + 1);
    /* Trimmed to nothing and grown again: the spans come anew, and releases find them. */
    for (size_t i = 0; i < N + 1; i++) assert_int_equal(sp_release(p, again[i]), SP_OK);
    assert_int_equal(sp_trim(p, 0), N + 1);
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    assert_int_equal(sp_release(p, m[0] + 1), SP_ERR_FOREIGN);
    for (size_t i = N; i-- > 0;) assert_int_equal(sp_release(p, m[i]), SP_OK);
    assert_int_equal(sp_release(p, m[N - 1]), SP_ERR_NOT_LEASED);
    sp_stats_get(p, &s);
    assert_int_equal(s.leased, 0);
    assert_true(sp__pool_check(p));
    assert_int_equal(sp_release(other, theirs), SP_OK);
    sp_pool_destroy(other);
    sp_pool_destroy(p);
}

/* A pool's plain map is a byte a slot up to 2^17 slots and a bit above (SP__PLAIN_BITS_FROM):
   one grown past it while its members are leased plainly converts its map, and every lease,
   release, double release and free member stays what it was, in a pool of several spans and in
   one of one span (whose routes change with the map); a fixed buffer that large has the bits
   from the start. */
enum { LARGE = (1 << 17) + 4096 }; /* members: past SP__PLAIN_BITS_FROM, even */

static void check_large(sp_pool *p, unsigned char **m, size_t n, test_log *log) {
    sp_stats s;
    for (size_t i = 0; i < n; i += 2) assert_int_equal(sp_release(p, m[i]), SP_OK);
    for (size_t i = 0; i < n; i += 2) {
        assert_false(sp_is_leased(p, m[i]));
        assert_true(sp_is_leased(p, m[i + 1]));
    }
    for (size_t i = 0; i < n; i += 998) { /* double releases, below and above 2^17 */
        log->last_message[0] = '\0';
        assert_int_equal(sp_release(p, m[i]), SP_ERR_NOT_LEASED);
        assert_true(test_log_last_has(log, "not leased"));
    }
    sp_stats_get(p, &s);
    assert_int_equal(s.leased, n / 2);
    assert_true(sp__pool_check(p));
    for (size_t i = 1; i < n; i += 2) assert_int_equal(sp_release(p, m[i]), SP_OK);
    assert_int_equal(sp_release(p, m[n - 1]), SP_ERR_NOT_LEASED);
    sp_stats_get(p, &s);
    assert_int_equal(s.leased, 0);
    assert_true(sp__pool_check(p));
}

static void a_large_pool_keeps_its_plain_leases_in_a_map_of_bits(void **state) {
    (void)state;
    enum { N = LARGE };
    test_log log;
    unsigned char **m = malloc(N * sizeof *m);
    assert_non_null(m);
    sp_desc d = {.name = "large", .item_size = 16, .logger = test_log_make(&log)};
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    assert_true(sp__pool_check(p));
    check_large(p, m, N, &log);
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p)); /* the same members again */
    check_large(p, m, N, &log);
    sp_pool_destroy(p);

    d.max = N; /* one span, its map converted as it fills */
    assert_non_null(p = sp_pool_create(&d));
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    assert_null(sp_acquire(p)); /* full */
    check_large(p, m, N, &log);
    sp_pool_destroy(p);

    size_t size = sp_buffer_size(&d, N);
    void *buf = malloc(size);
    assert_non_null(buf);
    d.buffer = buf;
    d.buffer_size = size;
    assert_non_null(p = sp_pool_create(&d));
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    assert_null(sp_acquire(p)); /* full */
    check_large(p, m, N, &log);
    sp_pool_destroy(p);
    free(buf);
    free(m);
}

/* A create hook that acquires from its own pool and releases what it got, while the pool grows
   past 2^17 slots, its 131072nd build among them: the growth past 2^17 (and so the conversion
   of the map) comes from inside the hook; every lease stays exact, and the hook's sp_trim is
   refused with a line. */
static sp_pool *nested_pool;
static size_t nested_built, nested_acquired;
static void create_acquires_nested(void *item, void *user) {
    test_log *log = user;
    (void)item;
    if (++nested_built % 32768u != 0) return;
    void *m = sp_acquire(nested_pool);
    if (m) {
        nested_acquired++;
        assert_int_equal(sp_release(nested_pool, m), SP_OK);
    }
    log->last_message[0] = '\0';
    assert_int_equal(sp_trim(nested_pool, 0), 0);
    assert_true(test_log_last_has(log, "refused"));
}

static void a_hook_acquiring_while_the_map_turns_to_bits_keeps_every_lease(void **state) {
    (void)state;
    enum { N = LARGE };
    test_log log;
    unsigned char **m = malloc(N * sizeof *m);
    assert_non_null(m);
    sp_desc d = {.name = "nested", .item_size = 16, .create = create_acquires_nested, .logger = test_log_make(&log)};
    d.user = &log;
    nested_built = nested_acquired = 0;
    assert_non_null(nested_pool = sp_pool_create(&d));
    for (size_t i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(nested_pool));
    assert_int_equal(nested_acquired, N / 32768u);
    assert_true(sp__pool_check(nested_pool));
    check_large(nested_pool, m, N, &log);
    sp_pool_destroy(nested_pool);
    free(m);
}

static void a_pointer_into_the_uncommitted_part_is_refused_unread(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "range", 64);
    d.allocator = (sp_allocator){0}; /* the platform's virtual memory */
    d.max = 2000000;                  /* one span for all: address space for 2M members */
    sp_pool *p = sp_pool_create(&d);
    unsigned char *first = sp_acquire(p);
    if (!reserves(p)) {
        sp_pool_destroy(p);
        skip();
    }
    sp_stats s;
    sp_stats_get(p, &s);
    /* Far past what is committed but inside the reservation: inaccessible memory, so reading
       it would crash the test. */
    unsigned char *beyond = first + (size_t)1000000 * 64u;
    assert_false(sp_is_leased(p, beyond));
    assert_int_equal(sp_release(p, beyond), SP_ERR_FOREIGN);
    assert_true(test_log_last_has(&env.log, "not the start of a member"));
    assert_true(sp_handle_is_null(sp_handle_of(p, beyond)));
    assert_int_equal(sp_release(p, first), SP_OK);
    sp_pool_destroy(p);
}

static void trim_decommits_the_pages_above_the_highest_built_member(void **state) {
    (void)state;
    enum { N = 20000 };
    sp_desc d = {.name = "trim", .item_size = 64};
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_prewarm(p, N), N);
    void *low = sp_acquire(p); /* the lowest slot stays built */
    sp_stats before, after;
    sp_stats_get(p, &before);
    assert_true(before.bytes >= (size_t)N * 64u);
    assert_int_equal(sp_trim(p, 0), N - 1);
    sp_stats_get(p, &after);
    /* Whichever way the pool holds its members, their memory went back, and the spans left
       without a member went back to the source. */
    assert_true(after.bytes + (size_t)(N - 100) * 64u <= before.bytes);
    assert_true(after.bytes_reserved < before.bytes_reserved || !reserves(p));
    assert_true(sp_is_leased(p, low));
    assert_true(sp__pool_check(p));
    /* It grows again into the same place. */
    unsigned char *again = sp_acquire(p);
    assert_non_null(again);
    if (reserves(p)) assert_ptr_equal(again, (unsigned char *)low + 64);
    memset(again, 1, 64);
    assert_true(sp__pool_check(p));
    sp_release_all(p);
    sp_pool_destroy(p);
}

static void a_failed_reservation_falls_back_with_one_info_line(void **state) {
    (void)state;
    if (!sp__os_has_virtual_memory()) skip();
    test_env env;
    sp_desc d = test_env_desc(&env, "nospace", 32);
    d.allocator = (sp_allocator){0};
    d.max = (size_t)1 << 24; /* 512 MiB of address space: a region of its own */
    sp__os_fail_reserve_after(0);
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    void *first = sp_acquire(p); /* the source asks the system for a region, in vain */
    sp__os_fail_reserve_after(-1);
    assert_non_null(first);
    assert_int_equal(env.log.infos, 1);
    assert_true(test_log_last_has(&env.log, "could not reserve"));
    assert_false(reserves(p));
    assert_int_equal(sp_release(p, first), SP_OK);
    void *m[600];
    for (int i = 0; i < 600; i++) assert_non_null(m[i] = sp_acquire(p)); /* three ranges */
    for (int i = 0; i < 600; i++) assert_int_equal(sp_release(p, m[i]), SP_OK);
    for (int i = 0; i < 600; i++) assert_int_equal(sp_release(p, m[i]), SP_ERR_NOT_LEASED);
    assert_true(sp__pool_check(p));
    sp_pool_destroy(p);
}

/* Whether addr lies in readable and writable memory, from /proc/self/maps (-1: no /proc). */
static int writable(uintptr_t addr) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        found = sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi && perms[0] == 'r' &&
                perms[1] == 'w';
    }
    fclose(f);
    return found;
}

/* Where the committed memory that holds addr ends, when that is a huge page boundary: the first
   boundary above addr that is not writable, if the byte below it is; else 0. */
static uintptr_t committed_to_boundary(uintptr_t addr, uintptr_t huge) {
    uintptr_t b = (addr + huge) & ~(huge - 1u);
    while (writable(b)) b += huge;
    return writable(b - 1u) ? b : 0u;
}

/* A custom allocator's virtual memory: the platform's, through the allocator's four functions. */
static void *vm_reserve(size_t size, void *user) { return (void)user, sp__os_reserve(size); }
static bool vm_commit(void *addr, size_t size, void *user) { return (void)user, sp__os_commit(addr, size); }
static void vm_decommit(void *addr, size_t size, void *user) { (void)user, (void)sp__os_decommit(addr, size); }
static void vm_release(void *addr, size_t size, void *user) { (void)user, sp__os_release(addr, size); }

/* A span of the process's source with 4 MiB of members or more commits them up to a huge page
   boundary (2 MiB), so that the system can back them with huge pages; a smaller one, or one from
   a custom allocator's virtual memory, page by page. */
static void a_large_span_commits_its_members_to_huge_page_boundaries(void **state) {
    (void)state;
    if (!sp__os_has_virtual_memory()) skip();
    const uintptr_t huge = (uintptr_t)2 << 20;
    test_env env;
    sp_desc d = test_env_desc(&env, "huge", 64);
    d.allocator = (sp_allocator){0};
    d.max = 49152; /* 3 MiB of members: pages */
    sp_pool *small = sp_pool_create(&d);
    d.max = (size_t)1 << 20; /* 64 MiB: huge pages */
    sp_pool *large = sp_pool_create(&d);
    unsigned char *one = sp_acquire(small), *first = sp_acquire(large), *second = sp_acquire(large);
    assert_non_null(one);
    assert_non_null(first);
    if (writable((uintptr_t)one) < 0) skip(); /* no /proc/self/maps */
    assert_false(writable((uintptr_t)one + ((uintptr_t)256 << 10)));
    /* Committed ahead by a 64th of the span (as every span committed as it fills), then to the
       boundary above. (Debug builds pad the stride.) */
    size_t stride = (size_t)(second - first), step = d.max / 64u;
    uintptr_t end = committed_to_boundary((uintptr_t)first, huge);
    assert_true(end > (uintptr_t)first + step * stride && end <= (uintptr_t)first + step * stride + huge);
    /* The pool's next commit, wherever it needs one, fails: an allocator failure that changes
       nothing; the next acquisition commits, again up to a boundary. */
    sp_stats before, after;
    size_t i = 2;
    sp__os_fail_commit_after(0);
    for (;; i++) {
        assert_true(i < d.max);
        sp_stats_get(large, &before);
        unsigned char *m = sp_acquire(large);
        if (!m) break;
        assert_ptr_equal(m, first + i * stride);
    }
    sp__os_fail_commit_after(-1);
    assert_true(test_log_last_has(&env.log, "out of memory"));
    sp_stats_get(large, &after);
    after.bytes = before.bytes; /* the other areas' pages may stay committed */
    assert_memory_equal(&before, &after, sizeof before);
    assert_ptr_equal(sp_acquire(large), first + i * stride);
    assert_true(committed_to_boundary((uintptr_t)first, huge) >= end);

    d.allocator = (sp_allocator){.reserve = vm_reserve, .commit = vm_commit, .decommit = vm_decommit, .release = vm_release};
    sp_pool *custom = sp_pool_create(&d);
    unsigned char *own = sp_acquire(custom), *own2 = sp_acquire(custom);
    assert_non_null(own2);
    assert_false(writable((uintptr_t)own + step * (size_t)(own2 - own) + ((uintptr_t)64 << 10)));
    sp_pool_destroy(custom);
    assert_true(sp__pool_check(large));
    sp_pool_destroy(small);
    sp_pool_destroy(large);
}

static void a_failed_commit_is_an_allocator_failure(void **state) {
    (void)state;
    if (!sp__os_has_virtual_memory()) skip();
    test_env env;
    sp_desc d = test_env_desc(&env, "nocommit", 64);
    d.allocator = (sp_allocator){0};
    d.max = 50000; /* one span, committed as it fills, 256 members (chunk_items) a step (below
                      4 MiB of members: not committed ahead to huge page boundaries) */
    sp_pool *p = sp_pool_create(&d);
    void *m[300];
    for (int i = 0; i < 256; i++) assert_non_null(m[i] = sp_acquire(p)); /* the first step */
    assert_true(reserves(p));
    /* The next member needs a commit. */
    for (long k = 0; k < 1; k++) {
        sp_stats before, after;
        sp_stats_get(p, &before);
        sp__os_fail_commit_after(k);
        void *none = sp_acquire(p);
        sp__os_fail_commit_after(-1);
        assert_null(none);
        assert_true(test_log_last_has(&env.log, "out of memory"));
        sp_stats_get(p, &after);
        after.bytes = before.bytes; /* the slots' pages may stay committed */
        assert_memory_equal(&before, &after, sizeof before);
        assert_true(sp__pool_check(p));
    }
    for (int i = 256; i < 300; i++) assert_non_null(m[i] = sp_acquire(p));
    for (int i = 0; i < 300; i++) assert_int_equal(sp_release(p, m[i]), SP_OK);
    assert_true(sp__pool_check(p));
    sp_pool_destroy(p);
}

static void growth_past_the_reservation_takes_ranges(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "past", 48);
    d.allocator = (sp_allocator){0};
    d.max = 10;
    d.overflow = SP_OVERFLOW_GROW;
    sp_pool *p = sp_pool_create(&d);
    enum { N = 1000 };
    static void *m[N];
    for (int i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    for (int i = 0; i < N; i++) {
        assert_true(sp_is_leased(p, m[i]));
        assert_ptr_equal(sp_resolve(p, sp_handle_of(p, m[i])), m[i]);
    }
    assert_true(sp__pool_check(p));
    for (int i = 0; i < N; i++) assert_int_equal(sp_release(p, m[i]), SP_OK);
    for (int i = 0; i < N; i++) assert_int_equal(sp_release(p, m[i]), SP_ERR_NOT_LEASED);
    /* Interior pointers of every range are refused. */
    for (int i = 0; i < N; i += 7) assert_int_equal(sp_release(p, (char *)m[i] + 8), SP_ERR_FOREIGN);
    assert_int_equal(sp_trim(p, 0), N);
    assert_true(sp__pool_check(p));
    sp_set_max(p, 2000);
    for (int i = 0; i < N; i++) assert_non_null(m[i] = sp_acquire(p));
    assert_true(sp__pool_check(p));
    sp_release_all(p);
    sp_pool_destroy(p);
}

/* A trim that decommits leaves a member straddling the last kept page; a destroyed pool must
   leave none of its committed memory poisoned (the platform's release leaves ASan's shadow
   alone, and the next mapping may get the same addresses). ASan builds only. */
static void a_destroyed_pool_leaves_no_poison_behind(void **state) {
    (void)state;
#ifdef SP_TEST_ASAN
    sp_desc d = {.name = "poison", .item_size = 48}; /* 48 does not divide a page */
    sp_pool *p = sp_pool_create(&d);
    if (!reserves(p)) {
        sp_pool_destroy(p);
        skip();
    }
    enum { N = 3000 };
    static void *m[N];
    for (int i = 0; i < N; i++) m[i] = sp_acquire(p);
    for (int i = 100; i < N; i++) sp_release(p, m[i]);
    assert_int_equal(sp_trim(p, 0), N - 100);
    unsigned char *base = m[0];
    sp_pool_destroy(p);
    assert_null(__asan_region_is_poisoned(base, (size_t)N * 48u));
#else
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(members_never_move_and_share_one_range),
        cmocka_unit_test(a_pool_of_several_spans_releases_and_refuses_in_every_span),
        cmocka_unit_test(a_large_pool_keeps_its_plain_leases_in_a_map_of_bits),
        cmocka_unit_test(a_hook_acquiring_while_the_map_turns_to_bits_keeps_every_lease),
        cmocka_unit_test(a_pointer_into_the_uncommitted_part_is_refused_unread),
        cmocka_unit_test(trim_decommits_the_pages_above_the_highest_built_member),
        cmocka_unit_test(a_failed_reservation_falls_back_with_one_info_line),
        cmocka_unit_test(a_failed_commit_is_an_allocator_failure),
        cmocka_unit_test(a_large_span_commits_its_members_to_huge_page_boundaries),
        cmocka_unit_test(growth_past_the_reservation_takes_ranges),
        cmocka_unit_test(a_destroyed_pool_leaves_no_poison_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
