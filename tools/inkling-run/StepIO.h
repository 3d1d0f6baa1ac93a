//===- StepIO.h - inkling-run's host buffers and layer calls ----*- C++ -*-===//
//
// Every buffer a step's layer call reads or writes, on the host: the step
// metadata the runtime writes (HostStepBuffers), the status buffer, the
// caches (one allocation per tensor of the runtime's cache plan), the
// stream inputs and outputs (shared by the layers) and each layer's seeded
// weights and biases. StepIO hands them to the executor, fills a step's
// inputs, builds the call's descriptors and runs it.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_STEPIO_H
#define INKLING_TOOLS_INKLING_RUN_STEPIO_H

#include "Executor.h"
#include "Run.h"
#include "Workload.h"

#include "inkling/Runtime/CachePlan.h"
#include "inkling/Runtime/SequenceManager.h"
#include "inkling/Runtime/StepBuffers.h"

#include <memory>
#include <string>
#include <vector>

namespace inkling::run {

/// 64-byte aligned host bytes.
struct Aligned {
  explicit Aligned(size_t bytes);
  ~Aligned();
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
  size_t size;
  uint8_t *data;
};

/// A stream argument's geometry: element (t, e) at offset + t * tokenStride
/// + e, e = h*w + c.
struct StreamGeometry {
  int64_t offset = 0;
  int64_t tokenStride = 0;
};

/// The seed salt of the residual-stream inputs (not the stream's x).
inline constexpr uint64_t kResidualSalt = 0x7265736964ull;

class StepIO {
public:
  StepIO(const exec::LayerSignature &signature, Executor &executor,
         const ServeOptions &options)
      : sig_(signature), exec_(executor), opt_(options) {}

  /// The step metadata for `maxRows` rows of `numCols` logical blocks and
  /// `maxTokens` tokens (bound by the caller), and the status buffer.
  void allocateStepBuffers(int64_t maxRows, int64_t numCols, int64_t maxTokens);
  HostStepBuffers &stepBuffers() { return *host_; }
  /// The caches of `plan` (poisoned), the stream buffers and the seeded
  /// weights and biases of every layer; hands every buffer to the executor.
  /// 0, or the exit code of a printed error.
  int allocate(const CachePlan &plan, const Generator &gen,
               int64_t kvBlocks = 0);

  /// H * w of the stream.
  int64_t rowElements(Stream s) const {
    return sig_.layout.headsPerRank * sig_.layout.range(s).width;
  }
  const CachePlan &plan() const { return *plan_; }
  /// Layer l's cache view, which runs to the end of its tensor.
  uint8_t *layerBase(int64_t layer) const {
    const LayerView &view = plan_->layers[layer];
    return caches_[view.tensor]->data + view.byteOffset;
  }
  int64_t layerBytes(int64_t layer) const {
    const LayerView &view = plan_->layers[layer];
    return plan_->tensors[view.tensor].bytes - view.byteOffset;
  }
  int64_t blockStrideBytes() const { return plan_->layers[0].blockStrideBytes; }
  const std::vector<std::unique_ptr<Aligned>> &caches() const {
    return caches_;
  }
  /// A stream argument's buffer and geometry.
  uint16_t *streamData(int arg) const {
    return reinterpret_cast<uint16_t *>(argData_[arg]->data);
  }
  const StreamGeometry &geometry(int arg) const { return geometry_[arg]; }
  /// Layer l's KV cache argument `arg` (an attention layer's key or value
  /// cache: kvBlocks() blocks, kvBlockStride() elements apart), poisoned
  /// at allocation.
  uint16_t *kvData(int64_t layer, int arg) const {
    return reinterpret_cast<uint16_t *>(kvData_[layer][arg]->data);
  }
  int64_t kvBytes(int64_t layer, int arg) const {
    return static_cast<int64_t>(kvData_[layer][arg]->size);
  }
  int64_t kvBlocks() const { return kvBlocks_; }
  int64_t kvBlockStride(int arg) const { return kvBlockStride_[arg]; }
  /// The step's attention slots (AttentionSlots::assign writes them).
  int64_t *attnSlots() { return attnSlots_.data(); }
  int64_t attnSlotCount() const {
    return static_cast<int64_t>(attnSlots_.size());
  }
  /// Layer l's weights ([H*w][W]), bias ([H*w]) or norm weight ([w] or
  /// [H*w]) argument, as bf16 bits.
  const uint16_t *param(int64_t layer, int arg) const {
    return reinterpret_cast<const uint16_t *>(paramData_[layer][arg]->data);
  }

