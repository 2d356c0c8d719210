/* SPDX-License-Identifier: Zlib */
/* registry.c -- named pools that a scene owns. Besides the names, the registry keeps every
   chunk of every pool it owns in one array sorted by address, so that it can send any member
   home to its own pool in O(log chunks) without the caller knowing which pool that is. */
#include "sp_internal.h"

#include <string.h>

typedef struct sp__entry {
    char *name;
    sp_pool *pool;
} sp__entry;

typedef struct sp__range {
    uintptr_t lo, hi; /* [lo, hi): the members of one chunk */
    sp_pool *pool;
} sp__range;

struct sp_registry {
    sp__entry *entries;
    size_t count, cap;
    sp__range *ranges;
    size_t range_count, range_cap;
    bool destroying;
    sp_allocator allocator; /* for the registry's tables, and the default of its pools */
    sp_logger logger;       /* for its own lines, and the default of its pools */
};

static void *reg_alloc(sp_registry *reg, size_t size) {
    return reg->allocator.alloc(size, _Alignof(max_align_t), reg->allocator.user);
}

static void reg_free(sp_registry *reg, void *ptr, size_t size) {
    if (ptr) reg->allocator.free(ptr, size, reg->allocator.user);
}

/* Grows an array of `cap` elements of `size` bytes to twice that (at least `first`), keeping the
   old one when the allocator fails. */
static bool reg_grow(sp_registry *reg, void **array, size_t *cap, size_t size, size_t first) {
    size_t fresh_cap = *cap ? *cap * 2u : first;
    void *fresh = reg_alloc(reg, fresh_cap * size);
    if (!fresh) return false;
    if (*array) memcpy(fresh, *array, *cap * size);
    reg_free(reg, *array, *cap * size);
    *array = fresh;
    *cap = fresh_cap;
    return true;
}

sp_registry *sp_registry_create_with(const sp_registry_desc *desc) {
    sp_registry_desc d = desc ? *desc : (sp_registry_desc){{NULL, NULL, NULL}, {NULL, NULL}};
    if (!d.allocator.alloc != !d.allocator.free) {
        sp__log_to(&d.logger, "registry", SP__MSG_BAD_DESC, "allocator needs both alloc and free");
        return NULL;
    }
    if (!d.allocator.alloc) {
        d.allocator.alloc = sp__default_alloc;
        d.allocator.free = sp__default_free;
    }
    sp_registry *reg = (sp_registry *)d.allocator.alloc(sizeof *reg, _Alignof(sp_registry), d.allocator.user);
    if (!reg) {
        sp__log_to(&d.logger, "registry", SP__MSG_NOMEM, "registry");
        return NULL;
    }
    memset(reg, 0, sizeof *reg);
    reg->allocator = d.allocator;
    reg->logger = d.logger;
    return reg;
}

sp_registry *sp_registry_create(void) { return sp_registry_create_with(NULL); }

/* Index of the first range with lo > a. */
static size_t ranges_upper(const sp_registry *reg, uintptr_t a) {
    size_t lo = 0, hi = reg->range_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2u;
        if (reg->ranges[mid].lo <= a)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}

sp_result sp__registry_chunk_added(sp_registry *reg, sp_pool *pool, uintptr_t lo, uintptr_t hi) {
    if (reg->range_count == reg->range_cap &&
        !reg_grow(reg, (void **)&reg->ranges, &reg->range_cap, sizeof *reg->ranges, 16u))
        return SP_ERR_NOMEM;
    size_t at = ranges_upper(reg, lo);
    memmove(reg->ranges + at + 1, reg->ranges + at, (reg->range_count - at) * sizeof *reg->ranges);
    reg->ranges[at].lo = lo;
    reg->ranges[at].hi = hi;
    reg->ranges[at].pool = pool;
    reg->range_count++;
    return SP_OK;
}

void sp__registry_chunk_removed(sp_registry *reg, uintptr_t lo) {
    size_t at = ranges_upper(reg, lo);
    if (at == 0 || reg->ranges[at - 1u].lo != lo) return;
    at--;
    memmove(reg->ranges + at, reg->ranges + at + 1, (reg->range_count - at - 1u) * sizeof *reg->ranges);
    reg->range_count--;
}

void sp__registry_forget(sp_registry *reg, const sp_pool *pool) {
    size_t keep = 0;
    for (size_t i = 0; i < reg->range_count; i++)
        if (reg->ranges[i].pool != pool) reg->ranges[keep++] = reg->ranges[i];
    reg->range_count = keep;
    if (reg->destroying) return; /* sp_registry_destroy walks the entries itself */
    for (size_t i = 0; i < reg->count; i++) {
        if (reg->entries[i].pool == pool) {
            reg_free(reg, reg->entries[i].name, strlen(reg->entries[i].name) + 1u);
            memmove(reg->entries + i, reg->entries + i + 1, (reg->count - i - 1u) * sizeof *reg->entries);
            reg->count--;
            break;
        }
    }
}

