/* SPDX-License-Identifier: Zlib */
/* snapshot.c -- Snapshot and restore (the header's SNAPSHOT AND RESTORE): a pool's whole state
   written to the caller's buffer, and a new pool made of it that goes on exactly as the saved
   one would have (same slots, lives, free order and lease order).

   The format (little-endian, version 1): a header (magic, version, a checksum of everything
   after it, the size, the descriptor's fingerprint, the pool's scalars and counters), then its
   span records, the words of each live span, the stack of free members bottom to top, the
   lease list oldest first with its stamps, and every built member in slot order. A restore
   checks the checksum before it reads anything else, and every field as if the checksum did
   not exist (a buffer may be crafted), so that a pool it makes passes sp__pool_check. */
#include "pool_internal.h"
#include "snapshot_format.h"
#include "threads.h"


enum { FLAG_ORDERED = 1, FLAG_FIXED = 2, FLAG_TAGGED = 4, FLAG_SOURCE_FAILED = 8, FLAG_CALLBACKS = 16 };

/* A saved word: life, state and HANDLED as the pool has them, and this bit for a plain lease
   (its byte in the plain map; a quiescent pool has no MARKED word, so the bit is free). */
#define SNAP_PLAIN SP__MARKED
#define SNAP_WORD_KEEP (~(uint32_t)SP__FLAGS_MASK | SP__STATE_MASK | SP__HANDLED)

/* The fixed part: magic, version, checksum, size, kind, flags; item_size, item_align,
   chunk_items, member bytes, capacity, max; overflow, tag, life_base, rec_shift, rec_count;
   acquired, peak, stamp_origin; reclaim_cursor; 9 counters; built; free count, listed. */
#define SNAP_HEADER (4u + 4u + 8u + 8u + 4u + 4u + 6u * 8u + 5u * 4u + 3u * 8u + 4u + 9u * 8u + 8u + 4u + 4u)
#define SNAP_RECORD (6u * 4u)

static sp_result refuse(const sp_pool *p, const char *call, const char *why) {
    if (p)
        sp__log(p, SP__MSG_SNAP_REFUSED, call, why);
    else
        sp__log_to(NULL, "", SP__MSG_SNAP_REFUSED, call, why);
    return SP_ERR_INVALID;
}

/* Why the pool cannot be saved now, or NULL. */
static const char *unsaveable(const sp_pool *p) {
    if (p->ts) return "a thread-safe pool cannot be saved";
    if (sp__pool_in_callback(p)) return "called from one of the pool's hooks (its state is mid-change)";
    if (p->mem.limbo || p->act.tearing_down) return "the pool is mid-change";
    return NULL;
}

static uint32_t leased_listed(const sp_pool *p) {
    return p->cfg.ordered ? (uint32_t)pool_leased(p) : 0u;
}

/* The bytes a snapshot of p takes with member records of `bytes`: 0 when that overflows. */
static size_t size_for(const sp_pool *p, size_t bytes) {
    uint64_t words = 0;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        if (s) words += span_count(s);
    }
    uint64_t fixed = (uint64_t)SNAP_HEADER + (uint64_t)SNAP_RECORD * rec_count(p) + 4u * words +
                     4u * (uint64_t)free_count(p) + 8u * (uint64_t)leased_listed(p);
    if (bytes && p->mem.size > (UINT64_MAX - fixed) / bytes) return 0;
    uint64_t total = fixed + (uint64_t)bytes * p->mem.size;
    return total > SIZE_MAX ? 0 : (size_t)total;
}

size_t sp_snapshot_size(const sp_pool *pool, const sp_snapshot_io *io) {
    if (!pool) {
        sp__null_pool("sp_snapshot_size");
        return 0;
    }
    snap_io sio = {0, NULL, NULL, NULL};
    const char *why = pool->ts ? "a thread-safe pool cannot be saved" : io_resolve(io, pool->cfg.item_size, &sio);
    if (why) {
        (void)refuse(pool, "sp_snapshot_size", why);
        return 0;
    }
    return size_for(pool, sio.bytes);
}

/* ---- saving ------------------------------------------------------------------------------ */

static uint64_t peak_now(const sp_pool *p) {
    size_t base = p->mem.size - p->mem.limbo, low = p->hot.peak_top / SP__ENTRY;
    size_t seen = base > low ? base - low : 0; /* see peak_sync */
    return seen > p->act.peak_leased ? seen : p->act.peak_leased;
}

