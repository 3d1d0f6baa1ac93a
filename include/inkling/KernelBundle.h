//===- KernelBundle.h - Compile a layer to GPU kernels in memory -*- C++
//-*-===//
//
// An ML compiler hands over a layer's sconv IR and gets back what
// `inkling-gpu-write-kernels` would write to disk: one PTX (or cubin/fatbin)
// object per distinct kernel and `manifest.json` (kernel names, argument ABI,
// launch-grid rule; docs/gpu.md), which the runtime's CUDA launcher reads.
// Results are cached: layers with the same layout and ops compile once.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_KERNELBUNDLE_H
#define INKLING_KERNELBUNDLE_H

#include "inkling/CompiledKernels.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace inkling {

/// `inkling-lower-to-nvvm`'s options (`LowerToNVVMOptions`) as plain values.
struct KernelCompilerOptions : KernelTarget {
  bool checked = false;
  /// The engine's block size and cross-layer pages (0: the IR's).
  int64_t blockSize = 0, crossLayers = 0;
  /// The sconv-fuse strategy run first (the pipeline's `fusion` option).
  sconv::FusionStrategy fusion = sconv::FusionStrategy::ConvInsert;
};

/// The one compile of a layer to kernels: `inkling-lower-to-nvvm` on a clone
/// of `layer`, then the bundle serialized in memory by
/// `inkling-gpu-write-kernels`' own code (byte for byte what the tool
/// writes). Failures are reported as diagnostics on the context (the
/// caller's handler words them); the target must have passed
/// checkKernelTarget. KernelCompiler (cached) and LayerProgram::compileKernels
/// call it.
mlir::FailureOr<KernelBundle>
compileKernelBundle(mlir::ModuleOp layer, const KernelCompilerOptions &options);

/// Compiles layers (modules of sconv IR) to kernel bundles, with a cache.
/// Thread-safe; one compilation at a time.
class KernelCompiler {
public:
  /// Registers Inkling's dialects (`registerAllDialects`) on `context`,
  /// which must outlive the compiler.
  explicit KernelCompiler(mlir::MLIRContext &context,
                          KernelCompilerOptions options = {});

  /// The bundle of `layer` (not modified: a clone is lowered): from the
  /// cache when a layer with the same key was compiled before, else lowered
  /// with `inkling-lower-to-nvvm` and `inkling-gpu-write-kernels` and cached.
  /// The error carries the pipeline's diagnostics.
  llvm::Expected<std::shared_ptr<const KernelBundle>>
  compile(mlir::ModuleOp layer);

  /// The cache key of `layer`: the pipeline options, then the layer's IR
  /// printed without locations, i.e. its functions' names and signatures
  /// and each op with its attributes (the `#sconv.layout`, streams,
  /// residual, activation) and operand types. Two layers built the same way
  /// get the same key whatever their locations.
  std::string cacheKey(mlir::ModuleOp layer) const;

  /// Calls of `compile` answered from the cache / that compiled.
  size_t hits() const;
  size_t misses() const;
  /// Bundles held.
  size_t size() const;
  void clear();

private:
  mlir::MLIRContext &context;
  KernelCompilerOptions options;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const KernelBundle>> cache;
  size_t hitCount = 0, missCount = 0;
};

} // namespace inkling

#endif // INKLING_KERNELBUNDLE_H
