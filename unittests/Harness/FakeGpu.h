//===- FakeGpu.h - A layer's kernels on the executing fake driver -*- C++
//-*-===//
//
// The GPU half of the bit-exact tests: the test's layer compiled with
// `inkling-lower-to-nvvm` (compileKernelBundle, in memory), loaded by the
// runtime's launcher (cuda::KernelBundle) into the fake CUDA driver of this
// build, which executes each kernel's host form with memcheck and racecheck
// (docs/gpu.md, "Executing the kernels without a GPU"), and called with the
// same memref descriptors as the CPU JIT call: each buffer mirrored into
// device memory before the launches and copied back after.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_HARNESS_FAKEGPU_H
#define INKLING_UNITTESTS_HARNESS_FAKEGPU_H

#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include <memory>
#include <string>
#include <vector>

namespace inkling::harness {

class FakeGpuLayer {
public:
  ~FakeGpuLayer();

  /// `function` of `source` compiled for the GPU (fusion `fusion`) and
  /// loaded into a fresh executing fake driver; null with `error` set when
  /// any step fails.
  static std::unique_ptr<FakeGpuLayer> create(const std::string &source,
                                              const std::string &function,
                                              sconv::FusionStrategy fusion,
                                              std::string &error);

  /// Runs the host function on `descriptors` (pointers to the memref
  /// descriptors of its arguments, in order, as the JIT call takes them):
  /// "" or the launch's error (a mismatch of the results is the caller's
  /// compare).
  std::string call(const std::vector<void *> &descriptors);

  /// The kernel names of the bundle, and each one's block size (x*y*z).
  std::vector<std::pair<std::string, int64_t>> kernels() const;

private:
  FakeGpuLayer() = default;
  struct State;
  std::unique_ptr<State> state;
};

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_FAKEGPU_H
