//===- StepBuffers.h - Step metadata updated in place -----------*- C++ -*-===//
//
// The serving engine owns fixed-shape step buffers (for graph capture):
//   query_start_loc [maxRows + 1] int32
//   num_computed    [maxRows]     int32
//   block_table     [maxRows x numCols] int32, row-major, logical block index
//   slot_mapping    [maxTokens]   int64
//   token_seq       [maxTokens]   int32 (optional)
//   block_copies    [maxCopies x 2] int32 (src, dst) copy-on-write pages
// A block table row of a long sequence has thousands of columns but only a
// few live (non-null) entries, so rewriting rows would cost O(M) per sequence
// per step. StepBuffers instead keeps an invariant between builds:
//   * block_table: row r holds non-null values only in the columns recorded
//     for r (its last written window); every other entry is the null block;
//   * slot_mapping: every entry at or past the last step's token count is -1.
// A build then touches only the columns that changed and the tokens of the
// step: O(window + tokens), independent of M and of the padded shapes.
// The caller must not write into the buffers between bind and the last
// build (read them freely); reset() restores the invariant if it did.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_STEPBUFFERS_H
#define INKLING_RUNTIME_STEPBUFFERS_H

#include "inkling/Runtime/BlockPool.h"
#include "inkling/Runtime/Status.h"
#include "inkling/Runtime/inkling_runtime.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace inkling {

/// Caller-owned storage for step metadata. The pointers must stay valid for
/// the lifetime of the StepBuffers bound to them.
struct StepBufferSpec {
  int32_t *queryStartLoc = nullptr; ///< [maxRows + 1]
  int32_t *numComputed = nullptr;   ///< [maxRows]
  int32_t *blockTable = nullptr;    ///< [maxRows * numCols]
  int64_t *slotMapping = nullptr;   ///< [maxTokens]
  int32_t *blockCopies = nullptr;   ///< [maxCopies * 2]; may be null if 0
  int64_t maxRows = 0;
  int64_t numCols = 0; ///< M: logical blocks per row.
  int64_t maxTokens = 0;
  int64_t maxCopies = 0;
  /// [maxTokens], optional: the row of each token (sconv.step's token_seq),
  /// written for the step's tokens in O(tokens); 0 for padding tokens.
  int32_t *tokenSeq = nullptr;
};

/// The same spec as the C API's struct, and back (the two list the same
/// fields in the same order).
inline inkling_step_buffer_spec_t toCSpec(const StepBufferSpec &s) {
  return {s.queryStartLoc, s.numComputed, s.blockTable, s.slotMapping,
          s.blockCopies,   s.maxRows,     s.numCols,    s.maxTokens,
          s.maxCopies,     s.tokenSeq};
}
inline StepBufferSpec fromCSpec(const inkling_step_buffer_spec_t &c) {
  return {c.query_start_loc, c.num_computed, c.block_table, c.slot_mapping,
          c.block_copies,    c.max_rows,     c.num_cols,    c.max_tokens,
          c.max_copies,      c.token_seq};
}

/// Host storage for step metadata and the spec that points into it: the
/// one place that sizes the arrays and fills a spec (engines, tools, tests).
/// Inline, so that callers of the C API alone (cApiSpec) need no C++
/// runtime symbols. Moving keeps `spec` valid (the arrays keep their
/// storage); copying would not, so it is deleted.
struct HostStepBuffers {
  std::vector<int32_t> queryStartLoc, numComputed, blockTable, blockCopies;
  std::vector<int64_t> slotMapping;
  std::vector<int32_t> tokenSeq; ///< Empty without token_seq.
  StepBufferSpec spec;

  /// Arrays for `maxRows` rows of `numCols` logical blocks, `maxTokens`
  /// tokens and `maxCopies` copies (negative sizes allocate nothing; bind
  /// rejects the spec), every entry `fill` (bind rewrites block_table and
  /// slot_mapping); token_seq only `withTokenSeq`.
  HostStepBuffers(int64_t maxRows, int64_t numCols, int64_t maxTokens,
                  int64_t maxCopies, bool withTokenSeq = true, int32_t fill = 0)
      : queryStartLoc(size(maxRows + 1), fill),
        numComputed(size(maxRows), fill),
        blockTable(size(maxRows) * size(numCols), fill),
        blockCopies(2 * size(maxCopies), fill),
        slotMapping(size(maxTokens), fill),
        tokenSeq(withTokenSeq ? size(maxTokens) : 0, fill) {
    spec = {queryStartLoc.data(),
            numComputed.data(),
            blockTable.data(),
            slotMapping.data(),
            blockCopies.data(),
            maxRows,
            numCols,
            maxTokens,
            maxCopies,
            withTokenSeq ? tokenSeq.data() : nullptr};
  }
  HostStepBuffers(const HostStepBuffers &) = delete;
  HostStepBuffers &operator=(const HostStepBuffers &) = delete;
  HostStepBuffers(HostStepBuffers &&) = default;
  HostStepBuffers &operator=(HostStepBuffers &&) = default;

