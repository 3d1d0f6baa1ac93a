//===- Patterns.h - The loop lowering's patterns, by file -------*- C++ -*-===//
//
// Internal to lib/Conversion/SConvToLoops: each file's populate function,
// which populateSConvToLoopsPatterns calls.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_CONVERSION_SCONVTOLOOPS_PATTERNS_H
#define INKLING_LIB_CONVERSION_SCONVTOLOOPS_PATTERNS_H

#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"

#include "mlir/IR/PatternMatch.h"

namespace inkling::loops {

/// sconv.insert and sconv.insert_packed (InsertLowering.cpp).
void populateInsertLoweringPatterns(mlir::RewritePatternSet &patterns,
                                    const SConvToLoopsOptions &options);
/// sconv.conv and sconv.fused_conv (ConvLowering.cpp).
void populateConvLoweringPatterns(mlir::RewritePatternSet &patterns,
                                  const SConvToLoopsOptions &options);
/// sconv.rms_norm, sconv.add_rms_norm, sconv.kv_write and the fused
/// epilogues (EpilogueLowering.cpp).
void populateEpilogueLoweringPatterns(mlir::RewritePatternSet &patterns,
                                      const SConvToLoopsOptions &options);

/// A pattern of the lowering that keeps the options.
template <typename Op> struct OptionsPattern : mlir::OpRewritePattern<Op> {
  OptionsPattern(mlir::MLIRContext *context, SConvToLoopsOptions options)
      : mlir::OpRewritePattern<Op>(context), options(options) {}

  SConvToLoopsOptions options;
};

} // namespace inkling::loops

#endif // INKLING_LIB_CONVERSION_SCONVTOLOOPS_PATTERNS_H
