/* SPDX-License-Identifier: Zlib */
/* os.c -- the platform's virtual memory (see sp_os.h): POSIX mmap/mprotect/madvise, Windows
   VirtualAlloc/VirtualFree, and the fallback for platforms without virtual memory, where
   every reservation fails and pools grow in geometric ranges instead. Then the resolution of
   an sp_allocator into the functions a pool uses, and the white-box failure switches. */
/* MAP_ANONYMOUS, MAP_NORESERVE and madvise are not POSIX-strict: ask glibc and the BSDs for them
   under -std=c11 (a feature-test macro is reserved for exactly this use). */
#if !defined(_WIN32) && !defined(_DEFAULT_SOURCE)
#  define _DEFAULT_SOURCE /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
#endif
#include "sp_os.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define SP__OS_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SP__OS_ASAN)
#  define SP__OS_ASAN 1
#endif
#ifdef SP__OS_ASAN
#  include <sanitizer/asan_interface.h>
#endif

/* ---- forced failures (white-box) ---------------------------------------------------------- */

static atomic_long sp__os_reserves_left = -1;
static atomic_long sp__os_commits_left = -1;
static atomic_ulong sp__os_call_count; /* every call of the platform's virtual memory */

unsigned long sp__os_calls(void) { return atomic_load_explicit(&sp__os_call_count, memory_order_relaxed); }

void sp__os_fail_reserve_after(long n) { atomic_store(&sp__os_reserves_left, n < 0 ? -1 : n); }
void sp__os_fail_commit_after(long n) { atomic_store(&sp__os_commits_left, n < 0 ? -1 : n); }

#if SP__OS_VM
static void sp__os_counted(void) { atomic_fetch_add_explicit(&sp__os_call_count, 1u, memory_order_relaxed); }

