/* SPDX-License-Identifier: Zlib */
/* iterate.c -- Iteration: the leased members in the pool's order (memory order: leased slots
   range by range; acquisition order: the lease list), sp_first/sp_next, the cursor (sp_iter)
   that keeps its place whatever a callback releases, sp_each and sp_leased_each. */
#include "sp_threads.h"

/* Memory order (unordered pools, which keep no lease list): the first slot at or after `from`,
   range by range, whose member iteration visits; SP__NIL when there is none. O(slots scanned). */
uint32_t sp__leased_from(const sp_pool *p, uint32_t from) {
    for (uint32_t c = from < p->slot_cap ? range_of_index(p, from) : p->range_count; c < p->range_count; c++) {
        const sp__range *r = &p->ranges[c];
        uint32_t end = r->first + r->count;
        for (uint32_t i = from > r->first ? from : r->first; i < end; i++)
            if (visible_leased(slot_at(p, i)->word)) return i;
    }
    return SP__NIL;
}


/* The pool's order, whichever it is: the first leased member, and the one after idx. */
uint32_t sp__leased_first(const sp_pool *p) {
    return p->ordered ? lease_head(p) : sp__leased_from(p, 0);
}


uint32_t sp__leased_next(const sp_pool *p, uint32_t idx) {
    return p->ordered ? lease_next(p, idx) : sp__leased_from(p, idx + 1u);
}


void sp__stamps_fresh(sp_pool *p) {
    if (!p->ordered || p->acquired - p->stamp_origin < (UINT64_C(1) << 31)) return;
    uint64_t n = 0;
    for (uint32_t i = lease_head(p); i != SP__NIL; i = lease_next(p, i)) n++;
    p->stamp_origin = p->acquired - n;
    uint32_t stamp = (uint32_t)p->stamp_origin;
    for (uint32_t i = lease_head(p); i != SP__NIL; i = lease_next(p, i)) *stamp_at(p, i) = stamp++;
}


void *sp_first(const sp_pool *pool) {
    if (!pool) {
        sp__null_pool("sp_first");
        return NULL;
    }
    SP__TS_WINDOWED(pool, "sp_first", void *, sp_first(w_));
    uint32_t idx = sp__leased_first(pool);
    return idx == SP__NIL ? NULL : item_at(pool, idx);
}


void *sp_next(const sp_pool *pool, const void *item) {
    if (!pool) {
        sp__null_pool("sp_next");
        return NULL;
    }
    if (!item) return NULL;
    SP__TS_WINDOWED(pool, "sp_next", void *, sp_next(w_, item));
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return NULL;
    /* A member in its on_release hook is already out of the list: its links are stale. */
    if (!visible_leased(slot_at(pool, idx)->word)) return NULL;
    uint32_t next = sp__leased_next(pool, idx);
    return next == SP__NIL ? NULL : item_at(pool, next);
}


/* ---- the cursor: sp_iter, and sp_each, sp_leased_each on top of it -----------------------
   Memory order keeps its place by slot index: the next member is the next leased slot, whatever
   happened to this one. Acquisition order keeps it by slot and life (the word) of the member,
   of its neighbours in the lease list and by the member's stamp, never by a link alone:
     - the member is still in the same life: its link is current;
     - else its next is: new members are appended behind it, so it is still the next;
     - else its prev is (or it was the head): the member after the prev (the head) is;
     - else the first member whose stamp ranks after the member's (searched from the tail).
   Each is the first leased member after the place, so a walk never visits a life twice and
   skips none.
   A walk visits only members leased when it began (as sp_release_all releases them), so that a
   callback that releases its member and acquires a replacement, or only acquires, cannot keep
   it going: `_last` bounds it. Acquisition order: the newest stamp's rank at the start (members
   acquired meanwhile are appended behind it, with newer stamps: the walk ends at the first of
   them). Memory order keeps no stamps: `_last` is the slot after the last member leased at the
   start, so members built meanwhile (growth) are not visited, while a member acquired meanwhile
   into a free slot below it is, when it lies after the walk's place (knowing it is new would
   cost the acquire path a store). */


/* The word of a member that the cursor saw leased, as it must still be for the same life in the
   list (BUSY comes and goes with hooks; RELEASING means out of the list). */
static inline uint32_t cursor_word(uint32_t word) { return word & ~(uint32_t)SP__BUSY; }


static inline bool still_leased(const sp_pool *p, uint32_t idx, uint32_t word) {
    return idx != SP__NIL && cursor_word(slot_at(p, idx)->word) == word;
}


/* An acquisition-order pool's slot, whose size is known: the cursor's reads. */
static inline const sp__oslot *oslot_at(const sp_pool *p, uint32_t idx) {
    return (const sp__oslot *)(const void *)p->slots + idx;
}


/* The cursor at leased member idx of an acquisition-order pool, whose prev in the lease list
   is `prev` with word `prev_word`. */
