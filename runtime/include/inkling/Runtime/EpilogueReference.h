//===- EpilogueReference.h - A plain C++ reference of the epilogues -*- C++
//-*-===//
//
// An independent model of the conv's neighbours (docs/Design.md section 4,
// "Epilogues"; issue #29): the RMSNorm of a row in the project's stated
// arithmetic and the attention layer's paged KV write. Written from the
// spec with scalar loops and a recursive tree (not from the lowering, which
// never calls it); the JIT tests check the lowering against it bit for bit.
// Same conventions as Reference.h (bf16 values as their 16-bit patterns).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_EPILOGUEREFERENCE_H
#define INKLING_RUNTIME_EPILOGUEREFERENCE_H

#include "inkling/Runtime/Reference.h"

#include <cstdint>

namespace inkling::reference {

/// The sum of the squares of `n` floats (n a multiple of 8), in the order
/// docs/Design.md section 4 states: each 16-byte chunk of 8 values gives
/// ((v0^2 + v4^2) + (v2^2 + v6^2)) + ((v1^2 + v5^2) + (v3^2 + v7^2)); the
/// chunk sums, padded with zeros to a power of two, are added as a balanced
/// binary tree (each half's sum, then the two halves).
float referenceSumOfSquares(const float *values, int64_t n);

/// RMSNorm of one row of `n` bf16 (n a multiple of 8) with `weight` [n]:
/// out[c] = bf16((x[c] * (1 / sqrt(ss / n + eps))) * weight[c]), all in f32.
void referenceRmsNormRow(const uint16_t *row, int64_t n, const uint16_t *weight,
                         float epsilon, uint16_t *out);

/// sconv.rms_norm over every (token, head) row of a stream of `tokens` rows.
void referenceRmsNorm(const Layout &layout, Stream stream, ConstStreamBuffer x,
                      int64_t tokens, const uint16_t *weight, float epsilon,
                      StreamBuffer out);

/// sconv.add_rms_norm for `tokens` tokens of a stream (ATTN or MLP) whose
/// rows are [H*w]: sum[t, i] = bf16(y[t, i] + residual[t, i]); the sum of
/// squares of the row's h: each head's by referenceSumOfSquares, then the
/// heads' sums (zeros up to a power of two) as a balanced tree;
/// out[t, i] = bf16((h[t, i] * (1 / sqrt(ss / (H*w) + eps))) * weight[i]).
void referenceAddRmsNorm(const Layout &layout, Stream stream,
                         ConstStreamBuffer y, ConstStreamBuffer residual,
                         int64_t tokens, const uint16_t *weight, float epsilon,
                         StreamBuffer sum, StreamBuffer out);

/// The attention layer's KV cache: element [block, row, h, c] at
/// `data[block * blockStride + (row * H + h) * w + c]` (NHD).
struct KvCacheBuffer {
  uint16_t *data = nullptr;
  int64_t blockStride = 0;
  int64_t numBlocks = 0;
  int64_t blockSize = 0;
};

/// sconv.kv_write: for every token t < tokens with
/// 0 <= slots[t] < numBlocks * blockSize, every head and channel,
/// kv[slot / blockSize, slot % blockSize, h, c] = x[t, h, c].
void referenceKvWrite(const Layout &layout, Stream stream, ConstStreamBuffer x,
                      int64_t tokens, const int64_t *slots, KvCacheBuffer kv);

} // namespace inkling::reference

#endif // INKLING_RUNTIME_EPILOGUEREFERENCE_H
