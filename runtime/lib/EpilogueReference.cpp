//===- EpilogueReference.cpp - A plain C++ reference of the epilogues -----===//

#include "inkling/Runtime/EpilogueReference.h"

#include <cassert>
#include <cmath>
#include <vector>

namespace inkling::reference {

namespace {

/// The balanced tree over sums[lo, lo + count), count a power of two.
float treeSum(const std::vector<float> &sums, size_t lo, size_t count) {
  if (count == 1)
    return sums[lo];
  size_t half = count / 2;
  float left = treeSum(sums, lo, half);
  float right = treeSum(sums, lo + half, half);
  return left + right;
}

} // namespace

float referenceSumOfSquares(const float *values, int64_t n) {
  assert(n % 8 == 0 && "rows are whole 16-byte chunks");
  std::vector<float> chunkSums;
  for (int64_t i = 0; i < n; i += 8) {
    float sq[8];
    for (int l = 0; l < 8; ++l)
      sq[l] = values[i + l] * values[i + l];
    float even = (sq[0] + sq[4]) + (sq[2] + sq[6]);
    float odd = (sq[1] + sq[5]) + (sq[3] + sq[7]);
    chunkSums.push_back(even + odd);
  }
  size_t count = 1;
  while (count < chunkSums.size())
    count *= 2;
  chunkSums.resize(count, 0.0f);
  return treeSum(chunkSums, 0, count);
}

void referenceRmsNormRow(const uint16_t *row, int64_t n, const uint16_t *weight,
                         float epsilon, uint16_t *out) {
  std::vector<float> values(n);
  for (int64_t c = 0; c < n; ++c)
    values[c] = bf16ToFloat(row[c]);
  float mean = referenceSumOfSquares(values.data(), n) / static_cast<float>(n);
  float inverse = 1.0f / std::sqrt(mean + epsilon);
  for (int64_t c = 0; c < n; ++c) {
    float scaled = values[c] * inverse;
    out[c] = floatToBf16(scaled * bf16ToFloat(weight[c]));
  }
}

void referenceRmsNorm(const Layout &layout, Stream stream, ConstStreamBuffer x,
                      int64_t tokens, const uint16_t *weight, float epsilon,
                      StreamBuffer out) {
  const int64_t w = layout.range(stream).width;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < layout.headsPerRank; ++h)
      referenceRmsNormRow(x.data + t * x.tokenStride + h * w, w, weight,
                          epsilon, out.data + t * out.tokenStride + h * w);
}

void referenceAddRmsNorm(const Layout &layout, Stream stream,
                         ConstStreamBuffer y, ConstStreamBuffer residual,
                         int64_t tokens, const uint16_t *weight, float epsilon,
                         StreamBuffer sum, StreamBuffer out) {
  const int64_t w = layout.range(stream).width;
  const int64_t heads = layout.headsPerRank, n = heads * w;
  std::vector<float> h(n);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < n; ++i) {
      float added = bf16ToFloat(y.data[t * y.tokenStride + i]) +
                    bf16ToFloat(residual.data[t * residual.tokenStride + i]);
      uint16_t rounded = floatToBf16(added);
      sum.data[t * sum.tokenStride + i] = rounded;
      h[i] = bf16ToFloat(rounded);
    }
    size_t count = 1;
    while (count < static_cast<size_t>(heads))
      count *= 2;
    std::vector<float> headSums(count, 0.0f);
    for (int64_t head = 0; head < heads; ++head)
      headSums[head] = referenceSumOfSquares(h.data() + head * w, w);
    float mean = treeSum(headSums, 0, count) / static_cast<float>(n);
    float inverse = 1.0f / std::sqrt(mean + epsilon);
    for (int64_t i = 0; i < n; ++i) {
      float scaled = h[i] * inverse;
      out.data[t * out.tokenStride + i] =
          floatToBf16(scaled * bf16ToFloat(weight[i]));
    }
  }
}

void referenceKvWrite(const Layout &layout, Stream stream, ConstStreamBuffer x,
                      int64_t tokens, const int64_t *slots, KvCacheBuffer kv) {
  const int64_t w = layout.range(stream).width;
  const int64_t heads = layout.headsPerRank;
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t slot = slots[t];
    if (slot < 0 || slot >= kv.numBlocks * kv.blockSize)
      continue;
    int64_t block = slot / kv.blockSize, row = slot % kv.blockSize;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < w; ++c)
        kv.data[block * kv.blockStride + (row * heads + h) * w + c] =
            x.data[t * x.tokenStride + h * w + c];
  }
}

} // namespace inkling::reference
