//===- WorkgroupAttributions.cpp - inkling-gpu-workgroup-attributions -----===//
//
// A `memref.alloca` of workgroup memory in a `gpu.launch` (what the GPU's
// RowThreads makes for a block's buffer) becomes a workgroup attribution of
// the launch: one buffer per block, which the NVVM lowering makes a shared
// (address space 3) global.
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace inkling::gpu {
#define GEN_PASS_DEF_WORKGROUPATTRIBUTIONSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

bool isWorkgroup(MemRefType type) {
  auto space =
      dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space &&
         space.getValue() == mlir::gpu::GPUDialect::getWorkgroupAddressSpace();
}

struct WorkgroupAttributionsPass
    : impl::WorkgroupAttributionsPassBase<WorkgroupAttributionsPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](memref::AllocaOp alloca) {
      if (!isWorkgroup(alloca.getType()))
        return WalkResult::advance();
      auto launch = alloca->getParentOfType<mlir::gpu::LaunchOp>();
      if (!launch || !alloca.getType().hasStaticShape()) {
        alloca.emitError("a workgroup buffer outside a gpu.launch, or of a "
                         "dynamic shape, has no per-block storage");
        return WalkResult::interrupt();
      }
      Value buffer =
          launch.addWorkgroupAttribution(alloca.getType(), alloca.getLoc());
      alloca.replaceAllUsesWith(buffer);
      alloca.erase();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
} // namespace inkling::gpu
