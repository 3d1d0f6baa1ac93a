//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests --------===//
//
// libinkling_fake_cuda.so exports the driver entry points the runtime's
// launcher loads (runtime/lib/Cuda.cpp), so the GPU path of a program can be
// driven on a machine without a GPU: `Driver::load(<this library>)`, or
// `inkling-run --device=gpu --cuda-driver=<this library>`.
//
// It is one sm_90 device whose memory is host memory. What it checks is what
// a driver, the hardware and compute-sanitizer would reject:
//   * copies and memsets must stay inside one live allocation;
//   * modules must be PTX for a target the device runs (`.target sm_XY`,
//     XY <= 90); each `.entry` is parsed for its parameters (size, `.ptr`,
//     `.align`), its `.maxntid` / `.reqntid`, and, per `.ptr` parameter, the
//     widest global access whose address derives from it (a flow-insensitive
//     walk of ld.param -> cvta/add/sub/mad/mov/selp -> ld/st/atom/red.global);
//   * a launch needs a positive grid and a block of at most 1024 threads
//     that `.maxntid` allows (`.reqntid`: exactly);
//   * parameters: exactly as many as the kernel declares (the launcher ends
//     its kernelParams array with a null, which a real driver never reads;
//     here a missing or extra parameter shows), each declared at most 8
//     bytes (the launcher passes 8-byte slots);
//   * every `.ptr` parameter points into a live allocation, aligned to its
//     declared `.align` and to its widest access (a 16-byte vector load from
//     an address that is not 16-byte aligned faults on the device);
//   * every memref descriptor (allocated ptr, aligned ptr, offset,
//     sizes[r], strides[r]: two `.ptr` then 1 + 2r integers) reaches only
//     bytes of that live allocation: [offset + min, offset + max] elements
//     over the sizes and strides, with the element size the allocated
//     pointer's `.align` declares (inkling-lower-to-nvvm sets it).
// Then it executes the kernel: the launcher hands it each module's host
// form (inklingEmuAttachHostForm, which only this driver exports), the
// kernel's LLVM IR after the NVVM lowering, which FakeCudaEmulator.h compiles
// for the host and runs over the grid with memcheck and racecheck. A failed
// check fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS and a message
// naming the kernel, block, thread, address and the extent or allocation it
// missed. A kernel without a host form cannot be executed: its launch fails
// (unless INKLING_FAKE_CUDA_EXECUTE=0).
// Each rejected call returns the driver's error code and writes one line
// "fake-cuda: ..." to stderr; cuGetErrorString then returns that line, so
// the launcher's status names the reason.
//
// Environment:
//   INKLING_FAKE_CUDA_DEVICES=N  devices present (default 1; 0: no device)
//   INKLING_FAKE_CUDA_FAIL=NAME  entry point NAME (e.g. cuLaunchKernel)
//                                fails with CUDA_ERROR_LAUNCH_FAILED
//   INKLING_FAKE_CUDA_EXECUTE=0  check launches only, run nothing
//   INKLING_FAKE_CUDA_ORDER=shuffle|reverse|forward
//                                the order of blocks and of the threads of a
//                                block (default shuffle: seeded per launch)
//   INKLING_FAKE_CUDA_SEED=N     the shuffle's seed (default 1)
//   INKLING_FAKE_CUDA_RACECHECK=0  no race check (faster, less memory)
//   INKLING_FAKE_CUDA_LAUNCH_LOG=FILE  appends where each launch's `.ptr`
//                                arguments point (allocation, offset)
//
//===----------------------------------------------------------------------===//

#include "CudaDriverApi.h"
#include "FakeCudaDriverInternal.h"
#include "FakeCudaEmulator.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace inkling::cuda::driver;
using namespace inkling::fakecuda::driver;

struct State {
  std::mutex mutex;
  std::map<uint64_t, size_t> allocations; // address -> bytes
  std::map<uint64_t, uint64_t> ordinals;  // address -> allocation number
  uint64_t numAllocations = 0;
  std::map<void *, std::unique_ptr<Module>> modules;
  int events = 0;
  uint64_t launches = 0;
};

State &state() {
  static State *s = new State(); // never destroyed: calls may come late
  return *s;
}

/// The reason of the calling thread's last rejected call: what
/// cuGetErrorString says, so that the caller's status names it.
thread_local std::string lastReason;
thread_local CUresult lastCode = kSuccess;

