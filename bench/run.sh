#!/usr/bin/env bash
# SPDX-License-Identifier: Zlib
# make bench / make bench-instr: runs the suite and writes bench/results/.
#   bench/run.sh BUILD_DIR [quick] [instr-only]
# Every workload runs in a process of its own (spbench --workload W); jemalloc, which cannot be
# dlopened, gets its own processes with LD_PRELOAD. The CSV of the run goes to
# bench/results/<UTC timestamp>.csv and bench/results/latest.csv; spreport turns latest.csv
# into latest.md and the plot inputs, gnuplot draws the PNG and SVG plots.
set -euo pipefail
build=$1
mode=${2:-full}
only=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
results=$here/results
data=$build/data
mkdir -p "$results" "$data"
quick=()
k=200000
if [ "$mode" = quick ]; then quick=(--quick); k=50000; fi

run_instr() { # appends the callgrind counts to $1
  if [ -x "$build/spinstr" ] && command -v valgrind >/dev/null; then
    echo "== instructions per op (callgrind)" >&2
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
# (root only; otherwise the run goes ahead at normal priority).
prio=()
if [ "$(id -u)" = 0 ] && nice -n -10 true 2>/dev/null; then prio=(nice -n -10); fi
for w in lifo churn fifo reclaim resolve iterate frame memory steady dense; do
  echo "== $w" >&2
  "${prio[@]}" "$build/spbench" --workload "$w" "${quick[@]}" --datadir "$data" >> "$tmp"
done
# jemalloc: plain malloc/free in a process that preloads it. Not in the frame workload: the
# others run it in lockstep (each frame starts with the other simulations in the cache),
# a process of its own would start every frame warm and not compare.
# (grep without -q: with pipefail, -q's early exit would fail the pipeline on SIGPIPE)
if ldconfig -p | grep 'libjemalloc\.so\.2 ' >/dev/null; then
  for w in lifo churn fifo memory; do
    echo "== $w (jemalloc, preloaded)" >&2
    "${prio[@]}" env LD_PRELOAD=libjemalloc.so.2 "$build/spbench" --workload "$w" --impl jemalloc "${quick[@]}" >> "$tmp"
  done
else
  echo "skipping jemalloc: libjemalloc.so.2 not installed" >&2
fi
run_instr "$tmp"
mv "$tmp" "$results/$stamp.csv"
cp "$results/$stamp.csv" "$results/latest.csv"
echo "$stamp, $mode mode, $lib, $(( $(date +%s) - start )) s; load average (1, 5, 15 min) at start $load0, at end $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" > "$data/run.txt"
report
