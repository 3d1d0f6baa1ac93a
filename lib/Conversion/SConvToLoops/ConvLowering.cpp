//===- ConvLowering.cpp - sconv.conv / fused_conv to loops ----------------===//
//
// One loop nest for the convs of one or more streams over one cache, with
// or without storing each stream's input at the step's slots: `sconv.conv`
// is the one-stream case of `sconv.fused_conv` without `and_insert`.
//
//   scf.parallel (t, h) {
//     b = the sequence of t (binary search of query_start_loc); p, nc
//     [and_insert: slot = slot_mapping[t]; block, row]
//     [hoist-taps: per tap j < W-1 its source: x row, cache block and row, 0]
//     scf.parallel chunk in [0, chunks of all streams) {   // row order
//       stream i of the chunk, channels c = 8 * c':
//         x = x_i[t, h, c]                       // loaded once
//         [and_insert: if slot >= 0: cache[block, h, row, offset_i + c] = x]
//         acc = bias; acc = fma(w_j, tap_j, acc) for j < W-1 (history/step;
//           hoist-taps, every tap in the step: x[t-W+1+j], no selection)
//         acc = fma(w_{W-1}, x, acc); act; + x (residual); out_i = bf16(acc)
//   } }
//
// token-runs (the CPU's form, unchecked): when real tokens >= W * B, the
// token-run nest of ConvTokenRuns.cpp instead, chosen at run time.
//
// ConvNestBuilder (ConvNest.h) holds the step's buffers and the per-(t, h)
// values; each piece of the nest above is one of its member functions.
//
//===----------------------------------------------------------------------===//

#include "ConvNest.h"

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
    : rewriter(rewriter), op(spec.op), cache(spec.cache),
      residual(spec.residual), silu(spec.silu), insert(spec.insert), step(step),
      options(options), checked(options.checked),
      hoist(options.hoistTaps && !options.checked), loc(op->getLoc()),
      layout(spec.layout.getDerived()), kernel(layout.config.kernel),
      blockSize(layout.blockSize) {
  MemRefType cacheType = staticCacheType(cache);
  SmallVector<inkling::StreamRange> ranges;
  for (const ConvStream &s : spec.streams)
    ranges.push_back(layout.range(toRuntime(s.stream)));
  for (unsigned i : orderByOffset(ranges)) {
    parts.emplace_back(layout, spec.streams[i], cacheType);
    partStreams.push_back(spec.streams[i].stream);
    widths.push_back(ranges[i].width);
  }

  numComputedBuf = step.getNumComputed();
  blockTable = step.getBlockTable();
  slots = step.getSlotMapping();
  status = step.getStatus();
  opName = op->getName().getStringRef().str();

  tokens = memref::DimOp::create(rewriter, loc, spec.streams.front().x, 0);
  batch = memref::DimOp::create(rewriter, loc, numComputedBuf, 0);
  numBlocks = memref::DimOp::create(rewriter, loc, cache, 0);
  tableWidth = memref::DimOp::create(rewriter, loc, blockTable, 1);
  if (insert)
    slotLimit = emitSlotLimit(rewriter, loc, cache, blockSize);
  for (ConvPart &part : parts)
    part.flatWeights = memref::CollapseShapeOp::create(
        rewriter, loc, part.weights, ArrayRef<ReassociationIndices>{{0, 1}});
}