static void save_members(sp_pool *p, unsigned char *out, const snap_io *io) {
    /* save counts as a hook (destroy, clear and trim are refused) and reads the pool as it is
       (acquire and release are refused): the snapshot's header already describes it */
    p->act.hook_depth++;
    uint8_t was = sp__freeze(p, SP__FROZEN_SAVE);
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = 0; s && i < span_count(s); i++) {
            uint32_t st = word_state(wload(&s->words[i]));
            if (st != SP__FREE && st != SP__LEASED) continue;
            const unsigned char *item = s->items + (size_t)i * p->hot.stride;
            bool poisoned = st == SP__FREE && !plain_test(p, s->first + i);
            if (poisoned) DBG_UNPOISON((void *)(uintptr_t)item, p->cfg.item_size);
            if (io->save)
                io->save(item, out, io->bytes, io->user);
            else
                memcpy(out, item, io->bytes);
            if (poisoned) DBG_POISON((void *)(uintptr_t)item, p->cfg.item_size);
            out += io->bytes;
        }
    }
    sp__thaw(p, was);
    p->act.hook_depth--;
}

sp_result sp_snapshot(const sp_pool *pool, void *buf, size_t size, const sp_snapshot_io *io) {
    if (!pool) {
        sp__null_pool("sp_snapshot");
        return SP_ERR_INVALID;
    }
    sp_pool *p = (sp_pool *)(uintptr_t)pool; /* save runs as a hook: the depth is bookkeeping */
    SP__ONE_THREAD(p, "sp_snapshot", sp_result, SP_ERR_INVALID, sp_snapshot(p, buf, size, io));
    snap_io sio = {0, NULL, NULL, NULL};
    const char *why = unsaveable(p);
    if (!why) why = io_resolve(io, p->cfg.item_size, &sio);
    if (why) return refuse(p, "sp_snapshot", why);
    size_t need = size_for(p, sio.bytes);
    if (!need) return refuse(p, "sp_snapshot", "the snapshot would not fit in the address space");
    if (!buf) return refuse(p, "sp_snapshot", "buf is NULL");
    if (size < need) return refuse(p, "sp_snapshot", "the buffer is smaller than sp_snapshot_size");
    writer w = {(unsigned char *)buf};
    put32(&w, SNAP_MAGIC);
    put32(&w, SNAP_VERSION);
    put64(&w, 0); /* the checksum, last */
    put64(&w, need);
    put32(&w, SNAP_KIND_POOL);
    put32(&w, (p->cfg.ordered ? FLAG_ORDERED : 0u) | (p->cfg.fixed ? FLAG_FIXED : 0u) |
                  (p->handles.tagged ? FLAG_TAGGED : 0u) | (p->mem.source_failed ? FLAG_SOURCE_FAILED : 0u) |
                  (sio.save ? FLAG_CALLBACKS : 0u));
    put64(&w, p->cfg.item_size);
    put64(&w, p->cfg.item_align);
    put64(&w, p->cfg.fixed ? 0u : p->cfg.chunk_items); /* a fixed buffer's is its capacity */
    put64(&w, sio.bytes);
    put64(&w, p->cfg.fixed ? p->mem.capacity : 0u);
    put64(&w, p->cfg.max);
    put32(&w, (uint32_t)p->cfg.overflow);
    put32(&w, p->handles.tagged ? p->handles.tag : 0u);
    put32(&w, p->handles.tagged ? p->handles.life_base : 0u);
    put32(&w, SP__REC_SHIFT(p));
    put32(&w, rec_count(p));
    put64(&w, peak_now(p));
    put64(&w, p->act.stamp_origin);
    put32(&w, p->act.reclaim_cursor);
    sp__counters c = p->counters;
    c.acquired = p->hot.acquired; /* (a plain pool counts its acquisitions on its hot line) */
    counters_put(&w, &c);
    put64(&w, p->mem.size);
    put32(&w, free_count(p));
    put32(&w, leased_listed(p));
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span_rec *r = &p->mem.recs[k];
        const sp__span *s = rec_span(r);
        put32(&w, r->first);
        put32(&w, r->cap);
        put32(&w, r->life_floor);
        put32(&w, s != NULL);
        put32(&w, s ? span_count(s) : 0u);
        put32(&w, s ? s->life_start : 0u);
    }
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = 0; s && i < span_count(s); i++) {
            uint32_t word = wload(&s->words[i]) & SNAP_WORD_KEEP;
            if (word_state(word) == SP__FREE && plain_test(p, s->first + i)) word |= SNAP_PLAIN;
            put32(&w, word);
        }
    }
    for (uint32_t i = 0; i < free_count(p); i++) put32(&w, stack_at(p, i));
    if (p->cfg.ordered)
        for (uint32_t i = p->act.lease_head; i != SP__NIL; i = olink_at(p, i)->next) {
            put32(&w, i);
            put32(&w, olink_at(p, i)->stamp);
        }
    save_members(p, w.at, &sio);
    snap_seal((unsigned char *)buf, need);
    return SP_OK;
}

