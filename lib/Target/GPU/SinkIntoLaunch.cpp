//===- SinkIntoLaunch.cpp - inkling-gpu-sink ------------------------------===//
//
// Sinks the host-side index and view computations into the launches.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace inkling::gpu {
#define GEN_PASS_DEF_SINKINTOLAUNCHPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// inkling-gpu-sink
//===----------------------------------------------------------------------===//

struct SinkIntoLaunchPass : impl::SinkIntoLaunchPassBase<SinkIntoLaunchPass> {

  static bool sinkable(Operation *op) {
    return op->getNumRegions() == 0 && op->getNumResults() > 0 &&
           isMemoryEffectFree(op);
  }

  /// Clones the sinkable producers of values the launch uses from above
  /// into its body, until only block arguments (the host function's) and
  /// results of ops with effects remain. Unlike upstream's
  /// sinkOperationsIntoLaunchOp this also sinks ops whose operands are not
  /// used in the launch yet (a memref.view of a host argument).
  static void sink(mlir::gpu::LaunchOp launch) {
    Region &body = launch.getBody();
    OpBuilder builder(&body.front(), body.front().begin());
    while (true) {
      SetVector<Value> above;
      getUsedValuesDefinedAbove(body, above);
      SmallVector<Operation *> producers;
      for (Value v : above)
        if (Operation *op = v.getDefiningOp())
          if (sinkable(op) && !llvm::is_contained(producers, op))
            producers.push_back(op);
      if (producers.empty())
        return;
      // This round sinks only producers that use none of the others (each
      // clone then depends only on values from above, and goes to the start
      // of the body); the others follow in later rounds, before them.
      SmallVector<Operation *> ready;
      for (Operation *op : producers)
        if (llvm::none_of(op->getOperands(), [&](Value operand) {
              return llvm::is_contained(producers, operand.getDefiningOp());
            }))
          ready.push_back(op);
      producers = std::move(ready);
      for (Operation *op : producers) {
        Operation *clone = builder.clone(*op);
        for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
          replaceAllUsesInRegionWith(from, to, body);
      }
      builder.setInsertionPoint(&body.front(), body.front().begin());
    }
  }

  void runOnOperation() override {
    getOperation().walk([&](mlir::gpu::LaunchOp launch) { sink(launch); });
  }
};

} // namespace

} // namespace inkling::gpu
