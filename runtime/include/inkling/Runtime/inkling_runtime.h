/*===- inkling_runtime.h - C API of the Inkling sconv runtime -----*- C -*-===*/
/*
 * Paged block tables for the sconv conv-state cache, for embedding in a
 * serving engine (through ctypes, cffi or a binding).
 *
 * Conventions
 *  - Every fallible call returns an inkling_status_t (the numbers of the C++
 *    StatusCode); INKLING_OK is 0. Nothing aborts on bad input.
 *  - A manager keeps the message of its last failed call:
 *    inkling_manager_last_error(). Calls without a manager take a
 *    caller-owned `error` buffer (may be NULL) and write a NUL-terminated
 *    message, truncated to `error_capacity` bytes.
 *  - A failed call changes nothing (also no output parameter).
 *  - Handles are opaque. Output arrays are owned by the caller.
 *  - Thread-compatible: distinct handles may be used from distinct threads at
 *    once; one handle needs external synchronization. No global state.
 *  - Sequence ids are positive int64 values; ids of finished sequences are
 *    reported as INKLING_NOT_FOUND (a slot's ids repeat only after 2^31 - 1
 *    later sequences in it).
 *  - Step metadata dtypes: query_start_loc and num_computed int32,
 *    block_table int32 (0 = the null block), slot_mapping int64 (-1 = do not
 *    store), block_copies int32 pairs (src, dst).
 */

#ifndef INKLING_RUNTIME_INKLING_RUNTIME_H
#define INKLING_RUNTIME_INKLING_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define INKLING_API __declspec(dllexport)
#else
#define INKLING_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define INKLING_RUNTIME_API_VERSION 2

/* The status codes, one table: X(C name, C++ StatusCode name, value,
   name). The enum below, the C++ StatusCode (Status.h) and the names of
   inkling_status_name (and Python's, read from it) are made from it:
   INKLING_OK 0, INKLING_INVALID_ARGUMENT 1, INKLING_OUT_OF_BLOCKS 2,
   INKLING_NOT_FOUND 3, INKLING_FAILED_PRECONDITION 4, INKLING_OUT_OF_RANGE 5,
   INKLING_UNAVAILABLE 6, INKLING_INTERNAL 7. */
#define INKLING_STATUS_CODES(X)                                                \
  X(OK, Ok, 0, "ok")                                                           \
  X(INVALID_ARGUMENT, InvalidArgument, 1, "invalid argument")                  \
  X(OUT_OF_BLOCKS, OutOfBlocks, 2, "out of blocks")                            \
  X(NOT_FOUND, NotFound, 3, "not found")                                       \
  X(FAILED_PRECONDITION, FailedPrecondition, 4, "failed precondition")         \
  X(OUT_OF_RANGE, OutOfRange, 5, "out of range")                               \
  X(UNAVAILABLE, Unavailable, 6, "unavailable")                                \
  X(INTERNAL, Internal, 7, "internal")

typedef int32_t inkling_status_t;
enum {
#define INKLING_STATUS_ENUMERATOR(c, cxx, value, name) INKLING_##c = value,
  INKLING_STATUS_CODES(INKLING_STATUS_ENUMERATOR)
#undef INKLING_STATUS_ENUMERATOR
};

/* Sequence states (inkling_sequence_info_t.state). */
enum {
  INKLING_SEQUENCE_IDLE = 0,
  INKLING_SEQUENCE_SCHEDULED = 1,
  INKLING_SEQUENCE_PREEMPTED = 2
};

/* Page adjustments (inkling_unified_spec_t.adjustment). */
enum {
  INKLING_PAGE_UNCHANGED = 0,
  INKLING_PAGE_SCALED_BLOCK_SIZE = 1,
  INKLING_PAGE_PADDED = 2
};

typedef struct inkling_manager inkling_manager_t;
typedef struct inkling_step_buffers inkling_step_buffers_t;

/* ---- Layout -------------------------------------------------------------- */