ConvNestBuilder::TapSource
ConvNestBuilder::tapSource(OpBuilder &b, Location loc, int64_t back) {
  ArithBuilder ab(b, loc);
  Value q = ab.sub(position, cIndex(b, loc, back));
  TapSource tap;
  tap.inStep = cmp(b, loc, arith::CmpIPredicate::sge, q, computed);
  tap.token = ab.add(seqStart, ab.sub(q, computed));
  Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
  tap.history = arith::AndIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc, arith::XOrIOp::create(b, loc, tap.inStep, yes),
          cmp(b, loc, arith::CmpIPredicate::sge, q, cIndex(b, loc, 0))),
      live);
  // Only used where history holds (q >= 0).
  Value logical;
  std::tie(logical, tap.row) = emitBlockAndRow(b, loc, q, blockSize);
  auto read = scf::IfOp::create(
      b, loc, tap.history,
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(
            b, loc,
            toIndex(b, loc,
                    memref::LoadOp::create(b, loc, blockTable,
                                           ValueRange{seq, logical})));
      },
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(b, loc, cIndex(b, loc, 0));
      });
  tap.block = read.getResult(0);
  return tap;
}

// The per-(t, h) values of the members (see ConvNest.h).
void ConvNestBuilder::tokenPrologue(OpBuilder &b, Location loc, Value t,
                                    Value h) {
  Value reporter;
  if (checked)
    reporter = cmp(b, loc, arith::CmpIPredicate::eq, h, cIndex(b, loc, 0));
  SequenceInfo sequence =
      emitTokenSequence(b, loc, step, batch, t, checked, reporter, opName);
  live = sequence.live;
  seq = sequence.seq;
  seqStart = sequence.start;
  computed = sequence.computed;
  position = sequence.position;
  if (insert) {
    slot = emitSlot(b, loc, slots, t, blockSize, checked, slotLimit, &sequence,
                    blockTable);
    maskPaddingSlot(b, loc, slot, live);
  }
  taps.clear();
  if (hoist)
    for (int64_t j = 0; j + 1 < kernel; ++j)
      taps.push_back(tapSource(b, loc, kernel - 1 - j));
}

// A history tap: cache[physical, h, row, col], col = offset + c.
Value ConvNestBuilder::cacheCol(OpBuilder &b, Location loc,
                                const ConvPart &part, Value c) {
  return ArithBuilder(b, loc).add(c, cIndex(b, loc, part.range.offset));
}

Value ConvNestBuilder::cacheTap(OpBuilder &b, Location loc,
                                const ConvPart &part, Value physical, Value h,
                                Value row, Value col, int64_t lanes,
                                LaneOrder order) {
  Value v = loadLanes(b, loc, cache, ValueRange{physical, h, row, col}, lanes,
                      part.cacheAlign);
  return extToF32(b, loc, v, lanes, order);
}

// Checked, the history tap cache[block_table[b][logical], h, row,
// offset + c]: the logical block must be inside the block table, the
// physical block inside the cache; otherwise report and read 0.
Value ConvNestBuilder::checkedHistory(OpBuilder &b, Location loc,
                                      const ConvPart &part, Value t, Value h,
                                      Value c, int64_t lanes, Value logical,
                                      Value row) {
  Value col = cacheCol(b, loc, part, c);
  Value inTable = cmp(b, loc, arith::CmpIPredicate::ult, logical, tableWidth);
  auto readId = scf::IfOp::create(
      b, loc, inTable,
      [&](OpBuilder &b, Location loc) {
        Value id = memref::LoadOp::create(b, loc, blockTable,
                                          ValueRange{seq, logical});
        scf::YieldOp::create(b, loc, toI64(b, loc, id));
      },
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(b, loc, cI64(b, loc, -1));
      });
  Value id = readId.getResult(0);
  Value blocks = toI64(b, loc, numBlocks);
  Value idOk = arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::sge, id, cI64(b, loc, 0)),
      cmp(b, loc, arith::CmpIPredicate::slt, id, blocks));
  // One report per tap and stream (head 0, the stream's channel 0): the
  // count is that of the separate convs.
  Value reporter = isReporter(b, loc, h, c);
  Value outside = arith::XOrIOp::create(
      b, loc, inTable, arith::ConstantIntOp::create(b, loc, 1, 1));
  emitReport(b, loc, arith::AndIOp::create(b, loc, outside, reporter), status,
             CheckKind::LogicalBlock, t, logical, tableWidth,
             opName + " (checked): a history position's logical block is "
                      "beyond the block table's width");
  Value badId = arith::AndIOp::create(
      b, loc, inTable,
      arith::XOrIOp::create(b, loc, idOk,
                            arith::ConstantIntOp::create(b, loc, 1, 1)));
  emitReport(b, loc, arith::AndIOp::create(b, loc, badId, reporter), status,
             CheckKind::BlockId, t, id, blocks,
             opName + " (checked): a block_table entry read for a history "
                      "tap is negative or not below the cache's num_blocks");
  auto tap = scf::IfOp::create(
      b, loc, idOk,
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(
            b, loc,
            cacheTap(b, loc, part, toIndex(b, loc, id), h, row, col, lanes));
      },
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(b, loc, splatF32(b, loc, 0.0f, lanes));
      });
  return tap.getResult(0);
}

