# SPDX-License-Identifier: Zlib
"""spawnpool_lldb.py -- lldb summaries and commands for spawnpool, the same as gdb's
(spawnpool_gdb.py). Load with one line:

    command script import /usr/local/share/spawnpool/debugger/spawnpool_lldb.py

(or put that line in ~/.lldbinit). They need spawnpool's debug info; the acquisition sites need
the debug library (spawnpool-debug).

  an sp_pool, sp_dense, sp_registry (or a pointer to one), an sp_handle: a one-line summary
                          (what gdb's printers show)
  sp-leased POOL [N]      the leased members with their acquisition sites (at most N, 200)
  sp-member-type NAME TYPE   members of the pools named NAME are TYPE: handles and sp-leased
                          show their values
  sp-resolve HANDLE       the member a handle names, as a TYPE * after sp-member-type

The decoding is in spawnpool_model.py beside this file."""

import os
import shlex
import struct
import sys

import lldb

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spawnpool_model as model  # noqa: E402

NO_DEBUG_INFO = ("spawnpool's debug info is not loaded: build the library with -g "
                 "(CMAKE_BUILD_TYPE Debug or RelWithDebInfo)")
MEMBER_TYPES = {}  # pool name -> lldb.SBType


class Error(Exception):
    pass


def complete_type(target, name):
    """The struct's definition (a program's own debug info has only the declaration)."""
    types = target.FindTypes(name)
    for i in range(types.GetSize()):
        t = types.GetTypeAtIndex(i).GetCanonicalType()
        if t.GetNumberOfFields() > 0:
            return t
    return None


class Value:
    """The model's value adapter over an lldb.SBValue."""

    def __init__(self, v):
        self.v = v

    def f(self, name):
        c = self.v.GetChildMemberWithName(name)
        if not c.IsValid():
            raise Error("no field %s in %s" % (name, self.v.GetTypeName()))
        return Value(c)

    def has(self, name):
        t = self.v.GetType().GetCanonicalType()
        return any(t.GetFieldAtIndex(i).GetName() == name for i in range(t.GetNumberOfFields()))

    def u(self):
        return self.v.GetValueAsUnsigned()

    def at(self, i):
        return Value(self.v.GetValueForExpressionPath("[%d]" % i))

    def deref(self):
        d = self.v.Dereference()
        if d.IsValid() and d.GetError().Success() and d.GetNumChildren() > 0:
            return Value(d)
        # An _Atomic(T *) (a span's record): lldb does not dereference it; T by name.
        name = self.v.GetType().GetCanonicalType().GetName()
        name = name.replace("_Atomic(", "").replace(")", "").replace("*", "").replace("struct ", "").strip()
        target = self.v.GetTarget()
        t = complete_type(target, name)
        if t is None:
            raise Error("cannot dereference %s" % self.v.GetTypeName())
        return Value(target.CreateValueFromAddress(name, lldb.SBAddress(self.u(), target), t))

    def cstr(self):
        t = self.v.GetType().GetCanonicalType()
        addr = self.v.GetValueAsUnsigned() if t.IsPointerType() else self.v.GetLoadAddress()
        if addr == 0:
            return None
        err = lldb.SBError()
        s = self.v.GetProcess().ReadCStringFromMemory(addr, 4096, err)
        return s if err.Success() else None


