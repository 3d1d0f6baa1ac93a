//===- Replay.cpp - Run one sconv op on .npy tensors ----------------------===//
//
// inkling-run MODEL.mlir --replay=OP --inputs=name=file.npy,... --outputs=DIR
//
// Compiles the model's function with only its OP-th sconv op (in checked
// mode: a bad slot or block id is reported, never an out-of-bounds access),
// feeds it the tensors, and writes what it produced: `out.npy` for a conv
// (`out_<stream>.npy` for a fused conv), `cache.npy` for an op that stores
// into the cache. bf16 tensors are uint16 bit patterns.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "Run.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

using namespace inkling;
using namespace inkling::exec;
using namespace inkling::run;

namespace {

/// 64-byte aligned bytes (the kernels' 16-byte alignment contract).
struct Buffer {
  explicit Buffer(size_t bytes)
      : data(static_cast<uint8_t *>(
            std::aligned_alloc(64, bytes / 64 * 64 + 64))) {
    if (!data) {
      std::fprintf(stderr, "inkling-run: cannot allocate %zu bytes\n", bytes);
      std::exit(1);
    }
    std::memset(data, 0, bytes / 64 * 64 + 64);
  }
  ~Buffer() { std::free(data); }
  uint8_t *data;
};

std::string operandName(const ArgInfo &arg, bool suffix) {
  std::string name;
  switch (arg.role) {
  case ArgRole::Input:
    name = "x";
    break;
  case ArgRole::Weights:
    name = "weights";
    break;
  case ArgRole::Bias:
    name = "bias";
    break;
  case ArgRole::Output:
    name = "out";
    break;
  default:
    return argRoleName(arg.role);
  }
  if (suffix && arg.stream)
    name += std::string("_") + streamName(*arg.stream);
  return name;
}

/// Integer metadata as int64, from int32 or int64 arrays.
bool integers(const std::string &name, const npy::Array &a,
              std::vector<int64_t> &out, std::string &error) {
  if (a.dtype != "i4" && a.dtype != "i8" && a.dtype != "u4" &&
      a.dtype != "u8") {
    error = name + ": dtype '" + a.dtype + "', expected int32 or int64";
    return false;
  }
  out.resize(a.count());
  for (int64_t i = 0; i < a.count(); ++i) {
    const uint8_t *p = a.data.data() + a.itemBytes * i;
    if (a.dtype == "i4") {
      int32_t v;
      std::memcpy(&v, p, 4);
      out[i] = v;
    } else if (a.dtype == "u4") {
      uint32_t v; // 0xFFFFFFFF is 4294967295, not -1
      std::memcpy(&v, p, 4);
      out[i] = v;
    } else if (a.dtype == "i8") {
      std::memcpy(&out[i], p, 8);
    } else {
      uint64_t v;
      std::memcpy(&v, p, 8);
      if (v > uint64_t(INT64_MAX)) {
        error = name + ": entry " + std::to_string(i) + " is " +
                std::to_string(v) + ", beyond int64";
        return false;
      }
      out[i] = static_cast<int64_t>(v);
    }
  }
  return true;
}

/// Bytes of `count` elements of `bytes` each, or 0 when that is beyond
/// what a replay allocates (1 TiB).
size_t checkedBytes(int64_t count, int64_t bytes) {
  constexpr int64_t kMax = int64_t(1) << 40;
  if (count < 0 || bytes <= 0 || count > kMax / bytes)
    return 0;
  return static_cast<size_t>(count * bytes);
}

} // namespace

