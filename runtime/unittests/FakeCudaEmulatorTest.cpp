//===- FakeCudaEmulatorTest.cpp - The fake driver executes kernels --------===//
//
// Small kernels written by hand in PTX (what the driver parses and checks)
// and in their host form (what the emulator runs, inkling/Runtime/
// EmulationAbi.h): each checker of the emulator must fire on the bug it is
// for, and stay quiet on a correct kernel. The compiler's real kernels are
// executed end to end by inkling-run's lit tests (test/tools/inkling-run/
// gpu-execute.mlir) and the Python GPU layer's tests.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaKernel.h"
#include "inkling/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::cuda;

namespace {

/// `copy(x, y)`: two rank-1 bf16 descriptors (10 parameters); the PTX only
/// declares them (the fake driver reads its parameters and .maxntid).
std::string copyPtx() {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry copy(\n";
  for (int i = 0; i < 10; ++i) {
    bool pointer = i % 5 < 2;
    ptx += std::string("\t.param .u64 ") + (pointer ? ".ptr .align 2 " : "") +
           "copy_param_" + std::to_string(i) + (i < 9 ? ",\n" : "\n");
  }
  return ptx + ")\n.maxntid 64, 1, 1\n{\n\tret;\n}\n";
}

/// The host form of `copy`: thread i = ctaid.x * ntid.x + tid.x reads
/// x[i + `shift`] and writes it to y[`destination`] (an LLVM IR expression
/// of %i).
std::string copyHostForm(int shift, const std::string &destination) {
  return R"(
@__inkling_emu_args_copy = constant [8 x i64] [i64 1, i64 2, i64 0, i64 1, i64 2, i64 5, i64 1, i64 2]
declare i32 @__inkling_emu_sreg(i32)
declare ptr @__inkling_emu_access(ptr, i64, i64, i32)
define void @__inkling_emu_entry_copy(ptr %params) {
  %px = getelementptr ptr, ptr %params, i64 1
  %ax = load ptr, ptr %px
  %x = load ptr, ptr %ax
  %py = getelementptr ptr, ptr %params, i64 6
  %ay = load ptr, ptr %py
  %y = load ptr, ptr %ay
  %tid = call i32 @__inkling_emu_sreg(i32 0)
  %bid = call i32 @__inkling_emu_sreg(i32 6)
  %ntid = call i32 @__inkling_emu_sreg(i32 3)
  %base = mul i32 %bid, %ntid
  %i32 = add i32 %base, %tid
  %i = zext i32 %i32 to i64
  %j = add i64 %i, )" +
         std::to_string(shift) + R"(
  %src = getelementptr i16, ptr %x, i64 %j
  %s = call ptr @__inkling_emu_access(ptr %src, i64 2, i64 1, i32 0)
  %v = load i16, ptr %s
  %k = )" +
         destination +
         R"(
  %dst = getelementptr i16, ptr %y, i64 %k
  %d = call ptr @__inkling_emu_access(ptr %dst, i64 2, i64 2, i32 1)
  store i16 %v, ptr %d
  ret void
}
)";
}

/// The copy kernel in the fake driver, executed from `hostForm`.
struct CopyLaunch : FakeKernel {
  explicit CopyLaunch(const std::string &hostForm)
      : FakeKernel(copyPtx(), "copy", /*execute=*/true, &hostForm) {}

  /// Copies `n` elements with `blocks` x 32 threads (n = 32 * blocks);
  /// x has one element more allocated than its descriptor holds, so a
  /// read past the descriptor stays inside the allocation.
  Status run(int64_t blocks) {
    int64_t n = 32 * blocks;
    auto x = DeviceBuffer::allocate(*driver, (n + 8) * 2);
    auto y = DeviceBuffer::allocate(*driver, n * 2);
    if (!x || !y)
      return internalError("no device memory");
    input.resize(n);
    std::iota(input.begin(), input.end(), uint16_t(1));
    if (Status s = driver->copyToDevice(x->address(), input.data(), n * 2);
        !s.isOk())
      return s;
    if (Status s = driver->memset(y->address(), 0, n * 2); !s.isOk())
      return s;
    std::vector<uint64_t> words = {
        x->address(), x->address(), 0, uint64_t(n), 1,
        y->address(), y->address(), 0, uint64_t(n), 1};
    std::vector<void *> params;
    for (uint64_t &w : words)
      params.push_back(&w);
    params.push_back(nullptr);
    Status launched =
        driver->launch(function, {blocks, 1, 1}, {32, 1, 1}, params.data());
    output.assign(n, 0);
    if (Status s = driver->copyToHost(output.data(), y->address(), n * 2);
        !s.isOk())
      return s;
    return launched;
  }

  std::vector<uint16_t> input, output;
};

