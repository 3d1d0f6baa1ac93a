//===- CApiManager.cpp - C API: manager, sequences, steps -----------------===//
//
// The C entry points of the sequence manager and its step buffers.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

using namespace inkling;
using namespace inkling::capi;

extern "C" {

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
  return withOutput(manager, out_sequence, "output sequence id",
                    [&](SequenceManager &m) {
                      return m.addSequence(tokens, num_tokens, start_position);
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

inkling_status_t
inkling_manager_set_drop_last_matched_block(inkling_manager_t *manager,
                                            int32_t drop) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    m.setDropLastMatchedBlock(drop != 0);
    return Status::ok();
  });
}

inkling_status_t inkling_manager_set_same_step_hits(inkling_manager_t *manager,
                                                    int32_t enable) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    m.setSameStepHits(enable != 0);
    return Status::ok();
  });
}

inkling_status_t inkling_take_invalidated_readers(inkling_manager_t *manager,
                                                  int64_t *out,
                                                  int64_t capacity,
                                                  int64_t *out_count) {
  return withManager(manager, [&](SequenceManager &m) -> Status {
    if (!out_count)
      return nullArgument("output count");
    int64_t waiting = m.numInvalidatedReaders();
    if (capacity < 0 || (capacity > 0 && !out))
      return invalidArgument("capacity (" + std::to_string(capacity) +
                             ") must be >= 0 with a non-null array");
    if (waiting > capacity)
      return outOfRange(std::to_string(waiting) +
                        " invalidated readers, room for " +
                        std::to_string(capacity));
    std::vector<SequenceId> readers = m.takeInvalidatedReaders();
    std::copy(readers.begin(), readers.end(), out);
    *out_count = waiting;
    return Status::ok();
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
  return withOutput(
      manager, out_sequence, "output sequence id", [&](SequenceManager &m) {
        return m.addSequence(tokens, num_tokens, start_position, cache_points,
                             num_cache_points, extra_keys, num_extra_key_bytes);
      });
}

inkling_status_t inkling_longest_cached_prefix_with_keys(
    inkling_manager_t *manager, const int32_t *tokens, int64_t num_tokens,
    int64_t max_length, const uint8_t *extra_keys, int64_t num_extra_key_bytes,
    int64_t *out_length) {
  return withOutput(
      manager, out_length, "output length", [&](SequenceManager &m) {
        return m.longestCachedPrefix(tokens, num_tokens, max_length, extra_keys,
                                     num_extra_key_bytes);
      });
}

inkling_status_t inkling_longest_cached_prefix(inkling_manager_t *manager,
                                               const int32_t *tokens,
                                               int64_t num_tokens,
                                               int64_t max_length,
                                               int64_t *out_length) {
  return withOutput(
      manager, out_length, "output length", [&](SequenceManager &m) {
        return m.longestCachedPrefix(tokens, num_tokens, max_length);
      });
}

inkling_status_t inkling_admission(inkling_manager_t *manager,
                                   int64_t num_tokens, int64_t start_position,
                                   int64_t watermark_blocks,
                                   inkling_admission_t *out) {
  return withOutput(
      manager, out, "output admission",
      [&](SequenceManager &m) -> StatusOr<inkling_admission_t> {
        StatusOr<Admission> a =
            m.admission(num_tokens, start_position, watermark_blocks);
        if (!a)
          return a.status();
        return inkling_admission_t{a->admit ? 1 : 0, a->neededBlocks,
                                   a->reservedBlocks, a->freeBlocks};
      });
}

inkling_status_t inkling_longest_cached_prefix_batch(
    inkling_manager_t *manager, const int32_t *tokens,
    const int64_t *token_offsets, const int64_t *max_lengths, int64_t count,
    int64_t *out_lengths) {
  return withManager(manager, [&](SequenceManager &m) {
    return m.longestCachedPrefixBatch(tokens, token_offsets, max_lengths, count,
                                      out_lengths);
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
  return withOutput(
      manager, out, "output sequence info",
      [&](SequenceManager &m) -> StatusOr<inkling_sequence_info_t> {
        StatusOr<SequenceInfo> info = m.sequenceInfo(sequence);
        if (!info)
          return info.status();
        return inkling_sequence_info_t{
            static_cast<int32_t>(info->state), info->numComputed,
            info->numTokens, info->numScheduled,
            static_cast<int64_t>(info->blocks.size())};
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
    StatusOr<StepBuffers> buffers = m.bindStepBuffers(fromCSpec(*spec));
    if (!buffers)
      return buffers.status();
    auto handle = std::make_unique<inkling_step_buffers>();
    handle->ownerId = m.id();
    handle->buffers = std::make_unique<StepBuffers>(std::move(*buffers));
    *out = handle.release();
    return Status::ok();
  });
}

void inkling_step_buffers_destroy(inkling_step_buffers_t *buffers) {
  delete buffers;
}

int32_t inkling_step_buffers_ordered_inserts_required(
    const inkling_step_buffers_t *buffers) {
  return buffers && buffers->orderedInsertsRequired ? 1 : 0;
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
    if (buffers->ownerId != m.id())
      return invalidArgument("step buffers were created for another manager "
                             "(possibly one destroyed since)");
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
    buffers->orderedInsertsRequired = info->orderedInsertsRequired;
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

} // extern "C"
