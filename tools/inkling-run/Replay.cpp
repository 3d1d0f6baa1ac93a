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
  case ArgRole::KvCache:
  case ArgRole::NormWeight:
  case ArgRole::Residual:
  case ArgRole::Sum:
  case ArgRole::Normed:
    name = argRoleName(arg.role);
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

/// One replay, step by step; each step returns 0 or the exit code of a
/// printed error.
class Replayer {
public:
  Replayer(LayerProgram &program, const ReplayOptions &options)
      : program_(program), options_(options) {}

  int run();

private:
  /// Keeps only the op; its operands by name.
  int selectOp();
  /// The .npy files of --inputs, one per input of the op.
  int readInputs();
  /// query_start_loc, num_computed, block_table, slot_mapping and token_seq,
  /// checked against each other; T and M.
  int readMetadata();
  /// The cache: whole pages of the layer's geometry.
  int checkCacheArray();
  /// One buffer and descriptor per argument of the function.
  int bindArguments();
  int bindUnused(size_t i, const ArgInfo &arg, MemRefArg &m);
  int bindStream(size_t i, const ArgInfo &arg, MemRefArg &m);
  int bindKvCache(const ArgInfo &arg, const std::string &name, MemRefArg &m);
  int bindParam(size_t i, const std::string &name, MemRefArg &m);
  int invoke();
  int writeOutputs();
  bool writeArray(const std::string &name, npy::Array array);

  uint8_t *bytesOf(size_t bytes) {
    storage_.push_back(std::make_unique<Buffer>(bytes));
    return storage_.back()->data;
  }
  std::string xName(const ArgInfo &arg) const {
    return suffix_ ? std::string("x_") + streamName(*arg.stream)
                   : std::string("x");
  }
  /// The name argument i has in the kept op: a sum an earlier op wrote
  /// that this one reads (the MLP's h1) is its "residual".
  std::string nameOf(size_t i) const {
    const ArgInfo &arg = sig_->args[i];
    if (arg.role == ArgRole::Sum && !writtenSums_.count(static_cast<int>(i)))
      return "residual";
    return operandName(arg, suffix_);
  }

  LayerProgram &program_;
  const ReplayOptions &options_;
  const LayerSignature *sig_ = nullptr;
  OpInfo op_;
  int64_t H_ = 0, W_ = 0;
  std::string error_;

  // The op's operands by name.
  bool suffix_ = false;
  std::map<std::string, int> names_;
  std::set<std::string> outputNames_;
  std::string expected_;
  std::map<std::string, npy::Array> inputs_;

  // Metadata.
  std::vector<int64_t> qsl_, nc_, bt_, slots_;
  std::vector<int32_t> tokenSeq_;
  int64_t B_ = 0, T_ = 0, M_ = 0;
  int64_t cacheBytes_ = 0;

  std::vector<std::unique_ptr<Buffer>> storage_;
  std::vector<MemRefArg> call_;
  std::vector<int32_t> qsl32_, nc32_, bt32_;
  std::vector<int64_t> status_;
  std::map<int, int64_t> tokenStride_; // of outputs
  // Epilogues: the sums and normed rows the kept op writes, the KV caches'
  // block count and the attention slots.
  std::set<int> writtenSums_;
  std::vector<int> epilogueOutputs_;
  int64_t kvBlocks_ = 0;
  std::vector<int64_t> attnSlots_;
};

} // namespace

int Replayer::run() {
  // Each stage returns 0 or the exit code of a printed error.
  for (int (Replayer::*stage)() :
       {&Replayer::selectOp, &Replayer::readInputs, &Replayer::readMetadata,
        &Replayer::checkCacheArray})
    if (int rc = (this->*stage)())
      return rc;
  // Inputs are read and checked before the (slower) compilation. Checked
  // mode adds a status buffer as the last argument.
  CompileOptions compile;
  compile.checked = true;
  compile.addStatus = true;
  compile.fusion = options_.fusion.empty() ? "none" : options_.fusion;
  compile.threads = options_.threads;
  if (llvm::Error e = program_.compile(compile))
    return fail(llvm::toString(std::move(e)));
  if (int rc = bindArguments())
    return rc;
  if (int rc = invoke())
    return rc;
  return writeOutputs();
}

