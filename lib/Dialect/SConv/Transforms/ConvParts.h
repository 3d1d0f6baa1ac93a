//===- ConvParts.h - A conv's operands, stream by stream ------*- C++ -*-===//
//
// `sconv.conv` and `sconv.fused_conv` seen alike, so that fusions can merge
// them and build the fused op.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_DIALECT_SCONV_TRANSFORMS_CONVPARTS_H
#define INKLING_LIB_DIALECT_SCONV_TRANSFORMS_CONVPARTS_H

#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/IR/Builders.h"

namespace inkling::sconv {

struct ConvParts {
  llvm::SmallVector<mlir::Value> inputs, weights, biases, outs;
  llvm::SmallVector<Stream> streams;
  mlir::Value cache, step;
  LayoutAttr layout;
  bool residual = true;
  Activation activation = Activation::None;
  bool insert = false;

  /// The parts of a `sconv.conv` or `sconv.fused_conv`; nullopt otherwise.
  static std::optional<ConvParts> of(mlir::Operation *op);

  /// Same cache, step, layout, residual, activation, insert flag and bias
  /// presence, and no stream in common: one fused op can do both.
  bool canMergeWith(const ConvParts &other) const;

  /// Appends `other`'s streams after this one's.
  void append(const ConvParts &other);

  FusedConvOp build(mlir::OpBuilder &builder, mlir::Location loc) const;
};

} // namespace inkling::sconv

#endif // INKLING_LIB_DIALECT_SCONV_TRANSFORMS_CONVPARTS_H
