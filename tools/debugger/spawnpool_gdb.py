# SPDX-License-Identifier: Zlib
"""spawnpool_gdb.py -- gdb pretty-printers and commands for spawnpool. Load with one line:

    source /usr/local/share/spawnpool/debugger/spawnpool_gdb.py

(or put that line in ~/.gdbinit). They need spawnpool's debug info (a Debug or RelWithDebInfo
build of the library); the acquisition sites need the debug variant (spawnpool-debug, SP_DEBUG=1).

  print pool            an sp_pool or sp_pool *: name, order, overflow, threads, the numbers
                        sp_stats_get reports (leased, free, peak, acquired...), its handle tag
  print handle          an sp_handle: tag, slot, life, the pool that holds the tag, whether it
                        resolves (as sp_resolve), and the member when it does
  print dense, registry an sp_dense (its numbers), an sp_registry (its pools by name)
  sp-leased POOL [N]    the leased members in the pool's order with their acquisition sites
                        (at most N, default 200; 0: all)
  sp-pools              every pool and dense pool that holds a handle tag now
  sp-member-type NAME TYPE   members of the pools named NAME are TYPE: handles and sp-leased
                        show their values
  $sp_resolve(handle)   the member a handle names (a TYPE * after sp-member-type), or NULL

The decoding is in spawnpool_model.py beside this file; this file is gdb's side of it
(spawnpool_lldb.py is lldb's)."""

import os
import sys

import gdb
import gdb.printing

sys.dont_write_bytecode = True  # (no __pycache__ in the install directory or the source tree)
sys.path.insert(0, os.path.dirname(os.path.abspath(os.path.expanduser(__file__))))
import spawnpool_model as model  # noqa: E402  (after the path)

NO_DEBUG_INFO = ("spawnpool's debug info is not loaded: build the library with -g "
                 "(CMAKE_BUILD_TYPE Debug or RelWithDebInfo)")


class Value:
    """The model's value adapter over a gdb.Value."""

    def __init__(self, v):
        self.v = v

    def f(self, name):
        return Value(self.v[name])

    def has(self, name):
        t = self.v.type.strip_typedefs()
        return any(field.name == name for field in t.fields())

    def u(self):
        return int(self.v)

    def at(self, i):
        return Value(self.v[i])

    def deref(self):
        return Value(self.v.dereference())

    def cstr(self):
        t = self.v.type.strip_typedefs()
        if t.code == gdb.TYPE_CODE_PTR and int(self.v) == 0:
            return None
        if t.code == gdb.TYPE_CODE_ARRAY and t.sizeof == 0:  # a flexible array: char name[]
            return self.v.address.cast(gdb.lookup_type("char").pointer()).string(errors="replace")
        return self.v.string(errors="replace")


def struct_type(name):
    try:
        t = gdb.lookup_type("struct " + name)
    except gdb.error:
        return None
    return t if t.fields() else None  # an opaque declaration only: no debug info


def holder_tables():
    """The tag table's holders (tags.c, sp__tag_holders) of every copy of the library loaded."""
    tables = []
    for objfile in gdb.objfiles():
        try:
            sym = objfile.lookup_global_symbol("sp__tag_holders") or objfile.lookup_static_symbol("sp__tag_holders")
        except (AttributeError, gdb.error):
            sym = None
        if sym is not None:
            tables.append(sym.value())
    if not tables:
        sym = gdb.lookup_global_symbol("sp__tag_holders")
        if sym is not None:
            tables.append(sym.value())
    return tables


class Target:
    """The model's target adapter over the selected inferior."""

    def read(self, addr, n):
        return bytes(gdb.selected_inferior().read_memory(addr, n)) if n else b""

    def tag_holder(self, tag):
        tables = holder_tables()
        if not tables:
            return None
        # A program may hold several copies of the library (each shared library that embeds the
        # static one): the copy whose table has the tag taken answers.
        for table in tables:
            entry = int(table[tag])
            if entry:
                return entry
        return 0

    def pool(self, addr):
        return Value(gdb.Value(addr).cast(struct_type("sp_pool").pointer()).dereference())

    def dense(self, addr):
        return Value(gdb.Value(addr).cast(struct_type("sp_dense").pointer()).dereference())


TARGET = Target()
MEMBER_TYPES = {}  # pool name -> gdb.Type (sp-member-type)


