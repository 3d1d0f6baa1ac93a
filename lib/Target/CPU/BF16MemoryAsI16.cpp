//===- BF16MemoryAsI16.cpp - inkling-bf16-memory-as-i16 -------------------===//
//
// bf16 loads and stores of the LLVM dialect become i16 ones plus bitcasts
// (why: Passes.td).
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/CPU/Passes.h"

namespace inkling::cpu {
#define GEN_PASS_DEF_BF16MEMORYASI16PASS
#include "inkling/Target/CPU/Passes.h.inc"
} // namespace inkling::cpu

using namespace mlir;

namespace {

/// i16 for bf16, vector<N x i16> for vector<N x bf16>, else null.
Type asI16(Type type) {
  Type i16 = IntegerType::get(type.getContext(), 16);
  if (type.isBF16())
    return i16;
  if (auto vector = dyn_cast<VectorType>(type))
    if (vector.getElementType().isBF16())
      return vector.clone(i16);
  return nullptr;
}

struct BF16MemoryAsI16Pass
    : inkling::cpu::impl::BF16MemoryAsI16PassBase<BF16MemoryAsI16Pass> {
  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
        Type type = load.getType();
        Type bits = asI16(type);
        if (!bits)
          return;
        load.getResult().setType(bits);
        OpBuilder b(load->getContext());
        b.setInsertionPointAfter(load);
        auto cast = LLVM::BitcastOp::create(b, load.getLoc(), type, load);
        load.getResult().replaceAllUsesExcept(cast, cast);
      } else if (auto store = dyn_cast<LLVM::StoreOp>(op)) {
        Type bits = asI16(store.getValue().getType());
        if (!bits)
          return;
        OpBuilder b(store);
        auto cast =
            LLVM::BitcastOp::create(b, store.getLoc(), bits, store.getValue());
        store.getValueMutable().assign(cast);
      }
    });
  }
};

} // namespace
