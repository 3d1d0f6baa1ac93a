//===- ConvDecodeRuns.cpp - The decode-run nest of a conv -----------------===//
//
// The CPU's form of an unchecked conv for the steps that are not prefill
// (real tokens < W * B, the choice: CPULoopStrategy.cpp), built from the
// shared ConvNestBuilder's pieces. Decode steps have one token (or a few
// drafts) per sequence, so the prefill nest's runs of one sequence's tokens
// are one token long; here a run is kDecodeRunTokens consecutive tokens of
// any sequences, each with its own taps:
//
//   scf.parallel (run r of kDecodeRunTokens tokens, h) {
//     whole run: per token t_i of the run, once: its sequence, slot and
//       each tap's source (x, a cache row through the block table, or 0)
//     [every token live and every tap a history row (the usual decode):
//      the chunks below with the taps loaded from the cache unselected]
//     for stream i, kLineLanes channels c (then 16-byte chunks):
//       weights, bias: once for the run (in registers across its tokens)
//       for each token t_i (unrolled): x = x_i[t_i, h, c], its taps' rows
//       for each token t_i: out_i = bf16(act(fma chain over the taps, x) + x)
//       for each token t_i: [and_insert: store x at t_i's slot]; store out_i
//     [otherwise: per token, its taps selected, the same; a padding token's
//      out is its x]
//     the step's last, partial run: per token, the same with the weights
//       loaded per token
//   }
//
// Every line of a token's rows (x, out, its slot's row, each history row)
// is visited once per stream, as a 64-byte access; the W-1 history rows of
// the run's tokens are independent loads that the core overlaps, where the
// (token, head) nest walks one token's rows in 16-byte chunks. Every
// element's arithmetic is that of the (token, head) nest: the same bits.
// The outputs are read by the next op at once and stay ordinary stores
// (kCachedStoreAttrName); the cache rows are read at the next step, after
// every other layer, so inkling-cpu-streaming-stores makes them
// non-temporal at every step size (kStreamMinIterationsAttrName = 1): the
// read for ownership and the eviction of the history rows they cost
// made decode 1.2x slower at T = 8 and 1.2-1.5x at T = 256 (docs/fusion.md).
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/LoopStrategy.h"

#include "RunPieces.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::cpu;

namespace {

/// Tokens per outer iteration of the decode-run nest: the weights of a
/// line serve this many tokens, whose rows (x, out, slot row, W-1 history
/// rows each) are walked together; 4, as the token-run nest's runs.
constexpr int64_t kDecodeRunTokens = 4;

/// The decode-run nest of one conv, from the pieces of its ConvNestBuilder.
class DecodeRunNest {
public:
  DecodeRunNest(const ConvNestBuilder &nest, const CPULoopOptions &options)
      : nest(nest), options(options), insert(nest.insert()) {}

  void build(OpBuilder &b, Location loc) const;

private:
  void storeSlot(OpBuilder &b, Location loc, const ConvPart &part,
                 const RunChunk &chunk, const ConvRow &row, Value xRaw) const;
  Value convolve(OpBuilder &b, Location loc, const RunChunk &chunk, Value xRaw,
                 SmallVector<Value> tapValues) const;
  void storeOut(OpBuilder &b, Location loc, const ConvPart &part,
                const RunChunk &chunk, const ConvRow &row, Value lanes) const;
  void tokensFromCache(OpBuilder &b, Location loc, const ConvPart &part,
                       const RunChunk &chunk, ArrayRef<ConvRow> rows) const;
  void token(OpBuilder &b, Location loc, const ConvPart &part,
             const RunChunk &chunk, const ConvRow &row) const;
  void chunks(OpBuilder &b, Location loc, Value h, ArrayRef<ConvRow> rows,
              bool fromCache) const;
  void count(OpBuilder &b, Location loc, Branch branch) const {
    if (options.branchCounters)
      emitBranchCount(b, loc, nest.op(), branch);
  }

  const ConvNestBuilder &nest;
  const CPULoopOptions &options;
  const bool insert;
  CPUTapHoisting sources;
};

} // namespace

// Keeps a conv output's store ordinary in the streaming copy.
static void markCached(Operation *store) {
  store->setAttr(kCachedStoreAttrName, UnitAttr::get(store->getContext()));
}

// x stored at the token's slot (and_insert; a masked slot stores nothing).
void DecodeRunNest::storeSlot(OpBuilder &b, Location loc, const ConvPart &part,
                              const RunChunk &chunk, const ConvRow &row,
                              Value xRaw) const {
  if (insert)
    storeAtSlot(nest, b, loc, part, row.slot, chunk.h,
                nest.cacheCol(b, loc, part, chunk.c), xRaw);
}

// The token's output lanes: its fma chain over `tapValues` (f32, oldest
// first) and x, rounded to bf16.
Value DecodeRunNest::convolve(OpBuilder &b, Location loc, const RunChunk &chunk,
                              Value xRaw, SmallVector<Value> tapValues) const {
  Value xt = extToF32(b, loc, xRaw, chunk.lanes, chunk.order);
  tapValues.push_back(xt);
  Value acc = nest.convResult(
      b, loc, chunk.tapWeights, [&](int64_t j) { return tapValues[j]; },
      chunk.bias, xt, chunk.lanes);
  return roundDecodeLine(nest, options, b, loc, acc, chunk.lanes, chunk.order);
}