/// An environment variable, or `otherwise`.
std::string env(const char *name, const char *otherwise) {
  const char *value = std::getenv(name);
  return value && *value ? value : otherwise;
}

/// INKLING_FAKE_CUDA_FAIL names `call`.
bool injected(const char *call) {
  const char *fail = std::getenv("INKLING_FAKE_CUDA_FAIL");
  return fail && std::strcmp(fail, call) == 0;
}

int deviceCount() {
  const char *env = std::getenv("INKLING_FAKE_CUDA_DEVICES");
  return env ? std::atoi(env) : 1;
}

/// Whether [address, address + bytes) lies in one live allocation.
bool inside(uint64_t address, size_t bytes) {
  auto &allocations = state().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return false;
  --it;
  return address >= it->first && address - it->first + bytes <= it->second;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

CUresult checkRange(const char *call, uint64_t address, size_t bytes) {
  if (inside(address, bytes))
    return kSuccess;
  return reject(kInvalidValue, std::string(call) + ": [" + hex(address) +
                                   ", +" + std::to_string(bytes) +
                                   ") is not inside one allocation");
}

/// INKLING_FAKE_CUDA_LAUNCH_LOG=FILE: appends one line per checked launch,
/// "launch K NAME: pI=aA+OFFSET ..." for every `.ptr` parameter (allocation
/// number A in allocation order, OFFSET bytes into it), so that a test can
/// check where each argument points (the caller holds the state's lock).
void logLaunch(const Function &function, void **params) {
  std::string path = env("INKLING_FAKE_CUDA_LAUNCH_LOG", "");
  if (path.empty())
    return;
  std::string line =
      "launch " + std::to_string(state().launches) + " " + function.name + ":";
  for (size_t i = 0; i < function.params.size(); ++i) {
    if (!function.params[i].pointer)
      continue;
    uint64_t address = 0;
    std::memcpy(&address, params[i], sizeof(address));
    auto it = std::prev(state().allocations.upper_bound(address));
    line += " p" + std::to_string(i) + "=a" +
            std::to_string(state().ordinals[it->first]) + "+" +
            std::to_string(address - it->first);
  }
  if (FILE *file = std::fopen(path.c_str(), "a")) {
    std::fprintf(file, "%s\n", line.c_str());
    std::fclose(file);
  }
}

/// Runs a checked launch (the caller holds the state's lock): the kernel's
/// host form over the grid, unless INKLING_FAKE_CUDA_EXECUTE=0.
CUresult execute(const Function &function, unsigned gridX, unsigned gridY,
                 unsigned gridZ, unsigned blockX, unsigned blockY,
                 unsigned blockZ, void **params) {
  namespace fc = inkling::fakecuda;
  uint64_t launch = ++state().launches;
  if (env("INKLING_FAKE_CUDA_EXECUTE", "1") == "0")
    return kSuccess;
  if (!function.host)
    return reject(kLaunchFailed,
                  "cuLaunchKernel " + function.name +
                      ": no host form was attached to its module, so the "
                      "fake driver cannot execute it (bundles of "
                      "inkling-lower-to-nvvm carry one unless host-form=0; "
                      "INKLING_FAKE_CUDA_EXECUTE=0 runs the checks only)");
  fc::LaunchRequest request;
  request.kernel = function.host;
  request.grid = {gridX, gridY, gridZ};
  request.block = {blockX, blockY, blockZ};
  request.params = params;
  request.allocations = &state().allocations;
  std::string order = env("INKLING_FAKE_CUDA_ORDER", "shuffle");
  if (order == "reverse")
    request.order = fc::Order::Reversed;
  else if (order == "forward")
    request.order = fc::Order::Forward;
  else if (order != "shuffle")
    return reject(kInvalidValue, "INKLING_FAKE_CUDA_ORDER=" + order +
                                     ": not shuffle, reverse or forward");
  // Every launch its own shuffle, the same in every run.
  request.seed =
      std::strtoull(env("INKLING_FAKE_CUDA_SEED", "1").c_str(), nullptr, 10) *
          0x9e3779b97f4a7c15ull +
      launch;
  request.racecheck = env("INKLING_FAKE_CUDA_RACECHECK", "1") != "0";
  std::string failure = fc::execute(request);
  if (!failure.empty())
    return reject(kIllegalAddress, failure);
  return kSuccess;
}

} // namespace

