//===- CApi.cpp - C API of the Inkling sconv runtime ----------------------===//
//
// Thin wrappers: convert C structs, call the C++ API, turn Status into a
// code plus a message. No C++ exception crosses the boundary (allocation
// failures become INKLING_INTERNAL).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/inkling_runtime.h"

#include "inkling/Runtime/CachePlan.h"
#include "inkling/Runtime/PageUnification.h"
#include "inkling/Runtime/SequenceManager.h"
#include "inkling/Runtime/TensorParallel.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>

using namespace inkling;

struct inkling_manager {
  std::unique_ptr<SequenceManager> manager;
  std::string lastError;
};

struct inkling_cache_registry {
  CacheRegistry registry;
  std::string lastError;
};

struct inkling_cache_plan {
  CachePlan plan;
};

struct inkling_step_buffers {
  inkling_manager *owner = nullptr;
  std::unique_ptr<StepBuffers> buffers;
};

namespace {

static_assert(INKLING_OK == int(StatusCode::Ok) &&
                  INKLING_INVALID_ARGUMENT ==
                      int(StatusCode::InvalidArgument) &&
                  INKLING_OUT_OF_BLOCKS == int(StatusCode::OutOfBlocks) &&
                  INKLING_NOT_FOUND == int(StatusCode::NotFound) &&
                  INKLING_FAILED_PRECONDITION ==
                      int(StatusCode::FailedPrecondition) &&
                  INKLING_OUT_OF_RANGE == int(StatusCode::OutOfRange) &&
                  INKLING_UNAVAILABLE == int(StatusCode::Unavailable) &&
                  INKLING_INTERNAL == int(StatusCode::Internal),
              "C status codes must equal StatusCode");

void writeError(char *error, size_t capacity, const std::string &message) {
  if (!error || capacity == 0)
    return;
  size_t length = std::min(message.size(), capacity - 1);
  std::memcpy(error, message.data(), length);
  error[length] = '\0';
}

/// Reports `status` into a caller buffer; returns its code.
inkling_status_t report(const Status &status, char *error, size_t capacity) {
  writeError(error, capacity, status.isOk() ? "" : status.message());
  return static_cast<inkling_status_t>(status.code());
}

/// Reports `status` into a handle's last error; returns its code. (Outside
/// every try: a message that cannot be copied leaves the error empty.)
template <typename Handle>
inkling_status_t report(Handle *handle, const Status &status) {
  if (!status.isOk()) {
    try {
      handle->lastError = status.message();
    } catch (...) {
      handle->lastError.clear();
    }
  }
  return static_cast<inkling_status_t>(status.code());
}

/// Runs `body` (returning a Status): no C++ exception crosses the boundary.
template <typename Body> Status catching(Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return internalError("out of memory");
  } catch (...) {
    return internalError("unexpected C++ exception");
  }
}

/// Runs `body` on a valid manager; a failure's message is its last error.
template <typename Body>
inkling_status_t withManager(inkling_manager *m, Body &&body) {
  if (!m || !m->manager)
    return INKLING_INVALID_ARGUMENT;
  return report(m, catching([&] { return body(*m->manager); }));
}

/// Runs `body` on a valid registry; a failure's message is its last error.
template <typename Body>
inkling_status_t withRegistry(inkling_cache_registry *r, Body &&body) {
  if (!r)
    return INKLING_INVALID_ARGUMENT;
  return report(r, catching([&] { return body(r->registry); }));
}

/// Runs `body`; a failure's message goes to the caller's buffer.
template <typename Body>
inkling_status_t guarded(char *error, size_t capacity, Body &&body) {
  return report(catching(body), error, capacity);
}

Status nullArgument(const char *name) {
  return invalidArgument(std::string(name) + " is NULL");
}

/// Stores a value into a C output (`*out` left alone on an error).
template <typename T, typename Out> Status store(StatusOr<T> value, Out *out) {
  if (!value)
    return value.status();
  *out = *std::move(value);
  return Status::ok();
}

