/* SPDX-License-Identifier: Zlib */
/* stats.c -- Stats: the numbers a pool reports, its leak reports by acquisition site, and the
   white-box checks the tests use (sp__pool_check). */
#include "pool_internal.h"
#include "threads.h"

#define SP__REPORT_SITES 8

/* One log line per acquisition site of the leased members (the first SP__REPORT_SITES sites in
   the pool's order, then one line for the rest). */
size_t sp__report_sites(const sp_pool *p, const char *what, sp_log_level level) {
    if (!SP_DEBUG) { /* no debug records: one line, saying how to get the sites */
        size_t leased = pool_leased(p);
        if (leased) sp__log_level(p, level, SP__MSG_NO_SITES, leased, what);
        return leased;
    }
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
        while (k < nsites && !(sites[k].line == line &&
                               (sites[k].file == file || (file && sites[k].file && strcmp(file, sites[k].file) == 0))))
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
    SP__TS_WINDOW(pool, "sp_leak_report", size_t, sp_leak_report(w_, level));
    return sp__report_sites(pool, "leased", level);
}

void sp_stats_get(const sp_pool *pool, sp_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!pool) {
        sp__null_pool("sp_stats_get");
        return;
    }
    if (pool->ts && !sp__ts_windowed(pool)) { /* any time: the caches' counters summed */
        sp__ts_stats(pool, out);
        return;
    }
    size_t leased = pool_leased(pool);
    size_t base = pool->mem.size - pool->mem.limbo;
    size_t low = pool->hot.peak_top / SP__ENTRY;
    size_t seen = base > low ? base - low : 0; /* see peak_sync */
    out->size = pool->mem.size;
    out->leased = leased;
    out->free = pool->mem.size - leased;
    out->max = pool->cfg.max;
    out->peak_leased = seen > pool->act.peak_leased ? seen : pool->act.peak_leased;
    out->bytes = pool->mem.bytes;
    out->bytes_reserved = pool->mem.bytes_reserved;
    sp__counters c = pool->counters;
    c.acquired = pool->hot.acquired;
    sp__counters_to_stats(&c, leased, out);
}

/* The life is a handle's (the pool takes its tag first, so that it means the same in the word).
   A leased member's lease becomes one with its handle out, so that its end moves the life on:
   a member at SP__LIFE_MAX retires when it is released, as a handled member does. */
void sp__debug_set_life(sp_pool *pool, const void *item, uint32_t life) {
    uint32_t idx = index_of(pool, item);
    SP_ASSERT(idx != SP__NIL && life >= 1u && life <= SP__LIFE_MAX);
    bool tagged = sp__tag_take(pool);
    SP_ASSERT(tagged && life > pool->handles.life_base);
    (void)tagged;
    _Atomic uint32_t *w = word_at(pool, idx);
    uint32_t flags = wload(w) & SP__FLAGS_MASK;
    if (plain_test(pool, idx)) {
        plain_clear(pool, idx);
        flags = (flags & ~(uint32_t)SP__STATE_MASK) | SP__LEASED;
    }
    if (word_state(flags) == SP__LEASED) flags |= SP__HANDLED;
    wstore(w, word_make(life - pool->handles.life_base, flags));
}

void sp__debug_set_acquired(sp_pool *pool, uint64_t acquired) { pool->hot.acquired = acquired; }

/* ---- the white-box invariants ------------------------------------------------------------------ */

static bool check_failed(const sp_pool *p, const char *what) {
    sp__log(p, SP__MSG_CHECK_FAILED, what);
    return false;
}

bool sp__pool_check(const sp_pool *p) {
    SP__TS_WINDOW(p, "sp__pool_check", bool, sp__pool_check(w_));
    size_t leased = 0, free_n = 0, built = 0;
    /* the spans: counts, states, recognition */
    const sp__span *top = NULL;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span_rec *r = &p->mem.recs[k];
        if (r->first != rec_first(SP__REC_SHIFT(p), k) || r->cap > rec_range(SP__REC_SHIFT(p), k) ||
            r->cap > SP__SLOT_LIMIT - r->first)
            return check_failed(p, "records");
        const sp__span *s = rec_span(r);
        if (!s) continue;
        top = s;
        if (s->first != r->first || s->cap != r->cap || span_count(s) > s->cap) return check_failed(p, "span");
        uint32_t b = 0;
        for (uint32_t i = 0; i < span_count(s); i++) {
            uint32_t idx = s->first + i, w = wload(&s->words[i]), st = word_state(w);
            if (w & (SP__BUSY | SP__RELEASING | SP__MARKED)) return check_failed(p, "flags outside a hook");
            if (st == SP__FREE || st == SP__LEASED) b++;
            if (slot_leased(p, idx, w)) leased++;
            if (st != SP__FREE && plain_test(p, idx)) return check_failed(p, "plain byte");
            if (index_of(p, s->items + (size_t)i * p->hot.stride) != idx) return check_failed(p, "index_of");
            if (word_life(w) < 1u) return check_failed(p, "life");
        }
        if (b != s->built) return check_failed(p, "built");
        built += b;
    }
    if (top != top_span(p)) return check_failed(p, "top span");
    /* the stack: free members, each once */
    for (uint32_t i = 0; i < free_count(p); i++) {
        uint32_t idx = stack_at(p, i);
        const sp__span *s = span_of(p, idx);
        if (!s) return check_failed(p, "stack entry");
        uint32_t w = wload(word_in(s, idx));
        if (word_state(w) != SP__FREE || plain_test(p, idx) || (w & SP__MARKED)) return check_failed(p, "stack state");
        wstore((_Atomic uint32_t *)word_in(s, idx), w | SP__MARKED); /* seen: a second entry is caught */
        free_n++;
    }
    for (uint32_t i = 0; i < free_count(p); i++) {
        _Atomic uint32_t *w = word_at(p, stack_at(p, i));
        wstore(w, wload(w) & ~(uint32_t)SP__MARKED);
    }
    /* the lease list, in acquisition order */
    if (p->cfg.ordered) {
        size_t listed = 0;
        uint32_t prev = SP__NIL;
        for (uint32_t i = p->act.lease_head; i != SP__NIL; i = olink_at(p, i)->next) {
            if (word_state(wload(word_at(p, i))) != SP__LEASED || olink_at(p, i)->prev != prev) return check_failed(p, "lease list");
            if (prev != SP__NIL && p->hot.acquired - p->act.stamp_origin < (UINT64_C(1) << 32) &&
                stamp_rank(p, i) <= stamp_rank(p, prev))
                return check_failed(p, "stamps");
            prev = i;
            if (++listed > built) return check_failed(p, "lease list length");
        }
        if (prev != p->act.lease_tail || listed != leased) return check_failed(p, "lease list ends");
    }
    if (p->mem.limbo != 0) return check_failed(p, "limbo");
    return leased == pool_leased(p) && built == p->mem.size && leased + free_n == p->mem.size &&
           p->counters.created - p->counters.disposed == p->mem.size;
}