namespace inkling::fakecuda::driver {
CUresult reject(CUresult code, const std::string &why) {
  std::fprintf(stderr, "fake-cuda: %s\n", why.c_str());
  lastReason = "fake-cuda: " + why;
  lastCode = code;
  return code;
}
} // namespace inkling::fakecuda::driver

#define FAKE_API extern "C" __attribute__((visibility("default")))
// Every entry point the loader resolves, with its signature: a definition
// below that differs from it does not compile.
#define FAKE_DECLARE(name, symbol, fallback, params)                           \
  FAKE_API CUresult symbol params;                                             \
  FAKE_API CUresult fallback params;
INKLING_CUDA_DRIVER_API(FAKE_DECLARE)
#undef FAKE_DECLARE
#define FAIL_IF_INJECTED(call)                                                 \
  if (injected(#call))                                                         \
  return reject(kLaunchFailed, #call " failed (INKLING_FAKE_CUDA_FAIL)")

FAKE_API CUresult cuInit(unsigned) { return kSuccess; }
FAKE_API CUresult cuDriverGetVersion(int *version) {
  *version = 12040;
  return kSuccess;
}
FAKE_API CUresult cuDeviceGetCount(int *count) {
  *count = deviceCount();
  return kSuccess;
}
FAKE_API CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount())
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}
FAKE_API CUresult cuDeviceGetName(char *name, int length, int) {
  std::snprintf(name, length, "Inkling fake CUDA device");
  return kSuccess;
}
FAKE_API CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
  case 75: // compute capability major
    *value = kComputeCapability / 10;
    return kSuccess;
  case 76: // minor
    *value = kComputeCapability % 10;
    return kSuccess;
  default:
    return kInvalidValue;
  }
}
FAKE_API CUresult cuDevicePrimaryCtxRetain(void **context, int) {
  if (deviceCount() < 1)
    return kNoDevice;
  static int primary;
  *context = &primary;
  return kSuccess;
}
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
FAKE_API CUresult cuCtxSetCurrent(void *) { return kSuccess; }
FAKE_API CUresult cuCtxSynchronize() {
  FAIL_IF_INJECTED(cuCtxSynchronize);
  return kSuccess;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr *address, size_t bytes) {
  FAIL_IF_INJECTED(cuMemAlloc_v2);
  // cuMemAlloc's base alignment (256 bytes); memcheck still bounds the
  // accesses by `bytes`.
  constexpr size_t kAlign = 256;
  void *memory = std::aligned_alloc(
      kAlign, (bytes + kAlign - 1) / kAlign * kAlign + (bytes ? 0 : kAlign));
  if (!memory)
    return kOutOfMemory;
  std::memset(memory, 0xa5, bytes); // device memory starts undefined
  std::lock_guard<std::mutex> lock(state().mutex);
  *address = reinterpret_cast<uintptr_t>(memory);
  state().allocations[*address] = bytes;
  state().ordinals[*address] = state().numAllocations++;
  return kSuccess;
}
FAKE_API CUresult cuMemFree_v2(CUdeviceptr address) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().allocations.erase(address))
    return reject(kInvalidValue,
                  "cuMemFree: " + hex(address) + " is not an allocation");
  state().ordinals.erase(address);
  std::free(reinterpret_cast<void *>(address));
  return kSuccess;
}
FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                  size_t bytes) {
  FAIL_IF_INJECTED(cuMemcpyHtoD_v2);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (CUresult r = checkRange("cuMemcpyHtoD", dst, bytes))
    return r;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return kSuccess;
}
FAKE_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  FAIL_IF_INJECTED(cuMemcpyDtoH_v2);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (CUresult r = checkRange("cuMemcpyDtoH", src, bytes))
    return r;
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}
FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                       size_t bytes, void *) {
  FAIL_IF_INJECTED(cuMemcpyDtoDAsync_v2);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (CUresult r = checkRange("cuMemcpyDtoDAsync (destination)", dst, bytes))
    return r;
  if (CUresult r = checkRange("cuMemcpyDtoDAsync (source)", src, bytes))
    return r;
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}
FAKE_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value,
                                size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (CUresult r = checkRange("cuMemsetD8", dst, bytes))
    return r;
  std::memset(reinterpret_cast<void *>(dst), value, bytes);
  return kSuccess;
}

