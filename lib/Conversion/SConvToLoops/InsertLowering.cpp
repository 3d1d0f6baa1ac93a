//===- InsertLowering.cpp - sconv.insert / insert_packed to loops ---------===//
//
// One loop nest for the inserts of one or more streams into one cache:
// `sconv.insert` is the one-stream case of `sconv.insert_packed`.
//
//   scf.parallel (t, h) {
//     slot = slot_mapping[t]; block, row = slot / N, slot % N
//     scf.parallel chunk in [0, chunks of all streams) {   // row order
//       stream i of the chunk: if slot >= 0:
//         cache[block, h, row, offset_i + 8 * c'] = x_i[t, h, 8 * c']
//   } }
//
// With all four streams of a layout whose widths are multiples of 8 the
// chunks tile the row [0, raw) exactly: one 16-byte store per chunk, in row
// order, never the padding [raw, D).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/Lanes.h"
#include "inkling/Conversion/SConvToLoops/Nest.h"
#include "inkling/Conversion/SConvToLoops/StepMetadata.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::sconv;

namespace {

/// One stream of an insert.
struct InsertPart {
  inkling::StreamRange range;
  StreamOperand x;
  llvm::MaybeAlign cacheAlign;
};

LogicalResult lowerInserts(PatternRewriter &rewriter, Operation *op,
                           Value stepValue, Value cache, LayoutAttr layoutAttr,
                           ValueRange inputs, ArrayRef<sconv::Stream> streams,
                           bool checked, bool splitStreams) {
  auto step = stepValue.getDefiningOp<StepOp>();
  if (!step)
    return rewriter.notifyMatchFailure(op, kNoStepMessage);
  Location loc = op->getLoc();
  inkling::Layout layout = layoutAttr.getDerived();
  int64_t blockSize = layout.blockSize;
  MemRefType cacheType = staticCacheType(cache);

  SmallVector<inkling::StreamRange> ranges;
  for (sconv::Stream stream : streams)
    ranges.push_back(layout.range(toRuntime(stream)));
  SmallVector<InsertPart> parts;
  SmallVector<int64_t> widths;
  for (unsigned i : orderByOffset(ranges)) {
    parts.push_back({ranges[i], StreamOperand(inputs[i], ranges[i].width),
                     cacheAlign(cacheType, ranges[i].offset)});
    widths.push_back(ranges[i].width);
  }

  Value slots = step.getSlotMapping();
  Value status = step.getStatus();
  Value tokens = memref::DimOp::create(rewriter, loc, inputs.front(), 0);
  Value slotLimit = emitSlotLimit(rewriter, loc, cache, blockSize);
  Value batch = memref::DimOp::create(rewriter, loc, step.getNumComputed(), 0);

  SlotInfo slot;
  emitNest(
      rewriter, loc, tokens, layout.headsPerRank, widths, splitStreams,
      [&](OpBuilder &b, Location loc, Value t, Value h, unsigned i,
          Value chunk) {
        const InsertPart &part = parts[i];
        // One report per token and stream (head 0, the stream's chunk 0):
        // the count is that of the separate inserts.
        if (checked)
          emitSlotReports(b, loc, op, slot, isReporter(b, loc, h, chunk),
                          status, t, slotLimit);
        emitIf(b, loc, slot.valid, [&](OpBuilder &b, Location loc) {
          emitChunk(b, loc, chunk, part.range.width,
                    [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                      Value v = part.x.load(b, loc, t, h, c, lanes);
                      Value col = ArithBuilder(b, loc).add(
                          c, cIndex(b, loc, part.range.offset));
                      storeLanes(b, loc, v, cache,
                                 ValueRange{slot.block, h, slot.row, col},
                                 part.cacheAlign);
                    });
        });
      },
      [&](OpBuilder &b, Location loc, Value t, Value) {
        if (!checked) {
          slot = emitSlot(b, loc, slots, t, blockSize, false, slotLimit);
          maskPaddingSlot(b, loc, slot,
                          cmp(b, loc, arith::CmpIPredicate::slt, t,
                              emitRealTokens(b, loc, step)));
          return;
        }
        // A bad token_seq entry is reported by the step's convs (once per
        // token, as without inserts); here it only stores nothing.
        SequenceInfo sequence =
            emitTokenSequence(b, loc, step, batch, t, /*checked=*/true,
                              /*reporter=*/{}, op->getName().getStringRef());
        slot = emitSlot(b, loc, slots, t, blockSize, true, slotLimit, &sequence,
                        step.getBlockTable());
        maskPaddingSlot(b, loc, slot, sequence.live);
      });
  rewriter.eraseOp(op);
  return success();
}

bool splitStreams(const SConvToLoopsOptions &options) {
  return options.strategy && options.strategy->splitStreams();
}

struct InsertLowering : OptionsPattern<InsertOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(InsertOp op,
                                PatternRewriter &rewriter) const override {
    sconv::Stream stream = op.getStream();
    return lowerInserts(rewriter, op, op.getStep(), op.getCache(),
                        op.getLayout(), op.getX(), stream, options.checked,
                        splitStreams(options));
  }
};

struct InsertPackedLowering : OptionsPattern<InsertPackedOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(InsertPackedOp op,
                                PatternRewriter &rewriter) const override {
    return lowerInserts(rewriter, op, op.getStep(), op.getCache(),
                        op.getLayout(), op.getInputs(), op.getStreamList(),
                        options.checked, splitStreams(options));
  }
};

} // namespace

void inkling::loops::populateInsertLoweringPatterns(
    RewritePatternSet &patterns, const SConvToLoopsOptions &options) {
  patterns.add<InsertLowering, InsertPackedLowering>(patterns.getContext(),
                                                     options);
}
