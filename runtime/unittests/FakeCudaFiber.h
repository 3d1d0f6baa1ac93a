//===- FakeCudaFiber.h - One emulated thread's own stack --------*- C++ -*-===//
//
// A fiber: a function run on its own stack, which can suspend itself
// (`yield`) and be resumed by whoever started it (`resume`). The emulator
// runs each thread of a block that synchronizes (warp shuffles, barriers) as
// one, switching at every synchronization point (FakeCudaEmulator.cpp).
// ucontext's makecontext/swapcontext on mmap-ed stacks with a guard page;
// every switch is announced to AddressSanitizer, so the ASan build keeps
// tracking the stacks.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_UNITTESTS_FAKECUDAFIBER_H
#define INKLING_RUNTIME_UNITTESTS_FAKECUDAFIBER_H

#include <cstddef>
#include <ucontext.h>

namespace inkling::fakecuda {

class Fiber {
public:
  Fiber() = default;
  ~Fiber();
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  /// Makes the next `resume` start `body(argument)` from the beginning (the
  /// stack is kept). Only while the fiber is not suspended inside `body`.
  /// False when no stack could be mapped.
  bool reset(void (*body)(void *), void *argument);
  /// Runs the fiber until it yields or `body` returns.
  void resume();
  /// From inside `body`: suspends it; the `resume` that ran it returns.
  void yield();
  /// Whether `body` has returned.
  bool finished() const { return finished_; }

  /// The bytes of each fiber's stack.
  static constexpr size_t kStackBytes = 256 * 1024;

private:
  static void trampoline();

  ucontext_t context_{}, caller_{};
  void *mapping_ = nullptr; ///< Guard page, then the stack.
  void (*body_)(void *) = nullptr;
  void *argument_ = nullptr;
  bool finished_ = true;
  // AddressSanitizer's view of the switches.
  void *fakeStack_ = nullptr;
  const void *callerBottom_ = nullptr;
  size_t callerSize_ = 0;
};

} // namespace inkling::fakecuda

#endif // INKLING_RUNTIME_UNITTESTS_FAKECUDAFIBER_H
