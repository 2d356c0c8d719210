/* SPDX-License-Identifier: Zlib */
/* dense_snapshot.c -- snapshot and restore of an sp_dense (spawnpool_dense.h, SNAPSHOT AND
   RESTORE), in the envelope sp_pool's snapshots use (snapshot_format.h): the scalars, the slot
   table (lives, the free list in its order, retired slots), the order of addition (RECLAIM),
   the back-pointers and the packed elements. A restored pool takes its snapshot's tag back, so
   that the saved handles resolve, and then adds into the same slots and places, with the same
   handles, as the saved pool would have. Every field is checked as if there were no checksum,
   so that a pool it makes passes sp__dense_check. */
#include "dense_internal.h"
#include "snapshot_format.h"

enum { DFLAG_FIXED = 1, DFLAG_CALLBACKS = 2 };

/* The fixed part after the kind: flags, overflow, tag, life_first, free_slot, oldest, newest;
   item_size, align, chunk_items, bytes, cap, slot_cap, limit, max, count, slot_used, retired,
   peak; 10 counters. */
#define DSNAP_HEADER (SNAP_ENVELOPE + 4u + 7u * 4u + 12u * 8u + 10u * 8u)

static void dense_refuse(const sp_dense *d, const sp_dense_desc *desc, const char *call, const char *why) {
    if (d)
        sp__dense_log(d, SP__MSG_SNAP_REFUSED, call, why);
    else
        sp__log_to(desc ? &desc->logger : NULL, desc && desc->name ? desc->name : "", SP__MSG_SNAP_REFUSED, call, why);
}

static size_t dense_size_for(const sp_dense *d, size_t bytes) {
    uint64_t fixed = (uint64_t)DSNAP_HEADER + 8u * (uint64_t)d->slot_used + (d->links ? 8u * (uint64_t)d->slot_used : 0u) +
                     4u * (uint64_t)d->count;
    if (bytes && d->count > (UINT64_MAX - fixed) / bytes) return 0;
    uint64_t total = fixed + (uint64_t)bytes * d->count;
    return total > SIZE_MAX ? 0 : (size_t)total;
}

size_t sp_dense_snapshot_size(const sp_dense *d, const sp_snapshot_io *io) {
    if (!d) {
        sp__null_pool("sp_dense_snapshot_size");
        return 0;
    }
    snap_io sio = {0, NULL, NULL, NULL};
    const char *why = io_resolve(io, d->item_size, &sio);
    if (why) {
        dense_refuse(d, NULL, "sp_dense_snapshot_size", why);
        return 0;
    }
    return dense_size_for(d, sio.bytes);
}

sp_result sp_dense_snapshot(const sp_dense *dense, void *buf, size_t size, const sp_snapshot_io *io) {
    if (!dense) {
        sp__null_pool("sp_dense_snapshot");
        return SP_ERR_INVALID;
    }
    sp_dense *d = (sp_dense *)(uintptr_t)dense; /* save runs as a callback: busy is bookkeeping */
    snap_io sio = {0, NULL, NULL, NULL};
    const char *why = d->busy ? "called from one of the pool's callbacks" : io_resolve(io, d->item_size, &sio);
    size_t need = why ? 0 : dense_size_for(d, sio.bytes);
    if (!why && !need) why = "the snapshot would not fit in the address space";
    if (!why && !buf) why = "buf is NULL";
    if (!why && size < need) why = "the buffer is smaller than sp_dense_snapshot_size";
    if (why) {
        dense_refuse(d, NULL, "sp_dense_snapshot", why);
        return SP_ERR_INVALID;
    }
    writer w = {(unsigned char *)buf};
    put32(&w, SNAP_MAGIC);
    put32(&w, SNAP_VERSION);
    put64(&w, 0);
    put64(&w, need);
    put32(&w, SNAP_KIND_DENSE);
    put32(&w, (d->fixed ? DFLAG_FIXED : 0u) | (sio.save ? DFLAG_CALLBACKS : 0u));
    put32(&w, (uint32_t)d->overflow);
    put32(&w, d->tag);
    put32(&w, d->life_first);
    put32(&w, d->free_slot);
    put32(&w, d->oldest);
    put32(&w, d->newest);
    put64(&w, d->item_size);
    put64(&w, d->align);
    put64(&w, d->chunk_items);
    put64(&w, sio.bytes);
    put64(&w, d->cap);
    put64(&w, d->slot_cap);
    put64(&w, d->limit);
    put64(&w, d->max);
    put64(&w, d->count);
    put64(&w, d->slot_used);
    put64(&w, d->retired);
    put64(&w, d->peak);
    counters_put(&w, &d->counters);
    for (size_t s = 0; s < d->slot_used; s++) {
        put32(&w, d->slots[s].index);
        put32(&w, d->slots[s].life);
    }
    for (size_t s = 0; d->links && s < d->slot_used; s++) {
        put32(&w, d->links[s].prev);
        put32(&w, d->links[s].next);
    }
    for (size_t i = 0; i < d->count; i++) put32(&w, d->back[i]);
    if (sio.save) {
        d->busy++; /* destroy and clear are refused, and so are adds and removes: the header is written */
        d->frozen = SP__FROZEN_SAVE;
        for (size_t i = 0; i < d->count; i++, w.at += sio.bytes) sio.save(d->items + i * d->stride, w.at, sio.bytes, sio.user);
        d->frozen = SP__THAWED;
        d->busy--;
    } else if (d->stride == sio.bytes) {
        if (d->count) memcpy(w.at, d->items, d->count * sio.bytes);
    } else {
        for (size_t i = 0; i < d->count; i++, w.at += sio.bytes) memcpy(w.at, d->items + i * d->stride, sio.bytes);
    }
    snap_seal((unsigned char *)buf, need);
    return SP_OK;
}

