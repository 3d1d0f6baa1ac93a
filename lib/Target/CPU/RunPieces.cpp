//===- RunPieces.cpp - What the CPU's run nests share ---------------------===//

#include "RunPieces.h"

#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Target/CPU/BranchCounters.h"

#include "X86Bf16.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

LaneOrder cpu::runLaneOrder(const CPULoopOptions &options, int64_t lanes) {
  return options.evenOddLanes && lanes > 1 && lanes % 2 == 0
             ? LaneOrder::EvenOdd
             : LaneOrder::Natural;
}

cpu::RunChunk cpu::loadRunChunk(const ConvNestBuilder &nest,
                                const CPULoopOptions &options, OpBuilder &b,
                                Location loc, const ConvPart &part, Value h,
                                Value c, int64_t lanes) {
  ArithBuilder ab(b, loc);
  Value channel = ab.add(ab.mul(h, cIndex(b, loc, part.range.width)), c);
  RunChunk chunk{h, c, lanes, runLaneOrder(options, lanes), {}, {}};
  chunk.bias = nest.biasLanes(b, loc, part, channel, lanes, chunk.order);
  chunk.tapWeights =
      nest.tapWeightsOf(b, loc, part, channel, lanes, chunk.order);
  return chunk;
}

void cpu::forEachLineChunk(OpBuilder &b, Location loc, int64_t width,
                           LanesBody body) {
  const int64_t groups = width / kLineLanes;
  const int64_t perGroup = kLineLanes / kLanes;
  scf::ForOp::create(
      b, loc, cIndex(b, loc, 0), cIndex(b, loc, groups), cIndex(b, loc, 1),
      ValueRange{}, [&](OpBuilder &b, Location loc, Value group, ValueRange) {
        Value c = ArithBuilder(b, loc).mul(group, cIndex(b, loc, kLineLanes));
        body(b, loc, c, kLineLanes);
        scf::YieldOp::create(b, loc);
      });
  scf::ForOp::create(b, loc, cIndex(b, loc, groups * perGroup),
                     cIndex(b, loc, numChunks(width)), cIndex(b, loc, 1),
                     ValueRange{},
                     [&](OpBuilder &b, Location loc, Value chunk, ValueRange) {
                       emitChunk(b, loc, chunk, width, body);
                       scf::YieldOp::create(b, loc);
                     });
}

scf::ParallelOp cpu::emitRunHeadNest(
    const ConvNestBuilder &nest, OpBuilder &b, Location loc, int64_t runTokens,
    function_ref<void(OpBuilder &, Location, Value, Value, Value)> body) {
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  Value tokens = nest.tokens();
  Value run = cIndex(b, loc, runTokens);
  Value runs = arith::CeilDivUIOp::create(b, loc, tokens, run);
  return scf::ParallelOp::create(
      b, loc, ValueRange{c0, c0},
      ValueRange{runs, cIndex(b, loc, nest.heads())}, ValueRange{c1, c1},
      [&](OpBuilder &b, Location loc, ValueRange rh) {
        ArithBuilder ab(b, loc);
        Value t0 = ab.mul(rh[0], run);
        Value t1 = arith::MinUIOp::create(b, loc, ab.add(t0, run), tokens);
        body(b, loc, t0, t1, rh[1]);
      });
}

ConvRow cpu::decodeRow(const ConvNestBuilder &nest, OpBuilder &b, Location loc,
                       Value t, Value h) {
  ConvRow row = nest.beginRow(b, loc, t, h);
  if (row.taps.empty())
    row.taps = CPUTapHoisting().tapSources(nest, b, loc, row);
  return row;
}

Value cpu::rowsFromCache(OpBuilder &b, Location loc, ArrayRef<ConvRow> rows) {
  Value all = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (const ConvRow &row : rows) {
    all = arith::AndIOp::create(b, loc, all, row.live);
    for (const TapSource &tap : row.taps)
      all = arith::AndIOp::create(b, loc, all, tap.history);
  }
  return all;
}

cpu::DecodeRunLoads cpu::loadDecodeRun(const ConvNestBuilder &nest,
                                       OpBuilder &b, Location loc,
                                       const ConvPart &part,
                                       const RunChunk &chunk,
                                       ArrayRef<ConvRow> rows) {
  Value col = nest.cacheCol(b, loc, part, chunk.c);
  DecodeRunLoads loads;
  for (const ConvRow &row : rows) {
    loads.xs.push_back(
        part.x.load(b, loc, row.t, chunk.h, chunk.c, chunk.lanes));
    SmallVector<Value> &values = loads.taps.emplace_back();
    for (const TapSource &tap : row.taps)
      values.push_back(nest.cacheTap(b, loc, part, tap.block, chunk.h, tap.row,
                                     col, chunk.lanes, chunk.order));
  }
  return loads;
}

void cpu::storeAtSlot(const ConvNestBuilder &nest, OpBuilder &b, Location loc,
                      const ConvPart &part, const SlotInfo &slot, Value h,
                      Value col, Value x) {
  emitIf(b, loc, slot.valid, [&](OpBuilder &b, Location loc) {
    markLine(storeLanes(b, loc, x, nest.cache(),
                        ValueRange{slot.block, h, slot.row, col},
                        part.cacheAlign),
             part.cacheLineAligned);
  });
}

Value cpu::roundDecodeLine(const ConvNestBuilder &nest,
                           const CPULoopOptions &options, OpBuilder &b,
                           Location loc, Value v, int64_t lanes,
                           LaneOrder order) {
  if (!options.avx512Bf16)
    return truncToBf16(b, loc, v, lanes, order);
  return truncToBf16Avx512(
      b, loc, v, lanes, order, [&](OpBuilder &b, Location loc, bool software) {
        if (options.branchCounters)
          emitBranchCount(b, loc, nest.op(),
                          software ? Branch::SoftwareRoundedLine
                                   : Branch::X86RoundedLine);
      });
}

void cpu::markLine(Operation *store, bool aligned) {
  auto vector = dyn_cast_if_present<vector::StoreOp>(store);
  if (aligned && vector &&
      vector.getValueToStore().getType().getNumElements() == kLineLanes)
    store->setAttr(kLineAlignedAttrName, UnitAttr::get(store->getContext()));
}
