//===- IRFuzzer.cpp - Parse, verify and lower mutated sconv IR ------------===//
//
// libFuzzer target: the input is MLIR text (seeded with the lit tests). It
// is parsed and verified with the dialects inkling-opt registers; IR that
// verifies is lowered by the default `inkling-lower-to-cpu` pipeline (fusion
// included). Findings are crashes, sanitizer reports, hangs, leaks, and two
// contract violations that trap:
//   - the pipeline fails without emitting an error (a silent failure);
//   - the pipeline succeeds but its output does not verify.
//
//===----------------------------------------------------------------------===//

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <string>

namespace {

mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry();
    r->insert<inkling::sconv::SConvDialect, mlir::arith::ArithDialect,
              mlir::func::FuncDialect, mlir::memref::MemRefDialect,
              mlir::scf::SCFDialect, mlir::vector::VectorDialect,
              mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect,
              mlir::math::MathDialect>();
    return r;
  }();
  return *registry;
}

[[noreturn]] void violation(const char *what) {
  fprintf(stderr, "IR fuzzer: %s\n", what);
  __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  // Pathologically deep or long inputs only measure the parser's recursion.
  if (size > 16384)
    return 0;
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  bool sawError = false;
  mlir::ScopedDiagnosticHandler handler(
      &context, [&](mlir::Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
          sawError = true;
        return mlir::success();
      });

  // MLIR's lexer scans its buffer up to a terminating NUL (as files and
  // strings read by the tools have); libFuzzer's bytes have none.
  std::string source(reinterpret_cast<const char *>(bytes), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return 0;

  mlir::PassManager pm(&context);
  // Verify only at the end: a pass that breaks the IR is a finding, not a
  // diagnostic.
  pm.enableVerifier(false);
  inkling::LowerToCPUOptions options;
  options.emitCInterface = true;
  inkling::buildLowerToCPUPipeline(pm, options);
  sawError = false;
  if (mlir::failed(pm.run(*module))) {
    if (!sawError)
      violation("the CPU pipeline failed without an error diagnostic");
    return 0;
  }
  if (mlir::failed(mlir::verify(*module)))
    violation("the CPU pipeline succeeded but its output does not verify");
  return 0;
}
