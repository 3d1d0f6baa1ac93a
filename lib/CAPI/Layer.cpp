//===- Layer.cpp - C API: compile a model's sconv layer, call it ---------===//
//
// include/inkling-c/Layer.h over exec::LayerProgram (the CPU JIT and the
// kernel bundle) and the runtime's CUDA launcher. Every argument is checked
// here before anything runs: the C ABI is the boundary the docs/Design.md's
// alignment and bounds assumptions are stated at.
//
//===----------------------------------------------------------------------===//

#include "inkling-c/Layer.h"

#include "inkling/ExecutionEngine/LayerProgram.h"
#include "inkling/Runtime/Cuda.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

using namespace inkling;
using exec::ArgRole;

namespace {

inkling_status_t fail(char *error, size_t capacity, StatusCode code,
                      const std::string &message) {
  if (error && capacity > 0) {
    size_t n = std::min(capacity - 1, message.size());
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return static_cast<inkling_status_t>(code);
}

inkling_status_t fail(char *error, size_t capacity, const Status &status) {
  return fail(error, capacity, status.code(), status.message());
}

/// MLIR's context and pass managers are shared by every program: one
/// compile at a time.
std::mutex &compileMutex() {
  static std::mutex mutex;
  return mutex;
}

} // namespace

struct inkling_cuda {
  std::unique_ptr<cuda::Driver> owned;
  cuda::Driver *driver = nullptr;
  std::string chip;
};

struct inkling_layer {
  std::unique_ptr<exec::LayerProgram> program;
  /// Arguments a call passes: the signature's, less a status buffer that
  /// compile added (then owned here).
  int64_t numArgs = 0;
  bool ownsStatus = false;
  std::vector<std::string> names;
  inkling_cuda *cuda = nullptr;
  std::unique_ptr<cuda::KernelBundle> bundle;
  cuda::DeviceBuffer deviceStatus;
  std::mutex callMutex;
  // Per-call scratch.
  std::array<int64_t, exec::kStatusWords> status{};
  std::vector<exec::MemRefArg> call;
  std::vector<inkling::MemRefArg> deviceArgs;
};

namespace {

inkling_status_t
create(llvm::Expected<std::unique_ptr<exec::LayerProgram>> loaded,
       const inkling_layer_options_t &options, inkling_layer_t **out,
       std::string &error) {
  if (!loaded) {
    error = llvm::toString(loaded.takeError());
    return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
  }
  std::unique_ptr<exec::LayerProgram> program = std::move(*loaded);
  auto layer = std::make_unique<inkling_layer>();
  size_t declared = program->signature().args.size();
  exec::CompileOptions compile;
  compile.checked = options.checked != 0;
  compile.fusion = options.fusion ? options.fusion : "";
  if (Status s = exec::checkThreadCount(options.threads); !s) {
    error = s.message();
    return static_cast<inkling_status_t>(s.code());
  }
  compile.threads = options.threads;
  if (!options.cuda) {
    if (llvm::Error e = program->compile(compile)) {
      error = llvm::toString(std::move(e));
      return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
    }
  } else {
    layer->cuda = options.cuda;
    exec::KernelTarget target;
    target.chip =
        options.chip && *options.chip ? options.chip : options.cuda->chip;
    auto compiled = program->compileKernels(compile, target);
    if (!compiled) {
      error = llvm::toString(compiled.takeError());
      return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
    }
    const KernelBundle &files = *compiled;
    auto bundle = cuda::KernelBundle::load(*options.cuda->driver,
                                           files.manifest, files.files());
    if (!bundle) {
      error = "cannot load the kernels (" + target.chip +
              ") on the device: " + bundle.status().message();
      return static_cast<inkling_status_t>(bundle.status().code());
    }
    layer->bundle = std::move(*bundle);
  }
  const exec::LayerSignature &sig = program->signature();
  layer->ownsStatus = sig.args.size() > declared;
  layer->numArgs = static_cast<int64_t>(declared);
  if (layer->ownsStatus && options.cuda) {
    auto buffer = cuda::DeviceBuffer::allocate(
        *options.cuda->driver, exec::kStatusWords * sizeof(int64_t));
    if (!buffer) {
      error = "the status buffer: " + buffer.status().message();
      return static_cast<inkling_status_t>(buffer.status().code());
    }
    layer->deviceStatus = std::move(*buffer);
  }
  for (size_t i = 0; i < sig.args.size(); ++i)
    layer->names.push_back(sig.argName(i));
  layer->program = std::move(program);
  *out = layer.release();
  return INKLING_OK;
}

inkling_layer_options_t optionsOrDefault(const inkling_layer_options_t *o) {
  inkling_layer_options_t options{};
  if (o)
    options = *o;
  return options;
}

/// The caller's descriptors as the ABI's: rank and pointers checked, the
/// owned status buffer appended.
Status gatherArguments(inkling_layer &layer, const inkling_memref_t *args) {
  const exec::LayerSignature &sig = layer.program->signature();
  layer.call.resize(sig.args.size());
  for (int64_t i = 0; i < layer.numArgs; ++i) {
    const inkling_memref_t &a = args[i];
    auto rank = static_cast<int64_t>(sig.args[i].shape.size());
    if (a.rank != rank)
      return invalidArgument(
          sig.describeArg(i) + ": rank " + std::to_string(a.rank) +
          ", expected " + std::to_string(rank) + " (" + sig.args[i].type + ")");
    if (rank > 0 && (!a.sizes || !a.strides))
      return invalidArgument(sig.describeArg(i) + ": null sizes or strides");
    exec::MemRefArg &m = layer.call[i];
    m.data = a.data;
    m.offset = 0;
    m.sizes.assign(a.sizes, a.sizes + rank);
    m.strides.assign(a.strides, a.strides + rank);
  }
  if (layer.ownsStatus) {
    void *data = layer.cuda
                     ? reinterpret_cast<void *>(layer.deviceStatus.address())
                     : layer.status.data();
    layer.call.back() = {data, 0, {exec::kStatusWords}, {1}};
  }
  return Status::ok();
}

/// The message of a checked kernel's status report.
std::string
statusReport(const std::array<int64_t, exec::kStatusWords> &status) {
  return "the checked kernel " + exec::describeCheckedStatus(status.data()) +
         "; outputs are incomplete";
}

/// A copy either way: the arguments checked, then `run(driver)`.
template <typename Run>
inkling_status_t copy(inkling_cuda_t *cuda, const void *host, size_t bytes,
                      char *error, size_t errorCapacity, Run run) {
  if (!cuda || (!host && bytes))
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                !cuda ? "cuda is null" : "host is null");
  if (Status s = run(*cuda->driver); !s)
    return fail(error, errorCapacity, s);
  return INKLING_OK;
}

} // namespace

