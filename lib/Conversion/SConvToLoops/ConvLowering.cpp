//===- ConvLowering.cpp - sconv.conv / fused_conv to loops ----------------===//
//
// One loop nest for the convs of one or more streams over one cache, with
// or without storing each stream's input at the step's slots: `sconv.conv`
// is the one-stream case of `sconv.fused_conv` without `and_insert`.
//
//   scf.parallel (t, h) {
//     b = the sequence of t (binary search of query_start_loc); p, nc
//     [and_insert: slot = slot_mapping[t]; block, row]
//     [a strategy's TapHoisting: per tap j < W-1 its source, chosen once]
//     scf.parallel chunk in [0, chunks of all streams) {   // row order
//       stream i of the chunk, channels c = 8 * c':
//         x = x_i[t, h, c]                       // loaded once
//         [and_insert: if slot >= 0: cache[block, h, row, offset_i + c] = x]
//         acc = bias; acc = fma(w_j, tap_j, acc) for j < W-1 (history/step;
//           hoisted: the strategy's taps, e.g. x[t-W+1+j] without selection)
//         acc = fma(w_{W-1}, x, acc); act; + x (residual); out_i = bf16(acc)
//   } }
//
// A backend's strategy (LoopStrategy.h) may emit another nest instead, from
// the same pieces (the CPU's token-run nest, lib/Target/CPU).
//
// ConvNestBuilder (ConvNest.h) holds the step's buffers; the per-(t, h)
// values are a ConvRow, returned by tokenPrologue and passed to each piece
// of the nest above.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/ConvNest.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::sconv;

ConvPart::ConvPart(const inkling::Layout &layout, const ConvStream &s,
                   MemRefType cacheType)
    : range(layout.range(toRuntime(s.stream))), x(s.x, range.width),
      // An epilogue's stream has no output (rowValue): x stands in.
      out(s.out ? s.out : s.x, range.width), weights(s.weights), bias(s.bias) {
  cacheAlign = loops::cacheAlign(cacheType, range.offset);
  cacheLineAligned = loops::cacheLineAligned(cacheType, range.offset);
  // bias[h*w + c].
  if (bias)
    biasAlign = accessAlign(cast<MemRefType>(bias.getType()),
                            {flatIndexMultiple(range.width)});
  // [H*w, W] row-major: the weights of 8 consecutive channels are 8*W
  // consecutive elements; load them at once and deinterleave per tap.
  // They start at element (h*w + c)*W of the flattened weights: a
  // multiple of 8 only when w*W is (head h starts at h*w*W).
  // (The flat index is that of weights[h*w + c, 0].)
  weightsAlign = accessAlign(cast<MemRefType>(weights.getType()),
                             {flatIndexMultiple(range.width), 0});
}

// The step's buffers and sizes, created before the nest (the op creation
// order is part of the IR: keep it).
ConvNestBuilder::ConvNestBuilder(PatternRewriter &rewriter,
                                 const ConvSpec &spec, StepOp step,
                                 const SConvToLoopsOptions &options)
    : rewriter(rewriter), op_(spec.op), cache_(spec.cache),
      residual(spec.residual), silu(spec.silu), insert_(spec.insert),
      step_(step), strategy(options.strategy), checked_(options.checked),
      hoisting(strategy && !options.checked ? strategy->tapHoisting()
                                            : nullptr),
      splitStreams(strategy && strategy->splitStreams()), loc(op_->getLoc()),
      layout_(spec.layout.getDerived()), kernel_(layout_.config.kernel),
      blockSize_(layout_.blockSize) {
  MemRefType cacheType = staticCacheType(cache_);
  SmallVector<inkling::StreamRange> ranges;
  for (const ConvStream &s : spec.streams)
    ranges.push_back(layout_.range(toRuntime(s.stream)));
  for (unsigned i : orderByOffset(ranges)) {
    parts_.emplace_back(layout_, spec.streams[i], cacheType);
    partStreams.push_back(spec.streams[i].stream);
    widths.push_back(ranges[i].width);
  }

  numComputedBuf_ = step.getNumComputed();
  blockTable_ = step.getBlockTable();
  slots_ = step.getSlotMapping();
  status_ = step.getStatus();
  opName = op_->getName().getStringRef().str();

  tokens_ = memref::DimOp::create(rewriter, loc, spec.streams.front().x, 0);
  batch_ = memref::DimOp::create(rewriter, loc, numComputedBuf_, 0);
  numBlocks = memref::DimOp::create(rewriter, loc, cache_, 0);
  tableWidth = memref::DimOp::create(rewriter, loc, blockTable_, 1);
  if (insert_)
    slotLimit_ = emitSlotLimit(rewriter, loc, cache_, blockSize_);
  for (ConvPart &part : parts_)
    part.flatWeights = memref::CollapseShapeOp::create(
        rewriter, loc, part.weights, ArrayRef<ReassociationIndices>{{0, 1}});
}