/* ---- restoring ------------------------------------------------------------------------- */

typedef struct dsnap {
    uint32_t flags, overflow, tag, life_first, free_slot, oldest, newest;
    uint64_t item_size, align, chunk_items, bytes, cap, slot_cap, limit, max, count, slot_used, retired, peak;
    sp__counters counters;
} dsnap;

static void dsnap_read(reader *r, dsnap *h) {
    h->flags = get32(r);
    h->overflow = get32(r);
    h->tag = get32(r);
    h->life_first = get32(r);
    h->free_slot = get32(r);
    h->oldest = get32(r);
    h->newest = get32(r);
    h->item_size = get64(r);
    h->align = get64(r);
    h->chunk_items = get64(r);
    h->bytes = get64(r);
    h->cap = get64(r);
    h->slot_cap = get64(r);
    h->limit = get64(r);
    h->max = get64(r);
    h->count = get64(r);
    h->slot_used = get64(r);
    h->retired = get64(r);
    h->peak = get64(r);
    counters_get(r, &h->counters);
}

static const char *dsnap_fits(const sp_dense *d, const dsnap *h, const snap_io *io) {
    if (h->flags & ~(uint32_t)(DFLAG_FIXED | DFLAG_CALLBACKS)) return "unknown flags in the snapshot";
    if (h->item_size != d->item_size || h->align != d->align) return "desc's item_size or item_align differs from the snapshot's";
    if (h->overflow != (uint32_t)d->overflow) return "desc's overflow differs from the snapshot's";
    if (!(h->flags & DFLAG_FIXED) != !d->fixed) return "one of desc and the snapshot has a fixed buffer, the other not";
    if (h->chunk_items != d->chunk_items || h->max != d->max) return "desc's max or chunk_items differs from the snapshot's";
    if (!(h->flags & DFLAG_CALLBACKS) != !io->load) return "io's save/load differ from the io the snapshot was saved with";
    if (h->bytes != io->bytes) return "io's bytes differ from the snapshot's";
    if (h->count > h->cap || h->cap > d->items_max || h->slot_used > h->slot_cap || h->slot_cap > SP_DENSE_MAX_ITEMS ||
        h->slot_cap < h->cap || h->count + h->retired > h->slot_used || h->limit > d->items_max || h->limit == 0 ||
        h->peak < h->count || h->tag >= SP_DENSE_TAGS || h->life_first == 0 || h->life_first > SP_DENSE_LIFE_MAX)
        return "the snapshot's sizes are invalid";
    if (d->fixed && h->cap > d->cap) return "desc's buffer holds fewer elements than the saved one";
    return NULL;
}

/* The slot table, the free list and the order list, checked against each other. */
static const char *dslots_read(sp_dense *d, reader *r, const dsnap *h) {
    size_t live = 0, retired = 0;
    for (size_t s = 0; s < h->slot_used; s++) {
        sp_dense_slot e = {get32(r), get32(r)};
        if (r->bad) return "truncated snapshot";
        if (e.life == SP_DENSE_LIFE_RETIRED) {
            if (e.index != dense_free_index(SP_DENSE_NONE)) return "the snapshot's slots are invalid";
            retired++;
        } else if (e.life < h->life_first || e.life > SP_DENSE_LIFE_MAX ||
                   (dense_slot_live(&e) ? e.index >= h->count : (e.index & DENSE_NEXT_MASK) != DENSE_NEXT_MASK &&
                                                                    (e.index & DENSE_NEXT_MASK) >= h->slot_used)) {
            return "the snapshot's slots are invalid";
        } else if (dense_slot_live(&e)) {
            live++;
        }
        d->slots[s] = e;
    }
    if (live != h->count || retired != h->retired) return "the snapshot's slots do not add up";
    size_t free_n = 0; /* the free list: free, not retired, each once (no cycle: at most slot_used steps) */
    for (uint32_t s = h->free_slot; s != SP_DENSE_NONE; s = dense_free_next(&d->slots[s])) {
        if (s >= h->slot_used || dense_slot_live(&d->slots[s]) || d->slots[s].life == SP_DENSE_LIFE_RETIRED ||
            ++free_n > h->slot_used)
            return "the snapshot's free list is invalid";
    }
    if (free_n + live + retired != h->slot_used) return "the snapshot's free list does not add up";
    if (d->links) {
        for (size_t s = 0; s < h->slot_used; s++) {
            d->links[s].prev = get32(r);
            d->links[s].next = get32(r);
        }
        if (r->bad) return "truncated snapshot";
        size_t n = 0;
        uint32_t prev = SP_DENSE_NONE;
        for (uint32_t s = h->oldest; s != SP_DENSE_NONE; prev = s, s = d->links[s].next)
            if (s >= h->slot_used || !dense_slot_live(&d->slots[s]) || d->links[s].prev != prev || ++n > h->count)
                return "the snapshot's order of addition is invalid";
        if (n != h->count || prev != h->newest) return "the snapshot's order of addition does not add up";
    } else if (h->oldest != SP_DENSE_NONE || h->newest != SP_DENSE_NONE) {
        return "the snapshot's order of addition is invalid";
    }
    for (size_t i = 0; i < h->count; i++) {
        uint32_t s = get32(r);
        if (r->bad) return "truncated snapshot";
        if (s >= h->slot_used || !dense_slot_live(&d->slots[s]) || d->slots[s].index != i)
            return "the snapshot's back-pointers are invalid";
        d->back[i] = s;
    }
    return NULL;
}