extern "C" {

inkling_status_t inkling_layer_create(const char *ir, size_t irLength,
                                      const char *sourceName,
                                      const inkling_layer_options_t *options,
                                      inkling_layer_t **out, char *error,
                                      size_t errorCapacity) {
  if (!ir || !out)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                !ir ? "ir is null" : "out is null");
  inkling_layer_options_t o = optionsOrDefault(options);
  std::string name = sourceName && *sourceName ? sourceName : "<layer>";
  std::lock_guard<std::mutex> lock(compileMutex());
  std::string message;
  auto program = exec::LayerProgram::fromSource(std::string(ir, irLength), name,
                                                o.entry ? o.entry : "");
  inkling_status_t status = create(std::move(program), o, out, message);
  if (status != INKLING_OK)
    return fail(error, errorCapacity, static_cast<StatusCode>(status), message);
  return INKLING_OK;
}

inkling_status_t inkling_layer_create_from_file(
    const char *path, const inkling_layer_options_t *options,
    inkling_layer_t **out, char *error, size_t errorCapacity) {
  if (!path || !out)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                !path ? "path is null" : "out is null");
  inkling_layer_options_t o = optionsOrDefault(options);
  std::lock_guard<std::mutex> lock(compileMutex());
  std::string message;
  auto program = exec::LayerProgram::load(path, o.entry ? o.entry : "");
  inkling_status_t status = create(std::move(program), o, out, message);
  if (status != INKLING_OK)
    return fail(error, errorCapacity, static_cast<StatusCode>(status), message);
  return INKLING_OK;
}

