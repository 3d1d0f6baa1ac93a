//===- SConvToLoops.h - sconv to scf/vector/memref loops --------*- C++ -*-===//
//
// The loop-level lowering of the sconv dialect (docs/Design.md section 5): one
// loop nest per op, shared by the CPU and GPU backends; a backend's forms of
// the nests come through a LoopStrategy (LoopStrategy.h).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_SCONVTOLOOPS_H
#define INKLING_CONVERSION_SCONVTOLOOPS_SCONVTOLOOPS_H

#include "inkling/Conversion/SConvToLoops/LoopStrategy.h"

#include "llvm/Support/LogicalResult.h"

#include <memory>

namespace mlir {
class Operation;
class Pass;
class RewritePatternSet;
} // namespace mlir

namespace inkling {

struct SConvLowerToLoopsOptions;

struct SConvToLoopsOptions {
  /// Guard slot and block ids against the cache size at run time (see the
  /// `sconv-lower-to-loops` pass description).
  bool checked = false;
  /// The backend's forms of the nests; null: the shared forms. Must outlive
  /// the patterns.
  const LoopStrategy *strategy = nullptr;
};

/// Patterns lowering `sconv.bind`, `sconv.insert`, `sconv.conv`,
/// `sconv.insert_packed` and `sconv.fused_conv` to
/// `scf.parallel` + `vector` + `memref` + `arith` + `math`, and erasing
/// unused `sconv.step` ops. An insert or conv whose step is not produced by
/// a visible `sconv.step` does not match.
void populateSConvToLoopsPatterns(mlir::RewritePatternSet &patterns,
                                  const SConvToLoopsOptions &options = {});

/// What `sconv-lower-to-loops` does to `root`: checks that every op reading
/// a step's metadata sees its `sconv.step`, applies the patterns, and
/// reports any sconv op left but an unused step (errors on the ops).
llvm::LogicalResult lowerSConvToLoops(mlir::Operation *root,
                                      const SConvToLoopsOptions &options);

/// `sconv-lower-to-loops` building its nests in the forms of `strategy`
/// (null: the shared forms): how a backend's pipeline adds the pass.
std::unique_ptr<mlir::Pass>
createSConvLowerToLoops(const SConvLowerToLoopsOptions &options,
                        std::shared_ptr<const LoopStrategy> strategy);

} // namespace inkling

#endif // INKLING_CONVERSION_SCONVTOLOOPS_SCONVTOLOOPS_H
