//===- HandDecodeKernel.h - A hand-written AVX-512 decode layer -*- C++ -*-===//
//
// The ceiling inkling-bench-fusion measures the compiler's decode against:
// the conv-insert layer of a decode step (every tap a history row) written
// by hand with AVX-512 intrinsics, reading the same inputs (bf16 weights
// [rows, W], x, the cache through each token's row offsets) and producing
// the same bits (y and the inserted rows; the benchmark checks them against
// the JIT's output before it times anything). Not part of the product: it
// handles W = 4, no bias, no activation, residual on, stream widths and
// offsets that are multiples of 32 channels, and nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_BENCH_HANDDECODEKERNEL_H
#define INKLING_BENCH_HANDDECODEKERNEL_H

#include <cstdint>
#include <type_traits>
#include <vector>

namespace inkling::bench {

/// The layer's geometry, in bf16 elements.
struct HandDecodeShape {
  int64_t heads = 0;
  /// Per stream (K, V, ATTN, MLP): its width and its offset in a cache row.
  int64_t width[4] = {}, offset[4] = {};
  /// Elements between one head's page part and the next (N * D).
  int64_t headStride = 0;
};

/// One decode token: the cache offsets of its W - 1 = 3 history rows
/// (oldest first) and of its slot row (-1: not stored), at head 0.
struct HandDecodeToken {
  int64_t history[3];
  int64_t slot;
};

/// Tokens per run of the hand-written kernels, as the decode-run nest's.
inline constexpr int kHandRunTokens = 4;

/// Calls `body(std::integral_constant<int, N>{})` with N = n (1 to
/// kHandRunTokens): a run's length as a compile-time constant, so that the
/// kernels keep its lines in registers (with a run-time count clang kept
/// them in stack arrays, docs/fusion.md).
template <typename Body> void withRunLength(int n, Body &&body) {
  static_assert(kHandRunTokens == 4, "one case per run length");
  switch (n) {
  case 4:
    return body(std::integral_constant<int, 4>{});
  case 3:
    return body(std::integral_constant<int, 3>{});
  case 2:
    return body(std::integral_constant<int, 2>{});
  default:
    return body(std::integral_constant<int, 1>{});
  }
}

/// Whether this machine runs the kernel (x86-64 with AVX-512 F and BW).
bool handDecodeSupported();

/// Whether the kernel handles `shape` (widths and offsets multiples of 32).
bool handDecodeHandles(const HandDecodeShape &shape);

/// The layer: per stream s, y[s][t, h, :] = bf16(sum of the 4 taps times
/// w[s] + x) and x[s][t, h, :] stored at the token's slot row. x[s], y[s]:
/// [T, heads, width] row-major; w[s]: [heads * width, 4].
void handDecodeLayer(const HandDecodeShape &shape,
                     const std::vector<HandDecodeToken> &tokens,
                     uint16_t *cache, const uint16_t *const x[4],
                     const uint16_t *const w[4], uint16_t *const y[4]);

} // namespace inkling::bench

#endif // INKLING_BENCH_HANDDECODEKERNEL_H
