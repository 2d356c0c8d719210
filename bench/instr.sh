#!/usr/bin/env bash
# SPDX-License-Identifier: Zlib
# make bench-instr: instructions and cache misses per operation of the fast paths, from callgrind.
#   bench/instr.sh SPINSTR_BINARY CSV_TO_APPEND_TO [K]
# Every implementation runs the same loops in spinstr (bench/bench_instr.c): LIFO bursts of 1000,
# random churn at 1k, 100k and 1M live, for the default pool (initial = 0, grown by acquisition,
# 64-byte members, memory order, no hooks), the same pool in acquisition order, a pool built whole
# at creation, and bench_impls.c's checked (checked_side, checked_bits, checked_dense, checked_plan,
# checked_plan_byte) and bare (freelist) free lists; then
# sp_resolve, sp_acquire_handle + sp_release and a saturated RECLAIM acquisition; and the pair
# of a thread-safe pool on one thread (spawnpool_ts, from 0.4.0) beside the default pool's.
# Each mode runs twice under callgrind, after a warm-up as long as the measurement:
#   "lib"   --toggle-collect on the implementation's two functions: what the library executes,
#           the number the targets judge (the loop around the calls is not counted);
#   "loop"  the whole loop body (call overhead, the random index and loop control included).
# Churn at 1M also runs its "lib" pass with --cache-sim=yes: D1 and LL misses per op inside the
# functions. Callgrind rather than cachegrind because it honours CALLGRIND_START/STOP and
# CALLGRIND_ZERO_STATS, so exactly the measured ops are counted, from caches warmed by the same
# loop (cachegrind 3.19 would count the 1M-member setup too and need a subtraction of two runs);
# both simulate the same cache model. The caches are given explicitly (a Zen 3's: L1 32 KiB 8-way,
# L3 32 MiB 16-way, 64-byte lines), so the counts do not depend on the machine that runs them.
# Rows go to the CSV as workload `instr`, N = live members; the profiles stay in
# <dir of SPINSTR>/instr/ for callgrind_annotate.
set -euo pipefail
bin=$1
csv=$2
k=${3:-100000}
out=$(dirname "$bin")/instr
mkdir -p "$out"
# shellcheck disable=SC2054 # the commas are valgrind's cache syntax
caches=(--I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64)

toggles_of() { # the two functions that are one implementation's acquire and release
  case $1 in
    spawnpool*) echo "sp_acquire sp_release" ;;
    checked_side) echo "checked_side_acquire checked_side_release" ;;
    checked_bits) echo "checked_bits_acquire checked_bits_release" ;;
    checked_dense) echo "checked_dense_acquire checked_dense_release" ;;
    checked_plan) echo "checked_plan_acquire checked_plan_release" ;;
    checked_plan_byte) echo "checked_plan_byte_acquire checked_plan_byte_release" ;;
    freelist) echo "fl_acquire fl_release" ;;
  esac
}

event() { # event NAME FILE: the total of one event in a callgrind profile (0 when absent)
  awk -v name="$1" '
    /^events:/ { for (i = 2; i <= NF; i++) if ($i == name) col = i }
    /^totals:/ { v = (col && col <= NF) ? $col : 0 }
    END { print v + 0 }' "$2"
}

