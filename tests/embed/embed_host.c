/* SPDX-License-Identifier: Zlib */
/* Loads two shared libraries that each embed spawnpool (plugin.c), as a program loads two
   libraries built on it. Checks that each calls its own copy (not the other's, through
   exported symbols), and that unloading one (dlclose) after its pools are destroyed is safe
   for a thread that used its thread-safe pool and exits afterwards: the library's thread-exit
   destructor must not run, its code being gone. Exit status 0 when all holds.
     embed_host LIB_A LIB_B */
#define _POSIX_C_SOURCE 200809L /* barriers */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef void (*any_fn)(void);
typedef any_fn (*address_fn)(void);
typedef int (*touch_fn)(void);
typedef void (*fini_fn)(void);

static int failures;
#define CHECK(c)                                                                                  \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "embed_host: %s:%d: %s\n", __FILE__, __LINE__, #c);                 \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

/* dlsym's answer as the function pointer it is (POSIX: the same representation). */
#define SYM(lib, name, fn)                                                                        \
    do {                                                                                          \
        void *f_ = dlsym((lib), (name));                                                          \
        if (!f_) {                                                                                \
            fprintf(stderr, "embed_host: %s\n", dlerror());                                       \
            return 1;                                                                             \
        }                                                                                         \
        memcpy(&(fn), &f_, sizeof(fn));                                                           \
    } while (0)

typedef struct worker {
    touch_fn touch;
    pthread_barrier_t used, unloaded;
    int result;
} worker;

/* Uses the library's pool (so this thread has a cache of it, and its spawnpool copy a
   destructor to run at this thread's exit), then waits, in the host's code, until the library
   is gone, and exits. */
static void *use_then_outlive(void *v) {
    worker *w = (worker *)v;
    w->result = w->touch();
    pthread_barrier_wait(&w->used);
    pthread_barrier_wait(&w->unloaded);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: embed_host LIB_A LIB_B\n");
        return 2;
    }
    touch_fn touch_a, touch_b;
    fini_fn fini_a, fini_b;

    /* Unloading: B alone, a thread uses its pool, the pool goes, B goes, the thread exits. */
    void *b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!b) {
        fprintf(stderr, "embed_host: %s\n", dlerror());
        return 1;
    }
    SYM(b, "embed_touch", touch_b);
    SYM(b, "embed_fini", fini_b);
    worker w;
    memset(&w, 0, sizeof w);
    w.touch = touch_b;
    pthread_barrier_init(&w.used, NULL, 2);
    pthread_barrier_init(&w.unloaded, NULL, 2);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, use_then_outlive, &w) == 0);
    pthread_barrier_wait(&w.used);
    fini_b();
    CHECK(dlclose(b) == 0);
    pthread_barrier_wait(&w.unloaded); /* the thread exits now: nothing of B may run */
    pthread_join(t, NULL);
    CHECK(w.result == 0);
    pthread_barrier_destroy(&w.used);
    pthread_barrier_destroy(&w.unloaded);

    /* Two copies. RTLD_GLOBAL: what exported symbols would let the second library bind to the
       first's. */
    void *a = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    b = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
    if (!a || !b) {
        fprintf(stderr, "embed_host: %s\n", dlerror());
        return 1;
    }
    address_fn addr_a, addr_b;
    SYM(a, "embed_sp_acquire", addr_a);
    SYM(b, "embed_sp_acquire", addr_b);
    SYM(a, "embed_touch", touch_a);
    SYM(b, "embed_touch", touch_b);
    SYM(a, "embed_fini", fini_a);
    SYM(b, "embed_fini", fini_b);
    CHECK(addr_a() != addr_b()); /* each library's own sp_acquire */
    CHECK(touch_a() == 0 && touch_b() == 0);
    fini_b();
    CHECK(dlclose(b) == 0);
    CHECK(touch_a() == 0); /* the other copy is unaffected */
    fini_a();
    CHECK(dlclose(a) == 0);
    if (!failures) printf("embed_host: unloaded with a thread alive; two embedded copies kept apart\n");
    return failures ? 1 : 0;
}
