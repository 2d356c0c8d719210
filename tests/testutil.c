/* SPDX-License-Identifier: Zlib */
/* Implementation of the shared test fixtures declared in testutil.h. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign under -std=c11 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void *counting_alloc(size_t size, size_t align, void *user) {
    test_alloc *ta = (test_alloc *)user;
    ta->allocs++;
    if (ta->fail_at != 0 && ta->allocs == ta->fail_at) return NULL;
    /* the contract (sp_allocator in spawnpool.h): a size, and a power of two from sizeof(void *) */
    assert_true(size > 0 && align >= sizeof(void *) && (align & (align - 1)) == 0);
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0) return NULL;
    memset(p, TEST_ALLOC_FRESH, size);
    ta->live_bytes += size;
    ta->live_blocks++;
    return p;
}

static void counting_free(void *ptr, size_t size, void *user) {
    test_alloc *ta = (test_alloc *)user;
    if (!ptr) return;
    ta->frees++;
    ta->live_bytes -= size;
    ta->live_blocks--;
    memset(ptr, TEST_ALLOC_FREED, size);
    free(ptr);
}

sp_allocator test_alloc_make(test_alloc *ta) {
    sp_allocator a = {.alloc = counting_alloc, .free = counting_free, .user = ta};
    return a;
}

static void capture_log(sp_log_level level, const char *pool_name, const char *message, void *user) {
    test_log *tl = (test_log *)user;
    if (level == SP_LOG_ERROR) tl->errors++;
    else if (level == SP_LOG_WARN) tl->warnings++;
    else tl->infos++;
    strncpy(tl->last_pool, pool_name ? pool_name : "", sizeof tl->last_pool - 1);
    tl->last_pool[sizeof tl->last_pool - 1] = '\0';
    strncpy(tl->last_message, message ? message : "", sizeof tl->last_message - 1);
    tl->last_message[sizeof tl->last_message - 1] = '\0';
}

sp_logger test_log_make(test_log *tl) {
    sp_logger l = {capture_log, tl};
    return l;
}

int test_log_last_has(const test_log *tl, const char *needle) {
    return strstr(tl->last_message, needle) != NULL;
}

static void trace_add(test_hooks *h, char c) {
    if (h->trace_len + 1 < sizeof h->trace) {
        h->trace[h->trace_len++] = c;
        h->trace[h->trace_len] = '\0';
    }
}

static void hook_create(void *item, void *user) {
    test_hooks *h = (test_hooks *)user;
    h->created++;
    h->last_created = item;
    for (size_t i = 0; i < h->item_size; i++) {
        if (((const unsigned char *)item)[i] != 0) {
            h->create_saw_dirty++;
            break;
        }
    }
    trace_add(h, 'C');
}
static void hook_acquire(void *item, const void *arg, void *user) {
    test_hooks *h = (test_hooks *)user;
    h->acquired++;
    h->last_arg = arg;
    h->last_acquired = item;
    trace_add(h, 'A');
}
static void hook_release(void *item, void *user) {
    test_hooks *h = (test_hooks *)user;
    h->released++;
    h->last_released = item;
    trace_add(h, 'R');
}
static void hook_dispose(void *item, void *user) {
    test_hooks *h = (test_hooks *)user;
    h->disposed++;
    h->last_disposed = item;
    trace_add(h, 'D');
}

void test_hooks_install(sp_desc *desc, test_hooks *hooks) {
    desc->create = hook_create;
    desc->on_acquire = hook_acquire;
    desc->on_release = hook_release;
    desc->dispose = hook_dispose;
    desc->user = hooks;
}

void test_hooks_trace_reset(test_hooks *hooks) {
    hooks->trace_len = 0;
    hooks->trace[0] = '\0';
}

sp_desc test_env_desc(test_env *env, const char *name, size_t item_size) {
    memset(env, 0, sizeof *env);
    sp_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.name = name;
    desc.item_size = item_size;
    desc.allocator = test_alloc_make(&env->alloc);
    desc.logger = test_log_make(&env->log);
    test_hooks_install(&desc, &env->hooks);
    env->hooks.item_size = item_size;
    return desc;
}

void test_stats_expect(const sp_pool *pool, test_counts want, const char *file, int line) {
    sp_stats s;
    memset(&s, 0x5A, sizeof s);
    sp_stats_get(pool, &s);
    int bad = 0;
#define SP__CHECK(field)                                                                      \
    if ((uint64_t)s.field != (uint64_t)want.field) {                                          \
        print_error("stats.%s is %llu, expected %llu\n", #field, (unsigned long long)s.field, \
                    (unsigned long long)want.field);                                          \
        bad = 1;                                                                              \
    }
    SP__CHECK(size)
    SP__CHECK(leased)
    SP__CHECK(free)
    SP__CHECK(peak_leased)
    SP__CHECK(created)
    SP__CHECK(disposed)
    SP__CHECK(acquired)
    SP__CHECK(released)
    SP__CHECK(reclaimed)
    SP__CHECK(dropped)
    SP__CHECK(grown_past_max)
#undef SP__CHECK
    if (bad) _fail(file, line);
}

void test_alloc_expect_clean(const test_alloc *ta, const char *file, int line) {
    if (ta->live_bytes != 0 || ta->live_blocks != 0) {
        print_error("allocator still holds %zu bytes in %zu blocks (%llu allocs, %llu frees)\n",
                    ta->live_bytes, ta->live_blocks, (unsigned long long)ta->allocs,
                    (unsigned long long)ta->frees);
        _fail(file, line);
    }
}

uint32_t test_rand(uint32_t *state) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

void test_scene_open(test_scene *s) {
    memset(s, 0, sizeof *s);
    sp_registry_desc rd = {.allocator = test_alloc_make(&s->alloc), .logger = test_log_make(&s->log)};
    s->reg = sp_registry_create_with(&rd);
    assert_non_null(s->reg);
}

int test_scene_lines(const test_scene *s) { return s->log.errors + s->log.warnings; }
