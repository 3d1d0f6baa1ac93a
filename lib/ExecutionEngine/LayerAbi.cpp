//===- LayerAbi.cpp - The layer function's ABI and its validators ---------===//
//
// The shapes a step gives each argument, validateArguments (the argument
// validator) and validateStepMetadata (the metadata validator). Every path
// that calls a layer runs them: the C/Python call (lib/CAPI/Layer.cpp),
// inkling-run's executors and --replay.
//
//===----------------------------------------------------------------------===//

#include "inkling/ExecutionEngine/LayerAbi.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

using namespace inkling;
using namespace inkling::exec;

//===----------------------------------------------------------------------===//
// The signature's questions
//===----------------------------------------------------------------------===//

int64_t ArgInfo::alignment() const {
  bool vectors = element == ElementKind::BF16 || role == ArgRole::Cache;
  return vectors ? 16 : elementBytes(element);
}

bool ArgInfo::written() const {
  return role == ArgRole::Cache || role == ArgRole::Status ||
         role == ArgRole::KvCache || isOutput();
}

bool ArgInfo::perTokenStream() const {
  return role == ArgRole::Input || role == ArgRole::Residual || isOutput();
}

bool ArgInfo::isOutput() const {
  return role == ArgRole::Output || role == ArgRole::Sum ||
         role == ArgRole::Normed;
}

bool ArgInfo::isParameter() const {
  return role == ArgRole::Weights || role == ArgRole::Bias ||
         role == ArgRole::NormWeight;
}

std::string LayerSignature::argName(size_t i) const {
  const ArgInfo &arg = args[i];
  std::string name = argRoleName(arg.role);
  if (arg.stream)
    name += std::string("_") + streamName(*arg.stream);
  return name;
}

std::string LayerSignature::describeArg(size_t i) const {
  return "argument " + std::to_string(i) + " (" + argName(i) + ")";
}

std::vector<int64_t>
LayerSignature::expectedSizes(size_t i, const CallShape &step) const {
  const ArgInfo &arg = args[i];
  int64_t H = layout.headsPerRank, W = layout.slidingWindow;
  int64_t w = arg.stream ? layout.range(*arg.stream).width : 0;
  switch (arg.role) {
  case ArgRole::Cache:
    return {step.cacheBytes};
  case ArgRole::QueryStartLoc:
    return {step.rows + 1};
  case ArgRole::NumComputed:
    return {step.rows};
  case ArgRole::BlockTable:
    return {step.rows, step.cols};
  case ArgRole::SlotMapping:
  case ArgRole::TokenSeq:
  case ArgRole::AttnSlotMapping:
    return {step.tokens};
  case ArgRole::Status:
    return {kStatusWords};
  case ArgRole::Input:
  case ArgRole::Output:
  case ArgRole::Residual:
  case ArgRole::Sum:
  case ArgRole::Normed:
    if (arg.shape.size() == 3)
      return {step.tokens, H, w};
    return {step.tokens, H * w};
  case ArgRole::Weights:
    return {H * w, W};
  case ArgRole::Bias:
    return {H * w};
  case ArgRole::NormWeight:
    return {arg.hiddenRow ? H * w : w};
  case ArgRole::KvCache:
    return {step.kvBlocks, attnBlockSize, H, w};
  }
  return {};
}

std::vector<int64_t>
LayerSignature::expectedStrides(size_t i,
                                const std::vector<int64_t> &sizes) const {
  const ArgInfo &arg = args[i];
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t count = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = d < arg.strides.size() && arg.strides[d] != kDynamic
                     ? arg.strides[d]
                     : count;
    count *= std::max<int64_t>(1, sizes[d]);
  }
  return strides;
}