int Replayer::selectOp() {
  const LayerSignature &before = program_.signature();
  if (llvm::Error e = program_.keepOnlyOp(options_.opIndex))
    return fail(llvm::toString(std::move(e)));
  op_ = before.ops[options_.opIndex];
  sig_ = &program_.signature();
  H_ = sig_->layout.headsPerRank;
  W_ = sig_->layout.config.kernel;
  suffix_ = op_.streams.size() > 1;
  for (int index : op_.epilogues) {
    const EpilogueInfo &e = sig_->epilogues[index];
    if (e.kind != EpilogueInfo::Kind::AddNorm)
      continue;
    writtenSums_.insert(e.sum);
    epilogueOutputs_.push_back(e.sum);
    epilogueOutputs_.push_back(e.out);
  }
  for (int arg : op_.arguments)
    names_[nameOf(arg)] = arg;
  for (int arg : op_.outputs)
    outputNames_.insert(nameOf(arg));
  for (int arg : epilogueOutputs_)
    outputNames_.insert(nameOf(arg));
  for (const auto &[name, arg] : names_)
    if (!outputNames_.count(name) && name != "status")
      expected_ += (expected_.empty() ? "" : ", ") + name;
  return 0;
}

int Replayer::readInputs() {
  for (const std::string &item : options_.inputs) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--inputs: '" + item + "' is not name=file.npy");
    std::string name = item.substr(0, eq), path = item.substr(eq + 1);
    if (!names_.count(name) || outputNames_.count(name) || name == "status")
      return fail("--inputs: " + op_.name + " (op " +
                  std::to_string(options_.opIndex) + ") has no input named '" +
                  name + "' (inputs: " + expected_ + ")");
    if (inputs_.count(name))
      return fail("--inputs: '" + name + "' is given twice");
    npy::Array array;
    if (!npy::read(path, array, error_))
      return fail(error_);
    inputs_[name] = std::move(array);
  }
  for (const auto &[name, arg] : names_)
    if (!outputNames_.count(name) && name != "status" && !inputs_.count(name))
      return fail("--inputs: missing '" + name + "' (" + op_.name + " op " +
                  std::to_string(options_.opIndex) +
                  " reads it; inputs: " + expected_ + ")");
  return 0;
}

int Replayer::readMetadata() {
  // The arrays as the layer's int32/int64 buffers; what their values must
  // be is the ABI's check (validateHostCall, before the call).
  auto meta = [&](const char *name, std::vector<int64_t> &out, size_t rank) {
    const npy::Array &a = inputs_[name];
    if (a.shape.size() != rank) {
      error_ = std::string(name) + ": shape " + a.shapeString() +
               ", expected " + std::to_string(rank) + " dimension" +
               (rank > 1 ? "s" : "");
      return false;
    }
    return integers(name, a, out, error_);
  };
  if (!meta("query_start_loc", qsl_, 1) || !meta("num_computed", nc_, 1) ||
      !meta("block_table", bt_, 2) || !meta("slot_mapping", slots_, 1))
    return fail(error_);
  auto fitInt32 = [&](const char *name, const std::vector<int64_t> &values) {
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] < INT32_MIN || values[i] > INT32_MAX) {
        error_ = std::string(name) + "[" + std::to_string(i) + "] is " +
                 std::to_string(values[i]) + ": does not fit int32";
        return false;
      }
    return true;
  };
  if (!fitInt32("query_start_loc", qsl_) || !fitInt32("num_computed", nc_) ||
      !fitInt32("block_table", bt_))
    return fail(error_);
  B_ = std::max<int64_t>(0, static_cast<int64_t>(qsl_.size()) - 1);
  M_ = inputs_["block_table"].shape[1];
  // T: the rows of the inputs (tokens at or past qsl[B] are padding);
  // without an input, qsl[B]. The metadata's agreement with it is the
  // ABI's check.
  int64_t T = -1;
  for (const auto &[name, array] : inputs_)
    if ((name == "x" || name.rfind("x_", 0) == 0) && !array.shape.empty())
      T = std::max(T, array.shape[0]);
  if (T < 0)
    T = qsl_.empty() ? 0 : std::max<int64_t>(0, qsl_.back());
  T_ = T;
  if (names_.count("token_seq")) {
    std::vector<int64_t> entries;
    if (!meta("token_seq", entries, 1) || !fitInt32("token_seq", entries))
      return fail(error_);
    tokenSeq_.assign(entries.begin(), entries.end());
  }
  if (names_.count("attn_slot_mapping") &&
      !meta("attn_slot_mapping", attnSlots_, 1))
    return fail(error_);
  // The KV caches' blocks (the validator checks that K and V agree).
  for (const auto &[name, arg] : names_)
    if (sig_->args[arg].role == ArgRole::KvCache &&
        !inputs_[name].shape.empty())
      kvBlocks_ = inputs_[name].shape[0];
  return 0;
}

