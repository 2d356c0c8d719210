/* SPDX-License-Identifier: Zlib */
/*
    spawnpool.hpp -- a header-only C++11 wrapper over spawnpool.h: typed pools of objects.

    QUICK START
    ===========
        #include <spawnpool.hpp>

        struct bullet { float x, y, vx, vy; int damage; };

        sp::pool<bullet>::options opt;
        opt.name = "bullets";
        opt.initial = 32;                           // built at load, not on the first shot
        opt.max = 64;                               // hard cap on live bullets
        opt.overflow = SP_OVERFLOW_RECLAIM;         // full? recycle the oldest bullet
        sp::pool<bullet> bullets(opt);

        bullet *b = bullets.acquire(x, y, 0.0f, -300.0f, 10);  // bullet{x, y, 0, -300, 10}
        sp::handle<bullet> h = bullets.handle_of(b);            // expires with this life
        bullets.each([](bullet &it) { it.y += it.vy / 60.0f; });
        if (bullet *still = bullets.resolve(h)) still->damage++;
        bullets.release(b);                                     // ~bullet() runs; h expires
        // ~pool(): every object still alive is destroyed, then the C pool

    LIFETIME OF THE OBJECTS
    =======================
    A pool<T> hands out live T objects, not raw memory:
    - acquire(args...) builds a T in a free member with T(args...) (T{args...} for aggregates
      such as `bullet` above; T() value-initialises, so acquire() on a plain struct zeroes it).
    - Every way a life ends destroys the object exactly once: release(), release_all(), a
      RECLAIM (the victim is destroyed before the new object is built in its place), clear(),
      and the pool's destruction. For a T that is not trivially destructible (std::string
      members...) the wrapper installs the C pool's on_release and dispose hooks to run ~T();
      a trivially destructible T gets no release hooks, so its release costs what the C call
      costs.
    - The constructor runs inside the C pool's on_acquire hook (every pool<T> has it), so it
      is a hook of the pool: it may acquire from the pool (the member it is building is busy:
      a saturated RECLAIM pool never hands it to a second owner, the nested acquire gets
      nullptr instead), and clear() or destruction of the pool from it are refused (see
      docs/safety.md, "What a callback may do").
    - Memory is built once and reused, as in C: members never move, a released member's memory
      is kept for the next acquire. Only the objects' lifetimes follow acquire/release.
    - The destructor of pool<T> destroys the objects still alive (like a container, so RAII
      pools never report leaks), then the C pool. A pool is move-only.
    - If T's constructor throws, the member goes back to the pool unconstructed and the exception
      propagates; nothing leaks. A destructor must not throw (they are noexcept by default).
    For a T that is not trivially destructible each member carries one byte more (the "alive"
    flag that keeps ~T() from running on memory that holds no object), rounded up to alignof(T).

    What the C pool guarantees stays true: O(1) acquire/release/resolve, no allocation once warm,
    overflow policies, handles that expire with their life, and the debug checks of SP_DEBUG
    (a stale T* is reported by ASan or valgrind). Acquisition sites in leak reports name this
    header: the C++ calls cannot record the caller's line before C++20.

    THE C POOL UNDERNEATH
    =====================
    get() returns the sp_pool* for the C calls that the wrapper does not repeat (sp_leak_report,
    sp_leased_each, a registry...). Do not acquire from it or release into it with the C calls:
    the objects would not be constructed or destroyed.

    THREADS: one thread at a time per pool, unless options::threads is SP_THREADS_SAFE: then any
    thread may acquire and release, each object is constructed on the acquiring thread and
    destroyed once on the releasing one, and of two threads racing to release it the loser is
    refused before any destructor runs (THREADS in spawnpool.h, docs/threads.md).
*/
#ifndef SPAWNPOOL_HPP
#define SPAWNPOOL_HPP

#include "spawnpool.h"

#include <cstddef>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#  define SP__HPP_EXCEPTIONS 1
#else
#  define SP__HPP_EXCEPTIONS 0
#endif

