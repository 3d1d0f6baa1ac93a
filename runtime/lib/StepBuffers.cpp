//===- StepBuffers.cpp - Caller-owned step metadata, updated in place -----===//

#include "inkling/Runtime/StepBuffers.h"
#include "inkling/Runtime/BlockPool.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <tuple>

namespace inkling {

uint64_t newOwnerId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

StatusOr<StepBuffers> StepBuffers::bind(const StepBufferSpec &spec,
                                        int64_t maxBlocksPerRow,
                                        uint64_t ownerId) {
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  auto positive = [](const char *name, int64_t value) -> Status {
    if (value < 1 || value > kInt32Max)
      return invalidArgument(std::string(name) + " (" + std::to_string(value) +
                             ") must be in [1, 2^31)");
    return Status::ok();
  };
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"max_rows", spec.maxRows},
        {"num_cols", spec.numCols},
        {"max_tokens", spec.maxTokens},
        {"max_blocks_per_row", maxBlocksPerRow}})
    if (Status status = positive(name, value); !status)
      return status;
  if (spec.maxCopies < 0 || spec.maxCopies > kInt32Max)
    return invalidArgument("max_copies (" + std::to_string(spec.maxCopies) +
                           ") must be in [0, 2^31)");
  if (spec.maxRows * spec.numCols > (int64_t(1) << 40))
    return invalidArgument("block table of " + std::to_string(spec.maxRows) +
                           " x " + std::to_string(spec.numCols) +
                           " entries is too large");
  if (!spec.queryStartLoc || !spec.numComputed || !spec.blockTable ||
      !spec.slotMapping || (spec.maxCopies > 0 && !spec.blockCopies))
    return invalidArgument(
        "a step buffer pointer is null (query_start_loc, num_computed, "
        "block_table, slot_mapping, or block_copies with max_copies > 0)");
  // The kernels read the metadata with element-sized accesses and refuse
  // a misaligned buffer at their first call: refuse it here, at bind.
  auto aligned = [](const void *p, size_t bytes) {
    return reinterpret_cast<uintptr_t>(p) % bytes == 0;
  };
  for (auto [name, pointer, bytes] :
       {std::tuple<const char *, const void *, size_t>{"query_start_loc",
                                                       spec.queryStartLoc, 4},
        {"num_computed", spec.numComputed, 4},
        {"block_table", spec.blockTable, 4},
        {"slot_mapping", spec.slotMapping, 8},
        {"block_copies", spec.blockCopies, 4},
        {"token_seq", spec.tokenSeq, 4}})
    if (!aligned(pointer, bytes))
      return invalidArgument(std::string("step buffer ") + name +
                             " is not aligned to its " + std::to_string(bytes) +
                             "-byte elements");
  StepBuffers buffers;
  buffers.spec_ = spec;
  buffers.maxBlocksPerRow_ = maxBlocksPerRow;
  buffers.ownerId_ = ownerId;
  buffers.rowCounts_.assign(spec.maxRows, 0);
  buffers.rowBlocks_.assign(spec.maxRows * maxBlocksPerRow, MappedBlock());
  buffers.rowExtras_.resize(spec.maxRows);
  buffers.reset();
  return buffers;
}

void StepBuffers::reset() {
  std::fill_n(spec_.queryStartLoc, spec_.maxRows + 1, 0);
  std::fill_n(spec_.numComputed, spec_.maxRows, 0);
  std::fill_n(spec_.blockTable, spec_.maxRows * spec_.numCols, kNullBlock);
  std::fill_n(spec_.slotMapping, spec_.maxTokens, int64_t(-1));
  if (spec_.maxCopies > 0)
    std::fill_n(spec_.blockCopies, spec_.maxCopies * 2, kNullBlock);
  std::fill(rowCounts_.begin(), rowCounts_.end(), 0);
  for (std::vector<int32_t> &extras : rowExtras_)
    extras.clear();
  lastRows_ = 0;
  lastTokens_ = 0;
}

void StepBuffers::rewriteRow(int64_t row, const MappedBlock *blocks,
                             int32_t count) {
  int32_t *table = spec_.blockTable + row * spec_.numCols;
  MappedBlock *recorded = rowBlocks_.data() + row * maxBlocksPerRow_;
  int32_t oldCount = rowCounts_[row];
  auto same = [](const MappedBlock *a, const MappedBlock *b, int32_t n) {
    for (int32_t i = 0; i < n; ++i)
      if (a[i].logical != b[i].logical || a[i].physical != b[i].physical)
        return false;
    return true;
  };
  // The two ways a decode step moves its window: a block appended (the
  // step starts a block) or the first block dropped (the history left it).
  if (count == oldCount + 1 && same(recorded, blocks, oldCount)) {
    table[blocks[oldCount].logical] = blocks[oldCount].physical;
    recorded[oldCount] = blocks[oldCount];
    rowCounts_[row] = count;
    return;
  }
  if (count == oldCount - 1 && same(recorded + 1, blocks, count)) {
    table[recorded[0].logical] = kNullBlock;
    for (int32_t i = 0; i < count; ++i)
      recorded[i] = blocks[i];
    rowCounts_[row] = count;
    return;
  }
  // Both windows are sorted: null the old columns the new one lacks.
  int32_t next = 0;
  for (int32_t i = 0; i < oldCount; ++i) {
    int32_t col = recorded[i].logical;
    while (next < count && blocks[next].logical < col)
      ++next;
    if (next == count || blocks[next].logical != col)
      table[col] = kNullBlock;
  }
  for (int32_t i = 0; i < count; ++i) {
    table[blocks[i].logical] = blocks[i].physical;
    recorded[i] = blocks[i];
  }
  rowCounts_[row] = count;
}

void StepBuffers::writeExtras(int64_t row, const MappedBlock *window,
                              int32_t windowCount, const MappedBlock *extras,
                              size_t count) {
  std::vector<int32_t> &written = rowExtras_[row];
  if (written.empty() && count == 0)
    return;
  int32_t *table = spec_.blockTable + row * spec_.numCols;
  for (int32_t col : written) {
    bool inWindow = false;
    for (int32_t i = 0; i < windowCount && !inWindow; ++i)
      inWindow = window[i].logical == col;
    if (!inWindow)
      table[col] = kNullBlock;
  }
  written.clear();
  for (size_t i = 0; i < count; ++i) {
    table[extras[i].logical] = extras[i].physical;
    written.push_back(extras[i].logical);
  }
}

void StepBuffers::clearRowsFrom(int64_t firstRow) {
  for (int64_t row = firstRow; row < lastRows_; ++row) {
    int32_t *table = spec_.blockTable + row * spec_.numCols;
    const MappedBlock *recorded = rowBlocks_.data() + row * maxBlocksPerRow_;
    for (int32_t i = 0; i < rowCounts_[row]; ++i)
      table[recorded[i].logical] = kNullBlock;
    rowCounts_[row] = 0;
    for (int32_t col : rowExtras_[row])
      table[col] = kNullBlock;
    rowExtras_[row].clear();
  }
}

void StepBuffers::finishStep(int64_t numRows, int64_t numTokens) {
  if (lastTokens_ > numTokens)
    std::fill(spec_.slotMapping + numTokens, spec_.slotMapping + lastTokens_,
              int64_t(-1));
  lastRows_ = numRows;
  lastTokens_ = numTokens;
}

} // namespace inkling
