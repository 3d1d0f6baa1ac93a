//===- CpuExecutor.cpp - The layer, JIT-compiled, on the host buffers -----===//

#include "Executor.h"

#include <cstring>

using namespace inkling;
using namespace inkling::run;

namespace {
class CpuExecutor final : public Executor {
public:
  explicit CpuExecutor(exec::LayerProgram &program) : program_(program) {}

  std::string description() const override { return "cpu (JIT)"; }
  Status addBuffer(void *, size_t) override { return Status::ok(); }
  Status invoke(const std::vector<exec::MemRefArg> &args) override {
    if (Status s = exec::validateHostCall(program_.signature(), args); !s)
      return s;
    program_.invoke(args);
    return Status::ok();
  }
  Status copyCacheBytes(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status download(void *, size_t) override { return Status::ok(); }
  Status upload(const void *, size_t) override { return Status::ok(); }

private:
  exec::LayerProgram &program_;
};
} // namespace

std::unique_ptr<Executor> run::createCpuExecutor(exec::LayerProgram &program) {
  return std::make_unique<CpuExecutor>(program);
}
