#!/usr/bin/env python3
"""Writes the committed seed corpus for fuzz_pool (tests/fuzz/corpus/).

Each seed is a valid program for the fuzzer's decoder: a pool count, three configuration bytes per
pool, then operations. The seeds walk every overflow policy in heap and fixed-buffer mode, with no
hooks, all hooks and a priority hook, some with re-entrant release hooks (partner links) and members in their slot's last life,
followed
by a deterministic pseudo-random operation mix, so
libFuzzer starts from inputs that already reach saturation, reclaim, trim and stale handles.
Those seeds leave the order bits zero (SP_ORDER_DEFAULT). The order seeds after them choose the
order explicitly (the 2-bit fields above the pool count in the first byte, and above the slot in
a recreate) and drive SP_ORDER_MEMORY pools through round-robin and priority reclaims, sp_each
with acquisitions inside, iteration and sp_release_all.
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


def head(pools, orders):
    """The first byte: pool count, then the 2-bit order fields of pools 0..2."""
    b = pools - 1
    for i, o in enumerate(orders[:3]):
        b |= o << (2 + 2 * i)
    return bytes([b])


def acquires(rng, count, kinds=(0, 1, 2, 3)):
    return b"".join(bytes([rng.choice(kinds), 0, rng.randrange(4)]) for _ in range(count))


def order_seeds(n):
    """Seeds for the pools' order: (name suffix, bytes)."""
    rng = random.Random(20260412)
    ACQ, MEM, BAD = 1, 2, 3
    each = lambda bits, stop, extra: bytes([14, 0, 2, bits, stop | (extra << 3)])
    walk = bytes([14, 0, 5, 0x5A])        # sp_first/sp_next, releasing some
    release_all = bytes([11, 0])
    out = []
    # RECLAIM, memory order, no hooks, no priority: round robin over small chunks.
    data = head(1, [MEM]) + config(1, 0, 0, 0, 3, 5, 1, 1)
    data += acquires(rng, 12, (0, 1, 3)) + bytes([8, 0, 0, 3, 8, 0, 0, 1]) + acquires(rng, 4)
    data += walk + each(0x00, 0, 3) + each(0x24, 0, 0b01111) + release_all + acquires(rng, 9)
    data += bytes(rng.randrange(256) for _ in range(160))
    out.append(("p1-f0-h0-o2", data))
    # RECLAIM, memory order, every hook and a priority hook, partners, fixed buffer.
    data = head(1, [MEM]) + config(1, 15, 1, 1, 2, 6, 1, 2, reenter=1)
    data += acquires(rng, 8) + bytes([18, 0, 0, 1, 0, 18, 0, 0, 4, 0, 18, 0, 2, 0, 3, 18, 0, 2, 5, 1])
    data += acquires(rng, 5) + each(0xB3, 0, 0b11011) + walk + acquires(rng, 3) + release_all
    data += bytes(rng.randrange(256) for _ in range(200))
    out.append(("p1-f1-h15-o2", data))
    # DROP by default (memory order): sp_acquire_force reclaims round robin, then RECLAIM later.
    data = head(1, [0]) + config(0, 15, 0, 0, 0, 4, 2, 2, reenter=1)
    data += acquires(rng, 6, (0,)) + acquires(rng, 5, (2,)) + bytes([18, 0, 2, 1, 2, 18, 0, 3, 0])
    data += each(0x6C, 0, 0b11010) + bytes([14, 0, 1, 1]) + acquires(rng, 6, (0, 1))
    data += release_all + acquires(rng, 6) + walk + each(0xFF, 0, 0b00111)
    data += bytes(rng.randrange(256) for _ in range(160))
    out.append(("p0-f0-h15-o0", data))
    # Three pools: ACQUISITION asked for under DROP, MEMORY under GROW, an unknown order (refused,
    # then DEFAULT: acquisition under RECLAIM); a recreate to memory order with priorities.
    data = head(3, [ACQ, MEM, BAD]) + config(0, 5, 1, 0, 4, 3, 1, 1) + config(2, 10, 0, 0, 1, 3, 0, 1)
    data += config(1, 15, 1, 1, 5, 4, 2, 3)
    for _ in range(30):
        data += bytes([rng.randrange(8), rng.randrange(3), rng.randrange(4)])
    data += bytes([17, 0, 1 | (MEM << 2)]) + config(1, 13, 1, 0, 6, 4, 0, 1, reenter=1)
    for _ in range(10):
        data += bytes([rng.randrange(8), 1, rng.randrange(4)])
    data += bytes([14, 1, 3, 0x99, 0b10110 << 3, 11, 1, 14, 0, 2, 0x0F, 0b11111 << 3])
    data += bytes(rng.randrange(256) for _ in range(240))
    out.append(("p0-f0-h5-o1", data))
    return [("seed-%02d-%s" % (n + 1 + i, suffix), data) for i, (suffix, data) in enumerate(out)]


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
    for name, data in order_seeds(n):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        n += 1
    print("wrote", n, "seeds to", OUT)


if __name__ == "__main__":
    main()