Status exec::checkThreadCount(int64_t threads) {
  if (threads < 0 || threads > kMaxThreads)
    return invalidArgument("threads=" + std::to_string(threads) +
                           ": expected 0 (every core) to " +
                           std::to_string(kMaxThreads));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// validateArguments
//===----------------------------------------------------------------------===//

namespace {

std::string list(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t d = 0; d < values.size(); ++d)
    text += (d ? ", " : "") +
            (values[d] == kDynamic ? "?" : std::to_string(values[d]));
  return text + "]";
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

/// The bytes an argument's elements occupy: rows of `rowBytes` contiguous
/// bytes, `rows` of them `strideBytes` apart from `first` (one row when the
/// whole argument is contiguous). Exact for the layer's arguments (a
/// contiguous head row per token, dense metadata); an argument with more
/// than one strided dimension is widened to its whole span.
struct Footprint {
  uint64_t first = 0;
  int64_t rows = 0, strideBytes = 0, rowBytes = 0;
  uint64_t end() const { return first + (rows - 1) * strideBytes + rowBytes; }
};

Footprint footprint(const MemRefArg &a, int64_t elementBytes) {
  Footprint f;
  auto base = reinterpret_cast<uint64_t>(a.data) +
              static_cast<uint64_t>(a.offset * elementBytes);
  // The contiguous inner dimensions: a row.
  size_t rank = a.sizes.size();
  int64_t row = 1;
  size_t d = rank;
  while (d > 0 && (a.sizes[d - 1] == 1 || a.strides[d - 1] == row)) {
    row *= a.sizes[d - 1];
    --d;
  }
  f.first = base;
  f.rowBytes = row * elementBytes;
  if (d == 0) {
    f.rows = 1;
    return f;
  }
  // One strided dimension above the row: rows apart. More: the span.
  bool single = true;
  for (size_t e = 0; e + 1 < d; ++e)
    single &= a.sizes[e] == 1;
  if (single) {
    f.rows = a.sizes[d - 1];
    f.strideBytes = a.strides[d - 1] * elementBytes;
    return f;
  }
  int64_t last = 0;
  for (size_t e = 0; e < rank; ++e)
    last += (a.sizes[e] - 1) * a.strides[e];
  f.rows = 1;
  f.rowBytes = (last + 1) * elementBytes;
  return f;
}

/// Whether two footprints share a byte. Rows of one stride (a single row
/// takes the other's): row t of a and row u of b overlap iff -b.rowBytes <
/// d + (u - t) * s < a.rowBytes, d = b.first - a.first; with rows no longer
/// than the stride at most two k = u - t can, next to -d / s. Otherwise
/// (other strides, rows longer than their stride): the spans decide.
bool overlaps(Footprint a, Footprint b) {
  if (a.end() <= b.first || b.end() <= a.first)
    return false;
  if (a.rows == 1)
    a.strideBytes = b.strideBytes;
  if (b.rows == 1)
    b.strideBytes = a.strideBytes;
  int64_t s = a.strideBytes;
  if (s != b.strideBytes || s <= 0 || a.rowBytes > s || b.rowBytes > s)
    return true;
  auto d = static_cast<int64_t>(b.first - a.first);
  int64_t k0 = -d / s;
  for (int64_t k = k0 - 1; k <= k0 + 1; ++k) {
    if (k < 1 - a.rows || k > b.rows - 1)
      continue;
    int64_t gap = d + k * s;
    if (gap > -b.rowBytes && gap < a.rowBytes)
      return true;
  }
  return false;
}

class ArgumentValidator {
public:
  ArgumentValidator(const LayerSignature &sig,
                    const std::vector<MemRefArg> &args)
      : sig_(sig), args_(args) {}

  StatusOr<CallShape> run(int64_t declared) {
    if (args_.size() != sig_.args.size()) {
      size_t extra =
          sig_.args.size() -
          std::min<size_t>(sig_.args.size(),
                           declared < 0 ? sig_.args.size() : declared);
      return invalidArgument("@" + sig_.function + " takes " +
                             std::to_string(sig_.args.size() - extra) +
                             " arguments, got " +
                             std::to_string(args_.size() - extra));
    }
    for (size_t i = 0; i < args_.size(); ++i)
      if (Status s = checkTyped(i); !s)
        return s;
    if (Status s = checkShapes(); !s)
      return s;
    if (Status s = checkOverlaps(); !s)
      return s;
    return step_;
  }

private:
  Status bad(size_t i, const std::string &message) const {
    return invalidArgument(sig_.describeArg(i) + ": " + message);
  }
  bool empty(size_t i) const {
    const std::vector<int64_t> &sizes = args_[i].sizes;
    return std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
  }

  /// Against the argument's memref type: rank, sizes, strides, offset,
  /// alignment.
  Status checkTyped(size_t i) const {
    const ArgInfo &info = sig_.args[i];
    const MemRefArg &a = args_[i];
    size_t rank = info.shape.size();
    if (a.sizes.size() != rank || a.strides.size() != rank)
      return bad(i, "rank " + std::to_string(a.sizes.size()) + ", expected " +
                        std::to_string(rank) + " (" + info.type + ")");
    for (size_t d = 0; d < rank; ++d) {
      if (a.sizes[d] < 0 || a.sizes[d] > kMaxExtent)
        return bad(i, "size " + std::to_string(a.sizes[d]) + " of dim " +
                          std::to_string(d) + " is out of range");
      if (info.shape[d] != kDynamic && a.sizes[d] != info.shape[d])
        return bad(i, "shape " + list(a.sizes) + ", expected " +
                          list(info.shape) + " (" + info.type + ")");
    }
    // An empty array reads and writes nothing: its strides, offset and
    // pointer are never used (numpy gives zero-size arrays stride 0).
    if (empty(i))
      return Status::ok();
    for (size_t d = 0; d < rank; ++d) {
      if (a.sizes[d] == 1)
        continue; // the stride of a size-1 dim is never used
      bool ok = info.strides[d] == kDynamic
                    ? a.strides[d] >= 1 && a.strides[d] <= kMaxExtent
                    : a.strides[d] == info.strides[d];
      if (!ok)
        return bad(i, "strides " + list(a.strides) + ", expected " +
                          list(info.strides) + " (" + info.type + ")");
    }
    if (info.offset != kDynamic ? a.offset != info.offset
                                : a.offset < 0 || a.offset > kMaxExtent)
      return bad(i,
                 "offset " + std::to_string(a.offset) + ", expected " +
                     (info.offset == kDynamic ? std::string("[0, 2^40]")
                                              : std::to_string(info.offset)) +
                     " (" + info.type + ")");
    if (!a.data)
      return bad(i, "null data");
    auto address = reinterpret_cast<uint64_t>(a.data);
    int64_t align = info.alignment();
    if (address % align != 0)
      return bad(i, "data at " + hex(address) + " is not " +
                        std::to_string(align) + "-byte aligned" +
                        (align == 16 ? " (the kernels' vector accesses "
                                       "assume a 16-byte aligned base)"
                                     : ""));
    return Status::ok();
  }

  int64_t size(int i, size_t d) const { return args_[i].sizes[d]; }

  /// Sizes that must agree between arguments: T, B, the layout's H, w, W.
  Status checkShapes() {
    const Layout &layout = sig_.layout;
    int tokensFrom = -1, kvFrom = -1;
    for (size_t i = 0; i < args_.size(); ++i) {
      const ArgInfo &info = sig_.args[i];
      bool perToken = info.perTokenStream(), kv = info.role == ArgRole::KvCache;
      if (!perToken && !kv && !info.isParameter())
        continue;
      CallShape step;
      step.tokens = perToken ? args_[i].sizes[0] : 0;
      step.kvBlocks = kv ? args_[i].sizes[0] : 0;
      std::vector<int64_t> want = sig_.expectedSizes(i, step);
      if (args_[i].sizes != want)
        return bad(
            i, "shape " + list(args_[i].sizes) + ", expected " + list(want) +
                   " (H = " + std::to_string(layout.headsPerRank) +
                   ", w = " + std::to_string(layout.range(*info.stream).width) +
                   (kv ? ", attention block size " +
                             std::to_string(sig_.attnBlockSize)
                       : ", W = " + std::to_string(layout.slidingWindow)) +
                   ")");
      if (kv) {
        // The K and V caches of one attention layer: one geometry, one
        // slot space.
        if (kvFrom < 0) {
          step_.kvBlocks = args_[i].sizes[0];
          kvFrom = static_cast<int>(i);
        } else if (args_[i].sizes[0] != step_.kvBlocks) {
          return bad(i, std::to_string(args_[i].sizes[0]) + " blocks, but " +
                            sig_.describeArg(kvFrom) + " has " +
                            std::to_string(step_.kvBlocks) +
                            " (one slot mapping addresses both)");
        }
        continue;
      }
      if (!perToken)
        continue;
      if (tokensFrom < 0) {
        step_.tokens = args_[i].sizes[0];
        tokensFrom = static_cast<int>(i);
      } else if (args_[i].sizes[0] != step_.tokens) {
        return bad(i, std::to_string(args_[i].sizes[0]) + " tokens, but " +
                          sig_.describeArg(tokensFrom) + " has " +
                          std::to_string(step_.tokens));
      }
    }
    int qsl = sig_.queryStartLoc, nc = sig_.numComputed,
        table = sig_.blockTable, slots = sig_.slotMapping;
    if (size(qsl, 0) < 1)
      return bad(qsl, "empty: it needs B + 1 >= 1 entries");
    step_.rows = size(qsl, 0) - 1;
    std::string rowsFrom = sig_.describeArg(qsl) +
                           " has B + 1 = " + std::to_string(step_.rows + 1);
    if (size(nc, 0) != step_.rows)
      return bad(nc, std::to_string(size(nc, 0)) + " entries, but " + rowsFrom);
    if (size(table, 0) != step_.rows)
      return bad(table,
                 std::to_string(size(table, 0)) + " rows, but " + rowsFrom);
    step_.cols = size(table, 1);
    for (int perToken : {slots, sig_.tokenSeq, sig_.attnSlotMapping})
      if (perToken >= 0 && size(perToken, 0) < step_.tokens)
        return bad(perToken, std::to_string(size(perToken, 0)) +
                                 " entries, fewer than the " +
                                 std::to_string(step_.tokens) +
                                 " tokens of the inputs");
    step_.cacheBytes = size(sig_.cache, 0);
    int64_t page = layout.pageBytes();
    if (step_.cacheBytes < page)
      return bad(sig_.cache, std::to_string(step_.cacheBytes) +
                                 " bytes, less than one page (" +
                                 std::to_string(page) + " bytes)");
    step_.numBlocks = layout.blocksInBuffer(step_.cacheBytes, sig_.pageBytes);
    if (sig_.status >= 0 && size(sig_.status, 0) < kStatusWords)
      return bad(sig_.status, std::to_string(size(sig_.status, 0)) +
                                  " entries, fewer than " +
                                  std::to_string(kStatusWords));
    return Status::ok();
  }

  /// No two buffers share a byte where either is written: a kernel would
  /// read what it wrote (x overwritten by its output; history rows by an
  /// input), or two outputs would race.
  Status checkOverlaps() const {
    std::vector<Footprint> prints(args_.size());
    for (size_t i = 0; i < args_.size(); ++i) {
      if (empty(i))
        continue;
      prints[i] = footprint(args_[i], elementBytes(sig_.args[i].element));
      const Footprint &f = prints[i];
      if (sig_.args[i].written() && f.rows > 1 && f.strideBytes < f.rowBytes)
        return bad(i, "its rows overlap (" + std::to_string(f.rowBytes) +
                          " bytes each, " + std::to_string(f.strideBytes) +
                          " apart); the layer writes it");
    }
    for (size_t i = 0; i < args_.size(); ++i)
      for (size_t j = i + 1; j < args_.size(); ++j) {
        if (empty(i) || empty(j) ||
            !(sig_.args[i].written() || sig_.args[j].written()) ||
            !overlaps(prints[i], prints[j]))
          continue;
        return bad(
            j,
            "overlaps " + sig_.describeArg(i) + " (bytes [" +
                hex(prints[j].first) + ", " + hex(prints[j].end()) + ") and [" +
                hex(prints[i].first) + ", " + hex(prints[i].end()) + ")); " +
                (sig_.args[j].written() ? sig_.argName(j) : sig_.argName(i)) +
                " is written by the layer");
      }
    return Status::ok();
  }

  const LayerSignature &sig_;
  const std::vector<MemRefArg> &args_;
  CallShape step_;
};

} // namespace

StatusOr<CallShape> exec::validateArguments(const LayerSignature &sig,
                                            const std::vector<MemRefArg> &args,
                                            int64_t declared) {
  return ArgumentValidator(sig, args).run(declared);
}

//===----------------------------------------------------------------------===//
// validateStepMetadata
//===----------------------------------------------------------------------===//

namespace {

template <typename T> T at(const MemRefArg &a, int64_t i, int64_t j = 0) {
  int64_t index = a.offset + i * a.strides[0] +
                  (a.strides.size() > 1 ? j * a.strides[1] : 0);
  return static_cast<const T *>(a.data)[index];
}

/// Every token's slot (padding included) -1 or below `limit`; no slot
/// stored by two of the first `real` tokens (a race between two stores).
Status checkSlots(const LayerSignature &sig, int index, const MemRefArg &slots,
                  int64_t tokens, int64_t real, int64_t limit,
                  const std::string &what) {
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t slot = at<int64_t>(slots, t);
    if (slot < -1 || slot >= limit)
      return invalidArgument(sig.describeArg(index) + "[" + std::to_string(t) +
                             "] = " + std::to_string(slot) +
                             ": not -1 or a slot of " + what);
  }
  std::vector<std::pair<int64_t, int64_t>> stored; // (slot, token)
  stored.reserve(real);
  for (int64_t t = 0; t < real; ++t)
    if (int64_t slot = at<int64_t>(slots, t); slot >= 0)
      stored.emplace_back(slot, t);
  std::sort(stored.begin(), stored.end());
  for (size_t k = 1; k < stored.size(); ++k)
    if (stored[k].first == stored[k - 1].first)
      return invalidArgument(
          sig.describeArg(index) + ": slot " + std::to_string(stored[k].first) +
          " appears for tokens " + std::to_string(stored[k - 1].second) +
          " and " + std::to_string(stored[k].second) +
          " (each token stores its own row)");
  return Status::ok();
}

/// The attention slot mapping against the KV caches. sconv.kv_write skips
/// a slot outside them (memory-safe without checked mode), but a host that
/// passes one loses the row: refused here like a bad conv-cache slot.
Status checkAttentionSlots(const LayerSignature &sig,
                           const std::vector<MemRefArg> &args,
                           const CallShape &step) {
  int index = sig.attnSlotMapping;
  if (index < 0)
    return Status::ok();
  int64_t rows = step.rows;
  int64_t real = rows > 0 ? at<int32_t>(args[sig.queryStartLoc], rows) : 0;
  int64_t bs = sig.attnBlockSize;
  return checkSlots(sig, index, args[index], step.tokens, real,
                    step.kvBlocks * bs,
                    "the KV caches (" + std::to_string(step.kvBlocks) +
                        " blocks of " + std::to_string(bs) + ")");
}

} // namespace

