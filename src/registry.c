/* SPDX-License-Identifier: Zlib */
/* registry.c -- named pools that a scene owns.
   - entries: the pools in order of addition (sp_registry_pool_at, destroy, release_all);
   - names:   an open-addressed table name -> pool, so that sp_spawn is O(1) expected;
   - tags:    an open-addressed table pool tag -> pool, so that sp_registry_resolve is O(1);
   - ranges:  every range of every pool in one array sorted by address, so that any member is
              sent home to its own pool in O(log ranges) without the caller knowing which.
   Both tables have twice the entries' capacity and grow with them, all three or none.

   Hooks may call back into the registry at any moment. Two moments are special: while the
   registry destroys its pools every registry call from a hook is refused (the registry is
   half gone), and while a hook of one of its pools runs (or a pool is being added) the registry
   itself may not be destroyed.

   A registry holding a thread-safe pool guards its address index with a lock (`threaded`):
   such a pool may add a range (fallback growth) while another thread looks an address up in
   sp_registry_release. The names and tags change only in add, remove and destroy, which need
   quiescence. */
#include "sp_internal.h"
#include "snapshot_format.h"
#include "sp_os.h"

#include <string.h>

typedef struct sp__entry {
    char *name;
    sp_pool *pool;
    uint32_t hash;
} sp__entry;

typedef struct sp__name_slot {
    const char *name; /* the entry's copy */
    sp_pool *pool;    /* NULL: empty slot */
    uint32_t hash;
} sp__name_slot;

typedef struct sp__tag_slot {
    sp_pool *pool; /* NULL: empty slot */
    uint32_t tag;
} sp__tag_slot;

typedef struct sp__reg_range {
    uintptr_t lo, hi; /* [lo, hi): one range of a pool (a reservation: the whole of it) */
    sp_pool *pool;
} sp__reg_range;

struct sp_registry {
    sp__entry *entries;
    size_t count, cap;
    sp__name_slot *names; /* 2 * cap slots */
    sp__tag_slot *tags;   /* 2 * cap slots */
    sp__reg_range *ranges;
    size_t range_count, range_cap;
    const char *adding; /* the name of the pool sp_registry_add is building (its hooks run) */
    bool destroying;
    bool releasing_all;
    bool restoring; /* sp_registry_restore runs the caller's desc_of, io_of and load */
    bool threaded; /* a thread-safe pool was added: the address index is used under `lock` */
#if SP__HAVE_THREADS
    sp__leaf_lock lock; /* a leaf lock, which fork's handlers know */
#endif
    sp_allocator allocator; /* for the registry's tables, and the default of its pools */
    sp_logger logger;       /* for its own lines, and the default of its pools */
};

#define REG_NAME "registry" /* the pool name on the registry's own log lines */

/* A pool's tag; false while it has none (it takes one with its first handle). */
static bool pool_tag(const sp_pool *pool, uint32_t *tag) { return sp__pool_tag(pool, tag); }

static void index_lock(sp_registry *reg) {
#if SP__HAVE_THREADS
    if (reg->threaded) pthread_mutex_lock(&reg->lock.m);
#else
    (void)reg;
#endif
}

static void index_unlock(sp_registry *reg) {
#if SP__HAVE_THREADS
    if (reg->threaded) pthread_mutex_unlock(&reg->lock.m);
#else
    (void)reg;
#endif
}

static void *reg_alloc(sp_registry *reg, size_t size) {
    return sp__alloc(&reg->allocator, size, _Alignof(max_align_t));
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

/* A pool that must not be pulled from under its caller: one of its hooks (or callbacks) is
   running, or it is being destroyed. */
static bool pool_in_callback(const sp_pool *p) { return sp__pool_in_callback(p); }

/* One line for a registry call that cannot run now; true when refused. `reg` is not NULL. */
static bool refused_now(const sp_registry *reg, const char *call) {
    if (!reg->destroying) return false;
    sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_DESTROYING, call);
    return true;
}

/* The same for a call that changes the registry's pools (or reads them all), which is refused
   besides while sp_registry_restore runs the caller's callbacks (the restore is adding them). */
