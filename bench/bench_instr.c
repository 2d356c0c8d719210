/* SPDX-License-Identifier: Zlib */
/*
    bench_instr.c -- spinstr, the fast paths in a loop for valgrind --tool=callgrind.

        valgrind --tool=callgrind --instr-atstart=no spinstr pair|handles|resolve|reclaim|floor K
        valgrind --tool=callgrind --instr-atstart=no [--cache-sim=yes] spinstr churn|churn1k K

    Setup runs uninstrumented; CALLGRIND_START_INSTRUMENTATION / STOP bracket exactly K
    operations, so callgrind's total divided by K is instructions per operation. Instruction
    counts repeat exactly from run to run, which is why regressions are judged by them rather
    than by nanoseconds. bench/instr.sh runs each mode twice: once counting only inside the
    library's functions (--toggle-collect), once counting the whole loop body.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "spawnpool.h"

enum { LIVE = 1000 };

static volatile uintptr_t instr_sink;

/* The floor, kept out of line so callgrind can attribute it like a library call. */
typedef struct instr_node {
    struct instr_node *next;
    char payload[56];
} instr_node;

static instr_node *instr_fl_head;

__attribute__((noinline)) void *instr_fl_acquire(void);
__attribute__((noinline)) void instr_fl_release(void *item);

__attribute__((noinline)) void *instr_fl_acquire(void) {
    instr_node *n = instr_fl_head;
    if (n != NULL) instr_fl_head = n->next;
    return n;
}

__attribute__((noinline)) void instr_fl_release(void *item) {
    instr_node *n = item;
    n->next = instr_fl_head;
    instr_fl_head = n;
}

static sp_pool *make_pool(sp_overflow policy) {
    sp_pool *pool = sp_pool_create(&(sp_desc){.name = "instr", .item_size = 64, .initial = LIVE,
                                              .max = LIVE, .overflow = policy});
    if (pool == NULL) {
        fprintf(stderr, "spinstr: sp_pool_create failed\n");
        exit(1);
    }
    return pool;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: spinstr pair|handles|resolve|reclaim|floor K\n"
                        "       spinstr churn|churn_floor|churn1k|churn_floor1k K [log2 live]\n");
        return 2;
    }
    const char *mode = argv[1];
    size_t k = (size_t)strtoull(argv[2], NULL, 10);
    uintptr_t acc = 0;
    if (strcmp(mode, "pair") == 0 || strcmp(mode, "handles") == 0) {
        bool handles = mode[0] == 'h';
        sp_pool *pool = make_pool(SP_OVERFLOW_DROP);
        /* Half the pool leased, so the pair runs in a pool that is neither empty nor full. */
        for (size_t i = 0; i < LIVE / 2; i++) (void)sp_acquire(pool);
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t i = 0; i < k; i++) {
            sp_handle h = {0};
            void *p = handles ? sp_acquire_handle(pool, NULL, &h) : sp_acquire(pool);
            acc += (uintptr_t)h.id;
            sp_release(pool, p);
        }
        CALLGRIND_STOP_INSTRUMENTATION;
        sp_release_all(pool);
        sp_pool_destroy(pool);
    } else if (strcmp(mode, "resolve") == 0) {
        sp_pool *pool = make_pool(SP_OVERFLOW_DROP);
        sp_handle ids[LIVE];
        for (size_t i = 0; i < LIVE; i++) ids[i] = sp_handle_of(pool, sp_acquire(pool));
        for (size_t i = 0; i < LIVE; i += 8) sp_release(pool, sp_resolve(pool, ids[i]));
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t i = 0; i < k; i++) acc += (uintptr_t)sp_resolve(pool, ids[i % LIVE]);
        CALLGRIND_STOP_INSTRUMENTATION;
        sp_release_all(pool);
        sp_pool_destroy(pool);
    } else if (strcmp(mode, "reclaim") == 0) {
        sp_pool *pool = make_pool(SP_OVERFLOW_RECLAIM);
        for (size_t i = 0; i < LIVE; i++) (void)sp_acquire(pool);
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t i = 0; i < k; i++) acc += (uintptr_t)sp_acquire(pool);
        CALLGRIND_STOP_INSTRUMENTATION;
        sp_release_all(pool);
        sp_pool_destroy(pool);
    } else if (strcmp(mode, "floor") == 0) {
        instr_node *nodes = calloc(LIVE, sizeof *nodes);
        if (nodes == NULL) return 1;
        for (size_t i = 0; i < LIVE; i++) instr_fl_release(&nodes[i]);
        for (size_t i = 0; i < LIVE / 2; i++) (void)instr_fl_acquire();
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t i = 0; i < k; i++) {
            void *p = instr_fl_acquire();
            instr_fl_release(p);
        }
        CALLGRIND_STOP_INSTRUMENTATION;
        free(nodes);
    } else if (strncmp(mode, "churn", 5) == 0) {
        /* Random churn: release a random live member, acquire a replacement. A random release
           is what LIFO pairs never show (the member is rarely in the last chunk used); at 1M,
           with --cache-sim=yes, it also shows which cache lines a pair touches.
           churn / churn_floor: 1M live; churn1k / churn_floor1k: 1024 live. */
        bool floor = strstr(mode, "floor") != NULL;
        size_t n = strstr(mode, "1k") ? 1024u : (size_t)1 << 20;
        if (argc == 4) n = (size_t)1 << (strtoul(argv[3], NULL, 10) & 31u); /* log2 live */
        void **live = calloc(n, sizeof *live);
        instr_node *nodes = floor ? calloc(n, sizeof *nodes) : NULL;
        sp_pool *pool = NULL;
        if (live == NULL || (floor && nodes == NULL)) return 1;
        if (floor) {
            for (size_t i = 0; i < n; i++) instr_fl_release(&nodes[i]);
        } else {
            pool = sp_pool_create(&(sp_desc){.name = "churn", .item_size = 64, .initial = n,
                                             .max = n});
            if (pool == NULL) return 1;
        }
        for (size_t i = 0; i < n; i++) live[i] = floor ? instr_fl_acquire() : sp_acquire(pool);
        uint64_t x = 88172645463325252u;
        CALLGRIND_START_INSTRUMENTATION;
        for (size_t i = 0; i < k; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t j = (size_t)(x & (n - 1));
            if (floor) {
                instr_fl_release(live[j]);
                live[j] = instr_fl_acquire();
            } else {
                sp_release(pool, live[j]);
                live[j] = sp_acquire(pool);
            }
        }
        CALLGRIND_STOP_INSTRUMENTATION;
        if (pool != NULL) {
            sp_release_all(pool);
            sp_pool_destroy(pool);
        }
        free(nodes);
        free(live);
    } else {
        fprintf(stderr, "spinstr: unknown mode %s\n", mode);
        return 2;
    }
    instr_sink = acc;
    return 0;
}
