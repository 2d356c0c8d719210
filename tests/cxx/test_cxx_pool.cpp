/* SPDX-License-Identifier: Zlib */
// The C++ wrapper (include/spawnpool.hpp), compiled as C++11 and as C++17 (tests/CMakeLists.txt).
// The core promise under test: every object acquire() constructs is destroyed exactly once,
// whichever way its life ends (release, release_all, a reclaim, clear, the pool's destruction),
// and memory that holds no object is never destroyed. `tracked` counts constructions and
// destructions and carries a heap-allocated std::string, so a missed or doubled destructor is
// also a leak or a double free under ASan and valgrind.
#include <spawnpool.hpp>

#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" {
#include <cmocka.h>
}

namespace {

struct tracked {
    static int live, built, destroyed, bad_destroys;
    static const std::uint32_t magic = 0x5EA15EA1u;
    std::uint32_t check;
    std::string name; // longer than any small-string buffer: it owns heap memory
    int value;

    tracked(const char *n, int v) : check(magic), name(n), value(v) {
        name += " -- a tail long enough to live on the heap, not in the small-string buffer";
        ++live;
        ++built;
    }
    explicit tracked(int v) : tracked("default", v) {}
    ~tracked() {
        if (check != magic) ++bad_destroys; // destroyed twice, or never constructed
        check = 0;
        --live;
        ++destroyed;
    }
    tracked(const tracked &) = delete;
    tracked &operator=(const tracked &) = delete;

    static void reset() { live = built = destroyed = bad_destroys = 0; }
};
int tracked::live, tracked::built, tracked::destroyed, tracked::bad_destroys;

// Every object built is destroyed exactly once; nothing else is destroyed.
void assert_all_destroyed_once() {
    assert_int_equal(tracked::live, 0);
    assert_int_equal(tracked::destroyed, tracked::built);
    assert_int_equal(tracked::bad_destroys, 0);
}

struct bullet { // an aggregate: acquire(args...) braces it
    float x, y, vx, vy;
    int damage;
};

struct log_capture {
    int lines;
    std::string last;
};
void capture(sp_log_level, const char *, const char *message, void *user) {
    log_capture *c = static_cast<log_capture *>(user);
    c->lines++;
    c->last = message;
}

sp::pool<tracked>::options tracked_options(const char *name, std::size_t max, sp_overflow overflow,
                                           log_capture *log = nullptr) {
    sp::pool<tracked>::options opt;
    opt.name = name;
    opt.max = max;
    opt.overflow = overflow;
    opt.chunk_items = 4; // several chunks
    if (log) {
        opt.logger.log = capture;
        opt.logger.user = log;
    }
    return opt;
}

void acquire_constructs_with_the_callers_arguments(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool("args");
        tracked *a = pool.acquire("first", 7);
        tracked *b = pool.acquire(8);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(a->value, 7);
        assert_int_equal(b->value, 8);
        assert_true(a->name.compare(0, 5, "first") == 0);
        assert_true(b->name.compare(0, 7, "default") == 0);
        assert_int_equal(tracked::live, 2);
        assert_int_equal(pool.leased(), 2);
    }
    assert_all_destroyed_once();
}

void aggregates_are_braced_and_plain_acquire_zeroes(void **) {
    sp::pool<bullet> pool("bullets");
    bullet *b = pool.acquire(1.0f, 2.0f, 3.0f, 4.0f, 10);
    assert_non_null(b);
    assert_true(b->x == 1.0f && b->vy == 4.0f);
    assert_int_equal(b->damage, 10);
    b->damage = 99;
    assert_int_equal(pool.release(b), SP_OK);
    bullet *again = pool.acquire(); // the same member, value-initialised: a fresh life
    assert_ptr_equal(again, b);
    assert_int_equal(again->damage, 0);
    assert_true(again->x == 0.0f);
}

void release_destroys_the_object_once(void **) {
    tracked::reset();
    log_capture log = {0, std::string()};
    {
        sp::pool<tracked> pool(tracked_options("release", 0, SP_OVERFLOW_DROP, &log));
        tracked *a = pool.acquire("a", 1);
        assert_int_equal(pool.release(a), SP_OK);
        assert_int_equal(tracked::live, 0);
        assert_int_equal(tracked::destroyed, 1);
        // a double release changes nothing: no second destructor, one logged line
        assert_int_equal(pool.release(a), SP_ERR_NOT_LEASED);
        assert_int_equal(tracked::destroyed, 1);
        assert_int_equal(log.lines, 1);
        // a pointer that is not a member: refused, nothing destroyed
        tracked outside("outside", 0);
        assert_int_equal(pool.release(&outside), SP_ERR_FOREIGN);
        assert_int_equal(tracked::destroyed, 1);
        assert_int_equal(pool.release(nullptr), SP_OK);
    }
    assert_all_destroyed_once();
}

