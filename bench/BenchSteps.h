//===- BenchSteps.h - The benches' decode and prefill steps -----*- C++ -*-===//
//
// The steps inkling-bench-fusion and inkling-bench-epilogue time, so that
// both measure the same step: decode, T sequences of one token at position
// 6 (its three history taps, positions 3..5, in the cache; sequence b owns
// blocks 1 + 2b and 2 + 2b), or prefill, one sequence of T tokens from
// position 0 (blocks 1, 2, ...). Block 0 is the null block.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_BENCH_BENCHSTEPS_H
#define INKLING_BENCH_BENCHSTEPS_H

#include "HandDecodeKernel.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Reference.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace inkling::bench {

struct BenchStep {
  reference::StepMetadata meta;
  /// Blocks the cache needs (the null block included).
  int64_t numBlocks = 0;
};

/// Decode when `tokens` < `prefillTokens`, prefill otherwise (above).
BenchStep benchStep(int64_t tokens, int64_t prefillTokens, int64_t blockSize);

/// Each token's three history rows and its slot row, as element offsets in
/// a cache of `blockStride` elements per block, for the hand-written
/// kernels. Every token must have its taps in the cache (a decode step).
std::vector<HandDecodeToken>
handDecodeTokens(const reference::StepMetadata &meta, const Layout &layout,
                 int64_t blockStride);

/// The hand-written kernels' shape for `streams` (the others width 0).
HandDecodeShape handDecodeShape(const Layout &layout,
                                llvm::ArrayRef<Stream> streams);

} // namespace inkling::bench

#endif // INKLING_BENCH_BENCHSTEPS_H