  /// Writes the inputs of the step's tokens (and its padding tokens) for
  /// `layer`.
  void fillInputs(int64_t layer, const std::vector<Request *> &batch,
                  const StepInfo &info, const Workload &workload, int64_t step);
  /// Points the padding tokens' slots at live history rows and their
  /// token_seq entries out of range: a kernel that touched the cache or the
  /// metadata for them would show in the checks. undoPadding restores the
  /// slots (the step buffers' invariant: -1 past the real tokens).
  void poisonPadding(const std::vector<Request *> &batch, const StepInfo &info);
  void undoPadding(const StepInfo &info);
  /// Copy-on-write pages, in every layer's cache, before the kernels (with
  /// cross-layer pages one copy of the block moves every layer's page).
  bool copyPages(const StepInfo &info, int64_t step);
  /// Runs `layer` on the step. False on an executor failure (printed); a
  /// nonzero kernel status sets `failure` if it is empty.
  bool invokeLayer(int64_t layer, const StepInfo &info, int64_t step,
                   std::string &failure);

  /// Token `chain`'s residual-stream row of `stream` in `layer` (seeded
  /// apart from its input).
  void residualRow(uint64_t chain, int64_t layer, Stream stream, uint16_t *out,
                   const Generator &gen) const {
    gen.row(chain ^ kResidualSalt, layer, stream, out, rowElements(stream));
  }

private:
  void fillResidual(int arg, int64_t layer, const std::vector<Request *> &batch,
                    const StepInfo &info, const Workload &workload,
                    int64_t step) const;
  /// Hands the host buffers to the executor.
  int addBuffers();
  /// The stream buffer of argument i, sized for the step's most tokens.
  int allocateStream(size_t i);
  /// The descriptor of argument i for `layer` and B rows, T tokens.
  void describe(size_t i, int64_t layer, int64_t B, int64_t T);
  /// --corrupt-metadata at its step, before layer 0's call.
  void corruptMetadata(int64_t layer, int64_t step);

  const exec::LayerSignature &sig_;
  Executor &exec_;
  const ServeOptions &opt_;
  std::unique_ptr<HostStepBuffers> host_;
  std::vector<int64_t> status_;
  int64_t maxTokens_ = 0;
  /// The runtime's cache plan: one allocation per plan tensor (per layer,
  /// or with cross-layer pages one for all), layer l's view at its byte
  /// offset with the plan's block stride.
  const CachePlan *plan_ = nullptr;
  std::vector<std::unique_ptr<Aligned>> caches_;
  // Per argument: host storage (inputs, outputs; weights and bias per
  // layer).
  std::vector<std::unique_ptr<Aligned>> argData_;
  std::vector<std::vector<std::unique_ptr<Aligned>>> paramData_; // [layer][arg]
  std::vector<StreamGeometry> geometry_;
  // The attention KV caches (per layer and argument) and slots.
  std::vector<std::vector<std::unique_ptr<Aligned>>> kvData_; // [layer][arg]
  std::vector<int64_t> kvBlockStride_;
  int64_t kvBlocks_ = 0;
  std::vector<int64_t> attnSlots_;
  std::vector<exec::MemRefArg> call_;
};

} // namespace inkling::run

#endif // INKLING_TOOLS_INKLING_RUN_STEPIO_H