void inkling_layer_destroy(inkling_layer_t *layer) {
  if (!layer)
    return;
  // The JIT-ed code belongs to the program; MLIR objects are not
  // thread-safe to destroy during another compile.
  std::lock_guard<std::mutex> lock(compileMutex());
  delete layer;
}

size_t inkling_layer_scratch_bytes(inkling_layer_t *layer) {
  if (!layer || !layer->bundle)
    return 0;
  std::lock_guard<std::mutex> lock(layer->callMutex);
  return layer->bundle->scratchBytes();
}

inkling_status_t inkling_layer_release_scratch(inkling_layer_t *layer,
                                               char *error,
                                               size_t errorCapacity) {
  if (!layer)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                "layer is null");
  if (!layer->bundle)
    return INKLING_OK;
  std::lock_guard<std::mutex> lock(layer->callMutex);
  if (Status s = layer->cuda->driver->makeCurrent(); !s)
    return fail(error, errorCapacity, s);
  if (Status s = layer->bundle->releaseScratch(); !s)
    return fail(error, errorCapacity, s);
  return INKLING_OK;
}

const char *inkling_layer_function(const inkling_layer_t *layer) {
  return layer ? layer->program->signature().function.c_str() : "";
}

int64_t inkling_layer_num_args(const inkling_layer_t *layer) {
  return layer ? layer->numArgs : 0;
}

inkling_status_t inkling_layer_get_arg(const inkling_layer_t *layer,
                                       int64_t index,
                                       inkling_layer_arg_t *out) {
  if (!layer || !out || index < 0 ||
      index >= static_cast<int64_t>(layer->program->signature().args.size()))
    return INKLING_OUT_OF_RANGE;
  const exec::ArgInfo &arg = layer->program->signature().args[index];
  inkling_layer_arg_t info{};
  info.name = layer->names[index].c_str();
  info.role = exec::argRoleName(arg.role);
  info.stream = arg.stream ? streamName(*arg.stream) : nullptr;
  info.element = exec::elementKindName(arg.element);
  info.element_bytes = exec::elementBytes(arg.element);
  info.rank = static_cast<int64_t>(arg.shape.size());
  info.shape = arg.shape.data();
  info.strides = arg.strides.data();
  info.type = arg.type.c_str();
  *out = info;
  return INKLING_OK;
}

void inkling_layer_get_layout(const inkling_layer_t *layer,
                              inkling_layer_layout_t *out) {
  if (!layer || !out)
    return;
  const exec::LayerSignature &sig = layer->program->signature();
  inkling_layer_layout_t l{};
  l.heads_per_rank = sig.layout.headsPerRank;
  l.head_size = sig.layout.headSize;
  l.block_size = sig.layout.blockSize;
  l.kernel = sig.layout.slidingWindow;
  l.page_bytes = sig.pageBytes;
  for (int s = 0; s < kNumStreams; ++s) {
    StreamRange range = sig.layout.range(static_cast<Stream>(s));
    l.stream_offset[s] = range.offset;
    l.stream_width[s] = range.width;
  }
  *out = l;
}

