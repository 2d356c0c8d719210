#!/bin/sh
# SPDX-License-Identifier: Zlib
# The _at calls of a library built with SP_DEBUG=0 cost what the plain calls do: instructions
# of 100,000 pairs through each (at_cost.c), under callgrind, for a plain pool and a
# thread-safe one. Fails when the _at pairs take more than SLACK instructions a pair more: the
# caller's two more arguments a call (4 a pair), the jump to the plain function (2), and its
# landing pad under -fcf-protection (2).
#   tests/cost/at_cost.sh AT_COST_BINARY
set -eu
bin=${1:?usage: at_cost.sh AT_COST_BINARY}
slack=8
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ir() { # the instructions counted in the toggled function
    valgrind -q --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect="$2" "$bin" "$1" >/dev/null
    awk '/^summary:/ { print $2 }' "$out/cg"
}
status=0
for kind in plain ts; do
    plain=$(ir "$kind" pairs_plain)
    at=$(ir "$kind" pairs_at)
    # both loops ran twice: 200,000 pairs each
    verdict=$(awk -v p="$plain" -v a="$at" -v s="$slack" 'BEGIN {
        d = (a - p) / 200000; printf "%.2f", d; exit !(d <= s) }') || status=1
    echo "at_cost: $kind pool: plain pair $(awk -v p="$plain" 'BEGIN { printf "%.2f", p / 200000 }'), _at pair $(awk -v a="$at" 'BEGIN { printf "%.2f", a / 200000 }') instructions (+$verdict, at most +$slack)"
done
exit $status