Value ConvNestBuilder::xTap(OpBuilder &b, Location loc, const ConvPart &part,
                            Value token, Value h, Value c, int64_t lanes,
                            LaneOrder order) {
  return extToF32(b, loc, part.x.load(b, loc, token, h, c, lanes), lanes,
                  order);
}

// Taps 0..W-2 from the (t, h) prologue's sources: in the prefill case
// x[t-W+1..t-1] (no selection), else per tap x, cache or 0.
SmallVector<Value> ConvNestBuilder::hoistedTaps(OpBuilder &b, Location loc,
                                                const ConvPart &part, Value t,
                                                Value h, Value c,
                                                int64_t lanes) {
  if (taps.empty())
    return {};
  auto prefill = scf::IfOp::create(
      b, loc, taps.front().inStep,
      [&](OpBuilder &b, Location loc) {
        SmallVector<Value> values;
        for (int64_t j = 0; j + 1 < kernel; ++j)
          values.push_back(
              xTap(b, loc, part,
                   ArithBuilder(b, loc).sub(t, cIndex(b, loc, kernel - 1 - j)),
                   h, c, lanes));
        scf::YieldOp::create(b, loc, values);
      },
      [&](OpBuilder &b, Location loc) {
        SmallVector<Value> values;
        for (const TapSource &tap : taps) {
          auto fromStep = scf::IfOp::create(
              b, loc, tap.inStep,
              [&](OpBuilder &b, Location loc) {
                scf::YieldOp::create(
                    b, loc, xTap(b, loc, part, tap.token, h, c, lanes));
              },
              [&](OpBuilder &b, Location loc) {
                auto fromCache = scf::IfOp::create(
                    b, loc, tap.history,
                    [&](OpBuilder &b, Location loc) {
                      scf::YieldOp::create(
                          b, loc,
                          cacheTap(b, loc, part, tap.block, h, tap.row,
                                   cacheCol(b, loc, part, c), lanes));
                    },
                    [&](OpBuilder &b, Location loc) {
                      scf::YieldOp::create(b, loc,
                                           splatF32(b, loc, 0.0f, lanes));
                    });
                scf::YieldOp::create(b, loc, fromCache.getResult(0));
              });
          values.push_back(fromStep.getResult(0));
        }
        scf::YieldOp::create(b, loc, values);
      });
  return SmallVector<Value>(prefill.getResults());
}

