/* SPDX-License-Identifier: Zlib */
/* iterate.c -- Iteration: the leased members in the pool's order (memory order: the spans'
   slots in index order; acquisition order: the lease list), sp_first/sp_next, the cursor
   (sp_iter) that keeps its place whatever a callback releases, sp_each and sp_leased_each. */
#include "pool_internal.h"
#include "threads.h"

/* Memory order: the first slot at or after `from` whose member iteration visits; SP__NIL when
   there is none. O(slots scanned). */
uint32_t sp__leased_from(const sp_pool *p, uint32_t from) {
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        if (!s || s->first + span_count(s) <= from) continue;
        for (uint32_t i = from > s->first ? from - s->first : 0u; i < span_count(s); i++)
            if (slot_visible(p, s->first + i, wload(&s->words[i]))) return s->first + i;
    }
    return SP__NIL;
}

/* The pool's order, whichever it is: the first leased member, and the one after idx. */
uint32_t sp__leased_first(const sp_pool *p) {
    return p->cfg.ordered ? p->act.lease_head : sp__leased_from(p, 0);
}

uint32_t sp__leased_next(const sp_pool *p, uint32_t idx) {
    return p->cfg.ordered ? olink_at(p, idx)->next : sp__leased_from(p, idx + 1u);
}

/* Where a memory-order walk stops: after the last slot whose member is leased now. Members built
   later, by growth, lie above it or in slots a trim emptied. */
uint32_t sp__leased_end(const sp_pool *p) {
    for (uint32_t k = rec_count(p); k-- > 0;) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = s ? span_count(s) : 0u; i-- > 0;)
            if (slot_visible(p, s->first + i, wload(&s->words[i]))) return s->first + i + 1u;
    }
    return 0;
}

/* Acquisition stamps are the low 32 bits of `acquired` when a member was leased, compared by
   rank, stamp - origin: in acquisition order as long as every stamp in the lease list was taken
   less than 2^32 acquisitions after the origin. A walk makes sure of that when it begins: once
   2^31 acquisitions have passed since the origin, the lease list is stamped again, in its own
   order, just below the next acquisition's stamp (O(leased), at most once per 2^31
   acquisitions). From then the ranks stay exact for 2^31 more acquisitions, whatever the walk's
   callbacks do, however old the oldest member is. */
void sp__stamps_fresh(sp_pool *p) {
    if (!p->cfg.ordered || p->hot.acquired - p->act.stamp_origin < (UINT64_C(1) << 31)) return;
    uint64_t n = 0;
    for (uint32_t i = p->act.lease_head; i != SP__NIL; i = olink_at(p, i)->next) n++;
    p->act.stamp_origin = p->hot.acquired - n;
    uint32_t stamp = (uint32_t)p->act.stamp_origin;
    for (uint32_t i = p->act.lease_head; i != SP__NIL; i = olink_at(p, i)->next) olink_at(p, i)->stamp = stamp++;
}

void *sp_first(const sp_pool *pool) {
    if (!pool) {
        sp__null_pool("sp_first");
        return NULL;
    }
    SP__TS_WINDOW(pool, "sp_first", void *, sp_first(w_));
    uint32_t idx = sp__leased_first(pool);
    return idx == SP__NIL ? NULL : item_at(pool, idx);
}

void *sp_next(const sp_pool *pool, const void *item) {
    if (!pool) {
        sp__null_pool("sp_next");
        return NULL;
    }
    if (!item) return NULL;
    SP__TS_WINDOW(pool, "sp_next", void *, sp_next(w_, item));
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return NULL;
    /* A member in its on_release hook is already out of the list: its links are stale. */
    if (!slot_visible(pool, idx, wload(word_at(pool, idx)))) return NULL;
    uint32_t next = sp__leased_next(pool, idx);
    return next == SP__NIL ? NULL : item_at(pool, next);
}

/* ---- the cursor: sp_iter, and sp_each, sp_leased_each on top of it -----------------------
   Memory order keeps its place by slot index: the next member is the next leased slot, whatever
   happened to this one. Acquisition order keeps it by the lease of the member, of its
   neighbours in the lease list (a lease is a slot and its acquisition stamp) and by the
   member's stamp, never by a link alone:
     - the member is still in the same lease: its link is current;
     - else its next is: new members are appended behind it, so it is still the next;
     - else its prev is (or it was the head): the member after the prev (the head) is;
     - else the first member whose stamp ranks after the member's (searched from the tail).
   Each is the first leased member after the place, so a walk never visits a lease twice and
   skips none.
   A walk visits only members leased when it began (as sp_release_all releases them), so that a
   callback that releases its member and acquires a replacement, or only acquires, cannot keep
   it going: `_last` bounds it. Acquisition order: the newest stamp's rank at the start (members
   acquired meanwhile are appended behind it, with newer stamps: the walk ends at the first of
   them). Memory order keeps no stamps: `_last` is the slot after the last member leased at the
   start, so members built meanwhile (growth) are not visited, while a member acquired meanwhile
   into a free slot below it is, when it lies after the walk's place. */