FAKE_API CUresult cuModuleLoadData(void **module, const void *image) {
  FAIL_IF_INJECTED(cuModuleLoadData);
  auto loaded = std::make_unique<Module>();
  if (CUresult r =
          parsePtx(std::string(static_cast<const char *>(image)), *loaded))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  *module = loaded.get();
  state().modules[*module] = std::move(loaded);
  return kSuccess;
}
FAKE_API CUresult cuModuleUnload(void *module) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().modules.erase(module) ? kSuccess : kInvalidHandle;
}
FAKE_API CUresult cuModuleGetFunction(void **function, void *module,
                                      const char *name) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().modules.find(module);
  if (it == state().modules.end())
    return kInvalidHandle;
  auto f = it->second->functions.find(name);
  if (f == it->second->functions.end())
    return reject(kNotFound,
                  std::string("cuModuleGetFunction: no entry ") + name);
  *function = f->second.get();
  return kSuccess;
}

FAKE_API CUresult cuLaunchKernel(void *handle, unsigned gridX, unsigned gridY,
                                 unsigned gridZ, unsigned blockX,
                                 unsigned blockY, unsigned blockZ,
                                 unsigned sharedBytes, void *, void **params,
                                 void **extra) {
  FAIL_IF_INJECTED(cuLaunchKernel);
  auto *function = static_cast<Function *>(handle);
  if (!function)
    return kInvalidHandle;
  const std::string &name = function->name;
  if (!gridX || !gridY || !gridZ || !blockX || !blockY || !blockZ)
    return reject(kInvalidValue, "cuLaunchKernel " + name + ": empty grid");
  uint64_t threads = uint64_t(blockX) * blockY * blockZ;
  if (threads > 1024)
    return reject(kInvalidValue,
                  "cuLaunchKernel " + name + ": more than 1024 threads");
  if (threads > function->maxThreads)
    return reject(kInvalidValue, "cuLaunchKernel " + name + ": a block of " +
                                     std::to_string(threads) +
                                     " threads, the kernel's .maxntid allows " +
                                     std::to_string(function->maxThreads));
  if (function->required[0] &&
      function->required != std::array<unsigned, 3>{blockX, blockY, blockZ})
    return reject(kInvalidValue,
                  "cuLaunchKernel " + name +
                      ": the block is not the kernel's .reqntid");
  if (sharedBytes > 48 * 1024 || extra)
    return reject(kInvalidValue, "cuLaunchKernel " + name +
                                     ": unexpected shared memory or extra");
  if (!params && !function->params.empty())
    return reject(kInvalidValue, "cuLaunchKernel " + name + ": no parameters");
  // The count: params[0..n) non-null, params[n] the launcher's null.
  size_t n = function->params.size();
  for (size_t i = 0; i < n; ++i)
    if (!params[i])
      return reject(kInvalidValue, "cuLaunchKernel " + name + ": " +
                                       std::to_string(i) +
                                       " parameters passed, the kernel has " +
                                       std::to_string(n));
  if (params && params[n])
    return reject(kInvalidValue, "cuLaunchKernel " + name +
                                     ": more parameters passed than the " +
                                     std::to_string(n) + " the kernel has");
  auto slot = [&](size_t i) {
    uint64_t value = 0;
    std::memcpy(&value, params[i], sizeof(value));
    return value;
  };
  std::lock_guard<std::mutex> lock(state().mutex);
  for (size_t i = 0; i < n; ++i) {
    const Param &p = function->params[i];
    std::string what =
        "cuLaunchKernel " + name + ": parameter " + std::to_string(i);
    if (p.bytes > 8)
      return reject(kInvalidValue,
                    what + " is " + std::to_string(p.bytes) +
                        " bytes, more than the launcher's 8-byte slot");
    if (!p.pointer)
      continue;
    uint64_t address = slot(i);
    if (!inside(address, 1))
      return reject(kInvalidValue, what + " (.ptr) " + hex(address) +
                                       " points into no allocation");
    uint64_t align = std::max(p.align, p.access);
    if (address % align != 0)
      return reject(kMisalignedAddress,
                    what + " (.ptr) " + hex(address) + " is not " +
                        std::to_string(align) + "-byte aligned (.align " +
                        std::to_string(p.align) + ", " +
                        std::to_string(p.access) + "-byte accesses)");
  }
  // Memref descriptors: .ptr, .ptr, offset, sizes[r], strides[r].
  for (size_t i = 0; i + 2 < n; ++i) {
    if (!function->params[i].pointer || !function->params[i + 1].pointer)
      continue;
    size_t ints = 0;
    while (i + 2 + ints < n && !function->params[i + 2 + ints].pointer)
      ++ints;
    if (ints % 2 == 0)
      continue; // not a descriptor
    size_t rank = (ints - 1) / 2;
    int64_t offset = static_cast<int64_t>(slot(i + 2));
    __int128 lo = offset, hi = offset;
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t size = static_cast<int64_t>(slot(i + 3 + d));
      int64_t stride = static_cast<int64_t>(slot(i + 3 + rank + d));
      if (size <= 0) {
        empty = size == 0;
        if (size < 0)
          return reject(kInvalidValue, "cuLaunchKernel " + name +
                                           ": descriptor at parameter " +
                                           std::to_string(i) + " has size " +
                                           std::to_string(size));
        break;
      }
      __int128 reach = static_cast<__int128>(size - 1) * stride;
      (reach < 0 ? lo : hi) += reach;
    }
    if (empty)
      continue;
    uint64_t element = function->params[i].align;
    uint64_t aligned = slot(i + 1);
    __int128 first = static_cast<__int128>(aligned) + lo * element;
    __int128 last = static_cast<__int128>(aligned) + (hi + 1) * element;
    if (first < 0 || last > (static_cast<__int128>(1) << 64) ||
        !inside(static_cast<uint64_t>(first),
                static_cast<size_t>(last - first)))
      return reject(
          kInvalidValue,
          "cuLaunchKernel " + name + ": descriptor at parameter " +
              std::to_string(i) + " reaches [" +
              hex(static_cast<uint64_t>(first)) + ", +" +
              std::to_string(static_cast<long long>(last - first)) +
              ") (elements " + std::to_string(static_cast<long long>(lo)) +
              ".." + std::to_string(static_cast<long long>(hi)) + " of " +
              std::to_string(element) + " bytes), not inside one allocation");
  }
  logLaunch(*function, params);
  return execute(*function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                 params);
}