StatusOr<LayoutConfig> toConfig(const inkling_layout_config_t *config) {
  if (!config)
    return nullArgument("layout config");
  LayoutConfig result;
  result.kvHeads = config->kv_heads;
  result.headDim = config->head_dim;
  result.hidden = config->hidden;
  result.kernel = config->kernel;
  result.tp = config->tp;
  result.blockSize = config->block_size;
  if (config->element_type)
    result.elementType = config->element_type;
  return result;
}

/// The layout of a C config: converted and derived (the runtime's checks).
StatusOr<Layout> toLayout(const inkling_layout_config_t *config) {
  StatusOr<LayoutConfig> c = toConfig(config);
  if (!c)
    return c.status();
  return Layout::derive(*c);
}

void toC(const Layout &layout, inkling_layout_t &out) {
  out.heads_per_rank = layout.headsPerRank;
  out.hidden_per_head = layout.hiddenPerHead;
  out.raw_width = layout.rawWidth;
  out.head_size = layout.headSize;
  out.block_size = layout.blockSize;
  out.sliding_window = layout.slidingWindow;
  out.element_bytes = layout.elementBytes;
  out.page_bytes = layout.pageBytes();
  for (int s = 0; s < kNumStreams; ++s) {
    out.stream_offset[s] = layout.streams[s].offset;
    out.stream_width[s] = layout.streams[s].width;
  }
}

/// The C++ layout a caller's C struct describes (derived, then overwritten
/// with the struct's values, so a doctored struct is checked as given).
Layout fromC(const LayoutConfig &config, const inkling_layout_t &in) {
  Layout layout;
  layout.config = config;
  layout.headsPerRank = in.heads_per_rank;
  layout.hiddenPerHead = in.hidden_per_head;
  layout.rawWidth = in.raw_width;
  layout.headSize = in.head_size;
  layout.blockSize = in.block_size;
  layout.slidingWindow = in.sliding_window;
  layout.elementBytes = in.element_bytes;
  for (int s = 0; s < kNumStreams; ++s)
    layout.streams[s] = StreamRange{in.stream_offset[s], in.stream_width[s]};
  return layout;
}

void toC(const CacheSpec &spec, const char *name, inkling_cache_spec_t &out) {
  out.name = name;
  out.block_size = spec.blockSize;
  out.page_bytes = spec.pageBytes;
  out.reads_through_block_stride = spec.readsThroughBlockStride;
  out.fixed_block_size = spec.fixedBlockSize;
  out.stride_alignment = spec.strideAlignment;
}

CacheSpec fromC(const inkling_cache_spec_t &in) {
  CacheSpec spec;
  spec.name = in.name ? in.name : "";
  spec.blockSize = in.block_size;
  spec.pageBytes = in.page_bytes;
  spec.readsThroughBlockStride = in.reads_through_block_stride;
  spec.fixedBlockSize = in.fixed_block_size;
  spec.strideAlignment = in.stride_alignment;
  return spec;
}

StepBufferSpec fromC(const inkling_step_buffer_spec_t &in) {
  StepBufferSpec spec;
  spec.queryStartLoc = in.query_start_loc;
  spec.numComputed = in.num_computed;
  spec.blockTable = in.block_table;
  spec.slotMapping = in.slot_mapping;
  spec.blockCopies = in.block_copies;
  spec.maxRows = in.max_rows;
  spec.numCols = in.num_cols;
  spec.maxTokens = in.max_tokens;
  spec.maxCopies = in.max_copies;
  spec.tokenSeq = in.token_seq;
  return spec;
}

AttentionLayerSpec fromC(const inkling_attention_layer_t &in) {
  AttentionLayerSpec spec;
  spec.blockSize = in.block_size;
  spec.numKvHeads = in.num_kv_heads;
  spec.headSize = in.head_size;
  spec.dtypeBytes = in.dtype_bytes;
  spec.readsThroughBlockStride = in.reads_through_block_stride != 0;
  spec.tensorsPerPage = in.tensors_per_page;
  return spec;
}

} // namespace