  /// The same spec for inkling_step_buffers_create.
  inkling_step_buffer_spec_t cApiSpec() const { return toCSpec(spec); }

private:
  static size_t size(int64_t count) {
    return static_cast<size_t>(std::max<int64_t>(0, count));
  }
};

/// A new owner id, unique in the process (never 0): what handles compare
/// to know their owner, instead of its address, which a later owner may
/// reuse once the first is destroyed.
uint64_t newOwnerId();

/// One mapped logical block of a sequence.
struct MappedBlock {
  int32_t logical = 0;
  int32_t physical = 0;
};

/// Writes step metadata into bound buffers, touching only what changed.
class StepBuffers {
public:
  /// Validates the spec, fills block_table with the null block and
  /// slot_mapping with -1 once. `maxBlocksPerRow` bounds the live entries of
  /// a row (the sequence manager's per-sequence block bound).
  /// `ownerId` identifies the producer that may write them (a sequence
  /// manager's id(): it refuses buffers bound by another); 0: none.
  static StatusOr<StepBuffers> bind(const StepBufferSpec &spec,
                                    int64_t maxBlocksPerRow,
                                    uint64_t ownerId = 0);

  const StepBufferSpec &spec() const { return spec_; }
  int64_t maxBlocksPerRow() const { return maxBlocksPerRow_; }
  uint64_t ownerId() const { return ownerId_; }
  /// Token count and rows of the last build (the invariant's watermarks).
  int64_t lastNumTokens() const { return lastTokens_; }
  int64_t lastNumRows() const { return lastRows_; }

  /// Rewrites every buffer from scratch (null block, -1) and forgets the
  /// rows; O(size). For callers that wrote into the buffers themselves.
  void reset();

  // The writer interface the sequence manager drives; arguments are
  // validated by the caller.

  /// Makes row `row` hold exactly `blocks` (sorted by logical index, each
  /// logical < numCols, at most maxBlocksPerRow): nulls the columns that
  /// left, writes the entries that changed. Inline: once per row per step.
  void writeRow(int64_t row, const MappedBlock *blocks, int32_t count) {
    const MappedBlock *recorded = rowBlocks_.data() + row * maxBlocksPerRow_;
    bool same = rowCounts_[row] == count;
    for (int32_t i = 0; same && i < count; ++i)
      same = recorded[i].logical == blocks[i].logical &&
             recorded[i].physical == blocks[i].physical;
    if (!same) // a decode step usually keeps its window: no table traffic
      rewriteRow(row, blocks, count);
  }

  /// Row `row`'s entries beside its window for this step: the snapshot
  /// blocks a prefill stores into (below the window, each logical column
  /// outside it), so that every stored slot is block_table[b][p / N] * N +
  /// p % N. Nulls the previous step's extras first (except columns of
  /// `window`, the row's current window). Call after writeRow.
  void writeExtras(int64_t row, const MappedBlock *window, int32_t windowCount,
                   const MappedBlock *extras, size_t count);

  /// Nulls every row in [firstRow, lastNumRows()); call after the rows of a
  /// step, then finishStep.
  void clearRowsFrom(int64_t firstRow);
  /// Re-establishes the slot invariant for a step of `numTokens` real tokens
  /// and records the watermarks.
  void finishStep(int64_t numRows, int64_t numTokens);

private:
  StepBuffers() = default;
  void rewriteRow(int64_t row, const MappedBlock *blocks, int32_t count);

  StepBufferSpec spec_;
  int64_t maxBlocksPerRow_ = 0;
  uint64_t ownerId_ = 0;
  // Per row: the count and the recorded entries (sorted) of its window.
  std::vector<int32_t> rowCounts_;
  std::vector<MappedBlock> rowBlocks_;
  // Per row: the columns writeExtras wrote last (usually none).
  std::vector<std::vector<int32_t>> rowExtras_;
  int64_t lastRows_ = 0;
  int64_t lastTokens_ = 0;
};

} // namespace inkling

#endif // INKLING_RUNTIME_STEPBUFFERS_H
