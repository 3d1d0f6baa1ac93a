//===- HoistStaticAllocas.cpp - inkling-cpu-hoist-static-allocas ----------===//
//
// Fixed-size memref.alloca ops leave their loops for the entry block of the
// nearest omp.parallel or function (why and when: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_HOISTSTATICALLOCASPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

/// The op whose entry block `alloca` may move to, or null: the nearest
/// omp.parallel or function above it, reached through loops, alloca scopes
/// and ops that are no allocation scope only.
Operation *hoistTarget(memref::AllocaOp alloca) {
  for (Operation *op = alloca->getParentOp(); op; op = op->getParentOp()) {
    if (isa<omp::ParallelOp, FunctionOpInterface>(op))
      return op;
    if (op->hasTrait<OpTrait::AutomaticAllocationScope>() &&
        !isa<LoopLikeOpInterface, memref::AllocaScopeOp>(op))
      return nullptr;
  }
  return nullptr;
}

struct HoistStaticAllocasPass
    : inkling::cpu::impl::HoistStaticAllocasPassBase<HoistStaticAllocasPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocaOp> allocas;
    getOperation().walk([&](memref::AllocaOp alloca) {
      if (alloca->getNumOperands() == 0)
        allocas.push_back(alloca);
    });
    for (memref::AllocaOp alloca : allocas) {
      Operation *target = hoistTarget(alloca);
      if (!target || target == alloca->getParentOp())
        continue;
      Block &entry = target->getRegion(0).front();
      alloca->moveBefore(&entry, entry.begin());
    }
  }
};

} // namespace
