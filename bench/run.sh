#!/usr/bin/env bash
# SPDX-License-Identifier: Zlib
# make bench / make bench-instr: runs the suite into a results directory of the build tree.
#   bench/run.sh BUILD_DIR RESULTS_DIR [quick|full] [instr-only]
# Every workload runs in a process of its own (spbench --workload W); jemalloc, which cannot be
# dlopened, gets its own processes with LD_PRELOAD. The CSV of the run goes to
# RESULTS_DIR/<UTC timestamp>.csv and RESULTS_DIR/latest.csv; spreport turns latest.csv into
# latest.md and the plot inputs, gnuplot draws the PNG and SVG plots. Nothing in the checkout
# changes: `make bench-publish` copies a run into bench/results/.
# Progress goes to stderr: "[7/14] frame, ~40 s left", estimated from the previous run of the
# same mode when there is one (RESULTS_DIR/durations-MODE.txt), else from this run's pace and
# the workloads' usual relative lengths.
# As root the timed processes run at nice -10 (said on stderr); BENCH_NICE=0 keeps them at 0.
set -euo pipefail
build=$1
results=$2
mode=${3:-full}
only=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
data=$results/data
mkdir -p "$results" "$data"
quick=()
k=200000
if [ "$mode" = quick ]; then quick=(--quick); k=50000; fi

run_instr() { # appends the callgrind counts to $1
  if [ -x "$build/spinstr" ] && command -v valgrind >/dev/null; then
    [ "$only" = instr-only ] && echo "== instructions per op (callgrind)" >&2
    "$here/instr.sh" "$build/spinstr" "$1" "$k"
  else
    echo "skipping instruction counts: spinstr or valgrind missing" >&2
  fi
}

report() {
  local meta=$data/meta.md
  {
    echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
         "$(lscpu | sed -n 's/^Hypervisor vendor: *//p' | head -1 | sed 's/.\+/hypervisor &,/')" \
         "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr)."
    echo "Compiler: $(gcc --version | head -1); C++: $(g++ --version | head -1); $(ldd --version | head -1)."
    echo "Peers: $(for p in libboost-dev libglib2.0-0 libmimalloc2.0 libgoogle-perftools4 libtcmalloc-minimal4 libjemalloc2; do
             v=$(dpkg-query -W -f='${Version}' $p 2>/dev/null || echo absent); printf '%s %s; ' $p "$v"; done)"
    echo "Run: $(head -c 300 "$data/run.txt" 2>/dev/null || echo unknown)."
  } > "$meta"
  "$build/spreport" "$results/latest.csv" "$results/latest.md" "$data" "$meta"
  if command -v gnuplot >/dev/null; then
    gnuplot "$data/plots.gp" && echo "plots in $results/" >&2
  else
    echo "gnuplot missing: no plots" >&2
  fi
  echo "report: $results/latest.md" >&2
}

if [ "$only" = instr-only ]; then
  [ -f "$results/latest.csv" ] || echo "workload,n,item_size,impl,metric,value,unit" > "$results/latest.csv"
  # Replace earlier instruction rows rather than piling them up.
  grep -v '^instr,' "$results/latest.csv" > "$data/latest.tmp" || true
  run_instr "$data/latest.tmp"
  mv "$data/latest.tmp" "$results/latest.csv"
  report
  exit 0
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
# Which library the numbers belong to: the last commit of src/ and include/, and whether the
# tree had changes on top of it.
lib=${BENCH_LIBRARY:-unknown library version} # set it when running from an exported tree
if [ -z "${BENCH_LIBRARY:-}" ] && command -v git >/dev/null && git -C "$here/.." rev-parse >/dev/null 2>&1; then
  lib="library at commit $(git -C "$here/.." log -1 --format=%h -- src include)"
  git -C "$here/.." diff --quiet HEAD -- src include || lib="$lib plus uncommitted changes"
fi
tmp=$results/$stamp.csv.tmp
echo "workload,n,item_size,impl,metric,value,unit" > "$tmp"
echo "$stamp, $mode mode" > "$data/run.txt"
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# On a shared machine, a raised priority keeps other jobs from preempting the timed segments
# (root only, and only when asked not to skip it; otherwise the run goes at normal priority).
prio=()
if [ "${BENCH_NICE:-1}" != 0 ] && [ "$(id -u)" = 0 ] && nice -n -10 true 2>/dev/null; then
  prio=(nice -n -10)
  echo "bench: running the timed processes at nice -10 (root; BENCH_NICE=0 to not)" >&2
