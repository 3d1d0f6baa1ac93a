//===- CompiledKernels.h - A layer's GPU kernels in memory ------*- C++ -*-===//
//
// The one in-memory form of a compiled kernel bundle (what
// `inkling-gpu-write-kernels` writes to disk: objects and manifest.json) and
// the target it is compiled for. No MLIR types: `LayerProgram`
// (the CPU's JIT) and the embedding API's `KernelCompiler`
// (KernelBundle.h) both return it, and the runtime's CUDA launcher loads it
// (`cuda::KernelBundle::load(driver, bundle.manifest, bundle.files())`).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_COMPILEDKERNELS_H
#define INKLING_COMPILEDKERNELS_H

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace inkling {

/// One serialized kernel of a bundle.
struct KernelObject {
  /// File name in the manifest (`<kernel>.ptx`, `.cubin`, `.fatbin`, or
  /// the host form `<kernel>.host.ll`).
  std::string file;
  /// The PTX text, the cubin/fatbin bytes or the host form's IR.
  std::string bytes;
};

/// The kernels of one layer, and the manifest that describes them.
struct KernelBundle {
  /// The cache key this bundle was compiled under (KernelCompiler).
  std::string key;
  /// `manifest.json` (format: docs/gpu.md).
  std::string manifest;
  /// Every file the manifest names, in manifest order of first use.
  std::vector<KernelObject> objects;

  /// The object of `file`, or null.
  const KernelObject *find(std::string_view file) const {
    for (const KernelObject &object : objects)
      if (object.file == file)
        return &object;
    return nullptr;
  }
  /// File name -> bytes, as the runtime's loader takes them.
  std::map<std::string, std::string> files() const {
    std::map<std::string, std::string> byName;
    for (const KernelObject &object : objects)
      byName[object.file] = object.bytes;
    return byName;
  }
};

/// The GPU target of a kernel compile: `inkling-lower-to-nvvm`'s target
/// options as plain values.
struct KernelTarget {
  /// A chip LLVM's NVPTX backend knows (checked: checkKernelTarget).
  std::string chip = "sm_90";
  /// Empty: +ptx80 up to sm_90, the backend's default for newer chips.
  std::string features;
  int optLevel = 3;
  /// "isa" (PTX, which the driver JIT-compiles for its device), "bin"
  /// (cubin, needs ptxas) or "fatbin".
  std::string format = "isa";
  /// CUDA toolkit for bin/fatbin and libdevice (empty: MLIR's lookup).
  std::string toolkit;
};

/// Empty, or why `target` cannot be compiled for (an unknown chip).
std::string checkKernelTarget(const KernelTarget &target);

} // namespace inkling

#endif // INKLING_COMPILEDKERNELS_H
