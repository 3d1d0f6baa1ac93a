//===- ConvNest.h - The builder of a conv's loop nests ----------*- C++ -*-===//
//
// Private to the conv lowering: the state shared by the (token, head) nest
// (ConvLowering.cpp) and the token-run nest of prefill (ConvTokenRuns.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_CONVERSION_SCONVTOLOOPS_CONVNEST_H
#define INKLING_LIB_CONVERSION_SCONVTOLOOPS_CONVNEST_H

#include "Lowering.h"

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

/// Builds the loop nests of one conv (or fused conv). The step's buffers
/// and the per-(t, h) values of the nest being built are members, so that
/// each step of the nest is one member function.
class ConvNestBuilder {
public:
  /// Creates the step's sizes and the flat weights before the op.
  ConvNestBuilder(PatternRewriter &rewriter, const ConvSpec &spec,
                  sconv::StepOp step, const SConvToLoopsOptions &options);

  /// Emits the nest (or, with token-runs, both nests and the run-time
  /// choice between them) before the op.
  void build();

  // For a nest of someone else's (the epilogue nests, EpilogueLowering.cpp):
  // the conv's value of one row, to consume instead of storing it.

  /// The per-(t, h) values rowValue needs (call first, in the (t, h) body).
  void beginRow(OpBuilder &b, Location loc, Value t, Value h) {
    tokenPrologue(b, loc, t, h);
  }
  /// The conv's output of stream `stream` at [t, h, c, c + lanes) as bf16,
  /// the bits `sconv.conv` stores (x for a padding token); with and_insert
  /// also stores x into the cache, as the conv nest does.
  Value rowValue(OpBuilder &b, Location loc, sconv::Stream stream, Value t,
                 Value h, Value c, int64_t lanes);
  /// Checked with and_insert: reports token t's bad slot once (head 0), as
  /// the conv nest does.
  void reportRowSlot(OpBuilder &b, Location loc, Value t, Value h) {
    if (insert && checked)
      emitSlotReports(b, loc, op, slot, isReporter(b, loc, h, h), status, t,
                      slotLimit);
  }

private:
  /// Where tap j < W-1 of the current (t, h) reads, when hoisted.
  struct TapSource {
    /// x[token] when inStep; else cache[block, h, row] when history; else 0.
    Value inStep, token, history, block, row;
  };
  /// Tokens [s, e) of sequence seq (first token start, computed positions
  /// before the step): the part of a run the token-run nest walks.
  struct RunSpan {
    Value seq, start, computed, s, e;
  };
  /// What every token of a run shares in one chunk of channels c.. of head
  /// h: the lane order, the bias (acc's start) and the tap weights.
  struct RunChunk {
    Value h, c;
    int64_t lanes;
    LaneOrder order;
    Value bias;
    SmallVector<Value> tapWeights;
  };

  // The (token, head) nest (ConvLowering.cpp).
  TapSource tapSource(OpBuilder &b, Location loc, int64_t back);
  void tokenPrologue(OpBuilder &b, Location loc, Value t, Value h);
  Value cacheCol(OpBuilder &b, Location loc, const ConvPart &part, Value c);
  Value cacheTap(OpBuilder &b, Location loc, const ConvPart &part,
                 Value physical, Value h, Value row, Value col, int64_t lanes,
                 LaneOrder order = LaneOrder::Natural);
  Value checkedHistory(OpBuilder &b, Location loc, const ConvPart &part,
                       Value t, Value h, Value c, int64_t lanes, Value logical,
                       Value row);
  Value xTap(OpBuilder &b, Location loc, const ConvPart &part, Value token,
             Value h, Value c, int64_t lanes,
             LaneOrder order = LaneOrder::Natural);
  SmallVector<Value> hoistedTaps(OpBuilder &b, Location loc,
                                 const ConvPart &part, Value t, Value h,
                                 Value c, int64_t lanes);
  Value chunkTap(OpBuilder &b, Location loc, const ConvPart &part, Value t,
                 Value h, Value c, int64_t lanes, int64_t j);
  SmallVector<Value> pairedTapWeights(OpBuilder &b, Location loc, Value all,
                                      int64_t lanes, LaneOrder order);
  Value biasLanes(OpBuilder &b, Location loc, const ConvPart &part,
                  Value channel, int64_t lanes,
                  LaneOrder order = LaneOrder::Natural);
  SmallVector<Value> tapWeightsOf(OpBuilder &b, Location loc,
                                  const ConvPart &part, Value channel,
                                  int64_t lanes,
                                  LaneOrder order = LaneOrder::Natural);
  void finishLanes(OpBuilder &b, Location loc, const ConvPart &part,
                   ArrayRef<Value> tapWeights,
                   function_ref<Value(int64_t)> tapValue, Value acc, Value xt,
                   Value t, Value h, Value c, int64_t lanes,
                   LaneOrder order = LaneOrder::Natural);
  void convLanes(OpBuilder &b, Location loc, const ConvPart &part, Value t,
                 Value h, Value c, int64_t lanes, Value xRaw);
  /// convLanes' f32 result (after the residual add), not stored.
  Value convLanesValue(OpBuilder &b, Location loc, const ConvPart &part,
                       Value t, Value h, Value c, int64_t lanes, Value xRaw);
  /// The fma chain, the activation and the residual add of finishLanes.
  Value convResult(OpBuilder &b, Location loc, ArrayRef<Value> tapWeights,
                   function_ref<Value(int64_t)> tapValue, Value acc, Value xt,
                   int64_t lanes);
  void lanesBody(OpBuilder &b, Location loc, const ConvPart &part, Value t,
                 Value h, Value c, int64_t lanes);
  void tokenNest(OpBuilder &b, Location loc);

