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

/// One serialized kernel of a bundle.
struct KernelObject {
  /// File name in the manifest (`<kernel>.ptx`, `.cubin` or `.fatbin`).
  std::string file;
  /// The PTX text, or the cubin/fatbin bytes.
  std::string bytes;
};

/// The kernels of one layer, and the manifest that describes them.
struct KernelBundle {
  /// The cache key this bundle was compiled under.
  std::string key;
  /// `manifest.json` (format: docs/gpu.md).
  std::string manifest;
  /// One object per distinct kernel, in manifest order of first use.
  std::vector<KernelObject> objects;

  /// The object of `file`, or null.
  const KernelObject *find(llvm::StringRef file) const;
};

/// `inkling-lower-to-nvvm`'s options (`LowerToNVVMOptions`) as plain values.
struct KernelCompilerOptions {
  /// Checked against LLVM's NVPTX backend (compile() fails on an unknown
  /// one).
  std::string chip = "sm_90";
  /// Empty: +ptx80 up to sm_90, the backend's default for newer chips.
  std::string features;
  int optLevel = 3;
  /// isa (PTX, no tool needed), bin (cubin, needs ptxas) or fatbin.
  std::string format = "isa";
  bool checked = false;
  /// The sconv-fuse strategy run first (the pipeline's `fusion` option).
  sconv::FusionStrategy fusion = sconv::FusionStrategy::ConvInsert;
  std::string toolkit;
};

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
