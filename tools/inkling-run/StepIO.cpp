//===- StepIO.cpp - inkling-run's host buffers and layer calls ------------===//

#include "StepIO.h"
#include "Serving.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace inkling;
using namespace inkling::exec;
using namespace inkling::run;

Aligned::Aligned(size_t bytes)
    : size(bytes), data(static_cast<uint8_t *>(
                       std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64))) {
  if (!data) {
    std::fprintf(stderr, "inkling-run: cannot allocate %zu bytes\n", bytes);
    std::exit(1);
  }
}

Aligned::~Aligned() { std::free(data); }

void StepIO::allocateStepBuffers(int64_t maxRows, int64_t numCols,
                                 int64_t maxTokens) {
  maxTokens_ = maxTokens;
  host_ = std::make_unique<HostStepBuffers>(maxRows, numCols, maxTokens,
                                            /*maxCopies=*/maxRows);
  status_.assign(8, 0);
}

int StepIO::allocate(const CachePlan &plan, const Generator &gen,
                     int64_t kvBlocks) {
  plan_ = &plan;
  // One allocation per plan tensor, poisoned (bf16 NaN) so that a read of
  // a row that was never written shows.
  for (const PlanTensor &tensor : plan.tensors) {
    caches_.push_back(std::make_unique<Aligned>(tensor.bytes));
    std::memset(caches_.back()->data, 0xff, tensor.bytes);
  }

  // Stream inputs and outputs (shared by the layers), weights and biases
  // (per layer, seeded).
  size_t numArgs = sig_.args.size();
  argData_.resize(numArgs);
  geometry_.resize(numArgs);
  paramData_.resize(opt_.layers);
  kvData_.resize(opt_.layers);
  for (int64_t l = 0; l < opt_.layers; ++l) {
    paramData_[l].resize(numArgs);
    kvData_[l].resize(numArgs);
  }
  kvBlockStride_.assign(numArgs, 0);
  kvBlocks_ = kvBlocks;
  attnSlots_.assign(maxTokens_, -1);
  for (size_t i = 0; i < numArgs; ++i) {
    const ArgInfo &arg = sig_.args[i];
    if (arg.perTokenStream()) {
      if (int rc = allocateStream(i))
        return rc;
    } else if (arg.isParameter()) {
      CallShape none;
      int64_t count = 1;
      for (int64_t size : sig_.expectedSizes(i, none))
        count *= size;
      uint64_t salt = arg.role == ArgRole::Weights ? 0x77
                      : arg.role == ArgRole::Bias  ? 0x62
                                                   : 0x6e;
      for (int64_t l = 0; l < opt_.layers; ++l) {
        // Weights are read through their type's strides; the bindings here
        // are dense (what the verifier allows: identity layouts).
        auto data = std::make_unique<Aligned>(count * 2);
        gen.params(salt, l, static_cast<int>(i),
                   reinterpret_cast<uint16_t *>(data->data), count);
        paramData_[l][i] = std::move(data);
      }
    } else if (arg.role == ArgRole::KvCache) {
      // Poisoned (bf16 NaN): a row a kernel stored where no token's slot
      // points shows in the checker's comparison of the whole cache.
      CallShape shape;
      shape.kvBlocks = kvBlocks;
      std::vector<int64_t> sizes = sig_.expectedSizes(i, shape);
      kvBlockStride_[i] = sig_.expectedStrides(i, sizes)[0];
      int64_t bytes = kvBlocks * kvBlockStride_[i] * 2;
      for (int64_t l = 0; l < opt_.layers; ++l) {
        kvData_[l][i] = std::make_unique<Aligned>(bytes);
        std::memset(kvData_[l][i]->data, 0xff, bytes);
      }
    }
  }
  call_.resize(numArgs);
  return addBuffers();
}

int StepIO::allocateStream(size_t i) {
  const ArgInfo &arg = sig_.args[i];
  int64_t row = rowElements(*arg.stream);
  StreamGeometry &g = geometry_[i];
  g.offset = arg.offset == kDynamic ? 0 : arg.offset;
  g.tokenStride = arg.strides[0] == kDynamic ? row : arg.strides[0];
  // A static token stride or offset of the IR sizes the buffer: check the
  // product before it overflows (1 TiB at most).
  int64_t elements = 0;
  if (g.offset < 0 || g.tokenStride < row ||
      __builtin_mul_overflow(maxTokens_, g.tokenStride, &elements) ||
      __builtin_add_overflow(elements, g.offset, &elements) ||
      elements > (int64_t(1) << 39))
    return fail(opt_.modelPath + ": argument " + std::to_string(i) + " (" +
                arg.type + "): token stride " + std::to_string(g.tokenStride) +
                " and offset " + std::to_string(g.offset) + " for " +
                std::to_string(maxTokens_) +
                " tokens (--token-budget): not a buffer inkling-run can "
                "allocate");
  argData_[i] = std::make_unique<Aligned>(elements * 2);
  std::memset(argData_[i]->data, 0, elements * 2);
  return 0;
}

