//===- FmaToLLVM.cpp - inkling-gpu-fma-to-llvm ----------------------------===//
//
// Rewrites math.fma to llvm.intr.fma before the NVVM lowering.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace inkling::gpu {
#define GEN_PASS_DEF_FMATOLLVMPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// inkling-gpu-fma-to-llvm
//===----------------------------------------------------------------------===//

struct FmaToLLVMPass : impl::FmaToLLVMPassBase<FmaToLLVMPass> {
  void runOnOperation() override {
    getOperation()->walk([](math::FmaOp fma) {
      OpBuilder b(fma);
      Value fused = LLVM::FMAOp::create(b, fma.getLoc(), fma.getA(), fma.getB(),
                                        fma.getC());
      fma.replaceAllUsesWith(fused);
      fma.erase();
    });
  }
};

} // namespace

} // namespace inkling::gpu