class Target:
    """The model's target adapter over an lldb.SBTarget."""

    def __init__(self, target):
        self.target = target

    def read(self, addr, n):
        if not n:
            return b""
        err = lldb.SBError()
        data = self.target.GetProcess().ReadMemory(addr, n, err)
        if not err.Success():
            raise Error("cannot read %d bytes at 0x%x: %s" % (n, addr, err.GetCString()))
        return data

    def tables(self):
        found = self.target.FindGlobalVariables("sp__tag_holders", 8)
        return [found.GetValueAtIndex(i).GetLoadAddress() for i in range(found.GetSize())]

    def tag_holder(self, tag):
        tables = self.tables()
        if not tables:
            return None
        for at in tables:  # (a copy of the library per shared library that embeds it)
            entry = struct.unpack("<Q", self.read(at + 8 * tag, 8))[0]
            if entry:
                return entry
        return 0

    def struct_at(self, name, addr):
        t = complete_type(self.target, name)
        if t is None:
            raise Error(NO_DEBUG_INFO)
        return Value(self.target.CreateValueFromAddress(name, lldb.SBAddress(addr, self.target), t))

    def pool(self, addr):
        return self.struct_at("sp_pool", addr)

    def dense(self, addr):
        return self.struct_at("sp_dense", addr)


def struct_of(valobj, name):
    """The struct a value names (itself, or what it points to), complete; None for NULL."""
    t = valobj.GetType().GetCanonicalType()
    target = Target(valobj.GetTarget())
    if t.IsPointerType():
        addr = valobj.GetValueAsUnsigned()
        return (target.struct_at(name, addr) if addr else None), target
    return target.struct_at(name, valobj.GetLoadAddress()), target


def fields_text(fields):
    return "{" + ", ".join("%s = %s" % (k, x) for k, x in fields) + "}"


def member_text(target, owner_name, addr, with_value):
    """The member's address as `(TYPE *) 0x...` and, with_value, its value."""
    t = MEMBER_TYPES.get(owner_name)
    if t is None:
        return "(void *) 0x%x" % addr, ""
    v = target.CreateValueFromAddress("member", lldb.SBAddress(addr, target), t)
    text = ""
    if with_value:
        stream = lldb.SBStream()
        v.GetDescription(stream)
        text = stream.GetData().strip()
        text = text.split(" = ", 1)[1] if " = " in text else text
        text = " ".join(text.split())
    return "(%s *) 0x%x" % (t.GetName(), addr), text


def pool_summary(valobj, internal_dict):
    try:
        v, target = struct_of(valobj, "sp_pool")
        if v is None:
            return "NULL"
        p = model.Pool(target, v)
        return 'sp_pool "%s" %s' % (p.name, fields_text(model.pool_fields(p)))
    except Exception as e:  # a summary must not raise
        return "<sp_pool unreadable: %s>" % e


def dense_summary(valobj, internal_dict):
    try:
        v, target = struct_of(valobj, "sp_dense")
        if v is None:
            return "NULL"
        d = model.Dense(target, v)
        return 'sp_dense "%s" %s' % (d.name, fields_text(model.dense_fields(d)))
    except Exception as e:
        return "<sp_dense unreadable: %s>" % e


def registry_summary(valobj, internal_dict):
    try:
        v, target = struct_of(valobj, "sp_registry")
        if v is None:
            return "NULL"
        pools = model.registry_pools(v)
        return "sp_registry with %d pools {%s}" % (len(pools), ", ".join(
            '"%s" = (sp_pool *) 0x%x' % (n, a) for n, a in pools))
    except Exception as e:
        return "<sp_registry unreadable: %s>" % e


def handle_summary(valobj, internal_dict):
    try:
        hid = valobj.GetChildMemberWithName("id").GetValueAsUnsigned()
        if hid == 0:
            return "sp_handle null"
        target = Target(valobj.GetTarget())
        r = model.resolve(target, hid)
        text = model.handle_title(hid, r)
        fields = list(zip(("tag", "slot", "life"), model.handle_parts(hid)))
        if r.state == "leased":
            ptr, value = member_text(valobj.GetTarget(), r.owner.name, r.member, True)
            fields.append(("member", ptr))
            if value:
                fields.append(("value", value))
        return text + " " + fields_text(fields)
    except Exception as e:
        return "<sp_handle unreadable: %s>" % e


