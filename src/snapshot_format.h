/* SPDX-License-Identifier: Zlib */
/* snapshot_format.h -- what the snapshots of sp_pool (snapshot.c) and sp_dense
   (dense_snapshot.c) share: the envelope (magic, version, a checksum of everything after it,
   the size), little-endian fields written and read with bounds checks, and the caller's io. */
#ifndef SP_SNAPSHOT_FORMAT_H
#define SP_SNAPSHOT_FORMAT_H

#include "sp_internal.h"

#include <string.h>

#define SNAP_MAGIC 0x4E535053u /* "SPSN" */
#define SNAP_VERSION 1u
#define SNAP_KIND_POOL 1u
#define SNAP_KIND_DENSE 2u
#define SNAP_KIND_REGISTRY 3u
#define SNAP_SUM_FROM 16u /* the checksum covers the buffer from here (the size onwards) */
#define SNAP_ENVELOPE 24u /* magic, version, checksum, size */

/* ---- the checksum: four lanes of multiply-rotate over 8-byte words, at memory speed ------- */
#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)

static inline uint64_t le64(const unsigned char *b) {
    return (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24 |
           (uint64_t)b[4] << 32 | (uint64_t)b[5] << 40 | (uint64_t)b[6] << 48 | (uint64_t)b[7] << 56;
}
static inline uint64_t rotl64(uint64_t x, unsigned r) { return (x << r) | (x >> (64u - r)); }
static inline uint64_t lane(uint64_t h, uint64_t v) { return rotl64(h ^ (v * P2), 31) * P1; }

static inline uint64_t checksum(const unsigned char *b, size_t n) {
    uint64_t h[4] = {P1, P2, P1 ^ P2, ~P1};
    size_t i = 0;
    for (; n - i >= 32u; i += 32u)
        for (int k = 0; k < 4; k++) h[k] = lane(h[k], le64(b + i + 8u * (size_t)k));
    uint64_t x = rotl64(h[0], 1) + rotl64(h[1], 7) + rotl64(h[2], 12) + rotl64(h[3], 18) + (uint64_t)n;
    for (; i < n; i++) x = lane(x, b[i]);
    x ^= x >> 33;
    x *= P2;
    x ^= x >> 29;
    return x;
}

/* ---- writing and reading fields --------------------------------------------------------- */
typedef struct writer {
    unsigned char *at;
} writer;

static inline void put32(writer *w, uint32_t v) {
    for (int i = 0; i < 4; i++) *w->at++ = (unsigned char)(v >> (8 * i));
}
static inline void put64(writer *w, uint64_t v) {
    for (int i = 0; i < 8; i++) *w->at++ = (unsigned char)(v >> (8 * i));
}

typedef struct reader {
    const unsigned char *at, *end;
    bool bad; /* read past the end: every later read gives 0 */
} reader;

static inline bool room(reader *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->at) < n) {
        r->bad = true;
        return false;
    }
    return true;
}
static inline uint32_t get32(reader *r) {
    if (!room(r, 4u)) return 0;
    uint32_t v = (uint32_t)r->at[0] | (uint32_t)r->at[1] << 8 | (uint32_t)r->at[2] << 16 | (uint32_t)r->at[3] << 24;
    r->at += 4;
    return v;
}
static inline uint64_t get64(reader *r) {
    if (!room(r, 8u)) return 0;
    uint64_t v = le64(r->at);
    r->at += 8;
    return v;
}

/* The counters both kinds of pool keep (sp__counters), in one order. */
static inline void counters_put(writer *w, const sp__counters *c) {
    const uint64_t v[] = {c->created,        c->disposed,        c->acquired,        c->reclaimed,
                          c->dropped,        c->grown_past_max,  c->leased_disposed, c->foreign_handles,
                          c->forged_handles, c->grow_warn_at};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) put64(w, v[i]);
}

static inline void counters_get(reader *r, sp__counters *c) {
    c->created = get64(r);
    c->disposed = get64(r);
    c->acquired = get64(r);
    c->reclaimed = get64(r);
    c->dropped = get64(r);
    c->grown_past_max = get64(r);
    c->leased_disposed = get64(r);
    c->foreign_handles = get64(r);
    c->forged_handles = get64(r);
    c->grow_warn_at = get64(r);
}

/* ---- what the caller's io means --------------------------------------------------------- */
typedef struct snap_io {
    size_t bytes;
    sp_save_fn save;
    sp_load_fn load;
    void *user;
} snap_io;

static inline const char *io_resolve(const sp_snapshot_io *io, size_t item_size, snap_io *out) {
    sp_snapshot_io none = {0, NULL, NULL, NULL};
    if (!io) io = &none;
    if (!io->save != !io->load) return "io needs both save and load, or neither";
    if (!io->save && io->bytes && io->bytes != item_size) return "io.bytes differs from item_size without save and load";
    out->bytes = io->bytes ? io->bytes : item_size;
    out->save = io->save;
    out->load = io->load;
    out->user = io->user;
    return NULL;
}


/* Writes the envelope's checksum over a snapshot of `size` bytes at b, its fields written. */
static inline void snap_seal(unsigned char *b, size_t size) {
    writer sum = {b + 8};
    put64(&sum, checksum(b + SNAP_SUM_FROM, size - SNAP_SUM_FROM));
}

/* Reads the envelope of the buffer (size bytes) and checks its checksum; NULL when it holds,
   else why not. r then reads the snapshot's fields, up to its own size. */
static inline const char *snap_open(reader *r, size_t size, uint32_t kind) {
    const unsigned char *base = r->at;
    if (size < SNAP_ENVELOPE + 4u) return "the buffer is too short for a snapshot (truncated?)";
    if (get32(r) != SNAP_MAGIC) return "not a spawnpool snapshot (wrong magic)";
    if (get32(r) != SNAP_VERSION) return "a snapshot format version this library does not read";
    uint64_t sum = get64(r), total = get64(r);
    if (total > size || total < SNAP_ENVELOPE + 4u) return "the snapshot is longer than the buffer (truncated?)";
    if (checksum(base + SNAP_SUM_FROM, (size_t)total - SNAP_SUM_FROM) != sum) return "checksum mismatch (corrupt snapshot)";
    r->end = base + (size_t)total;
    uint32_t k = get32(r);
    if (k != kind)
        return kind == SNAP_KIND_POOL    ? "not a snapshot of an sp_pool"
               : kind == SNAP_KIND_DENSE ? "not a snapshot of an sp_dense"
                                         : "not a snapshot of a registry";
    return NULL;
}

#endif
