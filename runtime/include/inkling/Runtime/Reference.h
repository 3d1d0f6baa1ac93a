//===- Reference.h - A plain C++ reference of the sconv ops -----*- C++ -*-===//
//
// An independent model of docs/Design.md section 4, written from the spec with
// plain scalar loops (not from the lowering): what every backend's insert
// and conv must compute, bit for bit. The one copy of it and of the bf16
// conversions: the lowering's JIT tests, inkling-run's checker, the GPU bench
// and the consumer example use it; the lowering never does (it is what the
// lowering is checked against).
//
// bf16 values are their 16-bit patterns (uint16_t). Sizes come from the
// runtime's layout math (inkling/Runtime/Layout.h), the single source of the
// layout formulas.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_REFERENCE_H
#define INKLING_RUNTIME_REFERENCE_H

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

/// The conv's arithmetic for one token over `row` channels (e = h*w + c), the
/// one formula every conv check uses: acc from the bias (or 0), one f32 fma
/// per tap in ascending tap order, then silu, then the residual add, then one
/// rounding to bf16. `taps[j]` is the input row at position p - (W-1) + j
/// (zeros before position 0), `weights` is [W][row] (transposed, as floats),
/// `bias` and `residual` may be null; `acc` is `row` floats of scratch.
void referenceConvRow(const uint16_t *const *taps, int64_t kernel,
                      const float *weights, const float *bias, bool silu,
                      const uint16_t *residual, int64_t row, float *acc,
                      uint16_t *out);

/// sconv.conv: the taps of docs/Design.md section 4 (0 before position 0, the
/// step's input from num_computed on, else the cache through the block table)
/// through referenceConvRow. `weights` is [H*w, W]. Padding tokens: y = x.
void referenceConv(const Layout &layout, Stream stream, ConstStreamBuffer x,
                   const uint16_t *weights, const StepMetadata &step,
                   const CacheBuffer &cache, const ConvOptions &options,
                   StreamBuffer out);

} // namespace inkling::reference

#endif // INKLING_RUNTIME_REFERENCE_H