/* ---- restoring --------------------------------------------------------------------------- */

typedef struct snap_header {
    uint32_t flags, overflow, tag, life_base, rec_shift, recs, reclaim_cursor, free_n, listed;
    uint64_t size, item_size, item_align, chunk_items, bytes, capacity, max;
    uint64_t acquired, peak, stamp_origin, built;
    sp__counters counters;
} snap_header;

/* The envelope and the header; NULL when they hold, else why not. */
static const char *header_read(reader *r, size_t size, snap_header *h) {
    const char *why = snap_open(r, size, SNAP_KIND_POOL);
    if (why) return why;
    if (size < SNAP_HEADER || (size_t)(r->end - r->at) < SNAP_HEADER - SNAP_ENVELOPE - 4u) return "truncated snapshot";
    h->size = (uint64_t)(r->end - (r->at - SNAP_ENVELOPE - 4u));
    h->flags = get32(r);
    h->item_size = get64(r);
    h->item_align = get64(r);
    h->chunk_items = get64(r);
    h->bytes = get64(r);
    h->capacity = get64(r);
    h->max = get64(r);
    h->overflow = get32(r);
    h->tag = get32(r);
    h->life_base = get32(r);
    h->rec_shift = get32(r);
    h->recs = get32(r);
    h->peak = get64(r);
    h->stamp_origin = get64(r);
    h->reclaim_cursor = get32(r);
    counters_get(r, &h->counters);
    h->acquired = h->counters.acquired;
    h->built = get64(r);
    h->free_n = get32(r);
    h->listed = get32(r);
    if (r->bad) return "truncated snapshot";
    return NULL;
}

/* Whether the descriptor's pool p is the kind the snapshot saved. */
static const char *fingerprint_check(const sp_pool *p, const snap_header *h, const snap_io *io) {
    if (h->flags & ~(uint32_t)(FLAG_ORDERED | FLAG_FIXED | FLAG_TAGGED | FLAG_SOURCE_FAILED | FLAG_CALLBACKS))
        return "unknown flags in the snapshot";
    if (h->item_size != p->cfg.item_size || h->item_align != p->cfg.item_align)
        return "desc's item_size or item_align differs from the snapshot's";
    if (!(h->flags & FLAG_ORDERED) != !p->cfg.ordered) return "desc's order differs from the snapshot's";
    if (!(h->flags & FLAG_FIXED) != !p->cfg.fixed) return "one of desc and the snapshot has a fixed buffer, the other not";
    if (!p->cfg.fixed && h->chunk_items != p->cfg.chunk_items) return "desc's chunk_items differs from the snapshot's";
    if (p->cfg.fixed && (h->capacity == 0 || h->capacity > p->mem.capacity))
        return "desc's buffer holds fewer members than the saved one";
    if (!(h->flags & FLAG_CALLBACKS) != !io->load) return "io's save/load differ from the io the snapshot was saved with";
    if (h->bytes != io->bytes) return "io's bytes differ from the snapshot's";
    if (h->max > SP__SLOT_LIMIT || h->overflow > (uint32_t)SP_OVERFLOW_GROW ||
        (p->cfg.fixed && (h->overflow == (uint32_t)SP_OVERFLOW_GROW || h->max == 0 || h->max > h->capacity)))
        return "the snapshot's max or overflow is invalid";
    if ((h->flags & FLAG_TAGGED) && h->tag >= SP__TAG_COUNT) return "the snapshot's pool tag is invalid";
    if (h->recs > SP__SPAN_RECS || h->rec_shift > SP__SLOT_BITS) return "the snapshot's span records are invalid";
    return NULL;
}

/* A restore that failed: the pool goes quietly (nothing leased, nothing stacked: no leak line,
   no hook), and so does the tag it took back. (The registry's restore discards the pools it
   restored before a later one failed: the same.) */
