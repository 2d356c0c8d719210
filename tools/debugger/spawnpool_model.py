# SPDX-License-Identifier: Zlib
"""spawnpool_model.py -- what a stopped program's pools, handles, dense pools and registries
hold, read from their structures the way the library reads them (src/pool_internal.h,
src/handles.c, src/stats.c, src/threads_windows.c, src/dense_internal.h, src/registry.c).

Debugger-neutral: it reads through two small adapters that spawnpool_gdb.py (and any other
debugger's glue) provides:
  a value  v.f(name) a field, v.has(name) whether the struct has it, v.u() the number (a
           pointer's address), v.at(i) an element (array or pointer), v.deref(), v.cstr() a C
           string (a char array or a char pointer; None for NULL);
  a target t.read(addr, n) bytes of memory, t.tag_holder(tag) the tag table's entry (an
           address, its low bit set for an sp_dense; 0: free; None: no table found),
           t.pool(addr) / t.dense(addr) the value of the struct at addr.
Nothing here writes to the program or calls its functions, so it works on a core file too."""

import struct

# Handle bits (src/sp_internal.h): life (23) | tag (17) | slot (24).
SLOT_BITS, TAG_BITS, LIFE_BITS = 24, 17, 23
TAG_COUNT = 1 << TAG_BITS
NIL = 0xFFFFFFFF

# A member's word (src/pool_internal.h): life << 6 | flags.
UNBUILT, FREE, LEASED, RETIRED = 0, 1, 2, 3
STATE_MASK, BUSY, RELEASING, HANDLED, MARKED, FLAG_BITS = 3, 4, 8, 16, 32, 6
ENTRY = 3  # bytes of a free-stack entry
DENSE_FREE = 0x80000000

ORDERS = {True: "SP_ORDER_ACQUISITION", False: "SP_ORDER_MEMORY"}
OVERFLOWS = {0: "SP_OVERFLOW_DROP", 1: "SP_OVERFLOW_RECLAIM", 2: "SP_OVERFLOW_GROW"}


def handle_parts(hid):
    """(tag, slot, life) of a handle's id."""
    return ((hid >> SLOT_BITS) & (TAG_COUNT - 1), hid & ((1 << SLOT_BITS) - 1),
            hid >> (SLOT_BITS + TAG_BITS))


def word_life(w):
    return w >> FLAG_BITS


def word_state(w):
    return w & STATE_MASK


def word_issued(w):
    """The highest life the slot handed out a handle of (word_issued in pool_internal.h)."""
    own = (word_state(w) == LEASED and w & HANDLED) or word_state(w) == RETIRED
    return word_life(w) if own else word_life(w) - 1


class Resolution:
    """What a handle names: state is one of "null", "leased" (member is its address), "stale",
    "foreign" (another pool's, or an earlier pool's of the same tag), "forged" (a slot or a life
    that never existed), "no pool" (no live pool holds its tag), "unknown" (no tag table: the
    library's debug info is missing); owner the Pool or Dense that holds its tag, if any."""

    def __init__(self, state, owner=None, member=None, why=""):
        self.state, self.owner, self.member, self.why = state, owner, member, why


class Span:
    def __init__(self, pool, v):
        self.v = v
        self.first = v.f("first").u()
        self.count = v.f("count").u()
        self.items = v.f("items").u()
        self.words_at = v.f("words").u()
        self.pool = pool

    def words(self):
        raw = self.pool.t.read(self.words_at, 4 * self.count)
        return struct.unpack("<%dI" % self.count, raw)

    def word(self, idx):
        return struct.unpack("<I", self.pool.t.read(self.words_at + 4 * (idx - self.first), 4))[0]

    def member(self, idx):
        return self.items + (idx - self.first) * self.pool.stride

    def site(self, idx):
        """(file, line) where the member was last acquired, (None, 0) for a lease without a site;
        None when the library keeps no debug records (SP_DEBUG=0)."""
        if not self.v.has("dbg"):
            return None
        rec = self.v.f("dbg").at(idx - self.first)
        f = rec.f("acq_file").cstr()
        return (f, rec.f("acq_line").u()) if f else (None, 0)