typedef struct {
  int64_t kv_heads;
  int64_t head_dim;
  int64_t hidden;
  int64_t kernel;
  int64_t tp;
  const char *element_type; /* NULL means "bf16", the only supported type */
  /* Block size N, tokens per cache block: the serving engine's choice,
     independent of the kernel (the page unifier may scale it); 0 means the
     kernel. Added in API version 2. */
  int64_t block_size;
} inkling_layout_config_t;

/* Stream order: 0 k, 1 v, 2 attn, 3 mlp. */
typedef struct {
  int64_t heads_per_rank;
  int64_t hidden_per_head;
  int64_t raw_width;
  int64_t head_size;
  int64_t block_size;
  int64_t sliding_window;
  int64_t element_bytes;
  int64_t page_bytes;
  int64_t stream_offset[4];
  int64_t stream_width[4];
} inkling_layout_t;

INKLING_API int32_t inkling_runtime_api_version(void);
/* "ok", "invalid argument", ...; "unknown" for other numbers. */
INKLING_API const char *inkling_status_name(inkling_status_t status);

INKLING_API inkling_status_t inkling_layout_derive(
    const inkling_layout_config_t *config, inkling_layout_t *out, char *error,
    size_t error_capacity);

/* ---- Manager: one group of sconv layers ---------------------------------- */

typedef struct {
  inkling_layout_config_t layout;
  int64_t num_blocks; /* including the null block 0 */
  int64_t lookahead;  /* max rejected speculative tokens per step */
  int32_t enable_prefix_caching;
  uint64_t prefix_seed; /* root of the hash chains; 0 means the default */
} inkling_manager_config_t;

INKLING_API inkling_status_t inkling_manager_create(
    const inkling_manager_config_t *config, inkling_manager_t **out,
    char *error, size_t error_capacity);
INKLING_API void inkling_manager_destroy(inkling_manager_t *manager);
/* The message of the last failed call on `manager` ("" if none); valid until
   the next call on it. */
INKLING_API const char *
inkling_manager_last_error(const inkling_manager_t *manager);

typedef struct {
  int64_t num_blocks;      /* including the null block */
  int64_t num_free_blocks; /* free, cached or not */
  int64_t num_held_blocks;
  int64_t num_cached_blocks; /* entries of the prefix cache */
  int64_t num_sequences;
  int64_t block_size;
  int64_t lookahead;
  int64_t max_blocks_per_sequence; /* during a step: a block_table row's
                                      live entries */
  int64_t max_blocks_between_steps;
} inkling_manager_stats_t;

INKLING_API inkling_status_t
inkling_manager_stats(inkling_manager_t *manager, inkling_manager_stats_t *out);
/* Cross-checks the whole state; INKLING_INTERNAL on a violation. */
INKLING_API inkling_status_t
inkling_manager_check_invariants(inkling_manager_t *manager);

/* ---- Sequences ------------------------------------------------------------
 */

/* start_position: 0, or a prefix hit from inkling_longest_cached_prefix. */
INKLING_API inkling_status_t inkling_add_sequence(inkling_manager_t *manager,
                                                  const int32_t *tokens,
                                                  int64_t num_tokens,
                                                  int64_t start_position,
                                                  int64_t *out_sequence);
INKLING_API inkling_status_t inkling_append_tokens(inkling_manager_t *manager,
                                                   int64_t sequence,
                                                   const int32_t *tokens,
                                                   int64_t num_tokens);
INKLING_API inkling_status_t inkling_schedule(inkling_manager_t *manager,
                                              int64_t sequence,
                                              int64_t num_tokens);
/* Async scheduling: as inkling_schedule, but the step's first token (the
   one the running step samples) may be unknown yet; append it with
   inkling_append_tokens before inkling_build_step (which, like
   inkling_commit, refuses the step until then). */
INKLING_API inkling_status_t inkling_schedule_ahead(inkling_manager_t *manager,
                                                    int64_t sequence,
                                                    int64_t num_tokens);
/* Accepts num_accepted of the scheduled tokens after appending `tokens`
   (accepted drafts, then the sampled token; may be NULL if 0). */