// The per-(t, h) values (see ConvRow).
ConvRow ConvNestBuilder::tokenPrologue(OpBuilder &b, Location loc, Value t,
                                       Value h) const {
  Value reporter;
  if (checked_)
    reporter = cmp(b, loc, arith::CmpIPredicate::eq, h, cIndex(b, loc, 0));
  SequenceInfo sequence =
      emitTokenSequence(b, loc, step_, batch_, t, checked_, reporter, opName);
  ConvRow row{t,
              h,
              sequence.live,
              sequence.seq,
              sequence.start,
              sequence.computed,
              sequence.position,
              {},
              {}};
  if (insert_) {
    row.slot = emitSlot(b, loc, slots_, t, blockSize_, checked_, slotLimit_,
                        &sequence, blockTable_);
    maskPaddingSlot(b, loc, row.slot, row.live);
  }
  if (hoisting)
    row.taps = hoisting->tapSources(*this, b, loc, row);
  return row;
}

// A history tap: cache[physical, h, row, col], col = offset + c.
Value ConvNestBuilder::cacheCol(OpBuilder &b, Location loc,
                                const ConvPart &part, Value c) const {
  return ArithBuilder(b, loc).add(c, cIndex(b, loc, part.range.offset));
}

Value ConvNestBuilder::cacheTap(OpBuilder &b, Location loc,
                                const ConvPart &part, Value physical, Value h,
                                Value row, Value col, int64_t lanes,
                                LaneOrder order) const {
  Value v = loadLanes(b, loc, cache_, ValueRange{physical, h, row, col}, lanes,
                      part.cacheAlign);
  return extToF32(b, loc, v, lanes, order);
}

// Checked, the history tap cache[block_table[b][logical], h, row,
// offset + c]: the logical block must be inside the block table, the
// physical block inside the cache; otherwise report and read 0.
Value ConvNestBuilder::checkedHistory(OpBuilder &b, Location loc,
                                      const ConvRow &row, const ConvPart &part,
                                      Value c, int64_t lanes, Value logical,
                                      Value tapRow) const {
  Value t = row.t, h = row.h;
  Value col = cacheCol(b, loc, part, c);
  Value inTable = cmp(b, loc, arith::CmpIPredicate::ult, logical, tableWidth);
  Value readId = emitIfValue(
      b, loc, inTable,
      [&](OpBuilder &b, Location loc) -> Value {
        Value id = memref::LoadOp::create(b, loc, blockTable_,
                                          ValueRange{row.seq, logical});
        return toI64(b, loc, id);
      },
      [&](OpBuilder &b, Location loc) -> Value { return cI64(b, loc, -1); });
  Value id = readId;
  Value blocks = toI64(b, loc, numBlocks);
  Value idOk = arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::sge, id, cI64(b, loc, 0)),
      cmp(b, loc, arith::CmpIPredicate::slt, id, blocks));
  // One report per tap and stream (head 0, the stream's channel 0): the
  // count is that of the separate convs.
  Value reporter = isReporter(b, loc, h, c);
  Value outside = arith::XOrIOp::create(
      b, loc, inTable, arith::ConstantIntOp::create(b, loc, 1, 1));
  emitReport(b, loc, arith::AndIOp::create(b, loc, outside, reporter), status_,
             CheckKind::LogicalBlock, t, logical, tableWidth,
             opName + " (checked): a history position's logical block is "
                      "beyond the block table's width");
  Value badId = arith::AndIOp::create(
      b, loc, inTable,
      arith::XOrIOp::create(b, loc, idOk,
                            arith::ConstantIntOp::create(b, loc, 1, 1)));
  emitReport(b, loc, arith::AndIOp::create(b, loc, badId, reporter), status_,
             CheckKind::BlockId, t, id, blocks,
             opName + " (checked): a block_table entry read for a history "
                      "tap is negative or not below the cache's num_blocks");
  Value tap = emitIfValue(
      b, loc, idOk,
      [&](OpBuilder &b, Location loc) -> Value {
        return cacheTap(b, loc, part, toIndex(b, loc, id), h, tapRow, col,
                        lanes);
      },
      [&](OpBuilder &b, Location loc) -> Value {
        return splatF32(b, loc, 0.0f, lanes);
      });
  return tap;
}

