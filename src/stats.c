/* SPDX-License-Identifier: Zlib */
/* stats.c -- Stats: the numbers a pool reports, its leak reports by acquisition site, and the
   white-box checks the tests use (sp__pool_check). */
#include "sp_threads.h"

#define SP__REPORT_SITES 8


/* One log line per acquisition site of the leased members (the first SP__REPORT_SITES sites in
   the pool's order, then one line for the rest). */
size_t sp__report_sites(const sp_pool *p, const char *what, sp_log_level level) {
    struct {
        const char *file;
        int line;
        size_t count;
    } sites[SP__REPORT_SITES];
    size_t nsites = 0, other = 0, total = 0;
    for (uint32_t i = sp__leased_first(p); i != SP__NIL; i = sp__leased_next(p, i)) {
        const char *file;
        int line;
        sp__leased_site(p, i, &file, &line);
        total++;
        size_t k = 0;
        while (k < nsites && !(sites[k].line == line && (sites[k].file == file ||
                                                        (file && sites[k].file && strcmp(file, sites[k].file) == 0))))
            k++;
        if (k < nsites) {
            sites[k].count++;
        } else if (nsites < SP__REPORT_SITES) {
            sites[nsites].file = file;
            sites[nsites].line = line;
            sites[nsites].count = 1;
            nsites++;
        } else {
            other++;
        }
    }
    if (!SP_DEBUG) { /* no debug records: one line, saying how to get the sites */
        if (total) sp__log_level(p, level, SP__MSG_NO_SITES, total, what);
        return total;
    }
    for (size_t k = 0; k < nsites; k++) {
        if (sites[k].file)
            sp__log_level(p, level, SP__MSG_LEAK_SITE, sites[k].count, what, sites[k].file, sites[k].line);
        else
            sp__log_level(p, level, SP__MSG_LEAK_NO_SITE, sites[k].count, what);
    }
    if (other) sp__log_level(p, level, SP__MSG_LEAK_OTHER_SITES, other, what);
    return total;
}


size_t sp_leak_report(const sp_pool *pool, sp_log_level level) {
    if (!pool) {
        sp__null_pool("sp_leak_report");
        return 0;
    }
    SP__TS_WINDOWED(pool, "sp_leak_report", size_t, sp_leak_report(w_, level));
    return sp__report_sites(pool, "leased", level);
}


void sp_stats_get(const sp_pool *pool, sp_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!pool) {
        sp__null_pool("sp_stats_get");
        return;
    }
    if (SP__TS(pool)) { /* any time: the caches' counters summed under the lock */
        sp__ts_stats(pool, out);
        return;
    }
    out->size = pool->size;
    size_t leased = sp__leased(pool);
    out->leased = leased;
    out->free = pool->size >= leased ? pool->size - leased : 0;
    out->max = pool->max;
    out->peak_leased = pool->peak_leased;
    out->bytes = pool->bytes;
    out->created = pool->created;
    out->disposed = pool->disposed;
    out->acquired = pool->acquired;
    out->released = pool->acquired - leased - pool->leased_disposed;
    out->reclaimed = pool->reclaimed;
    out->dropped = pool->dropped;
    out->grown_past_max = pool->grown_past_max;
    out->bytes_reserved = pool->reserved_items_size + pool->reserved_books_size;
}


size_t sp__pool_leased(const sp_pool *pool) {
    if (!SP__TS(pool)) return sp__leased(pool);
    sp_stats st;
    sp__ts_stats(pool, &st);
    return st.leased;
}


/* A thread-safe pool's hooks count on their own thread (sp__ts_in_hook); its create and dispose
   hooks and allocator calls, which run under its lock, in hook_depth too. */
bool sp__pool_in_callback(const sp_pool *pool) {
    return pool->hook_depth > 0 || pool->destroying || (pool->ts && sp__ts_in_hook(pool));
}


void sp__debug_set_life(sp_pool *pool, const void *item, uint32_t life) {
    uint32_t idx = index_of(pool, item);
    SP_ASSERT(idx != SP__NIL && life >= 1u && life <= SP__LIFE_MAX);
    sp__slot *s = slot_at(pool, idx);
    s->word = life << SP__FLAG_BITS | (s->word & ((1u << SP__FLAG_BITS) - 1u));
}


void sp__debug_set_acquired(sp_pool *pool, uint64_t acquired) { pool->acquired = acquired; }


bool sp__pool_check(const sp_pool *p) {
    SP__TS_WINDOWED(p, "sp__pool_check", bool, sp__pool_check(w_));
    size_t leased = 0, leased_states = 0, free_n = 0, built = 0, reserved = 0;
    uint32_t prev = SP__NIL;
    for (uint32_t i = lease_head(p); i != SP__NIL; i = lease_next(p, i)) {
        const sp__slot *s = slot_at(p, i);
        if (!p->ordered || sp__state(s) != SP__LEASED || prev_of(p, i) != prev) return false;
        /* acquisition order: stamps rank higher along the list (while the ranks are exact) */
        if (prev != SP__NIL && p->acquired - p->stamp_origin < (UINT64_C(1) << 32) &&
            stamp_rank(p, i) <= stamp_rank(p, prev))
            return false;
        prev = i;
        if (++leased > p->reserved) return false;
    }
    if (prev != lease_tail(p)) return false;
    for (uint32_t i = p->free_head; i != SP__NIL; i = slot_at(p, i)->next) {
        if (sp__state(slot_at(p, i)) != SP__FREE) return false;
        if (++free_n > p->reserved) return false;
    }
    for (uint32_t c = 0; c < p->range_count; c++) {
        const sp__range *r = &p->ranges[c];
        uint32_t b = 0;
        if (r->count > r->cap || (!r->items && r->count)) return false;
        if (c && r->first != p->ranges[c - 1u].first + p->ranges[c - 1u].cap) return false;
        for (uint32_t i = 0; i < r->count; i++) {
            uint32_t st = sp__state(slot_at(p, r->first + i));
            if (st == SP__FREE || st == SP__LEASED) b++;
            leased_states += st == SP__LEASED;
            if (index_of(p, r->items + (size_t)i * p->stride) != r->first + i) return false;
        }
        if (b != r->built) return false;
        built += b;
        reserved += r->count;
        if (r->count && r->first + r->count > p->slot_cap) return false;
    }
    /* Outside live ranges, no slot holds a member; no slot's life is below the pool's first
       (those lives belong to earlier pools of its tag). */
    for (uint32_t idx = 0; idx < p->slot_cap; idx++) {
        if (sp__life(slot_at(p, idx)) < p->life_first) return false;
        const sp__range *r = &p->ranges[range_of_index(p, idx)];
        uint32_t st = sp__state(slot_at(p, idx));
        bool live = p->range_count && idx >= r->first && idx - r->first < r->count;
        if (!live && (st == SP__FREE || st == SP__LEASED)) return false;
    }
    if (!p->ordered) leased = leased_states; /* no list: the states are the leased set */
    return leased == sp__leased(p) && leased_states == sp__leased(p) && built == p->size &&
           leased + free_n == p->size &&
           reserved == p->reserved && p->created - p->disposed == p->size;
}
