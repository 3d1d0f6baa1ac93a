//===- Reference.cpp - A plain C++ reference of the sconv ops -------------===//

#include "inkling/Runtime/Reference.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

namespace inkling::reference {

float bf16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

uint16_t floatToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if (std::isnan(value))
    return static_cast<uint16_t>((word >> 16) | 0x0040); // quiet NaN
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit.
  uint32_t lsb = (word >> 16) & 1;
  word += 0x7fffu + lsb;
  return static_cast<uint16_t>(word >> 16);
}

namespace {

/// Sequence of token t: the b with qsl[b] <= t < qsl[b+1].
int64_t sequenceOf(const StepMetadata &step, int64_t t) {
  for (int64_t b = 0; b < step.numSequences(); ++b)
    if (step.queryStartLoc[b] <= t && t < step.queryStartLoc[b + 1])
      return b;
  assert(false && "token outside every sequence");
  return -1;
}

int64_t cacheIndex(const Layout &layout, const CacheBuffer &cache,
                   int64_t block, int64_t h, int64_t row, int64_t d) {
  return block * cache.blockStride +
         (h * layout.blockSize + row) * layout.headSize + d;
}

} // namespace

void referenceInsert(const Layout &layout, Stream stream, ConstStreamBuffer x,
                     const StepMetadata &step, CacheBuffer cache) {
  const StreamRange range = layout.range(stream);
  const int64_t n = layout.blockSize;
  for (int64_t t = 0; t < step.numTokens(); ++t) {
    int64_t slot = step.slotMapping[t];
    if (slot < 0)
      continue;
    int64_t block = slot / n, row = slot % n;
    assert(block < cache.numBlocks && "slot outside the cache");
    for (int64_t h = 0; h < layout.headsPerRank; ++h)
      for (int64_t c = 0; c < range.width; ++c)
        cache.data[cacheIndex(layout, cache, block, h, row, range.offset + c)] =
            x.data[t * x.tokenStride + h * range.width + c];
  }
}

// Built for AVX2+FMA where the CPU has them (inkling-run checks every output
// of every step with it); fma is exact either way: the same bits.
#if defined(__x86_64__) && defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void referenceConvRow(const uint16_t *const *taps, int64_t kernel,
                      const float *weights, const float *bias, bool silu,
                      const uint16_t *residual, int64_t row, float *acc,
                      uint16_t *out) {
  for (int64_t e = 0; e < row; ++e)
    acc[e] = bias ? bias[e] : 0.0f;
  for (int64_t j = 0; j < kernel; ++j) {
    const uint16_t *tap = taps[j];
    const float *w = weights + j * row;
    for (int64_t e = 0; e < row; ++e)
      acc[e] = std::fmaf(w[e], bf16ToFloat(tap[e]), acc[e]);
  }
  if (silu)
    for (int64_t e = 0; e < row; ++e)
      acc[e] = acc[e] * (1.0f / (1.0f + std::exp(-acc[e])));
  if (residual)
    for (int64_t e = 0; e < row; ++e)
      acc[e] = acc[e] + bf16ToFloat(residual[e]);
  for (int64_t e = 0; e < row; ++e)
    out[e] = floatToBf16(acc[e]);
}

void referenceConv(const Layout &layout, Stream stream, ConstStreamBuffer x,
                   const uint16_t *weights, const StepMetadata &step,
                   const CacheBuffer &cache, const ConvOptions &options,
                   StreamBuffer out) {
  const StreamRange range = layout.range(stream);
  const int64_t w = range.width;
  const int64_t row = layout.headsPerRank * w;
  const int64_t kernel = layout.config.kernel;
  const int64_t n = layout.blockSize;
  // Weights as [W][row] floats, the bias as floats (both exact).
  std::vector<float> weightRows(kernel * row), bias;
  for (int64_t e = 0; e < row; ++e)
    for (int64_t j = 0; j < kernel; ++j)
      weightRows[j * row + e] = bf16ToFloat(weights[e * kernel + j]);
  if (options.bias)
    for (int64_t e = 0; e < row; ++e)
      bias.push_back(bf16ToFloat(options.bias[e]));
  // Per tap: the step's input row, a zero row, or one gathered from the cache.
  const std::vector<uint16_t> zeros(row, 0);
  std::vector<uint16_t> gathered(kernel * row);
  std::vector<const uint16_t *> taps(kernel);
  std::vector<float> acc(row);
  for (int64_t t = 0; t < step.numTokens(); ++t) {
    int64_t b = sequenceOf(step, t);
    int64_t start = step.queryStartLoc[b];
    int64_t computed = step.numComputed[b];
    int64_t p = computed + (t - start);
    for (int64_t j = 0; j < kernel; ++j) {
      int64_t q = p - (kernel - 1) + j;
      if (q < 0) {
        taps[j] = zeros.data();
      } else if (q >= computed) {
        taps[j] = x.data + (start + (q - computed)) * x.tokenStride;
      } else {
        int64_t block = step.blockTable[b * step.blockTableWidth + q / n];
        assert(block >= 0 && block < cache.numBlocks);
        uint16_t *tap = gathered.data() + j * row;
        for (int64_t h = 0; h < layout.headsPerRank; ++h)
          for (int64_t c = 0; c < w; ++c)
            tap[h * w + c] = cache.data[cacheIndex(layout, cache, block, h,
                                                   q % n, range.offset + c)];
        taps[j] = tap;
      }
    }
    referenceConvRow(taps.data(), kernel, weightRows.data(),
                     options.bias ? bias.data() : nullptr, options.silu,
                     options.residual ? x.data + t * x.tokenStride : nullptr,
                     row, acc.data(), out.data + t * out.tokenStride);
  }
  // Padding tokens: y = x.
  for (int64_t t = step.numTokens(); t < step.numPaddedTokens(); ++t)
    for (int64_t e = 0; e < row; ++e)
      out.data[t * out.tokenStride + e] = x.data[t * x.tokenStride + e];
}

} // namespace inkling::reference
