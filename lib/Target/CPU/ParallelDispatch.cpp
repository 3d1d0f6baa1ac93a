//===- ParallelDispatch.cpp - The threading of the loop nests -------------===//
//
// inkling-cpu-parallel-dispatch: each loop nest twice, as scf.parallel for
// steps large enough to pay for threads, as scf.for loops for the others,
// chosen at run time per call; inkling-cpu-serialize-inner-loops: only the
// outermost loop of a nest stays parallel (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "TripCount.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_PARALLELDISPATCHPASS
#define GEN_PASS_DEF_SERIALIZEINNERLOOPSPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

/// Rewrites each of `loops` into scf.for loops, in order: innermost first,
/// as a post-order walk lists them, so that every loop is rewritten before
/// the loop around it (whose body it is part of).
LogicalResult toNestedFors(RewriterBase &rewriter,
                           ArrayRef<scf::ParallelOp> loops) {
  for (scf::ParallelOp loop : loops) {
    rewriter.setInsertionPoint(loop);
    if (failed(scf::parallelForToNestedFors(rewriter, loop)))
      return loop.emitOpError("could not be rewritten into scf.for loops");
  }
  return success();
}

/// Clones into `region` each constant defined above it that it uses, so
/// that outlining passes it on as a constant, not an argument: an
/// intrinsic's immediate operand (vfpclassps's class bits, X86Bf16.cpp)
/// must be a constant in the function that calls it.
void cloneConstantsInto(RewriterBase &rewriter, Region &region) {
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(region, captured);
  rewriter.setInsertionPointToStart(&region.front());
  for (Value value : captured) {
    Operation *def = value.getDefiningOp();
    if (!def || !def->hasTrait<OpTrait::ConstantLike>())
      continue;
    Value copy = rewriter.clone(*def)->getResult(0);
    replaceAllUsesInRegionWith(value, copy, region);
  }
}

/// `<parent><suffix><N>` with the first N that no symbol of `symbols` has
/// (outlineIfOp neither checks nor renames).
std::string freeName(SymbolTable &symbols, FunctionOpInterface parent,
                     StringRef suffix) {
  std::string name;
  for (unsigned i = 0; name.empty() || symbols.lookup(name); ++i)
    name = (parent.getName() + suffix + llvm::Twine(i)).str();
  return name;
}

/// Moves each branch of `branch` into a private function of its own, which
/// LLVM may not inline: the threaded one so that the OpenMP lowering's
/// outlining, allocas and captured values stay out of the calling function;
/// the sequential one so that its code is compiled alone, as in a function
/// of its own nest, whatever the other nests of the caller hold. (Left in
/// the caller, next to the calls of the threaded copies, the sequential
/// nests shared a stack frame twice the one-thread build's and ran at
/// 0.83-0.98x its speed at T = 1 over five processes, 0.96-1.01x outlined:
/// docs/fusion.md.)
LogicalResult outlineBranches(RewriterBase &rewriter, SymbolTable &symbols,
                              scf::IfOp branch) {
  cloneConstantsInto(rewriter, branch.getThenRegion());
  cloneConstantsInto(rewriter, branch.getElseRegion());
  auto parent = branch->getParentOfType<FunctionOpInterface>();
  std::string threadedName = freeName(symbols, parent, "_threaded");
  std::string sequentialName = freeName(symbols, parent, "_sequential");
  func::FuncOp threaded, sequential;
  if (failed(outlineIfOp(rewriter, branch, &threaded, threadedName, &sequential,
                         sequentialName)))
    return branch.emitOpError("could not outline its branches");
  for (func::FuncOp outlined : {threaded, sequential}) {
    outlined.setPrivate();
    // func-to-llvm forwards `passthrough` to the llvm.func: LLVM's noinline.
    outlined->setAttr("passthrough", rewriter.getArrayAttr(
                                         {rewriter.getStringAttr("noinline")}));
    symbols.insert(outlined);
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
    SymbolTable symbols(getOperation());
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
      // The nest and every scf.parallel in it.
      SmallVector<scf::ParallelOp> loops;
      nest.walk([&](scf::ParallelOp loop) { loops.push_back(loop); });
      if (failed(toNestedFors(rewriter, loops)))
        return signalPassFailure();
      if (failed(outlineBranches(rewriter, symbols, branch)))
        return signalPassFailure();
    }
  }
};

struct SerializeInnerLoopsPass
    : inkling::cpu::impl::SerializeInnerLoopsPassBase<SerializeInnerLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> inner;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>())
        inner.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    if (failed(toNestedFors(rewriter, inner)))
      signalPassFailure();
  }
};

} // namespace
