//===- Checker.cpp - inkling-run's full-history reference checks ----------===//

#include "Checker.h"

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
                                  : Kind::Output;
  plan.step = std::atoll(text.c_str() + colon + 1);
  if (size_t second = text.find(':', colon + 1); second != std::string::npos)
    plan.layer = std::atoll(text.c_str() + second + 1);
  return plan;
}

void Checker::setUp(int64_t numBlocks) {
  numBlocks_ = numBlocks;
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
  for (const ConvInfo &conv : sig_.convs)
    if (!checkConvOutputs(layer, conv, s) ||
        !checkPaddingOutputs(layer, conv, s))
      return false;
  return true;
}

bool Checker::checkConvOutputs(int64_t layer, const ConvInfo &conv,
                               const CheckedStep &s) {
  int64_t W = sig_.layout.config.kernel, hist = W - 1;
  const Generator &gen = workload_.generator();
  const std::vector<int32_t> &qsl = io_.stepBuffers().queryStartLoc;
  Stream stream = conv.stream;
  int64_t row = io_.rowElements(stream), w = sig_.layout.range(stream).width;
  const uint16_t *y = io_.streamData(conv.out);
  const StreamGeometry &gy = io_.geometry(conv.out);
  const float *weights = paramFloat_[layer][conv.weights].data();
  const float *bias =
      conv.bias >= 0 ? paramFloat_[layer][conv.bias].data() : nullptr;
  zeros_.assign(row, 0);
  acc_.resize(row);
  expected_.resize(row);
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
      const uint16_t *yt = y + gy.offset + t * gy.tokenStride;
      const uint16_t *taps[16];
      for (int64_t j = 0; j < W; ++j) {
        int64_t q = p - hist + j;
        taps[j] = q < 0 ? zeros_.data() : rowAt(q);
      }
      expectedRow(taps, W, weights, bias, conv.silu,
                  conv.residual ? rowAt(p) : nullptr, row, acc_.data(),
                  expected_.data());
      if (std::memcmp(expected_.data(), yt, row * 2) != 0) {
        for (int64_t e = 0; e < row; ++e) {
          uint16_t expected = expected_[e], found = yt[e];
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
