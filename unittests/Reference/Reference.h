//===- Reference.h - A plain C++ reference of the sconv ops -----*- C++ -*-===//
//
// An independent model of docs/Design.md section 4, written from the spec with
// plain scalar loops (not from the lowering): what every backend's insert
// and conv must compute, bit for bit. Used by the lowering's JIT tests and
// meant for the benchmark and the end-to-end runner.
//
// bf16 values are their 16-bit patterns (uint16_t). Sizes come from the
// runtime's layout math (inkling/Runtime/Layout.h), the single source of the
// layout formulas.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_REFERENCE_REFERENCE_H
#define INKLING_UNITTESTS_REFERENCE_REFERENCE_H

#include "inkling/Runtime/Layout.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace inkling::reference {

/// bf16 bits -> f32 (exact).
float bf16ToFloat(uint16_t bits);
/// f32 -> bf16 bits, rounding to nearest even; a NaN stays a (quiet) NaN
/// with its sign.
uint16_t floatToBf16(float value);

/// The step metadata of docs/Design.md section 3.
struct StepMetadata {
  std::vector<int32_t> queryStartLoc; ///< B + 1 entries.
  std::vector<int32_t> numComputed;   ///< B entries.
  std::vector<int32_t> blockTable;    ///< B x blockTableWidth, row-major.
  int64_t blockTableWidth = 0;        ///< M.
  std::vector<int64_t> slotMapping;   ///< T entries (padded: Tp).
  /// The padded token count Tp >= T (0: no padding). Tokens in [T, Tp) are
  /// padding: no cache access, and a conv's output is x.
  int64_t paddedTokens = 0;

  int64_t numSequences() const {
    return static_cast<int64_t>(numComputed.size());
  }
  int64_t numTokens() const {
    return queryStartLoc.empty() ? 0 : queryStartLoc.back();
  }
  int64_t numPaddedTokens() const {
    return std::max(numTokens(), paddedTokens);
  }
};

/// A stream's input or output: element (t, h, c) at
/// `data[t * tokenStride + h * w + c]` (the [T, H, w] and [T, H*w] forms are
/// the same memory; tokenStride >= H*w).
struct StreamBuffer {
  uint16_t *data = nullptr;
  int64_t tokenStride = 0;
};
struct ConstStreamBuffer {
  const uint16_t *data = nullptr;
  int64_t tokenStride = 0;
};

/// The cache: element [block, h, row, d] at
/// `data[block * blockStride + (h * N + row) * D + d]`.
struct CacheBuffer {
  uint16_t *data = nullptr;
  int64_t blockStride = 0;
  int64_t numBlocks = 0;
};

/// sconv.insert: for every token with slot >= 0, every head and channel,
/// cache[slot / N, h, slot % N, offset + c] = x[t, h, c].
void referenceInsert(const Layout &layout, Stream stream, ConstStreamBuffer x,
                     const StepMetadata &step, CacheBuffer cache);

struct ConvOptions {
  bool residual = true;
  bool silu = false;
  const uint16_t *bias = nullptr; ///< [H*w] or null.
};

/// sconv.conv: the taps of docs/Design.md section 4 (0 before position 0, the
/// step's input from num_computed on, else the cache through the block table),
/// an f32 fma chain in ascending tap order from the bias (or 0), then silu,
/// then the residual add, then one rounding to bf16. `weights` is [H*w, W].
void referenceConv(const Layout &layout, Stream stream, ConstStreamBuffer x,
                   const uint16_t *weights, const StepMetadata &step,
                   const CacheBuffer &cache, const ConvOptions &options,
                   StreamBuffer out);

} // namespace inkling::reference

#endif // INKLING_UNITTESTS_REFERENCE_REFERENCE_H
