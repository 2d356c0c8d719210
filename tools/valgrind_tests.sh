#!/bin/sh
# SPDX-License-Identifier: Zlib
# Runs every cmocka test executable (test_*) in DIR under valgrind memcheck and fails on any
# memory error or any definite/indirect leak. `make test` runs it on the release build.
#   tools/valgrind_tests.sh DIR
# The property test is scaled down (SP_PROPERTY_OPS) so the whole run stays around a minute.
# No --track-origins: with it memcheck clears origin tags over every mapping byte by byte, and
# since 0.3 each pool reserves its largest size in address space (a gigabyte or more), so the
# tests that create thousands of pools took tens of minutes. Errors are still found; rerun one
# test with --track-origins=yes to see where an undefined value came from.
# --fair-sched=yes: valgrind runs one thread at a time, and its default lock lets a thread that
# never makes a system call (a churning acquire/release loop) take it again and again, so the
# thread that would stop or fork waits for seconds; the thread tests took over 15 minutes.
set -u
dir=${1:?usage: valgrind_tests.sh DIR}
jobs=${JOBS:-2}
SP_PROPERTY_OPS=${SP_PROPERTY_OPS:-300000}
export SP_PROPERTY_OPS
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

find "$dir" -maxdepth 1 -type f -name 'test_*' -perm -u+x | sort | xargs -P "$jobs" -I{} sh -c '
    name=$(basename "$1")
    if valgrind --tool=memcheck --fair-sched=yes --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
            "$1" >"$2/$name.log" 2>&1; then
        echo "valgrind: $name: 0 errors, 0 leaks"
    else
        echo "$name" >>"$2/failed"
        echo "valgrind: $name FAILED"
    fi' sh {} "$out"

if [ -f "$out/failed" ]; then
    for name in $(cat "$out/failed"); do
        echo "==== $name ===="
        tail -n 60 "$out/$name.log"
    done
    exit 1
fi
exit 0
