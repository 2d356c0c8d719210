/* Implementation of the shared test fixtures declared in testutil.h. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void *counting_alloc(size_t size, size_t align, void *user) {
    test_alloc *ta = (test_alloc *)user;
    ta->allocs++;
    if (ta->fail_at != 0 && ta->allocs == ta->fail_at) return NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
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
    free(ptr);
}

sp_allocator test_alloc_make(test_alloc *ta) {
    sp_allocator a = {counting_alloc, counting_free, ta};
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

static void hook_create(void *item, void *user) {
    (void)item;
    ((test_hooks *)user)->created++;
}
static void hook_acquire(void *item, const void *arg, void *user) {
    (void)item;
    test_hooks *h = (test_hooks *)user;
    h->acquired++;
    h->last_arg = arg;
}
static void hook_release(void *item, void *user) {
    (void)item;
    ((test_hooks *)user)->released++;
}
static void hook_dispose(void *item, void *user) {
    (void)item;
    ((test_hooks *)user)->disposed++;
}

void test_hooks_install(sp_desc *desc, test_hooks *hooks) {
    desc->create = hook_create;
    desc->on_acquire = hook_acquire;
    desc->on_release = hook_release;
    desc->dispose = hook_dispose;
    desc->user = hooks;
}
