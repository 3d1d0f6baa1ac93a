//===- RealLayout.h - The bundled model's layout, for tests -----*- C++ -*-===//
//
// The layout of examples/decoder_layer.mlir (kv_heads 8, head_dim 128,
// hidden 4096, kernel 4: D = 2048, a page of 131072 bytes at N = 4), which
// the runtime's tests and benchmarks share.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_BENCH_REALLAYOUT_H
#define INKLING_RUNTIME_BENCH_REALLAYOUT_H

#include "inkling/Runtime/Layout.h"

namespace inkling::testing {

/// The real layout's config at block size N (0: the kernel) and TP size.
inline LayoutConfig realLayoutConfig(int64_t blockSize = 0, int64_t tp = 1) {
  LayoutConfig config;
  config.kvHeads = 8;
  config.headDim = 128;
  config.hidden = 4096;
  config.kernel = 4;
  config.blockSize = blockSize;
  config.tp = tp;
  return config;
}

/// The real layout, derived (it is valid at every N and TP size the tests
/// use).
inline Layout realLayout(int64_t blockSize = 0, int64_t tp = 1) {
  return *Layout::derive(realLayoutConfig(blockSize, tp));
}

} // namespace inkling::testing

#endif // INKLING_RUNTIME_BENCH_REALLAYOUT_H