static inline void cursor_fill(const sp_pool *p, sp_iter *it, uint32_t idx, uint32_t prev,
                               uint32_t prev_word) {
    const sp__oslot *o = oslot_at(p, idx);
    uint32_t next = lease_index(o->s.next);
    it->item = item_at(p, idx);
    it->_slot = idx;
    it->_word = cursor_word(o->s.word);
    it->_next = next;
    it->_next_word = next != SP__NIL ? cursor_word(oslot_at(p, next)->s.word) : 0u;
    it->_prev = prev;
    it->_prev_word = prev_word;
    it->_stamp = o->stamp;
}


/* Whether member idx of an acquisition-order pool was leased when the walk began. */
static inline bool leased_at_start(const sp_pool *p, uint32_t idx, uint64_t origin, uint32_t last) {
    return oslot_at(p, idx)->stamp - (uint32_t)origin <= last;
}


/* Where a memory-order walk stops: after the last slot whose member is leased now (O(slots
   above it), which the walk would scan anyway). Members built later, by growth, lie above it or
   in slots a trim emptied. */
static uint32_t leased_end(const sp_pool *p) {
    for (uint32_t c = p->range_count; c-- > 0;) {
        const sp__range *r = &p->ranges[c];
        for (uint32_t i = r->first + r->count; i-- > r->first;)
            if (visible_leased(slot_at(p, i)->word)) return i + 1u;
    }
    return 0;
}


static inline void cursor_at(const sp_pool *p, sp_iter *it, uint32_t idx) {
    if (idx == SP__NIL) {
        memset(it, 0, sizeof *it);
        return;
    }
    if (!p->ordered) {
        it->item = item_at(p, idx);
        it->_slot = idx;
        return;
    }
    uint32_t prev = lease_index(oslot_at(p, idx)->prev8);
    cursor_fill(p, it, idx, prev, prev != SP__NIL ? cursor_word(oslot_at(p, prev)->s.word) : 0u);
}


/* The member after the cursor's place, SP__NIL at the end; *lost when the place cannot be found
   again (see stamps_fresh: only after 2^31 acquisitions during one walk). */
static uint32_t cursor_successor(const sp_pool *p, const sp_iter *it, bool *lost) {
    *lost = false;
    if (!p->ordered) {
        uint32_t next = sp__leased_from(p, it->_slot + 1u);
        return next < it->_last ? next : SP__NIL;
    }
    if (still_leased(p, it->_slot, it->_word)) return lease_next(p, it->_slot);
    if (still_leased(p, it->_next, it->_next_word)) return it->_next;
    if (it->_prev == SP__NIL) return lease_head(p);
    if (still_leased(p, it->_prev, it->_prev_word)) return lease_next(p, it->_prev);
    if (it->_origin != p->stamp_origin || p->acquired - p->stamp_origin >= (UINT64_C(1) << 32)) {
        *lost = true;
        return SP__NIL;
    }
    uint32_t rank = it->_stamp - (uint32_t)p->stamp_origin, found = SP__NIL;
    for (uint32_t i = lease_tail(p); i != SP__NIL && stamp_rank(p, i) > rank; i = prev_of(p, i)) found = i;
    return found;
}


sp_iter sp_iter_first(sp_pool *pool) {
    sp_iter it;
    memset(&it, 0, sizeof it);
    if (!pool) {
        sp__null_pool("sp_iter_first");
        return it;
    }
    SP__TS_WINDOWED(pool, "sp_iter_first", sp_iter, sp_iter_first(w_));
    sp__stamps_fresh(pool);
    cursor_at(pool, &it, sp__leased_first(pool));
    if (it.item) {
        it._origin = pool->stamp_origin;
        it._last = pool->ordered ? (uint32_t)(pool->acquired - pool->stamp_origin) : leased_end(pool);
    }
    return it;
}


/* cursor_successor out of line, with its line when the walk lost its place: the loops that
   call it keep their registers for the common step. */
static SP__NOINLINE uint32_t walk_successor(const sp_pool *pool, const sp_iter *it) {
    bool lost;
    uint32_t next = cursor_successor(pool, it, &lost);
    if (lost) sp__log(pool, SP__MSG_WALK_LOST);
    return next;
}


/* The end of an acquisition-order walk at member idx (SP__NIL, or acquired after the walk
   began). The stamps are ranked afresh only after 2^31 acquisitions in its callbacks: then
   the ranks it started with mean nothing, and it ends here with a line. */
static SP__NOINLINE bool walk_ends_at(const sp_pool *pool, uint32_t idx, uint64_t origin, uint32_t last) {
    if (idx == SP__NIL) return true;
    if (pool->stamp_origin != origin) {
        sp__log(pool, SP__MSG_WALK_LOST);
        return true;
    }
    return !leased_at_start(pool, idx, origin, last);
}


/* The steps sp_iter_next leaves out of line: a NULL pool, a cursor at the end, the end of a
   range in memory order, and a member that left its life in acquisition order. */
