/* SPDX-License-Identifier: Zlib */
/* fuzz.h -- what the fuzzer's models share: input decoding, failure reporting, the operation
   counter and the switches for behaviour the library is still being changed to. */
#ifndef SP_FUZZ_H
#define SP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Switches for decisions of issues 9 and 11: 1 models what the library does now (every one is
   on); 0 models the 0.2 behaviour, to replay an old corpus against an old library.
   FZ_MODEL_TAG_LIVES  a destroyed pool's handles never resolve in a later pool (issue 9 item 6).
   FZ_MODEL_RATE_LIMITS  decision 7 and issue 11 item 9: resolving another pool's handle warns
                       the first time, then when the count reaches a power of two; sp_dense warns
                       about growth past max when the places past it reach 1, 2, 4, 8... (as
                       sp_pool does), not on every growth.
   FZ_MODEL_REGISTRY_API  sp_registry_resolve and sp_registry_release_all (decisions 5, 9);
                       sp_spawn and sp_registry_remove of an unknown name log one line;
                       sp_registry_remove from a hook of the pool it would destroy returns an
                       error (issue 9 item 10); sp_registry_destroy from any hook, and registry
                       calls from hooks while it destroys, are refused with one line (decision 4).
   FZ_MODEL_GUARDS     priority and sp_each callbacks count as hooks: destroy/clear/trim of their
                       pool are refused with one line; inside priority, acquire and release of
                       its pool are refused with one line (decision 1). sp_clear and
                       sp_pool_destroy refuse every acquisition from the pool's hooks, free
                       members or not (decision 2).
   FZ_MODEL_ITER       the sp_iter cursor (decision 8): its order, and walks whose body releases
                       and acquires as an sp_each callback does. */
#ifndef FZ_MODEL_ITER
#  define FZ_MODEL_ITER 1
#endif
#ifndef FZ_MODEL_RATE_LIMITS
#  define FZ_MODEL_RATE_LIMITS 1
#endif
#ifndef FZ_MODEL_GUARDS
#  define FZ_MODEL_GUARDS 1
#endif
#ifndef FZ_MODEL_TAG_LIVES
#  define FZ_MODEL_TAG_LIVES 1
#endif
#ifndef FZ_MODEL_REGISTRY_API
#  define FZ_MODEL_REGISTRY_API 1
#endif

/* The bytes run out into zeros, so every input is a valid program. */
typedef struct fz_input {
    const uint8_t *data;
    size_t size, pos;
} fz_input;

static inline unsigned fz_byte(fz_input *in) { return in->pos < in->size ? in->data[in->pos++] : 0u; }
static inline int fz_done(const fz_input *in) { return in->pos >= in->size; }

/* A divergence between the library and a model: prints what differed and traps, so that
   libFuzzer keeps the input. */
void fz_fail(const char *what, int line, const char *file);
#define FZ_CHECK(cond, what)                                                                      \
    do {                                                                                          \
        if (!(cond)) fz_fail(what, __LINE__, __FILE__);                                           \
    } while (0)

/* Model-checked operations so far, and how many of them were on the dense pool (printed at
   exit, see fuzz_pool.c). */
extern uint64_t fz_ops_checked, fz_dense_ops;
/* The operation being run, for failure reports. */
extern int fz_op_index;
extern const char *fz_op_name;

/* The dense-pool model (fuzz_dense.c): one operation on the input's sp_dense, created on first
   use from the input's next bytes; fz_dense_teardown destroys it at the end of an input. */
void fz_dense_op(fz_input *in);
void fz_dense_teardown(void);

#endif
