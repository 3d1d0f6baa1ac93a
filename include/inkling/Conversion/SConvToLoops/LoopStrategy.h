//===- LoopStrategy.h - A backend's forms of the shared nests ---*- C++ -*-===//
//
// The hook through which a backend chooses the forms of the loop nests that
// `sconv-lower-to-loops` builds (IREE's split: the shared conversion emits
// the nest every backend needs; the CPU's forms live with the CPU, in
// lib/Target/CPU/CPULoopStrategy.cpp). Without a strategy the nests are the
// shared ones, which the GPU maps to blocks and threads.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_LOOPSTRATEGY_H
#define INKLING_CONVERSION_SCONVTOLOOPS_LOOPSTRATEGY_H

#include "mlir/IR/Builders.h"

namespace inkling {

namespace loops {
class ConvNestBuilder;
} // namespace loops

class LoopStrategy {
public:
  virtual ~LoopStrategy();

  /// In a fused op's nest (insert_packed, fused_conv), run one inner loop
  /// per stream in row order instead of one loop over the concatenated
  /// chunks (see loops::emitNest).
  virtual bool splitStreams() const { return false; }

  /// In an unchecked conv's (token, head) nest, choose each tap's source
  /// once per (token, head) before the chunk loop (see the
  /// `inkling-cpu-lower-to-loops` pass description).
  virtual bool hoistTaps() const { return false; }

  /// Emits the nest of one conv (sconv.conv, sconv.fused_conv) at `b`'s
  /// insertion point, from the builder's pieces. The default: the shared
  /// (token, head) nest, `nest.emitTokenNest(b, loc)`.
  virtual void emitConvNest(loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                            mlir::Location loc) const;
};

} // namespace inkling

#endif // INKLING_CONVERSION_SCONVTOLOOPS_LOOPSTRATEGY_H
