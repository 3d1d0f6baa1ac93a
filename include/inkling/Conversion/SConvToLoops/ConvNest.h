//===- ConvNest.h - The builder of a conv's loop nests ----------*- C++ -*-===//
//
// The pieces of a conv's (or fused conv's) nest: the shared (token, head)
// nest (ConvLowering.cpp), and the building blocks a backend's strategy
// composes into its own nests (the CPU's token-run nest,
// lib/Target/CPU/ConvTokenRuns.cpp). The builder holds only what is fixed
// for the op (its step's buffers and sizes); what a (token, head) iteration
// computes is a ConvRow, returned by tokenPrologue and passed to each step.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_CONVNEST_H
#define INKLING_CONVERSION_SCONVTOLOOPS_CONVNEST_H

#include "inkling/Conversion/SConvToLoops/Lanes.h"
#include "inkling/Conversion/SConvToLoops/Nest.h"
#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"
#include "inkling/Conversion/SConvToLoops/StepMetadata.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace inkling::loops {

/// The operands of one stream of a conv.
struct ConvStream {
  sconv::Stream stream;
  Value x, weights, bias, out;
};

/// One stream of a conv, with what the lowering knows about its alignment.
struct ConvPart {
  ConvPart(const inkling::Layout &layout, const ConvStream &s,
           MemRefType cacheType);

  inkling::StreamRange range;
  StreamOperand x, out;
  Value weights, bias;
  Value flatWeights; ///< [H*w*W], created before the nest.
  llvm::MaybeAlign cacheAlign, biasAlign, weightsAlign;
  /// A line of the cache row at a multiple of kLineLanes channels is
  /// line-aligned whenever the cache's base is.
  bool cacheLineAligned;
};

/// What a conv op asks of its nest.
struct ConvSpec {
  Operation *op;
  Value cache;
  sconv::LayoutAttr layout;
  ArrayRef<ConvStream> streams;
  bool residual, silu, insert;
};

/// The per-(t, h) values of a (token, head) iteration: whether t is live (a
/// real token; in checked mode also one whose token_seq entry holds it),
/// the sequence of t (from token_seq when the step has it, else a search),
/// its first token and num_computed, the position of t; with and_insert,
/// t's slot. Padding tokens load none of the sequence's metadata.
struct ConvRow {
  Value t, h;
  Value live, seq, seqStart, computed, position;
  SlotInfo slot;
  /// With a strategy's TapHoisting: where each tap j < W-1 of t reads,
  /// chosen once per (t, h) (TapHoisting::tapSources); taps[j] is tap j.
  SmallVector<TapSource> taps;
};

/// Builds the loop nests of one conv (or fused conv).
class ConvNestBuilder {
public:
  /// Creates the step's sizes and the flat weights before the op.
  ConvNestBuilder(PatternRewriter &rewriter, const ConvSpec &spec,
                  sconv::StepOp step, const SConvToLoopsOptions &options);

  /// Emits the conv's nest before the op: the strategy's, else the
  /// (token, head) nest.
  void build();

  /// The (token, head) nest at `b`'s insertion point.
  void emitTokenNest(OpBuilder &b, Location loc) const;

  // For a nest of someone else's (the epilogue nests, EpilogueLowering.cpp):
  // the conv's value of one row, to consume instead of storing it.

  /// The per-(t, h) values rowValue needs (in the (t, h) body).
  ConvRow beginRow(OpBuilder &b, Location loc, Value t, Value h) const {
    return tokenPrologue(b, loc, t, h);
  }
  /// The conv's output of stream `stream` at [t, h, c, c + lanes) as bf16,
  /// the bits `sconv.conv` stores (x for a padding token); with and_insert
  /// also stores x into the cache, as the conv nest does.
  Value rowValue(OpBuilder &b, Location loc, const ConvRow &row,
                 sconv::Stream stream, Value c, int64_t lanes) const;
  /// Checked with and_insert: reports the row token's bad slot once (head
  /// 0), as the conv nest does.
  void reportRowSlot(OpBuilder &b, Location loc, const ConvRow &row) const {
    if (insert_ && checked_)
      emitSlotReports(b, loc, op_, row.slot, isReporter(b, loc, row.h, row.h),
                      status_, row.t, slotLimit_);
  }

  // What a strategy's nest reads: the op and its step's buffers and sizes.