static bool refused_changing(const sp_registry *reg, const char *call) {
    if (refused_now(reg, call)) return true;
    if (!reg->restoring) return false;
    sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_RESTORING, call);
    return true;
}

/* One line for a NULL registry (through the default logger: there is no other). */
static bool null_registry(const sp_registry *reg, const char *call) {
    if (reg) return false;
    sp__log_to(NULL, REG_NAME, SP__MSG_REG_NULL_ARG, call, "registry");
    return true;
}

/* What its pools tell the registry (their ranges, their tag, their end), through the interface
   pools know (sp__pool_owner): pool.c never calls into this file. */
static sp_result range_added(void *owner, sp_pool *pool, uintptr_t lo, uintptr_t hi);
static void range_removed(void *owner, uintptr_t lo);
static sp_result tag_taken(void *owner, sp_pool *pool, uint32_t tag);
static void pool_gone(void *owner, const sp_pool *pool);
static const sp_pool *member_of(void *owner, const void *item);
static const sp__pool_owner registry_as_owner = {range_added, range_removed, tag_taken, pool_gone, member_of};

/* ---------------------------------------------------------------------------------------------
   The two lookup tables: linear probing, deletion by backward shift (no tombstones, so that a
   registry whose pools come and go every level never degrades).
   ------------------------------------------------------------------------------------------ */

static uint32_t name_hash(const char *name) { /* FNV-1a */
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 16777619u;
    return h;
}

static size_t index_mask(const sp_registry *reg) { return reg->cap * 2u - 1u; }

static size_t tag_home(const sp_registry *reg, uint32_t tag) {
    return (size_t)((tag * 2654435761u) >> 7) & index_mask(reg); /* Fibonacci hashing */
}

/* True when slot `home` is not cyclically in (hole, at]: the element at `at` may fill the hole. */
static bool may_fill(size_t hole, size_t at, size_t home) {
    return at > hole ? (home <= hole || home > at) : (home <= hole && home > at);
}

static void names_insert(sp_registry *reg, const sp__entry *e) {
    size_t mask = index_mask(reg), i = e->hash & mask;
    while (reg->names[i].pool) i = (i + 1u) & mask;
    reg->names[i] = (sp__name_slot){e->name, e->pool, e->hash};
}

static void tags_insert(sp_registry *reg, sp_pool *pool, uint32_t tag) {
    size_t mask = index_mask(reg), i = tag_home(reg, tag);
    while (reg->tags[i].pool) i = (i + 1u) & mask;
    reg->tags[i] = (sp__tag_slot){pool, tag};
}

/* Up to this many pools a scan of the list beats hashing the name: strcmp rejects a wrong name
   in a few instructions (callgrind: about even at 8 pools, the scan 40% dearer at 16). */
#define SP__SCAN_POOLS 8u

static sp_pool *names_find(const sp_registry *reg, const char *name) {
    if (reg->count <= SP__SCAN_POOLS) {
        for (size_t i = 0; i < reg->count; i++)
            if (strcmp(reg->entries[i].name, name) == 0) return reg->entries[i].pool;
        return NULL;
    }
    uint32_t h = name_hash(name);
    size_t mask = index_mask(reg);
    for (size_t i = h & mask; reg->names[i].pool; i = (i + 1u) & mask)
        if (reg->names[i].hash == h && strcmp(reg->names[i].name, name) == 0) return reg->names[i].pool;
    return NULL;
}

static sp_pool *tags_find(const sp_registry *reg, uint32_t tag) {
    if (!reg->cap) return NULL;
    size_t mask = index_mask(reg);
    for (size_t i = tag_home(reg, tag); reg->tags[i].pool; i = (i + 1u) & mask)
        if (reg->tags[i].tag == tag) return reg->tags[i].pool;
    return NULL;
}

