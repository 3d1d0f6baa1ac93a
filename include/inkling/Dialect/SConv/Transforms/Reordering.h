//===- Reordering.h - When two ops touching sconv caches commute -*- C++
//-*-===//
//
// The legality behind every sconv fusion: two ops may be swapped when no
// memory effect of one conflicts with an effect of the other. Effects come
// from the ops' MemoryEffectOpInterface (recursively through regions);
// aliasing from MLIR's alias analysis refined by `llvm.noalias` function
// arguments; effects on the same cache are refined by
// StepCacheAccessOpInterface: with the same step, cache and layout, a history
// read commutes with a step write, and step writes of disjoint streams
// commute. Nothing here looks at op names.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_DIALECT_SCONV_TRANSFORMS_REORDERING_H
#define INKLING_DIALECT_SCONV_TRANSFORMS_REORDERING_H

#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/IR/Operation.h"

namespace inkling::sconv {

class ReorderingOracle {
public:
  explicit ReorderingOracle(mlir::AliasAnalysis &aliasAnalysis)
      : aliasAnalysis(aliasAnalysis) {}

  /// True if executing `first` then `second` has the same effect as
  /// `second` then `first`. Unknown effects (an op without a memory-effect
  /// interface, an effect on no particular value) never commute with a
  /// write.
  bool commute(mlir::Operation *first, mlir::Operation *second);

  /// True if `op` can move from its place to just before `target` (later in
  /// the same block) or just after `target` (earlier in the same block):
  /// it commutes with every op in between, and, when moving up, its operands
  /// are defined above the new place.
  bool canMoveDownTo(mlir::Operation *op, mlir::Operation *target);
  bool canMoveUpTo(mlir::Operation *op, mlir::Operation *target);

  /// Conservative may-alias of two memref (or step) values.
  bool mayAlias(mlir::Value lhs, mlir::Value rhs);

private:
  /// The shared part of canMoveDownTo (`down`) and canMoveUpTo.
  bool commutesBetween(mlir::Operation *op, mlir::Operation *target, bool down);

  mlir::AliasAnalysis &aliasAnalysis;
};

} // namespace inkling::sconv

#endif // INKLING_DIALECT_SCONV_TRANSFORMS_REORDERING_H
