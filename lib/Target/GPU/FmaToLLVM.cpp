//===- FmaToLLVM.cpp - inkling-gpu-fma-to-llvm ----------------------------===//
//
// Rewrites math.fma to llvm.intr.fma (and an f32 math.sqrt to a call of
// libdevice's __nv_fsqrt_rn, for the epilogues' norms) before the NVVM
// lowering.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/SymbolTable.h"
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
    // The lowering of math.sqrt calls libdevice's __nv_sqrtf, approximate
    // unless __CUDA_PREC_SQRT is reflected (LLVM then folds 1 / sqrt into
    // rsqrt.approx), and marks llvm.intr.sqrt illegal: call libdevice's
    // correctly rounded __nv_fsqrt_rn instead (sqrt.rn.f32; docs/Design.md
    // section 4, "Epilogues": a correctly rounded root, then a divide).
    SmallVector<math::SqrtOp> roots;
    getOperation()->walk([&](math::SqrtOp sqrt) {
      if (sqrt.getType().isF32())
        roots.push_back(sqrt);
    });
    if (roots.empty())
      return;
    Operation *module = getOperation();
    auto symbols = SymbolTable(module);
    auto callee = symbols.lookup<LLVM::LLVMFuncOp>("__nv_fsqrt_rn");
    if (!callee) {
      OpBuilder b(&module->getRegion(0).front(),
                  module->getRegion(0).front().begin());
      Type f32 = b.getF32Type();
      callee =
          LLVM::LLVMFuncOp::create(b, module->getLoc(), "__nv_fsqrt_rn",
                                   LLVM::LLVMFunctionType::get(f32, {f32}));
    }
    for (math::SqrtOp sqrt : roots) {
      OpBuilder b(sqrt);
      auto call = LLVM::CallOp::create(b, sqrt.getLoc(), callee,
                                       ValueRange{sqrt.getOperand()});
      sqrt.replaceAllUsesWith(call.getResult());
      sqrt.erase();
    }
  }
};

} // namespace

} // namespace inkling::gpu