extern "C" {

int32_t inkling_runtime_api_version(void) {
  return INKLING_RUNTIME_API_VERSION;
}

const char *inkling_status_name(inkling_status_t status) {
  if (status < INKLING_OK || status > INKLING_INTERNAL)
    return "unknown";
  return statusCodeName(static_cast<StatusCode>(status));
}

inkling_status_t inkling_layout_derive(const inkling_layout_config_t *config,
                                       inkling_layout_t *out, char *error,
                                       size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    StatusOr<Layout> layout = toLayout(config);
    if (!layout)
      return layout.status();
    if (!out)
      return nullArgument("output layout");
    toC(*layout, *out);
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// Manager
//===----------------------------------------------------------------------===//

inkling_status_t inkling_manager_create(const inkling_manager_config_t *config,
                                        inkling_manager_t **out, char *error,
                                        size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    if (!config)
      return nullArgument("manager config");
    if (!out)
      return nullArgument("output manager pointer");
    StatusOr<Layout> layout = toLayout(&config->layout);
    if (!layout)
      return layout.status();
    SequenceManagerConfig managerConfig;
    managerConfig.layout = *layout;
    managerConfig.numBlocks = config->num_blocks;
    managerConfig.lookahead = config->lookahead;
    managerConfig.enablePrefixCaching = config->enable_prefix_caching != 0;
    if (config->prefix_seed != 0)
      managerConfig.prefixSeed = config->prefix_seed;
    StatusOr<std::unique_ptr<SequenceManager>> manager =
        SequenceManager::create(managerConfig);
    if (!manager)
      return manager.status();
    auto handle = std::make_unique<inkling_manager>();
    handle->manager = std::move(*manager);
    *out = handle.release();
    return Status::ok();
  });
}

void inkling_manager_destroy(inkling_manager_t *manager) { delete manager; }

const char *inkling_manager_last_error(const inkling_manager_t *manager) {
  return manager ? manager->lastError.c_str() : "manager is NULL";
}

inkling_status_t inkling_manager_stats(inkling_manager_t *manager,
                                       inkling_manager_stats_t *out) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out)
      return nullArgument("output stats");
    out->num_blocks = m.pool().numBlocks();
    out->num_free_blocks = m.pool().numFreeBlocks();
    out->num_held_blocks = m.pool().numHeldBlocks();
    out->num_cached_blocks = m.prefixCache().size();
    out->num_sequences = m.numSequences();
    out->block_size = m.blockSize();
    out->lookahead = m.lookahead();
    out->max_blocks_per_sequence = m.maxBlocksPerSequence();
    out->max_blocks_between_steps = m.maxBlocksBetweenSteps();
    return Status::ok();
  });
}

inkling_status_t inkling_manager_check_invariants(inkling_manager_t *manager) {
  return withManager(manager,
                     [&](SequenceManager &m) { return m.checkInvariants(); });
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

inkling_status_t inkling_add_sequence(inkling_manager_t *manager,
                                      const int32_t *tokens, int64_t num_tokens,
                                      int64_t start_position,
                                      int64_t *out_sequence) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_sequence)
      return nullArgument("output sequence id");
    return store(m.addSequence(tokens, num_tokens, start_position),
                 out_sequence);
  });
}

inkling_status_t inkling_append_tokens(inkling_manager_t *manager,
                                       int64_t sequence, const int32_t *tokens,
                                       int64_t num_tokens) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.appendTokens(sequence, tokens, num_tokens);
  });
}

inkling_status_t inkling_schedule(inkling_manager_t *manager, int64_t sequence,
                                  int64_t num_tokens) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.schedule(sequence, num_tokens);
  });
}

inkling_status_t inkling_schedule_ahead(inkling_manager_t *manager,
                                        int64_t sequence, int64_t num_tokens) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.scheduleAhead(sequence, num_tokens);
  });
}

inkling_status_t inkling_commit(inkling_manager_t *manager, int64_t sequence,
                                int64_t num_accepted, const int32_t *tokens,
                                int64_t num_tokens) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.commit(sequence, num_accepted, tokens, num_tokens);
  });
}

inkling_status_t inkling_schedule_batch(inkling_manager_t *manager,
                                        const int64_t *sequences,
                                        const int64_t *num_tokens,
                                        int64_t count) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.scheduleBatch(sequences, num_tokens, count);
  });
}

