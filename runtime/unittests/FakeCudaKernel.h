//===- FakeCudaKernel.h - A kernel loaded into the fake driver --*- C++ -*-===//
//
// What the fake driver's tests (CudaTest.cpp, FakeCudaEmulatorTest.cpp,
// FakeCudaSyncTest.cpp) share: the driver loaded from the build, with or
// without executing kernels, one kernel of a PTX module, unloaded at the
// end, and the hand-written kernels `name(x, y)` over two rank-1 buffers
// that the emulator's tests launch.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_FAKECUDAKERNEL_H
#define INKLING_RUNTIME_UNITTESTS_FAKECUDAKERNEL_H

#include "inkling/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

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

/// The PTX of `name(x, y)`: two rank-1 bf16 descriptors (10 parameters),
/// at most 64 threads a block. It only declares them: the fake driver reads
/// a kernel's parameters and .maxntid, and the emulator runs its host form.
inline std::string xyKernelPtx(const std::string &name) {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry " +
                    name + "(\n";
  for (int i = 0; i < 10; ++i) {
    bool pointer = i % 5 < 2;
    ptx += std::string("\t.param .u64 ") + (pointer ? ".ptr .align 2 " : "") +
           name + "_param_" + std::to_string(i) + (i < 9 ? ",\n" : "\n");
  }
  return ptx + ")\n.maxntid 64, 1, 1\n{\n\tret;\n}\n";
}

/// The head of `name(x, y)`'s host form (inkling/Runtime/EmulationAbi.h):
/// the argument list, the declarations of sreg, access and `declarations`,
/// then the entry up to %x and %y (the descriptors' aligned pointers), %tid
/// (i32) and %i = ctaid.x * ntid.x + tid.x (i64); the caller writes the
/// rest of the body and its end.
inline std::string xyHostFormHead(const std::string &name,
                                  const std::string &declarations = "") {
  return "\n@__inkling_emu_args_" + name +
         " = constant [8 x i64] [i64 1, i64 2, i64 0, i64 1, i64 2, i64 5, "
         "i64 1, i64 2]\n"
         "declare i32 @__inkling_emu_sreg(i32)\n"
         "declare ptr @__inkling_emu_access(ptr, i64, i64, i32)\n" +
         declarations + "define void @__inkling_emu_entry_" + name +
         R"((ptr %params) {
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
)";
}

/// `name(x, y)` in a fresh fake driver, executed from `hostForm`, on
/// `threads` threads a block.
struct XYLaunch : FakeKernel {
  /// x holds `slack` elements more than its descriptor says, so that a read
  /// past the descriptor stays inside the allocation (memcheck's case).
  XYLaunch(const std::string &name, const std::string &hostForm,
           int64_t threads, int64_t slack = 0)
      : FakeKernel(xyKernelPtx(name), name, /*execute=*/true, &hostForm),
        threads(threads), slack(slack) {}

  /// Runs `blocks` blocks on x = 1, 2, ..., n and y zeroed (n = threads x
  /// blocks); `output` is y afterwards, even when the launch fails.
  Status run(int64_t blocks) {
    int64_t n = threads * blocks;
    auto x = DeviceBuffer::allocate(*driver, (n + slack) * 2);
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
    Status launched = driver->launch(function, {blocks, 1, 1}, {threads, 1, 1},
                                     params.data());
    output.assign(n, 0);
    if (Status s = driver->copyToHost(output.data(), y->address(), n * 2);
        !s.isOk())
      return s;
    return launched;
  }

  const int64_t threads, slack;
  std::vector<uint16_t> input, output;
};

} // namespace inkling::cuda

#endif // INKLING_RUNTIME_UNITTESTS_FAKECUDAKERNEL_H