INKLING_API inkling_status_t inkling_commit(inkling_manager_t *manager,
                                            int64_t sequence,
                                            int64_t num_accepted,
                                            const int32_t *tokens,
                                            int64_t num_tokens);
/* Batches: one call per step instead of one per sequence. Each validates
   the whole batch (blocks needed, repeated ids) first and applies all of it
   or nothing. Entry i of a commit batch appends
   tokens[token_offsets[i], token_offsets[i+1]) (token_offsets has count+1
   entries). */
INKLING_API inkling_status_t inkling_schedule_batch(inkling_manager_t *manager,
                                                    const int64_t *sequences,
                                                    const int64_t *num_tokens,
                                                    int64_t count);
INKLING_API inkling_status_t inkling_commit_batch(inkling_manager_t *manager,
                                                  const int64_t *sequences,
                                                  const int64_t *num_accepted,
                                                  const int64_t *token_offsets,
                                                  const int32_t *tokens,
                                                  int64_t count);
INKLING_API inkling_status_t inkling_preempt(inkling_manager_t *manager,
                                             int64_t sequence);
/* Resumes a preempted sequence at 0 or at a prefix hit. With its token ids
   (all of them) the runtime rebuilds the sequence's hash chain; without, a
   hit must lie in the hashes it still keeps (the recent window) and blocks
   whose hashes were dropped are recomputed without being cached again. */
INKLING_API inkling_status_t inkling_resume(inkling_manager_t *manager,
                                            int64_t sequence,
                                            int64_t start_position);
INKLING_API inkling_status_t inkling_resume_with_tokens(
    inkling_manager_t *manager, int64_t sequence, const int32_t *tokens,
    int64_t num_tokens, int64_t start_position);
INKLING_API inkling_status_t inkling_finish(inkling_manager_t *manager,
                                            int64_t sequence);
INKLING_API inkling_status_t inkling_fork(inkling_manager_t *manager,
                                          int64_t parent, int64_t *out_child);

/* Largest p <= min(max_length, num_tokens), a multiple of the block size,
   at which a new sequence with these tokens can start (0: none). */
INKLING_API inkling_status_t inkling_longest_cached_prefix(
    inkling_manager_t *manager, const int32_t *tokens, int64_t num_tokens,
    int64_t max_length, int64_t *out_length);
/* Admission (vLLM's watermark): a sequence of num_tokens known tokens that
   would start at start_position (0 or its expected prefix hit) is admitted
   when free - reserved - needed >= watermark_blocks: needed, the blocks it
   takes by the end of its first step; reserved, what the live sequences'
   next steps may still allocate. Changes nothing. */
typedef struct {
  int32_t admit;
  int64_t needed_blocks;
  int64_t reserved_blocks;
  int64_t free_blocks;
} inkling_admission_t;
INKLING_API inkling_status_t inkling_admission(inkling_manager_t *manager,
                                               int64_t num_tokens,
                                               int64_t start_position,
                                               int64_t watermark_blocks,
                                               inkling_admission_t *out);
/* A step's lookups in one call: out_lengths[i] is
   inkling_longest_cached_prefix of tokens[token_offsets[i],
   token_offsets[i+1]) with max_lengths[i] (token_offsets has count+1
   entries). Validates every entry first; on error nothing is written. */
INKLING_API inkling_status_t inkling_longest_cached_prefix_batch(
    inkling_manager_t *manager, const int32_t *tokens,
    const int64_t *token_offsets, const int64_t *max_lengths, int64_t count,
    int64_t *out_lengths);
/* Prefix policy (steps scheduled from now on): "window", "snapshots" (the
   default) or "every-block"; snapshot_every (S) in [1, 2^20] blocks. */
INKLING_API inkling_status_t inkling_manager_set_prefix_policy(
    inkling_manager_t *manager, const char *policy, int64_t snapshot_every);
/* The EAGLE/MTP hit rule (vLLM's use_eagle), for lookups from now on: a hit
   drops its last matched block (nonzero drop) so the drafter recomputes the
   block before the start; 0 restores the plain rule. */
