//===- Pipelines.h - Inkling's named lowering pipelines ---------*- C++ -*-===//
//
// The pipelines an ML compiler links to lower sconv IR (DESIGN section 5).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_PIPELINES_PIPELINES_H
#define INKLING_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace inkling {

/// Options of `inkling-lower-to-cpu`.
struct LowerToCPUOptions : mlir::PassPipelineOptions<LowerToCPUOptions> {
  Option<bool> checked{
      *this, "checked",
      llvm::cl::desc("Guard slot and block ids at run time (the "
                     "sconv-lower-to-loops option of the same name): "
                     "out-of-range ids are skipped and reported in the step's "
                     "status buffer, or stop the program through cf.assert "
                     "when the step has none"),
      llvm::cl::init(false)};
  Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Mark every public function with a body "
                     "`llvm.emit_c_interface`, so that the ExecutionEngine "
                     "(or C code) can call it with memref descriptors"),
      llvm::cl::init(false)};
};

/// Appends the CPU lowering to `pm` (anchored on `builtin.module`): sconv ->
/// scf.parallel + vector loops -> cf -> LLVM dialect, with bf16 conversions
/// expanded to integer arithmetic (round to nearest even, no libgcc
/// `__truncsfbf2` call). The result runs in `mlir-runner` or MLIR's
/// ExecutionEngine.
void buildLowerToCPUPipeline(mlir::OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// Registers `inkling-lower-to-cpu` with the pass pipeline registry.
void registerLowerToCPUPipeline();

/// Registers every Inkling pipeline.
inline void registerPipelines() { registerLowerToCPUPipeline(); }

} // namespace inkling

#endif // INKLING_PIPELINES_PIPELINES_H