int Replayer::checkCacheArray() {
  const LayerSignature &sig = *sig_;
  const Layout &layout = sig.layout;
  const npy::Array &cacheArray = inputs_["cache"];
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
  cacheBytes_ = cacheBytes;
  return 0;
}

int Replayer::bindArguments() {
  const LayerSignature &sig = *sig_;
  // Buffers for every argument of the function (the others are unused).
  call_.assign(sig.args.size(), MemRefArg());
  qsl32_.assign(qsl_.begin(), qsl_.end());
  nc32_.assign(nc_.begin(), nc_.end());
  bt32_.assign(bt_.begin(), bt_.end());
  status_.assign(8, 0);
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const ArgInfo &arg = sig.args[i];
    MemRefArg &m = call_[i];
    std::string name = nameOf(i);
    bool used = names_.count(name) && names_[name] == static_cast<int>(i);
    int rc = 0;
    if (!used && arg.role != ArgRole::Status) {
      rc = bindUnused(i, arg, m);
    } else {
      switch (arg.role) {
      case ArgRole::Cache:
        denseArg(m, bytesOf(cacheBytes_), {cacheBytes_});
        std::memcpy(m.data, inputs_["cache"].data.data(), cacheBytes_);
        break;
      case ArgRole::QueryStartLoc:
        denseArg(m, qsl32_.data(), {static_cast<int64_t>(qsl_.size())});
        break;
      case ArgRole::NumComputed:
        denseArg(m, nc32_.data(), {static_cast<int64_t>(nc_.size())});
        break;
      case ArgRole::BlockTable:
        denseArg(m, bt32_.data(), {inputs_["block_table"].shape[0], M_});
        break;
      case ArgRole::SlotMapping:
        denseArg(m, slots_.data(), {static_cast<int64_t>(slots_.size())});
        break;
      case ArgRole::TokenSeq:
        denseArg(m, tokenSeq_.data(), {static_cast<int64_t>(tokenSeq_.size())});
        break;
      case ArgRole::Status:
        denseArg(m, status_.data(), {static_cast<int64_t>(status_.size())});
        break;
      case ArgRole::Input:
      case ArgRole::Output:
      case ArgRole::Residual:
      case ArgRole::Sum:
      case ArgRole::Normed:
        rc = bindStream(i, arg, m);
        break;
      case ArgRole::Weights:
      case ArgRole::Bias:
      case ArgRole::NormWeight:
        rc = bindParam(i, name, m);
        break;
      case ArgRole::KvCache:
        rc = bindKvCache(arg, name, m);
        break;
      case ArgRole::AttnSlotMapping:
        denseArg(m, attnSlots_.data(),
                 {static_cast<int64_t>(attnSlots_.size())});
        break;
      }
    }
    if (rc)
      return rc;
  }
  return 0;
}

int Replayer::bindUnused(size_t i, const ArgInfo &arg, MemRefArg &m) {
  // Unused by the kept op: a zeroed buffer of the step's shape (the ABI's;
  // the type's static sizes where it has them).
  CallShape step;
  step.tokens = T_;
  step.rows = B_;
  step.cols = M_;
  step.cacheBytes = cacheBytes_;
  step.kvBlocks = kvBlocks_;
  m.sizes = sig_->expectedSizes(i, step);
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (arg.shape[d] != kDynamic)
      m.sizes[d] = arg.shape[d];
  m.strides = sig_->expectedStrides(i, m.sizes);
  m.offset = arg.offset == kDynamic ? 0 : arg.offset;
  int64_t count = m.offset + 1, reach = 0;
  bool overflow = false;
  for (size_t d = 0; d < m.sizes.size(); ++d)
    overflow |= __builtin_mul_overflow(std::max<int64_t>(0, m.sizes[d] - 1),
                                       m.strides[d], &reach) ||
                __builtin_add_overflow(count, reach, &count);
  size_t bytes = overflow ? 0 : checkedBytes(count, elementBytes(arg.element));
  if (bytes == 0)
    return fail(operandName(arg, suffix_) + ": " + arg.type +
                ": too large for a replay");
  m.data = bytesOf(bytes);
  // Attention slots that store nothing (zeros would be slot 0).
  if (arg.role == ArgRole::AttnSlotMapping)
    std::memset(m.data, 0xff, bytes);
  return 0;
}