void sp__pool_discard(sp_pool *p) {
    p->act.lease_head = p->act.lease_tail = SP__NIL;
    p->hot.free_top = 0;
    if (p->hot.plain) memset(p->hot.plain, 0, plain_map_bytes(p->mem.plain_cap));
    p->mem.limbo = p->mem.size;
    p->cfg.dispose = NULL;
    if (p->owner) { /* its owner first, while it still knows the pool's tag */
        p->owner_fns->pool_gone(p->owner, p);
        p->owner = NULL;
    }
    if (p->handles.tagged) {
        sp__tag_release(p->handles.tag, 0); /* it handed out nothing: the mark stays */
        p->handles.tagged = false;
    }
    sp_pool_destroy(p);
}

/* The records, and a span for each live one. */
static const char *records_read(sp_pool *p, reader *r, const snap_header *h) {
    uint32_t shift = h->rec_shift;
    atomic_store_explicit(&p->hot.rec_shift, shift, memory_order_relaxed);
    if (p->cfg.fixed && h->recs > 1u) return "a fixed buffer's snapshot with more than one span";
    struct { uint32_t live, count, life_start; } spans[SP__SPAN_RECS];
    for (uint32_t k = 0; k < h->recs; k++) {
        sp__span_rec *rec = &p->mem.recs[k];
        uint32_t first = get32(r), cap = get32(r), floor = get32(r);
        spans[k].live = get32(r);
        spans[k].count = get32(r);
        spans[k].life_start = get32(r);
        if (r->bad) return "truncated snapshot";
        if ((k && shift + k - 1u >= SP__SLOT_BITS) || first != rec_first(shift, k) || cap == 0 ||
            cap > rec_range(shift, k) || cap > SP__SLOT_LIMIT - first || floor > SP__LIFE_MAX ||
            spans[k].live > 1u || spans[k].count > cap || (!spans[k].live && spans[k].count) ||
            (spans[k].live && (spans[k].life_start <= floor || spans[k].life_start > SP__LIFE_MAX + 1u)) ||
            (p->cfg.fixed && cap != h->capacity))
            return "the snapshot's span records are invalid";
        atomic_init(&rec->span, NULL);
        rec->first = first;
        rec->cap = cap;
        rec->life_floor = floor;
    }
    atomic_store_explicit(&p->mem.rec_count, h->recs, memory_order_release);
    for (uint32_t k = 0; k < h->recs; k++)
        if (spans[k].live && !sp__span_restore(p, k, spans[k].count, spans[k].life_start))
            return "out of memory for the snapshot's spans";
    return NULL;
}

/* The words of every live span; counts what they say. */
static const char *words_read(sp_pool *p, reader *r, const snap_header *h, size_t *leased, size_t *free_n) {
    const uint32_t allowed = ~(uint32_t)SP__FLAGS_MASK | SP__STATE_MASK | SP__HANDLED | SNAP_PLAIN;
    uint32_t base = (h->flags & FLAG_TAGGED) ? h->life_base : 0u;
    size_t built = 0;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = 0; s && i < span_count(s); i++) {
            uint32_t w = get32(r), st = word_state(w);
            if (r->bad) return "truncated snapshot";
            bool plain = (w & SNAP_PLAIN) != 0, handled = (w & SP__HANDLED) != 0;
            if ((w & ~allowed) || word_life(w) < 1u || (uint64_t)word_life(w) + base > SP__LIFE_MAX ||
                (handled && (st != SP__LEASED || !(h->flags & FLAG_TAGGED))) ||
                (plain && (st != SP__FREE || p->cfg.ordered)))
                return "the snapshot's member states are invalid";
            wstore(&s->words[i], w & ~(uint32_t)SNAP_PLAIN);
            if (plain) plain_set(p, s->first + i);
            if (st == SP__FREE || st == SP__LEASED) {
                s->built++;
                built++;
            }
            if (st == SP__LEASED || plain) ++*leased;
            else if (st == SP__FREE) ++*free_n;
        }
    }
    if (built != h->built || h->counters.created - h->counters.disposed != built)
        return "the snapshot's member counts do not add up";
    p->mem.size = built;
    return NULL;
}

