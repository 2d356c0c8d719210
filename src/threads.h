/* SPDX-License-Identifier: Zlib */
/* threads.h -- the thread-safe layer (SP_THREADS_SAFE) as the pool's files see it: the calls
   they hand a thread-safe pool to, and the windows in which the pool's own code runs on it.
   Its design is in docs/threads.md; its files are threads.c (lifecycle, each thread's table of
   caches), threads_windows.c (windows, stats) and magazine.c (acquire, release, resolve); what
   they use of the pool's internals is pool_internal.h. A pool without the mode never enters
   this layer: each entry point tests `p->ts` once, on its general path. */
#ifndef SP_THREADS_H
#define SP_THREADS_H

#include "pool_internal.h"

/* ---- lifecycle (threads.c) ------------------------------------------------------------------ */
/* Makes p thread-safe (after its memory, before anything is built); false, with a line, when
   the descriptor asks what a thread-safe pool cannot do or memory fails. */
bool sp__ts_attach(sp_pool *p, const sp_desc *d);
/* The start of sp_pool_destroy: waits for exiting threads to hand their caches back, gathers
   every cache, and opens a window for good. False (with a line) when it must not run now. */
bool sp__ts_destroy_begin(sp_pool *p);
/* The end of sp_pool_destroy: the layer's memory. */
void sp__ts_free(sp_pool *p);
/* The fast paths' view of p's spans derived again: they came or went (sp__routes_update). */
void sp__ts_routes_update(sp_pool *p);

/* ---- windows: the calls that need quiescence (threads_windows.c) ----------------------------
   A window takes the pool's lock and gathers every thread's cached free members into the
   pool's stack, so that the pool's own code runs as for a plain pool; its end hands the free
   members back to the depot. */
bool sp__ts_windowed(const sp_pool *p);
void sp__ts_window_begin(sp_pool *p, const char *call);
void sp__ts_window_end(sp_pool *p);
/* Outside a window, a call that needs one opens it, makes itself again inside, and closes it. */
#define SP__TS_WINDOW(p, name, type, call)                                                        \
    do {                                                                                          \
        if ((p)->ts && !sp__ts_windowed(p)) {                                                     \
            sp_pool *w_ = (sp_pool *)(uintptr_t)(p);                                              \
            sp__ts_window_begin(w_, name);                                                        \
            type r_ = call;                                                                       \
            sp__ts_window_end(w_);                                                                \
            return r_;                                                                            \
        }                                                                                         \
    } while (0)

/* ---- the calls any thread may make (magazine.c) ------------------------------------------- */
void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line);
sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line);
/* sp__ts_release of a member of p's span, which the source's map named for item (a size-class
   set has looked it up already). */
sp_result sp__ts_release_in(sp_pool *p, sp__span *span, void *item);
void *sp__ts_resolve(const sp_pool *p, sp_handle h);
sp_handle sp__ts_handle_of(sp_pool *p, const void *item);
bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free);

/* ---- the calls any thread may make that are not per member (threads_windows.c) ------------ */
size_t sp__ts_prewarm(sp_pool *p, size_t n);
void sp__ts_stats(const sp_pool *p, sp_stats *out);
size_t sp__ts_leased(const sp_pool *p);
sp_result sp__ts_set(sp_pool *p, const sp_overflow *overflow, const size_t *max);

/* White-box: the size new magazines have now (adaptive: see docs/threads.md). */
uint32_t sp__ts_magazine_size(const sp_pool *p);
/* White-box: the most a magazine of p may grow to (magazine_size and thread_cache_bytes). */
uint32_t sp__ts_magazine_most(const sp_pool *p);
/* White-box: what the calling thread's cache of p holds now: free members in its two magazines,
   and their capacity (0 and 0 before its first call on p). */
void sp__ts_thread_cached(const sp_pool *p, size_t *members, size_t *capacity);

/* ---- hooks --------------------------------------------------------------------------------
   Hooks and log lines of a thread-safe pool run on many threads at once: they count as hooks of
   their pool on their own thread only (a frame on a thread-local list), not in hook_depth. */
typedef struct sp__hook_frame {
    const struct sp_pool *pool;
    const void *item; /* the member the hook runs on (NULL: a log line) */
    struct sp__hook_frame *up;
} sp__hook_frame;
void sp__ts_hook_enter(sp__hook_frame *f, const sp_pool *p, const void *item);
void sp__ts_hook_leave(const sp__hook_frame *f);
bool sp__ts_in_hook(const sp_pool *p);
/* True while this thread runs a hook of p on item (a release from it is a re-entry; from any
   other thread, a member in another thread's hook is simply not leased by the caller). */
bool sp__ts_in_member_hook(const sp_pool *p, const void *item);

#endif
