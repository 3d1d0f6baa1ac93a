//===- Cuda.h - Loading and launching the GPU kernel bundle -----*- C++ -*-===//
//
// The CUDA driver API, loaded at run time: `libcuda.so.1` is dlopen-ed on
// first use, so nothing links against CUDA and everything builds and runs
// (without the GPU path) on machines with no driver. Every call returns a
// Status; without a driver it is
//   unavailable: no CUDA driver: libcuda.so.1 could not be loaded (...)
// and without a device
//   unavailable: no CUDA device: cuInit failed (...)
//
// A KernelBundle loads the directory `inkling-gpu-write-kernels` wrote (PTX,
// cubin or fatbin + manifest.json) into the current device and launches its
// kernels with the manifest's ABI (KernelManifest.h).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_CUDA_H
#define INKLING_RUNTIME_CUDA_H

#include "inkling/Runtime/KernelManifest.h"
#include "inkling/Runtime/Status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inkling::cuda {

using DevicePtr = uint64_t;
using Stream = void *; ///< A CUstream; nullptr is the default stream.
using Event = void *;  ///< A CUevent.

/// The driver API of one process: one device, its primary context.
class Driver {
public:
  /// The process-wide driver on device 0, loaded and initialized on first
  /// use (thread-safe). Unavailable without a driver or a device; the
  /// status is remembered.
  static StatusOr<Driver *> get();

  /// Loads `library` (e.g. "libcuda.so.1") and initializes device
  /// `ordinal`; for tests and tools that need another library or device.
  static StatusOr<std::unique_ptr<Driver>> load(const std::string &library,
                                                int ordinal = 0);

  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  const std::string &deviceName() const { return deviceName_; }
  /// e.g. 90 for sm_90.
  int computeCapability() const { return computeCapability_; }
  int driverVersion() const { return driverVersion_; }

  /// Makes this driver's context current on the calling thread.
  Status makeCurrent();

  StatusOr<DevicePtr> alloc(size_t bytes);
  Status free(DevicePtr ptr);
  Status copyToDevice(DevicePtr dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, DevicePtr src, size_t bytes);
  Status copyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                      Stream stream = nullptr);
  Status memset(DevicePtr dst, uint8_t value, size_t bytes);
  Status synchronize();

  StatusOr<Event> createEvent();
  Status destroyEvent(Event event);
  Status record(Event event, Stream stream = nullptr);
  /// Milliseconds between two recorded events (waits for `end`).
  StatusOr<float> elapsedMs(Event start, Event end);

  /// A CUmodule from a PTX, cubin or fatbin image (PTX is JIT-compiled by
  /// the driver for the device); and a kernel of it.
  StatusOr<void *> loadModule(const std::string &image);
  Status unloadModule(void *module);
  /// Whether the driver executes kernels from their host form
  /// (inkling/Runtime/EmulationAbi.h): the fake driver of the tests does, a
  /// real driver does not.
  bool emulates() const;
  /// Gives an emulating driver the host form of `module`'s kernels.
  Status attachHostForm(void *module, const std::string &hostForm);
  StatusOr<void *> function(void *module, const std::string &name);
  /// cuLaunchKernel with `params[i]` pointing to parameter i, followed by a
  /// null (KernelBundle::launch ends them so; the fake driver checks the
  /// count with it, a real driver ignores it).
  Status launch(void *function, std::array<int64_t, 3> grid,
                std::array<int64_t, 3> block, void **params,
                Stream stream = nullptr);

  struct Api; ///< The driver entry points (Cuda.cpp).

private:
  Driver() = default;
  Status check(int result, const char *call) const;

  void *library_ = nullptr;
  std::unique_ptr<Api> api_;
  int device_ = 0;
  void *context_ = nullptr;
  std::string deviceName_;
  int computeCapability_ = 0;
  int driverVersion_ = 0;
};

/// A device buffer freed on destruction.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  static StatusOr<DeviceBuffer> allocate(Driver &driver, size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  DevicePtr address() const { return ptr_; }
  size_t bytes() const { return bytes_; }

private:
  Driver *driver_ = nullptr;
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

/// The kernels of a bundle directory, loaded into the driver's context.
class KernelBundle {
public:
  /// Reads `directory/manifest.json` and loads every kernel file.
  static StatusOr<std::unique_ptr<KernelBundle>>
  load(Driver &driver, const std::string &directory);
  /// The same from memory: manifest.json's text and the bytes of every file
  /// it names (what `serializeKernelBundle` or the embedding API's
  /// `KernelCompiler` produce), so a serving process needs no directory.
  static StatusOr<std::unique_ptr<KernelBundle>>
  load(Driver &driver, std::string_view manifestJson,
       const std::map<std::string, std::string> &objects);
  ~KernelBundle();

  const KernelManifest &manifest() const { return manifest_; }

  /// Launches kernel `name` with its arguments in kernel order; the grid
  /// follows the manifest's rule for T = dim 0 of the tokens argument. A
  /// launch with T = 0 does nothing.
  Status launch(const std::string &name, const std::vector<MemRefArg> &args,
                Stream stream = nullptr);

  /// Runs host function `host` of the manifest: each of its launches in
  /// order, binding kernel arguments to `hostArgs` (the host function's
  /// memref arguments, in its order) and to the host's scratch buffers.
  ///
  /// Scratch buffers (an unfused op's output that the next kernel reads,
  /// KernelManifest.h) belong to the bundle: allocated on the device at
  /// their first use, kept, and grown when a call needs more (after a
  /// device synchronize, since queued launches may still use the old
  /// buffer). So runs of one bundle must not overlap on different streams
  /// when its host has scratch buffers; use a bundle per stream.
  Status run(const std::string &host, const std::vector<MemRefArg> &hostArgs,
             Stream stream = nullptr);

  /// The kernel arguments of each launch of `host` for a call with
  /// `hostArgs`, in launch order (what `run` passes), allocating or growing
  /// the host's scratch buffers as `run` does.
  StatusOr<std::vector<std::vector<MemRefArg>>>
  bindLaunches(const std::string &host, const std::vector<MemRefArg> &hostArgs);

  /// The device bytes the scratch buffers hold now (what an engine counts
  /// against its memory budget: they grow to the longest step's size).
  size_t scratchBytes() const;
  /// Frees every scratch buffer after a device synchronize (the next run
  /// allocates what it needs again), e.g. after an unusually long step.
  Status releaseScratch();

private:
  KernelBundle(Driver &driver, KernelManifest manifest)
      : driver_(driver), manifest_(std::move(manifest)) {}
  /// Loads each kernel's object of `manifest` (or returns its error), from
  /// `object(file)`; `where` prefixes the file in messages.
  static StatusOr<std::unique_ptr<KernelBundle>> loadModules(
      Driver &driver, StatusOr<KernelManifest> manifest,
      const std::function<StatusOr<std::string>(const std::string &)> &object,
      const std::string &where);

  Driver &driver_;
  KernelManifest manifest_;
  std::vector<void *> modules_;
  std::map<std::string, void *> functions_;
  /// Each host's scratch buffers (HostSpec::scratch order).
  std::map<std::string, std::vector<DeviceBuffer>> scratch_;
};

} // namespace inkling::cuda

#endif // INKLING_RUNTIME_CUDA_H