void every_way_a_life_ends_destroys_once(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool(tracked_options("ends", 0, SP_OVERFLOW_DROP));
        std::vector<tracked *> live;
        for (int i = 0; i < 10; i++) live.push_back(pool.acquire("x", i));
        assert_int_equal(tracked::live, 10);
        // release_all
        assert_int_equal(pool.release_all(), 10);
        assert_int_equal(tracked::live, 0);
        assert_int_equal(tracked::destroyed, 10);
        // clear, with leased and free members (free ones hold no object)
        for (int i = 0; i < 6; i++) pool.acquire("y", i);
        pool.release(pool.acquire("z", 0));
        assert_int_equal(tracked::live, 6);
        assert_true(pool.clear() >= 6);
        assert_int_equal(tracked::live, 0);
        assert_int_equal(tracked::destroyed, 17);
        // trim and prewarm build and dispose memory only
        assert_int_equal(pool.prewarm(8), 8);
        assert_int_equal(pool.trim(2), 6);
        assert_int_equal(tracked::built, 17);
        assert_int_equal(tracked::destroyed, 17);
        // the pool's destruction, with objects alive and free members beside them
        for (int i = 0; i < 5; i++) pool.acquire("w", i);
        pool.release(pool.acquire("v", 0));
    }
    assert_all_destroyed_once();
    assert_int_equal(tracked::built, 23);
}

void a_reclaim_destroys_the_victim_before_building_anew(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool(tracked_options("reclaim", 3, SP_OVERFLOW_RECLAIM));
        tracked *oldest = pool.acquire("oldest", 1);
        sp::handle<tracked> h = pool.handle_of(oldest);
        pool.acquire("b", 2);
        pool.acquire("c", 3);
        tracked *reused = pool.acquire("newest", 4); // saturated: the oldest is reclaimed
        assert_ptr_equal(reused, oldest);
        assert_int_equal(reused->value, 4);
        assert_int_equal(tracked::live, 3);
        assert_int_equal(tracked::destroyed, 1);
        assert_null(pool.resolve(h));
        assert_int_equal(pool.stats().reclaimed, 1);
    }
    assert_all_destroyed_once();
}

void a_saturated_drop_pool_returns_null_and_builds_nothing(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool(tracked_options("drop", 2, SP_OVERFLOW_DROP));
        assert_non_null(pool.acquire("a", 1));
        assert_non_null(pool.acquire("b", 2));
        assert_null(pool.acquire("c", 3));
        assert_int_equal(tracked::built, 2);
        assert_int_equal(pool.stats().dropped, 1);
        // acquire_force reclaims instead
        tracked *forced = pool.acquire_force("d", 4);
        assert_non_null(forced);
        assert_int_equal(forced->value, 4);
        assert_int_equal(tracked::live, 2);
    }
    assert_all_destroyed_once();
}

void handles_resolve_for_one_life(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool("handles");
        sp::handle<tracked> h;
        assert_true(h.is_null());
        tracked *a = pool.acquire_handle(&h, "a", 1);
        assert_true(static_cast<bool>(h));
        assert_true(h == pool.handle_of(a));
        assert_ptr_equal(pool.resolve(h), a);
        pool.release(a);
        assert_null(pool.resolve(h));
        tracked *b = pool.acquire("b", 2); // same member, new life
        assert_ptr_equal(b, a);
        assert_null(pool.resolve(h));
        assert_true(pool.handle_of(b) != h);
        // a handle of another pool of the same type resolves to nothing there
        sp::pool<tracked> other("other");
        sp::handle<tracked> foreign = other.handle_of(other.acquire("f", 3));
        assert_null(pool.resolve(foreign));
    }
    assert_all_destroyed_once();
}