int Replayer::bindStream(size_t i, const ArgInfo &arg, MemRefArg &m) {
  const Layout &layout = sig_->layout;
  int64_t H = H_, T = T_;
  size_t rank = arg.shape.size();
  int64_t w = layout.range(*arg.stream).width, row = H * w;
  // The tensor that gives T and the row shape: the stream's x, or the
  // residual the op reads.
  std::string xName = nameOf(i) == "residual" ? nameOf(i) : this->xName(arg);
  int64_t stride = arg.strides[0] == kDynamic ? row : arg.strides[0];
  int64_t offset = arg.offset == kDynamic ? 0 : arg.offset;
  m.offset = offset;
  m.sizes =
      rank == 3 ? std::vector<int64_t>{T, H, w} : std::vector<int64_t>{T, row};
  m.strides = rank == 3 ? std::vector<int64_t>{stride, w, 1}
                        : std::vector<int64_t>{stride, 1};
  const npy::Array &x = inputs_[xName];
  // Exactly (T, H, w) or (T, H*w): a transposed x has the same count.
  if (x.itemBytes != 2 || (x.shape != std::vector<int64_t>{T, H, w} &&
                           x.shape != std::vector<int64_t>{T, row}))
    return fail(xName + ": shape " + x.shapeString() + " of dtype '" + x.dtype +
                "', expected uint16 (" + std::to_string(T) + ", " +
                std::to_string(H) + ", " + std::to_string(w) + ") or (" +
                std::to_string(T) + ", " + std::to_string(row) + ")");
  int64_t elements = 0;
  size_t bytes = stride < row || offset < 0 ||
                         __builtin_mul_overflow(T, stride, &elements) ||
                         __builtin_add_overflow(elements, offset, &elements)
                     ? 0
                     : checkedBytes(elements, 2);
  if (bytes == 0 && T > 0)
    return fail(operandName(arg, suffix_) + ": " + arg.type + " with offset " +
                std::to_string(offset) + " and token stride " +
                std::to_string(stride) + " for " + std::to_string(T) +
                " tokens of " + std::to_string(row) +
                " elements: not a buffer a replay can allocate");
  uint8_t *data = bytesOf(bytes);
  m.data = data;
  if (outputNames_.count(nameOf(i))) {
    tokenStride_[i] = stride;
    return 0;
  }
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(data + (offset + t * stride) * 2, x.data.data() + t * row * 2,
                row * 2);
  return 0;
}

int Replayer::bindParam(size_t i, const std::string &name, MemRefArg &m) {
  const npy::Array &a = inputs_[name];
  std::vector<int64_t> want = sig_->expectedSizes(i, CallShape());
  if (a.itemBytes != 2 || a.shape != want) {
    npy::Array shapeOnly;
    shapeOnly.shape = want;
    return fail(name + ": shape " + a.shapeString() + " of dtype '" + a.dtype +
                "', expected uint16 " + shapeOnly.shapeString());
  }
  denseArg(m, bytesOf(a.data.size()), want);
  std::memcpy(m.data, a.data.data(), a.data.size());
  return 0;
}