/* The stack bottom to top: every free member exactly once. MARKED says "seen" meanwhile. */
static const char *stack_read(sp_pool *p, reader *r, const snap_header *h, size_t free_n) {
    if (h->free_n != free_n) return "the snapshot's free members do not add up";
    if (!sp__stack_reserve(p, p->mem.size)) return "out of memory for the stack of free members";
    const char *why = NULL;
    uint32_t n = 0;
    for (; n < h->free_n; n++) {
        uint32_t idx = get32(r);
        sp__span *s = r->bad ? NULL : span_of(p, idx);
        uint32_t w = s ? wload(word_in(s, idx)) : 0u;
        if (!s || word_state(w) != SP__FREE || plain_test(p, idx) || (w & SP__MARKED)) {
            why = r->bad ? "truncated snapshot" : "the snapshot's stack of free members is invalid";
            break;
        }
        wstore(word_in(s, idx), w | SP__MARKED);
        stack_push(p, idx);
    }
    for (uint32_t i = 0; i < n; i++) {
        _Atomic uint32_t *w = word_at(p, stack_at(p, i));
        wstore(w, wload(w) & ~(uint32_t)SP__MARKED);
    }
    return why;
}

/* The lease list oldest first, with its stamps: every leased member exactly once. */
static const char *list_read(sp_pool *p, reader *r, const snap_header *h, size_t leased) {
    if (h->listed != (p->cfg.ordered ? leased : 0u)) return "the snapshot's lease list does not add up";
    const char *why = NULL;
    for (uint32_t n = 0; n < h->listed; n++) {
        uint32_t idx = get32(r), stamp = get32(r);
        sp__span *s = r->bad ? NULL : span_of(p, idx);
        uint32_t w = s ? wload(word_in(s, idx)) : 0u;
        if (!s || word_state(w) != SP__LEASED || (w & SP__MARKED)) {
            why = r->bad ? "truncated snapshot" : "the snapshot's lease list is invalid";
            break;
        }
        wstore(word_in(s, idx), w | SP__MARKED);
        sp__olink *l = &s->links[idx - s->first];
        l->prev = p->act.lease_tail;
        l->next = SP__NIL;
        l->stamp = stamp;
        if (p->act.lease_tail != SP__NIL)
            olink_at(p, p->act.lease_tail)->next = idx;
        else
            p->act.lease_head = idx;
        p->act.lease_tail = idx;
    }
    for (uint32_t i = p->act.lease_head; i != SP__NIL; i = olink_at(p, i)->next) {
        _Atomic uint32_t *w = word_at(p, i);
        wstore(w, wload(w) & ~(uint32_t)SP__MARKED);
    }
    return why;
}

/* Where the built slots of span s run from slot i (a built one): the end of the run. */
static uint32_t built_run_end(const sp__span *s, uint32_t i) {
    uint32_t n = span_count(s);
    while (i < n) {
        uint32_t st = word_state(wload(&s->words[i]));
        if (st != SP__FREE && st != SP__LEASED) break;
        i++;
    }
    return i;
}

/* load refused member j of record k's span: dispose runs on every member loaded before it. */
static void dispose_loaded(sp_pool *p, uint32_t k, uint32_t j) {
    if (!p->cfg.dispose) return;
    for (uint32_t kk = 0; kk <= k; kk++) {
        sp__span *t = rec_span(&p->mem.recs[kk]);
        uint32_t end = !t ? 0u : kk == k ? j : span_count(t);
        for (uint32_t x = 0; x < end; x++) {
            uint32_t st = word_state(wload(&t->words[x]));
            if (st != SP__FREE && st != SP__LEASED) continue;
            p->act.hook_depth++;
            p->cfg.dispose(t->items + (size_t)x * p->hot.stride, p->cfg.user);
            p->act.hook_depth--;
        }
    }
}

/* Every built member's bytes, in slot order: runs of neighbours in one memcpy when the members
   are packed. False when load refused one (dispose has then run on those loaded before it). */
static bool members_read(sp_pool *p, const unsigned char *in, const snap_io *io) {
    for (uint32_t k = 0; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        uint32_t i = 0;
        while (s && i < span_count(s)) {
            uint32_t end = built_run_end(s, i);
            if (end == i) {
                i++;
                continue;
            }
            unsigned char *item = s->items + (size_t)i * p->hot.stride;
            size_t n = end - i;
            DBG_UNPOISON(item, n * p->hot.stride);
            if (io->load) {
                for (uint32_t j = i; j < end; j++, in += io->bytes) {
                    bool ok;
                    p->act.hook_depth++; /* load counts as a hook, as save does */
                    ok = io->load(s->items + (size_t)j * p->hot.stride, in, io->bytes, io->user);
                    p->act.hook_depth--;
                    if (!ok) {
                        dispose_loaded(p, k, j);
                        return false;
                    }
                }
            } else if (p->hot.stride == io->bytes) {
                memcpy(item, in, n * io->bytes);
                in += n * io->bytes;
            } else {
                for (uint32_t j = i; j < end; j++, in += io->bytes) memcpy(s->items + (size_t)j * p->hot.stride, in, io->bytes);
            }
#if SP_DEBUG
            for (uint32_t j = i; j < end; j++) /* free members: checksum and poison, as released */
                if (word_state(wload(&s->words[j])) == SP__FREE && !plain_test(p, s->first + j))
                    DBG_FREED(p, s->first + j, s->items + (size_t)j * p->hot.stride);
#endif
            i = end;
        }
    }
    return true;
}

