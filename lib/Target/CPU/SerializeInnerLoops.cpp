//===- SerializeInnerLoops.cpp - inkling-cpu-serialize-inner-loops --------===//
//
// Nested scf.parallel loops become scf.for nests, so that only the outer
// (token, head) loop of a nest gets threads (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_SERIALIZEINNERLOOPSPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {
struct SerializeInnerLoopsPass
    : inkling::cpu::impl::SerializeInnerLoopsPassBase<SerializeInnerLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> inner;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>())
        inner.push_back(loop);
    });
    // The walk is post-order: innermost loops first, so every loop is
    // rewritten before the loop around it (whose body it is part of).
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : inner) {
      rewriter.setInsertionPoint(loop);
      if (failed(scf::parallelForToNestedFors(rewriter, loop))) {
        loop.emitOpError("could not be rewritten into scf.for loops");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
