//===- AttentionSlots.h - The attention layer's block table -----*- C++ -*-===//
//
// The attention slot mapping an epilogue layer's sconv.kv_write stores at:
// what a serving engine's attention KV cache group gives each token. The
// runtime's SequenceManager plans the conv-state cache, not the attention
// cache, so inkling-run keeps the attention group's block table here: one
// table per running sequence, blocks of the KV cache's block size from a
// runtime BlockPool of their own (block 0 the null block), allocated as
// positions grow and freed when the sequence stops running (finished or
// preempted: a resumed sequence writes its recomputed rows into new
// blocks, as vLLM's preemption frees every group's blocks). Token position
// p's slot is table[p / bs] * bs + p % bs (docs/inkling-run.md).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_ATTENTIONSLOTS_H
#define INKLING_TOOLS_INKLING_RUN_ATTENTIONSLOTS_H

#include "Workload.h"

#include "inkling/Runtime/BlockPool.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace inkling::run {

class AttentionSlots {
public:
  /// Blocks of `blockSize` tokens for `maxSequences` running sequences of
  /// at most `maxLength` positions (plus the null block).
  static int64_t blocksFor(int64_t maxSequences, int64_t maxLength,
                           int64_t blockSize) {
    return 1 + maxSequences * ((maxLength + blockSize - 1) / blockSize);
  }
  /// A pool of `numBlocks` blocks; false if the runtime refuses it.
  Status init(int64_t numBlocks, int64_t blockSize);

  /// Frees the tables of sequences not in `running`, then writes the slot
  /// of every scheduled token of `batch` into `slots` (token order of the
  /// step: qsl[b] + i), -1 for the rest up to `count`.
  Status assign(const std::vector<Request *> &running,
                const std::vector<Request *> &batch,
                const std::vector<int32_t> &queryStartLoc, int64_t *slots,
                int64_t count);

  int64_t blockSize() const { return blockSize_; }
  int64_t numBlocks() const { return pool_ ? pool_->numBlocks() : 0; }

private:
  std::optional<BlockPool> pool_;
  int64_t blockSize_ = 0;
  std::map<int64_t, std::vector<int32_t>> tables_; // by request number
};

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_ATTENTIONSLOTS_H