INKLING_API inkling_status_t inkling_manager_set_drop_last_matched_block(
    inkling_manager_t *manager, int32_t drop);
/* Same-step hits (vLLM's behaviour; docs/runtime.md, "Same-step hits"), for
   steps scheduled from now on (nonzero enable): a schedule registers the
   blocks its step fills with known tokens, and that every valid commit
   accepts, as pending cache entries, so a sequence looked up and added
   later in the same step can start at them. A step holding such a reader
   and its writer must run every insert of a cache before every conv of it
   (inkling_step_buffers_ordered_inserts_required); a reader built without
   its writer, whose step was not built before, is refused
   (INKLING_FAILED_PRECONDITION). A writer that drops its step (preempt,
   finish) withdraws its entries and preempts every reader that has not
   committed since: see inkling_take_invalidated_readers. */
INKLING_API inkling_status_t
inkling_manager_set_same_step_hits(inkling_manager_t *manager, int32_t enable);
/* The readers preempted with their writer since the last call (they must
   be resumed: recompute or another hit), into out[0, *out_count); the list
   is then empty. INKLING_OUT_OF_RANGE (nothing written) when more than
   `capacity` are waiting: the number of live sequences always suffices. */
INKLING_API inkling_status_t
inkling_take_invalidated_readers(inkling_manager_t *manager, int64_t *out,
                                 int64_t capacity, int64_t *out_count);
/* inkling_add_sequence with the request's prefix-caching inputs: cache
   points (strictly increasing positions in [1, num_tokens]; prefill
   snapshots the block boundary at or before each) and extra keys (at most
   4096 bytes: cache salt, adapter id, multimodal hashes; they seed the hash
   chain, so requests with other keys never share a block). */
INKLING_API inkling_status_t inkling_add_sequence_with_keys(
    inkling_manager_t *manager, const int32_t *tokens, int64_t num_tokens,
    int64_t start_position, const int64_t *cache_points,
    int64_t num_cache_points, const uint8_t *extra_keys,
    int64_t num_extra_key_bytes, int64_t *out_sequence);
/* inkling_longest_cached_prefix under a request's extra keys. */
INKLING_API inkling_status_t inkling_longest_cached_prefix_with_keys(
    inkling_manager_t *manager, const int32_t *tokens, int64_t num_tokens,
    int64_t max_length, const uint8_t *extra_keys, int64_t num_extra_key_bytes,
    int64_t *out_length);
/* The largest resume point among the block hashes a sequence still keeps
   (its recent window); inkling_longest_cached_prefix with its token ids
   searches the whole prefix. */
INKLING_API inkling_status_t inkling_sequence_longest_cached_prefix(
    inkling_manager_t *manager, int64_t sequence, int64_t max_length,
    int64_t *out_length);

typedef struct {
  int32_t state; /* INKLING_SEQUENCE_* */
  int64_t num_computed;
  int64_t num_tokens;
  int64_t num_scheduled;
  int64_t num_blocks; /* held blocks (window) */
} inkling_sequence_info_t;

INKLING_API inkling_status_t inkling_sequence_info(
    inkling_manager_t *manager, int64_t sequence, inkling_sequence_info_t *out);

/* ---- Steps ------------------------------------------------------------------
 */

/* Caller-owned buffers; they must outlive the step buffers handle, and only
   the runtime writes them while it exists (it updates them in place). */
typedef struct {
  int32_t *query_start_loc; /* [max_rows + 1] */
  int32_t *num_computed;    /* [max_rows] */
  int32_t *block_table;     /* [max_rows * num_cols], row-major */
  int64_t *slot_mapping;    /* [max_tokens] */
  int32_t *block_copies;    /* [max_copies * 2]; may be NULL if 0 */
  int64_t max_rows;
  int64_t num_cols;
  int64_t max_tokens;
  int64_t max_copies;
  /* [max_tokens], or NULL: the sequence (row) of each token, for the
     per-token operand of sconv.step (token_seq); padding tokens get 0. */
  int32_t *token_seq;
} inkling_step_buffer_spec_t;

