//===- LowerToCPU.cpp - The inkling-lower-to-cpu pipeline -----------------===//

#include "inkling/Conversion/Passes.h"
#include "inkling/Pipelines/Pipelines.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {

/// Marks public functions with a body `llvm.emit_c_interface`.
struct EmitCInterfacePass
    : PassWrapper<EmitCInterfacePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmitCInterfacePass)
  StringRef getArgument() const override { return "inkling-emit-c-interface"; }
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      if (func.isPublic() && !func.isExternal())
        func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                      UnitAttr::get(func.getContext()));
    });
  }
};

/// Moves bf16 through memory as i16: every `llvm.load` of bf16 (or a vector
/// of bf16) loads i16 and bitcasts, every `llvm.store` of bf16 bitcasts and
/// stores i16. The bits are the same; what changes is that LLVM's
/// InstCombine folds the bitcast pairs away, so no bf16 value is left for
/// the x86 backend to legalize. (A bf16 value that lives across basic
/// blocks, such as the input a fused conv both convolves and stores under
/// `slot >= 0`, would be legalized through f32 and a `__truncsfbf2` call:
/// slow, missing from libgcc 12, and it quiets signaling NaNs.)
struct BF16MemoryAsI16Pass
    : PassWrapper<BF16MemoryAsI16Pass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BF16MemoryAsI16Pass)
  StringRef getArgument() const override {
    return "inkling-bf16-memory-as-i16";
  }
  void runOnOperation() override {
    auto asI16 = [](Type type) -> Type {
      Type i16 = IntegerType::get(type.getContext(), 16);
      if (type.isBF16())
        return i16;
      if (auto vector = dyn_cast<VectorType>(type))
        if (vector.getElementType().isBF16())
          return vector.clone(i16);
      return nullptr;
    };
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

void inkling::buildLowerToCPUPipeline(OpPassManager &pm,
                                      const LowerToCPUOptions &options) {
  if (options.emitCInterface)
    pm.addPass(std::make_unique<EmitCInterfacePass>());

  // 0. Fusion (sconv -> sconv): with the default conv-insert strategy a
  //    decoder layer's 4 convs + 4 inserts become one fused_conv per group
  //    of convs that are ready together (3 nests when attention and the MLP
  //    sit between them); `none` keeps one nest per op (8).
  inkling::sconv::buildFusionPipeline(pm, options.fusion);

  // 1. sconv -> loops. After it: no sconv op; each insert/conv is a nest of
  //    scf.parallel (token, head) { scf.parallel (16-byte chunk) } over
  //    vector/memref/arith/math ops, the cache a memref.view +
  //    reinterpret_cast of the byte buffer. This is the loop nest that the
  //    GPU pipeline maps to blocks and threads.
  inkling::SConvLowerToLoopsOptions lowerOptions;
  lowerOptions.checked = options.checked;
  lowerOptions.splitStreams = options.splitStreams;
  pm.addPass(inkling::createSConvLowerToLoops(lowerOptions));
  // 2. Fold the index arithmetic of the nests (constants, dims of static
  //    shapes). The nests stay parallel; canonicalization may merge the two
  //    levels of a nest, which the CPU does not care about.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // 3. Higher-dimensional vector ops (none from the lowering; user code may
  //    have some) -> scf loops of 1-D vector ops.
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass());

  // 4. Loops -> control flow. After it: scf.parallel/for/if/while are
  //    branches in cf; the nests run sequentially on one CPU thread.
  pm.addPass(createSCFToControlFlowPass());

  // 5. bf16: no bf16 arithmetic remains (emulated in f32), and every
  //    bf16 <-> f32 conversion becomes integer arithmetic: `arith.truncf`
  //    rounds to nearest even (NaN stays NaN) without calling libgcc's
  //    `__truncsfbf2`, which libgcc 12 lacks.
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addNestedPass<func::FuncOp>(
      arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addNestedPass<func::FuncOp>(arith::createArithExpandOpsPass(expand));

  // 6. To the LLVM dialect. math.fma becomes llvm.intr.fma (always fused,
  //    never contracted differently), math.exp llvm.intr.exp; vector ops
  //    become LLVM vector ops keeping their `alignment`; strided memref
  //    metadata is expanded to index arithmetic (affine -> arith) before the
  //    memref descriptors are lowered.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // 7. After it: only LLVM dialect ops (and builtin.module) remain.
  pm.addPass(createReconcileUnrealizedCastsPass());
  // 8. bf16 moves through memory as i16 (the x86 backend has no bf16
  //    registers; see BF16MemoryAsI16Pass).
  pm.addPass(std::make_unique<BF16MemoryAsI16Pass>());
}

void inkling::registerLowerToCPUPipeline() {
  PassPipelineRegistration<LowerToCPUOptions>(
      "inkling-lower-to-cpu",
      "Lower sconv IR to the LLVM dialect for the CPU (mlir-runner, "
      "ExecutionEngine): sconv-fuse (option fusion), sconv-lower-to-loops, scf "
      "-> cf, bf16 conversions "
      "expanded (round to nearest even, no libgcc call), then everything to "
      "LLVM",
      inkling::buildLowerToCPUPipeline);
}
