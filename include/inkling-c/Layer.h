/*===- Layer.h - C API: compile a model's sconv layer, call it on buffers -===*\
|*                                                                            *|
|* For hosts without C++ or MLIR types (Python's ctypes: python/inkling/):    *|
|* a layer function's IR (text or file) is compiled once, on the CPU by the   *|
|* JIT or to the GPU's kernel bundle for the runtime's CUDA launcher, and     *|
|* called on the caller's buffers. libinkling_layer.so.                       *|
|*                                                                            *|
|* Conventions: those of inkling_runtime.h, the one C style of the project:  *|
|* snake_case `inkling_<object>_<verb>` names; every fallible call returns   *|
|* an inkling_status_t (names: inkling_status_name) and, having no manager,  *|
|* writes a one-line message naming the argument into the caller's `error`   *|
|* buffer (may be NULL); nothing aborts on bad input. A layer may be called  *|
|* from several threads: calls are serialized.                               *|
|*                                                                            *|
|* ABI of a call (exec::validateArguments, include/inkling/ExecutionEngine/  *|
|* LayerAbi.h, is its one check): one inkling_memref_t per argument, in the  *|
|* function's order (inkling_layer_get_arg), each with the argument's rank;  *|
|* `data` is the first element, 16-byte aligned for the cache and the bf16   *|
|* tensors (the kernels' vector accesses assume it), aligned to its element  *|
|* for the metadata; sizes and strides count elements, every static size and *|
|* stride of the IR's type must match, and the sizes must agree on T, B, H,  *|
|* w and W. A zero-size array may have any strides. No buffer the layer      *|
|* writes (the cache, the outputs) may share a byte with another argument.   *|
|* On the CPU the step metadata is checked on the host before the call       *|
|* (query_start_loc, num_computed, the block ids of every history read,      *|
|* every slot, no slot stored twice, token_seq), so bad metadata is an       *|
|* error, not a wild access. On the GPU the buffers are device addresses and *|
|* their values are not read by the host: compile with `checked` to have the *|
|* kernels report bad ids. `threads` is 0 to 1024.                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef INKLING_C_LAYER_H
#define INKLING_C_LAYER_H

#include "inkling/Runtime/inkling_runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inkling_layer inkling_layer_t;
typedef struct inkling_cuda inkling_cuda_t;

typedef struct {
  /* The function to compile; NULL or "": the module's only function with a
   * body. */
  const char *entry;
  /* "conv-insert", "packed-inserts" or "none"; NULL or "": the pipeline's
   * default. */
  const char *fusion;
  /* Run-time checks of slot and block ids in the kernels (a status buffer
   * the layer owns; a bad id fails the call with its value). */
  int32_t checked;
  /* NULL: the CPU (JIT). Otherwise the kernels are compiled for and loaded
   * on this device. */
  inkling_cuda_t *cuda;
  /* GPU chip, e.g. "sm_90"; NULL or "": the device's. */
  const char *chip;
  /* CPU threads of the layer's loop nests (OpenMP), 0 to 1024: 0, every
   * core (OMP_NUM_THREADS if set); 1, the calling thread alone. Nests of
   * fewer than 64 outer iterations ((token, head) pairs, or (run of 4
   * tokens, head) in the run nests) run on the calling thread either way. */
  int32_t threads;
} inkling_layer_options_t;

/* One argument of the layer's function. Strings and arrays live as long as
 * the layer. */
typedef struct {
  const char *name;    /* unique: "cache", "query_start_loc", "num_computed",
                          "block_table", "slot_mapping", "status", or the
                          role and stream: "input_k", "weights_attn",
                          "bias_mlp", "output_v" */
  const char *role;    /* "cache", ..., "input", "weights", "bias", "output" */
  const char *stream;  /* "k", "v", "attn", "mlp"; NULL for the others */
  const char *element; /* "bf16", "i8", "i32", "i64" */
  int64_t element_bytes;
  int64_t rank;
  const int64_t *shape;   /* rank sizes; -1 where dynamic */
  const int64_t *strides; /* rank strides in elements; -1 where dynamic */
  const char *type;       /* the memref type as written */
} inkling_layer_arg_t;

