//===- KernelBundle.cpp - Compile a layer to GPU kernels in memory --------===//
//
// The layer is lowered by the same passes as `inkling-opt
// --inkling-lower-to-nvvm --inkling-gpu-write-kernels`, and the bundle is
// serialized in memory by the writer's own code (serializeKernelBundle), so
// it is byte-for-byte what the tool writes, without touching the disk.
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

#include "llvm/Support/raw_ostream.h"

using namespace inkling;

std::string inkling::checkKernelTarget(const KernelTarget &target) {
  if (!gpu::isKnownNVPTXChip(target.chip))
    return "GPU target " + target.chip +
           ": not a chip LLVM's NVPTX backend knows (e.g. sm_80, sm_90)";
  return "";
}

mlir::FailureOr<KernelBundle>
inkling::compileKernelBundle(mlir::ModuleOp layer,
                             const KernelCompilerOptions &options) {
  mlir::OwningOpRef<mlir::ModuleOp> clone(layer.clone());
  mlir::PassManager pm(layer.getContext(), mlir::ModuleOp::getOperationName());
  LowerToNVVMOptions nvvm;
  nvvm.chip = options.chip;
  nvvm.features = options.features.empty()
                      ? gpu::defaultPTXFeatures(options.chip)
                      : options.features;
  nvvm.optLevel = options.optLevel;
  nvvm.format = options.format;
  nvvm.checked = options.checked;
  nvvm.blockSize = options.blockSize;
  nvvm.crossLayers = options.crossLayers;
  nvvm.fusion = options.fusion;
  nvvm.toolkit = options.toolkit;
  buildLowerToNVVMPipeline(pm, nvvm);
  KernelBundle bundle;
  if (mlir::failed(pm.run(*clone)) ||
      mlir::failed(gpu::serializeKernelBundle(
          *clone, bundle.manifest,
          [&](llvm::StringRef file, llvm::StringRef bytes) {
            bundle.objects.push_back({file.str(), bytes.str()});
          })))
    return mlir::failure();
  return bundle;
}

KernelCompiler::KernelCompiler(mlir::MLIRContext &context,
                               KernelCompilerOptions options)
    : context(context), options(std::move(options)) {
  registerAllDialects(context);
}

std::string KernelCompiler::cacheKey(mlir::ModuleOp layer) const {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "inkling-lower-to-nvvm{chip=" << options.chip << " features="
     << (options.features.empty() ? gpu::defaultPTXFeatures(options.chip)
                                  : options.features)
     << " opt-level=" << options.optLevel << " format=" << options.format
     << " checked=" << options.checked << " block-size=" << options.blockSize
     << " cross-layers=" << options.crossLayers
     << " fusion=" << static_cast<int>(options.fusion)
     << " toolkit=" << options.toolkit << "}\n";
  // Without locations (the default), with the generic attribute spelling
  // the printer always uses: equal layouts and ops give equal text.
  mlir::OpPrintingFlags flags;
  layer->print(os, flags);
  return key;
}

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

  if (std::string bad = checkKernelTarget(options); !bad.empty())
    return llvm::createStringError(bad);
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::FailureOr<KernelBundle> compiled = compileKernelBundle(layer, options);
  if (mlir::failed(compiled))
    return llvm::createStringError("inkling-lower-to-nvvm failed:\n" +
                                   diagnostics);
  auto bundle = std::make_shared<KernelBundle>(std::move(*compiled));
  bundle->key = key;
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
