//===- Checker.cpp - inkling-run's full-history reference checks ----------===//

#include "Checker.h"

#include "inkling/Runtime/EpilogueReference.h"
#include "inkling/Runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace inkling;
using namespace inkling::exec;
using namespace inkling::run;

namespace {

//===----------------------------------------------------------------------===//
// bf16 and the reference
//===----------------------------------------------------------------------===//

inline float bf16ToFloat(uint16_t bits) { return reference::bf16ToFloat(bits); }

/// The expected outputs of one token of one conv: the runtime's reference
/// (docs/Design.md section 4). `weights` is [W][row] (transposed), `taps[j]`
/// the input row at position p - (W-1) + j (zeros before position 0).
void expectedRow(const uint16_t *const *taps, int64_t W, const float *weights,
                 const float *bias, bool silu, const uint16_t *residual,
                 int64_t row, float *acc, uint16_t *out) {
  reference::referenceConvRow(taps, W, weights, bias, silu, residual, row, acc,
                              out);
}

std::string hex16(uint16_t bits) {
  char text[48];
  std::snprintf(text, sizeof(text), "0x%04x (%g)", bits, bf16ToFloat(bits));
  return text;
}

} // namespace

FaultPlan FaultPlan::parse(const std::string &text) {
  FaultPlan plan;
  if (text.empty())
    return plan;
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  plan.kind = kind == "cache"     ? Kind::Cache
              : kind == "input"   ? Kind::Input
              : kind == "padding" ? Kind::Padding
              : kind == "kv"      ? Kind::Kv
              : kind == "normed"  ? Kind::Normed
                                  : Kind::Output;
  plan.step = std::atoll(text.c_str() + colon + 1);
  if (size_t second = text.find(':', colon + 1); second != std::string::npos)
    plan.layer = std::atoll(text.c_str() + second + 1);
  return plan;
}

void Checker::setUp(int64_t numBlocks) {
  numBlocks_ = numBlocks;
  // The KV caches as they must be: poisoned like the buffers, then every
  // row the reference stores.
  kvShadow_.assign(opt_.layers, {});
  for (int64_t l = 0; l < opt_.layers; ++l) {
    kvShadow_[l].resize(sig_.args.size());
    for (size_t i = 0; i < sig_.args.size(); ++i)
      if (sig_.args[i].role == ArgRole::KvCache)
        kvShadow_[l][i].assign(io_.kvBytes(l, static_cast<int>(i)) / 2, 0xffff);
  }
  hostPageStep_.assign(numBlocks, -1);
  int64_t W = sig_.layout.config.kernel;
  paramFloat_.assign(opt_.layers, {});
  for (int64_t l = 0; l < opt_.layers; ++l) {
    paramFloat_[l].resize(sig_.args.size());
    for (size_t i = 0; i < sig_.args.size(); ++i) {
      const ArgInfo &arg = sig_.args[i];
      if (arg.role != ArgRole::Weights && arg.role != ArgRole::Bias)
        continue;
      bool weights = arg.role == ArgRole::Weights;
      int64_t rows = io_.rowElements(*arg.stream);
      int64_t count = rows * (weights ? W : 1);
      const uint16_t *bits = io_.param(l, static_cast<int>(i));
      std::vector<float> values(count);
      for (int64_t e = 0; e < count; ++e)
        values[weights ? (e % W) * rows + e / W : e] = bf16ToFloat(bits[e]);
      paramFloat_[l][i] = std::move(values);
    }
  }
}

bool Checker::checkOutputs(int64_t layer, const CheckedStep &s) {
  expectedY_.resize(sig_.convs.size());
  for (size_t k = 0; k < sig_.convs.size(); ++k) {
    const ConvInfo &conv = sig_.convs[k];
    expectedConvRows(layer, conv, s, expectedY_[k]);
    if (conv.out >= 0 && (!checkConvOutputs(layer, conv, s, expectedY_[k]) ||
                          !checkPaddingOutputs(layer, conv, s)))
      return false;
  }
  return checkEpilogues(layer, s);
}