/* The layout the layer was compiled for (its sconv.bind). */
typedef struct {
  int64_t heads_per_rank; /* H */
  int64_t head_size;      /* D */
  int64_t block_size;     /* N */
  int64_t kernel;         /* W */
  int64_t page_bytes;     /* of the bind: bytes between blocks */
  int64_t stream_offset[4], stream_width[4]; /* k, v, attn, mlp */
} inkling_layer_layout_t;

/* An argument of a call: see the ABI above. */
typedef struct {
  void *data;
  int64_t rank;
  const int64_t *sizes;
  const int64_t *strides;
} inkling_memref_t;

/* Parses `ir` (`ir_length` bytes; `source_name` stands for the file in
 * messages), analyzes and compiles the layer function. */
INKLING_API inkling_status_t
inkling_layer_create(const char *ir, size_t ir_length, const char *source_name,
                     const inkling_layer_options_t *options,
                     inkling_layer_t **out, char *error, size_t error_capacity);
/* The same from an IR file. */
INKLING_API inkling_status_t inkling_layer_create_from_file(
    const char *path, const inkling_layer_options_t *options,
    inkling_layer_t **out, char *error, size_t error_capacity);
INKLING_API void inkling_layer_destroy(inkling_layer_t *layer);

/* The function's name, its arguments (those a call passes) and layout. */
INKLING_API const char *inkling_layer_function(const inkling_layer_t *layer);
INKLING_API int64_t inkling_layer_num_args(const inkling_layer_t *layer);
INKLING_API inkling_status_t inkling_layer_get_arg(const inkling_layer_t *layer,
                                                   int64_t index,
                                                   inkling_layer_arg_t *out);
INKLING_API void inkling_layer_get_layout(const inkling_layer_t *layer,
                                          inkling_layer_layout_t *out);

/* Runs the layer on `args` (inkling_layer_num_args of them). On a GPU layer
 * the launches go to `stream` (a CUstream; NULL: the default stream) and
 * the call returns when they are enqueued (with `checked`: completed). A GPU
 * layer whose function allocates buffers of its own (unfused ops: a conv's
 * output that the next op reads) keeps them on the device between calls, so
 * its calls must not overlap on two streams; a call that needs larger ones
 * synchronizes the device first. */
INKLING_API inkling_status_t inkling_layer_call(inkling_layer_t *layer,
                                                const inkling_memref_t *args,
                                                int64_t num_args, void *stream,
                                                char *error,
                                                size_t error_capacity);

/* The device bytes a GPU layer's own buffers hold now (0 on the CPU and for
 * a layer without them): they grow to what the longest step needed, which an
 * engine counts against its memory budget. */
INKLING_API size_t inkling_layer_scratch_bytes(inkling_layer_t *layer);
/* Frees them after a device synchronize (e.g. after an unusually long
 * step); the next call allocates what it needs again. */
INKLING_API inkling_status_t inkling_layer_release_scratch(
    inkling_layer_t *layer, char *error, size_t error_capacity);

/* A CUDA driver (the runtime's launcher; libcuda.so.1 is loaded at run
 * time). `library`: NULL for libcuda.so.1, or another driver library (the
 * tests' fake driver). Device 0, its primary context (the one CUDA's
 * runtime and PyTorch use). */
INKLING_API inkling_status_t inkling_cuda_open(const char *library,
                                               inkling_cuda_t **out,
                                               char *error,
                                               size_t error_capacity);
/* After every layer compiled for it. */
INKLING_API void inkling_cuda_close(inkling_cuda_t *cuda);
/* "sm_90" etc. */
INKLING_API const char *inkling_cuda_chip(const inkling_cuda_t *cuda);
/* Device memory, for hosts without another allocator. */
INKLING_API inkling_status_t inkling_cuda_alloc(inkling_cuda_t *cuda,
                                                size_t bytes, uint64_t *out,
                                                char *error,
                                                size_t error_capacity);
INKLING_API inkling_status_t inkling_cuda_free(inkling_cuda_t *cuda,
                                               uint64_t address);
INKLING_API inkling_status_t inkling_cuda_copy_to_device(
    inkling_cuda_t *cuda, uint64_t device, const void *host, size_t bytes,
    char *error, size_t error_capacity);
INKLING_API inkling_status_t
inkling_cuda_copy_to_host(inkling_cuda_t *cuda, void *host, uint64_t device,
                          size_t bytes, char *error, size_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* INKLING_C_LAYER_H */