static void names_delete(sp_registry *reg, const sp__entry *e) {
    size_t mask = index_mask(reg), hole = e->hash & mask;
    while (reg->names[hole].name != e->name) hole = (hole + 1u) & mask;
    for (size_t at = (hole + 1u) & mask; reg->names[at].pool; at = (at + 1u) & mask) {
        if (may_fill(hole, at, reg->names[at].hash & mask)) {
            reg->names[hole] = reg->names[at];
            hole = at;
        }
    }
    reg->names[hole].pool = NULL;
}

static void tags_delete(sp_registry *reg, const sp_pool *pool) {
    uint32_t tag;
    if (!pool_tag(pool, &tag)) return;
    size_t mask = index_mask(reg), hole = tag_home(reg, tag);
    while (reg->tags[hole].pool != pool) hole = (hole + 1u) & mask;
    for (size_t at = (hole + 1u) & mask; reg->tags[at].pool; at = (at + 1u) & mask) {
        if (may_fill(hole, at, tag_home(reg, reg->tags[at].tag))) {
            reg->tags[hole] = reg->tags[at];
            hole = at;
        }
    }
    reg->tags[hole].pool = NULL;
}

/* Makes room for one more entry: the entries and both tables grow together, or nothing
   changes (allocator failure). */
static bool entries_reserve(sp_registry *reg) {
    if (reg->count < reg->cap) return true;
    size_t cap = reg->cap ? reg->cap * 2u : 8u;
    sp__entry *entries = (sp__entry *)reg_alloc(reg, cap * sizeof *entries);
    sp__name_slot *names = (sp__name_slot *)reg_alloc(reg, 2u * cap * sizeof *names);
    sp__tag_slot *tags = (sp__tag_slot *)reg_alloc(reg, 2u * cap * sizeof *tags);
    if (!entries || !names || !tags) {
        reg_free(reg, entries, cap * sizeof *entries);
        reg_free(reg, names, 2u * cap * sizeof *names);
        reg_free(reg, tags, 2u * cap * sizeof *tags);
        return false;
    }
    if (reg->count) memcpy(entries, reg->entries, reg->count * sizeof *entries);
    reg_free(reg, reg->entries, reg->cap * sizeof *reg->entries);
    reg_free(reg, reg->names, 2u * reg->cap * sizeof *reg->names);
    reg_free(reg, reg->tags, 2u * reg->cap * sizeof *reg->tags);
    memset(names, 0, 2u * cap * sizeof *names);
    memset(tags, 0, 2u * cap * sizeof *tags);
    reg->entries = entries;
    reg->names = names;
    reg->tags = tags;
    reg->cap = cap;
    for (size_t i = 0; i < reg->count; i++) {
        uint32_t tag;
        names_insert(reg, &reg->entries[i]);
        if (pool_tag(reg->entries[i].pool, &tag)) tags_insert(reg, reg->entries[i].pool, tag);
    }
    return true;
}

/* The index of pool's entry, or SIZE_MAX. O(pools). */
static size_t entry_index(const sp_registry *reg, const sp_pool *pool) {
    for (size_t i = 0; i < reg->count; i++)
        if (reg->entries[i].pool == pool) return i;
    return SIZE_MAX;
}

/* Takes entry i out of the registry (both tables, the list) and frees its name. O(pools). */
static void entry_remove(sp_registry *reg, size_t i) {
    sp__entry *e = &reg->entries[i];
    names_delete(reg, e);
    tags_delete(reg, e->pool);
    reg_free(reg, e->name, strlen(e->name) + 1u);
    memmove(reg->entries + i, reg->entries + i + 1, (reg->count - i - 1u) * sizeof *reg->entries);
    reg->count--;
}

/* ---------------------------------------------------------------------------------------------
   Lifecycle
   ------------------------------------------------------------------------------------------ */