TEST(FakeCudaEmulator, RunsACorrectKernelInEveryOrder) {
  for (const char *order : {"shuffle", "reverse", "forward"}) {
    setenv("INKLING_FAKE_CUDA_ORDER", order, 1);
    CopyLaunch copy(copyHostForm(0, "add i64 %i, 0"));
    ASSERT_TRUE(copy.attached.isOk()) << copy.attached.toString();
    Status s = copy.run(3);
    EXPECT_TRUE(s.isOk()) << order << ": " << s.toString();
    EXPECT_EQ(copy.output, copy.input) << order;
  }
  unsetenv("INKLING_FAKE_CUDA_ORDER");
}

TEST(FakeCudaEmulator, MemcheckCatchesAReadOneRowPastTheDescriptor) {
  CopyLaunch copy(copyHostForm(1, "add i64 %i, 0"));
  ASSERT_TRUE(copy.attached.isOk()) << copy.attached.toString();
  Status s = copy.run(2);
  ASSERT_FALSE(s.isOk());
  const std::string &m = s.message();
  EXPECT_NE(m.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << m;
  // The last thread of the last block reads x[64] of a 64-element x.
  EXPECT_NE(m.find("memcheck: cuLaunchKernel copy: thread (31, 0, 0) of "
                   "block (1, 0, 0): 2-byte load at "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("is outside the extent its descriptor declares (argument "
                   "0 ["),
            std::string::npos)
      << m;
  // The other threads ran: their elements were copied.
  for (size_t i = 0; i + 1 < copy.output.size(); ++i)
    EXPECT_EQ(copy.output[i], copy.input[i + 1]) << i;
}

TEST(FakeCudaEmulator, RacecheckCatchesTwoThreadsWritingOneByte) {
  CopyLaunch copy(copyHostForm(0, "udiv i64 %i, 2"));
  ASSERT_TRUE(copy.attached.isOk()) << copy.attached.toString();
  Status s = copy.run(1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("racecheck: cuLaunchKernel copy: thread ("),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("-byte store at "), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(" of the launch wrote"), std::string::npos)
      << s.message();
}

TEST(FakeCudaEmulator, RacecheckOffLetsTheSameKernelThrough) {
  setenv("INKLING_FAKE_CUDA_RACECHECK", "0", 1);
  CopyLaunch copy(copyHostForm(0, "udiv i64 %i, 2"));
  ASSERT_TRUE(copy.attached.isOk()) << copy.attached.toString();
  EXPECT_TRUE(copy.run(1).isOk());
  unsetenv("INKLING_FAKE_CUDA_RACECHECK");
}

TEST(FakeCudaEmulator, UnsupportedOperationsAreALoadError) {
  std::string form = copyHostForm(0, "add i64 %i, 0") +
                     "@__inkling_emu_unsupported = constant [19 x i8] "
                     "c\"nvvm.shfl.sync.bfly\\00\"\n";
  // [19 x i8] is one short of the string: the IR does not parse, which is
  // a load error too; with the right length, the list is named.
  CopyLaunch bad(form);
  EXPECT_FALSE(bad.attached.isOk());
  std::string exact = copyHostForm(0, "add i64 %i, 0") +
                      "@__inkling_emu_unsupported = constant [20 x i8] "
                      "c\"nvvm.shfl.sync.bfly\\00\"\n";
  CopyLaunch copy(exact);
  ASSERT_FALSE(copy.attached.isOk());
  EXPECT_NE(copy.attached.message().find(
                "the kernel uses what the emulator cannot execute: "
                "nvvm.shfl.sync.bfly"),
            std::string::npos)
      << copy.attached.toString();
}

TEST(FakeCudaEmulator, AKernelWithoutAHostFormCannotBeExecuted) {
  setenv("INKLING_FAKE_CUDA_EXECUTE", "1", 1);
  auto driver = Driver::load(INKLING_FAKE_CUDA_LIBRARY);
  ASSERT_TRUE(driver) << driver.status().toString();
  auto module = (*driver)->loadModule(copyPtx());
  ASSERT_TRUE(module);
  auto function = (*driver)->function(*module, "copy");
  ASSERT_TRUE(function);
  auto x = DeviceBuffer::allocate(**driver, 64);
  ASSERT_TRUE(x);
  std::vector<uint64_t> words = {x->address(), x->address(), 0, 32, 1,
                                 x->address(), x->address(), 0, 32, 1};
  std::vector<void *> params;
  for (uint64_t &w : words)
    params.push_back(&w);
  params.push_back(nullptr);
  Status s = (*driver)->launch(*function, {1, 1, 1}, {32, 1, 1}, params.data());
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("no host form was attached"), std::string::npos)
      << s.toString();
  EXPECT_TRUE((*driver)->unloadModule(*module).isOk());
}

} // namespace