inkling_status_t inkling_commit_batch(inkling_manager_t *manager,
                                      const int64_t *sequences,
                                      const int64_t *num_accepted,
                                      const int64_t *token_offsets,
                                      const int32_t *tokens, int64_t count) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.commitBatch(sequences, num_accepted, token_offsets, tokens, count);
  });
}

inkling_status_t inkling_preempt(inkling_manager_t *manager, int64_t sequence) {
  return withManager(manager,
                     [&](SequenceManager &m) { return m.preempt(sequence); });
}

inkling_status_t inkling_resume(inkling_manager_t *manager, int64_t sequence,
                                int64_t start_position) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.resume(sequence, start_position);
  });
}

inkling_status_t inkling_resume_with_tokens(inkling_manager_t *manager,
                                            int64_t sequence,
                                            const int32_t *tokens,
                                            int64_t num_tokens,
                                            int64_t start_position) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.resume(sequence, tokens, num_tokens, start_position);
  });
}

inkling_status_t inkling_finish(inkling_manager_t *manager, int64_t sequence) {
  return withManager(manager,
                     [&](SequenceManager &m) { return m.finish(sequence); });
}

inkling_status_t inkling_fork(inkling_manager_t *manager, int64_t parent,
                              int64_t *out_child) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_child)
      return nullArgument("output child id");
    return store(m.fork(parent), out_child);
  });
}

inkling_status_t inkling_manager_set_prefix_policy(inkling_manager_t *manager,
                                                   const char *policy,
                                                   int64_t snapshot_every) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!policy)
      return nullArgument("prefix policy name");
    StatusOr<PrefixPolicy> parsed = parsePrefixPolicy(policy);
    if (!parsed)
      return parsed.status();
    return m.setPrefixPolicy(*parsed, snapshot_every);
  });
}

inkling_status_t inkling_add_sequence_with_keys(
    inkling_manager_t *manager, const int32_t *tokens, int64_t num_tokens,
    int64_t start_position, const int64_t *cache_points,
    int64_t num_cache_points, const uint8_t *extra_keys,
    int64_t num_extra_key_bytes, int64_t *out_sequence) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_sequence)
      return nullArgument("output sequence id");
    return store(m.addSequence(tokens, num_tokens, start_position, cache_points,
                               num_cache_points, extra_keys,
                               num_extra_key_bytes),
                 out_sequence);
  });
}

inkling_status_t inkling_longest_cached_prefix_with_keys(
    inkling_manager_t *manager, const int32_t *tokens, int64_t num_tokens,
    int64_t max_length, const uint8_t *extra_keys, int64_t num_extra_key_bytes,
    int64_t *out_length) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_length)
      return nullArgument("output length");
    return store(m.longestCachedPrefix(tokens, num_tokens, max_length,
                                       extra_keys, num_extra_key_bytes),
                 out_length);
  });
}

inkling_status_t inkling_longest_cached_prefix(inkling_manager_t *manager,
                                               const int32_t *tokens,
                                               int64_t num_tokens,
                                               int64_t max_length,
                                               int64_t *out_length) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_length)
      return nullArgument("output length");
    return store(m.longestCachedPrefix(tokens, num_tokens, max_length),
                 out_length);
  });
}

inkling_status_t
inkling_sequence_longest_cached_prefix(inkling_manager_t *manager,
                                       int64_t sequence, int64_t max_length,
                                       int64_t *out_length) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_length)
      return nullArgument("output length");
    return store(m.longestCachedPrefix(sequence, max_length), out_length);
  });
}

inkling_status_t inkling_sequence_info(inkling_manager_t *manager,
                                       int64_t sequence,
                                       inkling_sequence_info_t *out) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out)
      return nullArgument("output sequence info");
    StatusOr<SequenceInfo> info = m.sequenceInfo(sequence);
    if (!info)
      return info.status();
    out->state = static_cast<int32_t>(info->state);
    out->num_computed = info->numComputed;
    out->num_tokens = info->numTokens;
    out->num_scheduled = info->numScheduled;
    out->num_blocks = static_cast<int64_t>(info->blocks.size());
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

