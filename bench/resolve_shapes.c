/* SPDX-License-Identifier: Zlib */
/*
    resolve_shapes.c -- what a resolve costs in three slot layouts, counted by callgrind.

    Not part of the build: a design experiment behind CHANGELOG.md (0.4.0, "The resolve: the
    mark"), kept so that its numbers can be checked. It asks whether a pool can keep
    the inline resolve at 12 instructions or fewer with a 4-byte life a member (which an
    8-byte-a-member layout with dense lease state needs) instead of today's 8-byte slot.

        gcc -O2 -std=c11 -Wall -Wextra -Werror -o /tmp/resolve_shapes bench/resolve_shapes.c
        for m in today split fixed base; do
          valgrind -q --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/rs.$m \
            /tmp/resolve_shapes $m
          awk -v m=$m '/^totals:/ { print m, $2 / 1e6 }' /tmp/rs.$m
        done

    Each mode resolves 1,000,000 handles in a loop, one in eight stale, through a struct laid
    out like the header's struct sp__pool_hot; "base" is the same loop without the resolve.
    Instructions a resolve = (mode - base) / 1e6.
    - today: the header's resolve. The handle less the pool's tag is the slot index (low 32
      bits) and the life word (high 32); the 8-byte slot holds the same while leased, so one
      64-bit compare checks life, tag and state.
    - split: a 4-byte life word a slot, the handle split the other way round (index high,
      word low). One compare of the handle against the slot count << 32 bounds the index; the
      word compares as the handle's low half in place; the index needs a copy and a shift.
    - fixed: split, with the life words at a constant offset from the pool struct (the struct
      placed in its own reservation, just before them), so no load of their address.
    gcc 12 -O2, x86-64 baseline: today 13.0, split 13.875, fixed 12.875 (clang 14: split one
    more than today, fixed the same as today).
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#define LIKELY(x) __builtin_expect(!!(x), 1)
/* As the header's SP__HOT_OPAQUE: the stale path reads the slot again instead of keeping its
   address in a register across the hit path. */
#define OPAQUE(x) __asm__("" : "+r"(x))

enum { LIVE = 1000, LIVES_OFFSET = 4096 };

/* The fields and order of include/spawnpool.h's struct sp__pool_hot; only some are used. */
struct hot {
    uint32_t free_head, plain_below;
    uintptr_t top_items;
    uint64_t stride_inv, top_plain, top_first;
    unsigned char *slots;
    size_t stride;
    uintptr_t items0;
    uint64_t acquired;
    intptr_t headroom;
    size_t peak_leased;
    uint64_t tag_bits, resolve_below;
    uint32_t stride_rot, slot_size;
    uint32_t life_first;
};

/* The out-of-line part (never reached by a live handle). */
__attribute__((noinline)) static void *slow(const struct hot *p, uint64_t d) {
    (void)p;
    (void)d;
    return NULL;
}

/* A stale handle whose life the slot has moved past: NULL at once, as the header's is. */
static inline int stale(uint32_t word, uint32_t handle_word, uint32_t life_first) {
    return (handle_word & 15u) == 0 && word > handle_word + 15u && handle_word >> 4 >= life_first;
}

static inline void *resolve_today(const struct hot *hot, uint64_t id) {
    uint64_t d = id;
    if (hot) {
        d -= hot->tag_bits;
        uintptr_t idx = (uint32_t)d;
        if (LIKELY(idx < hot->resolve_below)) {
            uint64_t slot;
            memcpy(&slot, hot->slots + idx * 8u, 8u);
            if (LIKELY(slot == d)) return (void *)(hot->items0 + idx * hot->stride);
            OPAQUE(idx);
            memcpy(&slot, hot->slots + idx * 8u, 8u);
            if (stale((uint32_t)(slot >> 32), (uint32_t)(d >> 32), hot->life_first)) return NULL;
        }
    }
    return slow(hot, d);
}