inkling_status_t inkling_layer_call(inkling_layer_t *layer,
                                    const inkling_memref_t *args,
                                    int64_t numArgs, void *stream, char *error,
                                    size_t errorCapacity) {
  if (!layer)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                "layer is null");
  std::lock_guard<std::mutex> lock(layer->callMutex);
  if (numArgs != layer->numArgs || (numArgs > 0 && !args))
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                "@" + layer->program->signature().function + " takes " +
                    std::to_string(layer->numArgs) + " arguments, got " +
                    std::to_string(numArgs));
  // The one validator of the layer ABI; on the CPU the metadata is on the
  // host and checked too (on the GPU, `checked` kernels report bad ids).
  const exec::LayerSignature &sig = layer->program->signature();
  if (Status s = gatherArguments(*layer, args); !s)
    return fail(error, errorCapacity, s);
  auto step = exec::validateArguments(sig, layer->call, numArgs);
  if (!step)
    return fail(error, errorCapacity, step.status());
  layer->status.fill(0);
  if (!layer->cuda) {
    if (Status s = exec::validateStepMetadata(sig, layer->call, *step); !s)
      return fail(error, errorCapacity, s);
    layer->program->invoke(layer->call);
  } else {
    cuda::Driver &driver = *layer->cuda->driver;
    if (Status s = driver.makeCurrent(); !s)
      return fail(error, errorCapacity, s);
    layer->deviceArgs.resize(layer->call.size());
    for (size_t i = 0; i < layer->call.size(); ++i) {
      const exec::MemRefArg &a = layer->call[i];
      layer->deviceArgs[i] = {reinterpret_cast<uintptr_t>(a.data), a.sizes,
                              a.strides};
    }
    if (layer->ownsStatus) {
      if (Status s = driver.memset(layer->deviceStatus.address(), 0,
                                   layer->deviceStatus.bytes());
          !s)
        return fail(error, errorCapacity, s);
    }
    if (Status s = layer->bundle->run(sig.function, layer->deviceArgs,
                                      static_cast<cuda::Stream>(stream));
        !s)
      return fail(error, errorCapacity, s);
    if (layer->ownsStatus) {
      if (Status s = driver.synchronize(); !s)
        return fail(error, errorCapacity, s);
      if (Status s = driver.copyToHost(layer->status.data(),
                                       layer->deviceStatus.address(),
                                       layer->deviceStatus.bytes());
          !s)
        return fail(error, errorCapacity, s);
    }
  }
  if (layer->ownsStatus && layer->status[0] != 0)
    return fail(error, errorCapacity, StatusCode::OutOfRange,
                "@" + sig.function + ": " + statusReport(layer->status));
  return INKLING_OK;
}

inkling_status_t inkling_cuda_open(const char *library, inkling_cuda_t **out,
                                   char *error, size_t errorCapacity) {
  if (!out)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                "out is null");
  auto cuda = std::make_unique<inkling_cuda>();
  if (library && *library) {
    auto driver = cuda::Driver::load(library);
    if (!driver)
      return fail(error, errorCapacity, driver.status());
    cuda->owned = std::move(*driver);
    cuda->driver = cuda->owned.get();
  } else {
    auto driver = cuda::Driver::get();
    if (!driver)
      return fail(error, errorCapacity, driver.status());
    cuda->driver = *driver;
  }
  cuda->chip = "sm_" + std::to_string(cuda->driver->computeCapability());
  *out = cuda.release();
  return INKLING_OK;
}

void inkling_cuda_close(inkling_cuda_t *cuda) { delete cuda; }

const char *inkling_cuda_chip(const inkling_cuda_t *cuda) {
  return cuda ? cuda->chip.c_str() : "";
}

inkling_status_t inkling_cuda_alloc(inkling_cuda_t *cuda, size_t bytes,
                                    uint64_t *out, char *error,
                                    size_t errorCapacity) {
  if (!cuda || !out)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                !cuda ? "cuda is null" : "out is null");
  auto address = cuda->driver->alloc(bytes);
  if (!address)
    return fail(error, errorCapacity, address.status());
  *out = *address;
  return INKLING_OK;
}

inkling_status_t inkling_cuda_free(inkling_cuda_t *cuda, uint64_t address) {
  if (!cuda)
    return INKLING_INVALID_ARGUMENT;
  return static_cast<inkling_status_t>(cuda->driver->free(address).code());
}

inkling_status_t inkling_cuda_copy_to_device(inkling_cuda_t *cuda,
                                             uint64_t device, const void *host,
                                             size_t bytes, char *error,
                                             size_t errorCapacity) {
  return copy(cuda, host, bytes, error, errorCapacity,
              [&](cuda::Driver &driver) {
                return driver.copyToDevice(device, host, bytes);
              });
}

inkling_status_t inkling_cuda_copy_to_host(inkling_cuda_t *cuda, void *host,
                                           uint64_t device, size_t bytes,
                                           char *error, size_t errorCapacity) {
  return copy(cuda, host, bytes, error, errorCapacity,
              [&](cuda::Driver &driver) {
                return driver.copyToHost(host, device, bytes);
              });
}

} // extern "C"