inkling_status_t
inkling_step_buffers_create(inkling_manager_t *manager,
                            const inkling_step_buffer_spec_t *spec,
                            inkling_step_buffers_t **out) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!spec)
      return nullArgument("step buffer spec");
    if (!out)
      return nullArgument("output step buffers pointer");
    StatusOr<StepBuffers> buffers = m.bindStepBuffers(fromC(*spec));
    if (!buffers)
      return buffers.status();
    auto handle = std::make_unique<inkling_step_buffers>();
    handle->owner = manager;
    handle->buffers = std::make_unique<StepBuffers>(std::move(*buffers));
    *out = handle.release();
    return Status::ok();
  });
}

void inkling_step_buffers_destroy(inkling_step_buffers_t *buffers) {
  delete buffers;
}

inkling_status_t inkling_build_step(inkling_manager_t *manager,
                                    inkling_step_buffers_t *buffers,
                                    const int64_t *sequences,
                                    int64_t num_sequences, int64_t num_rows,
                                    int64_t num_padded_tokens,
                                    inkling_step_info_t *out) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!buffers)
      return nullArgument("step buffers");
    if (buffers->owner != manager)
      return invalidArgument("step buffers were created for another manager");
    if (num_rows < 0 || num_padded_tokens < 0)
      return invalidArgument(
          "padded rows (" + std::to_string(num_rows) + ") and tokens (" +
          std::to_string(num_padded_tokens) + ") must be >= 0");
    StepShape shape;
    shape.numRows = num_rows;
    shape.numTokens = num_padded_tokens;
    StatusOr<StepInfo> info =
        m.buildStep(sequences, num_sequences, shape, *buffers->buffers);
    if (!info)
      return info.status();
    if (out) {
      out->num_sequences = info->numSequences;
      out->num_rows = info->numRows;
      out->num_tokens = info->numTokens;
      out->num_padded_tokens = info->numPaddedTokens;
      out->num_copies = info->numCopies;
    }
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// Page-size unification and tensor parallelism
//===----------------------------------------------------------------------===//

inkling_status_t inkling_cache_spec_sconv(const inkling_layout_config_t *config,
                                          const char *name,
                                          inkling_cache_spec_t *out,
                                          char *error, size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    StatusOr<Layout> layout = toLayout(config);
    if (!layout)
      return layout.status();
    if (!out)
      return nullArgument("output cache spec");
    toC(CacheSpec::sconv(name ? name : "", *layout), name, *out);
    return Status::ok();
  });
}

inkling_status_t inkling_cache_spec_attention(
    const char *name, int64_t block_size, int64_t num_kv_heads,
    int64_t head_size, int64_t dtype_bytes, int32_t reads_through_block_stride,
    int64_t tensors_per_page, inkling_cache_spec_t *out, char *error,
    size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    if (!out)
      return nullArgument("output cache spec");
    StatusOr<CacheSpec> spec = CacheSpec::attention(
        name ? name : "", block_size, num_kv_heads, head_size, dtype_bytes,
        reads_through_block_stride != 0, tensors_per_page);
    if (!spec)
      return spec.status();
    toC(*spec, name, *out);
    return Status::ok();
  });
}

inkling_status_t inkling_unify_page_sizes(const inkling_cache_spec_t *specs,
                                          int64_t num_specs,
                                          inkling_unified_spec_t *out,
                                          int64_t *out_page_bytes, char *error,
                                          size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    if (num_specs < 0 || (num_specs > 0 && (!specs || !out)))
      return invalidArgument("spec and output arrays of " +
                             std::to_string(num_specs) +
                             " entries must be non-NULL");
    std::vector<CacheSpec> cpp;
    for (int64_t i = 0; i < num_specs; ++i)
      cpp.push_back(fromC(specs[i]));
    StatusOr<UnifiedPages> unified = unifyPageSizes(cpp);
    if (!unified)
      return unified.status();
    for (int64_t i = 0; i < num_specs; ++i) {
      const UnifiedCacheSpec &spec = unified->specs[i];
      out[i].block_size = spec.blockSize;
      out[i].page_bytes = spec.pageBytes;
      out[i].block_stride_bytes = spec.blockStrideBytes;
      out[i].adjustment = static_cast<int32_t>(spec.adjustment);
      out[i].scale = spec.scale;
    }
    if (out_page_bytes)
      *out_page_bytes = unified->pageBytes;
    return Status::ok();
  });
}

