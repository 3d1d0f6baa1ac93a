//===- FuseInserts.cpp - Adjacent inserts become one packed insert --------===//

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVFUSEINSERTS
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// An insert's (stream, input) pairs.
SmallVector<std::pair<Stream, Value>> streamInputs(Operation *op) {
  if (auto insert = dyn_cast<InsertOp>(op))
    return {{insert.getStream(), insert.getX()}};
  auto packed = cast<InsertPackedOp>(op);
  SmallVector<std::pair<Stream, Value>> pairs;
  for (auto [stream, input] :
       llvm::zip(packed.getStreamList(), packed.getInputs()))
    pairs.push_back({stream, input});
  return pairs;
}

/// Same cache, step and layout, and no stream written twice.
bool joins(ArrayRef<Operation *> run, Operation *op) {
  auto first = cast<StepCacheAccessOpInterface>(run.front());
  auto next = cast<StepCacheAccessOpInterface>(op);
  if (first.getCacheValue() != next.getCacheValue() ||
      first.getStepValue() != next.getStepValue() ||
      first.getLayoutAttr() != next.getLayoutAttr())
    return false;
  for (Operation *member : run)
    for (Stream stream :
         cast<StepCacheAccessOpInterface>(member).getStepWrittenStreams())
      if (llvm::is_contained(next.getStepWrittenStreams(), stream))
        return false;
  return true;
}

void fuseRun(ArrayRef<Operation *> run) {
  SmallVector<std::pair<Stream, Value>> pairs;
  for (Operation *op : run)
    pairs.append(streamInputs(op));
  // Head-row order: the packed write then walks the row front to back.
  llvm::stable_sort(
      pairs, [](const auto &a, const auto &b) { return a.first < b.first; });
  auto first = cast<StepCacheAccessOpInterface>(run.front());
  OpBuilder builder(run.front());
  SmallVector<Attribute> streams;
  SmallVector<Value> inputs;
  for (auto [stream, input] : pairs) {
    streams.push_back(StreamAttr::get(builder.getContext(), stream));
    inputs.push_back(input);
  }
  InsertPackedOp::create(builder,
                         builder.getFusedLoc(llvm::map_to_vector(
                             run, [](Operation *op) { return op->getLoc(); })),
                         inputs, first.getCacheValue(),
                         builder.getArrayAttr(streams), first.getStepValue(),
                         first.getLayoutAttr());
  for (Operation *op : run)
    op->erase();
}

struct SConvFuseInsertsPass
    : public impl::SConvFuseInsertsBase<SConvFuseInsertsPass> {
  void runOnOperation() override {
    getOperation()->walk([](Block *block) {
      SmallVector<Operation *> run;
      auto flush = [&] {
        if (run.size() > 1)
          fuseRun(run);
        run.clear();
      };
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        if (!isa<InsertOp, InsertPackedOp>(op)) {
          flush();
          continue;
        }
        if (!run.empty() && !joins(run, &op))
          flush();
        run.push_back(&op);
      }
      flush();
    });
  }
};

} // namespace
} // namespace inkling::sconv
