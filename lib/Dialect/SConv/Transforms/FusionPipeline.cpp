//===- FusionPipeline.cpp - The sconv-fuse pass pipeline ------------------===//

#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"

#include <iterator>

namespace inkling::sconv {

std::optional<FusionStrategy> parseFusionStrategy(llvm::StringRef name) {
  for (const FusionStrategyInfo &info : kFusionStrategies)
    if (name == info.name)
      return info.strategy;
  return std::nullopt;
}

const char *fusionStrategyName(FusionStrategy strategy) {
  for (const FusionStrategyInfo &info : kFusionStrategies)
    if (info.strategy == strategy)
      return info.name;
  return "?";
}

llvm::cl::ValuesClass fusionStrategyValues() {
  static_assert(std::size(kFusionStrategies) == 3,
                "every FusionStrategy in the table");
  auto value = [](const FusionStrategyInfo &info) {
    return llvm::cl::OptionEnumValue{info.name, static_cast<int>(info.strategy),
                                     info.description};
  };
  return llvm::cl::ValuesClass({value(kFusionStrategies[0]),
                                value(kFusionStrategies[1]),
                                value(kFusionStrategies[2])});
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
      llvm::cl::init(FusionStrategy::ConvInsert), fusionStrategyValues()};
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