inkling_status_t inkling_rank_layouts(const inkling_layout_config_t *config,
                                      inkling_rank_layout_t *out,
                                      int64_t capacity, char *error,
                                      size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    StatusOr<LayoutConfig> c = toConfig(config);
    if (!c)
      return c.status();
    StatusOr<std::vector<RankLayout>> ranks = rankLayouts(*c);
    if (!ranks)
      return ranks.status();
    if (!out || capacity < static_cast<int64_t>(ranks->size()))
      return invalidArgument("output array of " + std::to_string(capacity) +
                             " entries cannot hold tp = " +
                             std::to_string(ranks->size()) + " ranks");
    for (size_t r = 0; r < ranks->size(); ++r) {
      const RankLayout &rank = (*ranks)[r];
      out[r].rank = rank.rank;
      out[r].tp = c->tp;
      out[r].head_begin = rank.headBegin;
      out[r].head_end = rank.headEnd;
      out[r].hidden_begin = rank.hiddenBegin;
      out[r].hidden_end = rank.hiddenEnd;
      toC(rank.layout, out[r].layout);
    }
    return Status::ok();
  });
}

inkling_status_t
inkling_check_rank_tiling(const inkling_layout_config_t *config,
                          const inkling_rank_layout_t *ranks, int64_t num_ranks,
                          char *error, size_t error_capacity) {
  return guarded(error, error_capacity, [&]() -> Status {
    StatusOr<LayoutConfig> c = toConfig(config);
    if (!c)
      return c.status();
    if (num_ranks < 0 || (num_ranks > 0 && !ranks))
      return invalidArgument("rank array of " + std::to_string(num_ranks) +
                             " entries must be non-NULL");
    std::vector<RankLayout> cpp(num_ranks);
    for (int64_t r = 0; r < num_ranks; ++r) {
      LayoutConfig rankConfig = *c;
      rankConfig.tp = ranks[r].tp;
      cpp[r].rank = ranks[r].rank;
      cpp[r].layout = fromC(rankConfig, ranks[r].layout);
      cpp[r].headBegin = ranks[r].head_begin;
      cpp[r].headEnd = ranks[r].head_end;
      cpp[r].hiddenBegin = ranks[r].hidden_begin;
      cpp[r].hiddenEnd = ranks[r].hidden_end;
    }
    return checkRankTiling(*c, cpp);
  });
}

inkling_status_t inkling_cache_registry_create(inkling_cache_registry_t **out) {
  if (!out)
    return INKLING_INVALID_ARGUMENT;
  auto *registry = new (std::nothrow) inkling_cache_registry;
  if (!registry)
    return INKLING_INTERNAL;
  *out = registry;
  return INKLING_OK;
}

void inkling_cache_registry_destroy(inkling_cache_registry_t *registry) {
  delete registry;
}

const char *
inkling_cache_registry_last_error(const inkling_cache_registry_t *registry) {
  return registry ? registry->lastError.c_str() : "registry is NULL";
}

inkling_status_t inkling_cache_registry_add_sconv(
    inkling_cache_registry_t *registry, const char *name,
    const inkling_layout_config_t *config, int64_t page_bytes) {
  return withRegistry(registry, [&](CacheRegistry &r) -> Status {
    if (!name)
      return nullArgument("layer name");
    StatusOr<Layout> layout = toLayout(config);
    if (!layout)
      return Status(layout.status().code(),
                    "sconv layer '" + std::string(name) +
                        "': " + layout.status().message());
    return r.addSconvLayer(name, *layout, page_bytes);
  });
}

inkling_status_t
inkling_cache_registry_add_attention(inkling_cache_registry_t *registry,
                                     const char *name,
                                     const inkling_attention_layer_t *spec) {
  return withRegistry(registry, [&](CacheRegistry &r) -> Status {
    if (!name)
      return nullArgument("layer name");
    if (!spec)
      return nullArgument("attention layer spec");
    return r.addAttentionLayer(name, fromC(*spec));
  });
}

