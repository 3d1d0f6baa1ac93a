//===- KernelBundle.cpp - Compile a layer to GPU kernels in memory --------===//
//
// The layer is lowered by the same passes as `inkling-opt
// --inkling-lower-to-nvvm --inkling-write-kernels`: the writer pass puts the
// objects and manifest.json into a private temporary directory, which is read
// back and removed, so the bundle is byte-for-byte what the tool writes.
//
//===----------------------------------------------------------------------===//

#include "inkling/KernelBundle.h"
#include "inkling/InitInkling.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace inkling;

const KernelObject *KernelBundle::find(llvm::StringRef file) const {
  for (const KernelObject &object : objects)
    if (object.file == file)
      return &object;
  return nullptr;
}

KernelCompiler::KernelCompiler(mlir::MLIRContext &context,
                               KernelCompilerOptions options)
    : context(context), options(std::move(options)) {
  registerAllDialects(context);
}

std::string KernelCompiler::cacheKey(mlir::ModuleOp layer) const {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "inkling-lower-to-nvvm{chip=" << options.chip
     << " features=" << options.features << " opt-level=" << options.optLevel
     << " format=" << options.format << " checked=" << options.checked
     << " toolkit=" << options.toolkit << "}\n";
  // Without locations (the default), with the generic attribute spelling
  // the printer always uses: equal layouts and ops give equal text.
  mlir::OpPrintingFlags flags;
  layer->print(os, flags);
  return key;
}

namespace {
/// Reads `dir/file` into `bytes`.
llvm::Error readFile(llvm::StringRef dir, llvm::StringRef file,
                     std::string &bytes) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read " + path.str().str());
  bytes = (*buffer)->getBuffer().str();
  return llvm::Error::success();
}

/// The kernel bundle `dir` holds (manifest.json and every object it names).
llvm::Error readBundle(llvm::StringRef dir, KernelBundle &bundle) {
  if (llvm::Error error = readFile(dir, "manifest.json", bundle.manifest))
    return error;
  llvm::Expected<llvm::json::Value> manifest =
      llvm::json::parse(bundle.manifest);
  if (!manifest)
    return manifest.takeError();
  const llvm::json::Array *kernels =
      manifest->getAsObject() ? manifest->getAsObject()->getArray("kernels")
                              : nullptr;
  if (!kernels)
    return llvm::createStringError("manifest.json has no kernel list");
  for (const llvm::json::Value &kernel : *kernels) {
    std::optional<llvm::StringRef> file =
        kernel.getAsObject() ? kernel.getAsObject()->getString("file")
                             : std::nullopt;
    if (!file)
      return llvm::createStringError("a manifest kernel names no file");
    KernelObject object;
    object.file = file->str();
    if (llvm::Error error = readFile(dir, *file, object.bytes))
      return error;
    bundle.objects.push_back(std::move(object));
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<std::shared_ptr<const KernelBundle>>
KernelCompiler::compile(mlir::ModuleOp layer) {
  std::string key = cacheKey(layer);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) {
    ++hitCount;
    return it->second;
  }
  ++missCount;

  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("inkling-kernels", dir))
    return llvm::createStringError(ec, "cannot create a temporary directory");
  struct RemoveDir {
    llvm::StringRef dir;
    ~RemoveDir() { llvm::sys::fs::remove_directories(dir); }
  } removeDir{dir};

  mlir::OwningOpRef<mlir::ModuleOp> clone(layer.clone());
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });

  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  LowerToNVVMOptions nvvm;
  nvvm.chip = options.chip;
  nvvm.features = options.features;
  nvvm.optLevel = options.optLevel;
  nvvm.format = options.format;
  nvvm.checked = options.checked;
  nvvm.toolkit = options.toolkit;
  buildLowerToNVVMPipeline(pm, nvvm);
  pm.addPass(gpu::createWriteKernelsPass(dir.str().str()));
  if (mlir::failed(pm.run(*clone)))
    return llvm::createStringError("inkling-lower-to-nvvm failed:\n" +
                                   diagnostics);

  auto bundle = std::make_shared<KernelBundle>();
  bundle->key = key;
  if (llvm::Error error = readBundle(dir, *bundle))
    return std::move(error);
  cache.emplace(std::move(key), bundle);
  return bundle;
}

size_t KernelCompiler::hits() const {
  std::lock_guard<std::mutex> lock(mutex);
  return hitCount;
}

size_t KernelCompiler::misses() const {
  std::lock_guard<std::mutex> lock(mutex);
  return missCount;
}

size_t KernelCompiler::size() const {
  std::lock_guard<std::mutex> lock(mutex);
  return cache.size();
}

void KernelCompiler::clear() {
  std::lock_guard<std::mutex> lock(mutex);
  cache.clear();
}