/* Whether slot idx of an acquisition-order pool is still the lease with `stamp` (a slot whose
   span a trim or a clear gave back since is not). */
static inline bool still_leased(const sp_pool *p, uint32_t idx, uint32_t stamp) {
    const sp__span *s = idx != SP__NIL ? span_of(p, idx) : NULL;
    return s && slot_visible(p, idx, wload(word_in(s, idx))) && s->links[idx - s->first].stamp == stamp;
}

static inline uint32_t stamp_of(const sp_pool *p, uint32_t idx) { return idx != SP__NIL ? olink_at(p, idx)->stamp : 0u; }

/* The cursor at leased member idx of an acquisition-order pool, whose prev in the lease list is
   `prev` with stamp `prev_stamp`. */
static inline void cursor_fill(const sp_pool *p, sp_iter *it, uint32_t idx, uint32_t prev, uint32_t prev_stamp) {
    const sp__olink *l = olink_at(p, idx);
    it->item = item_at(p, idx);
    it->_slot = idx;
    it->_stamp = l->stamp;
    it->_next = l->next;
    it->_next_stamp = stamp_of(p, l->next);
    it->_prev = prev;
    it->_prev_stamp = prev_stamp;
}

/* Whether member idx of an acquisition-order pool was leased when the walk began. */
static inline bool leased_at_start(const sp_pool *p, uint32_t idx, uint64_t origin, uint32_t last) {
    return olink_at(p, idx)->stamp - (uint32_t)origin <= last;
}

static inline void cursor_at(const sp_pool *p, sp_iter *it, uint32_t idx) {
    if (idx == SP__NIL) {
        memset(it, 0, sizeof *it);
        return;
    }
    if (!p->cfg.ordered) {
        it->item = item_at(p, idx);
        it->_slot = idx;
        return;
    }
    uint32_t prev = olink_at(p, idx)->prev;
    cursor_fill(p, it, idx, prev, stamp_of(p, prev));
}

/* The member after the cursor's place, SP__NIL at the end; *lost when the place cannot be found
   again (see sp__stamps_fresh: only after 2^31 acquisitions during one walk). */
static uint32_t cursor_successor(const sp_pool *p, const sp_iter *it, bool *lost) {
    *lost = false;
    if (!p->cfg.ordered) {
        uint32_t next = sp__leased_from(p, it->_slot + 1u);
        return next < it->_last ? next : SP__NIL;
    }
    if (still_leased(p, it->_slot, it->_stamp)) return olink_at(p, it->_slot)->next;
    if (still_leased(p, it->_next, it->_next_stamp)) return it->_next;
    if (it->_prev == SP__NIL) return p->act.lease_head;
    if (still_leased(p, it->_prev, it->_prev_stamp)) return olink_at(p, it->_prev)->next;
    if (it->_origin != p->act.stamp_origin || p->hot.acquired - p->act.stamp_origin >= (UINT64_C(1) << 32)) {
        *lost = true;
        return SP__NIL;
    }
    uint32_t rank = it->_stamp - (uint32_t)p->act.stamp_origin, found = SP__NIL;
    for (uint32_t i = p->act.lease_tail; i != SP__NIL && stamp_rank(p, i) > rank; i = olink_at(p, i)->prev) found = i;
    return found;
}

sp_iter sp_iter_first(sp_pool *pool) {
    sp_iter it;
    memset(&it, 0, sizeof it);
    if (!pool) {
        sp__null_pool("sp_iter_first");
        return it;
    }
    SP__TS_WINDOW(pool, "sp_iter_first", sp_iter, sp_iter_first(w_));
    sp__stamps_fresh(pool);
    cursor_at(pool, &it, sp__leased_first(pool));
    if (it.item) {
        it._origin = pool->act.stamp_origin;
        it._last = pool->cfg.ordered ? (uint32_t)(pool->hot.acquired - pool->act.stamp_origin) : sp__leased_end(pool);
    }
    return it;
}

/* cursor_successor with its line when the walk lost its place. */
static SP__NOINLINE uint32_t walk_successor(const sp_pool *pool, const sp_iter *it) {
    bool lost;
    uint32_t next = cursor_successor(pool, it, &lost);
    if (lost) sp__log(pool, SP__MSG_WALK_LOST);
    return next;
}

/* The end of an acquisition-order walk at member idx (SP__NIL, or acquired after the walk
   began). The stamps are ranked afresh only after 2^31 acquisitions in its callbacks: then the
   ranks it started with mean nothing, and it ends here with a line. */
static bool walk_ends_at(const sp_pool *pool, uint32_t idx, uint64_t origin, uint32_t last) {
    if (idx == SP__NIL) return true;
    if (pool->act.stamp_origin != origin) {
        sp__log(pool, SP__MSG_WALK_LOST);
        return true;
    }
    return !leased_at_start(pool, idx, origin, last);
}

