//===- StreamingStores.cpp - inkling-cpu-streaming-stores -----------------===//
//
// Non-temporal vector stores in the loop nests of large steps, chosen at
// run time per call (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "TripCount.h"
#include "inkling/Target/CPU/Passes.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_STREAMINGSTORESPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

struct StreamingStoresPass
    : inkling::cpu::impl::StreamingStoresPassBase<StreamingStoresPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minIterations <= 0)
      return;
    SmallVector<scf::ParallelOp> nests;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        nests.push_back(loop);
    });
    for (scf::ParallelOp nest : nests) {
      SmallVector<vector::StoreOp> stores;
      nest.walk([&](vector::StoreOp store) {
        if (!store.getNontemporal())
          stores.push_back(store);
      });
      if (stores.empty())
        continue;
      OpBuilder b(nest);
      Value stream = inkling::cpu::buildHasIterations(
          b, nest.getLoc(), nest.getLowerBound(), nest.getUpperBound(),
          nest.getStep(), minIterations);
      for (vector::StoreOp store : stores) {
        b.setInsertionPoint(store);
        auto branch = scf::IfOp::create(b, store.getLoc(), stream,
                                        /*withElseRegion=*/true);
        OpBuilder thenBuilder = branch.getThenBodyBuilder();
        auto streamed = cast<vector::StoreOp>(thenBuilder.clone(*store));
        streamed.setNontemporal(true);
        OpBuilder elseBuilder = branch.getElseBodyBuilder();
        elseBuilder.clone(*store);
        store.erase();
      }
    }
  }
};

} // namespace
