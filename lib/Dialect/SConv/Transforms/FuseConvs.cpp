//===- FuseConvs.cpp - Convs of one step into one loop nest ---------------===//

#include "ConvParts.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/Dialect/SConv/Transforms/Reordering.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVFUSECONVS
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// Fuses one pair in `block`; false when no pair is left.
bool fuseOnePair(Block &block, ReorderingOracle &oracle) {
  for (Operation &first : block) {
    std::optional<ConvParts> firstParts = ConvParts::of(&first);
    if (!firstParts)
      continue;
    for (Operation *second = first.getNextNode(); second;
         second = second->getNextNode()) {
      std::optional<ConvParts> secondParts = ConvParts::of(second);
      if (!secondParts || !firstParts->canMergeWith(*secondParts) ||
          !oracle.commute(&first, second) ||
          !oracle.canMoveUpTo(second, &first))
        continue;
      firstParts->append(*secondParts);
      OpBuilder builder(&first);
      firstParts->build(
          builder, builder.getFusedLoc({first.getLoc(), second->getLoc()}));
      second->erase();
      first.erase();
      return true;
    }
  }
  return false;
}

struct SConvFuseConvsPass
    : public impl::SConvFuseConvsBase<SConvFuseConvsPass> {
  void runOnOperation() override {
    ReorderingOracle oracle(getAnalysis<AliasAnalysis>());
    getOperation()->walk([&](Block *block) {
      while (fuseOnePair(*block, oracle)) {
      }
    });
  }
};

} // namespace
} // namespace inkling::sconv