Status exec::validateStepMetadata(const LayerSignature &sig,
                                  const std::vector<MemRefArg> &args,
                                  const CallShape &step) {
  int64_t N = sig.layout.blockSize, W = sig.layout.slidingWindow;
  int64_t tokens = step.tokens, rows = step.rows, numBlocks = step.numBlocks;
  const MemRefArg &qsl = args[sig.queryStartLoc], &nc = args[sig.numComputed],
                  &table = args[sig.blockTable], &slots = args[sig.slotMapping];
  auto entry = [&](int index, int64_t i) {
    return sig.describeArg(index) + "[" + std::to_string(i) + "]";
  };
  if (int32_t first = at<int32_t>(qsl, 0); first != 0)
    return invalidArgument(entry(sig.queryStartLoc, 0) + " = " +
                           std::to_string(first) + ", expected 0");
  for (int64_t b = 0; b < rows; ++b) {
    int64_t begin = at<int32_t>(qsl, b), end = at<int32_t>(qsl, b + 1);
    if (end < begin || end > tokens)
      return invalidArgument(
          entry(sig.queryStartLoc, b + 1) + " = " + std::to_string(end) +
          ": must be in [" + std::to_string(begin) + ", " +
          std::to_string(tokens) + "] (non-decreasing, at most T)");
    int64_t computed = at<int32_t>(nc, b);
    if (computed < 0)
      return invalidArgument(entry(sig.numComputed, b) + " = " +
                             std::to_string(computed) + " is negative");
    if (begin == end)
      continue;
    // History taps: positions [computed - (W-1), computed).
    for (int64_t q = std::max<int64_t>(0, computed - (W - 1)); q < computed;
         ++q) {
      int64_t j = q / N;
      if (j >= step.cols)
        return invalidArgument(
            sig.describeArg(sig.blockTable) + ": row " + std::to_string(b) +
            " has " + std::to_string(step.cols) + " columns, but position " +
            std::to_string(q) + " of its history is in logical block " +
            std::to_string(j));
      int64_t block = at<int32_t>(table, b, j);
      if (block < 0 || block >= numBlocks)
        return invalidArgument(sig.describeArg(sig.blockTable) + "[" +
                               std::to_string(b) + "][" + std::to_string(j) +
                               "] = " + std::to_string(block) +
                               ": not a block of the cache (" +
                               std::to_string(numBlocks) + " blocks)");
    }
  }
  // Every token's slot, padding included: nothing here relies on how a
  // kernel treats tokens past qsl[B]. Each real token stores its own row: a
  // slot stored twice in one step is a race between the two stores (on a
  // GPU they run at once). Padding tokens store nothing.
  int64_t real = rows > 0 ? at<int32_t>(qsl, rows) : 0;
  if (Status s =
          checkSlots(sig, sig.slotMapping, slots, tokens, real, numBlocks * N,
                     "the cache (" + std::to_string(numBlocks) + " blocks of " +
                         std::to_string(N) + ")");
      !s)
    return s;
  if (Status s = checkAttentionSlots(sig, args, step); !s)
    return s;
  // A real token's token_seq entry indexes the metadata unchecked in the
  // kernels: it must be the token's own sequence. Padding entries are not
  // read.
  if (int seq = sig.tokenSeq; seq >= 0)
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t t = at<int32_t>(qsl, b), end = at<int32_t>(qsl, b + 1);
           t < end; ++t)
        if (int64_t s = at<int32_t>(args[seq], t); s != b)
          return invalidArgument(entry(seq, t) + " = " + std::to_string(s) +
                                 ": token " + std::to_string(t) +
                                 " is in sequence " + std::to_string(b) + " (" +
                                 sig.describeArg(sig.queryStartLoc) + ")");
  return Status::ok();
}

Status exec::validateHostCall(const LayerSignature &sig,
                              const std::vector<MemRefArg> &args,
                              int64_t declared) {
  auto step = validateArguments(sig, args, declared);
  if (!step)
    return step.status();
  return validateStepMetadata(sig, args, *step);
}

std::string exec::describeCheckedStatus(const int64_t status[5]) {
  // Indexed by the kind (CheckKind,
  // inkling/Conversion/SConvToLoops/StepMetadata.h).
  static const char *kinds[] = {
      "?",        "slot",
      "block id", "logical block beyond the block table",
      "slot",     "token_seq entry"};
  int64_t kind = status[1] >= 0 && status[1] <= 5 ? status[1] : 0;
  std::string limit =
      kind == 4 ? ", not its own slot block_table[b][p / N] * N + p % N = "
                : ", limit ";
  return "rejected " + std::to_string(status[0]) +
         " accesses (first: " + kinds[kind] + " " + std::to_string(status[3]) +
         " of token " + std::to_string(status[2]) + limit +
         std::to_string(status[4]) + ")";
}
