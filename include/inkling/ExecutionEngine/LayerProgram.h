//===- LayerProgram.h - JIT-compile and call a model's sconv layer -*- C++
//-*-===//
//
// What `inkling-run` (and any host program that wants to drive a model's
// sconv layer on the CPU) needs from MLIR, behind a header without MLIR
// types:
//
//   * load: parse an IR file, pick the entry function, and discover the role
//     of every argument by walking its sconv ops (the cache buffer of
//     `sconv.bind`, the step metadata of `sconv.step`, each conv's input,
//     weights, bias and output and each insert's input, with their stream);
//     IR the host cannot drive is rejected with one line that says why;
//   * compile: `inkling-lower-to-cpu` (fusion strategy, checked mode,
//     emit-c-interface) and the JIT at -O3 (JitEngine.h: its object may
//     come from the on-disk cache), once;
//   * invoke: call the compiled function with one memref descriptor per
//     argument;
//   * compileKernels: or lower it to the GPU's kernel bundle instead, for
//     the runtime's CUDA launcher (`inkling-lower-to-nvvm`).
//
// Replay support: `keepOnlyOp` removes every sconv op but one before
// compiling, so a single op can be run on tensors from elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_EXECUTIONENGINE_LAYERPROGRAM_H
#define INKLING_EXECUTIONENGINE_LAYERPROGRAM_H

#include "inkling/CompiledKernels.h"
#include "inkling/ExecutionEngine/LayerAbi.h"
#include "inkling/ExecutionEngine/ObjectCache.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace inkling::exec {

struct CompileOptions {
  /// Run-time checks of slot and block ids (sconv-lower-to-loops checked).
  bool checked = false;
  /// With `checked`: give the step a status buffer (a new last argument of
  /// role Status) when the IR has none, so that a bad id is reported rather
  /// than stopping the process.
  bool addStatus = true;
  /// "conv-insert", "packed-inserts" or "none"; empty: the pipeline's
  /// default.
  std::string fusion;
  /// LLVM optimization level of the JIT.
  unsigned optLevel = 3;
  /// Threads of the CPU nests (the pipeline's `threads`): 0, the OpenMP
  /// runtime's default (OMP_NUM_THREADS, else every core); 1, no OpenMP.
  int threads = 0;
  /// Nests of fewer outer iterations than this ((token, head) pairs, or
  /// (run of 4 tokens, head) in the run nests) run on the calling thread
  /// (the pipeline's `min-parallel-iterations`).
  int64_t minParallelIterations = 64;
  /// The JIT's object cache directory (ObjectCache.h; empty: none); unset:
  /// $INKLING_CACHE_DIR. Not used by compileKernels.
  std::optional<std::string> cacheDir;
};

/// The GPU target of `compileKernels` (the `inkling-lower-to-nvvm` options).
using KernelTarget = inkling::KernelTarget;

class LayerProgram {
public:
  ~LayerProgram();

  /// Parses `path` and analyzes `entry` (empty: the only function with a
  /// body). The error is one line (starting with the file name or the
  /// location) when the file cannot be read or parsed, or the function
  /// cannot be driven.
  static llvm::Expected<std::unique_ptr<LayerProgram>>
  load(const std::string &path, const std::string &entry);
  /// The same from IR text in memory; `name` stands for the file in
  /// messages and locations.
  static llvm::Expected<std::unique_ptr<LayerProgram>>
  fromSource(const std::string &source, const std::string &name,
             const std::string &entry);

  const LayerSignature &signature() const;

  /// The threads `CompileOptions::threads = 0` gives: the OpenMP runtime's
  /// default team size.
  static int defaultThreadCount();

  /// Removes every sconv op of the function but `ops[index]` (before
  /// compile). The signature keeps every argument; the others are unused.
  llvm::Error keepOnlyOp(int64_t index);

  /// Rewrites the cache geometry before compile: block size N (0: the
  /// layout's) in every layout and cache type of the function, and with
  /// `layers` > 1 cross-layer pages (the bind's block stride holds `layers`
  /// pages; the host passes layer l the allocation from byte l * page on;
  /// 1: a page per block; 0: as the IR's bind says). A layer's page keeps
  /// its padding. The signature is analyzed again. Errors name the value.
  llvm::Error setCacheGeometry(int64_t blockSize, int64_t layers);

  /// Lowers and JIT-compiles the function (once). May add a Status argument
  /// (see CompileOptions::addStatus).
  llvm::Error compile(const CompileOptions &options);
  /// What the last compile got from the object cache, and why an entry
  /// could not be read or written ("" when nothing failed).
  CacheOutcome cacheOutcome() const;
  std::string cacheProblem() const;

  /// Lowers the function to CUDA kernels: the fusion of `options` (default:
  /// the CPU pipeline's), then `inkling-lower-to-nvvm`; `bundle` gets the
  /// kernels and manifest the runtime's `cuda::KernelBundle` loads. The
  /// manifest's host function is the signature's function with the
  /// signature's arguments (checked mode may add a Status argument, as for
  /// compile). The module itself is not lowered: compile() may still follow.
  llvm::Expected<KernelBundle> compileKernels(const CompileOptions &options,
                                              const KernelTarget &target);

  /// Calls the compiled function; `args` has one entry per argument of the
  /// signature and must have passed validateArguments (LayerAbi.h), and the
  /// metadata validateStepMetadata.
  void invoke(const std::vector<MemRefArg> &args);

private:
  LayerProgram();
  // The implementations, with a one-line `error`; the public calls wrap
  // them in llvm::Error (docs/Design.md section 9).
  static std::unique_ptr<LayerProgram>
  load(const std::string &path, const std::string &entry, std::string &error);
  bool keepOnlyOp(int64_t index, std::string &error);
  bool setCacheGeometry(int64_t blockSize, int64_t layers, std::string &error);
  bool compile(const CompileOptions &options, std::string &error);
  bool compileKernels(const CompileOptions &options, const KernelTarget &target,
                      KernelBundle &bundle, std::string &error);
  static std::unique_ptr<LayerProgram>
  fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
             const std::string &path, const std::string &entry,
             std::string &error);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace inkling::exec

#endif // INKLING_EXECUTIONENGINE_LAYERPROGRAM_H
