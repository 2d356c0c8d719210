#!/usr/bin/env python3
"""Writes the committed seed corpus for fuzz_pool (tests/fuzz/corpus/).

Each seed is a valid program for the fuzzer's decoder: a pool count, three configuration bytes per
pool, then operations. The seeds walk every overflow policy in heap and fixed-buffer mode, with no
hooks, all hooks and a priority hook, some with re-entrant release hooks (partner links) and members in their slot's last life,
followed
by a deterministic pseudo-random operation mix, so
libFuzzer starts from inputs that already reach saturation, reclaim, trim and stale handles.
Run it again only when the decoder changes:  python3 tests/fuzz/make_seeds.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def config(policy, hooks, priority, fixed, size_idx, max_items, initial, chunk, reenter=0):
    b0 = policy | (hooks << 2) | (priority << 6) | (fixed << 7)
    b1 = size_idx | (chunk << 5) | (reenter << 7)
    b2 = max_items | (initial << 4)
    return bytes([b0, b1, b2])


def main():
    rng = random.Random(20261129)
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    n = 0
    for policy in range(3):
        for fixed in (0, 1):
            for hooks, priority in ((0, 0), (15, 0), (15, 1), (5, 1), (10, 0)):
                if fixed and policy == 2 and hooks == 10:
                    continue
                pools = rng.randint(1, 4)
                data = bytearray([pools - 1])
                reenter = 1 if hooks in (15, 5) and rng.randrange(2) else 0
                data += config(policy, hooks, priority, fixed, rng.randrange(8), rng.randint(1, 6),
                               rng.randrange(3), rng.randrange(4), reenter)
                for _ in range(pools - 1):
                    data += bytes(rng.randrange(256) for _ in range(3))
                # Acquire-heavy first (to saturate), a few partner links, then a free mix.
                for _ in range(rng.randint(6, 14)):
                    data += bytes([rng.randrange(8), 0, rng.randrange(4)])
                for _ in range(rng.randint(0, 3)):
                    data += bytes([18, 0, 2, rng.randrange(256), rng.randrange(256)])
                for _ in range(rng.randint(0, 2)):  # a member in its slot's last life
                    data += bytes([18, 0, 3, rng.randrange(256)])
                data += bytes(rng.randrange(256) for _ in range(rng.randint(40, 300)))
                n += 1
                with open(os.path.join(OUT, "seed-%02d-p%d-f%d-h%d" % (n, policy, fixed, hooks)), "wb") as f:
                    f.write(data)
    print("wrote", n, "seeds to", OUT)


if __name__ == "__main__":
    main()
