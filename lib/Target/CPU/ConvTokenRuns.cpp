//===- ConvTokenRuns.cpp - The token-run nest of a conv (prefill) ---------===//
//
// The CPU's form of an unchecked conv when real tokens >= W * B (the choice:
// CPULoopStrategy.cpp; the (token, head) nest: lib/Conversion/SConvToLoops/
// ConvLowering.cpp), built from the shared ConvNestBuilder's pieces:
//
//   scf.parallel (run r of kRunTokens tokens, h) {
//     for b in the sequences of the run's real tokens [s, e):
//       [e - s == kRunTokens: the tokens' slots, once for every chunk]
//       for stream i, kLineLanes channels c (then 16-byte chunks):
//         weights, bias; window = the W-1 inputs before s (x, cache or 0)
//         for t in [s, e) (window):   // unrolled when e - s == kRunTokens
//           x = x_i[t, h, c]; [and_insert: store x at t's slot]
//           out_i = bf16(act(fma chain over window, x) + x); window <<= x
//     for the padding tokens of the run: out_i = x_i
//   }
//
// With even-odd-lanes a chunk's f32 lanes are its even channels, then its
// odd ones (LaneOrder::EvenOdd in Lanes.h). Stores of a 64-byte line whose
// address is line-aligned whenever its base is carry kLineAlignedAttrName.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/LoopStrategy.h"

#include "RunPieces.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::cpu;

namespace {

/// Tokens per outer iteration of the token-run nest. Few: a run walks one
/// row segment per token and array at once, and more than a handful of
/// such streams defeat the hardware prefetchers (measured on the CPU of
/// docs/fusion.md: runs of 64 tokens were slower than the (token, head)
/// nest, runs of 4 the fastest); a run's window reload (W-1 loads) and
/// weights still serve 4 tokens.
constexpr int64_t kRunTokens = 4;

/// Tokens [s, e) of sequence seq (first token start, computed positions
/// before the step): the part of a run the token-run nest walks.
struct RunSpan {
  Value seq, start, computed, s, e;
};

/// The token-run nest of one conv, from the pieces of its ConvNestBuilder.
class TokenRunNest {
public:
  TokenRunNest(const ConvNestBuilder &nest, const CPULoopOptions &options)
      : nest(nest), options(options), kernel(nest.kernel()),
        blockSize(nest.blockSize()), insert(nest.insert()) {}

  void build(OpBuilder &b, Location loc, Value realTokens) const;

private:
  SmallVector<Value> runWindow(OpBuilder &b, Location loc, const ConvPart &part,
                               const RunSpan &span, Value h, Value c,
                               int64_t lanes, LaneOrder order) const;
  SmallVector<Value> runToken(OpBuilder &b, Location loc, const ConvPart &part,
                              const RunChunk &chunk, Value t,
                              const SlotInfo &at, ValueRange window) const;
  void runLanes(OpBuilder &b, Location loc, const ConvPart &part,
                const RunSpan &span, Value h, Value c, int64_t lanes,
                ArrayRef<SlotInfo> fullRun) const;
  void runChunks(OpBuilder &b, Location loc, const RunSpan &span, Value h,
                 ArrayRef<SlotInfo> fullRun) const;
  void runSequence(OpBuilder &b, Location loc, Value seq, Value t0, Value real,
                   Value h) const;
  void runPadding(OpBuilder &b, Location loc, Value t0, Value real, Value t1,
                  Value h, Value c1) const;
  void count(OpBuilder &b, Location loc, cpu::Branch branch) const {
    if (options.branchCounters)
      cpu::emitBranchCount(b, loc, nest.op(), branch);
  }

  const ConvNestBuilder &nest;
  const CPULoopOptions &options;
  const int64_t kernel, blockSize;
  const bool insert;
};

} // namespace