class Pool:
    def __init__(self, t, v):
        self.t, self.v = t, v
        hot, mem, cfg = v.f("hot"), v.f("mem"), v.f("cfg")
        self.hot, self.mem, self.cfg = hot, mem, cfg
        self.address = None
        self.name = v.f("name").cstr() or ""
        self.ordered = bool(cfg.f("ordered").u())
        self.overflow = cfg.f("overflow").u()
        self.ts = v.f("ts")
        self.safe = self.ts.u() != 0
        h = v.f("handles")
        self.tagged = bool(h.f("tagged").u())
        self.tag = h.f("tag").u()
        self.life_base = h.f("life_base").u()
        self.stride = hot.f("stride").u()
        self.item_size = cfg.f("item_size").u()
        self.has_sites = None  # known once a span was seen

    # ---- spans, words, the plain map
    def spans(self):
        out = []
        for k in range(self.mem.f("rec_count").u()):
            s = self.mem.f("recs").at(k).f("span")
            if s.u():
                out.append(Span(self, s.deref()))
        return out

    def span_of(self, idx):
        """The live span holding slot idx's bookkeeping, or None (span_of)."""
        n = self.mem.f("rec_count").u()
        k = (idx >> self.hot.f("rec_shift").u()).bit_length()
        if k >= n:
            return None
        s = self.mem.f("recs").at(k).f("span")
        if not s.u():
            return None
        span = Span(self, s.deref())
        return span if 0 <= idx - span.first < span.count else None

    def slot_floor(self, idx):
        for k in range(self.mem.f("rec_count").u()):
            r = self.mem.f("recs").at(k)
            if 0 <= idx - r.f("first").u() < r.f("cap").u():
                return r.f("life_floor").u()
        return 0

    def plain_map(self):
        cap = self.mem.f("plain_cap").u()
        at = self.hot.f("plain").u()
        return self.t.read(at, cap) if cap and at else b""

    @staticmethod
    def leased_word(plain, idx, w):
        return word_state(w) == LEASED or (word_state(w) == FREE and idx < len(plain) and plain[idx] != 0)

    # ---- the numbers sp_stats_get reports
    def windowed(self):
        return self.safe and self.ts.deref().f("window").u() > 0

    def stats(self):
        """sp_stats_get's numbers, as a dict of its fields (stats.c; threads_windows.c's
        sp__ts_stats for a thread-safe pool outside a window: its caches' counters summed)."""
        mem, hot, c = self.mem, self.hot, self.v.f("counters")
        size, limbo = mem.f("size").u(), mem.f("limbo").u()
        disposed_leased = c.f("leased_disposed").u()
        s = {"size": size, "max": self.cfg.f("max").u(), "bytes": mem.f("bytes").u(),
             "bytes_reserved": mem.f("bytes_reserved").u()}
        if self.safe and not self.windowed():
            ts = self.ts.deref()
            acquired, released = ts.f("acquired").u(), ts.f("released").u()
            cache = ts.f("caches")
            while cache.u():
                cv = cache.deref()
                acquired += cv.f("acquired").u()
                released += cv.f("released").u()
                cache = cv.f("next")
            leased = max(0, acquired - released - disposed_leased)
            s.update(leased=leased, free=max(0, size - leased), peak_leased=max(ts.f("peak").u(), leased),
                     acquired=acquired, released=released)
        else:
            leased = size - hot.f("free_top").u() // ENTRY - limbo
            base, low = size - limbo, hot.f("peak_top").u() // ENTRY
            seen = base - low if base > low else 0
            acquired = hot.f("acquired").u()
            s.update(leased=leased, free=size - leased,
                     peak_leased=max(seen, self.v.f("act").f("peak_leased").u()), acquired=acquired,
                     released=acquired - leased - disposed_leased)
        for k in ("created", "disposed", "reclaimed", "dropped", "grown_past_max"):
            s[k] = c.f(k).u()
        return s

    # ---- the leased members
    def leased(self):
        """[(slot, span)] of the leased members in the pool's order (sp__leased_first/_next); a
        member inside its on_release is left out, as iteration does."""
        spans = self.spans()
        plain = self.plain_map()
        out = []
        if self.ordered:
            idx, limit = self.v.f("act").f("lease_head").u(), self.mem.f("size").u() + 1
            while idx != NIL and len(out) < limit:
                span = self.span_of(idx)
                if span is None:
                    break
                out.append((idx, span))
                idx = span.v.f("links").at(idx - span.first).f("next").u()
            return out
        for span in spans:
            for i, w in enumerate(span.words()):
                if self.leased_word(plain, span.first + i, w) and not w & RELEASING:
                    out.append((span.first + i, span))
        return out

    def handle_of(self, idx, span):
        """The handle a leased member's lease has out, or 0 (it has none: sp_handle_of would
        issue one)."""
        w = span.word(idx)
        if not self.tagged or word_state(w) != LEASED or not w & HANDLED:
            return 0
        return ((word_life(w) + self.life_base) << (SLOT_BITS + TAG_BITS)) | (self.tag << SLOT_BITS) | idx

    # ---- handles
    def resolve(self, hid):
        """As sp_resolve (handles.c resolve_other, magazine.c sp__ts_resolve), without its
        warnings."""
        tag, idx, life = handle_parts(hid)
        if hid == 0:
            return Resolution("null")
        if not self.tagged or tag != self.tag or (life != 0 and life <= self.life_base):
            return Resolution("foreign", self, why="an earlier pool's of tag %d" % tag)
        if life == 0:
            return Resolution("forged", self, why="life 0")
        rel = life - self.life_base
        span = self.span_of(idx)
        if span is None:
            if self.safe or rel > self.slot_floor(idx):
                return Resolution("forged", self, why="no slot %d" % idx)
            return Resolution("stale", self, why="slot %d has no member now" % idx)
        w = span.word(idx)
        if word_state(w) == LEASED and w & HANDLED and word_life(w) == rel:
            return Resolution("leased", self, span.member(idx))
        if rel <= word_issued(w):
            return Resolution("stale", self, why="slot %d is at life %d" % (idx, self.life_base + word_life(w)))
        return Resolution("forged", self, why="slot %d never reached life %d" % (idx, life))