sp_registry *sp_registry_create_with(const sp_registry_desc *desc) {
    sp_registry_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    /* The registry's allocator becomes its pools' default: refuse one a pool would refuse. */
    sp__vm unused;
    const char *why = sp__allocator_vm(&d.allocator, &unused);
    if (why) {
        sp__log_to(&d.logger, REG_NAME, SP__MSG_BAD_DESC, "sp_registry_create_with", why);
        return NULL;
    }
    if (!d.allocator.alloc) {
        d.allocator.alloc = sp__default_alloc;
        d.allocator.free = sp__default_free;
    }
    sp_registry *reg = (sp_registry *)sp__alloc(&d.allocator, sizeof *reg, _Alignof(sp_registry));
    if (!reg) {
        sp__log_to(&d.logger, REG_NAME, SP__MSG_NOMEM, "registry");
        return NULL;
    }
    memset(reg, 0, sizeof *reg);
    reg->allocator = d.allocator;
    reg->logger = d.logger;
    return reg;
}

sp_registry *sp_registry_create(void) { return sp_registry_create_with(NULL); }

void sp_registry_destroy(sp_registry *reg) {
    if (!reg || refused_changing(reg, "sp_registry_destroy")) return;
    /* Refused as a whole while anything of the registry is on the stack: a hook of one of its
       pools (that pool would outlive its registry), or the pool sp_registry_add is building. */
    const char *busy = reg->adding;
    for (size_t i = 0; !busy && i < reg->count; i++)
        if (pool_in_callback(reg->entries[i].pool)) busy = reg->entries[i].name;
    if (busy || reg->releasing_all) {
        if (busy)
            sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_HOOK_RUNNING, "sp_registry_destroy", busy);
        else
            sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_RELEASING_ALL, "sp_registry_destroy");
        return;
    }
    reg->destroying = true;
    /* In order of addition. A pool stays registered while its members are disposed and leaves
       (pool_gone) once it is gone, so count and pool_at never show a destroyed pool;
       a dispose hook that destroys a later pool directly only shortens the list. */
    while (reg->count) {
        size_t before = reg->count;
        sp_pool_destroy(reg->entries[0].pool); /* refused: before any hook runs, nothing changes */
        if (reg->count == before) {
            /* The pool refused (it cannot after the checks above): the registry must outlive it. */
            reg->destroying = false;
            return;
        }
    }
    reg_free(reg, reg->entries, reg->cap * sizeof *reg->entries);
    reg_free(reg, reg->names, 2u * reg->cap * sizeof *reg->names);
    reg_free(reg, reg->tags, 2u * reg->cap * sizeof *reg->tags);
    reg_free(reg, reg->ranges, reg->range_cap * sizeof *reg->ranges);
#if SP__HAVE_THREADS
    if (reg->threaded) sp__leaf_fini(&reg->lock);
#endif
    sp_allocator a = reg->allocator;
    a.free(reg, sizeof *reg, a.user);
}

/* Where a pool being added comes from: made from its desc, or restored from a snapshot. */
typedef struct pool_source {
    const void *buf;
    size_t size;
    const sp_snapshot_io *io;
} pool_source;

