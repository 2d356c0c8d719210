# SPDX-License-Identifier: Zlib
"""lldb_checks.py -- printers.lldb's check of the numbers: sp-check-stats compares what the
model reads of each pool of printers_program with what sp_stats_get said (its *_stats globals)."""
import spawnpool_lldb as sp


def check_stats(debugger, command, result, internal_dict):
    target = debugger.GetSelectedTarget()
    t = sp.Target(target)
    scene = t.struct_at("sp_registry", target.FindFirstGlobalVariable("scene").GetValueAsUnsigned())
    decals = dict(sp.model.registry_pools(scene))["decals"]
    for name, stats in (("enemies", "enemies_stats"), ("bullets", "bullets_stats"),
                        ("sparks", "sparks_stats"), ("empty_pool", "empty_stats"),
                        ("particles", "particles_stats"), ("decals", "decals_stats")):
        if name == "decals":
            p = sp.model.Pool(t, t.pool(decals))
        else:
            v = target.FindFirstGlobalVariable(name)
            kind = "sp_dense" if name == "particles" else "sp_pool"
            sv, _ = sp.struct_of(v, kind)
            p = sp.model.Pool(t, sv) if kind == "sp_pool" else sp.model.Dense(t, sv)
        want = target.FindFirstGlobalVariable(stats)
        wrong = [k for k, v in p.stats().items() if want.GetChildMemberWithName(k).GetValueAsUnsigned() != v]
        result.AppendMessage("%s: %s" % (name, ("differs in " + ", ".join(wrong)) if wrong else "as sp_stats_get"))


def __lldb_init_module(debugger, internal_dict):
    debugger.HandleCommand("command script add -f lldb_checks.check_stats sp-check-stats")
