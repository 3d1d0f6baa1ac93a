//===- HoistStaticAllocas.cpp - inkling-cpu-hoist-static-allocas ----------===//
//
// Fixed-size memref.alloca ops leave their loops for the entry block of the
// nearest omp.parallel or function, and the alloca scopes left without an
// allocation are inlined (why and when: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/PatternMatch.h"
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

/// Whether `op` itself may allocate in the enclosing allocation scope:
/// what memref's canonicalization asks before it inlines an alloca scope
/// (an allocation effect, or no memory-effect interface), except that an
/// intrinsic call (llvm.call_intrinsic, which has no memory-effect interface)
/// allocates nothing in its caller's frame.
bool mayAllocateInScope(Operation *op) {
  // An op with regions (scf.if, scf.for) is as its body: walked apart.
  if (isa<LLVM::CallIntrinsicOp>(op) ||
      op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::any_of(instances, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Allocate>(e.getEffect()) &&
           isa<SideEffects::AutomaticAllocationScopeResource>(e.getResource());
  });
}

/// Whether anything in `scope`'s body, outside the allocation scopes
/// nested in it, may allocate in it.
bool holdsAllocation(memref::AllocaScopeOp scope) {
  return scope
      ->walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (op == scope.getOperation())
          return WalkResult::advance();
        if (mayAllocateInScope(op))
          return WalkResult::interrupt();
        if (op->hasTrait<OpTrait::AutomaticAllocationScope>())
          return WalkResult::skip();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// Replaces `scope` by its body.
void inlineScope(RewriterBase &rewriter, memref::AllocaScopeOp scope) {
  Block &body = scope.getBodyRegion().front();
  Operation *terminator = body.getTerminator();
  SmallVector<Value> results(terminator->getOperands());
  rewriter.eraseOp(terminator);
  rewriter.inlineBlockBefore(&body, scope);
  rewriter.replaceOp(scope, results);
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
    // Innermost first, so that an outer scope sees its inner ones gone.
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation().walk<WalkOrder::PostOrder>(
        [&](memref::AllocaScopeOp scope) { scopes.push_back(scope); });
    IRRewriter rewriter(&getContext());
    for (memref::AllocaScopeOp scope : scopes)
      if (!holdsAllocation(scope))
        inlineScope(rewriter, scope);
  }
};

} // namespace