static sp_pool *registry_add_from(sp_registry *reg, const char *name, const sp_desc *desc, const pool_source *src) {
    const sp_logger *logger = desc && desc->logger.log ? &desc->logger : reg ? &reg->logger : NULL;
    const char *missing = !reg ? "registry" : !name ? "name" : !desc ? "desc" : NULL;
    if (missing) {
        sp__log_to(logger, name ? name : REG_NAME, SP__MSG_REG_NULL_ARG, "sp_registry_add", missing);
        return NULL;
    }
    if (!name[0]) {
        sp__log_to(logger, REG_NAME, SP__MSG_REG_EMPTY_NAME, "sp_registry_add");
        return NULL;
    }
    if (refused_now(reg, "sp_registry_add")) return NULL;
    /* The pool's allocator and logger default to the registry's. */
    sp_desc d = *desc;
    if (!d.allocator.alloc && !d.allocator.free) d.allocator = reg->allocator;
    if (!d.logger.log) d.logger = reg->logger;
#if SP__HAVE_THREADS
    if (d.threads != SP_THREADS_NONE && !reg->threaded) {
        if (!sp__leaf_init(&reg->lock)) {
            sp__log_to(&d.logger, name, SP__MSG_NOMEM, "registry lock");
            return NULL;
        }
        reg->threaded = true;
    }
#endif
    if (names_find(reg, name)) {
        sp__log_to(&d.logger, name, SP__MSG_REG_DUPLICATE, name);
        return NULL;
    }
    if (!entries_reserve(reg)) {
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
    /* The new pool's create hooks run in here and may call the registry: add other pools (even
       under this name), fill its tables. Everything is checked again afterwards. */
    const char *outer = reg->adding;
    if (!outer) reg->adding = copy;
    sp_pool *pool = src ? sp__pool_restore_in(&d, src->buf, src->size, src->io, &registry_as_owner, reg, name)
                        : sp__pool_create_in(&d, &registry_as_owner, reg, name);
    bool taken = pool && names_find(reg, name);
    bool no_room = pool && !taken && !entries_reserve(reg);
    if (taken || no_room) {
        if (taken)
            sp__log_to(&d.logger, name, SP__MSG_REG_DUPLICATE, name);
        else
            sp__log_to(&d.logger, name, SP__MSG_NOMEM, "registry");
        if (src)
            sp__pool_discard(pool);
        else
            sp_pool_destroy(pool); /* its dispose hooks run: still "adding" */
        pool = NULL;
    }
    reg->adding = outer;
    if (!pool) {
        reg_free(reg, copy, len + 1u);
        return NULL;
    }
    sp__entry *e = &reg->entries[reg->count++];
    e->name = copy;
    e->pool = pool;
    e->hash = name_hash(copy);
    names_insert(reg, e);
    uint32_t tag;
    if (pool_tag(pool, &tag)) tags_insert(reg, pool, tag);
    return pool;
}

sp_pool *sp_registry_add(sp_registry *reg, const char *name, const sp_desc *desc) {
    if (reg && refused_changing(reg, "sp_registry_add")) return NULL;
    return registry_add_from(reg, name, desc, NULL);
}

/* ---------------------------------------------------------------------------------------------
   Snapshot and restore: every pool, in order of addition, under its name (snapshot.c writes
   each pool's own snapshot; this is their list in one envelope). The pools' tags come back, so
   handles stored in members, of their own pool or another, resolve through the registry.
   ------------------------------------------------------------------------------------------ */

static const sp_snapshot_io *io_for(const sp_registry_snapshot_io *io, const char *name) {
    return io && io->io_of ? io->io_of(name, io->user) : NULL;
}

static void reg_put(unsigned char **at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) *(*at)++ = (unsigned char)(v >> (8 * i));
}

size_t sp_registry_snapshot_size(const sp_registry *reg, const sp_registry_snapshot_io *io) {
    if (null_registry(reg, "sp_registry_snapshot_size")) return 0;
    uint64_t total = SNAP_ENVELOPE + 4u + 4u;
    for (size_t i = 0; i < reg->count; i++) {
        size_t one = sp_snapshot_size(reg->entries[i].pool, io_for(io, reg->entries[i].name));
        if (!one) return 0; /* (its line said why) */
        total += 4u + strlen(reg->entries[i].name) + 8u + one;
    }
    return total > SIZE_MAX ? 0 : (size_t)total;
}

sp_result sp_registry_snapshot(const sp_registry *reg, void *buf, size_t size, const sp_registry_snapshot_io *io) {
    if (null_registry(reg, "sp_registry_snapshot")) return SP_ERR_INVALID;
    if (refused_changing(reg, "sp_registry_snapshot")) return SP_ERR_INVALID;
    size_t need = sp_registry_snapshot_size(reg, io);
    const char *why = !need ? "a pool cannot be saved (the line above says why)"
                      : !buf ? "buf is NULL"
                      : size < need ? "the buffer is smaller than sp_registry_snapshot_size" : NULL;
    if (why) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_SNAP_REFUSED, "sp_registry_snapshot", why);
        return SP_ERR_INVALID;
    }
    unsigned char *at = (unsigned char *)buf;
    reg_put(&at, SNAP_MAGIC, 4);
    reg_put(&at, SNAP_VERSION, 4);
    reg_put(&at, 0, 8);
    reg_put(&at, need, 8);
    reg_put(&at, SNAP_KIND_REGISTRY, 4);
    reg_put(&at, reg->count, 4);
    for (size_t i = 0; i < reg->count; i++) {
        const sp__entry *e = &reg->entries[i];
        size_t len = strlen(e->name), one = sp_snapshot_size(e->pool, io_for(io, e->name));
        reg_put(&at, len, 4);
        memcpy(at, e->name, len);
        at += len;
        reg_put(&at, one, 8);
        if (sp_snapshot(e->pool, at, one, io_for(io, e->name)) != SP_OK) return SP_ERR_INVALID;
        at += one;
    }
    snap_seal((unsigned char *)buf, need);
    return SP_OK;
}