// Tap j < W-1 chosen per chunk; checked, a history tap checks and
// reports its block ids (see checkedHistory).
Value ConvNestBuilder::chunkTap(OpBuilder &b, Location loc,
                                const ConvPart &part, Value t, Value h, Value c,
                                int64_t lanes, int64_t j) {
  Value q = ArithBuilder(b, loc).sub(position, cIndex(b, loc, kernel - 1 - j));
  Value inStep = cmp(b, loc, arith::CmpIPredicate::sge, q, computed);
  auto ifStep = scf::IfOp::create(
      b, loc, inStep,
      [&](OpBuilder &b, Location loc) {
        ArithBuilder ab(b, loc);
        Value token = ab.add(seqStart, ab.sub(q, computed));
        scf::YieldOp::create(b, loc, xTap(b, loc, part, token, h, c, lanes));
      },
      [&](OpBuilder &b, Location loc) {
        Value negative =
            cmp(b, loc, arith::CmpIPredicate::slt, q, cIndex(b, loc, 0));
        auto ifZero = scf::IfOp::create(
            b, loc, negative,
            [&](OpBuilder &b, Location loc) {
              scf::YieldOp::create(b, loc, splatF32(b, loc, 0.0f, lanes));
            },
            [&](OpBuilder &b, Location loc) {
              auto [logical, row] = emitBlockAndRow(b, loc, q, blockSize);
              if (checked) {
                scf::YieldOp::create(
                    b, loc,
                    checkedHistory(b, loc, part, t, h, c, lanes, logical, row));
                return;
              }
              Value col = cacheCol(b, loc, part, c);
              Value physical =
                  toIndex(b, loc,
                          memref::LoadOp::create(b, loc, blockTable,
                                                 ValueRange{seq, logical}));
              scf::YieldOp::create(
                  b, loc, cacheTap(b, loc, part, physical, h, row, col, lanes));
            });
        scf::YieldOp::create(b, loc, ifZero.getResult(0));
      });
  return ifStep.getResult(0);
}

// The CPU's form of the weights of `lanes` channels for an even kernel:
// the 32-bit words of `all` ([lanes x W] bf16) each hold taps 2m (low
// half) and 2m+1 (high half) of a channel; a bf16's f32 is its bits << 16,
// so tap 2m is word << 16 and tap 2m+1 is word & 0xffff0000 (the same
// bits as extf, with half the shuffles of a deinterleave per tap).
SmallVector<Value> ConvNestBuilder::pairedTapWeights(OpBuilder &b, Location loc,
                                                     Value all, int64_t lanes,
                                                     LaneOrder order) {
  auto wordsType = VectorType::get({lanes * kernel / 2}, b.getI32Type());
  Value words = vector::BitCastOp::create(b, loc, wordsType, all);
  SmallVector<Value> weights;
  for (int64_t m = 0; m < kernel / 2; ++m) {
    SmallVector<int64_t> mask;
    for (int64_t l = 0; l < lanes; ++l)
      mask.push_back(laneChannel(order, lanes, l) * kernel / 2 + m);
    auto [even, odd] = wordHalvesAsF32(
        b, loc, vector::ShuffleOp::create(b, loc, words, words, mask));
    weights.push_back(even);
    weights.push_back(odd);
  }
  return weights;
}

// acc = bias[h*w + c] (or 0), in f32.
Value ConvNestBuilder::biasLanes(OpBuilder &b, Location loc,
                                 const ConvPart &part, Value channel,
                                 int64_t lanes, LaneOrder order) {
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
                                                 LaneOrder order) {
  ArithBuilder ab(b, loc);
  SmallVector<Value> tapWeights;
  if (lanes == 1) {
    for (int64_t j = 0; j < kernel; ++j)
      tapWeights.push_back(extToF32(
          b, loc,
          memref::LoadOp::create(b, loc, part.weights,
                                 ValueRange{channel, cIndex(b, loc, j)}),
          1));
    return tapWeights;
  }
  Value all = loadLanes(b, loc, part.flatWeights,
                        ValueRange{ab.mul(channel, cIndex(b, loc, kernel))},
                        lanes * kernel, part.weightsAlign);
  if (hoist && kernel % 2 == 0)
    return pairedTapWeights(b, loc, all, lanes, order);
  if (kernel == 1)
    return {extToF32(b, loc, all, lanes, order)};
  // Tap j of each lane's channel: the shuffle puts the lanes in `order`.
  for (int64_t j = 0; j < kernel; ++j) {
    SmallVector<int64_t> mask;
    for (int64_t l = 0; l < lanes; ++l)
      mask.push_back(laneChannel(order, lanes, l) * kernel + j);
    Value wj = vector::ShuffleOp::create(b, loc, all, all, mask);
    tapWeights.push_back(extToF32(b, loc, wj, lanes));
  }
  return tapWeights;
}

