#!/bin/sh
# SPDX-License-Identifier: Zlib
# Regenerates every picture in docs/img from the demos' headless modes (SDL's software renderer
# on an offscreen surface: no display needed). `make docs-images` builds the demos and runs this.
#   tools/docs_images.sh EXAMPLES_DIR [OUT_DIR]   EXAMPLES_DIR holds the built demos
# The runs are deterministic (fixed time step, seeded random numbers), so the same command draws
# the same picture, except the measured times in the fountain's and the particles' overlays.
# Beside each NAME.png goes NAME.txt: the command and the counters the demo printed while it
# drew the picture. `make test` (tools/check_docs.py images) runs the command again and fails
# when the counters differ: the picture no longer shows what the demo does.
set -eu
bin=${1:?usage: tools/docs_images.sh EXAMPLES_DIR [OUT_DIR]}
out=${2:-docs/img}
mkdir -p "$out"
shot() { # name, then the demo and its flags
    name=$1
    demo=$2
    shift 2
    echo "docs-images: $out/$name.png  <-  $demo $* --headless"
    {
        echo "# tools/docs_images.sh: $demo $*"
        "$bin/$demo" "$@" --headless --screenshot "$out/$name.png" | grep -E '^[a-z][a-z0-9_]*=' |
            grep -v '^screenshot='
    } > "$out/$name.txt"
}
# 600 frames: the overlay's p99 covers the last 300 frames, all after the 2 s warm-up.
shot fountain fountain --frames 600
shot fountain_reclaim fountain --frames 600 --cap 1500 --policy reclaim
shot particles particles --frames 200
shot turret_sized turret --frames 600
shot turret_drop turret --frames 240 --rate 16 --slots 12
shot turret_reclaim turret --frames 300 --rate 16 --slots 12 --policy reclaim
shot arena arena --frames 420
echo "docs-images: done; look at them before committing"