int StepIO::addBuffers() {
  auto add = [&](void *data, size_t bytes) {
    return executorOk(exec_, 0, "allocating device memory",
                      exec_.addBuffer(data, bytes));
  };
  HostStepBuffers &h = *host_;
  bool ok =
      add(h.queryStartLoc.data(), h.queryStartLoc.size() * sizeof(int32_t)) &&
      add(h.numComputed.data(), h.numComputed.size() * sizeof(int32_t)) &&
      add(h.blockTable.data(), h.blockTable.size() * sizeof(int32_t)) &&
      add(h.slotMapping.data(), h.slotMapping.size() * sizeof(int64_t)) &&
      add(h.tokenSeq.data(), h.tokenSeq.size() * sizeof(int32_t)) &&
      add(status_.data(), status_.size() * sizeof(int64_t)) &&
      add(attnSlots_.data(), attnSlots_.size() * sizeof(int64_t));
  for (size_t l = 0; ok && l < caches_.size(); ++l)
    ok = add(caches_[l]->data, plan_->tensors[l].bytes);
  for (size_t i = 0; ok && i < argData_.size(); ++i)
    if (argData_[i])
      ok = add(argData_[i]->data, argData_[i]->size);
  for (size_t l = 0; ok && l < paramData_.size(); ++l)
    for (size_t i = 0; ok && i < paramData_[l].size(); ++i) {
      if (paramData_[l][i])
        ok = add(paramData_[l][i]->data, paramData_[l][i]->size);
      if (ok && kvData_[l][i])
        ok = add(kvData_[l][i]->data, kvData_[l][i]->size);
    }
  return ok ? 0 : 1;
}

void StepIO::fillInputs(int64_t layer, const std::vector<Request *> &batch,
                        const StepInfo &info, const Workload &workload,
                        int64_t step) {
  const Generator &gen = workload.generator();
  for (int s = 0; s < kNumStreams; ++s) {
    int arg = sig_.input[s];
    if (arg < 0)
      continue;
    Stream stream = static_cast<Stream>(s);
    int64_t row = rowElements(stream);
    uint16_t *x = streamData(arg);
    const StreamGeometry &g = geometry_[arg];
    for (size_t b = 0; b < batch.size(); ++b) {
      Request *r = batch[b];
      for (int64_t i = 0; i < r->numScheduled; ++i)
        gen.row(r->stepChain[i], layer, stream,
                x + g.offset + (host_->queryStartLoc[b] + i) * g.tokenStride,
                row);
    }
    for (int64_t t = info.numTokens; t < info.numPaddedTokens; ++t)
      gen.row(workload.padChain(step, t), layer, stream,
              x + g.offset + t * g.tokenStride, row);
  }
  // The residual streams the epilogues add to (not a sum an earlier
  // epilogue writes: that one the kernel fills).
  for (size_t i = 0; i < sig_.args.size(); ++i)
    if (sig_.args[i].role == ArgRole::Residual)
      fillResidual(static_cast<int>(i), layer, batch, info, workload, step);
}

void StepIO::fillResidual(int arg, int64_t layer,
                          const std::vector<Request *> &batch,
                          const StepInfo &info, const Workload &workload,
                          int64_t step) const {
  Stream stream = *sig_.args[arg].stream;
  uint16_t *x = streamData(arg);
  const StreamGeometry &g = geometry_[arg];
  const std::vector<int32_t> &qsl = host_->queryStartLoc;
  for (size_t b = 0; b < batch.size(); ++b)
    for (int64_t i = 0; i < batch[b]->numScheduled; ++i)
      residualRow(batch[b]->stepChain[i], layer, stream,
                  x + g.offset + (qsl[b] + i) * g.tokenStride,
                  workload.generator());
  for (int64_t t = info.numTokens; t < info.numPaddedTokens; ++t)
    residualRow(workload.padChain(step, t), layer, stream,
                x + g.offset + t * g.tokenStride, workload.generator());
}

void StepIO::poisonPadding(const std::vector<Request *> &batch,
                           const StepInfo &info) {
  // A history row of the first sequence that has one (position c - 1).
  int64_t N = sig_.layout.blockSize, numCols = host_->spec.numCols;
  int64_t slot = -1;
  for (size_t b = 0; b < batch.size() && slot < 0; ++b) {
    int64_t c = batch[b]->computed;
    if (c > 0)
      slot = int64_t(host_->blockTable[b * numCols + (c - 1) / N]) * N +
             (c - 1) % N;
  }
  for (int64_t t = info.numTokens; t < info.numPaddedTokens; ++t) {
    host_->slotMapping[t] = slot;
    host_->tokenSeq[t] = static_cast<int32_t>(info.numRows + 7);
  }
}

