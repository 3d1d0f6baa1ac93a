//===- Context.cpp - The MLIR context and diagnostics of LayerProgram -----===//
//
// The MLIRContext the live programs share (every dialect of the CPU and
// GPU pipelines; freed with the last program) and the helpers that turn its
// diagnostics, locations and types into the one-line messages LayerProgram
// returns.
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

#include "inkling/InitInkling.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <mutex>

using namespace inkling;
using namespace inkling::exec;

std::shared_ptr<mlir::MLIRContext> exec::sharedContext() {
  static std::mutex mutex;
  static std::weak_ptr<mlir::MLIRContext> shared;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<mlir::MLIRContext> live = shared.lock())
    return live;
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  auto ctx = std::make_shared<mlir::MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  ctx->printOpOnDiagnostic(false);
  shared = ctx;
  return ctx;
}

std::string exec::locationString(mlir::Location loc) {
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

std::string exec::typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

FirstError::FirstError(mlir::MLIRContext &ctx)
    : handler(&ctx, [this](mlir::Diagnostic &d) {
        if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
            message.empty()) {
          std::string text;
          llvm::raw_string_ostream os(text);
          os << locationString(d.getLocation()) << ": error: " << d.str();
          message = text;
          // One line: notes and multi-line messages are cut.
          if (size_t nl = message.find('\n'); nl != std::string::npos)
            message.resize(nl);
        }
        return mlir::success();
      }) {}
