/* SPDX-License-Identifier: Zlib */
/* threads.c -- placeholder while the layer is rewritten: thread-safe pools are refused. */
#include "threads.h"

static _Thread_local sp__hook_frame *tl_hooks;

void sp__ts_hook_enter(sp__hook_frame *f, const sp_pool *p) {
    f->pool = p;
    f->up = tl_hooks;
    tl_hooks = f;
}
void sp__ts_hook_leave(const sp__hook_frame *f) { tl_hooks = f->up; }
bool sp__ts_in_hook(const sp_pool *p) {
    for (const sp__hook_frame *f = tl_hooks; f; f = f->up)
        if (f->pool == p) return true;
    return false;
}
bool sp__ts_attach(sp_pool *p, const sp_desc *d) {
    (void)d;
    sp__log(p, SP__MSG_TS_BAD_DESC, "not in this build");
    return false;
}
bool sp__ts_destroy_begin(sp_pool *p) { (void)p; return true; }
void sp__ts_free(sp_pool *p) { (void)p; }
bool sp__ts_windowed(const sp_pool *p) { (void)p; return true; }
void sp__ts_window_begin(sp_pool *p, const char *call) { (void)p, (void)call; }
void sp__ts_window_end(sp_pool *p) { (void)p; }
void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line) { (void)p, (void)arg, (void)force, (void)file, (void)line; return NULL; }
sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line) { (void)p, (void)item, (void)file, (void)line; return SP_ERR_INVALID; }
void *sp__ts_resolve(const sp_pool *p, sp_handle h) { (void)p, (void)h; return NULL; }
sp_handle sp__ts_handle_of(sp_pool *p, const void *item) { sp_handle h = {0}; (void)p, (void)item; return h; }
bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free) { (void)p, (void)item, (void)or_free; return false; }
size_t sp__ts_prewarm(sp_pool *p, size_t n) { (void)p, (void)n; return 0; }
void sp__ts_stats(const sp_pool *p, sp_stats *out) { (void)p, (void)out; }
size_t sp__ts_leased(const sp_pool *p) { (void)p; return 0; }
sp_result sp__ts_set(sp_pool *p, const sp_overflow *overflow, const size_t *max) { (void)p, (void)overflow, (void)max; return SP_ERR_INVALID; }
uint32_t sp__ts_magazine_size(const sp_pool *p) { (void)p; return 0; }