void StepIO::undoPadding(const StepInfo &info) {
  for (int64_t t = info.numTokens; t < info.numPaddedTokens; ++t)
    host_->slotMapping[t] = -1;
}

bool StepIO::copyPages(const StepInfo &info, int64_t step) {
  int64_t stride = blockStrideBytes();
  for (int64_t i = 0; i < info.numCopies; ++i) {
    int32_t src = host_->blockCopies[2 * i],
            dst = host_->blockCopies[2 * i + 1];
    for (auto &cache : caches_)
      if (!executorOk(exec_, step, "copy-on-write",
                      exec_.copyCacheBytes(cache->data + dst * stride,
                                           cache->data + src * stride, stride)))
        return false;
  }
  return true;
}

void StepIO::describe(size_t i, int64_t layer, int64_t B, int64_t T) {
  const ArgInfo &arg = sig_.args[i];
  HostStepBuffers &h = *host_;
  CallShape step;
  step.tokens = T;
  step.rows = B;
  step.cols = h.spec.numCols;
  step.cacheBytes = layerBytes(layer);
  step.kvBlocks = kvBlocks_;
  MemRefArg &m = call_[i];
  // The shapes are the ABI's (LayerAbi.h); here only where each buffer is.
  m.sizes = sig_.expectedSizes(i, step);
  m.strides = sig_.expectedStrides(i, m.sizes);
  m.offset = 0;
  switch (arg.role) {
  case ArgRole::Cache:
    m.data = layerBase(layer);
    break;
  case ArgRole::QueryStartLoc:
    m.data = h.queryStartLoc.data();
    break;
  case ArgRole::NumComputed:
    m.data = h.numComputed.data();
    break;
  case ArgRole::BlockTable:
    m.data = h.blockTable.data();
    break;
  case ArgRole::SlotMapping:
    m.data = h.slotMapping.data();
    break;
  case ArgRole::TokenSeq:
    m.data = h.tokenSeq.data();
    break;
  case ArgRole::Status:
    std::fill(status_.begin(), status_.end(), 0);
    m.data = status_.data();
    break;
  case ArgRole::Input:
  case ArgRole::Output:
  case ArgRole::Residual:
  case ArgRole::Sum:
  case ArgRole::Normed:
    m.data = argData_[i]->data;
    m.offset = geometry_[i].offset;
    break;
  case ArgRole::Weights:
  case ArgRole::Bias:
  case ArgRole::NormWeight:
    m.data = paramData_[layer][i]->data;
    break;
  case ArgRole::KvCache:
    m.data = kvData_[layer][i]->data;
    break;
  case ArgRole::AttnSlotMapping:
    m.data = attnSlots_.data();
    break;
  }
}

namespace {

/// --corrupt-metadata=STEP:NAME[I]=V, parsed; false if malformed.
struct MetadataCorruption {
  int64_t step = -1, index = 0, value = 0;
  std::string name;
  static bool parse(llvm::StringRef text, MetadataCorruption &c) {
    auto [stepText, rest] = text.split(':');
    auto [name, entry] = rest.split('[');
    auto [index, value] = entry.split("]=");
    c.name = name.str();
    return !stepText.getAsInteger(10, c.step) &&
           !index.getAsInteger(10, c.index) &&
           !value.getAsInteger(10, c.value) && c.step >= 0 && c.index >= 0;
  }
};

} // namespace

void StepIO::corruptMetadata(int64_t layer, int64_t step) {
  MetadataCorruption c;
  if (opt_.corruptMetadata.empty() || layer != 0 ||
      !MetadataCorruption::parse(opt_.corruptMetadata, c) || c.step != step)
    return;
  for (size_t i = 0; i < sig_.args.size(); ++i) {
    if (sig_.argName(i) != c.name || sig_.args[i].stream)
      continue;
    MemRefArg &m = call_[i];
    int64_t count = 1;
    for (int64_t size : m.sizes)
      count *= size;
    if (c.index >= count)
      return;
    if (sig_.args[i].element == ElementKind::I64)
      static_cast<int64_t *>(m.data)[c.index] = c.value;
    else
      static_cast<int32_t *>(m.data)[c.index] = static_cast<int32_t>(c.value);
  }
}

bool StepIO::invokeLayer(int64_t layer, const StepInfo &info, int64_t step,
                         std::string &failure) {
  // Kernels see the padded token dimension.
  for (size_t i = 0; i < sig_.args.size(); ++i)
    describe(i, layer, info.numSequences, info.numPaddedTokens);
  corruptMetadata(layer, step);
  if (!executorOk(exec_, step, "the layer", exec_.invoke(call_)))
    return false;
  if (sig_.status >= 0 && status_[0] != 0 && failure.empty()) {
    failure = "step " + std::to_string(step) + ", layer " +
              std::to_string(layer) + ": the checked kernel " +
              exec::describeCheckedStatus(status_.data());
  }
  return true;
}
