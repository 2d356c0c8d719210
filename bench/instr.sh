#!/usr/bin/env bash
# SPDX-License-Identifier: Zlib
# make bench-instr: instructions per operation of the fast paths, from callgrind.
#   bench/instr.sh SPINSTR_BINARY CSV_TO_APPEND_TO [K]
# Each mode runs twice under callgrind: counting only inside the functions that do the work
# (--toggle-collect: what the library itself executes, the number the targets judge) and
# counting the whole loop body (call overhead and loop control included). Rows are appended to
# the CSV as workload `instr`, metric instr_per_op / instr_per_op_loop (instr_per_random_pair:
# release a random member of 1024 live, then acquire, as the churn workload does); the profiles
# stay in build-bench/instr/ for callgrind_annotate.
set -euo pipefail
bin=$1
csv=$2
k=${3:-100000}
out=$(dirname "$bin")/instr
mkdir -p "$out"

# mode impl metric functions...
modes=(
  "pair spawnpool instr_per_op sp_acquire sp_release"
  "reclaim spawnpool_reclaim instr_per_op sp_acquire"
  "resolve spawnpool_handles instr_per_op sp_resolve"
  "handles spawnpool_handles instr_per_pair_with_handle sp_acquire_handle sp_release"
  "floor freelist instr_per_op instr_fl_acquire instr_fl_release"
  "churn1k spawnpool instr_per_random_pair sp_acquire sp_release"
  "churn_floor1k freelist instr_per_random_pair instr_fl_acquire instr_fl_release"
)

totals() { # the event total callgrind wrote at the end of its profile
  awk '/^(totals|summary):/ {v=$2} END {print v+0}' "$1"
}

for line in "${modes[@]}"; do
  set -- $line
  mode=$1 impl=$2 metric=$3
  shift 3
  toggles=()
  for f in "$@"; do toggles+=("--toggle-collect=$f"); done
  valgrind -q --tool=callgrind --instr-atstart=no --collect-atstart=no "${toggles[@]}" \
    --callgrind-out-file="$out/lib.$mode.out" "$bin" "$mode" "$k"
  valgrind -q --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out/loop.$mode.out" "$bin" "$mode" "$k"
  lib=$(totals "$out/lib.$mode.out")
  loop=$(totals "$out/loop.$mode.out")
  awk -v m="$mode" -v i="$impl" -v me="$metric" -v l="$lib" -v o="$loop" -v k="$k" 'BEGIN {
    printf "instr,1000,64,%s,%s,%.2f,instr\n", i, me, l / k
    printf "instr,1000,64,%s,%s_loop,%.2f,instr\n", i, me, o / k
    printf "%-8s %-18s %6.2f instructions per op in the library, %6.2f per loop iteration\n", m, i, l / k, o / k > "/dev/stderr"
  }' >> "$csv"
done