typedef struct {
  int64_t num_sequences;
  int64_t num_rows;
  int64_t num_tokens;
  int64_t num_padded_tokens;
  int64_t num_copies;
} inkling_step_info_t;

INKLING_API inkling_status_t inkling_step_buffers_create(
    inkling_manager_t *manager, const inkling_step_buffer_spec_t *spec,
    inkling_step_buffers_t **out);
INKLING_API void inkling_step_buffers_destroy(inkling_step_buffers_t *buffers);

/* Writes the metadata of the scheduled sequences `sequences` (row b =
   sequences[b]). num_rows >= num_sequences pads the batch (0: none);
   num_padded_tokens >= the step's tokens pads slot_mapping with -1 (0:
   none). Run the block copies (whole pages, every layer of the group)
   before the step's kernels. */
INKLING_API inkling_status_t inkling_build_step(
    inkling_manager_t *manager, inkling_step_buffers_t *buffers,
    const int64_t *sequences, int64_t num_sequences, int64_t num_rows,
    int64_t num_padded_tokens, inkling_step_info_t *out);
/* 1 when the last successful inkling_build_step into `buffers` holds a
   same-step hit (a row starts from blocks another row of the step writes):
   the engine must run every insert of a cache before every conv of that
   cache (the unfused order); 0 otherwise, and for NULL. */
INKLING_API int32_t inkling_step_buffers_ordered_inserts_required(
    const inkling_step_buffers_t *buffers);

/* ---- Page-size unification
 * ---------------------------------------------------- */

typedef struct {
  const char *name;
  int64_t block_size;
  int64_t page_bytes;
  int32_t reads_through_block_stride;
  int32_t fixed_block_size;
  int64_t stride_alignment; /* bytes; a padded stride is a multiple */
} inkling_cache_spec_t;

typedef struct {
  int64_t block_size; /* after scaling */
  int64_t page_bytes; /* bytes used per block */
  int64_t block_stride_bytes;
  int32_t adjustment; /* INKLING_PAGE_* */
  int64_t scale;
} inkling_unified_spec_t;

/* The sconv cache of a layout (`name` must outlive the spec's use). */
INKLING_API inkling_status_t inkling_cache_spec_sconv(
    const inkling_layout_config_t *config, const char *name,
    inkling_cache_spec_t *out, char *error, size_t error_capacity);
INKLING_API inkling_status_t inkling_cache_spec_attention(
    const char *name, int64_t block_size, int64_t num_kv_heads,
    int64_t head_size, int64_t dtype_bytes, int32_t reads_through_block_stride,
    int64_t tensors_per_page, inkling_cache_spec_t *out, char *error,
    size_t error_capacity);
/* out[i] for specs[i]; out_page_bytes: the unified page size. */
INKLING_API inkling_status_t
inkling_unify_page_sizes(const inkling_cache_spec_t *specs, int64_t num_specs,
                         inkling_unified_spec_t *out, int64_t *out_page_bytes,
                         char *error, size_t error_capacity);

/* ---- Cache plan: a model's layers by name, blocks from a byte budget -----
 * Register every cache layer under a unique, non-empty name, then plan a
 * byte budget: one unified page (inkling_unify_page_sizes), num_blocks
 * (block 0 the null block) and per layer its view of one allocation per
 * plan tensor. A successful plan freezes the registry (no more layers; it
 * may be planned again). Failed calls change nothing and keep their message
 * in inkling_cache_registry_last_error(). Since API version 2. */

typedef struct inkling_cache_registry inkling_cache_registry_t;
typedef struct inkling_cache_plan inkling_cache_plan_t;

enum { INKLING_CACHE_LAYER_SCONV = 0, INKLING_CACHE_LAYER_ATTENTION = 1 };
enum { INKLING_CACHE_PER_LAYER = 0, INKLING_CACHE_CROSS_LAYER = 1 };

typedef struct {
  int64_t block_size;
  int64_t num_kv_heads;
  int64_t head_size;
  int64_t dtype_bytes;
  int32_t reads_through_block_stride;
  int64_t tensors_per_page; /* 2: K and V; 1: MLA */
} inkling_attention_layer_t;

