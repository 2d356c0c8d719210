/* SPDX-License-Identifier: Zlib */
/* A thread-safe pool on one thread behaves as a plain pool: the same operations give the same
   results, refusals, log lines and counters (a differential run against a plain pool). Where the
   build has no threads (single-threaded WebAssembly) creation is refused with a line instead.
   No threads here, so this suite runs on every platform. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

#include <string.h>

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#  define NO_THREADS 1
#else
#  define NO_THREADS 0
#endif

static int hooks_seen;
static void on_rel(void *item, void *user) {
    (void)item, (void)user;
    hooks_seen++;
}

/* hooked: with on_release, every call of the thread-safe pool takes its general paths;
   without, its fast paths (the magazine pop and push, the fast range's release and resolve),
   which must refuse and count exactly as the general ones. */
static void same_results(bool hooked) {
    test_log plain_log, ts_log;
    memset(&plain_log, 0, sizeof plain_log);
    memset(&ts_log, 0, sizeof ts_log);
    sp_desc d;
    memset(&d, 0, sizeof d);
    d.name = "same";
    d.item_size = 48;
    d.max = 200;
    d.on_release = hooked ? on_rel : NULL;
    d.logger = test_log_make(&plain_log);
    sp_pool *plain = sp_pool_create(&d);
    d.threads = SP_THREADS_SAFE;
    d.magazine_size = 4;
    d.logger = test_log_make(&ts_log);
    sp_pool *ts = sp_pool_create(&d);
    assert_non_null(plain);
    if (NO_THREADS) {
        assert_null(ts);
        assert_int_equal(ts_log.errors, 1);
        assert_true(test_log_last_has(&ts_log, "no threads"));
        sp_pool_destroy(plain);
        return;
    }
    assert_non_null(ts);
    enum { N = 300 };
    void *a[N], *b[N];
    sp_handle ha[N], hb[N];
    int held = 0;
    uint32_t seed = 2024;
    for (int step = 0; step < 20000; step++) {
        uint32_t op = test_rand(&seed) % 8u;
        if (op < 3 && held < N) { /* acquire, with a handle */
            a[held] = sp_acquire_handle(plain, NULL, &ha[held]);
            b[held] = sp_acquire_handle(ts, NULL, &hb[held]);
            assert_int_equal(a[held] != NULL, b[held] != NULL);
            if (a[held]) held++;
        } else if (op < 6 && held > 0) { /* release one, keep its handle to resolve stale */
            int k = (int)(test_rand(&seed) % (uint32_t)held);
            assert_int_equal(sp_release(plain, a[k]), sp_release(ts, b[k]));
            assert_null(sp_resolve(plain, ha[k]));
            assert_null(sp_resolve(ts, hb[k]));
            /* a double release and a foreign pointer: refused alike */
            assert_int_equal(sp_release(plain, a[k]), sp_release(ts, b[k]));
            assert_int_equal(sp_release(plain, (char *)a[k] + 1), sp_release(ts, (char *)b[k] + 1));
            held--;
            a[k] = a[held], b[k] = b[held], ha[k] = ha[held], hb[k] = hb[held];
        } else if (op == 6 && held > 0) { /* resolve a live one */
            int k = (int)(test_rand(&seed) % (uint32_t)held);
            assert_ptr_equal(sp_resolve(plain, ha[k]), a[k]);
            assert_ptr_equal(sp_resolve(ts, hb[k]), b[k]);
            assert_true(sp_is_leased(ts, b[k]));
            assert_int_equal(sp_handle_of(ts, b[k]).id, hb[k].id);
        } else if (op == 7) { /* the counters agree (the thread-safe ones summed) */
            sp_stats sa, sb;
            sp_stats_get(plain, &sa);
            sp_stats_get(ts, &sb);
            assert_int_equal(sa.leased, sb.leased);
            assert_int_equal(sa.acquired, sb.acquired);
            assert_int_equal(sa.released, sb.released);
            assert_int_equal(sa.dropped, sb.dropped);
            assert_true(sb.peak_leased <= sa.peak_leased); /* seen at refills and stats only */
            assert_true(sb.size <= 200);
        }
    }
    assert_int_equal(plain_log.warnings, ts_log.warnings);
    assert_int_equal(plain_log.errors, ts_log.errors);
    assert_true(sp__pool_check(ts));
    int n_plain = 0, n_ts = 0;
    for (void *m = sp_first(plain); m; m = sp_next(plain, m)) n_plain++;
    for (void *m = sp_first(ts); m; m = sp_next(ts, m)) n_ts++;
    assert_int_equal(n_plain, n_ts);
    hooks_seen = 0;
    assert_int_equal(sp_release_all(plain), sp_release_all(ts));
    assert_int_equal(hooks_seen, hooked ? 2 * held : 0);
    sp_pool_destroy(plain);
    sp_pool_destroy(ts);
}

static void same_results_as_a_plain_pool(void **state) {
    (void)state;
    same_results(true);
}

static void same_results_as_a_plain_pool_on_the_fast_paths(void **state) {
    (void)state;
    same_results(false);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_results_as_a_plain_pool),
        cmocka_unit_test(same_results_as_a_plain_pool_on_the_fast_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