class Dense:
    def __init__(self, t, v):
        self.t, self.v = t, v
        self.name = v.f("name").cstr() or ""
        self.tag = v.f("tag").u()
        self.life_first = v.f("life_first").u()
        self.overflow = v.f("overflow").u()
        self.stride = v.f("stride").u()

    def stats(self):
        """sp_dense_stats_get's numbers (dense_lookup.c)."""
        v, c = self.v, self.v.f("counters")
        count, cap = v.f("count").u(), v.f("cap").u()
        s = {"size": cap, "leased": count, "free": cap - count,
             "max": v.f("limit").u() if v.f("fixed").u() else v.f("max").u(),
             "peak_leased": v.f("peak").u(),
             "bytes": v.f("self_bytes").u() + v.f("items_bytes").u() + v.f("slots_bytes").u(),
             "bytes_reserved": 0}
        for k in ("created", "disposed", "acquired", "reclaimed", "dropped", "grown_past_max"):
            s[k] = c.f(k).u()
        s["released"] = s["acquired"] - count - c.f("leased_disposed").u()
        return s

    def resolve(self, hid):
        """As sp_dense_resolve (dense_lookup.c)."""
        tag, slot, life = handle_parts(hid)
        if hid == 0:
            return Resolution("null")
        if tag != self.tag or (life != 0 and life < self.life_first):
            return Resolution("foreign", self, why="an earlier pool's of tag %d" % tag)
        if slot >= self.v.f("slot_used").u() or life == 0:
            return Resolution("forged", self, why="no slot %d" % slot)
        s = self.v.f("slots").at(slot)
        index, slot_life = s.f("index").u(), s.f("life").u()
        if not index & DENSE_FREE and slot_life == life:
            return Resolution("leased", self, self.v.f("items").u() + index * self.stride,
                              why="element %d" % index)
        if life < slot_life:
            return Resolution("stale", self, why="slot %d is at life %d" % (slot, slot_life))
        return Resolution("forged", self, why="slot %d never reached life %d" % (slot, life))


def holder(t, tag):
    """The Pool or Dense that holds tag now, "free" when none does, None without a tag table."""
    entry = t.tag_holder(tag)
    if entry is None:
        return None
    if entry == 0:
        return "free"
    if entry & 1:
        d = Dense(t, t.dense(entry & ~1))
        d.address = entry & ~1
        return d
    p = Pool(t, t.pool(entry))
    p.address = entry
    return p