static sp_dense *dense_restore_refused(const sp_dense_desc *desc, sp_dense *d, const char *why) {
    dense_refuse(d, desc, "sp_dense_restore", why);
    if (d) {
        d->count = d->slot_used = 0; /* (nothing to run: sp_dense has no dispose; no life to mark) */
        sp_dense_destroy(d);
    }
    return NULL;
}

sp_dense *sp_dense_restore(const sp_dense_desc *desc, const void *buf, size_t size, const sp_snapshot_io *io) {
    if (!desc) return dense_restore_refused(NULL, NULL, "desc is NULL");
    if (!buf) return dense_restore_refused(desc, NULL, "buf is NULL");
    reader r = {(const unsigned char *)buf, (const unsigned char *)buf + size, false};
    const char *why = snap_open(&r, size, SNAP_KIND_DENSE);
    dsnap h;
    if (!why) {
        dsnap_read(&r, &h);
        if (r.bad) why = "truncated snapshot";
    }
    if (why) return dense_restore_refused(desc, NULL, why);
    if (h.tag >= SP_DENSE_TAGS || h.life_first == 0 || h.life_first > SP_DENSE_LIFE_MAX)
        return dense_restore_refused(desc, NULL, "the snapshot's pool tag is invalid");
    /* The saved tag first: its lives are the saved handles'. */
    if (!sp__tag_claim(h.tag))
        return dense_restore_refused(desc, NULL, "the saved pool tag is held by a live pool (destroy the pool you roll back first)");
    sp_dense_desc dd = *desc;
    dd.initial = 0;
    sp_dense *d = sp__dense_create_tagged(&dd, h.tag, h.life_first);
    if (!d) return NULL; /* (its line said why; the tag went back) */
    snap_io sio = {0, NULL, NULL, NULL};
    why = io_resolve(io, d->item_size, &sio);
    if (!why) why = dsnap_fits(d, &h, &sio);
    if (!why && !d->fixed && h.cap && !sp__dense_grow(d, (size_t)h.cap)) why = "out of memory for the elements";
    if (!why && !d->fixed && !sp__dense_grow_slots(d, (size_t)h.slot_cap)) why = "out of memory for the slot table";
    if (why) return dense_restore_refused(desc, d, why);
    if (d->fixed) d->cap = d->slot_cap = (size_t)h.cap; /* (links stay after the buffer's slots) */
    why = dslots_read(d, &r, &h);
    if (!why && (size_t)(r.end - r.at) != (size_t)h.count * sio.bytes) why = "the snapshot's sections do not add up";
    if (why) return dense_restore_refused(desc, d, why);
    d->count = (size_t)h.count;
    d->slot_used = (size_t)h.slot_used;
    d->retired = (size_t)h.retired;
    d->free_slot = h.free_slot;
    d->oldest = h.oldest;
    d->newest = h.newest;
    d->limit = (size_t)h.limit;
    d->peak = (size_t)h.peak;
    d->counters = h.counters;
    if (sio.load) {
        d->busy++;
        d->frozen = SP__FROZEN_LOAD;
        bool ok = true;
        for (size_t i = 0; i < d->count && ok; i++, r.at += sio.bytes) ok = sio.load(d->items + i * d->stride, r.at, sio.bytes, sio.user);
        d->frozen = SP__THAWED;
        d->busy--;
        if (!ok) return dense_restore_refused(desc, d, "load refused an element");
    } else if (d->stride == sio.bytes) {
        if (d->count) memcpy(d->items, r.at, d->count * sio.bytes);
    } else {
        for (size_t i = 0; i < d->count; i++, r.at += sio.bytes) memcpy(d->items + i * d->stride, r.at, sio.bytes);
    }
    return d;
}