void sp_registry_destroy(sp_registry *reg) {
    if (!reg) return;
    reg->destroying = true;
    for (size_t i = 0; i < reg->count; i++) {
        sp_pool_destroy(reg->entries[i].pool);
        reg_free(reg, reg->entries[i].name, strlen(reg->entries[i].name) + 1u);
    }
    reg_free(reg, reg->entries, reg->cap * sizeof *reg->entries);
    reg_free(reg, reg->ranges, reg->range_cap * sizeof *reg->ranges);
    sp_allocator a = reg->allocator;
    a.free(reg, sizeof *reg, a.user);
}

static size_t entry_find(const sp_registry *reg, const char *name) {
    for (size_t i = 0; i < reg->count; i++)
        if (strcmp(reg->entries[i].name, name) == 0) return i;
    return SIZE_MAX;
}

sp_pool *sp_registry_add(sp_registry *reg, const char *name, const sp_desc *desc) {
    if (!reg || !name || !name[0] || !desc) {
        const sp_logger *logger = desc && desc->logger.log ? &desc->logger : reg ? &reg->logger : NULL;
        sp__log_to(logger, name ? name : "registry", SP__MSG_BAD_DESC,
                   "sp_registry_add needs a registry, a name and a desc");
        return NULL;
    }
    /* The pool's allocator and logger default to the registry's. */
    sp_desc d = *desc;
    if (!d.allocator.alloc && !d.allocator.free) d.allocator = reg->allocator;
    if (!d.logger.log) d.logger = reg->logger;
    if (entry_find(reg, name) != SIZE_MAX) {
        sp__log_to(&d.logger, name, SP__MSG_BAD_DESC, "a pool of that name is already registered");
        return NULL;
    }
    if (reg->count == reg->cap && !reg_grow(reg, (void **)&reg->entries, &reg->cap, sizeof *reg->entries, 8u)) {
        sp__log_to(&d.logger, name, SP__MSG_NOMEM, "registry");
        return NULL;
    }
    size_t len = strlen(name);
    char *copy = (char *)reg_alloc(reg, len + 1u);
    if (!copy) {
        sp__log_to(&d.logger, name, SP__MSG_NOMEM, "registry name");
        return NULL;
    }
    memcpy(copy, name, len + 1u);
    sp_pool *pool = sp__pool_create_in(&d, reg, name);
    if (!pool) {
        reg_free(reg, copy, len + 1u);
        return NULL;
    }
    reg->entries[reg->count].name = copy;
    reg->entries[reg->count].pool = pool;
    reg->count++;
    return pool;
}

sp_result sp_registry_remove(sp_registry *reg, const char *name) {
    if (!reg || !name) return SP_ERR_INVALID;
    size_t i = entry_find(reg, name);
    if (i == SIZE_MAX) return SP_ERR_INVALID;
    sp_pool_destroy(reg->entries[i].pool); /* forgets its entry and ranges */
    return SP_OK;
}

sp_pool *sp_registry_get(const sp_registry *reg, const char *name) {
    if (!reg || !name) return NULL;
    size_t i = entry_find(reg, name);
    return i == SIZE_MAX ? NULL : reg->entries[i].pool;
}

size_t sp_registry_count(const sp_registry *reg) { return reg ? reg->count : 0; }

sp_pool *sp_registry_pool_at(const sp_registry *reg, size_t index) {
    return reg && index < reg->count ? reg->entries[index].pool : NULL;
}

void *sp_spawn(sp_registry *reg, const char *name, const void *arg) {
    return sp_spawn_at(reg, name, arg, NULL, 0);
}

void *sp_spawn_at(sp_registry *reg, const char *name, const void *arg, const char *file, int line) {
    sp_pool *pool = sp_registry_get(reg, name);
    return pool ? sp_acquire_with_at(pool, arg, file, line) : NULL;
}

/* The pool whose chunk contains item's address, whatever the slot state. */
static sp_pool *range_owner(const sp_registry *reg, const void *item) {
    uintptr_t a = (uintptr_t)item;
    size_t at = ranges_upper(reg, a);
    if (at == 0) return NULL;
    const sp__range *r = &reg->ranges[at - 1u];
    return a < r->hi ? r->pool : NULL;
}

sp_pool *sp_registry_owner(const sp_registry *reg, const void *item) {
    if (!reg || !item) return NULL;
    sp_pool *pool = range_owner(reg, item);
    return pool && sp__pool_has_member(pool, item) ? pool : NULL;
}

sp_result sp_registry_release(sp_registry *reg, void *item) {
    return sp_registry_release_at(reg, item, NULL, 0);
}

sp_result sp_registry_release_at(sp_registry *reg, void *item, const char *file, int line) {
    if (!item) return SP_OK;
    if (!reg) return SP_ERR_INVALID;
    sp_pool *pool = range_owner(reg, item);
    if (!pool) {
        sp__log_to(&reg->logger, "registry", SP__MSG_FOREIGN, item);
        return SP_ERR_FOREIGN;
    }
    return sp_release_at(pool, item, file, line);
}