int run::replay(LayerProgram &program, const ReplayOptions &options) {
  std::string error;
  const LayerSignature &before = program.signature();
  if (!program.keepOnlyOp(options.opIndex, error))
    return fail(error);
  OpInfo op = before.ops[options.opIndex];
  const LayerSignature &sig = program.signature();
  const Layout &layout = sig.layout;
  int64_t H = layout.headsPerRank, W = layout.config.kernel;

  // The op's operands by name.
  bool suffix = op.streams.size() > 1;
  std::map<std::string, int> names;
  for (int arg : op.arguments)
    names[operandName(sig.args[arg], suffix)] = arg;
  std::set<std::string> outputNames;
  for (int arg : op.outputs)
    outputNames.insert(operandName(sig.args[arg], suffix));
  std::string expected;
  for (const auto &[name, arg] : names)
    if (!outputNames.count(name) && name != "status")
      expected += (expected.empty() ? "" : ", ") + name;

  std::map<std::string, npy::Array> inputs;
  for (const std::string &item : options.inputs) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--inputs: '" + item + "' is not name=file.npy");
    std::string name = item.substr(0, eq), path = item.substr(eq + 1);
    if (!names.count(name) || outputNames.count(name) || name == "status")
      return fail("--inputs: " + op.name + " (op " +
                  std::to_string(options.opIndex) + ") has no input named '" +
                  name + "' (inputs: " + expected + ")");
    npy::Array array;
    if (!npy::read(path, array, error))
      return fail(error);
    inputs[name] = std::move(array);
  }
  for (const auto &[name, arg] : names)
    if (!outputNames.count(name) && name != "status" && !inputs.count(name))
      return fail("--inputs: missing '" + name + "' (" + op.name + " op " +
                  std::to_string(options.opIndex) +
                  " reads it; inputs: " + expected + ")");

  // Metadata.
  std::vector<int64_t> qsl, nc, bt, slots;
  auto meta = [&](const char *name, std::vector<int64_t> &out, size_t rank) {
    const npy::Array &a = inputs[name];
    if (a.shape.size() != rank) {
      error = std::string(name) + ": shape " + a.shapeString() + ", expected " +
              std::to_string(rank) + " dimension" + (rank > 1 ? "s" : "");
      return false;
    }
    return integers(name, a, out, error);
  };
  if (!meta("query_start_loc", qsl, 1) || !meta("num_computed", nc, 1) ||
      !meta("block_table", bt, 2) || !meta("slot_mapping", slots, 1))
    return fail(error);
  int64_t B = static_cast<int64_t>(nc.size());
  if (static_cast<int64_t>(qsl.size()) != B + 1)
    return fail("query_start_loc: " + std::to_string(qsl.size()) +
                " entries, expected B + 1 = " + std::to_string(B + 1) +
                " (num_computed has " + std::to_string(B) + ")");
  if (qsl[0] != 0)
    return fail("query_start_loc[0] is " + std::to_string(qsl[0]) +
                ", expected 0");
  for (int64_t b = 0; b <= B; ++b)
    if (qsl[b] < 0 || qsl[b] > INT32_MAX)
      return fail("query_start_loc[" + std::to_string(b) + "] is " +
                  std::to_string(qsl[b]) + ", expected [0, 2^31 - 1]");
  for (int64_t b = 0; b < B; ++b) {
    if (qsl[b + 1] < qsl[b])
      return fail("query_start_loc decreases at " + std::to_string(b + 1));
    if (nc[b] < 0 || nc[b] > INT32_MAX)
      return fail("num_computed[" + std::to_string(b) + "] is " +
                  std::to_string(nc[b]));
  }
  // Tokens at or past qsl[B] are padding: the inputs may have more rows.
  int64_t T = qsl[B];
  for (const auto &[name, array] : inputs)
    if ((name == "x" || name.rfind("x_", 0) == 0) && !array.shape.empty() &&
        array.shape[0] > T)
      T = array.shape[0];
  std::vector<int32_t> tokenSeq;
  if (names.count("token_seq")) {
    std::vector<int64_t> entries;
    if (!meta("token_seq", entries, 1))
      return fail(error);
    if (static_cast<int64_t>(entries.size()) < T)
      return fail("token_seq: " + std::to_string(entries.size()) +
                  " entries, the step has " + std::to_string(T) + " tokens");
    for (int64_t v : entries)
      tokenSeq.push_back(static_cast<int32_t>(v));
  }
  const npy::Array &btArray = inputs["block_table"];
  if (btArray.shape[0] != B || btArray.shape[1] < 1)
    return fail("block_table: shape " + btArray.shapeString() + ", expected (" +
                std::to_string(B) + ", M >= 1)");
  int64_t M = btArray.shape[1];
  if (static_cast<int64_t>(slots.size()) < T)
    return fail("slot_mapping: " + std::to_string(slots.size()) +
                " entries, the step has " + std::to_string(T) + " tokens");
  // Each token stores its own row: a slot used twice in one step is a
  // race between the two stores (on a GPU, they run at once). Padding
  // tokens store nothing, whatever their slots.
  std::map<int64_t, int64_t> firstToken;
  for (int64_t t = 0; t < qsl[B]; ++t) {
    if (slots[t] < 0)
      continue;
    auto [it, fresh] = firstToken.emplace(slots[t], t);
    if (!fresh)
      return fail("slot_mapping: slot " + std::to_string(slots[t]) +
                  " appears for tokens " + std::to_string(it->second) +
                  " and " + std::to_string(t) +
                  " (each token stores its own row)");
  }

  // The cache.
  const npy::Array &cacheArray = inputs["cache"];
  int64_t cacheBytes = cacheArray.count() * cacheArray.itemBytes;
  if ((cacheArray.itemBytes != 2 && cacheArray.itemBytes != 1) ||
      cacheBytes == 0 || cacheBytes % sig.pageBytes != 0)
    return fail("cache: " + std::to_string(cacheBytes) + " bytes of dtype '" +
                cacheArray.dtype +
                "', expected a uint16 (or uint8) array of "
                "whole pages of " +
                std::to_string(sig.pageBytes) + " bytes");
  // A 4-D cache of unpadded pages names its geometry: a block size other
  // than the layer's (the engine's N) is refused rather than read with the
  // wrong rows.
  if (cacheArray.shape.size() == 4 && cacheArray.itemBytes == 2 &&
      sig.pageBytes == layout.pageBytes() &&
      (cacheArray.shape[1] != layout.headsPerRank ||
       cacheArray.shape[2] != layout.blockSize ||
       cacheArray.shape[3] != layout.headSize))
    return fail("cache: shape " + cacheArray.shapeString() +
                ", expected (num_blocks, " +
                std::to_string(layout.headsPerRank) + ", " +
                std::to_string(layout.blockSize) + ", " +
                std::to_string(layout.headSize) +
                "): the layer's block size N "
                "is " +
                std::to_string(layout.blockSize) + " (--block-size sets it)");

  // Inputs are read and checked before the (slower) compilation. Checked
  // mode adds a status buffer as the last argument.
  CompileOptions compile;
  compile.checked = true;
  compile.addStatus = true;
  compile.fusion = options.fusion.empty() ? "none" : options.fusion;
  compile.threads = options.threads;
  if (!program.compile(compile, error))
    return fail(error);

  // Buffers for every argument of the function (the others are unused).
  std::vector<std::unique_ptr<Buffer>> storage;
  std::vector<MemRefArg> call(sig.args.size());
  auto bytesOf = [&](size_t bytes) {
    storage.push_back(std::make_unique<Buffer>(bytes));
    return storage.back()->data;
  };
  std::vector<int32_t> qsl32(qsl.begin(), qsl.end()),
      nc32(nc.begin(), nc.end()), bt32(bt.begin(), bt.end());
  for (int64_t v : bt)
    if (v < INT32_MIN || v > INT32_MAX)
      return fail("block_table: entry " + std::to_string(v) +
                  " does not fit int32");
  std::vector<int64_t> status(8, 0);
  std::map<int, int64_t> tokenStride; // of outputs
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const ArgInfo &arg = sig.args[i];
    MemRefArg &m = call[i];
    std::string name = operandName(arg, suffix);
    bool used = names.count(name) && names[name] == static_cast<int>(i);
    size_t rank = arg.shape.size();
    if (!used && arg.role != ArgRole::Status) {
      // Unused by the kept op: an empty (or static-shaped, zeroed) buffer.
      int64_t count = 1;
      m.sizes.assign(rank, 0);
      m.strides.assign(rank, 1);
      for (size_t r = rank; r-- > 0;) {
        m.sizes[r] = arg.shape[r] == kDynamic ? 0 : arg.shape[r];
        m.strides[r] = arg.strides[r] == kDynamic ? count : arg.strides[r];
        count = checkedBytes(count, std::max<int64_t>(1, m.sizes[r]));
      }
      m.offset = arg.offset == kDynamic ? 0 : arg.offset;
      size_t bytes = checkedBytes(count, elementBytes(arg.element));
      if (bytes == 0)
        return fail(operandName(arg, suffix) + ": " + arg.type +
                    ": too large for a replay");
      m.data = bytesOf(bytes);
      continue;
    }
    switch (arg.role) {
    case ArgRole::Cache:
      m.data = bytesOf(cacheBytes);
      std::memcpy(m.data, cacheArray.data.data(), cacheBytes);
      m.sizes = {cacheBytes};
      m.strides = {1};
      break;
    case ArgRole::QueryStartLoc:
      m.data = qsl32.data();
      m.sizes = {B + 1};
      m.strides = {1};
      break;
    case ArgRole::NumComputed:
      m.data = nc32.data();
      m.sizes = {B};
      m.strides = {1};
      break;
    case ArgRole::BlockTable:
      m.data = bt32.data();
      m.sizes = {B, M};
      m.strides = {M, 1};
      break;
    case ArgRole::SlotMapping:
      m.data = slots.data();
      m.sizes = {static_cast<int64_t>(slots.size())};
      m.strides = {1};
      break;
    case ArgRole::TokenSeq:
      m.data = tokenSeq.data();
      m.sizes = {static_cast<int64_t>(tokenSeq.size())};
      m.strides = {1};
      break;
    case ArgRole::Status:
      m.data = status.data();
      m.sizes = {static_cast<int64_t>(status.size())};
      m.strides = {1};
      break;
    case ArgRole::Input:
    case ArgRole::Output: {
      int64_t w = layout.range(*arg.stream).width, row = H * w;
      std::string xName = suffix ? std::string("x_") + streamName(*arg.stream)
                                 : std::string("x");
      int64_t stride = arg.strides[0] == kDynamic ? row : arg.strides[0];
      int64_t offset = arg.offset == kDynamic ? 0 : arg.offset;
      m.offset = offset;
      m.sizes = rank == 3 ? std::vector<int64_t>{T, H, w}
                          : std::vector<int64_t>{T, row};
      m.strides = rank == 3 ? std::vector<int64_t>{stride, w, 1}
                            : std::vector<int64_t>{stride, 1};
      const npy::Array &x = inputs[xName];
      // Exactly (T, H, w) or (T, H*w): a transposed x has the same count.
      if (x.itemBytes != 2 || (x.shape != std::vector<int64_t>{T, H, w} &&
                               x.shape != std::vector<int64_t>{T, row}))
        return fail(xName + ": shape " + x.shapeString() + " of dtype '" +
                    x.dtype + "', expected uint16 (" + std::to_string(T) +
                    ", " + std::to_string(H) + ", " + std::to_string(w) +
                    ") or (" + std::to_string(T) + ", " + std::to_string(row) +
                    ")");
      int64_t elements = 0;
      size_t bytes = stride < row || offset < 0 ||
                             __builtin_mul_overflow(T, stride, &elements) ||
                             __builtin_add_overflow(elements, offset, &elements)
                         ? 0
                         : checkedBytes(elements, 2);
      if (bytes == 0 && T > 0)
        return fail(operandName(arg, suffix) + ": " + arg.type +
                    " with offset " + std::to_string(offset) +
                    " and token stride " + std::to_string(stride) + " for " +
                    std::to_string(T) + " tokens of " + std::to_string(row) +
                    " elements: not a buffer a replay can allocate");
      uint8_t *data = bytesOf(bytes);
      m.data = data;
      if (arg.role == ArgRole::Output) {
        tokenStride[i] = stride;
        break;
      }
      for (int64_t t = 0; t < T; ++t)
        std::memcpy(data + (offset + t * stride) * 2,
                    x.data.data() + t * row * 2, row * 2);
      break;
    }
    case ArgRole::Weights:
    case ArgRole::Bias: {
      int64_t row = H * layout.range(*arg.stream).width;
      bool weights = arg.role == ArgRole::Weights;
      const npy::Array &a = inputs[name];
      std::vector<int64_t> want =
          weights ? std::vector<int64_t>{row, W} : std::vector<int64_t>{row};
      if (a.itemBytes != 2 || a.shape != want) {
        npy::Array shapeOnly;
        shapeOnly.shape = want;
        return fail(name + ": shape " + a.shapeString() + " of dtype '" +
                    a.dtype + "', expected uint16 " + shapeOnly.shapeString());
      }
      m.data = bytesOf(a.data.size());
      std::memcpy(m.data, a.data.data(), a.data.size());
      m.sizes = want;
      m.strides =
          weights ? std::vector<int64_t>{W, 1} : std::vector<int64_t>{1};
      break;
    }
    }
  }

  // The static sizes, strides and offsets of the IR against the tensors,
  // and the alignment contract, before the kernel touches anything.
  if (!program.checkArguments(call, error))
    return fail(error);
  program.invoke(call);
  if (status[0] != 0) {
    return fail(op.name + " (op " + std::to_string(options.opIndex) +
                "): the checked kernel " +
                describeCheckedStatus(status.data()) + "; no output written");
  }

  if (std::error_code ec = llvm::sys::fs::create_directories(options.outputDir))
    return fail("--outputs=" + options.outputDir + ": " + ec.message());
  auto writeArray = [&](const std::string &name, npy::Array array) {
    llvm::SmallString<256> path(options.outputDir);
    llvm::sys::path::append(path, name + ".npy");
    if (!npy::write(std::string(path), array, error))
      return false;
    std::printf("inkling-run: wrote %s (%s, shape %s)\n", path.c_str(),
                array.dtype == "u2" ? "bf16 as uint16" : array.dtype.c_str(),
                array.shapeString().c_str());
    return true;
  };
  for (int out : op.outputs) {
    const ArgInfo &arg = sig.args[out];
    std::string name = operandName(arg, suffix);
    std::string xName =
        suffix ? std::string("x_") + streamName(*arg.stream) : std::string("x");
    int64_t row = H * layout.range(*arg.stream).width;
    npy::Array array;
    array.dtype = "u2";
    array.itemBytes = 2;
    array.shape = inputs[xName].shape;
    array.data.resize(T * row * 2);
    const auto *data = static_cast<const uint8_t *>(call[out].data);
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(array.data.data() + t * row * 2,
                  data + (call[out].offset + t * tokenStride[out]) * 2,
                  row * 2);
    if (!writeArray(name, std::move(array)))
      return fail(error);
  }
  if (op.writesCache) {
    npy::Array array = cacheArray;
    std::memcpy(array.data.data(), call[sig.cache].data, cacheBytes);
    if (!writeArray("cache", std::move(array)))
      return fail(error);
  }
  return 0;
}
