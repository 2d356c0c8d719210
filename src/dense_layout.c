/* SPDX-License-Identifier: Zlib */
/* dense_layout.c -- sp_dense's sizes: what a descriptor boils down to (alignment, stride, the
   most elements a pool of that shape holds) and where each part sits in a fixed buffer. Plain
   arithmetic on the descriptor, apart from any pool, so that sp_dense_create and
   sp_dense_buffer_size agree by construction and every size is proven below the largest block
   before anything is allocated (see HOW MANY ELEMENTS in spawnpool_dense.h). */
#include "dense_internal.h"

#include <stdio.h>
#include <string.h>

static bool dense_is_pow2(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

static size_t dense_name_len(const char *name) {
    if (!name) return 0;
    size_t n = strlen(name);
    return n > SP_DENSE_NAME_MAX ? SP_DENSE_NAME_MAX : n;
}

/* A fixed layout's worst-case bytes besides the elements and the item alignment's slack: the
   header, the name, and the slack to align the header, the back-pointers and the slots. */
static size_t dense_fixed_head(size_t name_len) {
    return (_Alignof(sp_dense) - 1) + sizeof(sp_dense) + name_len + 1 + (_Alignof(uint32_t) - 1) +
           (_Alignof(sp_dense_slot) - 1);
}

/* The slot table holds at most 2^24 entries whatever the item size: it never comes near the
   largest block, even with a 32-bit size_t. */
_Static_assert(SP_DENSE_MAX_ITEMS * (sizeof(sp_dense_slot) + sizeof(sp_dense_link)) <= 0x7FFFFFFFu,
               "the slot table fits in 2 GiB");

/* The most elements of this shape a dense pool holds: 2^24 (the handles' slot bits), or fewer
   when n * per_item + head would pass bytes_max. Every byte count of the pool (the fixed
   layout, the items block, the slot table) is at most that sum for n elements, so no size
   computed for n <= items_max wraps. */
static size_t dense_items_max(size_t head, size_t per_item, size_t bytes_max) {
    size_t n = (bytes_max - head) / per_item;
    return n > SP_DENSE_MAX_ITEMS ? SP_DENSE_MAX_ITEMS : n;
}

bool sp__dense_shape_of(const sp_dense_desc *desc, size_t bytes_max, dense_shape *out, char *why,
                        size_t why_size) {
    if (desc->item_size == 0) { snprintf(why, why_size, "item_size is 0"); return false; }
    size_t align = desc->item_align;
    if (align == 0) {
        align = desc->item_size & (~desc->item_size + 1); /* lowest set bit: natural alignment */
        if (align > 16) align = 16;
    }
    if (!dense_is_pow2(align)) { snprintf(why, why_size, "item_align is not a power of two"); return false; }
    size_t name_len = dense_name_len(desc->name);
    size_t fixed = dense_fixed_head(name_len);
    if (fixed >= bytes_max || align - 1 > bytes_max - fixed - 1) {
        snprintf(why, why_size, "item_align is too large (%zu: no layout fits in %zu bytes, the largest block)",
                 align, bytes_max);
        return false;
    }
    size_t head = fixed + (align - 1); /* < bytes_max */
    size_t room = bytes_max - head;    /* for the elements */
    size_t slot_bytes = sizeof(sp_dense_slot) +
                        (desc->overflow == SP_OVERFLOW_RECLAIM ? sizeof(sp_dense_link) : 0);
    size_t beside = sizeof(uint32_t) + slot_bytes; /* per element, besides the item */
    /* item_size <= room first, so that rounding it up to the alignment cannot wrap */
    size_t stride = desc->item_size <= room ? dense_align_up(desc->item_size, align) : SIZE_MAX;
    if (stride > room || room - stride < beside) {
        snprintf(why, why_size, "item_size is too large (%zu: not one element fits in %zu bytes, the largest block)",
                 desc->item_size, bytes_max);
        return false;
    }
    size_t items_max = dense_items_max(head, stride + beside, bytes_max);
    if (desc->max > items_max) {
        snprintf(why, why_size, "max is %zu, above %zu, the most elements a dense pool of stride %zu holds",
                 desc->max, items_max, stride);
        return false;
    }
    out->item_size = desc->item_size;
    out->align = align;
    out->stride = stride;
    out->name_len = name_len;
    out->max = desc->max;
    out->slot_bytes = slot_bytes;
    out->head = head;
    out->per_item = stride + beside;
    out->items_max = items_max;
    return true;
}

/* The padding that aligns base + off to align. */
static size_t dense_pad(uintptr_t base, size_t off, size_t align) {
    size_t mask = align - 1;
    size_t misaligned = ((size_t)(base & (uintptr_t)mask) + (off & mask)) & mask;
    return (align - misaligned) & mask;
}

dense_layout sp__dense_layout_at(uintptr_t base, const dense_shape *sh, size_t n) {
    SP_ASSERT(n <= sh->items_max);
    dense_layout l;
    l.self = dense_pad(base, 0, _Alignof(sp_dense));
    size_t self_end = l.self + sizeof(sp_dense) + sh->name_len + 1;
    l.items = self_end + dense_pad(base, self_end, sh->align);
    size_t items_end = l.items + n * sh->stride;
    l.back = items_end + dense_pad(base, items_end, _Alignof(uint32_t));
    size_t back_end = l.back + n * sizeof(uint32_t);
    l.slots = back_end + dense_pad(base, back_end, _Alignof(sp_dense_slot));
    l.end = l.slots + n * sh->slot_bytes;
    return l;
}

/* An upper bound on sp__dense_layout_at(base, sh, n).end over every base; at most bytes_max for
   n <= items_max. */
static size_t dense_layout_worst(const dense_shape *sh, size_t n) {
    SP_ASSERT(n <= sh->items_max);
    return sh->head + n * sh->per_item;
}

size_t sp_dense_buffer_size(const sp_dense_desc *desc, size_t n) {
    dense_shape sh;
    char why[160];
    if (!desc || n == 0 || !sp__dense_shape_of(desc, SP_DENSE_BYTES_MAX, &sh, why, sizeof why) ||
        n > sh.items_max)
        return 0;
    return dense_layout_worst(&sh, n);
}

/* White-box: the most elements a dense pool of desc holds when the largest block is bytes_max
   bytes (0: desc is refused), so that tests can check the limits a 32-bit size_t gives
   (bytes_max 2^31 - 1) from a 64-bit build. */
size_t sp__dense_items_max(const sp_dense_desc *desc, size_t bytes_max) {
    dense_shape sh;
    char why[160];
    return sp__dense_shape_of(desc, bytes_max, &sh, why, sizeof why) ? sh.items_max : 0;
}
