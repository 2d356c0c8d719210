/* SPDX-License-Identifier: Zlib */
/* debug.c -- making free members visible to the tools that watch memory. A released member is
   still valid memory, so neither AddressSanitizer nor valgrind would notice a stale pointer into
   it: here free members are poisoned for ASan (manual poisoning interface) and made no-access
   for valgrind (memcheck client requests), and where neither watches, a checksum taken at
   release and verified at the next acquisition catches a write-after-release. Contents are
   never destroyed, except by the SP_DEBUG=2 fill of pools without a `create` hook. And the check
   that one thread at a time is inside a pool (or an sp_dense) that takes one. */
#include "pool_internal.h"
#include "threads.h"

#include <string.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define SP__ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SP__ASAN)
#  define SP__ASAN 1
#endif
#ifndef SP__ASAN
#  define SP__ASAN 0
#endif

#if SP_DEBUG && SP__ASAN
#  include <sanitizer/asan_interface.h>
#endif
#if SP_DEBUG && defined(SP_HAVE_VALGRIND)
#  include <valgrind/memcheck.h>
#endif

#if SP_DEBUG

void sp__dbg_poison(void *mem, size_t size) {
#  if SP__ASAN
    ASAN_POISON_MEMORY_REGION(mem, size);
#  endif
#  ifdef SP_HAVE_VALGRIND
    VALGRIND_MAKE_MEM_NOACCESS(mem, size);
#  endif
    (void)mem;
    (void)size;
}

void sp__dbg_unpoison(void *mem, size_t size) {
#  if SP__ASAN
    ASAN_UNPOISON_MEMORY_REGION(mem, size);
#  endif
#  ifdef SP_HAVE_VALGRIND
    VALGRIND_MAKE_MEM_DEFINED(mem, size);
#  endif
    (void)mem;
    (void)size;
}

/* True when a tool reports stale accesses at the faulting line: no checksum needed then (and
   under valgrind, reading a member whose bytes the game left undefined would be noise). */
static bool sp__watched(void) {
#  if SP__ASAN
    return true;
#  elif defined(SP_HAVE_VALGRIND)
    return RUNNING_ON_VALGRIND != 0;
#  else
    return false;
#  endif
}

/* FNV-1a: cheap, and any single changed byte changes it. */
static uint32_t sp__checksum(const void *item, size_t size) {
    const unsigned char *b = (const unsigned char *)item;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

void sp__dbg_freed(const sp_pool *p, sp__dbg *rec, void *item, size_t item_size, bool fill) {
    (void)p;
#  if SP_DEBUG >= 2
    if (fill) memset(item, 0xDD, item_size);
#  else
    (void)fill;
#  endif
    rec->has_sum = 0;
    if (!sp__watched()) {
        rec->sum = sp__checksum(item, item_size);
        rec->has_sum = 1;
    }
    sp__dbg_poison(item, item_size);
}

void sp__dbg_leasing(const sp_pool *p, sp__dbg *rec, void *item, size_t item_size, uint32_t idx) {
    sp__dbg_unpoison(item, item_size);
    if (rec->has_sum && rec->sum != sp__checksum(item, item_size)) {
        if (rec->rel_file)
            sp__log(p, SP__MSG_WRITTEN_AFTER_RELEASE, item, idx, rec->rel_file, (int)rec->rel_line);
        else
            sp__log(p, SP__MSG_WRITTEN_AFTER_UNSITED_RELEASE, item, idx);
    }
    rec->has_sum = 0;
    /* The site belongs to the release that just ended: a later release without a site (a
       plain call, sp_release_all, a reclaim) must not be reported as made here. */
    rec->rel_file = NULL;
    rec->rel_line = 0;
}

/* The calling thread's token: the address of a thread-local, unique among live threads. */
static _Thread_local char tl_self;

void sp__one_thread_init(sp__one_thread *t) {
    atomic_init(&t->inside, (uintptr_t)0);
    atomic_init(&t->overlaps, 0u);
}

int sp__one_thread_enter(sp__one_thread *t, const sp_logger *logger, const char *name, sp__msg msg,
                         const char *call) {
    uintptr_t self = (uintptr_t)&tl_self, inside = 0;
    if (atomic_compare_exchange_strong_explicit(&t->inside, &inside, self, memory_order_acquire,
                                                memory_order_relaxed))
        return 1;
    if (inside == self) return 0;
    /* Not the object's own log function: those count the logger as one of its callbacks
       (hook_depth, busy), which is the other thread's to change now. The name and the logger
       are set once, at creation. */
    uint64_t n = atomic_fetch_add_explicit(&t->overlaps, 1u, memory_order_relaxed) + 1u;
    if (sp__worth_a_line(n)) sp__log_to(logger, name, msg, call, (unsigned long long)n);
    return -1;
}

void sp__one_thread_leave(sp__one_thread *t) {
    atomic_store_explicit(&t->inside, (uintptr_t)0, memory_order_release);
}

int sp__dbg_enter(sp_pool *p, const char *call) {
    if (!p || (p->ts && !sp__ts_windowed(p))) return 0; /* thread-safe, outside a window: any thread */
    return sp__one_thread_enter(&p->act.one, &p->cfg.logger, p->name,
                                p->ts ? SP__MSG_TS_OVERLAP : SP__MSG_TWO_THREADS, call);
}

void sp__dbg_leave(sp_pool *p) { sp__one_thread_leave(&p->act.one); }

#endif /* SP_DEBUG */