void sp_iter_next(sp_pool *pool, sp_iter *it) {
    if (!pool) {
        sp__null_pool("sp_iter_next");
        if (it) memset(it, 0, sizeof *it);
        return;
    }
    if (!it || !it->item) return;
    if (pool->ts && !sp__ts_windowed(pool)) {
        sp__ts_window_begin(pool, "sp_iter_next");
        sp_iter_next(pool, it);
        sp__ts_window_end(pool);
        return;
    }
    uint32_t next;
    if (pool->cfg.ordered && still_leased(pool, it->_slot, it->_stamp)) {
        /* still the same lease: its link is current, and its prev is the member the cursor
           leaves */
        next = olink_at(pool, it->_slot)->next;
        if (next == SP__NIL ||
            (!leased_at_start(pool, next, it->_origin, it->_last) && walk_ends_at(pool, next, it->_origin, it->_last))) {
            memset(it, 0, sizeof *it);
            return;
        }
        cursor_fill(pool, it, next, it->_slot, it->_stamp);
        return;
    }
    next = walk_successor(pool, it);
    if (pool->cfg.ordered && walk_ends_at(pool, next, it->_origin, it->_last)) next = SP__NIL;
    cursor_at(pool, it, next);
}

/* sp_each in memory order: every slot in turn up to the last leased at the start. fn may
   acquire, release or grow the pool: spans never move, and the loop reads the records again
   after every call. */
static size_t each_in_memory_order(sp_pool *pool, sp_each_fn fn, void *user) {
    size_t n = 0;
    const uint32_t end = sp__leased_end(pool); /* members built meanwhile lie at or above it */
    for (uint32_t k = 0; k < rec_count(pool); k++) {
        const sp__span *s = rec_span(&pool->mem.recs[k]);
        for (uint32_t i = 0; s && i < span_count(s); i++) {
            if (s->first + i >= end) return n;
            if (!slot_visible(pool, s->first + i, wload(&s->words[i]))) continue;
            n++;
            pool->act.hook_depth++;
            bool go_on = fn(s->items + (size_t)i * pool->hot.stride, user);
            pool->act.hook_depth--;
            if (!go_on) return n; /* (spans never move, and fn cannot trim or clear the pool) */
        }
    }
    return n;
}

size_t sp_each(sp_pool *pool, sp_each_fn fn, void *user) {
    if (!pool) {
        sp__null_pool("sp_each");
        return 0;
    }
    if (!fn) return 0;
    SP__ONE_THREAD(pool, "sp_each", size_t, 0, sp_each(pool, fn, user));
    SP__TS_WINDOW(pool, "sp_each", size_t, sp_each(w_, fn, user));
    if (!pool->cfg.ordered) return each_in_memory_order(pool, fn, user);
    /* The cursor's rules, with its common step spelled out (fn left the member in the same
       lease: follow its link); anything else goes through cursor_successor. fn counts as a hook
       of the pool: destroy, clear and trim are refused in it. */
    size_t n = 0;
    sp__stamps_fresh(pool);
    const uint64_t origin = pool->act.stamp_origin; /* moves only after 2^31 acquisitions in fn */
    const uint32_t last = (uint32_t)(pool->hot.acquired - origin); /* the newest member's rank */
    for (uint32_t idx = pool->act.lease_head; idx != SP__NIL;) {
        sp_iter it;
        memset(&it, 0, sizeof it);
        cursor_fill(pool, &it, idx, olink_at(pool, idx)->prev, stamp_of(pool, olink_at(pool, idx)->prev));
        it._last = last;
        it._origin = origin;
        n++;
        pool->act.hook_depth++;
        bool go_on = fn(it.item, user);
        pool->act.hook_depth--;
        if (!go_on) break;
        if (SP__LIKELY(still_leased(pool, idx, it._stamp)))
            idx = olink_at(pool, idx)->next;
        else
            idx = walk_successor(pool, &it);
        if (idx != SP__NIL && SP__UNLIKELY(!leased_at_start(pool, idx, origin, last)) &&
            walk_ends_at(pool, idx, origin, last))
            break;
    }
    return n;
}

void sp__leased_site(const sp_pool *p, uint32_t idx, const char **file, int *line) {
#if SP_DEBUG
    const sp__dbg *rec = dbg_at(p, idx);
    *file = rec->acq_file;
    *line = rec->acq_file ? (int)rec->acq_line : 0;
#else
    (void)p, (void)idx;
    *file = NULL;
    *line = 0;
#endif
}

size_t sp_leased_each(const sp_pool *pool, sp_leased_fn fn, void *user) {
    if (!pool) {
        sp__null_pool("sp_leased_each");
        return 0;
    }
    SP__ONE_THREAD((sp_pool *)(uintptr_t)pool, "sp_leased_each", size_t, 0, sp_leased_each(pool, fn, user));
    SP__TS_WINDOW(pool, "sp_leased_each", size_t, sp_leased_each(w_, fn, user));
    /* The cursor, so that fn releasing members cannot lead the walk astray; fn counts as a hook. */
    sp_pool *p = (sp_pool *)(uintptr_t)pool;
    size_t n = 0;
    for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) {
        const char *file;
        int line;
        sp__leased_site(p, it._slot, &file, &line);
        if (fn) {
            p->act.hook_depth++;
            fn(it.item, file, line, user);
            p->act.hook_depth--;
        }
        n++;
    }
    return n;
}