typedef struct {
  int32_t layout; /* INKLING_CACHE_PER_LAYER or INKLING_CACHE_CROSS_LAYER */
  int64_t budget_bytes;
  int64_t page_bytes;      /* the unified page */
  int64_t bytes_per_block; /* num_layers * page_bytes */
  int64_t num_blocks;      /* including the null block 0 */
  int64_t num_tensors;
  int64_t num_layers;
} inkling_cache_plan_info_t;

/* Sconv views are [num_blocks, H, N, D] (rank 4); attention views
   [num_blocks, tensors_per_page, block_size, heads, head_size] (rank 5).
   Strides in elements; strides[0] is the block stride. */
typedef struct {
  const char *name; /* owned by the plan */
  int32_t kind;     /* INKLING_CACHE_LAYER_* */
  int64_t tensor;
  int64_t byte_offset;
  int64_t element_bytes;
  int64_t block_size; /* after unification */
  int64_t page_bytes; /* bytes a block of this layer uses */
  int64_t block_stride_bytes;
  int32_t adjustment; /* INKLING_PAGE_* */
  int64_t scale;
  int32_t rank;
  int64_t shape[5];
  int64_t strides[5];
} inkling_layer_view_t;

INKLING_API inkling_status_t
inkling_cache_registry_create(inkling_cache_registry_t **out);
INKLING_API void
inkling_cache_registry_destroy(inkling_cache_registry_t *registry);
INKLING_API const char *
inkling_cache_registry_last_error(const inkling_cache_registry_t *registry);
/* page_bytes: 0, or the page_bytes of the layer's sconv.bind when the IR
   was compiled for a padded page (its block size is then pinned). */
INKLING_API inkling_status_t inkling_cache_registry_add_sconv(
    inkling_cache_registry_t *registry, const char *name,
    const inkling_layout_config_t *config, int64_t page_bytes);
INKLING_API inkling_status_t inkling_cache_registry_add_attention(
    inkling_cache_registry_t *registry, const char *name,
    const inkling_attention_layer_t *spec);
INKLING_API inkling_status_t inkling_cache_registry_plan(
    inkling_cache_registry_t *registry, int64_t budget_bytes, int32_t layout,
    inkling_cache_plan_t **out);
INKLING_API void inkling_cache_plan_destroy(inkling_cache_plan_t *plan);
INKLING_API inkling_status_t inkling_cache_plan_info(
    const inkling_cache_plan_t *plan, inkling_cache_plan_info_t *out);
/* INKLING_OUT_OF_RANGE for an index outside [0, num_tensors). */
INKLING_API inkling_status_t inkling_cache_plan_tensor_bytes(
    const inkling_cache_plan_t *plan, int64_t tensor, int64_t *out);
/* INKLING_OUT_OF_RANGE for an index outside [0, num_layers). */
INKLING_API inkling_status_t inkling_cache_plan_layer(
    const inkling_cache_plan_t *plan, int64_t layer, inkling_layer_view_t *out);

/* ---- Tensor parallelism
 * --------------------------------------------------------- */

typedef struct {
  int64_t rank;
  int64_t tp;
  int64_t head_begin;
  int64_t head_end;
  int64_t hidden_begin;
  int64_t hidden_end;
  inkling_layout_t layout;
} inkling_rank_layout_t;

/* Fills out[0, config->tp); capacity must be >= tp. */
INKLING_API inkling_status_t inkling_rank_layouts(
    const inkling_layout_config_t *config, inkling_rank_layout_t *out,
    int64_t capacity, char *error, size_t error_capacity);
/* Checks that `ranks` tile the unsharded layout of `config` exactly. */
INKLING_API inkling_status_t inkling_check_rank_tiling(
    const inkling_layout_config_t *config, const inkling_rank_layout_t *ranks,
    int64_t num_ranks, char *error, size_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* INKLING_RUNTIME_INKLING_RUNTIME_H */