Value ConvNestBuilder::xTap(OpBuilder &b, Location loc, const ConvPart &part,
                            Value token, Value h, Value c, int64_t lanes,
                            LaneOrder order) const {
  return extToF32(b, loc, part.x.load(b, loc, token, h, c, lanes), lanes,
                  order);
}

// Tap j < W-1 chosen per chunk; checked, a history tap checks and
// reports its block ids (see checkedHistory).
Value ConvNestBuilder::chunkTap(OpBuilder &b, Location loc, const ConvRow &row,
                                const ConvPart &part, Value c, int64_t lanes,
                                int64_t j) const {
  Value h = row.h;
  Value q =
      ArithBuilder(b, loc).sub(row.position, cIndex(b, loc, kernel_ - 1 - j));
  Value inStep = cmp(b, loc, arith::CmpIPredicate::sge, q, row.computed);
  Value ifStep = emitIfValue(
      b, loc, inStep,
      [&](OpBuilder &b, Location loc) -> Value {
        ArithBuilder ab(b, loc);
        Value token = ab.add(row.seqStart, ab.sub(q, row.computed));
        return xTap(b, loc, part, token, h, c, lanes);
      },
      [&](OpBuilder &b, Location loc) -> Value {
        Value negative =
            cmp(b, loc, arith::CmpIPredicate::slt, q, cIndex(b, loc, 0));
        auto ifZero = scf::IfOp::create(
            b, loc, negative,
            [&](OpBuilder &b, Location loc) {
              scf::YieldOp::create(b, loc, splatF32(b, loc, 0.0f, lanes));
            },
            [&](OpBuilder &b, Location loc) {
              auto [logical, tapRow] = emitBlockAndRow(b, loc, q, blockSize_);
              if (checked_) {
                scf::YieldOp::create(b, loc,
                                     checkedHistory(b, loc, row, part, c, lanes,
                                                    logical, tapRow));
                return;
              }
              Value col = cacheCol(b, loc, part, c);
              Value physical =
                  toIndex(b, loc,
                          memref::LoadOp::create(b, loc, blockTable_,
                                                 ValueRange{row.seq, logical}));
              scf::YieldOp::create(
                  b, loc,
                  cacheTap(b, loc, part, physical, h, tapRow, col, lanes));
            });
        return ifZero.getResult(0);
      });
  return ifStep;
}

// acc = bias[h*w + c] (or 0), in f32.
Value ConvNestBuilder::biasLanes(OpBuilder &b, Location loc,
                                 const ConvPart &part, Value channel,
                                 int64_t lanes, LaneOrder order) const {
  if (!part.bias)
    return splatF32(b, loc, 0.0f, lanes);
  return extToF32(
      b, loc,
      loadLanes(b, loc, part.bias, ValueRange{channel}, lanes, part.biasAlign),
      lanes, order);
}

// The weights of channels h*w + c.., per tap, in f32.
SmallVector<Value> ConvNestBuilder::tapWeightsOf(OpBuilder &b, Location loc,
                                                 const ConvPart &part,
                                                 Value channel, int64_t lanes,
                                                 LaneOrder order) const {
  ArithBuilder ab(b, loc);
  SmallVector<Value> tapWeights;
  if (lanes == 1) {
    for (int64_t j = 0; j < kernel_; ++j)
      tapWeights.push_back(extToF32(
          b, loc,
          memref::LoadOp::create(b, loc, part.weights,
                                 ValueRange{channel, cIndex(b, loc, j)}),
          1));
    return tapWeights;
  }
  Value all = loadLanes(b, loc, part.flatWeights,
                        ValueRange{ab.mul(channel, cIndex(b, loc, kernel_))},
                        lanes * kernel_, part.weightsAlign);
  if (hoisting && kernel_ % 2 == 0)
    return hoisting->pairedTapWeights(*this, b, loc, all, lanes, order);
  if (kernel_ == 1)
    return {extToF32(b, loc, all, lanes, order)};
  // Tap j of each lane's channel: the shuffle puts the lanes in `order`.
  for (int64_t j = 0; j < kernel_; ++j) {
    SmallVector<int64_t> mask;
    for (int64_t l = 0; l < lanes; ++l)
      mask.push_back(laneChannel(order, lanes, l) * kernel_ + j);
    Value wj = vector::ShuffleOp::create(b, loc, all, all, mask);
    tapWeights.push_back(extToF32(b, loc, wj, lanes));
  }
  return tapWeights;
}