void each_visits_live_objects_and_may_release_them(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool(tracked_options("each", 0, SP_OVERFLOW_DROP));
        for (int i = 0; i < 8; i++) pool.acquire("e", i);
        int sum = 0;
        assert_int_equal(pool.each([&](tracked &t) { sum += t.value; }), 8);
        assert_int_equal(sum, 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7);
        // a bool-returning visitor stops on false
        int seen = 0;
        assert_int_equal(pool.each([&](tracked &) { return ++seen < 3; }), 3);
        // releasing the visited object from inside the walk
        pool.each([&](tracked &t) {
            if (t.value % 2) pool.release(&t);
        });
        assert_int_equal(tracked::live, 4);
        pool.each([&](tracked &t) { assert_int_equal(t.value % 2, 0); });
    }
    assert_all_destroyed_once();
}

void an_exception_from_each_stops_the_walk_and_leaves_the_pool_usable(void **) {
    tracked::reset();
    {
        sp::pool<tracked> pool("each_throws");
        for (int i = 0; i < 4; i++) pool.acquire("t", i);
        int visited = 0;
        bool caught = false;
        try {
            pool.each([&](tracked &t) {
                visited++;
                if (t.value == 1) throw std::runtime_error("stop");
            });
        } catch (const std::runtime_error &) {
            caught = true;
        }
        assert_true(caught);
        assert_int_equal(visited, 2);
        // not stuck inside an iteration: clear (refused inside sp_each) works
        assert_true(pool.clear() >= 4);
        assert_int_equal(tracked::live, 0);
    }
    assert_all_destroyed_once();
}

struct fragile {
    static int live;
    std::string text;
    explicit fragile(bool fail) : text("a string long enough to need the heap, honestly") {
        if (fail) throw std::runtime_error("constructor failed");
        ++live;
    }
    ~fragile() { --live; }
};
int fragile::live;

void a_throwing_constructor_gives_the_member_back(void **) {
    sp::pool<fragile> pool("fragile");
    fragile *ok = pool.acquire(false);
    bool caught = false;
    try {
        pool.acquire(true);
    } catch (const std::runtime_error &) {
        caught = true;
    }
    assert_true(caught);
    assert_int_equal(pool.leased(), 1); // the failed member is free again
    assert_int_equal(fragile::live, 1);
    pool.release(ok);
    assert_int_equal(fragile::live, 0);
    pool.clear(); // the free member that never held an object is not destroyed
    assert_int_equal(fragile::live, 0);
}

void a_constructor_that_throws_in_a_reclaim_leaves_the_member_free(void **) {
    sp::pool<fragile>::options opt;
    opt.name = "fragile_reclaim";
    opt.max = 1;
    opt.overflow = SP_OVERFLOW_RECLAIM;
    sp::pool<fragile> pool(opt);
    pool.acquire(false);
    bool caught = false;
    try {
        pool.acquire(true); // the victim is destroyed, then the new object fails to build
    } catch (const std::runtime_error &) {
        caught = true;
    }
    assert_true(caught);
    assert_int_equal(fragile::live, 0);
    assert_int_equal(pool.leased(), 0);
    assert_non_null(pool.acquire(false)); // the member is usable again
    assert_int_equal(fragile::live, 1);
}

void a_pool_moves_and_the_moved_from_pool_is_empty(void **) {
    tracked::reset();
    {
        sp::pool<tracked> a("moving");
        tracked *t = a.acquire("t", 5);
        sp::handle<tracked> h = a.handle_of(t);
        sp::pool<tracked> b(std::move(a));
        assert_false(a.valid());
        assert_null(a.acquire("none", 0));
        assert_int_equal(a.release_all(), 0);
        assert_ptr_equal(b.resolve(h), t);
        sp::pool<tracked> c("target");
        c.acquire("c", 6);
        c = std::move(b); // c's own object is destroyed, b's moves in
        assert_int_equal(tracked::live, 1);
        assert_ptr_equal(c.resolve(h), t);
    }
    assert_all_destroyed_once();
}

void trivial_types_get_plain_members(void **) {
    // no alive flag, no hooks: a member is exactly what the C pool would hold
    sp_desc d = sp_desc();
    d.item_size = sizeof(bullet);
    d.item_align = alignof(bullet);
    d.order = SP_ORDER_ACQUISITION; /* the wrapper's size holds either order */
    assert_int_equal(sp::pool<bullet>::buffer_size(100), sp_buffer_size(&d, 100));
    assert_true(sp::pool<tracked>::buffer_size(100) > 0);
}