sp_result sp_registry_restore(sp_registry *reg, const void *buf, size_t size, const sp_registry_snapshot_io *io) {
    if (null_registry(reg, "sp_registry_restore")) return SP_ERR_INVALID;
    if (refused_changing(reg, "sp_registry_restore")) return SP_ERR_INVALID;
    const char *why = !buf ? "buf is NULL"
                      : !io || !io->desc_of ? "io.desc_of is NULL (it gives each saved pool's descriptor)"
                      : reg->count ? "the registry is not empty (restore into a new one)" : NULL;
    bool restoring = !why; /* from here on the registry's pools are this call's */
    reader r = {(const unsigned char *)buf, (const unsigned char *)buf + (buf ? size : 0u), false};
    if (!why) why = snap_open(&r, size, SNAP_KIND_REGISTRY);
    uint32_t pools = why ? 0u : get32(&r);
    if (!why && r.bad) why = "truncated snapshot";
    char name[256];
    reg->restoring = restoring;
    for (uint32_t k = 0; !why && k < pools; k++) {
        uint32_t len = get32(&r);
        if (r.bad || len == 0 || len >= sizeof name || !room(&r, len)) {
            why = "the snapshot's pool names are invalid";
            break;
        }
        memcpy(name, r.at, len);
        name[len] = '\0';
        r.at += len;
        uint64_t one = get64(&r);
        if (r.bad || memchr(name, '\0', len) || !room(&r, (size_t)one)) {
            why = "the snapshot's pool list is invalid";
            break;
        }
        const sp_desc *d = io->desc_of(name, io->user);
        if (!d) {
            why = "io.desc_of gave no descriptor for a saved pool";
            break;
        }
        pool_source src = {r.at, (size_t)one, io_for(io, name)};
        if (!registry_add_from(reg, name, d, &src)) {
            why = "a pool could not be restored (the line above says why)";
            break;
        }
        r.at += one;
    }
    reg->restoring = false;
    if (!why && r.at != r.end) why = "the snapshot's sections do not add up";
    if (!why) return SP_OK;
    /* Nothing stays: the pools restored so far go, quietly, newest first. */
    while (restoring && reg->count) sp__pool_discard(reg->entries[reg->count - 1u].pool);
    sp__log_to(&reg->logger, REG_NAME, SP__MSG_SNAP_REFUSED, "sp_registry_restore", why);
    return SP_ERR_INVALID;
}

sp_result sp_registry_remove(sp_registry *reg, const char *name) {
    if (null_registry(reg, "sp_registry_remove")) return SP_ERR_INVALID;
    if (!name) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_NULL_ARG, "sp_registry_remove", "name");
        return SP_ERR_INVALID;
    }
    if (refused_changing(reg, "sp_registry_remove")) return SP_ERR_INVALID;
    sp_pool *pool = names_find(reg, name);
    if (!pool) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_UNKNOWN, "sp_registry_remove", name);
        return SP_ERR_INVALID;
    }
    if (pool_in_callback(pool)) { /* the pool would be destroyed under its own running hook */
        sp__log_to(sp__pool_logger(pool), sp_pool_name(pool), SP__MSG_IN_HOOK, "sp_registry_remove");
        return SP_ERR_INVALID;
    }
    sp_pool_destroy(pool); /* leaves the registry when it is gone (pool_gone) */
    /* A destroy the pool refused keeps it registered under its name: report it. (The name cannot
       name another pool at the same address: the name stays taken until the pool is gone.) */
    return names_find(reg, name) == pool ? SP_ERR_INVALID : SP_OK;
}

