/* SPDX-License-Identifier: Zlib */
/* Fixtures of the thread suites (test_threads*.c): a logger and an allocator that several
   threads may call at once, a member that records who holds it, a thread-safe descriptor. */
#ifndef SP_THREADS_UTIL_H
#define SP_THREADS_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixtures that several threads may call at once ------------------------------------ */

typedef struct tlog {
    atomic_int warnings, errors;
    char last[256]; /* written under the mutex */
    pthread_mutex_t m;
} tlog;

static inline void tlog_fn(sp_log_level level, const char *pool, const char *message, void *user) {
    tlog *l = (tlog *)user;
    (void)pool;
    if (level == SP_LOG_ERROR) atomic_fetch_add(&l->errors, 1);
    if (level == SP_LOG_WARN) atomic_fetch_add(&l->warnings, 1);
    pthread_mutex_lock(&l->m);
    snprintf(l->last, sizeof l->last, "%s", message);
    pthread_mutex_unlock(&l->m);
}

static tlog g_log = {0, 0, "", PTHREAD_MUTEX_INITIALIZER};

static inline void log_reset(void) {
    atomic_store(&g_log.warnings, 0);
    atomic_store(&g_log.errors, 0);
    g_log.last[0] = '\0';
}

static atomic_llong g_live_bytes;

static inline void *talloc(size_t size, size_t align, void *user) {
    (void)user;
    void *p = NULL; /* the contract: align is a power of two, at least sizeof(void *) */
    if (posix_memalign(&p, align, size) != 0) return NULL;
    atomic_fetch_add(&g_live_bytes, (long long)size);
    return p;
}

static inline void tfree(void *ptr, size_t size, void *user) {
    (void)user;
    atomic_fetch_sub(&g_live_bytes, (long long)size);
    free(ptr);
}

/* A member: who holds it (0: nobody; the model check's ownership invariant) and its handle. */
typedef struct member {
    atomic_int owner;
    atomic_ullong id;
    int hook_thread;
    char pad[40];
} member;

static inline sp_desc ts_desc(const char *name) {
    sp_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.item_size = sizeof(member);
    d.threads = SP_THREADS_SAFE;
    d.magazine_size = 8; /* small: the depot and the loose list get exercised */
    d.logger.log = tlog_fn;
    d.logger.user = &g_log;
    return d;
}

/* The same with the counting allocator: no virtual memory, so the pool grows in the fallback's
   ranges (whatever the build), and g_live_bytes must be back to 0 once it is destroyed. */
static inline sp_desc ts_desc_counted(const char *name) {
    sp_desc d = ts_desc(name);
    d.allocator.alloc = talloc;
    d.allocator.free = tfree;
    return d;
}

static inline void run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size) {
    pthread_t t[8];
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * arg_size), 0);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static inline uint32_t rnd(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Takes the member for thread `me`: nobody may hold it. */
static inline void take(member *m, int me, atomic_int *violations) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&m->owner, &expected, me)) atomic_fetch_add(violations, 1);
}

static inline void give_up(member *m, int me, atomic_int *violations) {
    int expected = me;
    if (!atomic_compare_exchange_strong(&m->owner, &expected, 0)) atomic_fetch_add(violations, 1);
}

#endif