// acc = fma(w_j, tap_j, acc) for every tap in ascending order (the last
// tap is x[t] itself); act; + x (residual); out[t] = bf16(acc).
void ConvNestBuilder::finishLanes(OpBuilder &b, Location loc,
                                  const ConvPart &part,
                                  ArrayRef<Value> tapWeights,
                                  function_ref<Value(int64_t)> tapValue,
                                  Value acc, Value xt, Value t, Value h,
                                  Value c, int64_t lanes, LaneOrder order) {
  acc = convResult(b, loc, tapWeights, tapValue, acc, xt, lanes);
  part.out.store(b, loc, truncToBf16(b, loc, acc, lanes, order), t, h, c);
}

Value ConvNestBuilder::convResult(OpBuilder &b, Location loc,
                                  ArrayRef<Value> tapWeights,
                                  function_ref<Value(int64_t)> tapValue,
                                  Value acc, Value xt, int64_t lanes) {
  for (int64_t j = 0; j < kernel; ++j)
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

void ConvNestBuilder::convLanes(OpBuilder &b, Location loc,
                                const ConvPart &part, Value t, Value h, Value c,
                                int64_t lanes, Value xRaw) {
  Value acc = convLanesValue(b, loc, part, t, h, c, lanes, xRaw);
  part.out.store(b, loc, truncToBf16(b, loc, acc, lanes), t, h, c);
}

Value ConvNestBuilder::convLanesValue(OpBuilder &b, Location loc,
                                      const ConvPart &part, Value t, Value h,
                                      Value c, int64_t lanes, Value xRaw) {
  ArithBuilder ab(b, loc);
  Value channel = ab.add(ab.mul(h, cIndex(b, loc, part.range.width)), c);
  Value acc = biasLanes(b, loc, part, channel, lanes);
  SmallVector<Value> tapWeights = tapWeightsOf(b, loc, part, channel, lanes);
  if (insert) {
    scf::IfOp::create(b, loc, slot.valid, [&](OpBuilder &b, Location loc) {
      Value col =
          ArithBuilder(b, loc).add(c, cIndex(b, loc, part.range.offset));
      storeLanes(b, loc, xRaw, cache, ValueRange{slot.block, h, slot.row, col},
                 part.cacheAlign);
      scf::YieldOp::create(b, loc);
    });
  }
  Value xt = extToF32(b, loc, xRaw, lanes);
  SmallVector<Value> hoisted;
  if (hoist)
    hoisted = hoistedTaps(b, loc, part, t, h, c, lanes);
  // Each tap chosen where its fma is (the GPU's order of ops).
  auto tapValue = [&](int64_t j) {
    // The last tap (q = p >= num_computed) is the token's own input.
    return j == kernel - 1 ? xt
           : hoist         ? hoisted[j]
                           : chunkTap(b, loc, part, t, h, c, lanes, j);
  };
  return convResult(b, loc, tapWeights, tapValue, acc, xt, lanes);
}

Value ConvNestBuilder::rowValue(OpBuilder &b, Location loc,
                                sconv::Stream stream, Value t, Value h, Value c,
                                int64_t lanes) {
  const ConvPart &part =
      parts[llvm::find(partStreams, stream) - partStreams.begin()];
  Value xRaw = part.x.load(b, loc, t, h, c, lanes);
  auto value = scf::IfOp::create(
      b, loc, live,
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(
            b, loc,
            truncToBf16(b, loc,
                        convLanesValue(b, loc, part, t, h, c, lanes, xRaw),
                        lanes));
      },
      [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, xRaw); });
  return value.getResult(0);
}

