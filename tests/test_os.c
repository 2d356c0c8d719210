/* SPDX-License-Identifier: Zlib */
/* Where memory comes from (src/os.c, src/sp_os.h): reservations of address space, committed
   in pieces, decommitted (reading zero when committed again) and released; the memory tools
   (ASan poisoning, valgrind's access bits) on committed reserved memory; the resolution of an
   sp_allocator into a pool's virtual memory; the forced failures the pool's tests use. Builds
   without virtual memory (SP_NO_VIRTUAL_MEMORY) check that every reservation fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_os.h"
#include "testutil.h"

#include <string.h>
#include <sys/resource.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define TEST_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TEST_ASAN)
#  define TEST_ASAN 1
#endif
#ifdef TEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif
#ifdef SP_HAVE_VALGRIND
#  include <valgrind/memcheck.h>
#endif

/* The largest of 64 GiB (on 64-bit), 1 GiB, 64 MiB that the system lets us reserve; 0 (and
   *base NULL) when none: valgrind's address-space manager, for one, may refuse the largest. */
static size_t reserve_largest(void **base) {
    const size_t gib = (size_t)1 << 30;
    size_t sizes[3] = {sizeof(size_t) > 4 ? gib * 64u : gib, gib, (size_t)64 << 20};
    for (int i = 0; i < 3; i++) {
        *base = sp__os_reserve(sizes[i]);
        if (*base) return sizes[i];
    }
    return 0;
}

/* Reserves or skips the test (no virtual memory: reserve must fail, which is all there is). */
static size_t reserve_or_skip(void **base) {
    size_t size = reserve_largest(base);
    if (!sp__os_has_virtual_memory()) {
        assert_null(*base);
        skip();
    }
    if (!size) skip();
    return size;
}

static void page_size_is_a_power_of_two(void **state) {
    (void)state;
    size_t page = sp__os_page_size();
    assert_true(page >= 4096u);
    assert_int_equal(page & (page - 1u), 0);
}

