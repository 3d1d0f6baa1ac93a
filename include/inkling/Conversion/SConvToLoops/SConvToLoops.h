//===- SConvToLoops.h - sconv to scf/vector/memref loops --------*- C++ -*-===//
//
// The loop-level lowering of the sconv dialect (docs/Design.md section 5): one
// loop nest per op, shared by the CPU and GPU backends.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_SCONVTOLOOPS_H
#define INKLING_CONVERSION_SCONVTOLOOPS_SCONVTOLOOPS_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace inkling {

/// A discardable unit attribute the loop lowering puts on a `vector.store`
/// of one 64-byte line whose address is a multiple of 64 bytes whenever its
/// memref's base (aligned pointer plus offset) is: the layout's strides and
/// offsets prove the rest. `inkling-cpu-streaming-stores` may then claim
/// 64-byte alignment for it after checking the base at run time.
inline constexpr llvm::StringLiteral kLineAlignedAttrName =
    "inkling.line_aligned";

struct SConvToLoopsOptions {
  /// Guard slot and block ids against the cache size at run time (see the
  /// `sconv-lower-to-loops` pass description).
  bool checked = false;
  /// In a fused op's nest, run one inner loop per stream (in row order)
  /// instead of one loop over the concatenated chunks (see the
  /// `sconv-lower-to-loops` pass description). The CPU's choice.
  bool splitStreams = false;
  /// Unchecked convs: choose each tap's source (step input, cache row
  /// through the block table, or 0) once per (token, head) before the chunk
  /// loop instead of per chunk (see the `sconv-lower-to-loops` pass
  /// description). The CPU's choice.
  bool hoistTaps = false;
  /// Unchecked convs, for steps whose sequences average at least `kernel`
  /// tokens (chosen per call): a nest over (run of 4 tokens, head) whose
  /// innermost loop walks the tokens of one sequence in the run, carrying
  /// the last kernel - 1 inputs and keeping the weights out of it (see the
  /// `sconv-lower-to-loops` pass description). The CPU's choice.
  bool tokenRuns = false;
  /// In the token-run nest, keep a chunk's f32 lanes in even-odd order
  /// (LaneOrder::EvenOdd; see the `sconv-lower-to-loops` pass description).
  /// The CPU's choice.
  bool evenOddLanes = false;
};

/// Patterns lowering `sconv.bind`, `sconv.insert`, `sconv.conv`,
/// `sconv.insert_packed` and `sconv.fused_conv` to
/// `scf.parallel` + `vector` + `memref` + `arith` + `math`, and erasing
/// unused `sconv.step` ops. An insert or conv whose step is not produced by
/// a visible `sconv.step` does not match.
void populateSConvToLoopsPatterns(mlir::RewritePatternSet &patterns,
                                  const SConvToLoopsOptions &options = {});

} // namespace inkling

#endif // INKLING_CONVERSION_SCONVTOLOOPS_SCONVTOLOOPS_H
