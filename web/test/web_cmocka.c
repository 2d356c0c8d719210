/* SPDX-License-Identifier: Zlib */
/* The cmocka stand-in's runner; see cmocka.h beside it. Output follows cmocka's:
   "[ RUN      ] name", "[       OK ] name" or "[  FAILED  ] name", then a summary line. */
#include "cmocka.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf web_test_jump;
static int web_test_running;
static const char *web_test_filter;

void print_error(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vfprintf(stderr, format, ap);
    va_end(ap);
}

void print_message(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vprintf(format, ap);
    va_end(ap);
}

void _fail(const char *file, int line) {
    fprintf(stderr, "%s:%d: failure\n", file, line);
    if (web_test_running) longjmp(web_test_jump, 1);
    abort();
}

/* A test that decides at run time it cannot run here (cmocka's skip()). */
void _web_skip(const char *file, int line) {
    printf("%s:%d: skipped\n", file, line);
    if (web_test_running) longjmp(web_test_jump, 2);
    abort();
}

void _web_assert(int ok, const char *expr, const char *file, int line) {
    if (ok) return;
    fprintf(stderr, "%s is false\n", expr);
    _fail(file, line);
}

void _web_assert_int(uintmax_t a, uintmax_t b, int want_equal, const char *ea, const char *eb,
                     const char *file, int line) {
    if ((a == b) == (want_equal != 0)) return;
    fprintf(stderr, "%s (%" PRIuMAX ", %" PRIdMAX ") %s %s (%" PRIuMAX ", %" PRIdMAX ")\n", ea, a,
            (intmax_t)a, want_equal ? "!=" : "==", eb, b, (intmax_t)b);
    _fail(file, line);
}

void _web_assert_ptr(const void *a, const void *b, int want_equal, const char *ea,
                     const char *eb, const char *file, int line) {
    if ((a == b) == (want_equal != 0)) return;
    fprintf(stderr, "%s (%p) %s %s (%p)\n", ea, a, want_equal ? "!=" : "==", eb, b);
    _fail(file, line);
}

void _web_assert_string(const char *a, const char *b, int want_equal, const char *file,
                        int line) {
    int equal = a && b ? strcmp(a, b) == 0 : a == b;
    if (equal == (want_equal != 0)) return;
    fprintf(stderr, "\"%s\" %s \"%s\"\n", a ? a : "(null)", want_equal ? "!=" : "==",
            b ? b : "(null)");
    _fail(file, line);
}

void _web_assert_memory(const void *a, const void *b, size_t n, const char *file, int line) {
    if (memcmp(a, b, n) == 0) return;
    fprintf(stderr, "%zu bytes differ\n", n);
    _fail(file, line);
}

/* The suites' tmpfile() (web/CMakeLists.txt compiles them with -Dtmpfile=web_tmpfile). Some
   capture stderr by dup2-ing a tmpfile onto fd 2; emscripten 3.1.6's dup2 reopens the file by
   its path, which musl's tmpfile (created, then unlinked) no longer has, so the lines went
   nowhere. A named file in the in-memory /tmp, gone when the program ends, can be reopened. */
FILE *web_tmpfile(void) {
    static unsigned serial;
    char path[64];
    snprintf(path, sizeof path, "/tmp/web_cmocka_%u", serial++);
    return fopen(path, "w+");
}

void cmocka_set_test_filter(const char *pattern) { web_test_filter = pattern; }

/* cmocka's filter is a glob; the suites use plain names, and a '*' ends a prefix. */
static int web_test_selected(const char *name) {
    if (!web_test_filter) return 1;
    const char *star = strchr(web_test_filter, '*');
    if (!star) return strcmp(name, web_test_filter) == 0;
    return strncmp(name, web_test_filter, (size_t)(star - web_test_filter)) == 0;
}

/* The reason `name` is skipped ("name reason|name reason|..."), or NULL. */
static const char *web_test_skip_reason(const char *skip, const char *name, size_t *len) {
    size_t n = strlen(name);
    for (const char *p = skip; p && *p;) {
        const char *end = strchr(p, '|');
        size_t entry = end ? (size_t)(end - p) : strlen(p);
        if (entry > n && strncmp(p, name, n) == 0 && p[n] == ' ') {
            *len = entry - n - 1;
            return p + n + 1;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

int _web_run_group(const char *name, const struct CMUnitTest *tests, size_t count,
                   CMFixtureFunction setup, CMFixtureFunction teardown, const char *skip) {
    void *group_state = NULL;
    if (setup && setup(&group_state) != 0) {
        fprintf(stderr, "[  ERROR   ] %s: group setup failed\n", name);
        return 1;
    }
    int failed = 0, ran = 0, skipped = 0;
    printf("[==========] %s: running %zu test(s).\n", name, count);
    for (size_t i = 0; i < count; i++) {
        if (!web_test_selected(tests[i].name)) continue;
        size_t reason_len = 0;
        const char *reason = web_test_skip_reason(skip, tests[i].name, &reason_len);
        if (reason) {
            printf("[  SKIPPED ] %s: %.*s\n", tests[i].name, (int)reason_len, reason);
            skipped++;
            continue;
        }
        ran++;
        printf("[ RUN      ] %s\n", tests[i].name);
        fflush(stdout);
        void *state = group_state;
        web_test_running = 1;
        switch (setjmp(web_test_jump)) { /* 0 first, then 1 from a failure, 2 from skip() */
        case 0:
            tests[i].test_func(&state);
            printf("[       OK ] %s\n", tests[i].name);
            break;
        case 2:
            ran--;
            skipped++;
            printf("[  SKIPPED ] %s\n", tests[i].name);
            break;
        default:
            failed++;
            printf("[  FAILED  ] %s\n", tests[i].name);
            break;
        }
        web_test_running = 0;
        fflush(stdout);
    }
    if (teardown) teardown(&group_state);
    printf("[==========] %s: %d test(s) run.\n[  PASSED  ] %d test(s).\n", name, ran, ran - failed);
    if (skipped) printf("[  SKIPPED ] %d test(s).\n", skipped);
    if (failed) printf("[  FAILED  ] %d test(s).\n", failed);
    return failed;
}
