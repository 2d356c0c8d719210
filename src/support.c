/* SPDX-License-Identifier: Zlib */
/* support.c -- what every part of the library leans on: result strings, the version, log
   lines, the C library allocator, and the counters sp_pool and sp_dense report alike. */
#include "sp_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- results and the version ---------------------------------------------------------- */

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

void sp__default_log(sp_log_level level, const char *pool_name, const char *message, void *user) {
    (void)user;
    if (level > SP_LOG_WARN) return;
    fprintf(stderr, "spawnpool %s: %s%s%s\n", level == SP_LOG_ERROR ? "error" : "warning",
            pool_name && pool_name[0] ? pool_name : "", pool_name && pool_name[0] ? ": " : "",
            message);
}

void sp__vlog_to(const sp_logger *logger, const char *name, int level, sp__msg msg, va_list ap) {
    char line[320];
    const sp__msg_info *info = &sp__messages[msg];
    /* The format comes from the table above, never from a caller. */
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
    vsnprintf(line, sizeof line, info->format, ap);
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic pop
#endif
    sp_log_level lv = level < 0 ? info->level : (sp_log_level)level;
    if (logger && logger->log)
        logger->log(lv, name ? name : "", line, logger->user);
    else
        sp__default_log(lv, name ? name : "", line, NULL);
}

void sp__log_to_level(const sp_logger *logger, const char *name, int level, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    sp__vlog_to(logger, name, level, msg, ap);
    va_end(ap);
}

SP__NOINLINE void sp__null_pool(const char *function) { sp__log_to(NULL, "", SP__MSG_NULL_POOL, function); }

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

sp_allocator sp__allocator_or_default(const sp_allocator *a) {
    sp_allocator out = *a;
    if (!out.alloc) {
        out.alloc = sp__default_alloc;
        out.free = sp__default_free;
        out.user = NULL;
    }
    return out;
}

/* ---- counters ------------------------------------------------------------------------- */

void sp__counters_to_stats(const sp__counters *c, size_t leased, sp_stats *out) {
    out->created = c->created;
    out->disposed = c->disposed;
    out->acquired = c->acquired;
    out->released = c->acquired - leased - c->leased_disposed;
    out->reclaimed = c->reclaimed;
    out->dropped = c->dropped;
    out->grown_past_max = c->grown_past_max;
}

bool sp__counters_grew(sp__counters *c, uint64_t past) {
    c->grown_past_max += past;
    if (c->grown_past_max < c->grow_warn_at) return false;
    while (c->grow_warn_at <= c->grown_past_max) c->grow_warn_at = c->grow_warn_at ? c->grow_warn_at * 2u : 1u;
    return true;
}