namespace sp {

/* A typed reference to one life of one object of a pool<T>: resolve it with pool<T>::resolve.
   The same 64 bits as the C sp_handle (see HANDLES in spawnpool.h); the null handle is false. */
template <class T>
class handle {
public:
    handle() noexcept : raw_(sp_handle_null()) {}
    explicit handle(sp_handle raw) noexcept : raw_(raw) {}
    sp_handle raw() const noexcept { return raw_; }
    bool is_null() const noexcept { return sp_handle_is_null(raw_); }
    explicit operator bool() const noexcept { return !is_null(); }
    friend bool operator==(handle a, handle b) noexcept { return sp_handle_eq(a.raw_, b.raw_); }
    friend bool operator!=(handle a, handle b) noexcept { return !sp_handle_eq(a.raw_, b.raw_); }

private:
    sp_handle raw_;
};

namespace detail {

/* T(args...) when that constructor exists, else T{args...} (aggregates before C++20). */
template <class T, class... Args>
T *construct(std::true_type /*parens*/, void *where, Args &&...args) {
    return ::new (where) T(std::forward<Args>(args)...);
}
template <class T, class... Args>
T *construct(std::false_type /*braces*/, void *where, Args &&...args) {
    return ::new (where) T{std::forward<Args>(args)...};
}

/* A member's memory. A trivially destructible T is the member itself; any other T is followed
   by a flag saying whether the memory holds a live object, for the hooks that destroy it. */
template <class T, bool Trivial = std::is_trivially_destructible<T>::value>
struct slot {
    alignas(T) unsigned char storage[sizeof(T)];
    static bool alive(const void *) noexcept { return true; }
    static void set_alive(void *, bool) noexcept {}
};
template <class T>
struct slot<T, false> {
    alignas(T) unsigned char storage[sizeof(T)];
    unsigned char is_alive;
    static bool alive(const void *item) noexcept {
        return static_cast<const slot *>(item)->is_alive != 0;
    }
    static void set_alive(void *item, bool on) noexcept {
        static_cast<slot *>(item)->is_alive = on ? 1 : 0;
    }
    static void created(void *item, void * /*user*/) noexcept { set_alive(item, false); }
    /* on_release (release, release_all, a reclaim's victim) and dispose (clear and destroy of
       leased members; free members hold no object) both end the object's life, once. */
    static void end_life(void *item, void * /*user*/) noexcept {
        if (!alive(item)) return;
        set_alive(item, false);
        static_cast<T *>(item)->~T();
    }
};

/* One construction, handed to the C pool's on_acquire hook as its `arg`: the object is built
   inside the hook, where the C pool marks the member busy, so that a constructor that acquires
   from its own pool can never be handed (by a reclaim) the member it is constructing, and a
   constructor that clears or destroys its pool is refused. An exception is caught in the hook
   (it must not unwind through C) and rethrown once the acquisition has returned. */
template <class T>
struct build_base {
    void (*run)(build_base *self, void *where);
    T *object;
#if SP__HPP_EXCEPTIONS
    std::exception_ptr error;
#endif
    /* The construction the current acquisition of this thread carries: the hook compares `arg`
       with it (never dereferences an `arg` it did not make), so an acquisition through the C
       calls on get() with an argument of its own gets raw memory, as it always did. */
    static build_base *&active() noexcept {
        static thread_local build_base *current = nullptr;
        return current;
    }
};
template <class T, class Make>
struct build_call : build_base<T> {
    explicit build_call(Make &m) : make(m) {
        this->run = &invoke;
        this->object = nullptr;
    }
    Make &make;
    static void invoke(build_base<T> *self, void *where) {
        self->object = static_cast<build_call *>(self)->make(where);
    }
};

/* Calls f(T&) for sp_each; f may return void (visit all) or bool (false stops). An exception
   from f stops the walk and is rethrown once sp_each has returned: it must not unwind through
   the C library, which would be left inside its iteration. */
template <class T, class F>
bool call_visit(std::true_type /*returns void*/, F &f, T &item) {
    f(item);
    return true;
}
template <class T, class F>
bool call_visit(std::false_type /*returns bool*/, F &f, T &item) {
    return static_cast<bool>(f(item));
}
template <class T, class F>
struct visitor {
    explicit visitor(F &fn) : f(fn) {}
    F &f;
#if SP__HPP_EXCEPTIONS
    std::exception_ptr error;
#endif
    static bool each(void *item, void *user) {
        if (!slot<T>::alive(item)) return true; /* a T constructor walking its own pool */
        visitor &v = *static_cast<visitor *>(user);
        typedef decltype(v.f(std::declval<T &>())) result;
#if SP__HPP_EXCEPTIONS
        try {
            return call_visit<T>(typename std::is_void<result>::type(), v.f,
                                 *static_cast<T *>(item));
        } catch (...) {
            v.error = std::current_exception();
            return false;
        }
#else
        return call_visit<T>(typename std::is_void<result>::type(), v.f, *static_cast<T *>(item));
#endif
    }
};

} // namespace detail

/* A pool of T objects; see LIFETIME OF THE OBJECTS at the top of this file. */
template <class T>
class pool {
    typedef detail::slot<T> slot_type;
    static const bool trivial = std::is_trivially_destructible<T>::value;

public:
    typedef T value_type;
    typedef sp::handle<T> handle_type;

