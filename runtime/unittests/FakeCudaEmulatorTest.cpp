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
#include <string>
#include <vector>

using namespace inkling;
using namespace inkling::cuda;

namespace {

/// The host form of `copy`: thread i = ctaid.x * ntid.x + tid.x reads
/// x[i + `shift`] and writes it to y[`destination`] (an LLVM IR expression
/// of %i).
std::string copyHostForm(int shift, const std::string &destination) {
  return xyHostFormHead("copy") + R"(  %j = add i64 %i, )" +
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

/// The copy kernel in the fake driver, executed from `hostForm`, on 32
/// threads a block; x has 8 elements more allocated than its descriptor
/// holds, so that a read past the descriptor stays inside the allocation.
struct CopyLaunch : XYLaunch {
  explicit CopyLaunch(const std::string &hostForm)
      : XYLaunch("copy", hostForm, /*threads=*/32, /*slack=*/8) {}
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
  auto module = (*driver)->loadModule(xyKernelPtx("copy"));
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
