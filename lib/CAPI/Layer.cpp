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

/// The alignment every argument's data must have (Layer.h).
constexpr uintptr_t kAlignment = 16;

/// Words of a checked kernel's status buffer (docs/bad-inputs.md).
constexpr int64_t kStatusWords = 5;

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
  std::array<int64_t, kStatusWords> status{};
  std::vector<exec::MemRefArg> hostArgs;
  std::vector<inkling::MemRefArg> deviceArgs;
};

namespace {

std::string argName(const exec::ArgInfo &arg) {
  std::string name = exec::argRoleName(arg.role);
  if (arg.stream)
    name += std::string("_") + streamName(*arg.stream);
  return name;
}

inkling_status_t create(std::unique_ptr<exec::LayerProgram> program,
                        const inkling_layer_options_t &options,
                        inkling_layer_t **out, std::string &error) {
  if (!program)
    return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
  auto layer = std::make_unique<inkling_layer>();
  size_t declared = program->signature().args.size();
  exec::CompileOptions compile;
  compile.checked = options.checked != 0;
  compile.fusion = options.fusion ? options.fusion : "";
  if (options.threads < 0) {
    error = "threads (" + std::to_string(options.threads) +
            "): expected 0 (every core) or a positive count";
    return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
  }
  compile.threads = options.threads;
  if (!options.cuda) {
    if (!program->compile(compile, error))
      return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
  } else {
    layer->cuda = options.cuda;
    exec::KernelTarget target;
    target.chip =
        options.chip && *options.chip ? options.chip : options.cuda->chip;
    exec::KernelFiles files;
    if (!program->compileKernels(compile, target, files, error))
      return static_cast<inkling_status_t>(StatusCode::InvalidArgument);
    auto bundle = cuda::KernelBundle::load(*options.cuda->driver,
                                           files.manifest, files.objects);
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
    auto buffer = cuda::DeviceBuffer::allocate(*options.cuda->driver,
                                               kStatusWords * sizeof(int64_t));
    if (!buffer) {
      error = "the status buffer: " + buffer.status().message();
      return static_cast<inkling_status_t>(buffer.status().code());
    }
    layer->deviceStatus = std::move(*buffer);
  }
  for (const exec::ArgInfo &arg : sig.args)
    layer->names.push_back(argName(arg));
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

/// The shape and alignment checks of a call, and the host-side metadata
/// checks of a CPU call; fills the layer's scratch arguments.
class CallChecker {
public:
  CallChecker(inkling_layer &layer, const inkling_memref_t *args)
      : layer_(layer), sig_(layer.program->signature()), args_(args) {}

  Status run() {
    for (int64_t i = 0; i < layer_.numArgs; ++i)
      if (Status s = checkTyped(i); !s)
        return s;
    if (Status s = checkShapes(); !s)
      return s;
    if (!layer_.cuda)
      return checkMetadata();
    return Status::ok();
  }

private:
  std::string name(int64_t i) const {
    return "argument " + std::to_string(i) + " (" + layer_.names[i] + ")";
  }
  Status bad(int64_t i, const std::string &message) const {
    return invalidArgument(name(i) + ": " + message);
  }
  static std::string list(const int64_t *values, int64_t n) {
    std::string text = "[";
    for (int64_t d = 0; d < n; ++d)
      text += (d ? ", " : "") +
              (values[d] == exec::kDynamic ? "?" : std::to_string(values[d]));
    return text + "]";
  }

  /// Against the argument's memref type: rank, static sizes and strides,
  /// non-negative sizes, alignment.
  Status checkTyped(int64_t i) {
    const exec::ArgInfo &info = sig_.args[i];
    const inkling_memref_t &a = args_[i];
    int64_t rank = static_cast<int64_t>(info.shape.size());
    if (a.rank != rank)
      return bad(i, "rank " + std::to_string(a.rank) + ", expected " +
                        std::to_string(rank) + " (" + info.type + ")");
    if (rank > 0 && (!a.sizes || !a.strides))
      return bad(i, "null sizes or strides");
    for (int64_t d = 0; d < rank; ++d) {
      if (a.sizes[d] < 0 || a.sizes[d] > (int64_t(1) << 40))
        return bad(i, "size " + std::to_string(a.sizes[d]) + " of dim " +
                          std::to_string(d) + " is out of range");
      if (info.shape[d] != exec::kDynamic && a.sizes[d] != info.shape[d])
        return bad(i, "shape " + list(a.sizes, rank) + ", expected " +
                          list(info.shape.data(), rank) + " (" + info.type +
                          ")");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (a.sizes[d] <= 1)
        continue; // a stride of a size-1 dim is never used
      bool ok = info.strides[d] == exec::kDynamic
                    ? a.strides[d] >= 1 && a.strides[d] <= (int64_t(1) << 40)
                    : a.strides[d] == info.strides[d];
      if (!ok)
        return bad(i, "strides " + list(a.strides, rank) + ", expected " +
                          list(info.strides.data(), rank) + " (" + info.type +
                          ")");
    }
    if (!a.data)
      return bad(i, "null data");
    auto address = reinterpret_cast<uintptr_t>(a.data);
    if (address % kAlignment != 0)
      return bad(i, "data at 0x" + toHex(address) + " is not " +
                        std::to_string(kAlignment) + "-byte aligned");
    return Status::ok();
  }

  static std::string toHex(uintptr_t value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%lx", static_cast<unsigned long>(value));
    return text;
  }

  int64_t size(int index, int d) const { return args_[index].sizes[d]; }

  /// Sizes that must agree between arguments: T, B, the layout's H and w.
  Status checkShapes() {
    const Layout &layout = sig_.layout;
    int64_t H = layout.headsPerRank, W = layout.slidingWindow;
    // T: dim 0 of every input and output.
    int64_t tokens = -1;
    int tokensFrom = -1;
    for (int64_t i = 0; i < layer_.numArgs; ++i) {
      const exec::ArgInfo &info = sig_.args[i];
      if (info.role != ArgRole::Input && info.role != ArgRole::Output &&
          info.role != ArgRole::Weights && info.role != ArgRole::Bias)
        continue;
      int64_t w = layout.range(*info.stream).width;
      const inkling_memref_t &a = args_[i];
      std::vector<int64_t> want;
      if (info.role == ArgRole::Weights)
        want = {H * w, W};
      else if (info.role == ArgRole::Bias)
        want = {H * w};
      else if (a.rank == 3)
        want = {a.sizes[0], H, w};
      else
        want = {a.sizes[0], H * w};
      if (!std::equal(want.begin(), want.end(), a.sizes))
        return bad(i, "shape " + list(a.sizes, a.rank) + ", expected " +
                          list(want.data(), a.rank) + " (H = " +
                          std::to_string(H) + ", w = " + std::to_string(w) +
                          ", W = " + std::to_string(W) + ")");
      if (info.role == ArgRole::Weights || info.role == ArgRole::Bias)
        continue;
      if (tokens < 0) {
        tokens = a.sizes[0];
        tokensFrom = static_cast<int>(i);
      } else if (a.sizes[0] != tokens) {
        return bad(i, std::to_string(a.sizes[0]) + " tokens, but " +
                          name(tokensFrom) + " has " + std::to_string(tokens));
      }
    }
    tokens_ = std::max<int64_t>(tokens, 0);
    int qsl = sig_.queryStartLoc, nc = sig_.numComputed,
        table = sig_.blockTable, slots = sig_.slotMapping;
    if (size(qsl, 0) < 1)
      return bad(qsl, "empty: it needs B + 1 >= 1 entries");
    batch_ = size(qsl, 0) - 1;
    if (size(nc, 0) != batch_)
      return bad(nc, std::to_string(size(nc, 0)) + " entries, but " +
                         name(qsl) +
                         " has B + 1 = " + std::to_string(batch_ + 1));
    if (size(table, 0) != batch_)
      return bad(table, std::to_string(size(table, 0)) + " rows, but " +
                            name(qsl) +
                            " has B + 1 = " + std::to_string(batch_ + 1));
    if (size(slots, 0) < tokens_)
      return bad(slots, std::to_string(size(slots, 0)) +
                            " entries, fewer than the " +
                            std::to_string(tokens_) + " tokens of the inputs");
    if (sig_.tokenSeq >= 0 && size(sig_.tokenSeq, 0) < tokens_)
      return bad(sig_.tokenSeq, std::to_string(size(sig_.tokenSeq, 0)) +
                                    " entries, fewer than the " +
                                    std::to_string(tokens_) +
                                    " tokens of the inputs");
    int64_t cacheBytes = size(sig_.cache, 0);
    int64_t page = layout.pageBytes();
    if (cacheBytes < page)
      return bad(sig_.cache, std::to_string(cacheBytes) +
                                 " bytes, less than one page (" +
                                 std::to_string(page) + " bytes)");
    // The last block needs its page; blocks are page_bytes apart.
    numBlocks_ = (cacheBytes - page) / sig_.pageBytes + 1;
    if (sig_.status >= 0 && sig_.status < layer_.numArgs &&
        size(sig_.status, 0) < kStatusWords)
      return bad(sig_.status, std::to_string(size(sig_.status, 0)) +
                                  " entries, fewer than " +
                                  std::to_string(kStatusWords));
    return Status::ok();
  }

  template <typename T> T at(int index, int64_t i, int64_t j = 0) const {
    const inkling_memref_t &a = args_[index];
    int64_t offset = i * a.strides[0] + (a.rank > 1 ? j * a.strides[1] : 0);
    return static_cast<const T *>(a.data)[offset];
  }

  /// docs/Design.md section 3's invariants that keep every access in bounds.
  Status checkMetadata() {
    const Layout &layout = sig_.layout;
    int64_t N = layout.blockSize, W = layout.slidingWindow;
    int qsl = sig_.queryStartLoc, nc = sig_.numComputed,
        table = sig_.blockTable, slots = sig_.slotMapping;
    int64_t cols = size(table, 1);
    auto entry = [&](int index, int64_t i) {
      return name(index) + "[" + std::to_string(i) + "]";
    };
    if (at<int32_t>(qsl, 0) != 0)
      return invalidArgument(entry(qsl, 0) + " = " +
                             std::to_string(at<int32_t>(qsl, 0)) +
                             ", expected 0");
    for (int64_t b = 0; b < batch_; ++b) {
      int64_t begin = at<int32_t>(qsl, b), end = at<int32_t>(qsl, b + 1);
      if (end < begin || end > tokens_)
        return invalidArgument(entry(qsl, b + 1) + " = " + std::to_string(end) +
                               ": must be in [" + std::to_string(begin) + ", " +
                               std::to_string(tokens_) +
                               "] (non-decreasing, at most T)");
      int64_t computed = at<int32_t>(nc, b);
      if (computed < 0)
        return invalidArgument(entry(nc, b) + " = " + std::to_string(computed) +
                               " is negative");
      if (begin == end)
        continue;
      // History taps: positions [computed - (W-1), computed).
      for (int64_t q = std::max<int64_t>(0, computed - (W - 1)); q < computed;
           ++q) {
        int64_t j = q / N;
        if (j >= cols)
          return invalidArgument(name(table) + ": row " + std::to_string(b) +
                                 " has " + std::to_string(cols) +
                                 " columns, but position " + std::to_string(q) +
                                 " of its history is in logical block " +
                                 std::to_string(j));
        int64_t block = at<int32_t>(table, b, j);
        if (block < 0 || block >= numBlocks_)
          return invalidArgument(
              name(table) + "[" + std::to_string(b) + "][" + std::to_string(j) +
              "] = " + std::to_string(block) + ": not a block of the cache (" +
              std::to_string(numBlocks_) + " blocks)");
      }
    }
    // Every token's slot, padding included: nothing here relies on how a
    // kernel treats tokens past qsl[B].
    for (int64_t t = 0; t < tokens_; ++t) {
      int64_t slot = at<int64_t>(slots, t);
      if (slot < -1 || slot >= numBlocks_ * N)
        return invalidArgument(entry(slots, t) + " = " + std::to_string(slot) +
                               ": not -1 or a slot of " + "the cache (" +
                               std::to_string(numBlocks_) + " blocks of " +
                               std::to_string(N) + ")");
    }
    // A real token's token_seq entry indexes the metadata unchecked in the
    // kernels: it must be the token's own sequence. Padding entries are not
    // read.
    if (int seq = sig_.tokenSeq; seq >= 0)
      for (int64_t b = 0; b < batch_; ++b)
        for (int64_t t = at<int32_t>(qsl, b), end = at<int32_t>(qsl, b + 1);
             t < end; ++t)
          if (int64_t s = at<int32_t>(seq, t); s != b)
            return invalidArgument(entry(seq, t) + " = " + std::to_string(s) +
                                   ": token " + std::to_string(t) +
                                   " is in sequence " + std::to_string(b) +
                                   " (" + name(qsl) + ")");
    return Status::ok();
  }

  inkling_layer &layer_;
  const exec::LayerSignature &sig_;
  const inkling_memref_t *args_;
  int64_t tokens_ = 0, batch_ = 0, numBlocks_ = 0;
};

/// The message of a checked kernel's status report.
std::string statusReport(const std::array<int64_t, kStatusWords> &status) {
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

inkling_status_t inklingLayerCreate(const char *ir, size_t irLength,
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
  auto program = exec::LayerProgram::fromSource(
      std::string(ir, irLength), name, o.entry ? o.entry : "", message);
  inkling_status_t status = create(std::move(program), o, out, message);
  if (status != INKLING_OK)
    return fail(error, errorCapacity, static_cast<StatusCode>(status), message);
  return INKLING_OK;
}

inkling_status_t inklingLayerCreateFromFile(
    const char *path, const inkling_layer_options_t *options,
    inkling_layer_t **out, char *error, size_t errorCapacity) {
  if (!path || !out)
    return fail(error, errorCapacity, StatusCode::InvalidArgument,
                !path ? "path is null" : "out is null");
  inkling_layer_options_t o = optionsOrDefault(options);
  std::lock_guard<std::mutex> lock(compileMutex());
  std::string message;
  auto program =
      exec::LayerProgram::load(path, o.entry ? o.entry : "", message);
  inkling_status_t status = create(std::move(program), o, out, message);
  if (status != INKLING_OK)
    return fail(error, errorCapacity, static_cast<StatusCode>(status), message);
  return INKLING_OK;
}

void inklingLayerDestroy(inkling_layer_t *layer) {
  if (!layer)
    return;
  // The JIT-ed code belongs to the program; MLIR objects are not
  // thread-safe to destroy during another compile.
  std::lock_guard<std::mutex> lock(compileMutex());
  delete layer;
}

const char *inklingLayerFunction(const inkling_layer_t *layer) {
  return layer ? layer->program->signature().function.c_str() : "";
}

int64_t inklingLayerNumArgs(const inkling_layer_t *layer) {
  return layer ? layer->numArgs : 0;
}

inkling_status_t inklingLayerGetArg(const inkling_layer_t *layer, int64_t index,
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

void inklingLayerGetLayout(const inkling_layer_t *layer,
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

inkling_status_t inklingLayerCall(inkling_layer_t *layer,
                                  const inkling_memref_t *args, int64_t numArgs,
                                  void *stream, char *error,
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
  if (Status s = CallChecker(*layer, args).run(); !s)
    return fail(error, errorCapacity, s);

  const exec::LayerSignature &sig = layer->program->signature();
  size_t total = sig.args.size();
  layer->status.fill(0);
  if (!layer->cuda) {
    layer->hostArgs.resize(total);
    for (int64_t i = 0; i < numArgs; ++i) {
      const inkling_memref_t &a = args[i];
      exec::MemRefArg &m = layer->hostArgs[i];
      m.data = a.data;
      m.offset = 0;
      m.sizes.assign(a.sizes, a.sizes + a.rank);
      m.strides.assign(a.strides, a.strides + a.rank);
    }
    if (layer->ownsStatus)
      layer->hostArgs.back() = {layer->status.data(), 0, {kStatusWords}, {1}};
    layer->program->invoke(layer->hostArgs);
  } else {
    cuda::Driver &driver = *layer->cuda->driver;
    if (Status s = driver.makeCurrent(); !s)
      return fail(error, errorCapacity, s);
    layer->deviceArgs.resize(total);
    for (int64_t i = 0; i < numArgs; ++i) {
      const inkling_memref_t &a = args[i];
      inkling::MemRefArg &m = layer->deviceArgs[i];
      m.address = reinterpret_cast<uintptr_t>(a.data);
      m.sizes.assign(a.sizes, a.sizes + a.rank);
      m.strides.assign(a.strides, a.strides + a.rank);
    }
    if (layer->ownsStatus) {
      cuda::DevicePtr address = layer->deviceStatus.address();
      if (Status s = driver.memset(address, 0, layer->deviceStatus.bytes()); !s)
        return fail(error, errorCapacity, s);
      layer->deviceArgs.back() = {address, {kStatusWords}, {1}};
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

inkling_status_t inklingCudaOpen(const char *library, inkling_cuda_t **out,
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

void inklingCudaClose(inkling_cuda_t *cuda) { delete cuda; }

const char *inklingCudaChip(const inkling_cuda_t *cuda) {
  return cuda ? cuda->chip.c_str() : "";
}

inkling_status_t inklingCudaAlloc(inkling_cuda_t *cuda, size_t bytes,
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

inkling_status_t inklingCudaFree(inkling_cuda_t *cuda, uint64_t address) {
  if (!cuda)
    return INKLING_INVALID_ARGUMENT;
  return static_cast<inkling_status_t>(cuda->driver->free(address).code());
}

inkling_status_t inklingCudaCopyToDevice(inkling_cuda_t *cuda, uint64_t device,
                                         const void *host, size_t bytes,
                                         char *error, size_t errorCapacity) {
  return copy(cuda, host, bytes, error, errorCapacity,
              [&](cuda::Driver &driver) {
                return driver.copyToDevice(device, host, bytes);
              });
}

inkling_status_t inklingCudaCopyToHost(inkling_cuda_t *cuda, void *host,
                                       uint64_t device, size_t bytes,
                                       char *error, size_t errorCapacity) {
  return copy(cuda, host, bytes, error, errorCapacity,
              [&](cuda::Driver &driver) {
                return driver.copyToHost(host, device, bytes);
              });
}

} // extern "C"
