/* registry.c -- named pools that a scene owns. Besides the names, the registry keeps every
   chunk of every pool it owns in one array sorted by address, so that it can send any member
   home to its own pool in O(log chunks) without the caller knowing which pool that is. */
#include "sp_internal.h"

#include <stdlib.h>
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
};

static const sp_logger sp__registry_logger = {NULL, NULL}; /* the default: stderr */

sp_registry *sp_registry_create(void) {
    sp_registry *reg = (sp_registry *)calloc(1, sizeof *reg);
    if (!reg) sp__log_to(&sp__registry_logger, "registry", SP__MSG_NOMEM, "registry");
    return reg;
}

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
    if (reg->range_count == reg->range_cap) {
        size_t cap = reg->range_cap ? reg->range_cap * 2u : 16u;
        sp__range *grown = (sp__range *)realloc(reg->ranges, cap * sizeof *grown);
        if (!grown) return SP_ERR_NOMEM;
        reg->ranges = grown;
        reg->range_cap = cap;
    }
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
            free(reg->entries[i].name);
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
        free(reg->entries[i].name);
    }
    free(reg->entries);
    free(reg->ranges);
    free(reg);
}

static size_t entry_find(const sp_registry *reg, const char *name) {
    for (size_t i = 0; i < reg->count; i++)
        if (strcmp(reg->entries[i].name, name) == 0) return i;
    return SIZE_MAX;
}

sp_pool *sp_registry_add(sp_registry *reg, const char *name, const sp_desc *desc) {
    if (!reg || !name || !name[0] || !desc) {
        sp__log_to(desc ? &desc->logger : &sp__registry_logger, name ? name : "registry",
                   SP__MSG_BAD_DESC, "sp_registry_add needs a registry, a name and a desc");
        return NULL;
    }
    if (entry_find(reg, name) != SIZE_MAX) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "a pool of that name is already registered");
        return NULL;
    }
    if (reg->count == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2u : 8u;
        sp__entry *grown = (sp__entry *)realloc(reg->entries, cap * sizeof *grown);
        if (!grown) {
            sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "registry");
            return NULL;
        }
        reg->entries = grown;
        reg->cap = cap;
    }
    size_t len = strlen(name);
    char *copy = (char *)malloc(len + 1u);
    if (!copy) {
        sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "registry name");
        return NULL;
    }
    memcpy(copy, name, len + 1u);
    sp_pool *pool = sp__pool_create_in(desc, reg, name);
    if (!pool) {
        free(copy);
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
        sp__log_to(&sp__registry_logger, "registry", SP__MSG_FOREIGN, item);
        return SP_ERR_FOREIGN;
    }
    return sp_release_at(pool, item, file, line);
}
