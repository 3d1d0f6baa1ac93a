//===- HandDecodeKernel.cpp - A hand-written AVX-512 decode layer ---------===//
//
// Runs of 4 tokens; per run, head, stream and 64-byte line of 32 channels:
// the line's weights deinterleaved once into 8 registers (4 taps, even and
// odd channels), then per token the x line and 3 history lines loaded and
// widened to f32 in even-odd lanes (v << 16, v & 0xffff0000), the fma chain
// from 0 over the taps (oldest first, x last), + x, rounded to bf16 to
// nearest even (NaN: 0x7fc0, the lowering's canonical NaN); every load of
// the run's line before any store (a slot row and the next token's history
// rows are 4 KiB apart and alias in the low 12 address bits).
//
//===----------------------------------------------------------------------===//

#include "HandDecodeKernel.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace inkling::bench {

bool handDecodeHandles(const HandDecodeShape &shape) {
  for (int s = 0; s < 4; ++s)
    if (shape.width[s] % 32 != 0 || shape.offset[s] % 32 != 0)
      return false;
  return shape.heads > 0;
}

#if defined(__x86_64__)

bool handDecodeSupported() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw");
}

namespace {

#define INKLING_AVX512 __attribute__((target("avx512f,avx512bw")))

INKLING_AVX512 inline __m512 evenLanes(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
INKLING_AVX512 inline __m512 oddLanes(__m512i v) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

/// The rounded word of each f32 lane, in its low 16 bits.
INKLING_AVX512 inline __m512i roundLanes(__m512 v) {
  __m512i bits = _mm512_castps_si512(v);
  __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))),
      16);
  __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  return _mm512_mask_mov_epi32(_mm512_set1_epi32(0x7fc0), ordered, r);
}

/// Weights of 32 channels c.. ([c][4] bf16, 4 lines) as f32 per tap: even
/// channels in we, odd in wo. Dword d of the 64 holds the taps (2(d%2),
/// 2(d%2)+1) of channel d/2.
INKLING_AVX512 inline void lineWeights(const uint16_t *w, __m512 we[4],
                                       __m512 wo[4]) {
  __m512i q0 = _mm512_loadu_si512(w), q1 = _mm512_loadu_si512(w + 32),
          q2 = _mm512_loadu_si512(w + 64), q3 = _mm512_loadu_si512(w + 96);
  // Lane j of (even channel, taps 01) is dword 4j: j < 8 from q0:q1 (index
  // 4j), j >= 8 from q2:q3 (index 4j - 32); +1: taps 23; +2, +3: odd.
  const __m512i base = _mm512_set_epi32(28, 24, 20, 16, 12, 8, 4, 0, 28, 24, 20,
                                        16, 12, 8, 4, 0);
  auto pick = [&](int k) INKLING_AVX512 {
    __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(k));
    __m512i lo = _mm512_permutex2var_epi32(q0, idx, q1);
    __m512i hi = _mm512_permutex2var_epi32(q2, idx, q3);
    return _mm512_mask_blend_epi32(0xff00, lo, hi);
  };
  __m512i e01 = pick(0), e23 = pick(1), o01 = pick(2), o23 = pick(3);
  we[0] = evenLanes(e01), we[1] = oddLanes(e01);
  we[2] = evenLanes(e23), we[3] = oddLanes(e23);
  wo[0] = evenLanes(o01), wo[1] = oddLanes(o01);
  wo[2] = evenLanes(o23), wo[3] = oddLanes(o23);
}

