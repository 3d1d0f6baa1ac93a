//===- LayerProgram.cpp - Load a model's sconv layer ----------------------===//
//
// LayerProgram::load and fromSource: parse the IR, choose the entry
// function and analyze its signature. The other jobs live beside this file:
// AnalyzeSignature.cpp (the arguments' roles), RewriteModule.cpp (edits
// before compile), Compile.cpp (CPU JIT and GPU kernels), CheckArguments.cpp
// and Invoke.cpp (calls), Context.cpp and Names.cpp (shared plumbing).
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace inkling;
using namespace inkling::exec;

namespace {

/// The entry: `entry`, else the only function with a body; null with
/// `error` set when there is none or the choice is ambiguous.
mlir::func::FuncOp findEntry(mlir::ModuleOp module, const std::string &path,
                             const std::string &entry, std::string &error) {
  if (!entry.empty()) {
    auto func = module.lookupSymbol<mlir::func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      error = path + ": no function @" + entry + " with a body";
      return nullptr;
    }
    return func;
  }
  llvm::SmallVector<mlir::func::FuncOp> candidates;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (!func.isExternal())
      candidates.push_back(func);
  if (candidates.size() == 1)
    return candidates.front();
  if (candidates.empty())
    error = path + ": no function with a body";
  else
    error = path + ": " + std::to_string(candidates.size()) +
            " functions with a body (@" + candidates[0].getName().str() +
            ", @" + candidates[1].getName().str() +
            ", ...): choose one with --entry";
  return nullptr;
}

} // namespace

LayerProgram::LayerProgram() : impl_(std::make_unique<Impl>()) {}
LayerProgram::~LayerProgram() = default;

const LayerSignature &LayerProgram::signature() const { return impl_->sig; }

std::unique_ptr<LayerProgram> LayerProgram::load(const std::string &path,
                                                 const std::string &entry,
                                                 std::string &error) {
  // A directory or a device (e.g. /dev/zero, which never ends) is an
  // error, not an endless read.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    error = path + ": cannot read the file: not a regular file";
    return nullptr;
  }
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = path + ": cannot read the file: " + file.getError().message();
    return nullptr;
  }
  return fromBuffer(std::move(*file), path, entry, error);
}

llvm::Expected<std::unique_ptr<LayerProgram>>
LayerProgram::load(const std::string &path, const std::string &entry) {
  std::string error;
  if (auto program = load(path, entry, error))
    return program;
  return llvm::createStringError(error);
}

llvm::Expected<std::unique_ptr<LayerProgram>>
LayerProgram::fromSource(const std::string &source, const std::string &name,
                         const std::string &entry) {
  std::string error;
  if (auto program =
          fromBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, name), name,
                     entry, error))
    return program;
  return llvm::createStringError(error);
}

std::unique_ptr<LayerProgram>
LayerProgram::fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                         const std::string &path, const std::string &entry,
                         std::string &error) {
  std::shared_ptr<mlir::MLIRContext> shared = sharedContext();
  mlir::MLIRContext &ctx = *shared;
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  FirstError diag(ctx);
  mlir::ParserConfig config(&ctx);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
  if (!module) {
    error =
        diag.message.empty() ? path + ": cannot parse the IR" : diag.message;
    return nullptr;
  }
  std::unique_ptr<LayerProgram> program(new LayerProgram());
  Impl &impl = *program->impl_;
  impl.ctx = shared; // kept here too: `diag` outlives a failed program
  impl.path = path;
  impl.module = std::move(module);
  impl.func = findEntry(*impl.module, path, entry, error);
  if (!impl.func || !impl.analyze(error))
    return nullptr;
  return program;
}
