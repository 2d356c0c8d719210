/* Shared test fixtures: an allocator that counts (and can fail on a chosen call), a logger that
   captures lines instead of printing them, and hooks that count their calls. Every test file
   includes this after cmocka's headers. */
#ifndef SP_TESTUTIL_H
#define SP_TESTUTIL_H

#include <spawnpool.h>

#include <stddef.h>
#include <stdint.h>

/* Counting allocator. fail_at = N makes the N-th alloc call (1-based, counted from the last
   reset) return NULL; 0 never fails. live_bytes must be back to 0 when every pool is gone. */
typedef struct test_alloc {
    uint64_t allocs, frees;
    uint64_t fail_at;
    size_t live_bytes;
    size_t live_blocks;
} test_alloc;

sp_allocator test_alloc_make(test_alloc *ta);

/* Capturing logger: keeps the count per level and the last line. */
typedef struct test_log {
    int errors, warnings, infos;
    char last_pool[64];
    char last_message[512];
} test_log;

sp_logger test_log_make(test_log *tl);
/* True when the last captured message contains needle. */
int test_log_last_has(const test_log *tl, const char *needle);

/* Hook counters; pass &counters as desc.user with test_hooks_install. */
typedef struct test_hooks {
    int created, acquired, released, disposed;
    const void *last_arg;
} test_hooks;

void test_hooks_install(sp_desc *desc, test_hooks *hooks);

#endif
