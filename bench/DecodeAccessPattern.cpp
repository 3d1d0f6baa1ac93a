//===- DecodeAccessPattern.cpp - The decode layer's bytes, no arithmetic --===//
//
// The kernel of DecodeAccessPattern.h: the loop structure of
// HandDecodeKernel.cpp with the conv's arithmetic replaced by xors
// (vpternlogd), and the slot rows stored non-temporal.
//
//===----------------------------------------------------------------------===//

#include "DecodeAccessPattern.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace inkling::bench {

bool accessPatternAligned(const HandDecodeShape &shape,
                          const std::vector<HandDecodeToken> &tokens,
                          const uint16_t *cache) {
  constexpr int64_t kLineElements = 32; // 64 bytes of bf16
  if (reinterpret_cast<uintptr_t>(cache) % 64 != 0 ||
      shape.headStride % kLineElements != 0)
    return false;
  return std::all_of(tokens.begin(), tokens.end(), [](const auto &token) {
    return token.slot < 0 || token.slot % kLineElements == 0;
  });
}

int64_t accessPatternMismatches(const HandDecodeShape &shape,
                                const std::vector<HandDecodeToken> &tokens,
                                const uint16_t *cache,
                                const uint16_t *const x[4],
                                const uint16_t *const w[4],
                                const uint16_t *const y[4]) {
  int64_t mismatches = 0;
  for (int s = 0; s < 4; ++s) {
    const int64_t width = shape.width[s], row = shape.heads * width;
    for (size_t t = 0; t < tokens.size(); ++t)
      for (int64_t h = 0; h < shape.heads; ++h)
        for (int64_t c = 0; c < width; ++c) {
          const int64_t col = h * shape.headStride + shape.offset[s] + c;
          const int64_t at = static_cast<int64_t>(t) * row + h * width + c;
          uint16_t expected = x[s][at];
          for (int64_t history : tokens[t].history)
            expected ^= cache[history + col];
          const int64_t line = c - c % 32;
          for (int64_t k = 0; k < 4; ++k)
            expected ^= w[s][(h * width + line) * 4 + 32 * k + c % 32];
          mismatches += y[s][at] != expected;
        }
  }
  return mismatches;
}

#if defined(__x86_64__)

bool accessPatternSupported() { return handDecodeSupported(); }

namespace {

#define INKLING_AVX512 __attribute__((target("avx512f,avx512bw")))

/// Tokens [t0, t0 + N): per head, stream and line, every load of the line
/// (x and the history rows) before its stores (y, the slot row). N is a
/// template argument (withRunLength) so that the run's lines stay in
/// registers.
template <int N>
INKLING_AVX512 void
walkTokens(const HandDecodeShape &shape, const HandDecodeToken *tokens,
           int64_t t0, uint16_t *cache, const uint16_t *const x[4],
           const uint16_t *const w[4], uint16_t *const y[4]) {
  for (int64_t h = 0; h < shape.heads; ++h) {
    const int64_t head = h * shape.headStride;
    for (int s = 0; s < 4; ++s) {
      const int64_t width = shape.width[s], row = shape.heads * width;
      for (int64_t c = 0; c < width; c += 32) {
        const int64_t col = head + shape.offset[s] + c;
        // The line's weights, once for the tokens (0x96: three-way xor).
        const uint16_t *lineWeights = w[s] + (h * width + c) * 4;
        __m512i weights =
            _mm512_xor_si512(_mm512_ternarylogic_epi32(
                                 _mm512_loadu_si512(lineWeights),
                                 _mm512_loadu_si512(lineWeights + 32),
                                 _mm512_loadu_si512(lineWeights + 64), 0x96),
                             _mm512_loadu_si512(lineWeights + 96));
        __m512i xs[N], ys[N];
        for (int i = 0; i < N; ++i) {
          const HandDecodeToken &tok = tokens[i];
          xs[i] = _mm512_loadu_si512(x[s] + (t0 + i) * row + h * width + c);
          __m512i h0 = _mm512_loadu_si512(cache + tok.history[0] + col);
          __m512i h1 = _mm512_loadu_si512(cache + tok.history[1] + col);
          __m512i h2 = _mm512_loadu_si512(cache + tok.history[2] + col);
          ys[i] = _mm512_ternarylogic_epi32(
              _mm512_ternarylogic_epi32(h0, h1, h2, 0x96), xs[i], weights,
              0x96);
        }
        for (int i = 0; i < N; ++i) {
          if (tokens[i].slot >= 0)
            _mm512_stream_si512(
                reinterpret_cast<__m512i *>(cache + tokens[i].slot + col),
                xs[i]);
          _mm512_storeu_si512(y[s] + (t0 + i) * row + h * width + c, ys[i]);
        }
      }
    }
  }
}

/// Every 64-byte line of a token's history rows, at every head, into L2.
void prefetchHistory(const HandDecodeShape &shape, const HandDecodeToken &tok,
                     const uint16_t *cache, int64_t rowWidth) {
  for (int64_t h = 0; h < shape.heads; ++h)
    for (const int64_t history : tok.history)
      for (int64_t c = 0; c < rowWidth; c += 32)
        _mm_prefetch(reinterpret_cast<const char *>(cache + history +
                                                    h * shape.headStride + c),
                     _MM_HINT_T1);
}

} // namespace

void decodeAccessPattern(AccessOrder order, const HandDecodeShape &shape,
                         const std::vector<HandDecodeToken> &tokens,
                         uint16_t *cache, const uint16_t *const x[4],
                         const uint16_t *const w[4], uint16_t *const y[4]) {
  const int64_t count = static_cast<int64_t>(tokens.size());
  if (order == AccessOrder::Runs) {
    for (int64_t t0 = 0; t0 < count; t0 += kHandRunTokens)
      withRunLength(
          static_cast<int>(std::min<int64_t>(kHandRunTokens, count - t0)),
          [&](auto length) {
            walkTokens<length()>(shape, tokens.data() + t0, t0, cache, x, w, y);
          });
  } else {
    // A head's part of a row: the four streams side by side.
    int64_t rowWidth = 0;
    for (int s = 0; s < 4; ++s)
      rowWidth = std::max(rowWidth, shape.offset[s] + shape.width[s]);
    for (int64_t t = 0; t < count; ++t) {
      if (t + 1 < count)
        prefetchHistory(shape, tokens[t + 1], cache, rowWidth);
      walkTokens<1>(shape, tokens.data() + t, t, cache, x, w, y);
    }
  }
  _mm_sfence(); // the non-temporal stores ordered before the caller's reads
}

#else

bool accessPatternSupported() { return false; }

void decodeAccessPattern(AccessOrder, const HandDecodeShape &,
                         const std::vector<HandDecodeToken> &, uint16_t *,
                         const uint16_t *const[4], const uint16_t *const[4],
                         uint16_t *const[4]) {}

#endif

} // namespace inkling::bench
