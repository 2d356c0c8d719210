#!/bin/sh
# SPDX-License-Identifier: Zlib
# Static analysis of the library: clang-tidy (configuration: .clang-tidy) and cppcheck
# (suppressions: tools/cppcheck-suppressions.txt, each justified there) over src/ and include/.
# Both must report nothing; any finding makes this script fail. `make test` runs it.
#   tools/static_analysis.sh BUILD_DIR    BUILD_DIR holds compile_commands.json (configure with
#                                         -DCMAKE_EXPORT_COMPILE_COMMANDS=ON); the sanitizer
#                                         Debug build is used, so the debug-only code is analysed.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build/asan}
jobs=${JOBS:-2}
if [ ! -f "$build/compile_commands.json" ]; then
    echo "static_analysis: no $build/compile_commands.json (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)"
    exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0

# clang-tidy, one process per source file, $jobs at a time. Headers are checked through the
# sources that include them (HeaderFilterRegex in .clang-tidy).
ls src/*.c | xargs -P "$jobs" -I{} sh -c \
    'clang-tidy -p "$1" --quiet "$2" >"$3/$(basename "$2").tidy" 2>/dev/null || echo "$2" >>"$3/failed"' \
    sh "$build" {} "$out"
if [ -f "$out/failed" ]; then
    cat "$out"/*.tidy
    echo "static_analysis: clang-tidy reported findings in: $(tr '\n' ' ' <"$out/failed")"
    status=1
else
    echo "static_analysis: clang-tidy clean ($(ls src/*.c | wc -l) sources)"
fi

# cppcheck over every preprocessor configuration it finds (SP_DEBUG levels, NDEBUG...).
if ! cppcheck --quiet --std=c11 --enable=warning,style,performance,portability \
        --inline-suppr --suppressions-list=tools/cppcheck-suppressions.txt \
        --error-exitcode=1 -j "$jobs" -I include -I src \
        --template='{file}:{line}: {severity} [{id}] {message}' src include; then
    echo "static_analysis: cppcheck reported findings"
    status=1
else
    echo "static_analysis: cppcheck clean"
fi
exit $status