/* True when this call must fail: the countdown is at 0 (and stays there until reset). */
static bool sp__os_forced_failure(atomic_long *left) {
    long n = atomic_load_explicit(left, memory_order_relaxed);
    while (n > 0) {
        if (atomic_compare_exchange_weak_explicit(left, &n, n - 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return false;
    }
    return n == 0;
}

/* A decommitted range reads as fresh memory when it comes back: whatever the pool poisoned in
   it for ASan must not outlive it (ASan's shadow does not follow madvise or mprotect). valgrind
   needs nothing: memcheck follows the system calls themselves. Not on release: unpoisoning a
   whole 64 GiB reservation writes 8 GiB of shadow; the caller unpoisons what it poisoned (in
   committed memory) first, as it must for a custom allocator's release anyway. */
static void sp__os_forget_poison(void *addr, size_t size) {
#ifdef SP__OS_ASAN
    ASAN_UNPOISON_MEMORY_REGION(addr, size);
#endif
    (void)addr;
    (void)size;
}
#endif

/* ---- the platform --------------------------------------------------------------------- */
#if !SP__OS_VM

/* No virtual memory: nothing to reserve; pools use the fallback. */
size_t sp__os_page_size(void) { return 4096u; }
bool sp__os_has_virtual_memory(void) { return false; }
void *sp__os_reserve(size_t size) {
    (void)size;
    return NULL;
}
bool sp__os_commit(void *addr, size_t size) {
    (void)addr;
    (void)size;
    return false;
}
bool sp__os_decommit(void *addr, size_t size) {
    (void)addr;
    (void)size;
    return false;
}
void sp__os_release(void *addr, size_t size) {
    (void)addr;
    (void)size;
}
void sp__os_advise_huge(void *addr, size_t size) { (void)addr, (void)size; }

#elif defined(_WIN32)
/* Windows: untested in this repository's CI (it builds and runs on Linux only). */
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN
#  endif
#  include <windows.h>

size_t sp__os_page_size(void) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return (size_t)si.dwPageSize;
}

bool sp__os_has_virtual_memory(void) { return true; }

void *sp__os_reserve(size_t size) {
    if (sp__os_forced_failure(&sp__os_reserves_left)) return NULL;
    /* The base comes at the allocation granularity (64 KiB), above the page size. */
    return VirtualAlloc(NULL, size, MEM_RESERVE, PAGE_NOACCESS);
}

bool sp__os_commit(void *addr, size_t size) {
    if (sp__os_forced_failure(&sp__os_commits_left)) return false;
    return VirtualAlloc(addr, size, MEM_COMMIT, PAGE_READWRITE) != NULL;
}

bool sp__os_decommit(void *addr, size_t size) {
    sp__os_forget_poison(addr, size);
    return VirtualFree(addr, size, MEM_DECOMMIT) != 0;
}

void sp__os_advise_huge(void *addr, size_t size) { (void)addr, (void)size; }

void sp__os_release(void *addr, size_t size) {
    (void)size;
    /* MEM_RELEASE takes the reservation's base and a size of 0: the whole reservation. */
    VirtualFree(addr, 0, MEM_RELEASE);
}

#else /* POSIX */
#  include <sys/mman.h>
#  include <unistd.h>
#  if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#    define MAP_ANONYMOUS MAP_ANON
#  endif
#  ifndef MAP_NORESERVE
#    define MAP_NORESERVE 0
#  endif

size_t sp__os_page_size(void) {
    static atomic_size_t cached; /* the same for the process's life: asked once */
    size_t page = atomic_load_explicit(&cached, memory_order_relaxed);
    if (page) return page;
    long got = sysconf(_SC_PAGESIZE);
    page = got > 0 ? (size_t)got : 4096u;
    atomic_store_explicit(&cached, page, memory_order_relaxed);
    return page;
}

bool sp__os_has_virtual_memory(void) { return true; }

void *sp__os_reserve(size_t size) {
    if (sp__os_forced_failure(&sp__os_reserves_left)) return NULL;
    sp__os_counted();
    /* PROT_NONE + MAP_NORESERVE: address space only, no commit charge until mprotect. */
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

bool sp__os_commit(void *addr, size_t size) {
    if (sp__os_forced_failure(&sp__os_commits_left)) return false;
    sp__os_counted();
    /* Under strict overcommit (vm.overcommit_memory=2) this is where the charge is taken, so
       this is where "out of memory" shows. */
    return mprotect(addr, size, PROT_READ | PROT_WRITE) == 0;
}

bool sp__os_decommit(void *addr, size_t size) {
    sp__os_forget_poison(addr, size);
    sp__os_counted(); /* (two system calls) */
    sp__os_counted();
    /* MADV_DONTNEED drops the pages at once (a private anonymous range then reads zero), unlike
       MADV_FREE; PROT_NONE gives the commit charge back and catches stale accesses. Not mmap
       MAP_FIXED over the range: a failed MAP_FIXED may leave a hole another mapping can take. */
    int dropped = madvise(addr, size, MADV_DONTNEED);
    int closed = mprotect(addr, size, PROT_NONE);
    return dropped == 0 && closed == 0;
}

void sp__os_release(void *addr, size_t size) {
    sp__os_counted();
    munmap(addr, size);
}

void sp__os_advise_huge(void *addr, size_t size) {
#  ifdef MADV_HUGEPAGE
    sp__os_counted();
    (void)madvise(addr, size, MADV_HUGEPAGE);
#  else
    (void)addr, (void)size;
#  endif
}

#endif

/* ---- an allocator's virtual memory ---------------------------------------------------- */

static void *sp__os_reserve_fn(size_t size, void *user) {
    (void)user;
    return sp__os_reserve(size);
}
static bool sp__os_commit_fn(void *addr, size_t size, void *user) {
    (void)user;
    return sp__os_commit(addr, size);
}
static void sp__os_decommit_fn(void *addr, size_t size, void *user) {
    (void)user;
    (void)sp__os_decommit(addr, size);
}
static void sp__os_release_fn(void *addr, size_t size, void *user) {
    (void)user;
    sp__os_release(addr, size);
}

const char *sp__allocator_vm(const sp_allocator *a, sp__vm *out) {
    memset(out, 0, sizeof *out);
    if (!a->alloc != !a->free) return "allocator needs both alloc and free";
    int given = (a->reserve != NULL) + (a->commit != NULL) + (a->decommit != NULL) +
                (a->release != NULL);
    if (given == 4) {
        out->reserve = a->reserve;
        out->commit = a->commit;
        out->decommit = a->decommit;
        out->release = a->release;
        out->user = a->user;
        return NULL;
    }
    if (given != 0)
        return "allocator needs all four of reserve, commit, decommit and release, or none";
    /* The registry hands its pools its resolved allocator: the library's own defaults count as
       "none given". A custom alloc/free without virtual memory gets the fallback. */
    bool library_memory = (!a->alloc && !a->free) ||
                          (a->alloc == sp__default_alloc && a->free == sp__default_free);
    if (library_memory && sp__os_has_virtual_memory()) {
        out->reserve = sp__os_reserve_fn;
        out->commit = sp__os_commit_fn;
        out->decommit = sp__os_decommit_fn;
        out->release = sp__os_release_fn;
    }
    return NULL;
}
