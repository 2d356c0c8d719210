# printers.gdb -- what tests/debugger/check_printers.py runs gdb on (printers_program.c stopped in
# debugger_stop): every printer and command of tools/debugger/spawnpool_gdb.py. Its output after
# the BEGIN line is compared with printers.expected (check_printers.py sources the printers first).
set pagination off
set width 0
set print thread-events off
set confirm off
break debugger_stop
run
echo ==BEGIN==\n
echo -- pools\n
print enemies
print *bullets
print sparks
print empty_pool
print (sp_pool *) 0
echo -- handles\n
print boss_handle
sp-member-type enemies enemy
sp-member-type sparks spark
print boss_handle
print scout_handle
print dead_handle
print forged_handle
print null_handle
print gone_handle
print spark_handle
print spark_dead_handle
print $sp_resolve(boss_handle) == boss
print $sp_resolve(scout_handle) == scout
print $sp_resolve(dead_handle)
print $sp_resolve(spark_handle)->id
echo -- dense pool and registry\n
print particles
sp-member-type particles enemy
print particle_handle
print particle_dead_handle
print scene
echo -- leased members\n
sp-leased enemies
sp-leased bullets 1
sp-leased sparks
sp-leased particles
echo -- tags\n
sp-pools
echo -- numbers against sp_stats_get\n
python
import spawnpool_gdb as sp
decals = dict(sp.model.registry_pools(sp.Value(gdb.parse_and_eval("*scene"))))["decals"]
for name, stats in (("enemies", "enemies_stats"), ("bullets", "bullets_stats"),
                    ("sparks", "sparks_stats"), ("empty_pool", "empty_stats"),
                    ("particles", "particles_stats"), ("decals", "decals_stats")):
    p = sp.model.Pool(sp.TARGET, sp.TARGET.pool(decals)) if name == "decals" else sp.pool_of(name)
    want = gdb.parse_and_eval(stats)
    wrong = [k for k, v in p.stats().items() if int(want[k]) != v]
    print("%s: %s" % (name, ("differs in " + ", ".join(wrong)) if wrong else "as sp_stats_get"))
end
kill
