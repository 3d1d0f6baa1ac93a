//===- FakeGpu.cpp - A layer's kernels on the executing fake driver -------===//

#include "Harness/FakeGpu.h"

#include "Harness/JitHarness.h"
#include "inkling/KernelBundle.h"
#include "inkling/Runtime/Cuda.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace inkling;
using namespace inkling::harness;

namespace {

/// A memref descriptor's words: allocated, aligned, offset, sizes, strides.
struct Descriptor {
  const int64_t *words;
  int64_t rank;
  char *aligned() const { return reinterpret_cast<char *>(words[1]); }
  int64_t offset() const { return words[2]; }
  int64_t size(int64_t d) const { return words[3 + d]; }
  int64_t stride(int64_t d) const { return words[3 + rank + d]; }
};

} // namespace

struct FakeGpuLayer::State {
  std::unique_ptr<cuda::Driver> driver;
  std::unique_ptr<cuda::KernelBundle> bundle;
  std::string function;
  /// Per argument: rank and element bytes.
  std::vector<std::pair<int64_t, int64_t>> arguments;
};

FakeGpuLayer::~FakeGpuLayer() {
  if (state)
    state->bundle.reset(); // before the driver
}

std::unique_ptr<FakeGpuLayer> FakeGpuLayer::create(const std::string &source,
                                                   const std::string &function,
                                                   sconv::FusionStrategy fusion,
                                                   std::string &error) {
  mlir::MLIRContext *context = harnessContext();
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, context);
  if (!module) {
    error = "does not parse: " + diagnostics;
    return nullptr;
  }
  auto func = module->lookupSymbol<mlir::func::FuncOp>(function);
  if (!func) {
    error = "no function @" + function;
    return nullptr;
  }
  auto layer = std::unique_ptr<FakeGpuLayer>(new FakeGpuLayer());
  layer->state = std::make_unique<State>();
  State &s = *layer->state;
  s.function = function;
  for (mlir::Type type : func.getArgumentTypes()) {
    auto memref = mlir::dyn_cast<mlir::MemRefType>(type);
    if (!memref) {
      error = "an argument is not a memref";
      return nullptr;
    }
    s.arguments.push_back(
        {memref.getRank(),
         static_cast<int64_t>(memref.getElementTypeBitWidth() / 8)});
  }
  KernelCompilerOptions options;
  options.fusion = fusion;
  mlir::FailureOr<KernelBundle> files = compileKernelBundle(*module, options);
  if (mlir::failed(files)) {
    error = "inkling-lower-to-nvvm failed: " + diagnostics;
    return nullptr;
  }
  setenv("INKLING_FAKE_CUDA_EXECUTE", "1", 1);
  auto driver = cuda::Driver::load(INKLING_FAKE_CUDA_LIBRARY);
  if (!driver) {
    error = driver.status().toString();
    return nullptr;
  }
  s.driver = std::move(*driver);
  auto bundle =
      cuda::KernelBundle::load(*s.driver, files->manifest, files->files());
  if (!bundle) {
    error = bundle.status().toString();
    return nullptr;
  }
  s.bundle = std::move(*bundle);
  return layer;
}

std::vector<std::pair<std::string, int64_t>> FakeGpuLayer::kernels() const {
  std::vector<std::pair<std::string, int64_t>> names;
  for (const KernelSpec &k : state->bundle->manifest().kernels)
    names.push_back({k.name, k.block[0] * k.block[1] * k.block[2]});
  return names;
}

std::string FakeGpuLayer::call(const std::vector<void *> &descriptors) {
  State &s = *state;
  if (descriptors.size() != s.arguments.size())
    return "the call has " + std::to_string(descriptors.size()) +
           " arguments, @" + s.function + " " +
           std::to_string(s.arguments.size());
  struct Mirror {
    char *host; ///< The aligned pointer.
    size_t bytes;
    cuda::DeviceBuffer device;
  };
  std::vector<Mirror> mirrors;
  std::vector<MemRefArg> args;
  for (size_t i = 0; i < descriptors.size(); ++i) {
    Descriptor d{static_cast<const int64_t *>(descriptors[i]),
                 s.arguments[i].first};
    int64_t elementBytes = s.arguments[i].second;
    // [aligned, aligned + (offset + reach + 1) elements): all it can touch
    // (strides are non-negative in these tests).
    int64_t last = d.offset();
    bool empty = false;
    for (int64_t k = 0; k < d.rank; ++k) {
      if (d.size(k) <= 0)
        empty = true;
      else
        last += (d.size(k) - 1) * d.stride(k);
    }
    size_t bytes = empty ? elementBytes : (last + 1) * elementBytes;
    auto device = cuda::DeviceBuffer::allocate(*s.driver, bytes);
    if (!device)
      return device.status().toString();
    if (Status st =
            s.driver->copyToDevice(device->address(), d.aligned(), bytes);
        !st.isOk())
      return st.toString();
    MemRefArg arg;
    arg.address = device->address() + d.offset() * elementBytes;
    for (int64_t k = 0; k < d.rank; ++k) {
      arg.sizes.push_back(d.size(k));
      arg.strides.push_back(d.stride(k));
    }
    args.push_back(std::move(arg));
    mirrors.push_back({d.aligned(), bytes, std::move(*device)});
  }
  Status launched = s.bundle->run(s.function, args);
  for (Mirror &m : mirrors)
    if (Status st = s.driver->copyToHost(m.host, m.device.address(), m.bytes);
        !st.isOk())
      return st.toString();
  return launched.isOk() ? "" : launched.toString();
}
