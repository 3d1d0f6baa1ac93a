//===- LayerProgramImpl.h - What LayerProgram's files share -----*- C++ -*-===//
//
// The state behind `LayerProgram` and the MLIR plumbing its files share: the
// process's one context, the first error diagnostic as one line, and
// locations and types as text. Private to lib/ExecutionEngine.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_EXECUTIONENGINE_LAYERPROGRAMIMPL_H
#define INKLING_LIB_EXECUTIONENGINE_LAYERPROGRAMIMPL_H

#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/ExecutionEngine/JitEngine.h"
#include "inkling/ExecutionEngine/LayerProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <memory>
#include <string>
#include <vector>

namespace inkling::exec {

/// The MLIRContext the live programs share (every dialect of the CPU and GPU
/// pipelines): made by the first program, freed with the last.
std::shared_ptr<mlir::MLIRContext> sharedContext();

/// "file:line:col" for a file location, else the location as printed.
std::string locationString(mlir::Location loc);
std::string typeString(mlir::Type type);

/// Collects the first error diagnostic as one line "loc: error: message".
struct FirstError {
  explicit FirstError(mlir::MLIRContext &ctx);
  std::string message;
  mlir::ScopedDiagnosticHandler handler;
};

struct LayerProgram::Impl {
  /// First: destroyed after the module and the engine that use it.
  std::shared_ptr<mlir::MLIRContext> ctx;
  mlir::MLIRContext &context() { return *ctx; }
  std::string path;
  /// setCacheGeometry's choice (0: the IR's), the pipelines' block-size and
  /// cross-layers options.
  int64_t geometryBlockSize = 0, geometryLayers = 0;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  LayerSignature sig;
  std::unique_ptr<JitEngine> engine;
  void (*packed)(void **) = nullptr;
  // Per-call scratch, reused.
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPtrs;
  std::vector<void *> packedArgs;

  /// Discovers `sig` from `func` (AnalyzeSignature.cpp).
  bool analyze(std::string &error);
  /// Gives the step a status argument when it has none (Compile.cpp).
  bool addStatusArgument(std::string &error);
  /// What compile and compileKernels do first (Compile.cpp).
  bool prepareLowering(const CompileOptions &options,
                       std::optional<sconv::FusionStrategy> &strategy,
                       std::string &error);
};

} // namespace inkling::exec

#endif // INKLING_LIB_EXECUTIONENGINE_LAYERPROGRAMIMPL_H