/* ---------------------------------------------------------------------------------------------
   Lookups
   ------------------------------------------------------------------------------------------ */

sp_pool *sp_registry_get(const sp_registry *reg, const char *name) {
    if (null_registry(reg, "sp_registry_get")) return NULL;
    if (!name) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_NULL_ARG, "sp_registry_get", "name");
        return NULL;
    }
    if (refused_now(reg, "sp_registry_get")) return NULL;
    return names_find(reg, name);
}

size_t sp_registry_count(const sp_registry *reg) {
    return null_registry(reg, "sp_registry_count") ? 0 : reg->count;
}

sp_pool *sp_registry_pool_at(const sp_registry *reg, size_t index) {
    if (null_registry(reg, "sp_registry_pool_at")) return NULL;
    return index < reg->count ? reg->entries[index].pool : NULL;
}

void *sp_spawn(sp_registry *reg, const char *name, const void *arg) {
    return sp_spawn_at(reg, name, arg, NULL, 0);
}

void *sp_spawn_at(sp_registry *reg, const char *name, const void *arg, const char *file, int line) {
    if (null_registry(reg, "sp_spawn")) return NULL;
    if (!name) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_NULL_ARG, "sp_spawn", "name");
        return NULL;
    }
    if (refused_now(reg, "sp_spawn")) return NULL;
    sp_pool *pool = names_find(reg, name);
    if (!pool) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_UNKNOWN, "sp_spawn", name);
        return NULL;
    }
    return sp_acquire_with_at(pool, arg, file, line);
}

void *sp_registry_resolve(const sp_registry *reg, sp_handle handle) {
    if (null_registry(reg, "sp_registry_resolve") || refused_now(reg, "sp_registry_resolve")) return NULL;
    if (handle.id == 0) return NULL;
    sp_pool *pool = tags_find(reg, sp__handle_tag(handle.id));
    return pool ? sp_resolve(pool, handle) : NULL;
}

/* ---------------------------------------------------------------------------------------------
   The address index, kept by what the pools tell their owner
   ------------------------------------------------------------------------------------------ */

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

static sp_result range_added(void *owner, sp_pool *pool, uintptr_t lo, uintptr_t hi) {
    sp_registry *reg = (sp_registry *)owner;
    index_lock(reg);
    if (reg->range_count == reg->range_cap &&
        !reg_grow(reg, (void **)&reg->ranges, &reg->range_cap, sizeof *reg->ranges, 16u)) {
        index_unlock(reg);
        return SP_ERR_NOMEM;
    }
    size_t at = ranges_upper(reg, lo);
    memmove(reg->ranges + at + 1, reg->ranges + at, (reg->range_count - at) * sizeof *reg->ranges);
    reg->ranges[at].lo = lo;
    reg->ranges[at].hi = hi;
    reg->ranges[at].pool = pool;
    reg->range_count++;
    index_unlock(reg);
    return SP_OK;
}

static void range_removed(void *owner, uintptr_t lo) {
    sp_registry *reg = (sp_registry *)owner;
    index_lock(reg);
    size_t at = ranges_upper(reg, lo);
    if (at > 0 && reg->ranges[at - 1u].lo == lo) {
        at--;
        memmove(reg->ranges + at, reg->ranges + at + 1, (reg->range_count - at - 1u) * sizeof *reg->ranges);
        reg->range_count--;
    }
    index_unlock(reg);
}

/* A pool took its tag: sp_registry_resolve finds it from its handles. A pool that takes it
   while being added (a create hook's handle) is not in the list yet: sp_registry_add enters
   its tag with it. */
static sp_result tag_taken(void *owner, sp_pool *pool, uint32_t tag) {
    sp_registry *reg = (sp_registry *)owner;
    if (entry_index(reg, pool) == SIZE_MAX) return SP_OK;
    tags_insert(reg, pool, tag);
    return SP_OK;
}