void a_fixed_buffer_pool_holds_objects(void **) {
    tracked::reset();
    {
        static unsigned char memory[16384];
        std::size_t need = sp::pool<tracked>::buffer_size(16);
        assert_true(need <= sizeof memory);
        sp::pool<tracked>::options opt;
        opt.name = "fixed";
        opt.buffer = memory;
        opt.buffer_size = need;
        opt.overflow = SP_OVERFLOW_RECLAIM;
        sp::pool<tracked> pool(opt);
        assert_true(pool.valid());
        for (int i = 0; i < 40; i++) assert_non_null(pool.acquire("f", i));
        assert_int_equal(pool.leased(), 16);
        assert_int_equal(tracked::live, 16);
    }
    assert_all_destroyed_once();
}

double lowest_value_first(const void *item, void *) {
    return static_cast<const tracked *>(item)->value;
}

void a_priority_hook_sees_the_objects(void **) {
    tracked::reset();
    {
        sp::pool<tracked>::options opt = tracked_options("priority", 3, SP_OVERFLOW_RECLAIM);
        opt.priority = lowest_value_first;
        sp::pool<tracked> pool(opt);
        pool.acquire("a", 5);
        tracked *low = pool.acquire("b", 1);
        pool.acquire("c", 9);
        assert_ptr_equal(pool.acquire("d", 7), low);
    }
    assert_all_destroyed_once();
}

// A thread-safe pool (options::threads): objects are built on the acquiring thread and destroyed
// exactly once on the releasing one, whichever thread that is; two threads racing to release
// the same object destroy it once, and exactly one of them gets SP_OK.
struct shared_tracked {
    static std::atomic<int> built, destroyed, bad_destroys;
    static const std::uint32_t magic = 0x5EA15EA1u;
    std::uint32_t check;
    std::string name; // heap memory: a missed or doubled destructor is a leak or a double free
    int value, owner;

    shared_tracked(int v, int o)
        : check(magic), name("shared -- a tail long enough to live on the heap, not inline"),
          value(v), owner(o) {
        ++built;
    }
    ~shared_tracked() {
        if (check != magic) ++bad_destroys;
        check = 0;
        ++destroyed;
    }
    shared_tracked(const shared_tracked &) = delete;
    shared_tracked &operator=(const shared_tracked &) = delete;
};
std::atomic<int> shared_tracked::built, shared_tracked::destroyed, shared_tracked::bad_destroys;

void count_refusals(sp_log_level, const char *, const char *, void *user) {
    ++*static_cast<std::atomic<int> *>(user);
}

// Both threads start their work together (thread creation alone would stagger them).
void arrive_and_wait(std::atomic<int> &arrived, int parties) {
    ++arrived;
    while (arrived.load() < parties) std::this_thread::yield();
}

void a_thread_safe_pool_builds_and_destroys_on_any_thread(void **) {
    shared_tracked::built = 0;
    shared_tracked::destroyed = 0;
    shared_tracked::bad_destroys = 0;
    std::atomic<int> lines(0), bad(0);
    sp::pool<shared_tracked>::options opt;
    opt.name = "threads";
    opt.threads = SP_THREADS_SAFE;
    opt.magazine_size = 8;
    opt.logger.log = count_refusals;
    opt.logger.user = &lines;
    {
        sp::pool<shared_tracked> pool(opt);
        assert_true(pool.valid());
        // Two threads churn their own objects at once; each keeps the last 32 it built.
        std::vector<shared_tracked *> kept[2];
        std::atomic<int> started(0);
        auto churn = [&](int t) {
            std::vector<shared_tracked *> mine;
            arrive_and_wait(started, 2);
            for (int i = 0; i < 20000; i++) {
                shared_tracked *o = pool.acquire(i, t);
                if (o == nullptr || o->value != i || o->owner != t) {
                    ++bad;
                    continue;
                }
                mine.push_back(o);
                if (mine.size() > 32) {
                    shared_tracked *old = mine.front();
                    if (old->owner != t || old->check != shared_tracked::magic) ++bad;
                    if (pool.release(old) != SP_OK) ++bad;
                    mine.erase(mine.begin());
                }
            }
            kept[t] = std::move(mine);
        };
        std::thread a(churn, 0), b(churn, 1);
        a.join();
        b.join();
        assert_int_equal(pool.stats().leased, 64);
        // Each thread's survivors are released on the other side, by threads that built none.
        std::thread c([&] { for (shared_tracked *o : kept[1]) if (pool.release(o) != SP_OK) ++bad; });
        std::thread d([&] { for (shared_tracked *o : kept[0]) if (pool.release(o) != SP_OK) ++bad; });
        c.join();
        d.join();
        assert_int_equal(bad.load(), 0);
        assert_int_equal(pool.stats().leased, 0);
        assert_int_equal(shared_tracked::destroyed.load(), shared_tracked::built.load());
        // Racing double releases: one SP_OK, one refusal (logged), one destruction.
        for (int round = 0; round < 200; round++) {
            shared_tracked *o = pool.acquire(round, 2);
            assert_non_null(o);
            int before = shared_tracked::destroyed.load();
            std::atomic<int> ok(0), refused(0), arrived(0);
            auto twice = [&] {
                arrive_and_wait(arrived, 2);
                sp_result r = pool.release(o);
                if (r == SP_OK) ++ok;
                else if (r == SP_ERR_NOT_LEASED) ++refused;
            };
            std::thread e(twice), f(twice);
            e.join();
            f.join();
            assert_int_equal(ok.load(), 1);
            assert_int_equal(refused.load(), 1);
            assert_int_equal(shared_tracked::destroyed.load(), before + 1);
        }
        assert_int_equal(lines.load(), 200);
        assert_int_equal(pool.stats().leased, 0);
    }
    assert_int_equal(shared_tracked::destroyed.load(), shared_tracked::built.load());
    assert_int_equal(shared_tracked::bad_destroys.load(), 0);
}

} // namespace

