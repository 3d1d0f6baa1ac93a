//===- RowThreads.cpp - The GPU's threads for the epilogues' rows ---------===//
//
// The GPU's LoopStrategy: the shared nests, except that the fused
// epilogues spread each row over the threads of a block
// (lib/Conversion/SConvToLoops/EpilogueThreads.cpp), with `gpu.shuffle`
// within a warp, a workgroup buffer (`memref.alloca` in workgroup memory,
// made a launch attribution by inkling-gpu-workgroup-attributions) and
// `gpu.barrier` across a token's heads.
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/GPU/Passes.h"

#include "inkling/Conversion/SConvToLoops/LoopStrategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace inkling::gpu {
namespace {

class GPURowThreads final : public RowThreads {
public:
  Value shuffleXor(OpBuilder &b, Location loc, Value value, int64_t offset,
                   int64_t width) const override {
    return mlir::gpu::ShuffleOp::create(
               b, loc, value, static_cast<int32_t>(offset),
               static_cast<int32_t>(width), mlir::gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }
  Value shuffleIdx(OpBuilder &b, Location loc, Value value, Value lane,
                   int64_t width) const override {
    Value w = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                        b.getI32IntegerAttr(width));
    return mlir::gpu::ShuffleOp::create(b, loc, value, lane, w,
                                        mlir::gpu::ShuffleMode::IDX)
        .getShuffleResult();
  }
  Value blockBuffer(OpBuilder &b, Location loc,
                    int64_t elements) const override {
    auto space = mlir::gpu::AddressSpaceAttr::get(
        b.getContext(), mlir::gpu::GPUDialect::getWorkgroupAddressSpace());
    auto type = MemRefType::get({elements}, b.getF32Type(),
                                MemRefLayoutAttrInterface(), space);
    return memref::AllocaOp::create(b, loc, type);
  }
  void barrier(OpBuilder &b, Location loc) const override {
    mlir::gpu::BarrierOp::create(b, loc);
  }
};

class GPULoopStrategy final : public LoopStrategy {
public:
  const RowThreads *rowThreads() const override { return &threads_; }

private:
  GPURowThreads threads_;
};

} // namespace

std::shared_ptr<const LoopStrategy> createGPULoopStrategy() {
  return std::make_shared<GPULoopStrategy>();
}

} // namespace inkling::gpu