/// Only this driver's: the host form of `module`'s kernels, which its
/// launches then execute.
FAKE_API CUresult inklingEmuAttachHostForm(void *handle, const char *ir,
                                           size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().modules.find(handle);
  if (it == state().modules.end())
    return kInvalidHandle;
  Module &module = *it->second;
  std::vector<std::string> entries;
  for (const auto &f : module.functions)
    entries.push_back(f.first);
  std::string error;
  auto host =
      inkling::fakecuda::loadHostForm(std::string(ir, bytes), entries, error);
  if (!host)
    return reject(kInvalidImage,
                  "inklingEmuAttachHostForm (" + entries[0] + "): " + error);
  for (auto &f : module.functions)
    f.second->host = host->kernel(f.first);
  module.host = std::move(host);
  return kSuccess;
}

FAKE_API CUresult cuEventCreate(void **event, unsigned) {
  *event = new int(0);
  return kSuccess;
}
FAKE_API CUresult cuEventDestroy_v2(void *event) {
  delete static_cast<int *>(event);
  return kSuccess;
}
FAKE_API CUresult cuEventRecord(void *event, void *) {
  *static_cast<int *>(event) = ++state().events;
  return kSuccess;
}
FAKE_API CUresult cuEventSynchronize(void *) { return kSuccess; }
FAKE_API CUresult cuEventElapsedTime(float *ms, void *, void *) {
  *ms = 0;
  return kSuccess;
}
FAKE_API CUresult cuGetErrorName(CUresult code, const char **name) {
  switch (code) {
  case kInvalidValue:
    *name = "CUDA_ERROR_INVALID_VALUE";
    break;
  case kOutOfMemory:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    break;
  case kNoDevice:
    *name = "CUDA_ERROR_NO_DEVICE";
    break;
  case kInvalidImage:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    break;
  case kNoBinaryForGpu:
    *name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
    break;
  case kNotFound:
    *name = "CUDA_ERROR_NOT_FOUND";
    break;
  case kIllegalAddress:
    *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    break;
  case kMisalignedAddress:
    *name = "CUDA_ERROR_MISALIGNED_ADDRESS";
    break;
  case kLaunchFailed:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    break;
  default:
    *name = "CUDA_ERROR_UNKNOWN";
  }
  return kSuccess;
}
FAKE_API CUresult cuGetErrorString(CUresult code, const char **text) {
  *text = code == lastCode && !lastReason.empty() ? lastReason.c_str()
          : code == kLaunchFailed                 ? "unspecified launch failure"
                                                  : "fake-cuda error";
  return kSuccess;
}