// The output line of the token (read by the next op at once: cached).
void DecodeRunNest::storeOut(OpBuilder &b, Location loc, const ConvPart &part,
                             const RunChunk &chunk, const ConvRow &row,
                             Value lanes) const {
  Operation *out = part.out.store(b, loc, lanes, row.t, chunk.h, chunk.c);
  markLine(out, part.out.lineAligned);
  markCached(out);
}

// The usual decode run in one chunk (every token live, every tap a history
// row): every load of the run's tokens (loadDecodeRun: x, the history rows)
// before any of their stores (slot rows, outputs). Issued after the slot
// store, the history loads ran slower: a hand-written kernel in that order
// 1.24-1.37x at T = 8 and 64 (docs/fusion.md).
void DecodeRunNest::tokensFromCache(OpBuilder &b, Location loc,
                                    const ConvPart &part, const RunChunk &chunk,
                                    ArrayRef<ConvRow> rows) const {
  DecodeRunLoads loads = loadDecodeRun(nest, b, loc, part, chunk, rows);
  SmallVector<Value> outs;
  for (auto [x, values] : llvm::zip_equal(loads.xs, loads.taps))
    outs.push_back(convolve(b, loc, chunk, x, values));
  for (auto [row, x, out] : llvm::zip_equal(rows, loads.xs, outs)) {
    storeSlot(b, loc, part, chunk, row, x);
    storeOut(b, loc, part, chunk, row, out);
  }
}

// One token of a run in one chunk, its taps selected (from x, the cache or
// 0): x loaded once, convolved, then stored at the token's slot (and_insert;
// after the taps' loads, as in tokensFromCache); a padding token's output
// is its input, and it touches no cache.
void DecodeRunNest::token(OpBuilder &b, Location loc, const ConvPart &part,
                          const RunChunk &chunk, const ConvRow &row) const {
  Value xRaw = part.x.load(b, loc, row.t, chunk.h, chunk.c, chunk.lanes);
  auto live = [&](OpBuilder &b, Location loc) {
    SmallVector<Value> tapValues;
    for (const TapSource &tap : row.taps)
      tapValues.push_back(sources.tapValue(nest, b, loc, part, tap, chunk.h,
                                           chunk.c, chunk.lanes, chunk.order));
    Value out = convolve(b, loc, chunk, xRaw, tapValues);
    storeSlot(b, loc, part, chunk, row, xRaw);
    storeOut(b, loc, part, chunk, row, out);
  };
  emitIfElse(b, loc, row.live, live, [&](OpBuilder &b, Location loc) {
    markCached(part.out.store(b, loc, xRaw, row.t, chunk.h, chunk.c));
  });
}

// Every stream's chunks of head h for the tokens of `rows`: each chunk's
// weights once for all of them.
void DecodeRunNest::chunks(OpBuilder &b, Location loc, Value h,
                           ArrayRef<ConvRow> rows, bool fromCache) const {
  for (const ConvPart &part : nest.parts())
    forEachLineChunk(b, loc, part.range.width,
                     [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                       RunChunk chunk = loadRunChunk(nest, options, b, loc,
                                                     part, h, c, lanes);
                       if (fromCache) {
                         tokensFromCache(b, loc, part, chunk, rows);
                         return;
                       }
                       for (const ConvRow &row : rows)
                         token(b, loc, part, chunk, row);
                     });
}

void DecodeRunNest::build(OpBuilder &b, Location loc) const {
  scf::ParallelOp runsNest = emitRunHeadNest(
      nest, b, loc, kDecodeRunTokens,
      [&](OpBuilder &b, Location loc, Value t0, Value t1, Value h) {
        Value whole = cmp(b, loc, arith::CmpIPredicate::eq,
                          ArithBuilder(b, loc).sub(t1, t0),
                          cIndex(b, loc, kDecodeRunTokens));
        emitIfElse(
            b, loc, whole,
            [&](OpBuilder &b, Location loc) {
              count(b, loc, Branch::DecodeRunsWhole);
              SmallVector<ConvRow> rows;
              for (int64_t i = 0; i < kDecodeRunTokens; ++i)
                rows.push_back(decodeRow(
                    nest, b, loc,
                    ArithBuilder(b, loc).add(t0, cIndex(b, loc, i)), h));
              // The common decode run: every token live, every tap a
              // history row; its chunks then load the taps unselected.
              emitIfElse(
                  b, loc, rowsFromCache(b, loc, rows),
                  [&](OpBuilder &b, Location loc) {
                    count(b, loc, Branch::DecodeRunsFromCache);
                    chunks(b, loc, h, rows, /*fromCache=*/true);
                  },
                  [&](OpBuilder &b, Location loc) {
                    chunks(b, loc, h, rows, /*fromCache=*/false);
                  });
            },
            [&](OpBuilder &b, Location loc) {
              count(b, loc, Branch::DecodeRunsPartial);
              scf::ForOp::create(
                  b, loc, t0, t1, cIndex(b, loc, 1), ValueRange{},
                  [&](OpBuilder &b, Location loc, Value t, ValueRange) {
                    chunks(b, loc, h, decodeRow(nest, b, loc, t, h),
                           /*fromCache=*/false);
                    scf::YieldOp::create(b, loc);
                  });
            });
      });
  runsNest->setAttr(kStreamMinIterationsAttrName, b.getI64IntegerAttr(1));
}

void inkling::cpu::emitDecodeRunNest(const ConvNestBuilder &nest, OpBuilder &b,
                                     Location loc,
                                     const CPULoopOptions &options) {
  DecodeRunNest(nest, options).build(b, loc);
}