fi
# Random churn is the headline plot: more N points (x4 steps from 1k to 1M) than the others.
# shellcheck disable=SC2054 # the commas are spbench's list syntax
churn_ns=(--n 1000,4000,16000,64000,256000,1000000)
steps=(lifo churn fifo reclaim resolve iterate frame memory steady dense snapshot)
# What an embedding library does (bench/bench_embed.c): worlds of 53 pools made and torn down,
# many live pools, thread-safe pools in turn.
steps+=(embed)
# Size classes (bench/bench_sizes.c): mixed sizes against the peers and a table of pools.
steps+=(sizes)
# The threads workloads (bench/bench_threads.c): 1, 2, 4 and 8 threads on one shared pool.
steps+=(threads_local threads_cross threads_mixed)
if ldconfig -p | grep 'libjemalloc\.so\.2 ' >/dev/null; then
  # jemalloc: plain malloc/free in a process that preloads it; in lifo, churn and fifo that
  # process runs the other implementations beside it, as the main one does (spbench prints
  # jemalloc's rows only), so its segments start after the same traffic as everyone's. Not in
  # the frame workload: the others run it in lockstep (each frame starts with the other
  # simulations in the cache), a process of its own would start every frame warm.
  # (grep without -q: with pipefail, -q's early exit would fail the pipeline on SIGPIPE)
  steps+=(lifo+jemalloc churn+jemalloc fifo+jemalloc memory+jemalloc sizes+jemalloc)
  steps+=(threads_local+jemalloc threads_cross+jemalloc threads_mixed+jemalloc)
else
  echo "skipping jemalloc: libjemalloc.so.2 not installed" >&2
fi
steps+=(instr) # instruction counts under callgrind, last
durations=$results/durations-$mode.txt
declare -A took=()
# Relative lengths of the steps (a quick run on a 2-core machine), for a first run's estimate.
declare -A weight=([lifo]=12 [churn]=6 [fifo]=2 [reclaim]=1 [resolve]=1 [iterate]=8 [frame]=8
                   [memory]=6 [steady]=1 [dense]=3 [snapshot]=1 [embed]=1 [sizes]=4 [threads_local]=2 [threads_cross]=4
                   [threads_mixed]=3 [instr]=10)
if [ -f "$durations" ]; then
  while read -r step secs; do took[$step]=$secs; done < "$durations"
fi
: > "$durations.new"
total=${#steps[@]}
i=0
for step in "${steps[@]}"; do
  i=$((i + 1))
  # Estimate: the previous run's times of the steps left, else this run's average so far.
  elapsed=$(( $(date +%s) - start ))
  left=0 known=1
  for s in "${steps[@]:$((i - 1))}"; do
    if [ -n "${took[$s]:-}" ]; then left=$((left + ${took[$s]})); else known=0; fi
  done
  if [ $known = 0 ]; then
    done_w=0 left_w=0 j=0
    for s in "${steps[@]}"; do
      j=$((j + 1)); wt=${weight[$s]:-1}
      if [ $j -lt $i ]; then done_w=$((done_w + wt)); else left_w=$((left_w + wt)); fi
    done
    if [ $i -gt 1 ]; then left=$(( elapsed * left_w / done_w )); else left=""; fi
  fi
  w=${step%+jemalloc}
  label=$w; [ "$step" != "$w" ] && label="$w (jemalloc, preloaded)"
  [ "$step" = instr ] && label="instructions per op (callgrind)"
  echo "== [$i/$total] $label${left:+, ~$left s left}" >&2
  t0=$(date +%s)
  n=(); [ "$w" = churn ] && n=("${churn_ns[@]}")
  if [ "$step" = instr ]; then
    run_instr "$tmp"
  elif [ "$step" = "$w" ]; then
    "${prio[@]}" "$build/spbench" --workload "$w" "${quick[@]}" "${n[@]}" --datadir "$data" >> "$tmp"
  else
    "${prio[@]}" env LD_PRELOAD=libjemalloc.so.2 "$build/spbench" --workload "$w" --impl jemalloc \
      "${quick[@]}" "${n[@]}" >> "$tmp"
  fi
  echo "$step $(( $(date +%s) - t0 ))" >> "$durations.new"
done
mv "$durations.new" "$durations"
mv "$tmp" "$results/$stamp.csv"
cp "$results/$stamp.csv" "$results/latest.csv"
echo "$stamp, $mode mode, $lib, $(( $(date +%s) - start )) s; load average (1, 5, 15 min) at start $load0, at end $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" > "$data/run.txt"
report
