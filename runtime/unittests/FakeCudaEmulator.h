//===- FakeCudaEmulator.h - Executing kernels in the fake driver -*- C++
//-*-===//
//
// The fake CUDA driver's executor: compiles a kernel's host form (its LLVM IR
// after the NVVM lowering, instrumented as inkling/Runtime/EmulationAbi.h
// says) for the host with LLVM's ORC JIT, and runs a launch over its grid,
// one emulated thread at a time, in an order that exposes any dependency
// between threads (a block's threads in lock step at its warp shuffles and
// barriers), with every global and workgroup access checked (memcheck) and
// every byte's writer and readers tracked (racecheck). docs/gpu.md describes
// what it proves and what it cannot.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_FAKECUDAEMULATOR_H
#define INKLING_RUNTIME_UNITTESTS_FAKECUDAEMULATOR_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace inkling::fakecuda {

/// One kernel of a loaded host form.
struct HostKernel {
  std::string name;
  /// `void entry(void **params)`.
  void (*entry)(void **) = nullptr;
  /// Per kernel argument (memref descriptor): first parameter, rank,
  /// element bytes.
  struct Argument {
    int64_t firstParam, rank, elementBytes;
  };
  std::vector<Argument> arguments;
  /// Whether it calls warp shuffles or barriers (then each thread of a
  /// block runs as a fiber).
  bool synchronizes = false;
};

/// A host form compiled for the host; owns its JIT-ed code.
class HostModule {
public:
  virtual ~HostModule() = default;
  /// The kernel `name`, or null.
  virtual const HostKernel *kernel(const std::string &name) const = 0;
};

/// Compiles the host form `ir` (LLVM IR text) for the kernels `entries`.
/// Fails, with the reason in `error`, when the emulator was built without
/// LLVM, the IR does not parse, it lists operations the emulator cannot
/// execute, or an entry or its argument table is missing.
std::unique_ptr<HostModule>
loadHostForm(const std::string &ir, const std::vector<std::string> &entries,
             std::string &error);

/// Whether this build can execute host forms (built with LLVM).
bool canExecute();

/// How the threads of a launch are ordered (INKLING_FAKE_CUDA_ORDER).
enum class Order { Shuffled, Reversed, Forward };

struct LaunchRequest {
  const HostKernel *kernel = nullptr;
  std::array<unsigned, 3> grid = {1, 1, 1};
  std::array<unsigned, 3> block = {1, 1, 1};
  void **params = nullptr;
  /// The live allocations: address -> bytes.
  const std::map<uint64_t, size_t> *allocations = nullptr;
  Order order = Order::Shuffled;
  uint64_t seed = 1;
  bool racecheck = true;
};

/// Runs every thread of the launch. Returns "" when every access was valid
/// and no two threads met on a byte (a write and another thread's read or
/// write), else a description of the first failure: the kernel, the block
/// and thread, the access and its address, the argument extent or the
/// allocation it missed, and how many more failures followed.
std::string execute(const LaunchRequest &request);

} // namespace inkling::fakecuda

#endif // INKLING_RUNTIME_UNITTESTS_FAKECUDAEMULATOR_H