# run TAG METRIC IMPL N CACHESIM(0|1) TOGGLES -- SPINSTR_ARGS...
run() {
  local tag=$1 metric=$2 impl=$3 n=$4 cachesim=$5 toggles=$6
  shift 7
  local flags=() ops_lib ops_loop
  for f in $toggles; do flags+=("--toggle-collect=$f"); done
  [ "$cachesim" = 1 ] && flags+=(--cache-sim=yes "${caches[@]}")
  ops_lib=$(valgrind -q --tool=callgrind --instr-atstart=no --collect-atstart=no "${flags[@]}" \
    --callgrind-out-file="$out/lib.$tag.out" "$bin" "$@" 2>"$out/lib.$tag.err") || {
    cat "$out/lib.$tag.err" >&2; return 1; }
  # valgrind describes the host's caches before taking the ones given; only other lines matter
  grep -v -e 'warning: L3 cache found' -e 'warning: specified LL cache' \
    -e 'warning: simulated LL cache' "$out/lib.$tag.err" >&2 || true
  ops_loop=$(valgrind -q --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out/loop.$tag.out" "$bin" "$@")
  local ir irl d1 ll
  ir=$(event Ir "$out/lib.$tag.out")
  irl=$(event Ir "$out/loop.$tag.out")
  d1=$(( $(event D1mr "$out/lib.$tag.out") + $(event D1mw "$out/lib.$tag.out") ))
  ll=$(( $(event DLmr "$out/lib.$tag.out") + $(event DLmw "$out/lib.$tag.out") ))
  awk -v t="$tag" -v i="$impl" -v me="$metric" -v n="$n" -v ir="$ir" -v irl="$irl" \
      -v ol="$ops_lib" -v oo="$ops_loop" -v d1="$d1" -v ll="$ll" -v cs="$cachesim" 'BEGIN {
    printf "instr,%s,64,%s,%s,%.2f,instr\n", n, i, me, ir / ol
    printf "instr,%s,64,%s,%s_loop,%.2f,instr\n", n, i, me, irl / oo
    line = sprintf("%-22s %-18s %7.2f instructions per op in the functions, %7.2f per loop iteration", t, i, ir / ol, irl / oo)
    if (cs == 1) {
      printf "instr,%s,64,%s,d1_miss_per_pair_churn,%.3f,misses\n", n, i, d1 / ol
      printf "instr,%s,64,%s,ll_miss_per_pair_churn,%.3f,misses\n", n, i, ll / ol
      line = line sprintf("; %.3f D1, %.3f LL misses per op", d1 / ol, ll / ol)
    }
    print line > "/dev/stderr"
  }' >> "$csv"
}

impls=(spawnpool spawnpool_ordered spawnpool_presized checked_side checked_bits checked_dense
       checked_plan checked_plan_byte freelist)
for impl in "${impls[@]}"; do
  t=$(toggles_of "$impl")
  run "lifo1k.$impl" instr_per_pair_lifo "$impl" 1000 0 "$t" -- lifo "$impl" "$k" 1000
  for n in 1000 100000 1000000; do
    cs=0; [ "$n" = 1000000 ] && cs=1
    run "churn$n.$impl" instr_per_pair_churn "$impl" "$n" "$cs" "$t" -- churn "$impl" "$k" "$n"
  done
done
sp="sp_acquire sp_release"
run pair.spawnpool instr_per_pair spawnpool 1000 0 "$sp" -- pair spawnpool "$k"
# The thread-safe pool's pair on one thread, beside the plain pool's (its out-of-line paths are
# callees of sp_acquire and sp_release, so the same toggles count them). spinstr has it once the
# library has thread-safe pools (0.4.0); until then a not_built row says so.
if "$bin" has spawnpool_ts; then
  run pair.spawnpool_ts instr_per_pair spawnpool_ts 1000 0 "$sp" -- pair spawnpool_ts "$k"
else
  echo "instr,1000,64,spawnpool_ts,not_built,0,flag" >> "$csv"
  echo "pair.spawnpool_ts: not built (this library has no thread-safe pools)" >&2
fi
run resolve.spawnpool instr_per_resolve_call spawnpool 1000 0 instr_resolve -- resolve "$k"
# The inline sp_resolve in a caller's loop (as sokol's lookup is measured, inlined in its
# translation unit): the loop with it less the same loop without it, per resolve.
loop_ir() { # loop_ir TAG SPINSTR_ARGS...: instructions per iteration of the whole loop
  local tag=$1 ops ir
  shift
  ops=$(valgrind -q --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/loop.$tag.out" "$bin" "$@")
  ir=$(event Ir "$out/loop.$tag.out")
  awk -v ir="$ir" -v o="$ops" 'BEGIN { printf "%.4f", ir / o }'
}
ri=$(loop_ir resolve_inline.spawnpool resolve_inline "$k")
rb=$(loop_ir resolve_base.spawnpool resolve_base "$k")
awk -v ri="$ri" -v rb="$rb" 'BEGIN {
  printf "instr,1000,64,spawnpool,instr_per_resolve,%.2f,instr\n", ri - rb
  printf "%-22s %-18s %7.2f instructions per resolve inlined in the loop (%.2f - %.2f of the bare loop)\n", "resolve_inline.spawnpool", "spawnpool", ri - rb, ri, rb > "/dev/stderr"
}' >> "$csv"
run handles.spawnpool instr_per_pair_with_handle spawnpool 1000 0 "sp_acquire_handle sp_release" \
  -- handles "$k"
run reclaim.spawnpool instr_per_reclaim spawnpool_reclaim 1000 0 sp_acquire -- reclaim "$k"