def evaluate(debugger, expr):
    frame = debugger.GetSelectedTarget().GetProcess().GetSelectedThread().GetSelectedFrame()
    v = frame.EvaluateExpression(expr) if frame.IsValid() else debugger.GetSelectedTarget().EvaluateExpression(expr)
    if not v.IsValid() or v.GetError().Fail():
        raise Error("%s: %s" % (expr, v.GetError().GetCString()))
    return v


def leased_command(debugger, command, result, internal_dict):
    """sp-leased POOL [N]: the leased members of POOL in the pool's order, with their slots,
    addresses, acquisition sites (debug library) and handles; at most N (default 200, 0: all)."""
    try:
        args = shlex.split(command)
        if not args or len(args) > 2:
            raise Error("usage: sp-leased POOL [N]")
        limit = int(args[1]) if len(args) == 2 else 200
        v = evaluate(debugger, args[0])
        t = v.GetType().GetCanonicalType()
        name = (t.GetPointeeType() if t.IsPointerType() else t).GetUnqualifiedType().GetName()
        name = name.replace("struct ", "")
        if name not in ("sp_pool", "sp_dense"):
            raise Error("%s is not an sp_pool or sp_dense (it is %s)" % (args[0], v.GetTypeName()))
        sv, target = struct_of(v, name)
        if sv is None:
            raise Error("%s is NULL" % args[0])
        p = model.Pool(target, sv) if name == "sp_pool" else model.Dense(target, sv)
        lldb_target = debugger.GetSelectedTarget()

        def value_text(owner, addr):
            value = member_text(lldb_target, owner, addr, True)[1]
            return ("  " + value) if value else ""

        for line in model.leased_lines(p, limit, args[0], value_text):
            result.AppendMessage(line)
    except (Error, model.struct.error, ValueError) as e:
        result.SetError("sp-leased: %s" % e)


def member_type_command(debugger, command, result, internal_dict):
    """sp-member-type NAME TYPE: the members of the pools named NAME are TYPE."""
    parts = command.split(None, 1)
    if len(parts) != 2:
        result.SetError("usage: sp-member-type POOL-NAME TYPE")
        return
    types = debugger.GetSelectedTarget().FindTypes(parts[1].strip())
    if types.GetSize() == 0:
        result.SetError("sp-member-type: no type %s" % parts[1])
        return
    MEMBER_TYPES[parts[0]] = types.GetTypeAtIndex(0)


def resolve_command(debugger, command, result, internal_dict):
    """sp-resolve HANDLE: the member an sp_handle names (as sp_resolve), or NULL."""
    try:
        v = evaluate(debugger, command.strip())
        hid = v.GetChildMemberWithName("id").GetValueAsUnsigned()
        r = model.resolve(Target(debugger.GetSelectedTarget()), hid)
        owner = r.owner.name if r.owner else None
        if r.state == "leased":
            result.AppendMessage(member_text(debugger.GetSelectedTarget(), owner, r.member, False)[0])
        else:
            result.AppendMessage("NULL (%s)" % r.state)
    except Error as e:
        result.SetError("sp-resolve: %s" % e)


def __lldb_init_module(debugger, internal_dict):
    mod = __name__
    for type_name, fn in (("sp_pool", "pool_summary"), ("sp_dense", "dense_summary"),
                          ("sp_registry", "registry_summary"), ("sp_handle", "handle_summary")):
        # (a summary of a type applies to pointers to it too)
        debugger.HandleCommand("type summary add -w spawnpool -F %s.%s %s" % (mod, fn, type_name))
        debugger.HandleCommand("type summary add -w spawnpool -F %s.%s 'struct %s'" % (mod, fn, type_name))
    debugger.HandleCommand("type category enable spawnpool")
    debugger.HandleCommand("command script add -o -f %s.leased_command sp-leased" % mod)
    debugger.HandleCommand("command script add -o -f %s.member_type_command sp-member-type" % mod)
    debugger.HandleCommand("command script add -o -f %s.resolve_command sp-resolve" % mod)