// A constructor that spawns into its own saturated RECLAIM pool must not be handed the member it
// is being built in (the reclaim's oldest): the object would be its own child, two owners of one
// member. The member under construction is busy, as in a C hook, so the nested acquire gets
// nullptr (one line: nothing can be reclaimed).
struct spawner;
static sp::pool<spawner> *spawner_pool;
struct spawner {
    spawner *child;
    int depth;
    explicit spawner(int d) : child(nullptr), depth(d) {
        if (d > 0) child = spawner_pool->acquire(d - 1);
    }
};

void a_constructor_spawning_into_its_saturated_pool_is_not_given_its_own_member(void **) {
    sp::pool<spawner>::options opt;
    opt.name = "spawners";
    opt.max = 1;
    opt.overflow = SP_OVERFLOW_RECLAIM;
    opt.order = SP_ORDER_ACQUISITION;
    sp::pool<spawner> pool(opt);
    spawner_pool = &pool;
    spawner *a = pool.acquire(1);
    assert_non_null(a);
    assert_null(a->child); // nothing to reclaim: not a second owner of a
    assert_int_equal(a->depth, 1);
    assert_int_equal(pool.leased(), 1);
    assert_non_null(pool.acquire_force(0)); // outside construction a reclaim takes a again
    spawner_pool = nullptr;
}

// An acquisition through the C calls on get() with an argument of its own (documented as not
// constructing) gets raw memory: the wrapper's on_acquire never takes a foreign `arg` for its
// construction call.
void a_c_acquisition_with_its_own_argument_is_not_taken_for_a_construction(void **) {
    sp::pool<spawner> pool("raw");
    int token = 42;
    void *raw = sp_acquire_with(pool.get(), &token);
    assert_non_null(raw);
    assert_int_equal(sp_release(pool.get(), raw), SP_OK);
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acquire_constructs_with_the_callers_arguments),
        cmocka_unit_test(aggregates_are_braced_and_plain_acquire_zeroes),
        cmocka_unit_test(release_destroys_the_object_once),
        cmocka_unit_test(every_way_a_life_ends_destroys_once),
        cmocka_unit_test(a_reclaim_destroys_the_victim_before_building_anew),
        cmocka_unit_test(a_saturated_drop_pool_returns_null_and_builds_nothing),
        cmocka_unit_test(handles_resolve_for_one_life),
        cmocka_unit_test(each_visits_live_objects_and_may_release_them),
        cmocka_unit_test(an_exception_from_each_stops_the_walk_and_leaves_the_pool_usable),
        cmocka_unit_test(a_throwing_constructor_gives_the_member_back),
        cmocka_unit_test(a_constructor_that_throws_in_a_reclaim_leaves_the_member_free),
        cmocka_unit_test(a_pool_moves_and_the_moved_from_pool_is_empty),
        cmocka_unit_test(trivial_types_get_plain_members),
        cmocka_unit_test(a_fixed_buffer_pool_holds_objects),
        cmocka_unit_test(a_priority_hook_sees_the_objects),
        cmocka_unit_test(a_constructor_spawning_into_its_saturated_pool_is_not_given_its_own_member),
        cmocka_unit_test(a_c_acquisition_with_its_own_argument_is_not_taken_for_a_construction),
        cmocka_unit_test(a_thread_safe_pool_builds_and_destroys_on_any_thread),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
