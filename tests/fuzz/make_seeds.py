#!/usr/bin/env python3
# SPDX-License-Identifier: Zlib
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
with acquisitions inside, iteration and sp_release_all. The last seeds call sp_acquire_handle
(bit 2 of an sp_acquire_with's byte; bits 3-4 its form) in every outcome (a free member, a build,
a reclaim, a retirement, a drop) and acquire inside sp_each in SP_ORDER_ACQUISITION pools.
The newest seeds program the hooks (children spawned in other pools and sent back, forbidden
calls from every hook), the registry's lookups and refusals, and sp_dense in every policy; the
last one is a long mixed program, so that libFuzzer starts near -max_len.
Run it again only when the decoder changes:  python3 tests/fuzz/make_seeds.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def config(policy, hooks, priority, fixed, size_idx, max_items, initial, chunk, reenter=0):
    """Three configuration bytes; the decoder reads the policy from bits 0-1 (3: RECLAIM)."""
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


def handle_each_seeds(n):
    """Seeds for sp_acquire_handle and for acquisitions inside sp_each in acquisition order."""
    rng = random.Random(20261130)
    DROP, RECLAIM, GROW = 0, 1, 2
    ACQ, MEM = 1, 2
    each = lambda pool, bits, stop, extra: bytes([14, pool, 2, bits, stop | (extra << 3)])
    # sp_acquire_handle on `pool`: form 0 macro, out; 1 macro, out NULL; 2 function, out;
    # 3 function, out NULL.
    handle = lambda pool, prio, form: bytes([1, pool, 4 | prio | (form << 3)])
    age = lambda pool, b: bytes([18, pool, 3, b])
    prio = lambda pool, member, value: bytes([18, pool, 0, member, value])
    out = []
    # RECLAIM, acquisition order, every hook, partners. The walks: on the last member fn acquires
    # and then releases it (the walk goes on at what it acquired); a reclaim of the member being
    # visited (visited again at the end); then random walks with acquisitions. Then
    # sp_acquire_handle reclaims members in their last life, which retire: it builds and maps the
    # pointer back.
    data = head(1, [ACQ]) + config(RECLAIM, 15, 0, 0, 3, 4, 0, 1, reenter=1)
    data += handle(0, 0, 0) + handle(0, 1, 1)
    data += each(0, 0x2D, 0, 0b00101)
    data += handle(0, 2, 2) + handle(0, 3, 3) + handle(0, 1, 0)
    data += each(0, 0x90, 0, 0b00101) + bytes([18, 0, 2, 1, 2, 18, 0, 2, 0, 3])
    data += each(0, 0x4B, 0, 0b10110) + each(0, 0xC9, 0, 0b11011) + acquires(rng, 3, (0, 1, 2))
    data += age(0, 0) + age(0, 1) + age(0, 2) + age(0, 3)
    data += handle(0, 0, 0) + handle(0, 2, 2) + handle(0, 1, 1) + handle(0, 3, 3)
    data += each(0, 0x5D, 0, 0b01111) + each(0, 0xFF, 0, 0b00111) + bytes([11, 0])
    for _ in range(12):
        data += bytes([rng.choice((1, 5)), 0, rng.randrange(32)])
    data += bytes(rng.randrange(256) for _ in range(200))
    out.append(("p1-f0-h15-o1", data))
    # DROP, acquisition order, a priority hook, fixed buffer (pool 0) beside GROW in memory order
    # (pool 1). sp_acquire_handle drops (the null handle) once pool 0 is saturated, builds past
    # max in pool 1; inside sp_each, sp_acquire_force reclaims the lowest priority, the member
    # that was next, while the visited one stays (the walk skips it and visits its new life).
    data = head(2, [ACQ, MEM]) + config(DROP, 5, 1, 1, 2, 3, 1, 0)
    data += config(GROW, 10, 0, 0, 4, 2, 0, 1)
    data += handle(0, 3, 0) + handle(0, 0, 2) + handle(0, 3, 1) + handle(0, 2, 0) + handle(0, 1, 3)
    data += prio(0, 0, 3) + prio(0, 1, 0) + prio(0, 2, 3)
    data += each(0, 0x90, 0, 0b01001)
    data += handle(1, 0, 0) + handle(1, 1, 2) + handle(1, 2, 0) + handle(1, 3, 1)
    data += each(1, 0x3A, 0, 0b10111) + each(0, 0xA5, 0, 0b11010)
    for _ in range(16):
        data += bytes([rng.choice((1, 2, 5)), rng.randrange(2), rng.randrange(32)])
    data += each(0, 0x4E, 0, 0b11001) + each(1, 0x73, 0, 0b00110)
    data += bytes(rng.randrange(256) for _ in range(220))
    out.append(("p0-f1-h5-o1", data))
    return [("seed-%02d-%s" % (n + 1 + i, suffix), data) for i, (suffix, data) in enumerate(out)]


