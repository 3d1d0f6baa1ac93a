//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests --------===//
//
// libinkling_fake_cuda.so exports the driver entry points the runtime's
// launcher loads (runtime/lib/Cuda.cpp), so the GPU path of a program can be
// driven on a machine without a GPU: `Driver::load(<this library>)`, or
// `inkling-run --device=gpu --cuda-driver=<this library>`.
//
// It is one sm_90 device whose memory is host memory. What it checks is what
// a driver and compute-sanitizer would reject:
//   * copies and memsets must stay inside one live allocation;
//   * modules must be PTX for a target the device runs (`.target sm_XY`,
//     XY <= 90); each `.entry` is parsed for its parameters;
//   * a launch needs a positive grid, a block of at most 1024 threads, and
//     every `.ptr` parameter must point into a live allocation.
// It does not run kernels: what a kernel would write stays as it was.
// Each rejected call returns the driver's error code and writes one line
// "fake-cuda: ..." to stderr.
//
// Environment:
//   INKLING_FAKE_CUDA_DEVICES=N  devices present (default 1; 0: no device)
//   INKLING_FAKE_CUDA_FAIL=NAME  entry point NAME (e.g. cuLaunchKernel)
//                                fails with CUDA_ERROR_LAUNCH_FAILED
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
                   kNoDevice = 100, kInvalidDevice = 101, kInvalidImage = 200,
                   kNoBinaryForGpu = 209, kInvalidHandle = 400, kNotFound = 500,
                   kLaunchFailed = 719;
constexpr int kComputeCapability = 90;

struct Param {
  int bytes = 8;
  bool pointer = false;
};
struct Function {
  std::string name;
  std::vector<Param> params;
};
struct Module {
  std::map<std::string, std::unique_ptr<Function>> functions;
};

struct State {
  std::mutex mutex;
  std::map<uint64_t, size_t> allocations; // address -> bytes
  std::map<void *, std::unique_ptr<Module>> modules;
  int events = 0;
};

State &state() {
  static State *s = new State(); // never destroyed: calls may come late
  return *s;
}

CUresult reject(CUresult code, const std::string &why) {
  std::fprintf(stderr, "fake-cuda: %s\n", why.c_str());
  return code;
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

/// Parses the `.entry` declarations of a PTX module.
CUresult parsePtx(const std::string &ptx, Module &module) {
  std::smatch match;
  static const std::regex target(R"(\.target\s+sm_(\d+))");
  if (!std::regex_search(ptx, match, target))
    return reject(kInvalidImage, "cuModuleLoadData: not PTX (no .target)");
  if (std::stoi(match[1]) > kComputeCapability)
    return reject(kNoBinaryForGpu, "cuModuleLoadData: PTX for sm_" +
                                       match[1].str() + ", the device is sm_" +
                                       std::to_string(kComputeCapability));
  static const std::regex entry(
      R"(\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\))");
  static const std::regex param(R"(\.param\s+\.([usbf])(\d+)(\s+\.ptr)?)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry);
       it != std::sregex_iterator(); ++it) {
    auto function = std::make_unique<Function>();
    function->name = (*it)[1];
    std::string list = (*it)[2];
    for (auto p = std::sregex_iterator(list.begin(), list.end(), param);
         p != std::sregex_iterator(); ++p)
      function->params.push_back({std::stoi((*p)[2]) / 8, (*p)[3].matched});
    module.functions[function->name] = std::move(function);
  }
  if (module.functions.empty())
    return reject(kInvalidImage, "cuModuleLoadData: the PTX has no .entry");
  return kSuccess;
}

} // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))
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

FAKE_API CUresult cuMemAlloc_v2(uint64_t *address, size_t bytes) {
  FAIL_IF_INJECTED(cuMemAlloc_v2);
  void *memory = std::malloc(bytes ? bytes : 1);
  if (!memory)
    return kOutOfMemory;
  std::memset(memory, 0xa5, bytes); // device memory starts undefined
  std::lock_guard<std::mutex> lock(state().mutex);
  *address = reinterpret_cast<uintptr_t>(memory);
  state().allocations[*address] = bytes;
  return kSuccess;
}
FAKE_API CUresult cuMemFree_v2(uint64_t address) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().allocations.erase(address))
    return reject(kInvalidValue,
                  "cuMemFree: " + hex(address) + " is not an allocation");
  std::free(reinterpret_cast<void *>(address));
  return kSuccess;
}
FAKE_API CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes) {
  FAIL_IF_INJECTED(cuMemcpyHtoD_v2);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (CUresult r = checkRange("cuMemcpyHtoD", dst, bytes))
    return r;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return kSuccess;
}
FAKE_API CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes) {
  FAIL_IF_INJECTED(cuMemcpyDtoH_v2);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (CUresult r = checkRange("cuMemcpyDtoH", src, bytes))
    return r;
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}
FAKE_API CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes,
                                       void *) {
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
FAKE_API CUresult cuMemsetD8_v2(uint64_t dst, unsigned char value,
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
  if (uint64_t(blockX) * blockY * blockZ > 1024)
    return reject(kInvalidValue,
                  "cuLaunchKernel " + name + ": more than 1024 threads");
  if (sharedBytes > 48 * 1024 || extra)
    return reject(kInvalidValue, "cuLaunchKernel " + name +
                                     ": unexpected shared memory or extra");
  if (!params && !function->params.empty())
    return reject(kInvalidValue, "cuLaunchKernel " + name + ": no parameters");
  std::lock_guard<std::mutex> lock(state().mutex);
  for (size_t i = 0; i < function->params.size(); ++i) {
    const Param &p = function->params[i];
    if (!p.pointer)
      continue;
    uint64_t address = 0;
    std::memcpy(&address, params[i], sizeof(address));
    if (!inside(address, 1))
      return reject(kInvalidValue, "cuLaunchKernel " + name + ": parameter " +
                                       std::to_string(i) + " (.ptr) " +
                                       hex(address) +
                                       " points into no allocation");
  }
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
  case kLaunchFailed:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    break;
  default:
    *name = "CUDA_ERROR_UNKNOWN";
  }
  return kSuccess;
}
FAKE_API CUresult cuGetErrorString(CUresult code, const char **text) {
  *text =
      code == kLaunchFailed ? "unspecified launch failure" : "fake-cuda error";
  return kSuccess;
}
