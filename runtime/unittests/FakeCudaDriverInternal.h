//===- FakeCudaDriverInternal.h - The fake driver's shared parts -*- C++
//-*-===//
//
// What FakeCudaDriver.cpp (the entry points) and FakeCudaPtx.cpp (reading a
// PTX module's kernels) share: the driver's error codes, the parsed kernel,
// and the call that rejects with a reason.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_FAKECUDADRIVERINTERNAL_H
#define INKLING_RUNTIME_UNITTESTS_FAKECUDADRIVERINTERNAL_H

#include "CudaDriverApi.h"
#include "FakeCudaEmulator.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace inkling::fakecuda::driver {

using CUresult = inkling::cuda::driver::CUresult;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
                   kNoDevice = 100, kInvalidDevice = 101, kInvalidImage = 200,
                   kNoBinaryForGpu = 209, kInvalidHandle = 400, kNotFound = 500,
                   kIllegalAddress = 700, kMisalignedAddress = 716,
                   kLaunchFailed = 719;
constexpr int kComputeCapability = 90;

struct Param {
  int bytes = 8;
  bool pointer = false;
  uint64_t align = 1;  ///< The declared `.align` (pointers).
  uint64_t access = 0; ///< Widest global access through it, in bytes.
};
struct Function {
  std::string name;
  /// The kernel's host form, once attached (owned by its Module).
  const inkling::fakecuda::HostKernel *host = nullptr;
  std::vector<Param> params;
  uint64_t maxThreads = 1024;            ///< `.maxntid` (product).
  std::array<unsigned, 3> required = {}; ///< `.reqntid`, or zeros.
};
struct Module {
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::unique_ptr<inkling::fakecuda::HostModule> host;
};

/// Fails a call: writes "fake-cuda: <why>" to stderr and keeps it for
/// cuGetErrorString.
CUresult reject(CUresult code, const std::string &why);

/// Parses the `.entry` declarations of a PTX module into `module`.
CUresult parsePtx(const std::string &ptx, Module &module);

} // namespace inkling::fakecuda::driver

#endif // INKLING_RUNTIME_UNITTESTS_FAKECUDADRIVERINTERNAL_H