# Operation bytes of the later decoder (op % 24): 20 dense, 21 hook program, 22 registry
# lookups, 23 a release whose on_release tries a forbidden call.
MISUSE_CLEAR, MISUSE_TRIM, MISUSE_DESTROY, MISUSE_REMOVE, MISUSE_RELEASE_SELF = 1, 2, 3, 4, 5
HK_CREATE, HK_ACQUIRE, HK_RELEASE, HK_DISPOSE = 1, 2, 4, 8


def program(pool, child, spawn, via_registry, misuse, misuse_hooks, callback_misuse=0):
    """Op 21: what pool's hooks do (a child in pool `child`, a later slot; a forbidden call)."""
    a = child | (spawn << 2) | (via_registry << 3) | (callback_misuse << 4)
    return bytes([21, pool, a, misuse | (misuse_hooks << 3)])


def dense_config(policy, fixed, on_move, invalid_first, size_idx, align_idx, chunk, max_items, initial):
    """The first dense op creates the dense pool from these three bytes."""
    b0 = policy | (fixed << 2) | (on_move << 3) | (invalid_first << 4)
    b1 = size_idx | (align_idx << 3) | (chunk << 5)
    return bytes([20, 0, b0, b1, max_items | (initial << 4)])


def dense(sub, b, *extra):
    return bytes([20, 0, sub, b]) + bytes(extra)