// The window of the kernel - 1 inputs before span.s, oldest first: x, or
// the cache rows / 0 of the positions before the step.
SmallVector<Value> TokenRunNest::runWindow(OpBuilder &b, Location loc,
                                           const ConvPart &part,
                                           const RunSpan &span, Value h,
                                           Value c, int64_t lanes,
                                           LaneOrder order) const {
  ArithBuilder ab(b, loc);
  SmallVector<Value> window;
  for (int64_t back = kernel - 1; back >= 1; --back) {
    Value u = ab.sub(span.s, cIndex(b, loc, back));
    Value inStep = cmp(b, loc, arith::CmpIPredicate::sge, u, span.start);
    Value tap = emitIfValue(
        b, loc, inStep,
        [&](OpBuilder &b, Location loc) -> Value {
          return nest.xTap(b, loc, part, u, h, c, lanes, order);
        },
        [&](OpBuilder &b, Location loc) -> Value {
          ArithBuilder ab(b, loc);
          Value q = ab.sub(span.computed, ab.sub(span.start, u));
          Value history =
              cmp(b, loc, arith::CmpIPredicate::sge, q, cIndex(b, loc, 0));
          Value read = emitIfValue(
              b, loc, history,
              [&](OpBuilder &b, Location loc) -> Value {
                auto [logical, row] = emitBlockAndRow(b, loc, q, blockSize);
                Value physical = toIndex(
                    b, loc,
                    memref::LoadOp::create(b, loc, nest.blockTable(),
                                           ValueRange{span.seq, logical}));
                return nest.cacheTap(b, loc, part, physical, h, row,
                                     nest.cacheCol(b, loc, part, c), lanes,
                                     order);
              },
              [&](OpBuilder &b, Location loc) -> Value {
                return splatF32(b, loc, 0.0f, lanes);
              });
          return read;
        });
    window.push_back(tap);
  }
  return window;
}

// One token t of a run: x[t] loaded once, stored at t's slot (and_insert),
// convolved with the window of the W-1 inputs before it. Returns the window
// of the next token.
SmallVector<Value> TokenRunNest::runToken(OpBuilder &b, Location loc,
                                          const ConvPart &part,
                                          const RunChunk &chunk, Value t,
                                          const SlotInfo &at,
                                          ValueRange window) const {
  Value xRaw = part.x.load(b, loc, t, chunk.h, chunk.c, chunk.lanes);
  if (insert)
    storeAtSlot(nest, b, loc, part, at, chunk.h,
                nest.cacheCol(b, loc, part, chunk.c), xRaw);
  Value xt = extToF32(b, loc, xRaw, chunk.lanes, chunk.order);
  SmallVector<Value> tapValues(window);
  tapValues.push_back(xt);
  Value acc = nest.convResult(
      b, loc, chunk.tapWeights, [&](int64_t j) { return tapValues[j]; },
      chunk.bias, xt, chunk.lanes);
  markLine(part.out.store(b, loc,
                          truncToBf16(b, loc, acc, chunk.lanes, chunk.order), t,
                          chunk.h, chunk.c),
           part.out.lineAligned);
  return SmallVector<Value>(ArrayRef<Value>(tapValues).drop_front());
}

// Token runs: tokens [s, e) of one sequence, channels c.. of head h: the
// weights once, the window, then per token one input load; every
// element's arithmetic is that of convLanes. With `fullRun` (the slots of
// a whole run's kRunTokens tokens, all of this sequence) the tokens are
// unrolled: no loop, no slot load per chunk.
void TokenRunNest::runLanes(OpBuilder &b, Location loc, const ConvPart &part,
                            const RunSpan &span, Value h, Value c,
                            int64_t lanes, ArrayRef<SlotInfo> fullRun) const {
  ArithBuilder ab(b, loc);
  RunChunk chunk = loadRunChunk(nest, options, b, loc, part, h, c, lanes);
  SmallVector<Value> window =
      runWindow(b, loc, part, span, h, c, lanes, chunk.order);
  if (!fullRun.empty()) {
    for (auto [i, at] : llvm::enumerate(fullRun))
      window = runToken(b, loc, part, chunk, ab.add(span.s, cIndex(b, loc, i)),
                        at, window);
    return;
  }
  scf::ForOp::create(
      b, loc, span.s, span.e, cIndex(b, loc, 1), window,
      [&](OpBuilder &b, Location loc, Value t, ValueRange previous) {
        SlotInfo at;
        if (insert)
          at = emitSlot(b, loc, nest.slots(), t, blockSize, /*checked=*/false,
                        nest.slotLimit());
        scf::YieldOp::create(b, loc,
                             runToken(b, loc, part, chunk, t, at, previous));
      });
}

// Every stream's chunks of head h for the tokens of `span`.
void TokenRunNest::runChunks(OpBuilder &b, Location loc, const RunSpan &span,
                             Value h, ArrayRef<SlotInfo> fullRun) const {
  for (const ConvPart &part : nest.parts())
    forEachLineChunk(b, loc, part.range.width,
                     [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                       runLanes(b, loc, part, span, h, c, lanes, fullRun);
                     });
}

