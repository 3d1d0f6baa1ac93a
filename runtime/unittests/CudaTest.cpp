//===- CudaTest.cpp - The CUDA driver module ------------------------------===//
//
// The no-driver path runs everywhere; the GPU tests skip with the driver's
// reason on machines without one (CI, the build machines).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <vector>

using namespace inkling;
using namespace inkling::cuda;

namespace {

TEST(CudaDriver, MissingLibraryIsUnavailableWithAClearMessage) {
  auto driver = Driver::load("libinkling-no-such-cuda-driver.so.1");
  ASSERT_FALSE(driver);
  EXPECT_EQ(driver.status().code(), StatusCode::Unavailable);
  EXPECT_EQ(driver.status().message().rfind(
                "no CUDA driver: libinkling-no-such-cuda-driver.so.1 could "
                "not be loaded (",
                0),
            0u)
      << driver.status().message();
}

TEST(CudaDriver, ProcessDriverIsUsableOrUnavailable) {
  auto driver = Driver::get();
  if (!driver) {
    EXPECT_EQ(driver.status().code(), StatusCode::Unavailable);
    EXPECT_EQ(driver.status().message().rfind("no CUDA ", 0), 0u)
        << driver.status().message();
    // The failure is remembered: the same answer again.
    auto again = Driver::get();
    ASSERT_FALSE(again);
    EXPECT_EQ(again.status().message(), driver.status().message());
    return;
  }
  EXPECT_FALSE((*driver)->deviceName().empty());
  EXPECT_GT((*driver)->computeCapability(), 0);
}

/// The driver, or a skip with the reason there is none.
#define INKLING_REQUIRE_GPU(driver)                                            \
  auto driver##OrStatus = Driver::get();                                       \
  if (!driver##OrStatus)                                                       \
    GTEST_SKIP() << driver##OrStatus.status().message();                       \
  Driver &driver = **driver##OrStatus

TEST(CudaGpu, CopiesRoundTrip) {
  INKLING_REQUIRE_GPU(driver);
  std::vector<uint16_t> host(4096);
  std::iota(host.begin(), host.end(), uint16_t(7));
  size_t bytes = host.size() * sizeof(uint16_t);
  auto a = DeviceBuffer::allocate(driver, bytes);
  auto b = DeviceBuffer::allocate(driver, bytes);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(driver.copyToDevice(a->address(), host.data(), bytes).isOk());
  ASSERT_TRUE(driver.copyOnDevice(b->address(), a->address(), bytes).isOk());
  std::vector<uint16_t> back(host.size());
  ASSERT_TRUE(driver.copyToHost(back.data(), b->address(), bytes).isOk());
  EXPECT_EQ(back, host);
}

TEST(CudaGpu, EventsTime) {
  INKLING_REQUIRE_GPU(driver);
  auto start = driver.createEvent();
  auto end = driver.createEvent();
  ASSERT_TRUE(start && end);
  ASSERT_TRUE(driver.record(*start).isOk());
  ASSERT_TRUE(driver.record(*end).isOk());
  auto ms = driver.elapsedMs(*start, *end);
  ASSERT_TRUE(ms) << ms.status().toString();
  EXPECT_GE(*ms, 0.0f);
  EXPECT_TRUE(driver.destroyEvent(*start).isOk());
  EXPECT_TRUE(driver.destroyEvent(*end).isOk());
}

TEST(CudaGpu, BadImageIsAnError) {
  INKLING_REQUIRE_GPU(driver);
  auto module = driver.loadModule("this is not PTX");
  ASSERT_FALSE(module);
  EXPECT_NE(module.status().message().find("cuModuleLoadData"),
            std::string::npos);
}

/// Loads a bundle named by INKLING_KERNEL_BUNDLE (the build writes the
/// example's to build/kernels/decoder_layer/isa).
TEST(CudaGpu, LoadsTheKernelBundle) {
  INKLING_REQUIRE_GPU(driver);
  const char *dir = std::getenv("INKLING_KERNEL_BUNDLE");
  if (!dir)
    GTEST_SKIP() << "INKLING_KERNEL_BUNDLE is not set";
  auto bundle = KernelBundle::load(driver, dir);
  ASSERT_TRUE(bundle) << bundle.status().toString();
  EXPECT_FALSE((*bundle)->manifest().kernels.empty());
}

} // namespace
