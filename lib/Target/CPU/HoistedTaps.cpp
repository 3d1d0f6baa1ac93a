//===- HoistedTaps.cpp - The CPU's taps chosen per (token, head) ----------===//
//
// The CPU's TapHoisting (hoist-taps; why: the inkling-cpu-lower-to-loops
// pass description): per (t, h), before the chunk loop, each tap's source
// (step input, cache row through the block table, or 0), so that the chunk
// loops only load (the block-table loads cannot leave the chunk loop
// otherwise: the cache stores may alias them); when tap 0 is in the step
// (prefill) every tap reads x[t-W+1..t-1] without selection; an even
// kernel's weights split from 32-bit words.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Conversion/SConvToLoops/IRHelpers.h"
#include "inkling/Target/CPU/LoopStrategy.h"

#include <tuple>

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

namespace {

/// Where the tap `back` positions before token t of `row` reads.
TapSource tapSource(const ConvNestBuilder &nest, OpBuilder &b, Location loc,
                    const ConvRow &row, int64_t back) {
  ArithBuilder ab(b, loc);
  Value q = ab.sub(row.position, cIndex(b, loc, back));
  TapSource tap;
  tap.inStep = cmp(b, loc, arith::CmpIPredicate::sge, q, row.computed);
  tap.token = ab.add(row.seqStart, ab.sub(q, row.computed));
  Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
  tap.history = arith::AndIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc, arith::XOrIOp::create(b, loc, tap.inStep, yes),
          cmp(b, loc, arith::CmpIPredicate::sge, q, cIndex(b, loc, 0))),
      row.live);
  // Only used where history holds (q >= 0).
  Value logical;
  std::tie(logical, tap.row) = emitBlockAndRow(b, loc, q, nest.blockSize());
  Value read = emitIfValue(
      b, loc, tap.history,
      [&](OpBuilder &b, Location loc) -> Value {
        return toIndex(b, loc,
                       memref::LoadOp::create(b, loc, nest.blockTable(),
                                              ValueRange{row.seq, logical}));
      },
      [&](OpBuilder &b, Location loc) -> Value { return cIndex(b, loc, 0); });
  tap.block = read;
  return tap;
}

} // namespace

SmallVector<TapSource>
cpu::CPUTapHoisting::tapSources(const ConvNestBuilder &nest, OpBuilder &b,
                                Location loc, const ConvRow &row) const {
  SmallVector<TapSource> taps;
  for (int64_t j = 0; j + 1 < nest.kernel(); ++j)
    taps.push_back(tapSource(nest, b, loc, row, nest.kernel() - 1 - j));
  return taps;
}

// Taps 0..W-2 from the (t, h) prologue's sources: in the prefill case
// x[t-W+1..t-1] (no selection), else per tap x, cache or 0.
SmallVector<Value> cpu::CPUTapHoisting::hoistedTaps(
    const ConvNestBuilder &nest, OpBuilder &b, Location loc, const ConvRow &row,
    const ConvPart &part, Value c, int64_t lanes) const {
  int64_t kernel = nest.kernel();
  if (row.taps.empty())
    return {};
  Value t = row.t, h = row.h;
  auto prefill = scf::IfOp::create(
      b, loc, row.taps.front().inStep,
      [&](OpBuilder &b, Location loc) {
        SmallVector<Value> values;
        for (int64_t j = 0; j + 1 < kernel; ++j)
          values.push_back(nest.xTap(
              b, loc, part,
              ArithBuilder(b, loc).sub(t, cIndex(b, loc, kernel - 1 - j)), h, c,
              lanes));
        scf::YieldOp::create(b, loc, values);
      },
      [&](OpBuilder &b, Location loc) {
        SmallVector<Value> values;
        for (const TapSource &tap : row.taps)
          values.push_back(tapValue(nest, b, loc, part, tap, h, c, lanes));
        scf::YieldOp::create(b, loc, values);
      });
  return SmallVector<Value>(prefill.getResults());
}

// x[tap.token], the cache row of the tap, or 0, as `tap` says.
Value cpu::CPUTapHoisting::tapValue(const ConvNestBuilder &nest, OpBuilder &b,
                                    Location loc, const ConvPart &part,
                                    const TapSource &tap, Value h, Value c,
                                    int64_t lanes, LaneOrder order) const {
  return emitIfValue(
      b, loc, tap.inStep,
      [&](OpBuilder &b, Location loc) -> Value {
        return nest.xTap(b, loc, part, tap.token, h, c, lanes, order);
      },
      [&](OpBuilder &b, Location loc) -> Value {
        return emitIfValue(
            b, loc, tap.history,
            [&](OpBuilder &b, Location loc) -> Value {
              return nest.cacheTap(b, loc, part, tap.block, h, tap.row,
                                   nest.cacheCol(b, loc, part, c), lanes,
                                   order);
            },
            [&](OpBuilder &b, Location loc) -> Value {
              return splatF32(b, loc, 0.0f, lanes);
            });
      });
}

// The weights of `lanes` channels for an even kernel:
// the 32-bit words of `all` ([lanes x W] bf16) each hold taps 2m (low
// half) and 2m+1 (high half) of a channel; a bf16's f32 is its bits << 16,
// so tap 2m is word << 16 and tap 2m+1 is word & 0xffff0000 (the same
// bits as extf, with half the shuffles of a deinterleave per tap).
SmallVector<Value>
cpu::CPUTapHoisting::pairedTapWeights(const ConvNestBuilder &nest, OpBuilder &b,
                                      Location loc, Value all, int64_t lanes,
                                      LaneOrder order) const {
  int64_t kernel = nest.kernel();
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