static SP__NOINLINE void iter_next_slow(sp_pool *pool, sp_iter *it) {
    if (!pool) {
        sp__null_pool("sp_iter_next");
        if (it) memset(it, 0, sizeof *it);
        return;
    }
    if (!it || !it->item) return;
    if (SP__TS(pool)) { /* no top range outside a window: every step lands here */
        sp__ts_window_begin(pool, "sp_iter_next");
        sp_iter_next(pool, it);
        sp__ts_window_end(pool);
        return;
    }
    uint32_t next = walk_successor(pool, it);
    if (pool->ordered && walk_ends_at(pool, next, it->_origin, it->_last)) next = SP__NIL;
    cursor_at(pool, it, next);
}


void sp_iter_next(sp_pool *pool, sp_iter *it) {
    if (SP__UNLIKELY(!pool || !it || !it->item)) {
        iter_next_slow(pool, it);
        return;
    }
    if (pool->ordered) { /* still the same life: its link is current */
        const sp__oslot *o = oslot_at(pool, it->_slot);
        if (SP__LIKELY(cursor_word(o->s.word) == it->_word)) {
            uint32_t next = lease_index(o->s.next);
            if (next == SP__NIL || SP__UNLIKELY(!leased_at_start(pool, next, it->_origin, it->_last) &&
                                                walk_ends_at(pool, next, it->_origin, it->_last)))
                memset(it, 0, sizeof *it);
            else /* its prev is the member the cursor leaves */
                cursor_fill(pool, it, next, it->_slot, it->_word);
            return;
        }
    } else { /* the rest of the top range, below the walk's end */
        uint32_t first = (uint32_t)pool->top_first;
        uint32_t in_top = it->_slot + 1u - first;
        uint32_t stop = it->_last > first ? it->_last - first : 0u;
        if (stop > pool->top_count) stop = pool->top_count;
        for (uint32_t i = in_top; i < stop; i++) {
            if (visible_leased(plain_slot_at(pool, first + i)->word)) {
                it->_slot = first + i;
                it->item = (void *)(pool->top_items + (uintptr_t)i * pool->stride);
                return;
            }
        }
    }
    iter_next_slow(pool, it);
}


/* sp_each in memory order: every built slot in turn (the cursor's rule, without its calls). fn
   may acquire, release, grow the slot array or add ranges, so the loop bounds and arrays are
   read again after every call. */
static size_t each_in_memory_order(sp_pool *pool, sp_each_fn fn, void *user) {
    size_t n = 0;
    const uint32_t end = leased_end(pool); /* members built meanwhile lie at or above it */
    for (uint32_t c = 0; c < pool->range_count; c++) {
        for (uint32_t i = 0; i < pool->ranges[c].count; i++) {
            if (pool->ranges[c].first + i >= end) return n;
            if (!visible_leased(slot_at(pool, pool->ranges[c].first + i)->word)) continue;
            n++;
            pool->hook_depth++;
            bool go_on = fn(pool->ranges[c].items + (size_t)i * pool->stride, user);
            pool->hook_depth--;
            if (!go_on) return n;
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
    SP__TS_WINDOWED(pool, "sp_each", size_t, sp_each(w_, fn, user));
    if (!pool->ordered) return each_in_memory_order(pool, fn, user);
    /* The cursor's rules, with its state in locals and its common step spelled out (fn left
       the member in the same life: follow its link); anything else goes through
       cursor_successor. fn counts as a hook of the pool (hook_depth): destroy, clear and trim
       are refused in it. */
    size_t n = 0;
    sp__stamps_fresh(pool);
    const uint64_t origin = pool->stamp_origin; /* moves only after 2^31 acquisitions in fn */
    const uint32_t last = (uint32_t)(pool->acquired - origin); /* the newest member's rank */
    for (uint32_t idx = lease_head(pool); idx != SP__NIL;) {
        const sp__oslot *o = oslot_at(pool, idx);
        uint32_t word = cursor_word(o->s.word), next = lease_index(o->s.next), prev = lease_index(o->prev8), stamp = o->stamp;
        uint32_t next_word = next != SP__NIL ? cursor_word(oslot_at(pool, next)->s.word) : 0u;
        uint32_t prev_word = prev != SP__NIL ? cursor_word(oslot_at(pool, prev)->s.word) : 0u;
        void *item = item_at(pool, idx);
        n++;
        pool->hook_depth++;
        bool go_on = fn(item, user);
        pool->hook_depth--;
        if (!go_on) break;
        o = oslot_at(pool, idx); /* fn may have moved the slots (growth) */
        if (SP__LIKELY(cursor_word(o->s.word) == word)) {
            idx = lease_index(o->s.next);
        } else {
            sp_iter it = {item, idx, word, next, next_word, prev, prev_word, stamp, last, origin};
            idx = walk_successor(pool, &it);
        }
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
    SP__TS_WINDOWED(pool, "sp_leased_each", size_t, sp_leased_each(w_, fn, user));
    /* The cursor, so that fn releasing members cannot lead the walk astray; fn counts as a hook
       (pools are never const objects). */
    sp_pool *p = (sp_pool *)(uintptr_t)pool;
    size_t n = 0;
    for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) {
        const char *file;
        int line;
        sp__leased_site(p, it._slot, &file, &line);
        if (fn) {
            p->hook_depth++;
            fn(it.item, file, line, user);
            p->hook_depth--;
        }
        n++;
    }
    return n;
}
