/* SPDX-License-Identifier: Zlib */
/* sp_os.h -- where a pool's memory comes from: the platform's virtual memory behind one small
   interface (os.c), and the resolution of an sp_allocator into the reserve/commit/decommit/
   release functions a pool uses. Nothing else in the library calls mmap or VirtualAlloc.

   A reservation is address space only: no access, no physical memory, no commit charge. Parts
   of it are committed (readable and writable) as a pool grows, decommitted (physical memory
   returned, address space kept) when sp_trim finds whole pages without a built member, and the
   whole reservation is released when the pool goes. Platforms without virtual memory
   (WebAssembly, or a build with SP_NO_VIRTUAL_MEMORY) have no reservation: sp__os_reserve
   fails and pools use the fallback (geometric ranges from alloc/free). */
#ifndef SP_OS_H
#define SP_OS_H

#include "sp_internal.h"

#if defined(SP_NO_VIRTUAL_MEMORY) || defined(__EMSCRIPTEN__) || defined(__wasm__)
#  define SP__OS_VM 0
#else
#  define SP__OS_VM 1
#endif

/* ---- the platform (os.c) -----------------------------------------------------------------
   Sizes and addresses given to commit/decommit/release are multiples of sp__os_page_size()
   and lie inside one reservation; release gets exactly what reserve returned and was asked. */

/* The commit granularity: sysconf(_SC_PAGESIZE), GetSystemInfo's dwPageSize; 4096 without
   virtual memory. A power of two. Cached after the first call. */
size_t sp__os_page_size(void);
/* True when this build has virtual memory (reservations can succeed at all). */
bool sp__os_has_virtual_memory(void);
/* Reserves size bytes of address space (size > 0, a multiple of the page size), aligned to at
   least the page size, inaccessible, backed by nothing. NULL when it cannot (no virtual
   memory, ulimit -v, a 32-bit address space, a forced failure): the caller falls back. */
void *sp__os_reserve(size_t size);
/* Makes [addr, addr+size) of a reservation readable and writable. Pages never committed or
   decommitted since read as zero. False when the system refuses (strict overcommit, a forced
   failure): an allocator failure; nothing changed. */
bool sp__os_commit(void *addr, size_t size);
/* Returns the physical memory of [addr, addr+size) and makes it inaccessible again; the
   address space stays reserved. False when the system refused (the memory then stays
   committed and readable: harmless). Sanitizer poisoning of the range is cleared. */
bool sp__os_decommit(void *addr, size_t size);
/* Gives the whole reservation back (addr and size as reserve returned and was asked). ASan
   poisoning is NOT cleared here (that would write an eighth of the reservation's size in
   shadow): unpoison what you poisoned before. O(1) in the reservation's size. */
void sp__os_release(void *addr, size_t size);
/* Asks for [addr, addr+size) of a reservation to be backed by huge pages where the system
   offers them on request (Linux's transparent huge pages in "madvise" mode); nothing elsewhere.
   A wish, not a commit: nothing changes if the system declines. */
void sp__os_advise_huge(void *addr, size_t size);

/* ---- an allocator's virtual memory -------------------------------------------------------- */
typedef struct sp__vm {
    void *(*reserve)(size_t size, void *user);
    bool (*commit)(void *addr, size_t size, void *user);
    void (*decommit)(void *addr, size_t size, void *user);
    void (*release)(void *addr, size_t size, void *user);
    void *user;
} sp__vm;

/* Resolves allocator a into the virtual memory a pool uses:
   - reserve, commit, decommit and release all set: those (whatever alloc/free are);
   - none set and alloc/free zero (or the library's own defaults): the platform's, when this
     build has virtual memory;
   - otherwise (a custom alloc/free without them, or no virtual memory): out->reserve is NULL,
     and the pool uses the fallback, geometric ranges from alloc/free.
   Returns NULL, or when a sets some but not all four, the reason (for MSG_BAD_DESC); *out is
   then zeroed. */
const char *sp__allocator_vm(const sp_allocator *a, sp__vm *out);

/* ---- white-box test hooks -----------------------------------------------------------------
   The platform's reserve (commit) fails after `n` more successes; n < 0 (the start) never.
   They count calls of sp__os_reserve / sp__os_commit, so they reach every pool that uses the
   platform's virtual memory: tests of the fallback and of NOMEM on growth. Process-wide and
   atomic; reset them (-1) at the end of the test. */
void sp__os_fail_reserve_after(long n);
/* White-box: the system calls the platform's virtual memory made so far (the benchmark's count
   of calls per pool created and destroyed). */
unsigned long sp__os_calls(void);
void sp__os_fail_commit_after(long n);

#endif
