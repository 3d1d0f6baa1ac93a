//===- DeferInserts.cpp - Move cache inserts as late as legal -------------===//

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/Dialect/SConv/Transforms/Reordering.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVDEFERINSERTS
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

namespace {

bool isInsert(mlir::Operation *op) {
  return mlir::isa<InsertOp, InsertPackedOp>(op);
}

struct SConvDeferInsertsPass
    : public impl::SConvDeferInsertsBase<SConvDeferInsertsPass> {
  void runOnOperation() override {
    ReorderingOracle oracle(getAnalysis<mlir::AliasAnalysis>());
    llvm::SmallVector<mlir::Operation *> inserts;
    getOperation()->walk([&](mlir::Operation *op) {
      if (isInsert(op))
        inserts.push_back(op);
    });
    // Last first, stopping at the next insert into the same cache: the
    // inserts keep their order and end up next to each other.
    for (mlir::Operation *insert : llvm::reverse(inserts)) {
      mlir::Value cache =
          mlir::cast<StepCacheAccessOpInterface>(insert).getCacheValue();
      mlir::Operation *stop = insert->getNextNode();
      while (stop && !stop->hasTrait<mlir::OpTrait::IsTerminator>()) {
        if (isInsert(stop) &&
            mlir::cast<StepCacheAccessOpInterface>(stop).getCacheValue() ==
                cache)
          break;
        if (!oracle.commute(insert, stop))
          break;
        stop = stop->getNextNode();
      }
      if (stop == insert->getNextNode())
        continue;
      if (stop)
        insert->moveBefore(stop);
      else
        insert->moveBefore(insert->getBlock(), insert->getBlock()->end());
    }
  }
};

} // namespace
} // namespace inkling::sconv
