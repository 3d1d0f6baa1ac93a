//===- BenchSteps.cpp - The benches' decode and prefill steps -------------===//

#include "BenchSteps.h"

#include <cassert>

namespace inkling::bench {

BenchStep benchStep(int64_t tokens, int64_t prefillTokens, int64_t blockSize) {
  BenchStep step;
  reference::StepMetadata &meta = step.meta;
  const int64_t n = blockSize;
  if (tokens < prefillTokens) {
    constexpr int32_t kPosition = 6;
    meta.blockTableWidth = 2;
    for (int64_t b = 0; b < tokens; ++b) {
      meta.queryStartLoc.push_back(static_cast<int32_t>(b));
      meta.numComputed.push_back(kPosition);
      const int32_t first = static_cast<int32_t>(1 + 2 * b);
      meta.blockTable.push_back(first);
      meta.blockTable.push_back(first + 1);
      meta.slotMapping.push_back(meta.blockTable[b * 2 + kPosition / n] * n +
                                 kPosition % n);
    }
    meta.queryStartLoc.push_back(static_cast<int32_t>(tokens));
    step.numBlocks = 1 + 2 * tokens;
    return step;
  }
  const int64_t blocks = (tokens + n - 1) / n;
  meta.blockTableWidth = blocks;
  meta.queryStartLoc = {0, static_cast<int32_t>(tokens)};
  meta.numComputed = {0};
  for (int64_t j = 0; j < blocks; ++j)
    meta.blockTable.push_back(static_cast<int32_t>(1 + j));
  for (int64_t t = 0; t < tokens; ++t)
    meta.slotMapping.push_back((1 + t / n) * n + t % n);
  step.numBlocks = 1 + blocks;
  return step;
}

std::vector<HandDecodeToken>
handDecodeTokens(const reference::StepMetadata &meta, const Layout &layout,
                 int64_t blockStride) {
  const int64_t n = layout.blockSize, d = layout.tokenStride();
  std::vector<HandDecodeToken> tokens;
  for (int64_t b = 0; b < meta.numSequences(); ++b)
    for (int32_t t = meta.queryStartLoc[b]; t < meta.queryStartLoc[b + 1];
         ++t) {
      const int64_t position = meta.numComputed[b] + t - meta.queryStartLoc[b];
      assert(position >= 3 && "a decode token's taps are in the cache");
      auto rowAt = [&](int64_t p) {
        return meta.blockTable[b * meta.blockTableWidth + p / n] * blockStride +
               (p % n) * d;
      };
      const int64_t slot = meta.slotMapping[t];
      tokens.push_back(
          {{rowAt(position - 3), rowAt(position - 2), rowAt(position - 1)},
           (slot / n) * blockStride + (slot % n) * d});
    }
  return tokens;
}

HandDecodeShape handDecodeShape(const Layout &layout,
                                llvm::ArrayRef<Stream> streams) {
  HandDecodeShape shape;
  shape.heads = layout.headsPerRank;
  shape.headStride = layout.headStride();
  for (Stream s : streams) {
    shape.width[static_cast<int>(s)] = layout.range(s).width;
    shape.offset[static_cast<int>(s)] = layout.range(s).offset;
  }
  return shape;
}

} // namespace inkling::bench
