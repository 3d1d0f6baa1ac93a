//===- StreamingStores.cpp - inkling-cpu-streaming-stores -----------------===//
//
// Non-temporal vector stores in the loop nests of large steps, chosen at
// run time per call (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "TripCount.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/LoopStrategy.h"
#include "inkling/Target/CPU/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_STREAMINGSTORESPASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

constexpr int64_t kLineBytes = 64;

/// Whether `memref`'s base (aligned pointer plus offset, in bytes) is a
/// multiple of a 64-byte line, at run time.
Value buildLineAlignedBase(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto constant = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value pointer =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value offset =
      memref::ExtractStridedMetadataOp::create(b, loc, memref).getOffset();
  Value bytes = arith::MulIOp::create(
      b, loc, offset, constant(type.getElementTypeBitWidth() / 8));
  Value address = arith::AddIOp::create(b, loc, pointer, bytes);
  Value misalignment =
      arith::AndIOp::create(b, loc, address, constant(kLineBytes - 1));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, misalignment,
                               constant(0));
}

/// Whether `store` stays ordinary in the streaming copy: it writes a
/// scratch buffer of `nest` (a memref.alloca in it), which the nest reads
/// back while it is in L1, or the lowering marked it as a value read back
/// at once (kCachedStoreAttrName).
bool keepsCached(vector::StoreOp store, Operation *nest) {
  if (store->hasAttr(inkling::cpu::kCachedStoreAttrName))
    return true;
  auto alloca = store.getBase().getDefiningOp<memref::AllocaOp>();
  return alloca && nest->isAncestor(alloca);
}

/// A store the lowering marked as line-aligned given a line-aligned base,
/// whose memref is defined outside `nest` (so it can be checked before).
bool isLineStore(vector::StoreOp store, Operation *nest) {
  if (!store->hasAttr(inkling::cpu::kLineAlignedAttrName))
    return false;
  return !nest->isAncestor(store.getBase().getParentRegion()->getParentOp());
}

struct StreamingStoresPass
    : inkling::cpu::impl::StreamingStoresPassBase<StreamingStoresPass> {
  using Base::Base;

  /// scf.if (large and line-aligned) { the nest, streaming } else { nest }.
  void version(scf::ParallelOp nest) {
    bool anyStore = false;
    llvm::SetVector<Value> lineBases;
    nest.walk([&](vector::StoreOp store) {
      if (store.getNontemporal() || keepsCached(store, nest))
        return;
      anyStore = true;
      if (isLineStore(store, nest))
        lineBases.insert(store.getBase());
    });
    if (!anyStore)
      return;
    int64_t threshold = minIterations;
    if (auto own = nest->getAttrOfType<IntegerAttr>(
            inkling::cpu::kStreamMinIterationsAttrName))
      threshold = own.getInt();
    OpBuilder b(nest);
    Location loc = nest.getLoc();
    Value stream = inkling::cpu::buildHasIterations(
        b, loc, nest.getLowerBound(), nest.getUpperBound(), nest.getStep(),
        threshold);
    for (Value base : lineBases)
      stream = arith::AndIOp::create(b, loc, stream,
                                     buildLineAlignedBase(b, loc, base));
    auto branch = scf::IfOp::create(b, loc, stream, /*withElseRegion=*/true);
    OpBuilder thenBuilder = branch.getThenBodyBuilder();
    if (branchCounters)
      inkling::cpu::emitBranchCount(thenBuilder, loc, nest,
                                    inkling::cpu::Branch::StreamingOn);
    Operation *streamed = thenBuilder.clone(*nest);
    streamed->walk([&](vector::StoreOp store) {
      if (store.getNontemporal() || keepsCached(store, streamed))
        return;
      store.setNontemporal(true);
      // A line store at a checked base: one 64-byte non-temporal store
      // (with less than 64 bytes claimed, LLVM splits it into four 16-byte
      // ones and their extracts).
      if (isLineStore(store, streamed))
        store.setAlignment(static_cast<uint64_t>(kLineBytes));
    });
    nest->moveBefore(branch.elseBlock()->getTerminator());
    if (branchCounters) {
      OpBuilder elseBuilder(nest);
      inkling::cpu::emitBranchCount(elseBuilder, loc, nest,
                                    inkling::cpu::Branch::StreamingOff);
    }
  }

  void runOnOperation() override {
    if (minIterations <= 0)
      return;
    SmallVector<scf::ParallelOp> nests;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        nests.push_back(loop);
    });
    for (scf::ParallelOp nest : nests)
      version(nest);
  }
};

} // namespace
