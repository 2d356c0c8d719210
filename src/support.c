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

void sp__log_level(const sp_pool *pool, sp_log_level level, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    sp__vlog_level(pool ? &pool->logger : NULL, pool ? pool->name : "", (int)level, msg, ap);
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
    sp__vlog_level(pool ? &pool->logger : NULL, pool ? pool->name : "", -1, msg, ap);
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
   A handle carries its pool's 12-bit tag so that a handle of one live pool never resolves in
   another. Tags are handed out round-robin, so a destroyed pool's tag is the last to come
   back. Creation and destruction are cold, so a spinlock is enough. */

static atomic_flag sp__tag_lock = ATOMIC_FLAG_INIT;
static uint64_t sp__tag_used[(SP__TAG_MAX + 64u) / 64u];
static uint32_t sp__tag_cursor;

static void sp__tag_lock_take(void) {
    while (atomic_flag_test_and_set_explicit(&sp__tag_lock, memory_order_acquire)) {
    }
}

static void sp__tag_lock_drop(void) { atomic_flag_clear_explicit(&sp__tag_lock, memory_order_release); }

uint32_t sp__tag_acquire(void) {
    uint32_t found = 0;
    sp__tag_lock_take();
    for (uint32_t i = 0; i < SP__TAG_MAX; i++) {
        uint32_t tag = (sp__tag_cursor + i) % SP__TAG_MAX + 1u;
        uint64_t bit = UINT64_C(1) << (tag % 64u);
        if (!(sp__tag_used[tag / 64u] & bit)) {
            sp__tag_used[tag / 64u] |= bit;
            sp__tag_cursor = tag;
            found = tag;
            break;
        }
    }
    sp__tag_lock_drop();
    return found;
}

void sp__tag_release(uint32_t tag) {
    if (tag == 0 || tag > SP__TAG_MAX) return;
    sp__tag_lock_take();
    sp__tag_used[tag / 64u] &= ~(UINT64_C(1) << (tag % 64u));
    sp__tag_lock_drop();
}
