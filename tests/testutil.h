/* SPDX-License-Identifier: Zlib */
/* Shared test fixtures: an allocator that counts (and can fail on a chosen call), a logger that
   captures lines instead of printing them, hooks that count their calls, and a one-line check of
   every stats counter. Every test file includes this after cmocka's headers. */
#ifndef SP_TESTUTIL_H
#define SP_TESTUTIL_H

#include <spawnpool.h>

#include <stddef.h>
#include <stdint.h>

/* Counting allocator. fail_at = N makes the N-th alloc call (1-based, counted from the last
   reset) return NULL; 0 never fails. live_bytes must be back to 0 when every pool is gone.
   New blocks are filled with TEST_ALLOC_FRESH and freed ones with TEST_ALLOC_FREED, so a pool
   that forgets to zero a member, or reads a chunk it gave back, shows it even without ASan. */
typedef struct test_alloc {
    uint64_t allocs, frees;
    uint64_t fail_at;
    size_t live_bytes;
    size_t live_blocks;
} test_alloc;

/* The bits of sp_handle.id (include/spawnpool.h, HANDLES): life | tag | slot index. */
#define TEST_LIFE_SHIFT 41u
#define TEST_TAG_SHIFT 24u
#define TEST_TAG_MASK 0x1FFFFu
#define TEST_SLOT_MASK 0xFFFFFFu
#define TEST_LIFE_MAX ((1u << 23) - 1u)

#define TEST_ALLOC_FRESH 0xA5
#define TEST_ALLOC_FREED 0xDD

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

/* Hook counters; pass &counters as desc.user with test_hooks_install. Each hook also records the
   last item it saw and appends a letter to trace (C create, A acquire, R release, D dispose; the
   trace stops growing when full), so tests can check the order hooks ran in. With item_size set,
   create checks that the member's memory is all zero and counts it in create_saw_dirty if not. */
typedef struct test_hooks {
    int created, acquired, released, disposed;
    const void *last_arg;
    const void *last_created, *last_acquired, *last_released, *last_disposed;
    size_t item_size;
    int create_saw_dirty;
    char trace[128];
    size_t trace_len;
} test_hooks;

void test_hooks_install(sp_desc *desc, test_hooks *hooks);
/* Empties the trace. */
void test_hooks_trace_reset(test_hooks *hooks);

/* Everything a typical test needs in one place. */
typedef struct test_env {
    test_alloc alloc;
    test_log log;
    test_hooks hooks;
} test_env;

/* Zeroes env and returns a desc named `name` with item_size set and env's allocator, logger and
   counting hooks (which check that new members are zeroed) installed. */
sp_desc test_env_desc(test_env *env, const char *name, size_t item_size);

/* A registry whose lines, and its pools' lines, go to one capturing logger, and whose tables and
   pools come from one counting allocator: the fixture of the registry suites. */
typedef struct test_scene {
    sp_registry *reg;
    test_alloc alloc;
    test_log log;
} test_scene;

/* Zeroes s and creates its registry (a failed create fails the test). */
void test_scene_open(test_scene *s);
/* Warnings and errors logged so far. */
int test_scene_lines(const test_scene *s);

/* Expected values of the stats counters. Every field is checked; fields left out must be 0.
   (bytes and max are not here: tests check those where they matter.) */
typedef struct test_counts {
    size_t size, leased, free, peak_leased;
    uint64_t created, disposed, acquired, released, reclaimed, dropped, grown_past_max;
} test_counts;

void test_stats_expect(const sp_pool *pool, test_counts want, const char *file, int line);
/* EXPECT_STATS(pool, .size = 2, .leased = 1, ...): fails at the caller's line, listing every
   counter that differs. */
#define EXPECT_STATS(pool, ...) \
    test_stats_expect((pool), (test_counts){__VA_ARGS__}, __FILE__, __LINE__)

/* Fails at the caller's line unless every byte of the allocator has been given back. */
void test_alloc_expect_clean(const test_alloc *ta, const char *file, int line);
#define EXPECT_NO_LEAK(ta) test_alloc_expect_clean((ta), __FILE__, __LINE__)

/* Deterministic xorshift generator for stress tests; never seed with 0. */
uint32_t test_rand(uint32_t *state);

#endif
