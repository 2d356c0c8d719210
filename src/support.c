/* SPDX-License-Identifier: Zlib */
/* support.c -- what every part of the library leans on: result strings, log lines, the C
   library allocator, and the table of pool tags that keeps handles of different live pools
   apart. */
#include "sp_internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- results -------------------------------------------------------------------------- */

const char *sp_result_str(sp_result result) {
#define SP__RESULT_CASE(name, value, text) \
    case name:                             \
        return text;
    switch (result) {
        SP_RESULT_LIST(SP__RESULT_CASE)
    default:
        return "unknown result";
    }
#undef SP__RESULT_CASE
}

/* ---- version -------------------------------------------------------------------------- */

const char *sp_version(void) { return SP_VERSION; }

int sp_version_number(void) { return SP_VERSION_NUMBER; }

/* ---- logging -------------------------------------------------------------------------- */

typedef struct sp__msg_info {
    sp_log_level level;
    const char *format;
} sp__msg_info;

#define SP__MSG_INFO(id, level, fmt) {level, fmt},
static const sp__msg_info sp__messages[SP__MSG_COUNT] = {SP__MSG_LIST(SP__MSG_INFO)};
#undef SP__MSG_INFO

/* The default logger: warnings and errors to stderr, one line each. */
void sp__default_log(sp_log_level level, const char *pool_name, const char *message,
                           void *user) {
    (void)user;
    if (level > SP_LOG_WARN) return;
    fprintf(stderr, "spawnpool %s: %s%s%s\n", level == SP_LOG_ERROR ? "error" : "warning",
            pool_name && pool_name[0] ? pool_name : "", pool_name && pool_name[0] ? ": " : "",
            message);
}

/* Formats message msg and hands it to the logger at `level` (the table's level when < 0). */
static void sp__vlog_level(const sp_logger *logger, const char *name, int level, sp__msg msg,
                           va_list ap) {
    char line[256];
    const sp__msg_info *info = &sp__messages[msg];
    sp_log_level lv = level < 0 ? info->level : (sp_log_level)level;
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
    vsnprintf(line, sizeof line, info->format, ap);
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic pop
#endif
    if (logger && logger->log)
        logger->log(lv, name ? name : "", line, logger->user);
    else
        sp__default_log(lv, name ? name : "", line, NULL);
}

/* A pool's line. The logger is a callback of the pool like its hooks, and it runs in the middle
   of operations (a GROW warning between building a member and handing it out, the leak line at
   the start of sp_pool_destroy, a retirement inside a release): for as long as it runs it counts
   as a hook (hook_depth), so that destroying, clearing or trimming the pool from it is refused
   instead of freeing the pool under the operation. Pools are never const objects, only const
   views of them. */
static void sp__pool_vlog(const sp_pool *pool, int level, sp__msg msg, va_list ap) {
    if (!pool) {
        sp__vlog_level(NULL, "", level, msg, ap);
        return;
    }
    sp_pool *p = (sp_pool *)(uintptr_t)pool;
    if (p->ts && !p->ts_view) { /* a thread-safe pool logs from many threads at once */
        sp__hook_frame f;
        sp__ts_hook_enter(&f, p, NULL);
        sp__vlog_level(&p->logger, p->name, level, msg, ap);
        sp__ts_hook_leave(&f);
        return;
    }
    p->hook_depth++;
    sp__vlog_level(&p->logger, p->name, level, msg, ap);
    p->hook_depth--;
}

void sp__log_level(const sp_pool *pool, sp_log_level level, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    sp__pool_vlog(pool, (int)level, msg, ap);
    va_end(ap);
}

void sp__log_to(const sp_logger *logger, const char *name, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    sp__vlog_level(logger, name, -1, msg, ap);
    va_end(ap);
}

void sp__log(const sp_pool *pool, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    sp__pool_vlog(pool, -1, msg, ap);
    va_end(ap);
}

/* ---- the C library allocator ---------------------------------------------------------- */

void *sp__default_alloc(size_t size, size_t align, void *user) {
    (void)user;
    if (align <= _Alignof(max_align_t)) return malloc(size ? size : 1);
    /* C11 aligned_alloc wants the size to be a multiple of the alignment. */
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded < size) return NULL;
    return aligned_alloc(align, rounded ? rounded : align);
}

void sp__default_free(void *ptr, size_t size, void *user) {
    (void)size;
    (void)user;
    free(ptr);
}