/* A pool that is gone (however it was destroyed) leaves the index and the list. */
static void pool_gone(void *owner, const sp_pool *pool) {
    sp_registry *reg = (sp_registry *)owner;
    size_t keep = 0;
    index_lock(reg);
    for (size_t i = 0; i < reg->range_count; i++)
        if (reg->ranges[i].pool != pool) reg->ranges[keep++] = reg->ranges[i];
    reg->range_count = keep;
    index_unlock(reg);
    size_t i = entry_index(reg, pool);
    if (i != SIZE_MAX) entry_remove(reg, i);
}

/* The pool whose range contains item's address, whatever the slot state. */
static sp_pool *range_owner(const sp_registry *reg, const void *item) {
    sp_registry *r_ = (sp_registry *)(uintptr_t)reg; /* the lock: bookkeeping */
    uintptr_t a = (uintptr_t)item;
    index_lock(r_);
    size_t at = ranges_upper(reg, a);
    sp_pool *pool = NULL;
    if (at > 0 && a < reg->ranges[at - 1u].hi) pool = reg->ranges[at - 1u].pool;
    index_unlock(r_);
    return pool;
}

/* sp_registry_owner for a pool's line (no refusal: any moment a pool may log in). */
static const sp_pool *member_of(void *owner, const void *item) {
    sp_pool *pool = range_owner((const sp_registry *)owner, item);
    return pool && sp__pool_has_member(pool, item) ? pool : NULL;
}

sp_pool *sp_registry_owner(const sp_registry *reg, const void *item) {
    if (null_registry(reg, "sp_registry_owner") || !item || refused_now(reg, "sp_registry_owner"))
        return NULL;
    sp_pool *pool = range_owner(reg, item);
    return pool && sp__pool_has_member(pool, item) ? pool : NULL;
}

sp_result sp_registry_release(sp_registry *reg, void *item) {
    return sp_registry_release_at(reg, item, NULL, 0);
}

sp_result sp_registry_release_at(sp_registry *reg, void *item, const char *file, int line) {
    if (null_registry(reg, "sp_registry_release")) return SP_ERR_INVALID;
    if (!item) return SP_OK;
    if (refused_now(reg, "sp_registry_release")) return SP_ERR_INVALID;
    sp_pool *pool = range_owner(reg, item);
    if (!pool) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_NOT_OWNED, item);
        return SP_ERR_FOREIGN;
    }
    return sp_release_at(pool, item, file, line);
}

/* ---------------------------------------------------------------------------------------------
   Scene teardown
   ------------------------------------------------------------------------------------------ */

size_t sp_registry_release_all(sp_registry *reg) {
    if (null_registry(reg, "sp_registry_release_all") || refused_changing(reg, "sp_registry_release_all"))
        return 0;
    if (reg->releasing_all) {
        sp__log_to(&reg->logger, REG_NAME, SP__MSG_REG_RELEASING_ALL, "sp_registry_release_all");
        return 0;
    }
    reg->releasing_all = true;
    /* A pass releases every pool's leased members in order of addition, so that a parent's
       on_release returns its children to a pool later in the list before that pool's turn.
       Children registered first need one more pass per level. Hooks may acquire meanwhile
       (even replacements, forever), so the passes are counted: one per pool, and one more. */
    size_t total = 0;
    for (size_t passes = reg->count + 1u; passes > 0; passes--) {
        size_t released = 0;
        /* Hooks may add and remove pools: the list is read afresh at every step (a pool that
           shifts past the cursor waits for the next pass). */
        for (size_t i = 0; i < reg->count; i++) {
            sp_pool *pool = reg->entries[i].pool;
            if (sp__pool_leased(pool) && !sp__pool_destroying(pool)) released += sp_release_all(pool);
        }
        total += released;
        bool leased = false;
        for (size_t i = 0; i < reg->count && !leased; i++) leased = sp__pool_leased(reg->entries[i].pool) > 0;
        if (!released || !leased) break;
    }
    reg->releasing_all = false;
    return total;
}