inkling_status_t inkling_cache_registry_plan(inkling_cache_registry_t *registry,
                                             int64_t budget_bytes,
                                             int32_t layout,
                                             inkling_cache_plan_t **out) {
  return withRegistry(registry, [&](CacheRegistry &r) -> Status {
    if (!out)
      return nullArgument("output plan pointer");
    if (layout != INKLING_CACHE_PER_LAYER &&
        layout != INKLING_CACHE_CROSS_LAYER)
      return invalidArgument("cache layout (" + std::to_string(layout) +
                             ") must be INKLING_CACHE_PER_LAYER (0) or "
                             "INKLING_CACHE_CROSS_LAYER (1)");
    auto handle = std::make_unique<inkling_cache_plan>();
    StatusOr<CachePlan> plan =
        r.plan(budget_bytes, layout == INKLING_CACHE_CROSS_LAYER
                                 ? CacheLayoutKind::CrossLayer
                                 : CacheLayoutKind::PerLayer);
    if (!plan)
      return plan.status();
    handle->plan = std::move(*plan);
    *out = handle.release();
    return Status::ok();
  });
}

void inkling_cache_plan_destroy(inkling_cache_plan_t *plan) { delete plan; }

inkling_status_t inkling_cache_plan_info(const inkling_cache_plan_t *plan,
                                         inkling_cache_plan_info_t *out) {
  if (!plan || !out)
    return INKLING_INVALID_ARGUMENT;
  const CachePlan &p = plan->plan;
  out->layout = p.layoutKind == CacheLayoutKind::CrossLayer
                    ? INKLING_CACHE_CROSS_LAYER
                    : INKLING_CACHE_PER_LAYER;
  out->budget_bytes = p.budgetBytes;
  out->page_bytes = p.pageBytes;
  out->bytes_per_block = p.bytesPerBlock;
  out->num_blocks = p.numBlocks;
  out->num_tensors = static_cast<int64_t>(p.tensors.size());
  out->num_layers = static_cast<int64_t>(p.layers.size());
  return INKLING_OK;
}

inkling_status_t
inkling_cache_plan_tensor_bytes(const inkling_cache_plan_t *plan,
                                int64_t tensor, int64_t *out) {
  if (!plan || !out)
    return INKLING_INVALID_ARGUMENT;
  if (tensor < 0 || tensor >= static_cast<int64_t>(plan->plan.tensors.size()))
    return INKLING_OUT_OF_RANGE;
  *out = plan->plan.tensors[tensor].bytes;
  return INKLING_OK;
}

inkling_status_t inkling_cache_plan_layer(const inkling_cache_plan_t *plan,
                                          int64_t layer,
                                          inkling_layer_view_t *out) {
  if (!plan || !out)
    return INKLING_INVALID_ARGUMENT;
  if (layer < 0 || layer >= static_cast<int64_t>(plan->plan.layers.size()))
    return INKLING_OUT_OF_RANGE;
  const LayerView &view = plan->plan.layers[layer];
  inkling_layer_view_t result{};
  result.name = view.name.c_str();
  result.kind = view.kind == CacheLayerKind::Sconv
                    ? INKLING_CACHE_LAYER_SCONV
                    : INKLING_CACHE_LAYER_ATTENTION;
  result.tensor = view.tensor;
  result.byte_offset = view.byteOffset;
  result.element_bytes = view.elementBytes;
  result.block_size = view.blockSize;
  result.page_bytes = view.pageBytes;
  result.block_stride_bytes = view.blockStrideBytes;
  result.adjustment = static_cast<int32_t>(view.adjustment);
  result.scale = view.scale;
  result.rank = static_cast<int32_t>(view.shape.size());
  for (size_t d = 0; d < view.shape.size() && d < 5; ++d) {
    result.shape[d] = view.shape[d];
    result.strides[d] = view.strides[d];
  }
  *out = result;
  return INKLING_OK;
}

} // extern "C"
