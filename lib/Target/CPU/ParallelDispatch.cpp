//===- ParallelDispatch.cpp - inkling-cpu-parallel-dispatch ---------------===//
//
// Each loop nest twice: as scf.parallel for steps large enough to pay for
// threads, as scf.for loops for the others, chosen at run time per call
// (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "TripCount.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_PARALLELDISPATCHPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

/// Rewrites `nest` and every scf.parallel in it into scf.for loops, the
/// innermost first (each rewrite replaces the loop it is given).
LogicalResult toSequentialLoops(RewriterBase &rewriter, scf::ParallelOp nest) {
  SmallVector<scf::ParallelOp> loops;
  nest.walk([&](scf::ParallelOp loop) { loops.push_back(loop); });
  for (scf::ParallelOp loop : loops) {
    rewriter.setInsertionPoint(loop);
    if (failed(scf::parallelForToNestedFors(rewriter, loop)))
      return loop.emitOpError("could not be rewritten into scf.for loops");
  }
  return success();
}

struct ParallelDispatchPass
    : inkling::cpu::impl::ParallelDispatchPassBase<ParallelDispatchPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minIterations <= 1)
      return;
    SmallVector<scf::ParallelOp> nests;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          loop.getNumResults() == 0)
        nests.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp nest : nests) {
      Location loc = nest.getLoc();
      rewriter.setInsertionPoint(nest);
      Value big = inkling::cpu::buildHasIterations(
          rewriter, loc, nest.getLowerBound(), nest.getUpperBound(),
          nest.getStep(), minIterations);
      auto branch = scf::IfOp::create(rewriter, loc, big,
                                      /*withElseRegion=*/true);
      // then: a copy that stays parallel; else: the nest itself, sequential.
      rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
      if (branchCounters)
        inkling::cpu::emitBranchCount(rewriter, loc, nest,
                                      inkling::cpu::Branch::Threaded);
      rewriter.clone(*nest);
      rewriter.moveOpBefore(nest, branch.elseBlock()->getTerminator());
      if (branchCounters) {
        rewriter.setInsertionPoint(nest);
        inkling::cpu::emitBranchCount(rewriter, loc, nest,
                                      inkling::cpu::Branch::Sequential);
      }
      if (failed(toSequentialLoops(rewriter, nest)))
        return signalPassFailure();
    }
  }
};

} // namespace
