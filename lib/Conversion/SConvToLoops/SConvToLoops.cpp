//===- SConvToLoops.cpp - sconv to scf/vector/memref loops ----------------===//
//
// Lowers the sconv ops to the loop nests of docs/Design.md section 5: an outer
// scf.parallel over (token, head), an inner scf.parallel over 16-byte chunks
// (8 bf16 channels) of the op's streams, vector accesses with an explicit
// alignment where the memref types prove it, a scalar tail for widths that
// are not a multiple of 8. One nest per op; the fused ops (insert_packed,
// fused_conv) are one nest over the concatenation of their streams' chunks.
//
// This file: sconv.bind, sconv.step and the pass. The inserts are lowered in
// InsertLowering.cpp, the convs in ConvLowering.cpp (their builder in
// ConvNest.h), the epilogues in EpilogueLowering.cpp, with the shared pieces
// in IRHelpers.h, Lanes.h, Alignment.h, Nest.h and StepMetadata.h
// (include/inkling/Conversion/SConvToLoops; bodies in Lanes.cpp,
// Alignment.cpp, Nest.cpp and StepMetadata.cpp). A backend's forms come through
// a LoopStrategy (the CPU's: lib/Target/CPU/CPULoopStrategy.cpp).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "inkling/Conversion/Passes.h"
#include "inkling/Conversion/SConvToLoops/IRHelpers.h"
#include "inkling/Conversion/SConvToLoops/StepMetadata.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace inkling {
#define GEN_PASS_DEF_SCONVLOWERTOLOOPS
#include "inkling/Conversion/Passes.h.inc"
} // namespace inkling

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::sconv;

namespace {

//===----------------------------------------------------------------------===//
// sconv.bind
//===----------------------------------------------------------------------===//

struct BindLowering : OpRewritePattern<BindOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BindOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MemRefType cacheType = op.getCache().getType();
    inkling::Layout layout = op.getLayout().getDerived();
    int64_t elementBytes = layout.elementBytes;
    Value buffer = op.getBuffer();
    Value bytes = memref::DimOp::create(rewriter, loc, buffer, 0);
    Value elements = arith::DivUIOp::create(
        rewriter, loc, bytes, cIndex(rewriter, loc, elementBytes));
    auto flatType =
        MemRefType::get({ShapedType::kDynamic}, cacheType.getElementType());
    Value flat =
        memref::ViewOp::create(rewriter, loc, flatType, buffer,
                               cIndex(rewriter, loc, 0), ValueRange{elements});
    SmallVector<OpFoldResult> sizes, strides;
    if (cacheType.isDynamicDim(0)) {
      // The blocks whose unpadded page lies inside the buffer
      // (Layout::blocksInBuffer): (bytes - page) / stride + 1, or 0.
      Value page = cIndex(rewriter, loc, layout.pageBytes());
      Value fits = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::uge, bytes, page);
      Value count = arith::AddIOp::create(
          rewriter, loc,
          arith::DivUIOp::create(
              rewriter, loc, arith::SubIOp::create(rewriter, loc, bytes, page),
              cIndex(rewriter, loc, op.getPageBytes())),
          cIndex(rewriter, loc, 1));
      sizes.push_back(arith::SelectOp::create(rewriter, loc, fits, count,
                                              cIndex(rewriter, loc, 0))
                          .getResult());
    } else {
      sizes.push_back(rewriter.getIndexAttr(cacheType.getDimSize(0)));
    }
    for (int64_t dim : cacheType.getShape().drop_front())
      sizes.push_back(rewriter.getIndexAttr(dim));
    for (int64_t stride : cacheType.getStridesAndOffset().first)
      strides.push_back(rewriter.getIndexAttr(stride));
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, cacheType, flat, rewriter.getIndexAttr(0), sizes, strides);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// sconv.step
//===----------------------------------------------------------------------===//

struct EraseUnusedStep : OpRewritePattern<StepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(StepOp op,
                                PatternRewriter &rewriter) const override {
    if (!op->use_empty())
      return rewriter.notifyMatchFailure(op, "the step is still used");
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct SConvLowerToLoopsPass
    : inkling::impl::SConvLowerToLoopsBase<SConvLowerToLoopsPass> {
  using Base::Base;

  SConvLowerToLoopsPass(const SConvLowerToLoopsOptions &options,
                        std::shared_ptr<const LoopStrategy> strategy)
      : Base(options), strategy(std::move(strategy)) {}

  void runOnOperation() override {
    SConvToLoopsOptions options;
    options.checked = checked;
    options.strategy = strategy.get();
    if (failed(lowerSConvToLoops(getOperation(), options)))
      signalPassFailure();
  }

  std::shared_ptr<const LoopStrategy> strategy;
};

} // namespace

LogicalResult inkling::lowerSConvToLoops(Operation *root,
                                         const SConvToLoopsOptions &options) {
  bool invalid = false;
  // Every op that reads the step's metadata (insert, conv, insert_packed,
  // fused_conv) needs it from a visible sconv.step.
  root->walk([&](StepCacheAccessOpInterface op) {
    if (!op.getStepValue().getDefiningOp<StepOp>()) {
      op->emitOpError() << kNoStepMessage;
      invalid = true;
    }
  });
  if (invalid)
    return failure();

  RewritePatternSet patterns(root->getContext());
  populateSConvToLoopsPatterns(patterns, options);
  if (failed(applyPatternsGreedily(root, std::move(patterns))))
    return failure();

  // No sconv op may remain (a step is erased with its last user).
  WalkResult left = root->walk([&](Operation *op) {
    if (isa<SConvDialect>(op->getDialect()) && !isa<StepOp>(op)) {
      op->emitOpError() << "was not lowered by sconv-lower-to-loops";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(left.wasInterrupted());
}

std::unique_ptr<Pass>
inkling::createSConvLowerToLoops(const SConvLowerToLoopsOptions &options,
                                 std::shared_ptr<const LoopStrategy> strategy) {
  return std::make_unique<SConvLowerToLoopsPass>(options, std::move(strategy));
}

void inkling::populateSConvToLoopsPatterns(RewritePatternSet &patterns,
                                           const SConvToLoopsOptions &options) {
  MLIRContext *context = patterns.getContext();
  patterns.add<BindLowering, EraseUnusedStep>(context);
  loops::populateInsertLoweringPatterns(patterns, options);
  loops::populateConvLoweringPatterns(patterns, options);
  loops::populateEpilogueLoweringPatterns(patterns, options);
}