/* Peak resident memory of this process, in KiB. */
static long peak_rss_kib(void) {
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

/* Reserving and releasing cost nothing per reserved byte: no physical memory (here or in a
   sanitizer's shadow, which once cost 8 GiB for a 64 GiB reservation). The first test to
   reserve, so that the peak is still the start's. */
static void a_release_costs_nothing_per_reserved_byte(void **state) {
    (void)state;
    long before = peak_rss_kib();
    void *base = NULL;
    size_t size = reserve_or_skip(&base);
    assert_true(sp__os_commit(base, sp__os_page_size()));
    memset(base, 1, sp__os_page_size());
    assert_true(sp__os_decommit(base, sp__os_page_size()));
    sp__os_release(base, size);
    assert_true(peak_rss_kib() - before < 64 * 1024);
}

static void a_large_reservation_commits_in_pieces(void **state) {
    (void)state;
    void *base = NULL;
    size_t size = reserve_or_skip(&base);
    size_t page = sp__os_page_size();
    unsigned char *b = (unsigned char *)base;
    assert_int_equal((uintptr_t)b % page, 0);

    /* The first pages, a run in the middle and the last page: each readable and writable. */
    size_t offsets[3] = {0, (size / 2u) & ~(page - 1u), size - page};
    size_t lengths[3] = {4u * page, 2u * page, page};
    for (int i = 0; i < 3; i++) {
        unsigned char *piece = b + offsets[i];
        assert_true(sp__os_commit(piece, lengths[i]));
        for (size_t k = 0; k < lengths[i]; k++) assert_int_equal(piece[k], 0);
        memset(piece, 0xA0 + i, lengths[i]);
    }
    for (int i = 0; i < 3; i++) {
        unsigned char *piece = b + offsets[i];
        assert_int_equal(piece[0], 0xA0 + i);
        assert_int_equal(piece[lengths[i] - 1u], 0xA0 + i);
    }
    /* Growing the first piece: what was written stays. */
    assert_true(sp__os_commit(b + 4u * page, 4u * page));
    assert_int_equal(b[4u * page - 1u], 0xA0);
    assert_int_equal(b[4u * page], 0);
    sp__os_release(base, size);
}

static void decommitted_memory_reads_zero_when_committed_again(void **state) {
    (void)state;
    void *base = NULL;
    size_t size = reserve_or_skip(&base);
    size_t page = sp__os_page_size();
    unsigned char *b = (unsigned char *)base;
    assert_true(sp__os_commit(b, 8u * page));
    memset(b, 0x5A, 8u * page);

    /* Pages 2..5 go back; 0, 1, 6 and 7 keep their contents. */
    assert_true(sp__os_decommit(b + 2u * page, 4u * page));
    assert_int_equal(b[2u * page - 1u], 0x5A);
    assert_int_equal(b[6u * page], 0x5A);
    assert_true(sp__os_commit(b + 2u * page, 4u * page));
    for (size_t k = 2u * page; k < 6u * page; k++) assert_int_equal(b[k], 0);
    memset(b + 2u * page, 0x33, 4u * page);
    assert_int_equal(b[5u * page], 0x33);
    sp__os_release(base, size);
}

/* The pool's debug code poisons free members in committed memory (src/debug.c): both tools
   must see that, and a decommit must leave nothing poisoned behind for the next commit. */
static void memory_tools_watch_committed_reserved_memory(void **state) {
    (void)state;
    void *base = NULL;
    size_t size = reserve_or_skip(&base);
    size_t page = sp__os_page_size();
    unsigned char *b = (unsigned char *)base;
    assert_true(sp__os_commit(b, 2u * page));
    memset(b, 1, 2u * page);
    unsigned char *member = b + 128; /* a member of 64 bytes */

#ifdef TEST_ASAN
    ASAN_POISON_MEMORY_REGION(member, 64);
    assert_true(__asan_address_is_poisoned(member));
    assert_true(__asan_address_is_poisoned(member + 63));
    assert_false(__asan_address_is_poisoned(member - 1));
    assert_false(__asan_address_is_poisoned(member + 64));
#endif
#ifdef SP_HAVE_VALGRIND
    unsigned char vbits[64];
    VALGRIND_MAKE_MEM_NOACCESS(member, 64);
    if (RUNNING_ON_VALGRIND) {
        /* 3: part of the range is not addressable (reported as a result, not as an error). */
        assert_int_equal(VALGRIND_GET_VBITS(member, vbits, 64), 3);
        assert_int_equal(VALGRIND_GET_VBITS(member - 64, vbits, 64), 1);
    }
#endif

    /* Decommitted and committed again, the page is fresh memory: nothing poisoned. */
    assert_true(sp__os_decommit(b, 2u * page));
    assert_true(sp__os_commit(b, 2u * page));
#ifdef TEST_ASAN
    assert_false(__asan_address_is_poisoned(member));
    assert_false(__asan_address_is_poisoned(member + 63));
#endif
#ifdef SP_HAVE_VALGRIND
    if (RUNNING_ON_VALGRIND) {
        assert_int_equal(VALGRIND_GET_VBITS(member, vbits, 64), 1);
        for (int k = 0; k < 64; k++) assert_int_equal(vbits[k], 0); /* 0: defined */
    }
#endif
    memset(member, 7, 64); /* an error under either tool if anything stayed poisoned */
    assert_int_equal(member[0], 7);

    /* Release leaves ASan's shadow alone (see a_release_costs_nothing_per_reserved_byte): the
       caller unpoisons what it poisoned first, as the pool does before it gives memory back. */
#ifdef TEST_ASAN
    ASAN_POISON_MEMORY_REGION(member, 64);
    ASAN_UNPOISON_MEMORY_REGION(member, 64);
#endif
    sp__os_release(base, size);
}

static void forced_failures_count_down_and_stay(void **state) {
    (void)state;
    if (!sp__os_has_virtual_memory()) skip();
    size_t page = sp__os_page_size();
    sp__os_fail_reserve_after(1);
    void *first = sp__os_reserve(16u * page);
    assert_non_null(first);
    assert_null(sp__os_reserve(16u * page));
    assert_null(sp__os_reserve(page));
    sp__os_fail_reserve_after(-1);
    void *second = sp__os_reserve(16u * page);
    assert_non_null(second);

    sp__os_fail_commit_after(2);
    unsigned char *b = (unsigned char *)first;
    assert_true(sp__os_commit(b, page));
    assert_true(sp__os_commit(b + page, page));
    assert_false(sp__os_commit(b + 2u * page, page));
    assert_false(sp__os_commit(second, page));
    sp__os_fail_commit_after(-1);
    assert_true(sp__os_commit(b + 2u * page, page));
    b[3u * page - 1u] = 1;

    /* Through the resolved platform functions too: that is how a pool calls them. */
    sp_allocator none = {0};
    sp__vm vm;
    assert_null(sp__allocator_vm(&none, &vm));
    sp__os_fail_reserve_after(0);
    assert_null(vm.reserve(page, vm.user));
    sp__os_fail_reserve_after(-1);
    sp__os_fail_commit_after(0);
    assert_false(vm.commit(second, page, vm.user));
    sp__os_fail_commit_after(-1);
    assert_true(vm.commit(second, page, vm.user));

    sp__os_release(first, 16u * page);
    sp__os_release(second, 16u * page);
}

/* ---- sp_allocator → a pool's virtual memory ---------------------------------------------- */

typedef struct custom_vm {
    int reserves, commits, decommits, releases;
} custom_vm;

static void *custom_reserve(size_t size, void *user) {
    ((custom_vm *)user)->reserves++;
    return sp__os_reserve(size);
}
static bool custom_commit(void *addr, size_t size, void *user) {
    ((custom_vm *)user)->commits++;
    return sp__os_commit(addr, size);
}
static void custom_decommit(void *addr, size_t size, void *user) {
    ((custom_vm *)user)->decommits++;
    (void)sp__os_decommit(addr, size);
}
static void custom_release(void *addr, size_t size, void *user) {
    ((custom_vm *)user)->releases++;
    sp__os_release(addr, size);
}

static void a_zero_allocator_means_the_platforms_virtual_memory(void **state) {
    (void)state;
    sp__vm vm;
    sp_allocator none = {0};
    assert_null(sp__allocator_vm(&none, &vm));
    /* The registry passes its pools the library's defaults, resolved: the same. */
    sp_allocator library = {0};
    library.alloc = sp__default_alloc;
    library.free = sp__default_free;
    sp__vm from_library;
    assert_null(sp__allocator_vm(&library, &from_library));
    if (!sp__os_has_virtual_memory()) {
        assert_null(vm.reserve);
        assert_null(from_library.reserve);
        return;
    }
    assert_non_null(vm.reserve);
    assert_non_null(vm.commit);
    assert_non_null(vm.decommit);
    assert_non_null(vm.release);
    assert_ptr_equal(from_library.reserve, vm.reserve);
    assert_ptr_equal(from_library.release, vm.release);

    size_t page = sp__os_page_size();
    unsigned char *b = (unsigned char *)vm.reserve(64u * page, vm.user);
    assert_non_null(b);
    assert_true(vm.commit(b, page, vm.user));
    b[0] = 9;
    vm.decommit(b, page, vm.user);
    assert_true(vm.commit(b, page, vm.user));
    assert_int_equal(b[0], 0);
    vm.release(b, 64u * page, vm.user);
}

static void a_custom_alloc_without_virtual_memory_gets_the_fallback(void **state) {
    (void)state;
    test_alloc ta;
    sp_allocator a = test_alloc_make(&ta);
    sp__vm vm;
    assert_null(sp__allocator_vm(&a, &vm));
    assert_null(vm.reserve);
    assert_null(vm.commit);
    assert_null(vm.decommit);
    assert_null(vm.release);
}

static void all_four_functions_are_the_allocators_own(void **state) {
    (void)state;
    custom_vm counts = {0};
    sp_allocator a = {0};
    a.user = &counts;
    a.reserve = custom_reserve;
    a.commit = custom_commit;
    a.decommit = custom_decommit;
    a.release = custom_release;
    sp__vm vm;
    assert_null(sp__allocator_vm(&a, &vm)); /* alloc/free zero: the C library's, allowed */
    assert_ptr_equal(vm.reserve, custom_reserve);
    assert_ptr_equal(vm.commit, custom_commit);
    assert_ptr_equal(vm.decommit, custom_decommit);
    assert_ptr_equal(vm.release, custom_release);
    assert_ptr_equal(vm.user, &counts);

    /* With a custom alloc/free as well. */
    test_alloc ta;
    sp_allocator both = test_alloc_make(&ta);
    both.reserve = custom_reserve;
    both.commit = custom_commit;
    both.decommit = custom_decommit;
    both.release = custom_release;
    assert_null(sp__allocator_vm(&both, &vm));
    assert_ptr_equal(vm.reserve, custom_reserve);
    assert_ptr_equal(vm.user, both.user);
}

static void some_but_not_all_four_is_refused(void **state) {
    (void)state;
    for (unsigned mask = 1; mask < 15u; mask++) {
        sp_allocator a = {0};
        if (mask & 1u) a.reserve = custom_reserve;
        if (mask & 2u) a.commit = custom_commit;
        if (mask & 4u) a.decommit = custom_decommit;
        if (mask & 8u) a.release = custom_release;
        sp__vm vm;
        memset(&vm, 0xFF, sizeof vm);
        const char *why = sp__allocator_vm(&a, &vm);
        assert_non_null(why);
        assert_non_null(strstr(why, "all four"));
        assert_null(vm.reserve); /* nothing half-resolved */
        assert_null(vm.commit);
        assert_null(vm.decommit);
        assert_null(vm.release);
    }
}

static void alloc_without_free_is_refused(void **state) {
    (void)state;
    sp_allocator a = {0};
    a.alloc = sp__default_alloc;
    sp__vm vm;
    const char *why = sp__allocator_vm(&a, &vm);
    assert_non_null(why);
    assert_non_null(strstr(why, "alloc and free"));
    a.alloc = NULL;
    a.free = sp__default_free;
    assert_non_null(sp__allocator_vm(&a, &vm));
}

static void a_registry_refuses_some_but_not_all_four(void **state) {
    (void)state;
    test_log tl = {0};
    sp_registry_desc d = {0};
    d.logger = test_log_make(&tl);
    d.allocator.reserve = custom_reserve;
    d.allocator.release = custom_release;
    assert_null(sp_registry_create_with(&d));
    assert_int_equal(tl.errors, 1);
    assert_true(test_log_last_has(&tl, "all four of reserve, commit, decommit and release"));

    custom_vm counts = {0};
    d.allocator.user = &counts;
    d.allocator.commit = custom_commit;
    d.allocator.decommit = custom_decommit;
    sp_registry *reg = sp_registry_create_with(&d);
    assert_non_null(reg);
    assert_int_equal(tl.errors, 1);
    sp_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(page_size_is_a_power_of_two),
        cmocka_unit_test(a_release_costs_nothing_per_reserved_byte),
        cmocka_unit_test(a_large_reservation_commits_in_pieces),
        cmocka_unit_test(decommitted_memory_reads_zero_when_committed_again),
        cmocka_unit_test(memory_tools_watch_committed_reserved_memory),
        cmocka_unit_test(forced_failures_count_down_and_stay),
        cmocka_unit_test(a_zero_allocator_means_the_platforms_virtual_memory),
        cmocka_unit_test(a_custom_alloc_without_virtual_memory_gets_the_fallback),
        cmocka_unit_test(all_four_functions_are_the_allocators_own),
        cmocka_unit_test(some_but_not_all_four_is_refused),
        cmocka_unit_test(alloc_without_free_is_refused),
        cmocka_unit_test(a_registry_refuses_some_but_not_all_four),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