int Replayer::bindKvCache(const ArgInfo &arg, const std::string &name,
                          MemRefArg &m) {
  // (num_blocks, block_size, H, w) uint16, dense; bound at the type's block
  // stride.
  const npy::Array &a = inputs_[name];
  const Layout &layout = sig_->layout;
  int64_t w = layout.range(*arg.stream).width, bs = sig_->attnBlockSize;
  std::vector<int64_t> want = {kvBlocks_, bs, H_, w};
  if (a.itemBytes != 2 || a.shape != want) {
    npy::Array shapeOnly;
    shapeOnly.shape = want;
    shapeOnly.shape[0] = -1;
    std::string shape = shapeOnly.shapeString();
    shape.replace(shape.find("-1"), 2, "num_blocks");
    return fail(name + ": shape " + a.shapeString() + " of dtype '" + a.dtype +
                "', expected uint16 " + shape +
                " (the attention layer's NHD cache)");
  }
  m.sizes = want;
  m.strides = sig_->expectedStrides(
      static_cast<size_t>(&arg - sig_->args.data()), want);
  m.offset = 0;
  int64_t block = bs * H_ * w, stride = m.strides[0];
  size_t bytes = kvBlocks_ == 0 ? 2 : checkedBytes(kvBlocks_ * stride, 2);
  if (bytes == 0 || stride < block)
    return fail(name + ": " + arg.type + ": too large for a replay");
  auto *data = bytesOf(bytes);
  for (int64_t b = 0; b < kvBlocks_; ++b)
    std::memcpy(data + b * stride * 2, a.data.data() + b * block * 2,
                block * 2);
  m.data = data;
  return 0;
}

int Replayer::invoke() {
  // The layer ABI's checks (LayerAbi.h) before the kernel touches
  // anything: the IR's static sizes, strides and offsets against the
  // tensors, the alignment contract, overlaps and the metadata's values.
  if (Status s = validateHostCall(*sig_, call_); !s)
    return fail(s.message());
  program_.invoke(call_);
  if (status_[0] != 0) {
    return fail(op_.name + " (op " + std::to_string(options_.opIndex) +
                "): the checked kernel " +
                describeCheckedStatus(status_.data()) + "; no output written");
  }
  return 0;
}

bool Replayer::writeArray(const std::string &name, npy::Array array) {
  llvm::SmallString<256> path(options_.outputDir);
  llvm::sys::path::append(path, name + ".npy");
  if (!npy::write(std::string(path), array, error_))
    return false;
  std::printf("inkling-run: wrote %s (%s, shape %s)\n", path.c_str(),
              array.dtype == "u2" ? "bf16 as uint16" : array.dtype.c_str(),
              array.shapeString().c_str());
  return true;
}

int Replayer::writeOutputs() {
  if (std::error_code ec = llvm::sys::fs::create_directory(options_.outputDir))
    return fail("--outputs=" + options_.outputDir + ": " + ec.message());
  const LayerSignature &sig = *sig_;
  std::vector<int> outputs = op_.outputs;
  outputs.insert(outputs.end(), epilogueOutputs_.begin(),
                 epilogueOutputs_.end());
  for (int out : outputs) {
    const ArgInfo &arg = sig.args[out];
    int64_t w = sig.layout.range(*arg.stream).width, row = H_ * w;
    npy::Array array;
    array.dtype = "u2";
    array.itemBytes = 2;
    array.shape = arg.shape.size() == 3 ? std::vector<int64_t>{T_, H_, w}
                                        : std::vector<int64_t>{T_, row};
    array.data.resize(T_ * row * 2);
    const auto *data = static_cast<const uint8_t *>(call_[out].data);
    for (int64_t t = 0; t < T_; ++t)
      std::memcpy(array.data.data() + t * row * 2,
                  data + (call_[out].offset + t * tokenStride_[out]) * 2,
                  row * 2);
    if (!writeArray(nameOf(out), std::move(array)))
      return fail(error_);
  }
  // The KV caches the op's epilogues stored into, dense as they came.
  for (const auto &[name, arg] : names_) {
    if (sig.args[arg].role != ArgRole::KvCache)
      continue;
    npy::Array array = inputs_[name];
    const MemRefArg &m = call_[arg];
    int64_t block = m.sizes[1] * m.sizes[2] * m.sizes[3];
    for (int64_t b = 0; b < kvBlocks_; ++b)
      std::memcpy(array.data.data() + b * block * 2,
                  static_cast<const uint8_t *>(m.data) + b * m.strides[0] * 2,
                  block * 2);
    if (!writeArray(name, std::move(array)))
      return fail(error_);
  }
  if (op_.writesCache) {
    npy::Array array = inputs_["cache"];
    std::memcpy(array.data.data(), call_[sig.cache].data, cacheBytes_);
    if (!writeArray("cache", std::move(array)))
      return fail(error_);
  }
  return 0;
}

int run::replay(LayerProgram &program, const ReplayOptions &options) {
  return Replayer(program, options).run();
}
