/* SPDX-License-Identifier: Zlib */
/*
    bullets.cpp -- the C++ wrapper (include/spawnpool.hpp) in a small shooter, in the terminal.

    Two turrets fire at a wave of drones. Bullets are a plain struct in an sp::pool<bullet>
    (built with braces from acquire's arguments, no hooks). Drones are real C++ objects with a
    std::string and a std::vector, in an sp::pool<drone>: acquire() runs the constructor, every
    way a drone's life ends runs its destructor exactly once, and the pool's destructor takes
    care of the drones still flying. Turrets lock on with sp::handle<drone>, which stops
    resolving when the drone dies, so a turret never aims at a recycled drone.

    It runs a fixed number of frames, prints what happened and the counters as key=value lines
    (the ctest entry checks them): once warm, neither pool calls the allocator.
*/
#include <spawnpool.hpp>

#include "demo_args.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// Initialization: types and counters
//----------------------------------------------------------------------------------------------
struct vec2 {
    float x, y;
};

struct bullet { // trivially destructible: the pool installs no hooks for it
    vec2 pos, vel;
    float life;
};

long drones_alive = 0, drones_destroyed = 0; // counted by drone's constructor and destructor

struct drone { // owns heap memory: the pool constructs and destroys it
    std::string name;
    std::vector<vec2> waypoints;
    vec2 pos;
    int hp;

    drone(int serial, float x) : name("drone-" + std::to_string(serial)), pos{x, 0.0f}, hp(3) {
        for (int i = 0; i < 4; i++) waypoints.push_back(vec2{x + (i % 2 ? 60.0f : -60.0f), 40.0f * float(i + 1)});
        drones_alive++;
    }
    ~drone() {
        drones_alive--;
        drones_destroyed++;
    }
};

// The pools' memory goes through here, so the program can show it stops being called.
struct alloc_counter {
    long calls;
};
void *counted_alloc(std::size_t size, std::size_t align, void *user) {
    static_cast<alloc_counter *>(user)->calls++;
    if (align < sizeof(void *)) align = sizeof(void *);
    return std::aligned_alloc(align, (size + align - 1) / align * align); // C11 / C++17
}
void counted_free(void *ptr, std::size_t, void *user) {
    static_cast<alloc_counter *>(user)->calls++;
    std::free(ptr);
}

struct turret {
    vec2 pos;
    sp::handle<drone> target; // expires with the drone's life
    float cooldown;
};

std::uint32_t rng_state = 1;
float rng01() { // xorshift32: the same run every time
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return float(rng_state & 0xFFFFFF) / float(0x1000000);
}

} // namespace

