//===- FakeCudaFiber.cpp - One emulated thread's own stack ----------------===//

#include "FakeCudaFiber.h"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INKLING_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define INKLING_FIBER_ASAN 1
#endif
#ifdef INKLING_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace inkling::fakecuda {
namespace {

void startSwitch(void **fakeStackSave, const void *bottom, size_t size) {
#ifdef INKLING_FIBER_ASAN
  __sanitizer_start_switch_fiber(fakeStackSave, bottom, size);
#else
  (void)fakeStackSave, (void)bottom, (void)size;
#endif
}

void finishSwitch(void *fakeStack, const void **bottomOld, size_t *sizeOld) {
#ifdef INKLING_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fakeStack, bottomOld, sizeOld);
#else
  (void)fakeStack, (void)bottomOld, (void)sizeOld;
#endif
}

size_t pageBytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

/// The fiber makecontext is about to start (makecontext passes only ints).
thread_local Fiber *starting = nullptr;

} // namespace

Fiber::~Fiber() {
  if (mapping_)
    munmap(mapping_, pageBytes() + kStackBytes);
}

bool Fiber::reset(void (*body)(void *), void *argument) {
  size_t guard = pageBytes();
  if (!mapping_) {
    void *m = mmap(nullptr, guard + kStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      return false;
    mprotect(m, guard, PROT_NONE); // an overflow faults, not corrupts
    mapping_ = m;
  }
  body_ = body;
  argument_ = argument;
  finished_ = false;
  getcontext(&context_);
  context_.uc_stack.ss_sp = static_cast<char *>(mapping_) + guard;
  context_.uc_stack.ss_size = kStackBytes;
  context_.uc_link = nullptr;
  makecontext(&context_, &Fiber::trampoline, 0);
  return true;
}

void Fiber::trampoline() {
  Fiber *self = starting;
  finishSwitch(nullptr, &self->callerBottom_, &self->callerSize_);
  self->body_(self->argument_);
  self->finished_ = true;
  // The fiber is done: ASan may drop its fake stack (nullptr).
  startSwitch(nullptr, self->callerBottom_, self->callerSize_);
  swapcontext(&self->context_, &self->caller_);
  __builtin_unreachable(); // never resumed before the next reset
}

void Fiber::resume() {
  starting = this;
  void *callerFake = nullptr;
  startSwitch(&callerFake, static_cast<char *>(mapping_) + pageBytes(),
              kStackBytes);
  swapcontext(&caller_, &context_);
  finishSwitch(callerFake, nullptr, nullptr);
}

void Fiber::yield() {
  startSwitch(&fakeStack_, callerBottom_, callerSize_);
  swapcontext(&context_, &caller_);
  finishSwitch(fakeStack_, &callerBottom_, &callerSize_);
}

} // namespace inkling::fakecuda