static inline void *resolve_split(const struct hot *hot, uint64_t id) {
    uint64_t d = id;
    if (hot) {
        d -= hot->tag_bits;
        if (LIKELY(d < hot->resolve_below)) { /* resolve_below: the slot count << 32 */
            uintptr_t idx = d >> 32;
            uint32_t word;
            memcpy(&word, hot->slots + idx * 4u, 4u);
            if (LIKELY(word == (uint32_t)d)) return (void *)(hot->items0 + idx * hot->stride);
            OPAQUE(idx);
            memcpy(&word, hot->slots + idx * 4u, 4u);
            if (stale(word, (uint32_t)d, hot->life_first)) return NULL;
        }
    }
    return slow(hot, d);
}

static inline void *resolve_fixed(const struct hot *hot, uint64_t id) {
    uint64_t d = id;
    if (hot) {
        d -= hot->tag_bits;
        if (LIKELY(d < hot->resolve_below)) {
            uintptr_t idx = d >> 32;
            const unsigned char *lives = (const unsigned char *)hot + LIVES_OFFSET;
            uint32_t word;
            memcpy(&word, lives + idx * 4u, 4u);
            if (LIKELY(word == (uint32_t)d)) return (void *)(hot->items0 + idx * hot->stride);
            OPAQUE(idx);
            memcpy(&word, lives + idx * 4u, 4u);
            if (stale(word, (uint32_t)d, hot->life_first)) return NULL;
        }
    }
    return slow(hot, d);
}

static volatile uintptr_t sink;

int main(int argc, char **argv) {
    enum { TODAY, SPLIT, FIXED, BASE } mode;
    const char *m = argc > 1 ? argv[1] : "";
    if (strcmp(m, "today") == 0) mode = TODAY;
    else if (strcmp(m, "split") == 0) mode = SPLIT;
    else if (strcmp(m, "fixed") == 0) mode = FIXED;
    else if (strcmp(m, "base") == 0) mode = BASE;
    else return 2;
    const size_t k = 1000000;
    /* The struct, then (fixed) its slots at LIVES_OFFSET; members are never touched. */
    struct hot *h = calloc(1, LIVES_OFFSET + 8u * LIVE);
    static uint64_t ids[LIVE];
    if (h == NULL) return 1;
    h->slots = mode == FIXED ? (unsigned char *)h + LIVES_OFFSET : calloc(LIVE, 8u);
    if (h->slots == NULL) return 1;
    h->stride = 64;
    h->items0 = 0x10000;
    h->tag_bits = (uint64_t)1 << 56 | 5u << 24; /* a tag in both halves, as handles carry one */
    h->life_first = 1;
    const bool split = mode != TODAY;
    for (uint64_t i = 0; i < LIVE; i++) {
        uint32_t word = 3u << 4, moved = word + 16u; /* life 3, leased; every eighth moved on */
        if (split) {
            memcpy(h->slots + i * 4u, i % 8u ? &word : &moved, 4u);
            ids[i] = (i << 32 | word) + h->tag_bits;
        } else {
            uint64_t slot = (uint64_t)word << 32 | i, stale_slot = (uint64_t)moved << 32 | i;
            memcpy(h->slots + i * 8u, i % 8u ? &slot : &stale_slot, 8u);
            ids[i] = slot + h->tag_bits;
        }
    }
    h->resolve_below = split ? (uint64_t)LIVE << 32 : LIVE;
    const struct hot *volatile opaque = h; /* not a constant the compiler can fold */
    const struct hot *hp = opaque;
    uintptr_t acc = 0;
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    switch (mode) {
    case TODAY:
        for (size_t i = 0; i < k; i++) acc += (uintptr_t)resolve_today(hp, ids[i % LIVE]);
        break;
    case SPLIT:
        for (size_t i = 0; i < k; i++) acc += (uintptr_t)resolve_split(hp, ids[i % LIVE]);
        break;
    case FIXED:
        for (size_t i = 0; i < k; i++) acc += (uintptr_t)resolve_fixed(hp, ids[i % LIVE]);
        break;
    case BASE:
        for (size_t i = 0; i < k; i++) acc += (uintptr_t)ids[i % LIVE];
        break;
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    sink = acc;
    if (mode != FIXED) free(h->slots);
    free(h);
    return 0;
}
