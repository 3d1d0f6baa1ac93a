//===- FakeCudaKernel.h - A kernel loaded into the fake driver --*- C++ -*-===//
//
// What the fake driver's tests (CudaTest.cpp, FakeCudaEmulatorTest.cpp)
// share: the driver loaded from the build, with or without executing
// kernels, and one kernel of a PTX module, unloaded at the end.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_FAKECUDAKERNEL_H
#define INKLING_RUNTIME_UNITTESTS_FAKECUDAKERNEL_H

#include "inkling/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace inkling::cuda {

/// The fake driver of this build (INKLING_FAKE_CUDA_EXECUTE as `execute`
/// says), or null after a test failure.
inline std::unique_ptr<Driver> loadFakeDriver(bool execute) {
  setenv("INKLING_FAKE_CUDA_EXECUTE", execute ? "1" : "0", 1);
  auto driver = Driver::load(INKLING_FAKE_CUDA_LIBRARY);
  EXPECT_TRUE(driver) << driver.status().toString();
  return driver ? std::move(*driver) : nullptr;
}

/// Kernel `name` of the module `ptx` loaded into a fresh fake driver (with
/// `hostForm`, when given, attached: `attached` says how that went).
struct FakeKernel {
  FakeKernel(const std::string &ptx, const std::string &name, bool execute,
             const std::string *hostForm = nullptr)
      : driver(loadFakeDriver(execute)) {
    if (!driver)
      return;
    auto m = driver->loadModule(ptx);
    EXPECT_TRUE(m) << m.status().toString();
    if (!m)
      return;
    module = *m;
    if (hostForm)
      attached = driver->attachHostForm(module, *hostForm);
    auto f = driver->function(module, name);
    EXPECT_TRUE(f) << f.status().toString();
    function = f ? *f : nullptr;
  }
  ~FakeKernel() {
    if (module)
      (void)driver->unloadModule(module);
  }
  FakeKernel(const FakeKernel &) = delete;
  FakeKernel &operator=(const FakeKernel &) = delete;

  std::unique_ptr<Driver> driver;
  void *module = nullptr;
  void *function = nullptr;
  Status attached;
};

} // namespace inkling::cuda

#endif // INKLING_RUNTIME_UNITTESTS_FAKECUDAKERNEL_H