  // The token-run nest (ConvTokenRuns.cpp).
  /// The lane order of the token-run nest's chunks of `lanes` channels.
  LaneOrder runLaneOrder(int64_t lanes) const;
  SmallVector<Value> runWindow(OpBuilder &b, Location loc, const ConvPart &part,
                               const RunSpan &span, Value h, Value c,
                               int64_t lanes, LaneOrder order);
  SmallVector<Value> runToken(OpBuilder &b, Location loc, const ConvPart &part,
                              const RunChunk &chunk, Value t,
                              const SlotInfo &at, ValueRange window);
  void runLanes(OpBuilder &b, Location loc, const ConvPart &part,
                const RunSpan &span, Value h, Value c, int64_t lanes,
                ArrayRef<SlotInfo> fullRun);
  void runChunks(OpBuilder &b, Location loc, const RunSpan &span, Value h,
                 ArrayRef<SlotInfo> fullRun);
  void runSequence(OpBuilder &b, Location loc, Value seq, Value t0, Value real,
                   Value h);
  void runPadding(OpBuilder &b, Location loc, Value t0, Value real, Value t1,
                  Value h, Value c1);
  void runNest(OpBuilder &b, Location loc, Value realTokens);

  PatternRewriter &rewriter;
  Operation *op;
  Value cache;
  const bool residual, silu, insert;
  sconv::StepOp step;
  const SConvToLoopsOptions &options;
  const bool checked;
  /// The taps' sources per (t, h) (unchecked only: checked history taps
  /// check and report per chunk).
  const bool hoist;
  Location loc;
  inkling::Layout layout;
  int64_t kernel, blockSize;
  SmallVector<ConvPart> parts; ///< In the order of their cache offsets.
  SmallVector<sconv::Stream> partStreams; ///< The stream of each part.
  SmallVector<int64_t> widths;
  Value numComputedBuf, blockTable, slots, status;
  std::string opName;
  Value tokens, batch, numBlocks, tableWidth, slotLimit;

  // Per (t, h): whether t is live (a real token; in checked mode also one
  // whose token_seq entry holds it), the sequence of t (from token_seq
  // when the step has it, else a search), its first token and
  // num_computed, the position of t; with and_insert, t's slot.
  // Padding tokens load none of the sequence's metadata.
  Value live, seq, seqStart, computed, position;
  SlotInfo slot;
  // Hoisted: where each tap j < W-1 of t reads, chosen once per (t, h) so
  // that the chunk loops only load (the block-table loads cannot leave the
  // chunk loop otherwise: the cache stores may alias them). taps[j] is tap
  // j; taps.front().inStep: every tap is in the step (t is at least W-1
  // tokens into its step), the prefill case, which reads x[t-W+1..t].
  SmallVector<TapSource> taps;
};

} // namespace inkling::loops

#endif // INKLING_LIB_CONVERSION_SCONVTOLOOPS_CONVNEST_H
