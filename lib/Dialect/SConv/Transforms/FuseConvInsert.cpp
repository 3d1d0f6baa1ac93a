//===- FuseConvInsert.cpp - Fold an insert into its conv ------------------===//

#include "ConvParts.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/Dialect/SConv/Transforms/Reordering.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVFUSECONVINSERT
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// The conv in `insert`'s block that reads the same input for the same
/// stream, step, cache and layout.
ConvOp findPartnerConv(InsertOp insert) {
  for (Operation &op : *insert->getBlock()) {
    auto conv = dyn_cast<ConvOp>(op);
    if (conv && conv.getX() == insert.getX() &&
        conv.getStream() == insert.getStream() &&
        conv.getStep() == insert.getStep() &&
        conv.getCache() == insert.getCache() &&
        conv.getLayout() == insert.getLayout())
      return conv;
  }
  return {};
}

struct SConvFuseConvInsertPass
    : public impl::SConvFuseConvInsertBase<SConvFuseConvInsertPass> {
  void runOnOperation() override {
    ReorderingOracle oracle(getAnalysis<AliasAnalysis>());
    SmallVector<InsertOp> inserts;
    getOperation()->walk([&](InsertOp insert) { inserts.push_back(insert); });
    for (InsertOp insert : inserts) {
      ConvOp conv = findPartnerConv(insert);
      if (!conv)
        continue;
      bool legal = conv->isBeforeInBlock(insert)
                       ? oracle.canMoveUpTo(insert, conv)
                       : oracle.canMoveDownTo(insert, conv);
      if (!legal)
        continue;
      std::optional<ConvParts> parts = ConvParts::of(conv);
      parts->insert = true;
      OpBuilder builder(conv);
      parts->build(builder,
                   builder.getFusedLoc({conv->getLoc(), insert->getLoc()}));
      conv->erase();
      insert->erase();
    }
  }
};

} // namespace
} // namespace inkling::sconv