    /* The C sp_desc minus what the wrapper owns (item size and alignment, the hooks). Zero
       means default, as in C. */
    struct options {
        const char *name = nullptr;          /* for log lines (="") */
        std::size_t initial = 0;             /* members built at creation (=0) */
        std::size_t max = 0;                 /* most members built (=0: unbounded) */
        sp_overflow overflow = SP_OVERFLOW_DROP; /* what a saturated pool does */
        sp_order order = SP_ORDER_DEFAULT;   /* iteration and reclaim order */
        std::size_t chunk_items = 0;         /* the first span's members (=0: what a 64 KiB
                                                segment holds, 1 to 256, or initial) */
        sp_priority_fn priority = nullptr;   /* RECLAIM victim: the lowest value; gets a
                                                const T* as `item` and `priority_user` */
        void *priority_user = nullptr;
        sp_allocator allocator = sp_allocator(); /* (=C library) */
        sp_logger logger = sp_logger();      /* (=warnings and errors to stderr) */
        void *buffer = nullptr;              /* fixed-memory mode (see buffer_size()) */
        std::size_t buffer_size = 0;
        sp_threads threads = SP_THREADS_NONE; /* SP_THREADS_SAFE: any thread may acquire and
                                                release, objects are built and destroyed on the
                                                calling thread (THREADS in spawnpool.h) */
        std::size_t magazine_size = 0;       /* thread-safe pools' per-thread cache (=64) */
        std::size_t thread_cache_bytes = 0;  /* ... and its most bytes a thread (=256 KiB) */
    };

    /* A pool named `name` with default options. Check valid(): creation fails (logged) only
       for what the C pool refuses, such as an allocator failure. */
    explicit pool(const char *name = nullptr) : pool(options_named(name)) {}
    explicit pool(const options &opt) : pool_(create(opt)) {}

