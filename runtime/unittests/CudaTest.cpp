//===- CudaTest.cpp - The CUDA driver module ------------------------------===//
//
// The no-driver path runs everywhere; the GPU tests skip with the driver's
// reason on machines without one (CI, the build machines).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/Cuda.h"
#include "ManifestFixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
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

//===----------------------------------------------------------------------===//
// The launcher against the fake driver (FakeCudaDriver.cpp): host memory,
// arguments checked the way the driver would, kernels not run.
//===----------------------------------------------------------------------===//

std::unique_ptr<Driver> fakeDriver() {
  auto driver = Driver::load(INKLING_FAKE_CUDA_LIBRARY);
  EXPECT_TRUE(driver) << driver.status().toString();
  return driver ? std::move(*driver) : nullptr;
}

TEST(CudaFakeDriver, CopiesStayInsideAllocations) {
  auto driver = fakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_EQ(driver->deviceName(), "Inkling fake CUDA device");
  EXPECT_EQ(driver->computeCapability(), 90);
  std::vector<uint16_t> host(64), back(64);
  std::iota(host.begin(), host.end(), uint16_t(3));
  auto buffer = DeviceBuffer::allocate(*driver, 128);
  ASSERT_TRUE(buffer);
  ASSERT_TRUE(driver->copyToDevice(buffer->address(), host.data(), 128).isOk());
  ASSERT_TRUE(driver->copyToHost(back.data(), buffer->address(), 128).isOk());
  EXPECT_EQ(back, host);
  // One byte past the end: the driver's error, as a status.
  Status s = driver->copyToDevice(buffer->address() + 1, host.data(), 128);
  EXPECT_EQ(s.code(), StatusCode::Internal);
  EXPECT_NE(s.message().find("cuMemcpyHtoD failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << s.message();
}

/// A kernel with a pointer and an integer parameter.
constexpr const char *kPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u64 k_param_1
)
{
	ret;
}
)";

TEST(CudaFakeDriver, LaunchesCheckPointerArguments) {
  auto driver = fakeDriver();
  ASSERT_TRUE(driver);
  auto module = driver->loadModule(kPtx);
  ASSERT_TRUE(module) << module.status().toString();
  auto function = driver->function(*module, "k");
  ASSERT_TRUE(function) << function.status().toString();
  EXPECT_FALSE(driver->function(*module, "missing"));
  auto buffer = DeviceBuffer::allocate(*driver, 64);
  ASSERT_TRUE(buffer);

  uint64_t pointer = buffer->address() + 8, count = 7;
  void *params[] = {&pointer, &count};
  EXPECT_TRUE(driver->launch(*function, {4, 1, 1}, {32, 1, 1}, params).isOk());
  // A host address (not device memory) in the pointer parameter.
  std::vector<uint8_t> host(64);
  pointer = reinterpret_cast<uintptr_t>(host.data());
  EXPECT_FALSE(driver->launch(*function, {4, 1, 1}, {32, 1, 1}, params));
  pointer = buffer->address();
  EXPECT_FALSE(driver->launch(*function, {4, 1, 1}, {2048, 1, 1}, params));
  EXPECT_TRUE(driver->unloadModule(*module).isOk());

  // PTX for a newer chip than the device's.
  std::string newer = kPtx;
  newer.replace(newer.find("sm_90"), 5, "sm_100");
  auto rejected = driver->loadModule(newer);
  ASSERT_FALSE(rejected);
  EXPECT_NE(rejected.status().message().find("CUDA_ERROR_NO_BINARY_FOR_GPU"),
            std::string::npos);
}

/// The fixture manifest's kernel: the insert ABI (cache, slot mapping, x
/// descriptors: 19 parameters, the 6 pointers marked `.ptr`).
std::string insertPtx() {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry layer_k1_insert_k(\n";
  for (int i = 0; i < 19; ++i) {
    bool pointer = i == 0 || i == 1 || i == 5 || i == 6 || i == 10 || i == 11;
    ptx += std::string("\t.param .u64 ") + (pointer ? ".ptr .align 1 " : "") +
           "layer_k1_insert_k_param_" + std::to_string(i) +
           (i < 18 ? ",\n" : "\n");
  }
  return ptx + ")\n{\n\tret;\n}\n";
}

TEST(CudaFakeDriver, RunsAHostFunctionOfABundleInMemory) {
  auto driver = fakeDriver();
  ASSERT_TRUE(driver);
  std::map<std::string, std::string> objects{
      {"layer_k1_insert_k.ptx", insertPtx()}};
  auto bundle = KernelBundle::load(*driver, fixtures::manifest(), objects);
  ASSERT_TRUE(bundle) << bundle.status().toString();

  const int64_t tokens = 3;
  auto cache = DeviceBuffer::allocate(*driver, 1 << 16);
  auto slots = DeviceBuffer::allocate(*driver, tokens * 8);
  auto x = DeviceBuffer::allocate(*driver, tokens * 1024 * 2);
  ASSERT_TRUE(cache && slots && x);
  // Host arguments 0 (cache), 4 (slots) and 5 (x); 1-3 are not used.
  std::vector<MemRefArg> args(6);
  args[0] = {cache->address(), {1 << 16}, {}};
  args[4] = {slots->address(), {tokens}, {}};
  args[5] = {x->address(), {tokens, 8, 128}, {}};
  EXPECT_TRUE((*bundle)->run("layer", args).isOk());

  // x in host memory: the launch is refused, and the status says so.
  std::vector<uint16_t> hostX(tokens * 1024);
  args[5].address = reinterpret_cast<uintptr_t>(hostX.data());
  Status s = (*bundle)->run("layer", args);
  EXPECT_NE(s.message().find("cuLaunchKernel failed"), std::string::npos)
      << s.toString();

  // An object the manifest names but memory does not hold.
  auto missing = KernelBundle::load(*driver, fixtures::manifest(), {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().message(),
            "kernel bundle: no object layer_k1_insert_k.ptx");
}

} // namespace