void Checker::expectedConvRows(int64_t layer, const ConvInfo &conv,
                               const CheckedStep &s,
                               std::vector<uint16_t> &rows) {
  int64_t W = sig_.layout.config.kernel, hist = W - 1;
  const Generator &gen = workload_.generator();
  const std::vector<int32_t> &qsl = io_.stepBuffers().queryStartLoc;
  Stream stream = conv.stream;
  int64_t row = io_.rowElements(stream);
  const float *weights = paramFloat_[layer][conv.weights].data();
  const float *bias =
      conv.bias >= 0 ? paramFloat_[layer][conv.bias].data() : nullptr;
  zeros_.assign(row, 0);
  acc_.resize(row);
  rows.resize(s.info.numPaddedTokens * row);
  const std::vector<Request *> &batch = *s.batch;
  for (size_t b = 0; b < batch.size(); ++b) {
    Request *r = batch[b];
    int64_t c = r->computed, n = r->numScheduled;
    // Rows [c - (W-1), c + n): the history and this step's inputs, all
    // regenerated from the token chain, never read from the buffer the
    // kernel ran on (a kernel that corrupted x must not be checked against
    // its own corruption).
    scratch_.resize(std::max<size_t>(scratch_.size(), (hist + n) * row));
    for (int64_t j = 0; j < hist + n; ++j) {
      int64_t q = c - hist + j;
      if (q >= 0)
        gen.row(q < c ? r->chain[q] : r->stepChain[q - c], layer, stream,
                scratch_.data() + j * row, row);
    }
    auto rowAt = [&](int64_t q) {
      return scratch_.data() + (q - (c - hist)) * row;
    };
    for (int64_t i = 0; i < n; ++i) {
      int64_t t = qsl[b] + i, p = c + i;
      const uint16_t *taps[16];
      for (int64_t j = 0; j < W; ++j) {
        int64_t q = p - hist + j;
        taps[j] = q < 0 ? zeros_.data() : rowAt(q);
      }
      expectedRow(taps, W, weights, bias, conv.silu,
                  conv.residual ? rowAt(p) : nullptr, row, acc_.data(),
                  rows.data() + t * row);
    }
  }
  // Padding tokens: y = x, regenerated (not read from the input buffer).
  for (int64_t t = s.info.numTokens; t < s.info.numPaddedTokens; ++t)
    gen.row(workload_.padChain(s.step, t), layer, stream, rows.data() + t * row,
            row);
}

bool Checker::checkConvOutputs(int64_t layer, const ConvInfo &conv,
                               const CheckedStep &s,
                               const std::vector<uint16_t> &rows) {
  const std::vector<int32_t> &qsl = io_.stepBuffers().queryStartLoc;
  Stream stream = conv.stream;
  int64_t row = io_.rowElements(stream), w = sig_.layout.range(stream).width;
  const uint16_t *y = io_.streamData(conv.out);
  const StreamGeometry &gy = io_.geometry(conv.out);
  const std::vector<Request *> &batch = *s.batch;
  for (size_t b = 0; b < batch.size(); ++b) {
    Request *r = batch[b];
    for (int64_t i = 0; i < r->numScheduled; ++i) {
      int64_t t = qsl[b] + i, p = r->computed + i;
      const uint16_t *yt = y + gy.offset + t * gy.tokenStride;
      const uint16_t *want = rows.data() + t * row;
      if (std::memcmp(want, yt, row * 2) != 0) {
        for (int64_t e = 0; e < row; ++e) {
          uint16_t expected = want[e], found = yt[e];
          bool same = expected == found;
          if (!same && conv.silu) // exp differs between libms: 1 bf16 ulp
            same = ((expected ^ found) & 0x8000) == 0 &&
                   std::abs(int(expected & 0x7fff) - int(found & 0x7fff)) <= 1;
          if (same)
            continue;
          mismatch_.found = true;
          mismatch_.text =
              "mismatch in step " + std::to_string(s.step) + ", layer " +
              std::to_string(layer) + ": output of stream " +
              streamName(stream) + ", sequence " + std::to_string(r->number) +
              " (runtime id " + std::to_string(r->id) + "), position " +
              std::to_string(p) + ", head " + std::to_string(e / w) +
              ", channel " + std::to_string(e % w) + ": expected " +
              hex16(expected) + ", found " + hex16(found);
          return false;
        }
      }
      stats_.outputsChecked += row;
    }
  }
  return true;
}

