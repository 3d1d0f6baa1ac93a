//===- OpenMPMinIterations.cpp - inkling-cpu-omp-min-iterations -----------===//
//
// An `if` clause on each omp.parallel of a loop nest: fork only when the
// nest has enough iterations to pay for it (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "TripCount.h"
#include "inkling/Target/CPU/Passes.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_OPENMPMINITERATIONSPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

/// The omp.loop_nest of `parallel` when its body is exactly one omp.wsloop
/// (plus the terminator), else null.
omp::LoopNestOp soleLoopNest(omp::ParallelOp parallel) {
  Block &body = parallel.getRegion().front();
  omp::WsloopOp wsloop;
  for (Operation &op : body) {
    if (auto loop = dyn_cast<omp::WsloopOp>(op)) {
      if (wsloop)
        return nullptr;
      wsloop = loop;
    } else if (!isa<omp::TerminatorOp>(op)) {
      return nullptr;
    }
  }
  if (!wsloop)
    return nullptr;
  return dyn_cast<omp::LoopNestOp>(wsloop.getWrappedLoop());
}

struct OpenMPMinIterationsPass
    : inkling::cpu::impl::OpenMPMinIterationsPassBase<
          OpenMPMinIterationsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minIterations <= 1)
      return;
    getOperation().walk([&](omp::ParallelOp parallel) {
      if (parallel.getIfExpr())
        return;
      omp::LoopNestOp nest = soleLoopNest(parallel);
      if (!nest)
        return;
      // The bounds must be usable before the region starts.
      for (Value v : nest->getOperands())
        if (parallel->isAncestor(v.getParentBlock()->getParentOp()))
          return;
      OpBuilder b(parallel);
      Value fork = inkling::cpu::buildHasIterations(
          b, parallel.getLoc(), nest.getLoopLowerBounds(),
          nest.getLoopUpperBounds(), nest.getLoopSteps(), minIterations);
      parallel.getIfExprMutable().assign(fork);
    });
  }
};

} // namespace
