//===- CudaTest.cpp - The CUDA driver module ------------------------------===//
//
// The no-driver path runs everywhere; the GPU tests skip with the driver's
// reason on machines without one (CI, the build machines).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/Cuda.h"
#include "FakeCudaKernel.h"
#include "ManifestFixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
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
/// The process's driver, or the one INKLING_TEST_CUDA_DRIVER names (ctest
/// runs these tests once more on the executing fake driver).
StatusOr<Driver *> testDriver() {
  const char *library = std::getenv("INKLING_TEST_CUDA_DRIVER");
  if (!library)
    return Driver::get();
  static std::unique_ptr<Driver> loaded;
  if (!loaded) {
    auto d = Driver::load(library);
    if (!d)
      return d.status();
    loaded = std::move(*d);
  }
  return loaded.get();
}

#define INKLING_REQUIRE_GPU(driver)                                            \
  auto driver##OrStatus = testDriver();                                        \
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

/// The bundle the build writes (bench/gpu/CMakeLists.txt: the decoder
/// layer's PTX, build/kernels/decoder_layer/isa); INKLING_KERNEL_BUNDLE
/// names another.
std::string builtBundle() {
  if (const char *dir = std::getenv("INKLING_KERNEL_BUNDLE"))
    return dir;
#ifdef INKLING_BUILT_KERNEL_BUNDLE
  return INKLING_BUILT_KERNEL_BUNDLE;
#else
  return "";
#endif
}

/// The device's driver JIT-compiles every kernel of the built bundle and
/// finds every entry.
TEST(CudaGpu, LoadsTheKernelBundle) {
  INKLING_REQUIRE_GPU(driver);
  std::string dir = builtBundle();
  ASSERT_FALSE(dir.empty()) << "the runtime was built without the kernels";
  auto bundle = KernelBundle::load(driver, dir);
  ASSERT_TRUE(bundle) << bundle.status().toString();
  EXPECT_FALSE((*bundle)->manifest().kernels.empty());
}

/// The same bundle through the fake driver: its PTX parses (every entry,
/// its parameters and accesses), so what the launcher tests check holds for
/// real kernels, not only for the hand-written ones below.
TEST(CudaFakeDriver, LoadsTheBuiltKernelBundle) {
  std::string dir = builtBundle();
  if (dir.empty())
    GTEST_SKIP() << "the runtime was built alone, without the kernels";
  // The kernel is launched without its host form: checks only.
  setenv("INKLING_FAKE_CUDA_EXECUTE", "0", 1);
  auto driver = Driver::load(INKLING_FAKE_CUDA_LIBRARY);
  ASSERT_TRUE(driver) << driver.status().toString();
  auto bundle = KernelBundle::load(**driver, dir);
  ASSERT_TRUE(bundle) << bundle.status().toString();
  const KernelManifest &manifest = (*bundle)->manifest();
  EXPECT_GE(manifest.kernels.size(), 2u);

  // The access walk works on real PTX: the K insert kernel, launched
  // directly (past the launcher's own check) with x 2-byte aligned, is
  // refused for its 16-byte loads of x; 16-byte aligned, it runs.
  const KernelSpec *insert = manifest.findKernel("decoder_layer_k1_insert_k");
  ASSERT_TRUE(insert);
  std::ifstream file(dir + "/" + insert->file);
  std::string ptx((std::istreambuf_iterator<char>(file)),
                  std::istreambuf_iterator<char>());
  auto module = (*driver)->loadModule(ptx);
  ASSERT_TRUE(module) << module.status().toString();
  auto function = (*driver)->function(*module, insert->entry);
  ASSERT_TRUE(function);
  const int64_t tokens = 2, pageBytes = 131072;
  auto cache = DeviceBuffer::allocate(**driver, 4 * pageBytes);
  auto slots = DeviceBuffer::allocate(**driver, tokens * 8);
  auto qsl = DeviceBuffer::allocate(**driver, 2 * 4); // padding: qsl[B]
  auto x = DeviceBuffer::allocate(**driver, tokens * 1024 * 2 + 16);
  ASSERT_TRUE(cache && slots && qsl && x);
  KernelSpec lax = *insert;
  for (KernelArgSpec &arg : lax.args)
    arg.align = arg.elementBytes;
  auto launch = [&](uint64_t xAddress) -> Status {
    std::vector<MemRefArg> args = {{cache->address(), {4 * pageBytes}, {}},
                                   {slots->address(), {tokens}, {}},
                                   {qsl->address(), {2}, {}},
                                   {xAddress, {tokens, 8, 128}, {}}};
    auto params = packKernelParams(lax, args);
    if (!params)
      return params.status();
    std::vector<void *> pointers;
    for (uint64_t &slot : *params)
      pointers.push_back(&slot);
    pointers.push_back(nullptr);
    return (*driver)->launch(*function, lax.gridFor(tokens), lax.block,
                             pointers.data());
  };
  EXPECT_TRUE(launch(x->address()).isOk());
  Status misaligned = launch(x->address() + 2);
  EXPECT_NE(misaligned.message().find("is not 16-byte aligned"),
            std::string::npos)
      << misaligned.toString();
  EXPECT_NE(misaligned.message().find("CUDA_ERROR_MISALIGNED_ADDRESS"),
            std::string::npos)
      << misaligned.toString();
  EXPECT_TRUE((*driver)->unloadModule(*module).isOk());
}