  Operation *op() const { return op_; }
  sconv::StepOp step() const { return step_; }
  Value cache() const { return cache_; }
  bool checked() const { return checked_; }
  bool insert() const { return insert_; }
  int64_t kernel() const { return kernel_; }
  int64_t blockSize() const { return blockSize_; }
  int64_t heads() const { return layout_.headsPerRank; }
  /// In the order of their cache offsets.
  ArrayRef<ConvPart> parts() const { return parts_; }
  /// The stream of parts()[i].
  sconv::Stream partStream(size_t i) const { return partStreams[i]; }
  Value tokens() const { return tokens_; }
  Value batch() const { return batch_; }
  Value numComputed() const { return numComputedBuf_; }
  Value blockTable() const { return blockTable_; }
  Value slots() const { return slots_; }
  /// The number of slots, with and_insert (emitSlotLimit).
  Value slotLimit() const { return slotLimit_; }

  // The pieces of a chunk's conv, for the (token, head) nest and a
  // strategy's.

  /// A history tap's column in the cache row: offset + c.
  Value cacheCol(OpBuilder &b, Location loc, const ConvPart &part,
                 Value c) const;
  /// cache[physical, h, row, col] in f32, lanes in `order`.
  Value cacheTap(OpBuilder &b, Location loc, const ConvPart &part,
                 Value physical, Value h, Value row, Value col, int64_t lanes,
                 LaneOrder order = LaneOrder::Natural) const;
  /// x[token, h, c..] in f32, lanes in `order`.
  Value xTap(OpBuilder &b, Location loc, const ConvPart &part, Value token,
             Value h, Value c, int64_t lanes,
             LaneOrder order = LaneOrder::Natural) const;
  /// acc's start: bias[channel..] (or 0), in f32.
  Value biasLanes(OpBuilder &b, Location loc, const ConvPart &part,
                  Value channel, int64_t lanes,
                  LaneOrder order = LaneOrder::Natural) const;
  /// The weights of channels channel.., per tap, in f32.
  SmallVector<Value> tapWeightsOf(OpBuilder &b, Location loc,
                                  const ConvPart &part, Value channel,
                                  int64_t lanes,
                                  LaneOrder order = LaneOrder::Natural) const;
  /// The fma chain over the taps in ascending order (the last tap is x[t]
  /// itself), the activation and the residual add of `xt`, in f32.
  Value convResult(OpBuilder &b, Location loc, ArrayRef<Value> tapWeights,
                   function_ref<Value(int64_t)> tapValue, Value acc, Value xt,
                   int64_t lanes) const;

private:
  ConvRow tokenPrologue(OpBuilder &b, Location loc, Value t, Value h) const;
  Value checkedHistory(OpBuilder &b, Location loc, const ConvRow &row,
                       const ConvPart &part, Value c, int64_t lanes,
                       Value logical, Value tapRow) const;
  Value chunkTap(OpBuilder &b, Location loc, const ConvRow &row,
                 const ConvPart &part, Value c, int64_t lanes, int64_t j) const;
  /// convLanes' f32 result (after the residual add), not stored.
  Value convLanesValue(OpBuilder &b, Location loc, const ConvRow &row,
                       const ConvPart &part, Value c, int64_t lanes,
                       Value xRaw) const;
  void lanesBody(OpBuilder &b, Location loc, const ConvRow &row,
                 const ConvPart &part, Value c, int64_t lanes) const;

  PatternRewriter &rewriter;
  Operation *op_;
  Value cache_;
  const bool residual, silu, insert_;
  sconv::StepOp step_;
  const LoopStrategy *strategy;
  const bool checked_;
  /// The strategy's choice of each tap's source per (t, h) (unchecked only:
  /// checked history taps check and report per chunk); null: per chunk.
  const TapHoisting *hoisting;
  const bool splitStreams;
  Location loc;
  inkling::Layout layout_;
  int64_t kernel_, blockSize_;
  SmallVector<ConvPart> parts_;
  SmallVector<sconv::Stream> partStreams; ///< The stream of each part.
  SmallVector<int64_t> widths;
  Value numComputedBuf_, blockTable_, slots_, status_;
  std::string opName;
  Value tokens_, batch_, numBlocks, tableWidth, slotLimit_;
};

/// Builds `spec`'s ConvNestBuilder for the step that `stepValue` is, calls
/// `emit` with it and erases the op; a match failure when no visible
/// `sconv.step` defines `stepValue`.
LogicalResult lowerWithConvNest(PatternRewriter &rewriter, const ConvSpec &spec,
                                Value stepValue,
                                const SConvToLoopsOptions &options,
                                function_ref<void(ConvNestBuilder &)> emit);

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_CONVNEST_H
