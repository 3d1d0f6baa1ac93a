//===- DecodeAccessPattern.h - Decode's bytes, no arithmetic ----*- C++ -*-===//
//
// A floor under the decode layer that the memcpy bound is not: the layer's
// own loads and stores (each token's x line and W - 1 = 3 history lines,
// its y line and its slot row; each line's weights once per run) at the
// layer's addresses, with xors where the layer has its fma chain and
// rounding. memcpy moves the same number of bytes from two contiguous
// buffers; the layer's rows are 2.5 KiB
// pieces (one head's part of a page row) scattered over the cache's pages,
// and this kernel measures what those pieces cost on their own. Not part of
// the product: inkling-bench-fusion (the layer) and inkling-bench-epilogue
// (the fused K/V op) check its output (below) and time it.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_BENCH_DECODEACCESSPATTERN_H
#define INKLING_BENCH_DECODEACCESSPATTERN_H

#include "HandDecodeKernel.h"

namespace inkling::bench {

/// The order in which the kernel walks the step's rows.
enum class AccessOrder {
  /// The compiler's decode-run nest: runs of 4 tokens, then head, stream,
  /// 64-byte line, the run's loads of a line before its stores.
  Runs,
  /// One token at a time (every head, stream and line of it), the next
  /// token's history rows prefetched into L2 meanwhile: the order the rows
  /// alone ran fastest in on the 2-core Zen 4 VM (docs/fusion.md); a line's
  /// weights are then loaded per token.
  TokensPrefetched,
};

/// Whether this machine runs the kernel (as handDecodeSupported).
bool accessPatternSupported();

/// Whether every slot row's line starts 64-byte aligned (the cache's base,
/// each slot offset and the head stride), as the kernel's non-temporal
/// stores need: with widths and offsets multiples of 32 channels
/// (handDecodeHandles), every line of the row then is.
bool accessPatternAligned(const HandDecodeShape &shape,
                          const std::vector<HandDecodeToken> &tokens,
                          const uint16_t *cache);

/// Per stream s, token t, head h, channel c: y[s][t, h, c] = x ^ h0 ^ h1
/// ^ h2 ^ w0 ^ w1 ^ w2 ^ w3 (as 16-bit words: the token's x row, its three
/// history rows, and of the 32-channel line c0 = c - c % 32 the weights'
/// elements (h * width + c0) * 4 + 32k + c % 32, k < 4: the line's four
/// 64-byte weight lines xored), x stored at the token's slot row with
/// non-temporal stores (as the decode-run nest streams its cache rows), y
/// with ordinary ones. Shapes as for handDecodeLayer; `shape` must satisfy
/// handDecodeHandles and the rows accessPatternAligned.
void decodeAccessPattern(AccessOrder order, const HandDecodeShape &shape,
                         const std::vector<HandDecodeToken> &tokens,
                         uint16_t *cache, const uint16_t *const x[4],
                         const uint16_t *const w[4], uint16_t *const y[4]);

/// The number of elements of y (every stream, token, head and channel) that
/// differ from what decodeAccessPattern must compute (above), computed here
/// element by element from `cache` as it was before the call (its history
/// rows). A kernel that skipped a row or a line would differ: the floor it
/// gives is then of the whole traffic.
int64_t accessPatternMismatches(const HandDecodeShape &shape,
                                const std::vector<HandDecodeToken> &tokens,
                                const uint16_t *cache,
                                const uint16_t *const x[4],
                                const uint16_t *const w[4],
                                const uint16_t *const y[4]);

} // namespace inkling::bench

#endif // INKLING_BENCH_DECODEACCESSPATTERN_H