// A padding token (or, checked, one with a bad token_seq entry) reads and
// writes no cache; its output is its input.
void ConvNestBuilder::lanesBody(OpBuilder &b, Location loc,
                                const ConvPart &part, Value t, Value h, Value c,
                                int64_t lanes) {
  // x[t]: read once, for the last tap, the residual and the cache store
  // (and a padding token's output).
  Value xRaw = part.x.load(b, loc, t, h, c, lanes);
  scf::IfOp::create(
      b, loc, live,
      [&](OpBuilder &b, Location loc) {
        convLanes(b, loc, part, t, h, c, lanes, xRaw);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &b, Location loc) {
        part.out.store(b, loc, xRaw, t, h, c);
        scf::YieldOp::create(b, loc);
      });
}

void ConvNestBuilder::tokenNest(OpBuilder &b, Location loc) {
  emitNest(
      b, loc, tokens, layout.headsPerRank, widths, options.splitStreams,
      [&](OpBuilder &b, Location loc, Value t, Value h, unsigned i,
          Value chunk) {
        const ConvPart &part = parts[i];
        // One report per bad slot, token and stream, as the inserts do.
        if (insert && checked)
          emitSlotReports(b, loc, op, slot, isReporter(b, loc, h, chunk),
                          status, t, slotLimit);
        emitChunk(b, loc, chunk, part.range.width,
                  [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                    lanesBody(b, loc, part, t, h, c, lanes);
                  });
      },
      [&](OpBuilder &b, Location loc, Value t, Value h) {
        tokenPrologue(b, loc, t, h);
      });
}

void ConvNestBuilder::build() {
  if (!options.tokenRuns || checked) {
    tokenNest(rewriter, loc);
  } else {
    // Runs when the sequences average at least `kernel` real tokens (most
    // windows come from x); else the (token, head) nest.
    Value realTokens = emitRealTokens(rewriter, loc, step);
    Value prefill = arith::AndIOp::create(
        rewriter, loc,
        cmp(rewriter, loc, arith::CmpIPredicate::uge, realTokens,
            ArithBuilder(rewriter, loc)
                .mul(batch, cIndex(rewriter, loc, kernel))),
        cmp(rewriter, loc, arith::CmpIPredicate::ugt, batch,
            cIndex(rewriter, loc, 0)));
    scf::IfOp::create(
        rewriter, loc, prefill,
        [&](OpBuilder &b, Location loc) {
          runNest(b, loc, realTokens);
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &b, Location loc) {
          tokenNest(b, loc);
          scf::YieldOp::create(b, loc);
        });
  }
}

namespace {

LogicalResult lowerConvs(PatternRewriter &rewriter, const ConvSpec &spec,
                         Value stepValue, const SConvToLoopsOptions &options) {
  auto step = stepValue.getDefiningOp<StepOp>();
  if (!step)
    return rewriter.notifyMatchFailure(spec.op, kNoStepMessage);
  ConvNestBuilder(rewriter, spec, step, options).build();
  rewriter.eraseOp(spec.op);
  return success();
}

struct ConvLowering : OpRewritePattern<ConvOp> {
  ConvLowering(MLIRContext *context, SConvToLoopsOptions options)
      : OpRewritePattern(context), options(options) {}

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

  SConvToLoopsOptions options;
};

struct FusedConvLowering : OpRewritePattern<FusedConvOp> {
  FusedConvLowering(MLIRContext *context, SConvToLoopsOptions options)
      : OpRewritePattern(context), options(options) {}

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

  SConvToLoopsOptions options;
};

} // namespace

void inkling::loops::populateConvLoweringPatterns(
    RewritePatternSet &patterns, const SConvToLoopsOptions &options) {
  patterns.add<ConvLowering, FusedConvLowering>(patterns.getContext(), options);
}