def resolve(t, hid):
    """A handle through the tag table: the pool that holds its tag answers it."""
    if hid == 0:
        return Resolution("null")
    tag = handle_parts(hid)[0]
    owner = holder(t, tag)
    if owner is None:
        return Resolution("unknown", why="no tag table: spawnpool's debug info is not loaded")
    if owner == "free":
        return Resolution("no pool", why="tag %d is free: its pool was destroyed" % tag)
    return owner.resolve(hid)


def registry_pools(v):
    """[(name, pool address)] of a registry, in the order they were added (registry.c entries)."""
    out = []
    entries = v.f("entries")
    for i in range(v.f("count").u()):
        e = entries.at(i)
        out.append((e.f("name").cstr() or "", e.f("pool").u()))
    return out


# ---- what the printers show, the same in every debugger ------------------------------------

POOL_NUMBERS = ("size", "leased", "free", "max", "peak_leased", "acquired", "released", "reclaimed",
                "dropped", "grown_past_max", "created", "disposed", "bytes", "bytes_reserved")
DENSE_NUMBERS = ("size", "leased", "free", "max", "peak_leased", "acquired", "released", "reclaimed",
                 "dropped", "grown_past_max", "bytes")
NO_SITES = ("  (acquisition sites not recorded: the library was built with SP_DEBUG=0; link "
            "spawnpool-debug, or build it with SP_DEBUG=1, to record them)")


def pool_fields(pool):
    """[(name, value)] an sp_pool shows: enums by name (str), numbers (int)."""
    s = pool.stats()
    out = [("order", ORDERS[pool.ordered]), ("overflow", OVERFLOWS.get(pool.overflow, str(pool.overflow))),
           ("threads", "SP_THREADS_SAFE" if pool.safe else "SP_THREADS_NONE")]
    out += [(k, s[k]) for k in POOL_NUMBERS]
    out.append(("tag", pool.tag if pool.tagged else "none (no handle yet)"))
    return out


def dense_fields(d):
    s = d.stats()
    out = [("overflow", OVERFLOWS.get(d.overflow, str(d.overflow)))]
    out += [(k, s[k]) for k in DENSE_NUMBERS]
    out.append(("tag", d.tag))
    return out


def handle_title(hid, res):
    """The first words of a handle's text: what it names."""
    if hid == 0:
        return "sp_handle null"
    kind = "sp_dense" if isinstance(res.owner, Dense) else "sp_pool"
    where = (' of %s "%s"' % (kind, res.owner.name)) if res.owner else ""
    why = (" (%s)" % res.why) if res.why and res.state != "leased" else ""
    return "sp_handle %s%s%s" % (res.state, why, where)


def leased_lines(p, limit, expr, value_text):
    """sp-leased's lines for a Pool or a Dense: value_text(owner name, address) is the member's
    value as text ("" when its type is not known)."""
    if isinstance(p, Dense):
        count = p.v.f("count").u()
        lines = ['sp_dense "%s": %d elements (array order; a dense pool records no sites)' % (p.name, count)]
        items, back = p.v.f("items").u(), p.v.f("back")
        for i in range(count if not limit else min(count, limit)):
            slot = back.at(i).u()
            life = p.v.f("slots").at(slot).f("life").u()
            addr = items + i * p.stride
            lines.append("  [%d] slot %d  0x%x  handle {tag %d, slot %d, life %d}%s" % (
                i, slot, addr, p.tag, slot, life, value_text(p.name, addr)))
        if limit and count > limit:
            lines.append("  ... and %d more" % (count - limit))
        return lines
    leased = p.leased()
    lines = ['sp_pool "%s": %d leased (%s)' % (p.name, len(leased), "acquisition order" if p.ordered else "memory order")]
    unrecorded = False
    for n, (idx, span) in enumerate(leased):
        if limit and n == limit:
            lines.append("  ... and %d more (sp-leased %s 0 lists them all)" % (len(leased) - limit, expr))
            break
        site = span.site(idx)
        if site is None:
            where, unrecorded = "", True
        elif site[0] is None:
            where = "  acquired without a site"
        else:
            where = "  acquired at %s:%d" % site
        hid = p.handle_of(idx, span)
        handle = ""
        if hid:
            handle = "  handle {tag %d, slot %d, life %d}" % handle_parts(hid)
        addr = span.member(idx)
        lines.append("  slot %d  0x%x%s%s%s" % (idx, addr, where, handle, value_text(p.name, addr)))
    if unrecorded:
        lines.append(NO_SITES)
    return lines
