//===- FusionPipeline.cpp - The sconv-fuse pass pipeline ------------------===//

#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSwitch.h"

namespace inkling::sconv {

std::optional<FusionStrategy> parseFusionStrategy(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<FusionStrategy>>(name)
      .Case("conv-insert", FusionStrategy::ConvInsert)
      .Case("packed-inserts", FusionStrategy::PackedInserts)
      .Case("none", FusionStrategy::None)
      .Default(std::nullopt);
}

void buildFusionPipeline(mlir::OpPassManager &pm, FusionStrategy strategy) {
  switch (strategy) {
  case FusionStrategy::ConvInsert:
    // Every insert with a conv of the same input is now inside that conv.
    pm.addPass(createSConvFuseConvInsert());
    // ATTN / MLP: the residual add and the hidden-row norm into the conv.
    pm.addPass(createSConvFuseEpilogues({/*remarks=*/false,
                                         /*hiddenRowOnly=*/true}));
    // Convs of one step that are ready together are one op (one nest).
    pm.addPass(createSConvFuseConvs());
    // Their row-local consumers (k_norm, the KV writes) run in that nest.
    pm.addPass(createSConvFuseEpilogues());
    // Inserts without a conv partner sit together and are packed.
    pm.addPass(createSConvDeferInserts());
    pm.addPass(createSConvFuseInserts());
    return;
  case FusionStrategy::PackedInserts:
    // Inserts sit at the latest legal point, next to each other.
    pm.addPass(createSConvDeferInserts());
    // Adjacent inserts of one step are one packed row write.
    pm.addPass(createSConvFuseInserts());
    // Convs of one step that are ready together are one op; epilogues as
    // above.
    pm.addPass(createSConvFuseEpilogues({/*remarks=*/false,
                                         /*hiddenRowOnly=*/true}));
    pm.addPass(createSConvFuseConvs());
    pm.addPass(createSConvFuseEpilogues());
    return;
  case FusionStrategy::None:
    return;
  }
}

namespace {
struct FusionPipelineOptions
    : public mlir::PassPipelineOptions<FusionPipelineOptions> {
  Option<FusionStrategy> strategy{
      *this, "strategy", llvm::cl::desc("How inserts and convs are fused"),
      llvm::cl::init(FusionStrategy::ConvInsert),
      llvm::cl::values(clEnumValN(FusionStrategy::ConvInsert, "conv-insert",
                                  "inserts fold into their convs (default)"),
                       clEnumValN(FusionStrategy::PackedInserts,
                                  "packed-inserts",
                                  "inserts are packed into one row write"),
                       clEnumValN(FusionStrategy::None, "none", "no fusion"))};
};
} // namespace

void registerFusionPipeline() {
  mlir::PassPipelineRegistration<FusionPipelineOptions>(
      "sconv-fuse",
      "Fuse a layer's sconv inserts and convs with the chosen strategy",
      [](mlir::OpPassManager &pm, const FusionPipelineOptions &options) {
        buildFusionPipeline(pm, options.strategy);
      });
}

} // namespace inkling::sconv