bool Checker::checkPaddingOutputs(int64_t layer, const ConvInfo &conv,
                                  const CheckedStep &s) {
  // Padding tokens: y = x, regenerated (not read from the input buffer).
  Stream stream = conv.stream;
  int64_t row = io_.rowElements(stream), w = sig_.layout.range(stream).width;
  const uint16_t *y = io_.streamData(conv.out);
  const StreamGeometry &gy = io_.geometry(conv.out);
  expected_.resize(row);
  for (int64_t t = s.info.numTokens; t < s.info.numPaddedTokens; ++t) {
    const uint16_t *yt = y + gy.offset + t * gy.tokenStride;
    workload_.generator().row(workload_.padChain(s.step, t), layer, stream,
                              expected_.data(), row);
    for (int64_t e = 0; e < row; ++e) {
      if (expected_[e] == yt[e])
        continue;
      mismatch_.found = true;
      mismatch_.text = "mismatch in step " + std::to_string(s.step) +
                       ", layer " + std::to_string(layer) +
                       ": output of stream " + streamName(stream) +
                       ", padding token " + std::to_string(t) + ", head " +
                       std::to_string(e / w) + ", channel " +
                       std::to_string(e % w) + ": expected its input " +
                       hex16(expected_[e]) + ", found " + hex16(yt[e]);
      return false;
    }
    stats_.outputsChecked += row;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The epilogues: KV rows, sums and normed rows
//===----------------------------------------------------------------------===//

bool Checker::checkEpilogues(int64_t layer, const CheckedStep &s) {
  if (sig_.epilogues.empty())
    return true;
  int64_t T = s.info.numPaddedTokens;
  const int64_t *slots = io_.attnSlots();
  std::vector<bool> kvWritten(sig_.args.size(), false);
  expectedSum_.clear();
  std::vector<uint16_t> normed, residual;
  for (const EpilogueInfo &e : sig_.epilogues) {
    const std::vector<uint16_t> &y = expectedY_[e.conv];
    int64_t row = io_.rowElements(e.stream);
    reference::ConstStreamBuffer rows{y.data(), row};
    if (e.kind == EpilogueInfo::Kind::KvWrite) {
      if (e.normWeight >= 0) {
        normed.resize(T * row);
        reference::referenceRmsNorm(sig_.layout, e.stream, rows, T,
                                    io_.param(layer, e.normWeight), e.epsilon,
                                    {normed.data(), row});
        rows = {normed.data(), row};
      }
      reference::KvCacheBuffer kv{kvShadow_[layer][e.kvCache].data(),
                                  io_.kvBlockStride(e.kvCache), io_.kvBlocks(),
                                  sig_.attnBlockSize};
      reference::referenceKvWrite(sig_.layout, e.stream, rows, T, slots, kv);
      kvWritten[e.kvCache] = true;
      for (int64_t t = 0; t < T; ++t)
        stats_.kvRowsStored += slots[t] >= 0 ? sig_.layout.headsPerRank : 0;
      continue;
    }
    // The residual: this step's residual-stream input, regenerated, or the
    // sum an earlier epilogue wrote (as the reference computed it).
    const uint16_t *res = nullptr;
    if (auto it = expectedSum_.find(e.residual); it != expectedSum_.end()) {
      res = it->second.data();
    } else {
      residual.resize(T * row);
      const std::vector<int32_t> &qsl = io_.stepBuffers().queryStartLoc;
      for (size_t b = 0; b < s.batch->size(); ++b) {
        const Request *r = (*s.batch)[b];
        for (int64_t i = 0; i < r->numScheduled; ++i)
          io_.residualRow(r->stepChain[i], layer, e.stream,
                          residual.data() + (qsl[b] + i) * row,
                          workload_.generator());
      }
      for (int64_t t = s.info.numTokens; t < T; ++t)
        io_.residualRow(workload_.padChain(s.step, t), layer, e.stream,
                        residual.data() + t * row, workload_.generator());
      res = residual.data();
    }
    std::vector<uint16_t> &sum = expectedSum_[e.sum];
    sum.resize(T * row);
    normed.resize(T * row);
    reference::referenceAddRmsNorm(sig_.layout, e.stream, rows, {res, row}, T,
                                   io_.param(layer, e.normWeight), e.epsilon,
                                   {sum.data(), row}, {normed.data(), row});
    if (!compareRows(layer, s, e.sum, sum) ||
        !compareRows(layer, s, e.out, normed))
      return false;
  }
  for (size_t i = 0; i < kvWritten.size(); ++i)
    if (kvWritten[i] && !compareKvCache(layer, s, static_cast<int>(i)))
      return false;
  return true;
}

bool Checker::compareRows(int64_t layer, const CheckedStep &s, int arg,
                          const std::vector<uint16_t> &expected) {
  Stream stream = *sig_.args[arg].stream;
  int64_t row = io_.rowElements(stream), w = sig_.layout.range(stream).width;
  const uint16_t *found = io_.streamData(arg);
  const StreamGeometry &g = io_.geometry(arg);
  for (int64_t t = 0; t < s.info.numPaddedTokens; ++t) {
    const uint16_t *ft = found + g.offset + t * g.tokenStride;
    const uint16_t *et = expected.data() + t * row;
    if (std::memcmp(ft, et, row * 2) == 0) {
      stats_.outputsChecked += row;
      continue;
    }
    int64_t e = 0;
    while (ft[e] == et[e])
      ++e;
    mismatch_.found = true;
    mismatch_.text =
        "mismatch in step " + std::to_string(s.step) + ", layer " +
        std::to_string(layer) + ": " + sig_.describeArg(arg) + ", token " +
        std::to_string(t) + (t >= s.info.numTokens ? " (padding)" : "") +
        ", head " + std::to_string(e / w) + ", channel " +
        std::to_string(e % w) + ": expected " + hex16(et[e]) +
        " (runtime/lib/EpilogueReference.cpp), found " + hex16(ft[e]);
    return false;
  }
  return true;
}

bool Checker::compareKvCache(int64_t layer, const CheckedStep &s, int arg) {
  uint16_t *data = io_.kvData(layer, arg);
  int64_t bytes = io_.kvBytes(layer, arg);
  // The whole cache: the rows this step stored, and every other row as it
  // was (poison where nothing was ever stored).
  if (!executorOk(exec_, s.step, "reading the KV cache back",
                  exec_.download(data, bytes)))
    return false;
  const std::vector<uint16_t> &expected = kvShadow_[layer][arg];
  if (std::memcmp(data, expected.data(), bytes) == 0) {
    stats_.kvValuesChecked += bytes / 2;
    return true;
  }
  int64_t e = 0;
  while (data[e] == expected[e])
    ++e;
  Stream stream = *sig_.args[arg].stream;
  int64_t w = sig_.layout.range(stream).width, H = sig_.layout.headsPerRank;
  int64_t stride = io_.kvBlockStride(arg), bs = sig_.attnBlockSize;
  int64_t block = e / stride, inBlock = e % stride;
  int64_t rowInBlock = inBlock / (H * w), slot = block * bs + rowInBlock;
  int64_t token = -1;
  for (int64_t t = 0; t < s.info.numPaddedTokens; ++t)
    if (io_.attnSlots()[t] == slot)
      token = t;
  mismatch_.found = true;
  mismatch_.text =
      "mismatch in step " + std::to_string(s.step) + ", layer " +
      std::to_string(layer) + ": " + sig_.describeArg(arg) + ", block " +
      std::to_string(block) + ", row " + std::to_string(rowInBlock) +
      " (attention slot " + std::to_string(slot) + ", " +
      (token >= 0 ? "stored by token " + std::to_string(token)
                  : std::string("no token of this step stores it")) +
      "), head " + std::to_string(inBlock % (H * w) / w) + ", channel " +
      std::to_string(e % w) + ": expected " + hex16(expected[e]) +
      " (runtime/lib/EpilogueReference.cpp), found " + hex16(data[e]);
  return false;
}

bool Checker::checkCache(const CheckedStep &s, const SequenceManager &manager) {
  int64_t hist = sig_.layout.config.kernel - 1, N = sig_.layout.blockSize;
  int64_t maxRow = 0;
  for (Stream stream : kAllStreams)
    maxRow = std::max(maxRow, io_.rowElements(stream));
  scratch_.resize(std::max<size_t>(scratch_.size(), maxRow));
  for (Request *r : *s.running) {
    auto info = manager.sequenceInfo(r->id);
    if (!info) {
      internalError(s.step, "sequenceInfo", info.status());
      std::exit(1);
    }
    if (info->numComputed != r->computed) {
      mismatch_.found = true;
      mismatch_.text = "after step " + std::to_string(s.step) + ": sequence " +
                       std::to_string(r->number) + ": the runtime says " +
                       std::to_string(info->numComputed) +
                       " tokens are computed, the workload " +
                       std::to_string(r->computed);
      return false;
    }
    stats_.peakIdleSequenceBlocks =
        std::max<int64_t>(stats_.peakIdleSequenceBlocks, info->blocks.size());
    int64_t c = r->computed;
    for (int64_t q = std::max<int64_t>(0, c - hist); q < c; ++q) {
      int64_t logical = q / N, physical = -1;
      for (const MappedBlock &m : info->blocks)
        if (m.logical == logical)
          physical = m.physical;
      if (physical <= 0 || physical >= numBlocks_) {
        mismatch_.found = true;
        mismatch_.text =
            "after step " + std::to_string(s.step) + ": sequence " +
            std::to_string(r->number) + " (runtime id " +
            std::to_string(r->id) + "), position " + std::to_string(q) +
            ": the next step reads it from logical block " +
            std::to_string(logical) + ", which the runtime does not map (" +
            std::to_string(physical) + ")";
        return false;
      }
      if (!checkCacheRow(*r, q, physical, s.step))
        return false;
    }
  }
  return true;
}

bool Checker::checkCacheRow(const Request &r, int64_t q, int64_t physical,
                            int64_t step) {
  const Layout &layout = sig_.layout;
  int64_t D = layout.headSize, H = layout.headsPerRank, N = layout.blockSize;
  int64_t stride = io_.blockStrideBytes();
  // The block's page in every layer, from where the caches live (once per
  // step: the pages the next step reads, not the whole caches).
  if (hostPageStep_[physical] != step) {
    for (auto &cache : io_.caches())
      if (!executorOk(exec_, step, "reading the cache back",
                      exec_.download(cache->data + physical * stride, stride)))
        return false; // mismatch_ stays empty: not a mismatch
    hostPageStep_[physical] = step;
  }
  for (int64_t l = 0; l < opt_.layers; ++l) {
    const auto *cache = reinterpret_cast<const uint16_t *>(io_.layerBase(l));
    for (Stream stream : kAllStreams) {
      if (!sig_.inserted[static_cast<int>(stream)])
        continue;
      const StreamRange &range = layout.range(stream);
      workload_.generator().row(r.chain[q], l, stream, scratch_.data(),
                                io_.rowElements(stream));
      for (int64_t h = 0; h < H; ++h) {
        const uint16_t *rowPtr = cache +
                                 physical * io_.plan().layers[l].strides[0] +
                                 (h * N + q % N) * D + range.offset;
        const uint16_t *expected = scratch_.data() + h * range.width;
        if (std::memcmp(rowPtr, expected, range.width * 2) == 0)
          continue;
        for (int64_t ch = 0; ch < range.width; ++ch) {
          if (rowPtr[ch] == expected[ch])
            continue;
          mismatch_.found = true;
          mismatch_.text =
              "mismatch after step " + std::to_string(step) + ", layer " +
              std::to_string(l) + ": cache of stream " + streamName(stream) +
              ", sequence " + std::to_string(r.number) + " (runtime id " +
              std::to_string(r.id) + "), position " + std::to_string(q) +
              " (block " + std::to_string(physical) + ", row " +
              std::to_string(q % N) + "), head " + std::to_string(h) +
              ", channel " + std::to_string(ch) + ": expected " +
              hex16(expected[ch]) + ", found " + hex16(rowPtr[ch]);
          return false;
        }
      }
      stats_.cacheValuesChecked += io_.rowElements(stream);
    }
  }
  return true;
}

bool Checker::injectFault(FaultPlan::Kind fault, int64_t layer,
                          const CheckedStep &s,
                          const SequenceManager &manager) {
  using Kind = FaultPlan::Kind;
  if (fault == Kind::Input || fault == Kind::Output) {
    if (sig_.convs.empty() || s.batch->empty())
      return true;
    const ConvInfo &conv = sig_.convs.front();
    if (fault == Kind::Input) {
      // x of the step's first token, before the kernel: what a kernel that
      // scribbled on its input would see. 65536 moves every output it feeds.
      io_.streamData(conv.x)[io_.geometry(conv.x).offset] = 0x4780;
      return true;
    }
    io_.streamData(conv.out)[io_.geometry(conv.out).offset + 1] ^= 0x0001;
    return true;
  }
  if (fault == Kind::Kv || fault == Kind::Normed) {
    // One value of the first stored KV row (where the cache lives), or of
    // the first token's normed row.
    for (const EpilogueInfo &e : sig_.epilogues) {
      if (fault == Kind::Normed && e.kind == EpilogueInfo::Kind::AddNorm) {
        io_.streamData(e.out)[io_.geometry(e.out).offset + 3] ^= 0x0001;
        return true;
      }
      if (fault != Kind::Kv || e.kind != EpilogueInfo::Kind::KvWrite)
        continue;
      for (int64_t t = 0; t < s.info.numTokens; ++t) {
        int64_t slot = io_.attnSlots()[t];
        if (slot < 0)
          continue;
        int64_t bs = sig_.attnBlockSize;
        uint16_t &value = io_.kvData(
            layer, e.kvCache)[(slot / bs) * io_.kvBlockStride(e.kvCache) +
                              (slot % bs) * io_.rowElements(e.stream) + 1];
        if (!executorOk(exec_, s.step, "injecting the fault",
                        exec_.download(&value, 2)))
          return false;
        value ^= 0x0001;
        return executorOk(exec_, s.step, "injecting the fault",
                          exec_.upload(&value, 2));
      }
    }
    return true;
  }
  if (fault == Kind::Padding) {
    // The first padding token's output (a kernel that computed a conv for
    // it instead of y = x).
    if (sig_.convs.empty() || s.info.numPaddedTokens == s.info.numTokens)
      return true;
    const ConvInfo &conv = sig_.convs.front();
    const StreamGeometry &g = io_.geometry(conv.out);
    io_.streamData(conv.out)[g.offset + s.info.numTokens * g.tokenStride + 2] ^=
        0x0001;
    return true;
  }
  int64_t N = sig_.layout.blockSize;
  for (Request *r : *s.running) {
    if (r->computed == 0)
      continue;
    auto info = manager.sequenceInfo(r->id);
    int64_t q = r->computed - 1;
    for (const MappedBlock &m : info->blocks)
      if (m.logical == q / N) {
        Stream stream = Stream::K;
        for (Stream st : kAllStreams)
          if (sig_.inserted[static_cast<int>(st)]) {
            stream = st;
            break;
          }
        auto *cacheData = reinterpret_cast<uint16_t *>(io_.layerBase(layer));
        uint16_t &value =
            cacheData[m.physical * io_.plan().layers[layer].strides[0] +
                      (q % N) * sig_.layout.headSize +
                      sig_.layout.range(stream).offset + 2];
        if (!executorOk(exec_, s.step, "injecting the fault",
                        exec_.download(&value, 2)))
          return false;
        value ^= 0x0100;
        return executorOk(exec_, s.step, "injecting the fault",
                          exec_.upload(&value, 2));
      }
  }
  return true;
}
