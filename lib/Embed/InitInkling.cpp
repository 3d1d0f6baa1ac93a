//===- InitInkling.cpp - Register Inkling in a host compiler --------------===//

#include "inkling/InitInkling.h"
#include "inkling/Conversion/Passes.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/CPU/Passes.h"
#include "inkling/Target/GPU/Passes.h"
#include "inkling/Version.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"

#include <mutex>

const char *inkling::getVersion() { return INKLING_VERSION; }

const char *inkling::getMLIRVersion() { return INKLING_MLIR_VERSION; }

void inkling::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<sconv::SConvDialect, mlir::arith::ArithDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::omp::OpenMPDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  // The CPU pipeline's threads (omp ops) through the ExecutionEngine.
  mlir::registerOpenMPDialectTranslation(registry);
  // gpu, nvvm, index, ub, their ConvertToLLVM interfaces, the NVVM target
  // and the builtin/llvm/gpu/nvvm LLVM IR translations (which the CPU's
  // ExecutionEngine needs too).
  gpu::registerNVVMLoweringDialects(registry);
}

void inkling::registerAllDialects(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  context.appendDialectRegistry(registry);
}

void inkling::registerAllPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    sconv::registerSConvPasses();
    sconv::registerFusionPipeline();
    registerInklingConversionPasses();
    cpu::registerInklingCPUPasses();
    registerLowerToCPUPipeline();
    // Also the GPU passes (inkling-gpu-write-kernels ...).
    registerLowerToNVVMPipeline();
  });
}
