//===- Passes.h - sconv passes ----------------------------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_H
#define INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace inkling::sconv {

#define GEN_PASS_DECL
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

/// How a layer's per-stream inserts and convs are fused.
enum class FusionStrategy {
  /// Each insert folds into the conv reading the same input, and the convs
  /// of one step fuse: a decoder layer is one loop nest per group of convs
  /// that are ready together (3 for K+V / ATTN / MLP). The default: fewest
  /// launches, and x is read once for both the conv and the insert.
  ConvInsert,
  /// Inserts are deferred and packed into one write of the whole head row;
  /// convs fuse separately. One more launch per layer, but the packed
  /// insert moves whole rows.
  PackedInserts,
  /// No fusion: one loop nest per op.
  None,
};

/// Every strategy's name and description: the one table of the names (the
/// `fusion` / `strategy` options, parseFusionStrategy, the C API's strings).
struct FusionStrategyInfo {
  FusionStrategy strategy;
  const char *name;
  const char *description;
};
inline constexpr FusionStrategyInfo kFusionStrategies[] = {
    {FusionStrategy::ConvInsert, "conv-insert",
     "inserts fold into their convs; convs fuse (default)"},
    {FusionStrategy::PackedInserts, "packed-inserts",
     "inserts are deferred and packed into one row write; convs fuse"},
    {FusionStrategy::None, "none", "no fusion: one loop nest per op"},
};

/// Parses "conv-insert", "packed-inserts" or "none".
std::optional<FusionStrategy> parseFusionStrategy(llvm::StringRef name);
/// The strategy's name in kFusionStrategies.
const char *fusionStrategyName(FusionStrategy strategy);
/// kFusionStrategies as the values of a command-line option.
llvm::cl::ValuesClass fusionStrategyValues();

/// Adds the fusion passes of `strategy` (nested on every function-like op).
void buildFusionPipeline(mlir::OpPassManager &pm, FusionStrategy strategy);

/// Registers `sconv-fuse{strategy=...}`.
void registerFusionPipeline();

} // namespace inkling::sconv

#endif // INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_H
