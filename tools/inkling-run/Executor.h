//===- Executor.h - Where inkling-run's layer kernels run -------*- C++ -*-===//
//
// The server keeps every buffer on the host (caches, step metadata, stream
// inputs and outputs, weights) and calls the layer with host descriptors; an
// Executor runs the layer where its kernels live:
//
//   * the CPU executor calls the JIT-compiled function on the host buffers;
//   * the GPU executor mirrors each host buffer in device memory, uploads
//     what a call reads (metadata, inputs; weights once), launches the
//     bundle's kernels in the manifest's order and downloads what it writes
//     (outputs, status). The caches stay on the device: page copies happen
//     there, and they come back to the host only when asked (the checker).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_EXECUTOR_H
#define INKLING_TOOLS_INKLING_RUN_EXECUTOR_H

#include "inkling/ExecutionEngine/LayerProgram.h"
#include "inkling/Runtime/Status.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace inkling::run {

class Executor {
public:
  virtual ~Executor() = default;

  /// e.g. "cpu (JIT)" or "gpu (NVIDIA H200, sm_90, driver 12.4)".
  virtual std::string description() const = 0;

  /// A host buffer that the layer's arguments point into; its current
  /// contents are the initial contents of its device copy, if any.
  virtual Status addBuffer(void *host, size_t bytes) = 0;

  /// Runs the layer on `args`, one descriptor per argument of `signature()`,
  /// pointing into added buffers. Afterwards the outputs and the status are
  /// on the host.
  virtual Status invoke(const std::vector<exec::MemRefArg> &args) = 0;

  /// Copies `bytes` from `src` to `dst`, both inside cache buffers, where
  /// the caches live (copy-on-write pages).
  virtual Status copyCacheBytes(void *dst, const void *src, size_t bytes) = 0;

  /// Brings [host, host + bytes) of an added buffer up to date with its
  /// device copy / sends it there (the checker, fault injection).
  virtual Status download(void *host, size_t bytes) = 0;
  virtual Status upload(const void *host, size_t bytes) = 0;

  /// Seconds spent moving data between host and device (0 on the CPU).
  virtual double transferSeconds() const { return 0; }
  /// Seconds the kernels ran on the device, from CUDA events around each
  /// call's launches (0 on the CPU).
  virtual double deviceSeconds() const { return 0; }
  /// Kernel launches so far (0 on the CPU: one call runs the layer).
  virtual int64_t launches() const { return 0; }
};

/// Calls `program` (compiled) on the host buffers.
std::unique_ptr<Executor> createCpuExecutor(exec::LayerProgram &program);

struct GpuExecutorOptions {
  /// The driver library (default: the system's libcuda.so.1).
  std::string driverLibrary = "libcuda.so.1";
  /// Where to also write the kernel bundle (it is loaded from memory);
  /// empty: nowhere.
  std::string kernelsDir;
  /// Where to read a kernel bundle from instead of compiling the layer's
  /// (a bundle compiled elsewhere, or edited by a test); empty: compile.
  std::string kernelsFrom;
  /// Empty: sm_<compute capability of the device>.
  std::string chip;
  exec::CompileOptions compile;
};

/// Loads the driver, compiles `program`'s layer to a kernel bundle for the
/// device and loads it. `error` is one line (no driver, no device, a
/// lowering or a load failure).
std::unique_ptr<Executor> createGpuExecutor(exec::LayerProgram &program,
                                            const GpuExecutorOptions &options,
                                            std::string &error);

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_EXECUTOR_H