// acc = fma(w_j, tap_j, acc) for every tap in ascending order (the last
// tap is x[t] itself); act; + x (residual).
Value ConvNestBuilder::convResult(OpBuilder &b, Location loc,
                                  ArrayRef<Value> tapWeights,
                                  function_ref<Value(int64_t)> tapValue,
                                  Value acc, Value xt, int64_t lanes) const {
  for (int64_t j = 0; j < kernel_; ++j)
    acc = math::FmaOp::create(b, loc, tapWeights[j], tapValue(j), acc);
  if (silu) {
    // a * 1 / (1 + exp(-a)), in f32.
    Value one = splatF32(b, loc, 1.0f, lanes);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, acc));
    Value sigmoid = arith::DivFOp::create(
        b, loc, one, arith::AddFOp::create(b, loc, one, e));
    acc = arith::MulFOp::create(b, loc, acc, sigmoid);
  }
  if (residual)
    acc = arith::AddFOp::create(b, loc, acc, xt);
  return acc;
}

Value ConvNestBuilder::convLanesValue(OpBuilder &b, Location loc,
                                      const ConvRow &row, const ConvPart &part,
                                      Value c, int64_t lanes,
                                      Value xRaw) const {
  Value h = row.h;
  ArithBuilder ab(b, loc);
  Value channel = ab.add(ab.mul(h, cIndex(b, loc, part.range.width)), c);
  Value acc = biasLanes(b, loc, part, channel, lanes);
  SmallVector<Value> tapWeights = tapWeightsOf(b, loc, part, channel, lanes);
  if (insert_) {
    emitIf(b, loc, row.slot.valid, [&](OpBuilder &b, Location loc) {
      Value col =
          ArithBuilder(b, loc).add(c, cIndex(b, loc, part.range.offset));
      storeLanes(b, loc, xRaw, cache_,
                 ValueRange{row.slot.block, h, row.slot.row, col},
                 part.cacheAlign);
    });
  }
  Value xt = extToF32(b, loc, xRaw, lanes);
  SmallVector<Value> hoisted;
  if (hoisting)
    hoisted = hoisting->hoistedTaps(*this, b, loc, row, part, c, lanes);
  // Each tap chosen where its fma is (the GPU's order of ops).
  auto tapValue = [&](int64_t j) {
    // The last tap (q = p >= num_computed) is the token's own input.
    return j == kernel_ - 1 ? xt
           : hoisting       ? hoisted[j]
                            : chunkTap(b, loc, row, part, c, lanes, j);
  };
  return convResult(b, loc, tapWeights, tapValue, acc, xt, lanes);
}

Value ConvNestBuilder::rowValue(OpBuilder &b, Location loc, const ConvRow &row,
                                sconv::Stream stream, Value c,
                                int64_t lanes) const {
  const ConvPart &part =
      parts_[llvm::find(partStreams, stream) - partStreams.begin()];
  Value xRaw = part.x.load(b, loc, row.t, row.h, c, lanes);
  Value value = emitIfValue(
      b, loc, row.live,
      [&](OpBuilder &b, Location loc) -> Value {
        return truncToBf16(
            b, loc, convLanesValue(b, loc, row, part, c, lanes, xRaw), lanes);
      },
      [&](OpBuilder &b, Location loc) -> Value { return xRaw; });
  return value;
}

