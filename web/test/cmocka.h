/* SPDX-License-Identifier: Zlib */
/* cmocka.h -- a tiny stand-in for cmocka, so that the test suites in tests/ run unchanged under
   WebAssembly (make web, make test), where cmocka itself is not packaged. It provides exactly
   what the suites use: the assert_* macros, fail/fail_msg, skip, print_error, cmocka_unit_test,
   cmocka_run_group_tests(_name) and cmocka_set_test_filter. A failed assertion prints
   file:line and the values, then jumps out of the test (setjmp/longjmp, as cmocka does); the
   group's result is the number of failed tests, which main returns, so node exits non-zero.
   The runner is web_cmocka.c, linked into every test executable. */
#ifndef WEB_CMOCKA_SHIM_H
#define WEB_CMOCKA_SHIM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*CMUnitTestFunction)(void **state);
typedef int (*CMFixtureFunction)(void **state);

struct CMUnitTest {
    const char *name;
    CMUnitTestFunction test_func;
};

#define cmocka_unit_test(f) {#f, f}

/* Implemented in web/test/web_cmocka.c. */
void _fail(const char *file, int line);
void _web_skip(const char *file, int line);
void print_error(const char *format, ...);
void print_message(const char *format, ...);
void _web_assert(int ok, const char *expr, const char *file, int line);
void _web_assert_int(uintmax_t a, uintmax_t b, int want_equal, const char *ea, const char *eb,
                     const char *file, int line);
void _web_assert_ptr(const void *a, const void *b, int want_equal, const char *ea,
                     const char *eb, const char *file, int line);
void _web_assert_string(const char *a, const char *b, int want_equal, const char *file,
                        int line);
void _web_assert_memory(const void *a, const void *b, size_t n, const char *file, int line);
int _web_run_group(const char *name, const struct CMUnitTest *tests, size_t count,
                   CMFixtureFunction setup, CMFixtureFunction teardown, const char *skip);
void cmocka_set_test_filter(const char *pattern);
/* tmpfile() in the suites, see web_cmocka.c. */
#include <stdio.h>
FILE *web_tmpfile(void);

#define assert_true(c) _web_assert(!!(c), #c, __FILE__, __LINE__)
#define assert_false(c) _web_assert(!(c), "!(" #c ")", __FILE__, __LINE__)
#define assert_non_null(p) _web_assert((p) != NULL, #p " != NULL", __FILE__, __LINE__)
#define assert_null(p) _web_assert((p) == NULL, #p " == NULL", __FILE__, __LINE__)
#define assert_int_equal(a, b) \
    _web_assert_int((uintmax_t)(a), (uintmax_t)(b), 1, #a, #b, __FILE__, __LINE__)
#define assert_int_not_equal(a, b) \
    _web_assert_int((uintmax_t)(a), (uintmax_t)(b), 0, #a, #b, __FILE__, __LINE__)
#define assert_ptr_equal(a, b) \
    _web_assert_ptr((const void *)(a), (const void *)(b), 1, #a, #b, __FILE__, __LINE__)
#define assert_ptr_not_equal(a, b) \
    _web_assert_ptr((const void *)(a), (const void *)(b), 0, #a, #b, __FILE__, __LINE__)
#define assert_string_equal(a, b) _web_assert_string((a), (b), 1, __FILE__, __LINE__)
#define assert_string_not_equal(a, b) _web_assert_string((a), (b), 0, __FILE__, __LINE__)
#define assert_memory_equal(a, b, n) _web_assert_memory((a), (b), (size_t)(n), __FILE__, __LINE__)
#define fail() _fail(__FILE__, __LINE__)
#define skip() _web_skip(__FILE__, __LINE__)
#define fail_msg(...) (print_error(__VA_ARGS__), print_error("\n"), _fail(__FILE__, __LINE__))

/* WEB_CMOCKA_SKIP: "name reason|name reason", tests this build skips and why (set per suite in
   web/CMakeLists.txt, for what a WebAssembly host cannot do); each is reported as skipped. */
#ifndef WEB_CMOCKA_SKIP
#  define WEB_CMOCKA_SKIP ""
#endif
#define cmocka_run_group_tests(tests, setup, teardown) \
    _web_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown, \
                   WEB_CMOCKA_SKIP)
#define cmocka_run_group_tests_name(name, tests, setup, teardown) \
    _web_run_group(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown, \
                   WEB_CMOCKA_SKIP)

#endif /* WEB_CMOCKA_SHIM_H */