    pool(const pool &) = delete;
    pool &operator=(const pool &) = delete;
    pool(pool &&other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
    pool &operator=(pool &&other) noexcept {
        if (this != &other) {
            destroy();
            pool_ = other.pool_;
            other.pool_ = nullptr;
        }
        return *this;
    }
    ~pool() { destroy(); }

    /* False when creation failed or the pool was moved from. */
    bool valid() const noexcept { return pool_ != nullptr; }
    explicit operator bool() const noexcept { return valid(); }
    sp_pool *get() const noexcept { return pool_; }
    const char *name() const noexcept { return sp_pool_name(pool_); }

    /* Bytes a fixed buffer needs for `members` T objects (options::buffer), in either order
       (the size of acquisition order, which keeps a lease list: enough for memory order too). */
    static std::size_t buffer_size(std::size_t members) {
        sp_desc d = desc_of(options());
        d.order = SP_ORDER_ACQUISITION;
        return sp_buffer_size(&d, members);
    }

    /* A new T built from args in a free member, or nullptr when the pool drops (a saturated
       DROP pool; counted in stats().dropped), on allocator failure or when !valid(). Under
       RECLAIM a saturated pool destroys its victim and builds the new object there. O(1). */
    template <class... Args>
    T *acquire(Args &&...args) {
        auto make = [&](void *where) { return construct_in(where, std::forward<Args>(args)...); };
        detail::build_call<T, decltype(make)> call(make);
        detail::build_base<T> *outer = begin(call);
        return finish(sp_acquire_with_at(pool_, &call, __FILE__, __LINE__), call, outer);
    }

    /* acquire() that reclaims where it would drop: nullptr only on allocator failure. */
    template <class... Args>
    T *acquire_force(Args &&...args) {
        auto make = [&](void *where) { return construct_in(where, std::forward<Args>(args)...); };
        detail::build_call<T, decltype(make)> call(make);
        detail::build_base<T> *outer = begin(call);
        return finish(sp_acquire_force_at(pool_, &call, __FILE__, __LINE__), call, outer);
    }

    /* acquire() that also sets *out to the new life's handle (the null handle on nullptr). */
    template <class... Args>
    T *acquire_handle(handle_type *out, Args &&...args) {
        sp_handle raw = sp_handle_null();
        auto make = [&](void *where) { return construct_in(where, std::forward<Args>(args)...); };
        detail::build_call<T, decltype(make)> call(make);
        detail::build_base<T> *outer = begin(call);
        T *item = finish(sp_acquire_handle_at(pool_, &call, &raw, __FILE__, __LINE__), call, outer);
        if (out) *out = item ? handle_type(raw) : handle_type();
        return item;
    }

    /* Destroys the object and returns its member to the pool; its handles stop resolving.
       nullptr is a no-op (SP_OK). A pointer that is not a live object of this pool changes
       nothing and returns SP_ERR_NOT_LEASED / SP_ERR_FOREIGN with one logged line. O(1). */
    sp_result release(T *item) { return sp_release_at(pool_, item, __FILE__, __LINE__); }

    /* Destroys every live object (in the pool's order). @return how many. */
    std::size_t release_all() { return pool_ ? sp_release_all(pool_) : 0; }

    /* Destroys every live object and every member, returning the memory; the pool stays
       usable. @return members disposed. */
    std::size_t clear() { return pool_ ? sp_clear(pool_) : 0; }

    /* Builds n free members ahead of time (no object is constructed). @return members built. */
    std::size_t prewarm(std::size_t n) { return pool_ ? sp_prewarm(pool_, n) : 0; }

    /* Disposes free members down to keep_free and gives back empty spans. @return disposed. */
    std::size_t trim(std::size_t keep_free = 0) { return pool_ ? sp_trim(pool_, keep_free) : 0; }

    sp_result set_max(std::size_t max) { return sp_set_max(pool_, max); }
    sp_result set_overflow(sp_overflow overflow) { return sp_set_overflow(pool_, overflow); }

    handle_type handle_of(const T *item) const { return handle_type(sp_handle_of(pool_, item)); }

    /* The object while the handle's life lasts, nullptr after. O(1). */
    T *resolve(handle_type h) const { return static_cast<T *>(sp_resolve(pool_, h.raw())); }

    bool is_leased(const T *item) const { return sp_is_leased(pool_, item); }

    /* Calls f(T&) for every live object in the pool's order; f returns void, or bool where
       false stops the walk. f may release the object it is given and acquire others (see
       sp_each for which of those it visits). @return objects visited. O(leased). */
    template <class F>
    std::size_t each(F &&f) {
        typedef typename std::remove_reference<F>::type fn_type;
        detail::visitor<T, fn_type> v(f);
        std::size_t n = pool_ ? sp_each(pool_, &detail::visitor<T, fn_type>::each, &v) : 0;
#if SP__HPP_EXCEPTIONS
        if (v.error) std::rethrow_exception(v.error);
#endif
        return n;
    }

    sp_stats stats() const {
        sp_stats s;
        sp_stats_get(pool_, &s);
        return s;
    }
    std::size_t leased() const { return stats().leased; }

private:
    sp_pool *pool_;

    static options options_named(const char *name) {
        options opt;
        opt.name = name;
        return opt;
    }

    /* The C description: the options, the member layout, and the hooks that end lives. */
    static sp_desc desc_of(const options &opt) {
        sp_desc d = sp_desc();
        d.name = opt.name;
        d.item_size = sizeof(slot_type);
        d.item_align = alignof(slot_type);
        d.initial = opt.initial;
        d.max = opt.max;
        d.overflow = opt.overflow;
        d.order = opt.order;
        d.chunk_items = opt.chunk_items;
        d.priority = opt.priority;
        d.user = opt.priority_user;
        d.allocator = opt.allocator;
        d.logger = opt.logger;
        d.buffer = opt.buffer;
        d.buffer_size = opt.buffer_size;
        d.threads = opt.threads;
        d.magazine_size = opt.magazine_size;
        d.thread_cache_bytes = opt.thread_cache_bytes;
        d.on_acquire = &constructing;
        set_hooks(d, std::integral_constant<bool, trivial>());
        return d;
    }
    /* on_acquire: builds the object the acquisition carries (see detail::build_base). An
       acquisition through the C calls on get() carries none: no object. */
    static void constructing(void *item, const void *arg, void * /*user*/) noexcept {
        detail::build_base<T> *call = detail::build_base<T>::active();
        if (!arg || arg != call) return;
#if SP__HPP_EXCEPTIONS
        try {
            call->run(call, item);
        } catch (...) {
            call->error = std::current_exception();
            return;
        }
#else
        call->run(call, item);
#endif
        slot_type::set_alive(item, true);
    }
    static void set_hooks(sp_desc &, std::true_type /*trivial*/) {}
    static void set_hooks(sp_desc &d, std::false_type /*not trivial*/) {
        /* create also keeps SP_DEBUG=2 from filling released members with 0xDD, which would
           set the alive flag of memory that holds no object. */
        d.create = &slot_type::created;
        d.on_release = &slot_type::end_life;
        d.dispose = &slot_type::end_life;
    }
    static sp_pool *create(const options &opt) {
        sp_desc d = desc_of(opt);
        return sp_pool_create(&d);
    }

    template <class... Args>
    static T *construct_in(void *where, Args &&...args) {
        return detail::construct<T>(typename std::is_constructible<T, Args &&...>::type(), where,
                                    std::forward<Args>(args)...);
    }

    /* After the acquisition: the object its hook built, or the member back and the
       constructor's exception rethrown. */
    static detail::build_base<T> *begin(detail::build_base<T> &call) noexcept {
        detail::build_base<T> *outer = detail::build_base<T>::active();
        detail::build_base<T>::active() = &call;
        return outer;
    }
    T *finish(void *item, detail::build_base<T> &call, detail::build_base<T> *outer) {
        detail::build_base<T>::active() = outer; /* (a constructor's own acquisitions nest) */
        if (!item) return nullptr;
#if SP__HPP_EXCEPTIONS
        if (call.error) {
            sp_release_at(pool_, item, __FILE__, __LINE__); /* not alive: no ~T() */
            std::rethrow_exception(call.error);
        }
#endif
        return call.object;
    }

    void destroy() noexcept {
        if (!pool_) return;
        sp_release_all(pool_);
        sp_pool_destroy(pool_);
        pool_ = nullptr;
    }
};

} // namespace sp

#endif /* SPAWNPOOL_HPP */