def member_pointer(owner_name, addr):
    t = MEMBER_TYPES.get(owner_name)
    return gdb.Value(addr).cast((t or gdb.lookup_type("void")).pointer()), t is not None


def as_gdb(name, x):
    """A field's value for gdb: an enum's name as the library's enum (printed by name)."""
    enum = {"order": "sp_order", "overflow": "sp_overflow", "threads": "sp_threads"}.get(name)
    if enum:
        try:
            t = gdb.lookup_type(enum)
            for f in t.fields():
                if f.name == x:
                    return gdb.Value(f.enumval).cast(t)
        except gdb.error:
            pass
    return x


def pool_children(pool):
    for k, x in model.pool_fields(pool):
        yield k, as_gdb(k, x)


def dense_children(d):
    for k, x in model.dense_fields(d):
        yield k, as_gdb(k, x)


class StructPrinter:
    """An sp_pool / sp_dense / sp_registry, or a pointer to one (NULL: 0x0)."""

    def __init__(self, val, kind, pointer):
        self.val, self.kind, self.pointer = val, kind, pointer

    def target(self):
        if not struct_type(self.kind):
            raise gdb.error(NO_DEBUG_INFO)
        v = self.val.dereference() if self.pointer else self.val
        return Value(v.cast(struct_type(self.kind)))

    def prefix(self):
        return ("0x%x " % int(self.val)) if self.pointer else ""

    def to_string(self):
        if self.pointer and int(self.val) == 0:
            return "(%s *) 0x0" % self.kind
        try:
            v = self.target()
            if self.kind == "sp_registry":
                return "%ssp_registry with %d pools" % (self.prefix(), v.f("count").u())
            return '%s%s "%s"' % (self.prefix(), self.kind, v.f("name").cstr())
        except (gdb.error, gdb.MemoryError) as e:
            return "%s%s <unreadable: %s>" % (self.prefix(), self.kind, e)

    def children(self):
        if self.pointer and int(self.val) == 0:
            return
        try:
            v = self.target()
            if self.kind == "sp_pool":
                items = list(pool_children(model.Pool(TARGET, v)))
            elif self.kind == "sp_dense":
                items = list(dense_children(model.Dense(TARGET, v)))
            else:
                ptype = gdb.lookup_type("sp_pool").pointer()
                items = [(n, gdb.Value(a).cast(ptype)) for n, a in model.registry_pools(v)]
        except (gdb.error, gdb.MemoryError):
            return
        for i, (k, x) in enumerate(items):
            if self.kind == "sp_registry":
                yield "key%d" % i, '"%s"' % k
                yield "value%d" % i, x
            else:
                yield k, x

    def display_hint(self):
        return "map" if self.kind == "sp_registry" else None


class HandlePrinter:
    def __init__(self, val):
        self.val = val
        self.hid = int(val["id"])
        self.res = None
        self.error = None
        try:
            self.res = model.resolve(TARGET, self.hid)
        except (gdb.error, gdb.MemoryError) as e:
            self.error = e

    def to_string(self):
        if self.error is not None:
            return "sp_handle <unreadable: %s>" % self.error
        return model.handle_title(self.hid, self.res if self.hid else None)

    def children(self):
        if self.hid == 0:
            return
        tag, slot, life = model.handle_parts(self.hid)
        yield "tag", tag
        yield "slot", slot
        yield "life", life
        r = self.res
        if r is not None and r.state == "leased":
            ptr, typed = member_pointer(r.owner.name, r.member)
            yield "member", ptr
            if typed:
                yield "value", ptr.dereference()


def lookup(val):
    t = val.type.strip_typedefs()
    pointer = t.code == gdb.TYPE_CODE_PTR
    if pointer:
        t = t.target().strip_typedefs()
    if t.code != gdb.TYPE_CODE_STRUCT:
        return None
    name = t.tag
    if name == "sp_handle" and not pointer:
        return HandlePrinter(val)
    if name in ("sp_pool", "sp_dense", "sp_registry"):
        return StructPrinter(val, name, pointer)
    return None


