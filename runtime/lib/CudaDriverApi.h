//===- CudaDriverApi.h - The CUDA driver entry points we use ----*- C++ -*-===//
//
// The one list of the driver entry points the runtime calls, with their C
// signatures: the loader (Cuda.cpp) resolves them with dlsym and the fake
// driver (unittests/FakeCudaDriver.cpp) declares its exports from it, so a
// signature that differs is a compile error there. No cuda.h: the few
// driver types are opaque handles and ints with the driver's C ABI (CUresult
// is an int enum, CUdeviceptr a 64-bit integer on 64-bit hosts).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_LIB_CUDADRIVERAPI_H
#define INKLING_RUNTIME_LIB_CUDADRIVERAPI_H

#include <cstddef>

namespace inkling::cuda::driver {
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;
using CUdeviceptr = unsigned long long;
} // namespace inkling::cuda::driver

/// X(name, symbol, fallback, params) for every entry point: `symbol` is the
/// (versioned) name cuda.h maps `name` to (cuMemAlloc -> cuMemAlloc_v2);
/// `fallback` an older name looked up when a driver lacks `symbol` (the
/// same as `symbol` when there is none). Types are those of
/// inkling::cuda::driver.
#define INKLING_CUDA_DRIVER_API(X)                                             \
  X(cuInit, cuInit, cuInit, (unsigned))                                        \
  X(cuDriverGetVersion, cuDriverGetVersion, cuDriverGetVersion, (int *))       \
  X(cuDeviceGetCount, cuDeviceGetCount, cuDeviceGetCount, (int *))             \
  X(cuDeviceGet, cuDeviceGet, cuDeviceGet, (CUdevice *, int))                  \
  X(cuDeviceGetName, cuDeviceGetName, cuDeviceGetName,                         \
    (char *, int, CUdevice))                                                   \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, cuDeviceGetAttribute,          \
    (int *, int, CUdevice))                                                    \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain,                        \
    cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                         \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2,                   \
    cuDevicePrimaryCtxRelease, (CUdevice))                                     \
  X(cuCtxSetCurrent, cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext))            \
  X(cuCtxSynchronize, cuCtxSynchronize, cuCtxSynchronize, ())                  \
  X(cuMemAlloc, cuMemAlloc_v2, cuMemAlloc_v2, (CUdeviceptr *, size_t))         \
  X(cuMemFree, cuMemFree_v2, cuMemFree_v2, (CUdeviceptr))                      \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2,                            \
    (CUdeviceptr, const void *, size_t))                                       \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2,                            \
    (void *, CUdeviceptr, size_t))                                             \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2,             \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                              \
  X(cuMemsetD8, cuMemsetD8_v2, cuMemsetD8_v2,                                  \
    (CUdeviceptr, unsigned char, size_t))                                      \
  X(cuModuleLoadData, cuModuleLoadData, cuModuleLoadData,                      \
    (CUmodule *, const void *))                                                \
  X(cuModuleUnload, cuModuleUnload, cuModuleUnload, (CUmodule))                \
  X(cuModuleGetFunction, cuModuleGetFunction, cuModuleGetFunction,             \
    (CUfunction *, CUmodule, const char *))                                    \
  X(cuLaunchKernel, cuLaunchKernel, cuLaunchKernel,                            \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))                                    \
  X(cuEventCreate, cuEventCreate, cuEventCreate, (CUevent *, unsigned))        \
  X(cuEventDestroy, cuEventDestroy_v2, cuEventDestroy_v2, (CUevent))           \
  X(cuEventRecord, cuEventRecord, cuEventRecord, (CUevent, CUstream))          \
  X(cuEventSynchronize, cuEventSynchronize, cuEventSynchronize, (CUevent))     \
  X(cuEventElapsedTime, cuEventElapsedTime_v2, cuEventElapsedTime,             \
    (float *, CUevent, CUevent))                                               \
  X(cuGetErrorString, cuGetErrorString, cuGetErrorString,                      \
    (CUresult, const char **))                                                 \
  X(cuGetErrorName, cuGetErrorName, cuGetErrorName, (CUresult, const char **))

/// X(name, params) for the entry points a driver may lack, resolved when
/// present: `inklingEmuAttachHostForm(module, ir, bytes)` gives an emulating
/// driver (the fake one, runtime/unittests) the host form of a loaded
/// module's kernels (EmulationAbi.h), which it then executes. No real
/// driver exports it.
#define INKLING_CUDA_OPTIONAL_API(X)                                           \
  X(inklingEmuAttachHostForm, (CUmodule, const char *, size_t))

#endif // INKLING_RUNTIME_LIB_CUDADRIVERAPI_H