//===----------------------------------------------------------------------===//
// The launcher against the fake driver (FakeCudaDriver.cpp): host memory,
// arguments checked the way the driver would. The hand-written PTX below has
// no host form, so these tests check launches only (INKLING_FAKE_CUDA_EXECUTE
// =0); FakeCudaEmulatorTest.cpp runs kernels.
//===----------------------------------------------------------------------===//

std::unique_ptr<Driver> fakeDriver() { return loadFakeDriver(false); }

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
  void *params[] = {&pointer, &count, nullptr};
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

//===----------------------------------------------------------------------===//
// What the fake driver enforces, each with a launch it must refuse
//===----------------------------------------------------------------------===//

/// A module of one kernel `k` with `params` (the text between the
/// parentheses), `directives` (before the body) and `body`.
std::string kernelPtx(const std::string &params,
                      const std::string &directives = "",
                      const std::string &body = "") {
  return ".version 8.0\n.target sm_90\n.address_size 64\n"
         ".visible .entry k(\n" +
         params + "\n)\n" + directives + "\n{\n" + body + "\tret;\n}\n";
}

/// Kernel `k` of `ptx` in the fake driver, checked but not executed.
struct FakeLaunch : FakeKernel {
  explicit FakeLaunch(const std::string &ptx)
      : FakeKernel(ptx, "k", /*execute=*/false) {}
  Status launch(void **params, std::array<int64_t, 3> block = {32, 1, 1}) {
    return driver->launch(function, {2, 1, 1}, block, params);
  }
};