// The real tokens of sequence seq in [t0, real), every stream: unrolled
// when they are a whole run (the common case of a long prefill), with each
// token's slot computed once for every chunk.
void TokenRunNest::runSequence(OpBuilder &b, Location loc, Value seq, Value t0,
                               Value real, Value h) const {
  ArithBuilder ab(b, loc);
  Value qslBuf = nest.step().getQueryStartLoc();
  auto load = [&](Value buf, Value i) {
    return toIndex(b, loc, memref::LoadOp::create(b, loc, buf, i));
  };
  RunSpan span;
  span.seq = seq;
  span.start = load(qslBuf, seq);
  Value end = load(qslBuf, ab.add(seq, cIndex(b, loc, 1)));
  span.computed = load(nest.numComputed(), seq);
  span.s = arith::MaxUIOp::create(b, loc, span.start, t0);
  span.e = arith::MinUIOp::create(b, loc, end, real);
  Value whole = cmp(b, loc, arith::CmpIPredicate::eq, ab.sub(span.e, span.s),
                    cIndex(b, loc, kRunTokens));
  emitIfElse(
      b, loc, whole,
      [&](OpBuilder &b, Location loc) {
        count(b, loc, cpu::Branch::RunsUnrolled);
        SmallVector<SlotInfo> fullRun(kRunTokens);
        for (int64_t i = 0; insert && i < kRunTokens; ++i)
          fullRun[i] =
              emitSlot(b, loc, nest.slots(),
                       ArithBuilder(b, loc).add(span.s, cIndex(b, loc, i)),
                       blockSize, /*checked=*/false, nest.slotLimit());
        runChunks(b, loc, span, h, fullRun);
      },
      [&](OpBuilder &b, Location loc) {
        count(b, loc, cpu::Branch::RunsLooped);
        runChunks(b, loc, span, h, {});
      });
}

// Padding tokens [max(t0, real), t1): out = x, no cache access (c1: the
// nest's constant 1).
void TokenRunNest::runPadding(OpBuilder &b, Location loc, Value t0, Value real,
                              Value t1, Value h, Value c1) const {
  scf::ForOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, t0, real), t1, c1, ValueRange{},
      [&](OpBuilder &b, Location loc, Value t, ValueRange) {
        for (const ConvPart &part : nest.parts())
          scf::ForOp::create(
              b, loc, cIndex(b, loc, 0),
              cIndex(b, loc, numChunks(part.range.width)), cIndex(b, loc, 1),
              ValueRange{},
              [&](OpBuilder &b, Location loc, Value chunk, ValueRange) {
                emitChunk(
                    b, loc, chunk, part.range.width,
                    [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                      part.out.store(
                          b, loc, part.x.load(b, loc, t, h, c, lanes), t, h, c);
                    });
                scf::YieldOp::create(b, loc);
              });
        scf::YieldOp::create(b, loc);
      });
}

void TokenRunNest::build(OpBuilder &b, Location loc, Value realTokens) const {
  Value c1 = cIndex(b, loc, 1);
  Value batch = nest.batch();
  Value numComputedBuf = nest.numComputed();
  Value qslBuf = nest.step().getQueryStartLoc();
  emitRunHeadNest(
      nest, b, loc, kRunTokens,
      [&](OpBuilder &b, Location loc, Value t0, Value t1, Value h) {
        Value real = arith::MinUIOp::create(b, loc, t1, realTokens);
        Value any = cmp(b, loc, arith::CmpIPredicate::ult, t0, real);
        // The real tokens [t0, real): per sequence that holds some.
        emitIf(b, loc, any, [&](OpBuilder &b, Location loc) {
          ArithBuilder ab(b, loc);
          Value first =
              emitSequence(b, loc, qslBuf, numComputedBuf, batch, t0).seq;
          Value last = emitSequence(b, loc, qslBuf, numComputedBuf, batch,
                                    ab.sub(real, cIndex(b, loc, 1)))
                           .seq;
          scf::ForOp::create(
              b, loc, first, ab.add(last, cIndex(b, loc, 1)), cIndex(b, loc, 1),
              ValueRange{},
              [&](OpBuilder &b, Location loc, Value seq, ValueRange) {
                runSequence(b, loc, seq, t0, real, h);
                scf::YieldOp::create(b, loc);
              });
        });
        runPadding(b, loc, t0, real, t1, h, c1);
      });
}

void inkling::cpu::emitTokenRunNest(const ConvNestBuilder &nest, OpBuilder &b,
                                    Location loc, Value realTokens,
                                    const CPULoopOptions &options) {
  TokenRunNest(nest, options).build(b, loc, realTokens);
}
