//===- Reference.cpp - A plain C++ reference of the sconv ops -------------===//

#include "Reference.h"

#include <cassert>
#include <cmath>
#include <cstring>

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

void referenceConv(const Layout &layout, Stream stream, ConstStreamBuffer x,
                   const uint16_t *weights, const StepMetadata &step,
                   const CacheBuffer &cache, const ConvOptions &options,
                   StreamBuffer out) {
  const StreamRange range = layout.range(stream);
  const int64_t w = range.width;
  const int64_t kernel = layout.config.kernel;
  const int64_t n = layout.blockSize;
  for (int64_t t = 0; t < step.numTokens(); ++t) {
    int64_t b = sequenceOf(step, t);
    int64_t start = step.queryStartLoc[b];
    int64_t computed = step.numComputed[b];
    int64_t p = computed + (t - start);
    for (int64_t h = 0; h < layout.headsPerRank; ++h) {
      for (int64_t c = 0; c < w; ++c) {
        int64_t ch = h * w + c;
        float acc = options.bias ? bf16ToFloat(options.bias[ch]) : 0.0f;
        for (int64_t j = 0; j < kernel; ++j) {
          int64_t q = p - (kernel - 1) + j;
          float tap;
          if (q < 0) {
            tap = 0.0f;
          } else if (q >= computed) {
            int64_t token = start + (q - computed);
            tap = bf16ToFloat(x.data[token * x.tokenStride + h * w + c]);
          } else {
            int64_t block = step.blockTable[b * step.blockTableWidth + q / n];
            assert(block >= 0 && block < cache.numBlocks);
            tap = bf16ToFloat(cache.data[cacheIndex(layout, cache, block, h,
                                                    q % n, range.offset + c)]);
          }
          float weight = bf16ToFloat(weights[ch * kernel + j]);
          acc = std::fmaf(weight, tap, acc);
        }
        if (options.silu)
          acc = acc * (1.0f / (1.0f + std::exp(-acc)));
        if (options.residual)
          acc = acc + bf16ToFloat(x.data[t * x.tokenStride + h * w + c]);
        out.data[t * out.tokenStride + h * w + c] = floatToBf16(acc);
      }
    }
  }
  // Padding tokens: y = x.
  for (int64_t t = step.numTokens(); t < step.numPaddedTokens(); ++t)
    for (int64_t e = 0; e < layout.headsPerRank * w; ++e)
      out.data[t * out.tokenStride + e] = x.data[t * x.tokenStride + e];
}

} // namespace inkling::reference