void expectRefused(const Status &s, const std::string &needle) {
  ASSERT_FALSE(s.isOk()) << "the fake driver accepted a launch that should "
                         << "fail with " << needle;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

TEST(CudaFakeDriver, ChecksTheParameterCount) {
  FakeLaunch k(kernelPtx("\t.param .u64 k_param_0,\n\t.param .u64 k_param_1"));
  ASSERT_TRUE(k.function);
  uint64_t a = 1, b = 2, c = 3;
  void *exact[] = {&a, &b, nullptr};
  EXPECT_TRUE(k.launch(exact).isOk());
  void *fewer[] = {&a, nullptr};
  expectRefused(k.launch(fewer), "1 parameters passed, the kernel has 2");
  void *more[] = {&a, &b, &c, nullptr};
  expectRefused(k.launch(more), "more parameters passed than the 2");
}

TEST(CudaFakeDriver, ChecksParameterSizes) {
  // A by-value struct of 32 bytes does not fit the launcher's 8-byte slot.
  FakeLaunch k(kernelPtx(
      "\t.param .u64 k_param_0,\n\t.param .align 16 .b8 k_param_1[32]"));
  ASSERT_TRUE(k.function);
  uint64_t a = 1, b = 2;
  void *params[] = {&a, &b, nullptr};
  expectRefused(k.launch(params), "more than the launcher's 8-byte slot");
}

TEST(CudaFakeDriver, ChecksMaxntidAndReqntid) {
  FakeLaunch max(kernelPtx("\t.param .u64 k_param_0", ".maxntid 64, 1, 1"));
  ASSERT_TRUE(max.function);
  uint64_t a = 1;
  void *params[] = {&a, nullptr};
  EXPECT_TRUE(max.launch(params, {64, 1, 1}).isOk());
  EXPECT_TRUE(max.launch(params, {16, 2, 1}).isOk());
  expectRefused(max.launch(params, {128, 1, 1}),
                "a block of 128 threads, the kernel's .maxntid allows 64");
  expectRefused(max.launch(params, {32, 2, 2}), ".maxntid allows 64");
  FakeLaunch req(kernelPtx("\t.param .u64 k_param_0", ".reqntid 32, 1, 1"));
  ASSERT_TRUE(req.function);
  EXPECT_TRUE(req.launch(params, {32, 1, 1}).isOk());
  expectRefused(req.launch(params, {16, 1, 1}), ".reqntid");
}

/// A 16-byte vector load through parameter 0 (ld.param -> cvta -> add ->
/// ld.global.v4), the shape of the kernels' row accesses.
constexpr const char *kVectorBody =
    "\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<4>;\n"
    "\tld.param.b64 %rd1, [k_param_0];\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n"
    "$L__BB0_1:\n"
    "\tadd.s64 %rd3, %rd2, 32;\n"
    "\tld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd3+16];\n";

TEST(CudaFakeDriver, ChecksTheAlignmentOfVectorAccessedArguments) {
  FakeLaunch k(kernelPtx("\t.param .u64 .ptr .align 1 k_param_0,\n"
                         "\t.param .u64 .ptr .align 1 k_param_1",
                         "", kVectorBody));
  ASSERT_TRUE(k.function);
  auto memory = DeviceBuffer::allocate(*k.driver, 64);
  ASSERT_TRUE(memory);
  uint64_t p0 = memory->address(), p1 = memory->address() + 2;
  void *params[] = {&p0, &p1, nullptr};
  // Parameter 1 is not accessed 16 bytes wide: 2-byte aligned is enough.
  EXPECT_TRUE(k.launch(params).isOk());
  p0 = memory->address() + 8;
  Status s = k.launch(params);
  expectRefused(s, "parameter 0 (.ptr)");
  EXPECT_NE(s.message().find("is not 16-byte aligned"), std::string::npos);
  EXPECT_NE(s.message().find("CUDA_ERROR_MISALIGNED_ADDRESS"),
            std::string::npos)
      << s.message();
  // A declared `.align` binds as well.
  FakeLaunch declared(kernelPtx("\t.param .u64 .ptr .align 8 k_param_0"));
  ASSERT_TRUE(declared.function);
  auto other = DeviceBuffer::allocate(*declared.driver, 64);
  ASSERT_TRUE(other);
  uint64_t q = other->address() + 4;
  void *one[] = {&q, nullptr};
  expectRefused(declared.launch(one), "is not 8-byte aligned");
}

TEST(CudaFakeDriver, ChecksEachDescriptorsExtent) {
  // memref<?xbf16, strided<[?], offset: ?>>: allocated ptr (.align 2: the
  // element size), aligned ptr, offset, size, stride.
  FakeLaunch k(kernelPtx("\t.param .u64 .ptr .align 2 k_param_0,\n"
                         "\t.param .u64 .ptr .align 1 k_param_1,\n"
                         "\t.param .u64 k_param_2,\n"
                         "\t.param .u64 k_param_3,\n"
                         "\t.param .u64 k_param_4"));
  ASSERT_TRUE(k.function);
  auto memory = DeviceBuffer::allocate(*k.driver, 64); // 32 elements
  ASSERT_TRUE(memory);
  uint64_t base = memory->address(), offset = 0, size = 32, stride = 1;
  void *params[] = {&base, &base, &offset, &size, &stride, nullptr};
  EXPECT_TRUE(k.launch(params).isOk());
  size = 33; // one element past the end
  expectRefused(k.launch(params), "not inside one allocation");
  size = 32;
  offset = 1;
  expectRefused(k.launch(params), "not inside one allocation");
  offset = 0;
  size = 17;
  stride = 2; // elements 0, 2, ..., 32
  expectRefused(k.launch(params), "elements 0..32 of 2 bytes");
  size = 16;
  EXPECT_TRUE(k.launch(params).isOk());
  size = 0; // nothing reached
  EXPECT_TRUE(k.launch(params).isOk());
}

/// The fixture manifest's kernel: the insert ABI (cache, slot mapping, x
/// descriptors: 19 parameters, the 6 pointers marked `.ptr`; each allocated
/// pointer declares its element size, as inkling-lower-to-nvvm writes them),
/// with a 16-byte load through x's aligned pointer.
std::string insertPtx() {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry layer_k1_insert_k(\n";
  for (int i = 0; i < 19; ++i) {
    const char *pointer = i == 0                        ? ".ptr .align 1 "
                          : i == 5                      ? ".ptr .align 8 "
                          : i == 10                     ? ".ptr .align 2 "
                          : i == 1 || i == 6 || i == 11 ? ".ptr .align 1 "
                                                        : "";
    ptx += std::string("\t.param .u64 ") + pointer +
           "layer_k1_insert_k_param_" + std::to_string(i) +
           (i < 18 ? ",\n" : "\n");
  }
  return ptx + ")\n.maxntid 16, 1, 1\n{\n"
               "\tld.param.b64 %rd1, [layer_k1_insert_k_param_11];\n"
               "\tcvta.to.global.u64 %rd2, %rd1;\n"
               "\tld.global.nc.v4.b32 {%r1, %r2, %r3, %r4}, [%rd2];\n"
               "\tret;\n}\n";
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

  // x one token longer than its allocation: the descriptor's extent.
  args[5].sizes[0] = tokens + 1;
  Status past = (*bundle)->run("layer", args);
  EXPECT_NE(past.message().find("cuLaunchKernel failed"), std::string::npos)
      << past.toString();
  EXPECT_NE(past.message().find("not inside one allocation"), std::string::npos)
      << past.toString();
  args[5].sizes[0] = tokens;
  // x 2-byte aligned only: the launcher refuses it (the manifest's
  // "align": 16, from the kernel's 16-byte accesses) before the driver.
  args[5].address = x->address() + 2;
  Status misaligned = (*bundle)->run("layer", args);
  EXPECT_NE(misaligned.message().find("is not 16-byte aligned"),
            std::string::npos)
      << misaligned.toString();

  // x in host memory: the launch is refused, and the status says so.
  std::vector<uint16_t> hostX(tokens * 1024);
  args[5].address = reinterpret_cast<uintptr_t>(hostX.data());
  Status s = (*bundle)->run("layer", args);
  EXPECT_NE(s.message().find("cuLaunchKernel failed"), std::string::npos)
      << s.toString();
  EXPECT_NE(s.message().find("points into no allocation"), std::string::npos)
      << s.toString();

  // An object the manifest names but memory does not hold.
  auto missing = KernelBundle::load(*driver, fixtures::manifest(), {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().message(),
            "kernel bundle: no object layer_k1_insert_k.ptx");
}

TEST(CudaFakeDriver, AllocatesAHostsScratchBuffersOnTheDevice) {
  auto driver = fakeDriver();
  ASSERT_TRUE(driver);
  std::map<std::string, std::string> objects{
      {"layer_k1_insert_k.ptx", insertPtx()}};
  // x is the host's scratch buffer 0 (host argument -1), [T, 8, 128] with T
  // dim 0 of host argument 4 (the slot mapping).
  auto bundle =
      KernelBundle::load(*driver, fixtures::manifestWithScratch(4), objects);
  ASSERT_TRUE(bundle) << bundle.status().toString();
  auto cache = DeviceBuffer::allocate(*driver, 1 << 16);
  auto slots = DeviceBuffer::allocate(*driver, 64 * 8);
  ASSERT_TRUE(cache && slots);
  std::vector<MemRefArg> args(5);
  args[0] = {cache->address(), {1 << 16}, {}};
  auto bind = [&](int64_t tokens) {
    args[4] = {slots->address(), {tokens}, {}};
    auto launches = (*bundle)->bindLaunches("layer", args);
    EXPECT_TRUE(launches) << launches.status().toString();
    EXPECT_EQ((*launches)[0][2].sizes, (std::vector<int64_t>{tokens, 8, 128}));
    // The launch reads x through its descriptor: memcheck would refuse a
    // buffer smaller than T rows.
    EXPECT_TRUE((*bundle)->run("layer", args).isOk());
    return (*launches)[0][2].address;
  };
  uint64_t three = bind(3);
  EXPECT_NE(three, 0u);
  EXPECT_EQ(three % 256, 0u);
  // A longer step grows it; a shorter one keeps the grown buffer.
  EXPECT_EQ((*bundle)->scratchBytes(), 3u * 8 * 128 * 2);
  uint64_t sixty = bind(60);
  EXPECT_NE(sixty, 0u);
  EXPECT_EQ(bind(2), sixty);
  EXPECT_EQ((*bundle)->scratchBytes(), 60u * 8 * 128 * 2);
  // Released: the next call allocates again, at its own size.
  EXPECT_TRUE((*bundle)->releaseScratch().isOk());
  EXPECT_EQ((*bundle)->scratchBytes(), 0u);
  bind(5);
  EXPECT_EQ((*bundle)->scratchBytes(), 5u * 8 * 128 * 2);
  // No token: no buffer (and no launch).
  args[4] = {slots->address(), {0}, {}};
  EXPECT_TRUE((*bundle)->run("layer", args).isOk());

  // A call without the argument the buffer takes its size from.
  args.resize(4);
  Status s = (*bundle)->run("layer", args);
  EXPECT_NE(s.message().find("host function layer: scratch buffer "
                             "memref<?x8x128xbf16> takes its dim 0 from dim 0 "
                             "of host argument 4, which the call lacks"),
            std::string::npos)
      << s.toString();
}

} // namespace