def pool_of(arg):
    """The model of the pool (or dense pool) an expression names: a pointer or a struct."""
    v = gdb.parse_and_eval(arg)
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        if int(v) == 0:
            raise gdb.GdbError("sp-leased: %s is NULL" % arg)
        t, v = t.target().strip_typedefs(), v.dereference()
    if t.tag not in ("sp_pool", "sp_dense") or not struct_type(t.tag):
        raise gdb.GdbError("sp-leased: %s is not an sp_pool or sp_dense (%s)" % (
            arg, NO_DEBUG_INFO if t.tag in ("sp_pool", "sp_dense") else "it is %s" % v.type))
    v = Value(v.cast(struct_type(t.tag)))
    return model.Pool(TARGET, v) if t.tag == "sp_pool" else model.Dense(TARGET, v)


def value_text(owner_name, addr):
    ptr, typed = member_pointer(owner_name, addr)
    return ("  " + str(ptr.dereference())) if typed else ""


class LeasedCommand(gdb.Command):
    """sp-leased POOL [N]: the leased members of POOL (an sp_pool * or sp_pool expression) in the
pool's order, each with its slot, address, acquisition site (debug builds of the library) and the
handle its lease has out; at most N of them (default 200, 0: all). An sp_dense lists its
elements in array order."""

    def __init__(self):
        super().__init__("sp-leased", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        if not args or len(args) > 2:
            raise gdb.GdbError("usage: sp-leased POOL [N]")
        limit = int(args[1]) if len(args) == 2 else 200
        for line in model.leased_lines(pool_of(args[0]), limit, args[0], value_text):
            print(line)


class PoolsCommand(gdb.Command):
    """sp-pools: every sp_pool and sp_dense that holds a handle tag now (pools take one with their
first handle, thread-safe and dense pools at creation), from the library's tag table."""

    def __init__(self):
        super().__init__("sp-pools", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        tables = holder_tables()
        if not tables:
            raise gdb.GdbError("sp-pools: " + NO_DEBUG_INFO)
        import struct
        n = 0
        for table in tables:
            raw = TARGET.read(int(table.address), 8 * model.TAG_COUNT)
            for tag, entry in enumerate(struct.unpack("<%dQ" % model.TAG_COUNT, raw)):
                if not entry:
                    continue
                owner = model.holder(TARGET, tag)
                kind = "sp_dense" if entry & 1 else "sp_pool"
                print('tag %d  (%s *) 0x%x  "%s"' % (tag, kind, entry & ~1, owner.name))
                n += 1
        print("%d pools hold a tag" % n)


class MemberTypeCommand(gdb.Command):
    """sp-member-type NAME TYPE: the members of the pools named NAME are TYPE, so that handles,
$sp_resolve and sp-leased show them as TYPE. Without arguments: the types set so far."""

    def __init__(self):
        super().__init__("sp-member-type", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        parts = arg.split(None, 1)
        if not parts:
            for name, t in sorted(MEMBER_TYPES.items()):
                print('"%s": %s' % (name, t))
            return
        if len(parts) != 2:
            raise gdb.GdbError("usage: sp-member-type POOL-NAME TYPE")
        try:
            MEMBER_TYPES[parts[0]] = gdb.lookup_type(parts[1].strip())
        except gdb.error:
            try:
                MEMBER_TYPES[parts[0]] = gdb.parse_and_eval("(%s *) 0" % parts[1]).type.target()
            except gdb.error as e:
                raise gdb.GdbError("sp-member-type: no type %s (%s)" % (parts[1], e))


class ResolveFunction(gdb.Function):
    """$sp_resolve(handle): the member an sp_handle names, as sp_resolve would return it (a
pointer of the type sp-member-type set for its pool, else void *), or NULL."""

    def __init__(self):
        super().__init__("sp_resolve")

    def invoke(self, handle):
        r = model.resolve(TARGET, int(handle["id"]))
        owner = r.owner.name if r.owner else None
        return member_pointer(owner, r.member if r.state == "leased" else 0)[0]


def lookup_printer(val):
    return lookup(val)


lookup_printer.name = "spawnpool"
lookup_printer.enabled = True

# Sourced, this file runs as gdb's __main__: it answers `import spawnpool_gdb` too (scripts that
# use its functions, the auto-load script), so that it is never loaded twice.
sys.modules.setdefault("spawnpool_gdb", sys.modules[__name__])
gdb.printing.register_pretty_printer(None, lookup_printer, replace=True)
LeasedCommand()
PoolsCommand()
MemberTypeCommand()
ResolveFunction()