/* ---- pool tags ------------------------------------------------------------------------
   A handle carries its pool's 12-bit tag so that a handle of one pool never resolves in
   another. Tags are few (4095), so they come back: a game that rebuilds its pools every level
   gets a destroyed pool's tag again after 4095 creations. What keeps the old handles out is the
   life: the table remembers, per tag, the highest life any pool (sp_pool or sp_dense) ever
   handed out under it, and a pool that takes the tag starts every slot's life above that. A
   handle of an earlier pool then carries a life below the new pool's first: it can match
   nothing there. A tag with fewer than SP__TAG_LIFE_RESERVE lives left above its high-water
   mark is retired for good, so every pool's slots have at least that many lives each.
   Tags are handed out round-robin (a destroyed pool's tag is the last to come back, and wear
   spreads over all tags). Creation and destruction are cold, so a spinlock is enough. */

static atomic_flag sp__tag_lock = ATOMIC_FLAG_INIT;
static uint64_t sp__tag_used[(SP__TAG_MAX + 64u) / 64u];    /* taken by a live pool */
static uint64_t sp__tag_retired[(SP__TAG_MAX + 64u) / 64u]; /* lives used up: never again */
static uint32_t sp__tag_high[SP__TAG_MAX + 1u];             /* highest life handed out */
static uint32_t sp__tag_cursor;

void sp__tags_lock(void) {
    while (atomic_flag_test_and_set_explicit(&sp__tag_lock, memory_order_acquire)) {
    }
}

void sp__tags_unlock(void) { atomic_flag_clear_explicit(&sp__tag_lock, memory_order_release); }

static bool sp__tag_bit(const uint64_t *bits, uint32_t tag) {
    return (bits[tag / 64u] >> (tag % 64u)) & 1u;
}

static void sp__tag_bit_set(uint64_t *bits, uint32_t tag, bool on) {
    uint64_t bit = UINT64_C(1) << (tag % 64u);
    bits[tag / 64u] = on ? bits[tag / 64u] | bit : bits[tag / 64u] & ~bit;
}

uint32_t sp__tag_acquire(uint32_t *first_life) {
    uint32_t found = 0;
    sp__tags_lock();
    for (uint32_t i = 0; i < SP__TAG_MAX; i++) {
        uint32_t tag = (sp__tag_cursor + i) % SP__TAG_MAX + 1u;
        if (!sp__tag_bit(sp__tag_used, tag) && !sp__tag_bit(sp__tag_retired, tag)) {
            sp__tag_bit_set(sp__tag_used, tag, true);
            sp__tag_cursor = tag;
            found = tag;
            *first_life = sp__tag_high[tag] + 1u;
            break;
        }
    }
    sp__tags_unlock();
    return found;
}

void sp__tag_release(uint32_t tag, uint32_t highest_life) {
    if (tag == 0 || tag > SP__TAG_MAX) return;
    sp__tags_lock();
    if (highest_life > sp__tag_high[tag]) sp__tag_high[tag] = highest_life;
    /* The next pool's slots would start at high + 1 and must have the reserve after it. */
    if (sp__tag_high[tag] >= SP__LIFE_MAX - SP__TAG_LIFE_RESERVE) sp__tag_bit_set(sp__tag_retired, tag, true);
    sp__tag_bit_set(sp__tag_used, tag, false);
    sp__tags_unlock();
}

uint32_t sp__tag_high_water(uint32_t tag) {
    if (tag == 0 || tag > SP__TAG_MAX) return 0;
    sp__tags_lock();
    uint32_t high = sp__tag_high[tag];
    sp__tags_unlock();
    return high;
}

bool sp__tag_is_retired(uint32_t tag) {
    if (tag == 0 || tag > SP__TAG_MAX) return false;
    sp__tags_lock();
    bool retired = sp__tag_bit(sp__tag_retired, tag);
    sp__tags_unlock();
    return retired;
}

uint32_t sp__tags_retired(void) {
    uint32_t n = 0;
    sp__tags_lock();
    for (uint32_t tag = 1; tag <= SP__TAG_MAX; tag++) n += sp__tag_bit(sp__tag_retired, tag);
    sp__tags_unlock();
    return n;
}

void sp__tags_reset(void) {
    sp__tags_lock();
    for (uint32_t tag = 1; tag <= SP__TAG_MAX; tag++) {
        if (sp__tag_bit(sp__tag_used, tag)) continue; /* a live pool's lives stay its own */
        sp__tag_bit_set(sp__tag_retired, tag, false);
        sp__tag_high[tag] = 0;
    }
    sp__tags_unlock();
}
