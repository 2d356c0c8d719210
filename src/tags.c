/* SPDX-License-Identifier: Zlib */
/* tags.c -- pool tags: the 17 bits of a handle that keep the handles of different pools apart.

   A pool takes a tag with its first handle (sp_dense at creation), so pools that never issue a
   handle take none and their number is limited by memory only. Tags come back when their pools
   go: what keeps a destroyed pool's handles out of the next pool of its tag is the life. The
   table remembers, per tag, the highest life any pool handed out under it, and a pool that takes
   the tag hands out only lives above that. A handle of an earlier pool then carries a life below
   the new pool's first: it matches nothing there. A tag left with fewer than
   SP__TAG_LIFE_RESERVE lives above its mark retires for good, so every pool's slots have at
   least that many lives each. The bound this gives is in docs/design.md (Handles).

   Tags are handed out round robin (a returned tag is the last to come back, and wear spreads
   over all of them). Taking and returning are cold and short, so a spinlock is enough. */
#include "sp_internal.h"

#include <stdatomic.h>

#define TAG_WORDS (SP__TAG_COUNT / 64u)

static atomic_flag tag_lock = ATOMIC_FLAG_INIT;
static uint64_t tag_used[TAG_WORDS];    /* taken by a live pool */
static uint64_t tag_retired[TAG_WORDS]; /* lives used up: never again */
static uint32_t tag_high[SP__TAG_COUNT]; /* the highest life handed out under each tag */
static uint32_t tag_cursor;              /* where the next search starts */
static uint32_t tag_limit = SP__TAG_COUNT; /* tags below this are handed out (white-box) */
/* Who holds each tag: its sp_pool or sp_dense (the low bit set for an sp_dense), 0 when free.
   The library never reads it: a debugger does, to find the pool a handle names (tools/debugger).
   External (sp_internal.h), so that an optimiser keeps it although nothing here reads it;
   zeroed memory, so the pages no tag touched cost nothing. */
uintptr_t sp__tag_holders[SP__TAG_COUNT];

void sp__tags_lock(void) {
    while (atomic_flag_test_and_set_explicit(&tag_lock, memory_order_acquire)) {
    }
}

void sp__tags_unlock(void) { atomic_flag_clear_explicit(&tag_lock, memory_order_release); }

static bool bit_get(const uint64_t *bits, uint32_t tag) { return (bits[tag / 64u] >> (tag % 64u)) & 1u; }

static void bit_put(uint64_t *bits, uint32_t tag, bool on) {
    uint64_t bit = UINT64_C(1) << (tag % 64u);
    bits[tag / 64u] = on ? bits[tag / 64u] | bit : bits[tag / 64u] & ~bit;
}

bool sp__tag_acquire(uint32_t *tag, uint32_t *first_life) {
    bool found = false;
    sp__tags_lock();
    /* Word by word from the cursor: a word with a tag neither used nor retired has one. */
    for (uint32_t k = 0; k <= TAG_WORDS && !found; k++) {
        uint32_t w = (tag_cursor / 64u + k) % TAG_WORDS;
        uint64_t open = ~(tag_used[w] | tag_retired[w]);
        if (k == 0) open &= ~UINT64_C(0) << (tag_cursor % 64u); /* from the cursor on */
        if (w * 64u >= tag_limit) open = 0;
        else if (tag_limit - w * 64u < 64u) open &= (UINT64_C(1) << (tag_limit - w * 64u)) - 1u;
        if (!open) continue;
        uint32_t t = w * 64u;
        while (!(open & 1u)) {
            open >>= 1;
            t++;
        }
        bit_put(tag_used, t, true);
        tag_cursor = (t + 1u) % tag_limit;
        *tag = t;
        *first_life = tag_high[t] + 1u;
        found = true;
    }
    sp__tags_unlock();
    return found;
}

bool sp__tag_claim(uint32_t tag) {
    if (tag >= SP__TAG_COUNT) return false;
    sp__tags_lock();
    bool free_now = !bit_get(tag_used, tag);
    if (free_now) bit_put(tag_used, tag, true);
    sp__tags_unlock();
    return free_now;
}

void sp__tag_release(uint32_t tag, uint32_t highest_life) {
    if (tag >= SP__TAG_COUNT) return;
    sp__tags_lock();
    if (highest_life > tag_high[tag]) tag_high[tag] = highest_life;
    /* The next pool would start at high + 1 and must have the reserve after it. */
    if (tag_high[tag] >= SP__LIFE_MAX - SP__TAG_LIFE_RESERVE) bit_put(tag_retired, tag, true);
    bit_put(tag_used, tag, false);
    sp__tag_holders[tag] = 0;
    sp__tags_unlock();
}

void sp__tag_holder_set(uint32_t tag, const void *holder, bool dense) {
    if (tag >= SP__TAG_COUNT) return;
    sp__tags_lock();
    sp__tag_holders[tag] = (uintptr_t)holder | (dense ? 1u : 0u);
    sp__tags_unlock();
}

uint32_t sp__tags_retired(void) {
    uint32_t n = 0;
    sp__tags_lock();
    for (uint32_t t = 0; t < SP__TAG_COUNT; t++) n += bit_get(tag_retired, t);
    sp__tags_unlock();
    return n;
}

uint32_t sp__tag_high_water(uint32_t tag) {
    if (tag >= SP__TAG_COUNT) return 0;
    sp__tags_lock();
    uint32_t high = tag_high[tag];
    sp__tags_unlock();
    return high;
}

bool sp__tag_is_retired(uint32_t tag) {
    if (tag >= SP__TAG_COUNT) return false;
    sp__tags_lock();
    bool retired = bit_get(tag_retired, tag);
    sp__tags_unlock();
    return retired;
}

void sp__tags_reset(void) {
    sp__tags_lock();
    for (uint32_t t = 0; t < SP__TAG_COUNT; t++) {
        if (bit_get(tag_used, t)) continue; /* a live pool's lives stay its own */
        bit_put(tag_retired, t, false);
        tag_high[t] = 0;
    }
    sp__tags_unlock();
}

void sp__tags_limit(uint32_t n) {
    sp__tags_lock();
    tag_limit = n && n < SP__TAG_COUNT ? n : SP__TAG_COUNT;
    tag_cursor %= tag_limit;
    sp__tags_unlock();
}