// A padding token (or, checked, one with a bad token_seq entry) reads and
// writes no cache; its output is its input.
void ConvNestBuilder::lanesBody(OpBuilder &b, Location loc, const ConvRow &row,
                                const ConvPart &part, Value c,
                                int64_t lanes) const {
  Value t = row.t, h = row.h;
  // x[t]: read once, for the last tap, the residual and the cache store
  // (and a padding token's output).
  Value xRaw = part.x.load(b, loc, t, h, c, lanes);
  emitIfElse(
      b, loc, row.live,
      [&](OpBuilder &b, Location loc) {
        Value acc = convLanesValue(b, loc, row, part, c, lanes, xRaw);
        part.out.store(b, loc, truncToBf16(b, loc, acc, lanes), t, h, c);
      },
      [&](OpBuilder &b, Location loc) {
        part.out.store(b, loc, xRaw, t, h, c);
      });
}

void ConvNestBuilder::emitTokenNest(OpBuilder &b, Location loc) const {
  // The outer body's values, for the inner body of the same (t, h).
  ConvRow row;
  emitNest(
      b, loc, tokens_, layout_.headsPerRank, widths, splitStreams,
      [&](OpBuilder &b, Location loc, Value t, Value h, unsigned i,
          Value chunk) {
        const ConvPart &part = parts_[i];
        // One report per bad slot, token and stream, as the inserts do.
        if (insert_ && checked_)
          emitSlotReports(b, loc, op_, row.slot, isReporter(b, loc, h, chunk),
                          status_, t, slotLimit_);
        emitChunk(b, loc, chunk, part.range.width,
                  [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                    lanesBody(b, loc, row, part, c, lanes);
                  });
      },
      [&](OpBuilder &b, Location loc, Value t, Value h) {
        row = tokenPrologue(b, loc, t, h);
      });
}

void ConvNestBuilder::build() {
  if (strategy)
    strategy->emitConvNest(*this, rewriter, loc);
  else
    emitTokenNest(rewriter, loc);
}

LogicalResult
inkling::loops::lowerWithConvNest(PatternRewriter &rewriter,
                                  const ConvSpec &spec, Value stepValue,
                                  const SConvToLoopsOptions &options,
                                  function_ref<void(ConvNestBuilder &)> emit) {
  auto step = stepValue.getDefiningOp<StepOp>();
  if (!step)
    return rewriter.notifyMatchFailure(spec.op, kNoStepMessage);
  ConvNestBuilder nest(rewriter, spec, step, options);
  emit(nest);
  rewriter.eraseOp(spec.op);
  return success();
}

LoopStrategy::~LoopStrategy() = default;
TapHoisting::~TapHoisting() = default;

void LoopStrategy::emitConvNest(ConvNestBuilder &nest, OpBuilder &b,
                                Location loc) const {
  nest.emitTokenNest(b, loc);
}

namespace {

LogicalResult lowerConvs(PatternRewriter &rewriter, const ConvSpec &spec,
                         Value stepValue, const SConvToLoopsOptions &options) {
  return lowerWithConvNest(rewriter, spec, stepValue, options,
                           [](ConvNestBuilder &nest) { nest.build(); });
}

struct ConvLowering : OptionsPattern<ConvOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    ConvStream stream{op.getStream(), op.getX(), op.getWeights(), op.getBias(),
                      op.getOut()};
    ConvSpec spec{op,
                  op.getCache(),
                  op.getLayout(),
                  stream,
                  op.getResidual(),
                  op.getActivation() == Activation::Silu,
                  /*insert=*/false};
    return lowerConvs(rewriter, spec, op.getStep(), options);
  }
};

struct FusedConvLowering : OptionsPattern<FusedConvOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(FusedConvOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<ConvStream> streams;
    for (auto [i, stream] : llvm::enumerate(op.getStreamList()))
      streams.push_back({stream, op.getInputs()[i], op.getWeights()[i],
                         op.getBiases().empty() ? Value() : op.getBiases()[i],
                         op.getOuts()[i]});
    ConvSpec spec{op,
                  op.getCache(),
                  op.getLayout(),
                  streams,
                  op.getResidual(),
                  op.getActivation() == Activation::Silu,
                  op.getInsert()};
    return lowerConvs(rewriter, spec, op.getStep(), options);
  }
};

} // namespace

void inkling::loops::populateConvLoweringPatterns(
    RewritePatternSet &patterns, const SConvToLoopsOptions &options) {
  patterns.add<ConvLowering, FusedConvLowering>(patterns.getContext(), options);
}
