//===- inkling-opt.cpp - The mlir-opt of the Inkling project --------------===//

#include "inkling/InitInkling.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  // sconv, the dialects its CPU and GPU lowerings produce (so that their
  // output parses back) and the LLVM IR translations.
  mlir::DialectRegistry registry;
  inkling::registerAllDialects(registry);
  // Inkling's passes and pipelines, upstream's generic transforms, and the
  // upstream stages of inkling-lower-to-nvvm that the focused GPU tests run
  // on their own.
  inkling::registerAllPasses();
  mlir::registerTransformsPasses();
  mlir::registerConvertParallelLoopToGpuPass();
  mlir::registerGpuMapParallelLoopsPass();
  mlir::registerLowerAffinePass();
  mlir::registerGpuKernelOutliningPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Inkling sconv optimizer\n", registry));
}