def hook_registry_dense_seeds(n):
    """Seeds for hooks that spawn and release across pools and try forbidden calls, for the
    registry's lookups and refusals, and for sp_dense."""
    rng = random.Random(20261201)
    DROP, RECLAIM, GROW = 0, 1, 2
    ACQ, MEM = 1, 2
    out = []
    # Three pools: ships (0) spawn exhaust (1) through sp_spawn, exhaust spawns sparks (2) with
    # sp_acquire_with; releases send the children back through the registry and directly. The
    # ships' hooks try sp_clear, the exhaust's sp_trim; then releases, reclaims and release_all.
    data = head(3, [ACQ, MEM, 0]) + config(RECLAIM, 15, 0, 0, 3, 4, 1, 1, reenter=1)
    data += config(DROP, 15, 1, 0, 4, 6, 0, 1) + config(GROW, 15, 0, 0, 1, 3, 1, 2)
    data += program(0, 1, 1, 1, MISUSE_CLEAR, HK_ACQUIRE | HK_RELEASE)
    data += program(1, 2, 0, 0, MISUSE_TRIM, HK_CREATE | HK_DISPOSE)
    data += acquires(rng, 8, (0, 1, 2)) + bytes([11, 0]) + acquires(rng, 6, (0, 1))
    data += bytes([8, 0, 0, 3, 8, 0, 1, 1, 14, 0, 2, 0x6D, 0b10101 << 3])
    data += bytes([22, 0, 0, 0, 22, 0, 1, 0, 22, 0, 2, 5, 22, 0, 3, 0, 22, 0, 4, 1, 22, 0, 4, 0])
    data += program(0, 2, 0, 0, MISUSE_DESTROY, HK_RELEASE | HK_DISPOSE) + acquires(rng, 6)
    data += bytes([14, 0, 0]) + acquires(rng, 4) + bytes([17, 1, 1 | (MEM << 2)])
    data += config(RECLAIM, 15, 0, 0, 2, 3, 0, 1) + acquires(rng, 8)
    for _ in range(60):
        data += bytes([rng.choice((0, 1, 2, 3, 8, 11, 21, 22, 23)), rng.randrange(3), rng.randrange(256),
                       rng.randrange(256)])
    data += bytes(rng.randrange(256) for _ in range(400))
    out.append(("hooks-children-misuse", data))
    # Every forbidden call from every hook, one pool at a time, and from on_release through op 23.
    data = head(2, [MEM, ACQ]) + config(RECLAIM, 15, 1, 0, 3, 5, 2, 1) + config(DROP, 15, 0, 1, 2, 4, 1, 0)
    for misuse in (MISUSE_CLEAR, MISUSE_TRIM, MISUSE_DESTROY, MISUSE_REMOVE, MISUSE_RELEASE_SELF):
        data += program(0, 1, misuse & 1, misuse >> 1 & 1, misuse, 15) + acquires(rng, 7)
        data += bytes([8, 0, 0, 2, 12, 0, 3, 13, 0, 0, 23, 0, misuse, 1, 23, 1, misuse, 0])
    data += program(0, 0, 0, 0, 0, 0) + bytes([14, 0, 0, 11, 0])
    for _ in range(80):
        data += bytes([rng.randrange(24), rng.randrange(2), rng.randrange(256), rng.randrange(256)])
    data += bytes(rng.randrange(256) for _ in range(300))
    out.append(("hooks-every-misuse", data))
    # sp_dense in each policy: adds until full, removes by index, pointer and handle (moves),
    # refusals, the update loop, reserve, clear, lookups; beside a pool doing its own things.
    for policy, fixed, max_items in ((RECLAIM, 0, 6), (DROP, 1, 5), (GROW, 0, 3), (RECLAIM, 1, 0)):
        data = head(1, [0]) + config(DROP, 15, 0, 0, 3, 4, 1, 1)
        data += dense_config(policy, fixed, 1, 1, rng.randrange(8), rng.randrange(4), rng.randrange(4),
                             max_items, rng.randrange(4))
        for _ in range(12):
            data += dense(rng.randrange(4), rng.randrange(256))
        data += dense(4, 2) + dense(4, 1) + dense(5, 0) + dense(5, 1) + dense(5, 2) + dense(5, 3) + dense(5, 4)
        data += dense(6, 0) + dense(6, 1) + dense(6, 2, 7) + dense(6, 3) + dense(7, 0x5A) + dense(8, 40)
        data += dense(10, 0) + dense(0, 3) + dense(9, 1, 0, 0) + dense(11, 0x30, 3)
        for _ in range(10):
            data += dense(rng.randrange(4), rng.randrange(256))
        data += dense(9, 0) + acquires(rng, 4)
        for _ in range(60):
            data += dense(rng.randrange(12), rng.randrange(256), rng.randrange(256))
        data += bytes(rng.randrange(256) for _ in range(200))
        out.append(("dense-p%d-f%d" % (policy, fixed), data))
    # A long mixed program (about 3 KB, ~900 operations): what -max_len lets libFuzzer grow to.
    data = head(4, [ACQ, MEM, 0]) + config(RECLAIM, 15, 1, 0, 3, 8, 2, 1, reenter=1)
    data += config(DROP, 15, 0, 0, 4, 6, 1, 2) + config(GROW, 10, 0, 0, 1, 5, 0, 1) + config(RECLAIM, 15, 0, 1, 2, 6, 1, 0)
    data += program(0, 1, 1, 1, 0, 0) + program(1, 3, 0, 1, 0, 0) + program(2, 3, 1, 0, MISUSE_TRIM, HK_DISPOSE)
    for _ in range(700):
        op = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 18, 19, 20, 22, 23))
        data += bytes([op, rng.randrange(4), rng.randrange(256), rng.randrange(256)])
    out.append(("long-mixed", data))
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
    later = order_seeds(n)
    later += handle_each_seeds(n + len(later))
    later += hook_registry_dense_seeds(n + len(later))
    for name, data in later:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        n += 1
    print("wrote", n, "seeds to", OUT)


if __name__ == "__main__":
    main()