int main(int argc, char **argv) {
    long frames = 600, seed = 1;
    const demo_opt opts[] = {
        {"frames", DEMO_OPT_LONG, &frames, 1, 1e6, nullptr, "N", "frames to run, 60 per second (default 600)"},
        {"seed", DEMO_OPT_LONG, &seed, 1, 4294967295.0, nullptr, "N", "random seed (default 1)"},
        {nullptr, DEMO_OPT_FLAG, nullptr, 0, 0, nullptr, nullptr, nullptr},
    };
    int rc = demo_args_parse("bullets",
                             "The C++ wrapper in a small shooter: sp::pool<bullet>, sp::pool<drone> "
                             "(std::string\nmembers), sp::handle<drone> target locks. Prints its "
                             "counters; needs no display.",
                             nullptr, opts, argc, argv);
    if (rc != DEMO_ARGS_RUN) return rc;
    rng_state = std::uint32_t(seed);

    alloc_counter allocs = {0};
    long allocs_after_warmup = -1, fired = 0, hits = 0, spawned = 0, retargets = 0;
    sp_allocator counted = sp_allocator();
    counted.alloc = counted_alloc;
    counted.free = counted_free;
    counted.user = &allocs;
    {
        sp::pool<bullet>::options bopt;
        bopt.name = "bullets";
        bopt.initial = 64; // Little's law: 2 turrets x 8 shots/s x 1.5 s = 24, with headroom
        bopt.max = 64;
        bopt.overflow = SP_OVERFLOW_RECLAIM;
        bopt.allocator = counted;
        sp::pool<bullet> bullets(bopt);

        sp::pool<drone>::options dopt;
        dopt.name = "drones";
        dopt.initial = 16;
        dopt.max = 16;
        dopt.allocator = counted;
        sp::pool<drone> drones(dopt);

        turret turrets[2] = {{vec2{100.0f, 400.0f}, sp::handle<drone>(), 0.0f},
                             {vec2{540.0f, 400.0f}, sp::handle<drone>(), 0.3f}};
        const float dt = 1.0f / 60.0f;

        // Main loop
        //------------------------------------------------------------------------------------------
        for (long frame = 0; frame < frames; frame++) {
            if (frame == 60) allocs_after_warmup = allocs.calls; // one second in: warm
            // Update: spawn a drone now and then (dropped when 16 fly: the pool is the cap)
            if (rng01() < 0.08f && drones.acquire(int(spawned), 80.0f + 480.0f * rng01())) spawned++;
            drones.each([&](drone &d) {
                d.pos.y += 30.0f * dt;
                d.pos.x += 20.0f * std::sin(d.pos.y / 25.0f) * dt;
                if (d.pos.y > 420.0f) drones.release(&d); // escaped: its life ends here
            });
            for (turret &t : turrets) {
                drone *target = drones.resolve(t.target);
                if (!target) { // never locked, or the drone died: lock on the first one flying
                    drones.each([&](drone &d) {
                        t.target = drones.handle_of(&d);
                        return false;
                    });
                    target = drones.resolve(t.target);
                    if (target) retargets++;
                }
                t.cooldown -= dt;
                if (target && t.cooldown <= 0.0f) {
                    float dx = target->pos.x - t.pos.x, dy = target->pos.y - t.pos.y;
                    float len = std::sqrt(dx * dx + dy * dy) + 1e-3f;
                    bullets.acquire(t.pos, vec2{dx / len * 400.0f, dy / len * 400.0f}, 1.5f);
                    t.cooldown = 0.125f;
                    fired++;
                }
            }
            bullets.each([&](bullet &b) {
                b.pos.x += b.vel.x * dt;
                b.pos.y += b.vel.y * dt;
                b.life -= dt;
                bool spent = b.life <= 0.0f;
                drones.each([&](drone &d) {
                    float dx = d.pos.x - b.pos.x, dy = d.pos.y - b.pos.y;
                    if (spent || dx * dx + dy * dy > 12.0f * 12.0f) return true;
                    spent = true;
                    hits++;
                    if (--d.hp == 0) drones.release(&d); // ~drone() runs now
                    return false;
                });
                if (spent) bullets.release(&b);
            });
        }

        // Draw: what happened
        //------------------------------------------------------------------------------------------
        sp_stats bs = bullets.stats(), ds = drones.stats();
        std::printf("%ld frames: %ld shots, %ld hits, %ld drones spawned, %zu flying at the end\n",
                    frames, fired, hits, spawned, ds.leased);
        std::printf("bullets: %zu members built, %llu reclaimed; drones: %zu built, %llu dropped\n",
                    bs.size, (unsigned long long)bs.reclaimed, ds.size,
                    (unsigned long long)ds.dropped);
        std::printf("frames=%ld\nshots=%ld\nhits=%ld\ndrones_spawned=%ld\nretargets=%ld\n", frames,
                    fired, hits, spawned, retargets);
        std::printf("drones_destroyed_in_game=%ld\n", drones_destroyed);
        std::printf("allocator_calls_after_warmup=%ld\n",
                    allocs_after_warmup < 0 ? 0 : allocs.calls - allocs_after_warmup);
        // De-Initialization: the pools' destructors destroy the drones still flying
    }
    std::printf("drone_objects_alive_after_pools=%ld\n", drones_alive);
    std::printf("drones_destroyed_total=%ld\n", drones_destroyed);
    return drones_alive == 0 && drones_destroyed == spawned ? 0 : 1;
}
