//===- inkling-opt.cpp - The mlir-opt of the Inkling project --------------===//

#include "inkling/Conversion/Passes.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<inkling::sconv::SConvDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  // The lowering's dialects, so that its output parses back.
  registry.insert<mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect>();
  mlir::registerTransformsPasses();
  inkling::sconv::registerSConvPasses();
  inkling::sconv::registerFusionPipeline();
  inkling::registerInklingConversionPasses();
  inkling::registerPipelines();
  // The GPU backend: inkling-lower-to-nvvm, inkling-write-kernels.
  inkling::gpu::registerNVVMLoweringDialects(registry);
  inkling::registerLowerToNVVMPipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Inkling sconv optimizer\n", registry));
}