static sp_pool *restore_refused(const sp_desc *desc, sp_pool *p, const char *why) {
    if (p) {
        (void)refuse(p, "sp_restore", why);
        sp__pool_discard(p);
    } else {
        sp__log_to(desc ? &desc->logger : NULL, desc && desc->name ? desc->name : "", SP__MSG_SNAP_REFUSED,
                   "sp_restore", why);
    }
    return NULL;
}

sp_pool *sp__pool_restore_in(const sp_desc *desc, const void *buf, size_t size, const sp_snapshot_io *io,
                             const sp__pool_owner *fns, void *owner, const char *default_name) {
    if (!desc) return restore_refused(NULL, NULL, "desc is NULL");
    if (!buf) return restore_refused(desc, NULL, "buf is NULL");
    if (desc->threads != SP_THREADS_NONE) return restore_refused(desc, NULL, "a thread-safe pool cannot be restored");
    snap_header h;
    reader r = {(const unsigned char *)buf, (const unsigned char *)buf + size, false};
    const char *why = header_read(&r, size, &h);
    if (why) return restore_refused(desc, NULL, why);
    sp_desc d = *desc;
    d.initial = 0; /* the snapshot says what is built */
    sp_pool *p = sp__pool_create_in(&d, fns, owner, default_name);
    if (!p) return restore_refused(desc, NULL, "no pool could be made from desc (the line above says why)");
    snap_io sio = {0, NULL, NULL, NULL};
    why = io_resolve(io, p->cfg.item_size, &sio);
    if (!why) why = fingerprint_check(p, &h, &sio);
    if (why) return restore_refused(desc, p, why);
    p->cfg.max = (size_t)h.max;
    p->cfg.overflow = (sp_overflow)h.overflow;
    if (p->cfg.fixed) p->mem.capacity = p->cfg.chunk_items = (size_t)h.capacity;
    if (h.flags & FLAG_SOURCE_FAILED) p->mem.source_failed = true; /* its growth takes the same sizes */
    size_t leased = 0, free_n = 0;
    why = records_read(p, &r, &h);
    if (!why) why = words_read(p, &r, &h, &leased, &free_n);
    if (!why) why = stack_read(p, &r, &h, free_n);
    if (!why) why = list_read(p, &r, &h, leased);
    if (!why && h.peak < leased) why = "the snapshot's peak is below its leased members";
    if (!why && (size_t)(r.end - r.at) != p->mem.size * sio.bytes) why = "the snapshot's sections do not add up";
    if (why) return restore_refused(desc, p, why);
    p->hot.acquired = h.acquired;
    p->counters = h.counters;
    p->act.peak_leased = (size_t)h.peak;
    p->act.stamp_origin = h.stamp_origin;
    p->act.reclaim_cursor = h.reclaim_cursor;
    peak_set(p);
    sp__holes_rebuild(p);
    sp__routes_update(p);
    if (h.flags & FLAG_TAGGED) {
        if (!sp__tag_claim(h.tag))
            return restore_refused(desc, p, "the saved pool tag is held by a live pool (destroy the pool you roll back first)");
        p->handles.tagged = true;
        p->handles.tag = h.tag;
        p->handles.life_base = h.life_base;
        sp__tag_holder_set(h.tag, p, false); /* (for the debugger printers, as a first handle does) */
    }
    /* load reads the pool as the snapshot made it, as save does: acquire and release refused */
    uint8_t was = sio.load ? sp__freeze(p, SP__FROZEN_LOAD) : 0u;
    bool loaded = members_read(p, r.at, &sio);
    if (sio.load) sp__thaw(p, was);
    if (!loaded) return restore_refused(desc, p, "load refused a member");
    return p;
}

sp_pool *sp_restore(const sp_desc *desc, const void *buf, size_t size, const sp_snapshot_io *io) {
    return sp__pool_restore_in(desc, buf, size, io, NULL, NULL, NULL);
}