/// Tokens [t0, t0 + N) of the run, every head, stream and line; `prepared`:
/// the call's deinterleaved weights, or null (deinterleaved here). N is a
/// template argument so that the run's lines stay in registers (with a
/// run-time count the compiler kept them in stack arrays).
template <int N>
INKLING_AVX512 void
run(const HandDecodeShape &shape, const HandDecodeToken *tokens, int64_t t0,
    const __m512 *prepared, uint16_t *cache, const uint16_t *const x[4],
    const uint16_t *const w[4], uint16_t *const y[4]) {
  const __m512 *next = prepared;
  for (int64_t h = 0; h < shape.heads; ++h) {
    const int64_t head = h * shape.headStride;
    for (int s = 0; s < 4; ++s) {
      const int64_t width = shape.width[s], row = shape.heads * width;
      for (int64_t c = 0; c < width; c += 32) {
        __m512 we[4], wo[4];
        if (prepared) {
          for (int k = 0; k < 4; ++k)
            we[k] = next[k], wo[k] = next[4 + k];
          next += 8;
        } else {
          lineWeights(w[s] + (h * width + c) * 4, we, wo);
        }
        __m512i xs[N], ys[N];
        for (int i = 0; i < N; ++i) {
          const HandDecodeToken &tok = tokens[i];
          const int64_t col = head + shape.offset[s] + c;
          __m512i xr =
              _mm512_loadu_si512(x[s] + (t0 + i) * row + h * width + c);
          __m512 xe = evenLanes(xr), xo = oddLanes(xr);
          __m512 ae = _mm512_setzero_ps(), ao = _mm512_setzero_ps();
          for (int k = 0; k < 3; ++k) {
            __m512i hr = _mm512_loadu_si512(cache + tok.history[k] + col);
            ae = _mm512_fmadd_ps(evenLanes(hr), we[k], ae);
            ao = _mm512_fmadd_ps(oddLanes(hr), wo[k], ao);
          }
          ae = _mm512_add_ps(_mm512_fmadd_ps(xe, we[3], ae), xe);
          ao = _mm512_add_ps(_mm512_fmadd_ps(xo, wo[3], ao), xo);
          // Even channels' words low, odd ones' high.
          ys[i] = _mm512_or_si512(roundLanes(ae),
                                  _mm512_slli_epi32(roundLanes(ao), 16));
          xs[i] = xr;
        }
        for (int i = 0; i < N; ++i) {
          const HandDecodeToken &tok = tokens[i];
          if (tok.slot >= 0)
            _mm512_storeu_si512(cache + tok.slot + head + shape.offset[s] + c,
                                xs[i]);
          _mm512_storeu_si512(y[s] + (t0 + i) * row + h * width + c, ys[i]);
        }
      }
    }
  }
}

INKLING_AVX512 void layer(const HandDecodeShape &shape,
                          const std::vector<HandDecodeToken> &tokens,
                          uint16_t *cache, const uint16_t *const x[4],
                          const uint16_t *const w[4], uint16_t *const y[4]) {
  const int64_t count = static_cast<int64_t>(tokens.size());
  // With more than one run, every line's weights deinterleaved once per
  // call into f32 (8 registers' worth per line, in walk order), not once per
  // run: the deinterleave's 12 shuffles cost as much as a token's line.
  thread_local std::vector<__m512> prepared;
  const bool prepare = count > kHandRunTokens;
  if (prepare) {
    prepared.clear();
    for (int64_t h = 0; h < shape.heads; ++h)
      for (int s = 0; s < 4; ++s)
        for (int64_t c = 0; c < shape.width[s]; c += 32) {
          __m512 we[4], wo[4];
          lineWeights(w[s] + (h * shape.width[s] + c) * 4, we, wo);
          prepared.insert(prepared.end(), we, we + 4);
          prepared.insert(prepared.end(), wo, wo + 4);
        }
  }
  const __m512 *weights = prepare ? prepared.data() : nullptr;
  for (int64_t t0 = 0; t0 < count; t0 += kHandRunTokens) {
    const int n =
        static_cast<int>(std::min<int64_t>(kHandRunTokens, count - t0));
    withRunLength(n, [&](auto length) {
      run<length()>(shape, tokens.data() + t0, t0, weights, cache, x, w, y);
    });
  }
}

} // namespace

void handDecodeLayer(const HandDecodeShape &shape,
                     const std::vector<HandDecodeToken> &tokens,
                     uint16_t *cache, const uint16_t *const x[4],
                     const uint16_t *const w[4], uint16_t *const y[4]) {
  layer(shape, tokens, cache, x, w, y);
}

#else

bool handDecodeSupported() { return false; }

void handDecodeLayer(const HandDecodeShape &,
                     const std::vector<HandDecodeToken> &, uint16_t *,
                     const uint16_t *const[4], const uint16_t *const[4],
                     uint16_t *const[4]) {}

#endif

} // namespace inkling::bench
