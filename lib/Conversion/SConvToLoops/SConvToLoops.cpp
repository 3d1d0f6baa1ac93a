//===- SConvToLoops.cpp - sconv to scf/vector/memref loops ----------------===//
//
// Lowers the sconv ops to the loop nests of DESIGN section 5: an outer
// scf.parallel over (token, head), an inner scf.parallel over 16-byte chunks
// of the stream's width (8 bf16 channels), vector accesses with an explicit
// alignment where the memref types prove it, a scalar tail for widths that
// are not a multiple of 8.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"
#include "inkling/Conversion/Passes.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace inkling {
#define GEN_PASS_DEF_SCONVLOWERTOLOOPS
#include "inkling/Conversion/Passes.h.inc"
} // namespace inkling

using namespace mlir;
using namespace inkling;
using namespace inkling::sconv;

namespace {

/// Channels per vector access: 16 bytes of bf16.
constexpr int64_t kLanes = 8;
constexpr uint64_t kAlignBytes = 16;

/// Kinds reported in the step's status buffer (see sconv.step).
enum class CheckKind : int64_t { Slot = 1, BlockId = 2, LogicalBlock = 3 };

constexpr const char *kNoStepMessage =
    "cannot be lowered: its step operand is not produced by a visible "
    "'sconv.step' op (e.g. it is a block argument); the lowering reads the "
    "step's metadata buffers from that op";

//===----------------------------------------------------------------------===//
// Small IR helpers
//===----------------------------------------------------------------------===//

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value cI64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value toI64(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isInteger(64))
    return v;
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
}

Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate pred, Value lhs,
          Value rhs) {
  return arith::CmpIOp::create(b, loc, pred, lhs, rhs);
}

Value add(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

Value mul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::MulIOp::create(b, loc, lhs, rhs);
}

/// `f32` or `vector<lanes x f32>` (lanes == 1: scalar).
Type laneType(Type element, int64_t lanes) {
  if (lanes == 1)
    return element;
  return VectorType::get({lanes}, element);
}

Value splatF32(OpBuilder &b, Location loc, float value, int64_t lanes) {
  Type type = laneType(b.getF32Type(), lanes);
  if (lanes == 1)
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(cast<ShapedType>(type),
                             b.getF32FloatAttr(value).getValue()));
}

/// Loads `lanes` consecutive elements of the innermost dim (a scalar for 1).
Value loadLanes(OpBuilder &b, Location loc, Value memref, ValueRange indices,
                int64_t lanes, bool aligned) {
  if (lanes == 1)
    return memref::LoadOp::create(b, loc, memref, indices);
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  return vector::LoadOp::create(
      b, loc, VectorType::get({lanes}, element), memref, indices,
      /*nontemporal=*/false,
      aligned ? llvm::MaybeAlign(kAlignBytes) : llvm::MaybeAlign());
}

void storeLanes(OpBuilder &b, Location loc, Value value, Value memref,
                ValueRange indices, bool aligned) {
  if (!isa<VectorType>(value.getType())) {
    memref::StoreOp::create(b, loc, value, memref, indices);
    return;
  }
  vector::StoreOp::create(b, loc, value, memref, indices, /*nontemporal=*/false,
                          aligned ? llvm::MaybeAlign(kAlignBytes)
                                  : llvm::MaybeAlign());
}

Value extToF32(OpBuilder &b, Location loc, Value v, int64_t lanes) {
  return arith::ExtFOp::create(b, loc, laneType(b.getF32Type(), lanes), v);
}

//===----------------------------------------------------------------------===//
// Alignment facts
//===----------------------------------------------------------------------===//

bool staticMultiple(int64_t v, int64_t m) {
  return !ShapedType::isDynamic(v) && v % m == 0;
}

/// True when, given a 16-byte aligned base, the element at any index whose
/// innermost component is a multiple of 8 is 16-byte aligned: the offset and
/// every stride except the innermost (unit) one are static multiples of 8.
bool rowsAligned(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  if (!staticMultiple(offset, kLanes))
    return false;
  for (int64_t stride : ArrayRef<int64_t>(strides).drop_back())
    if (!staticMultiple(stride, kLanes))
      return false;
  return true;
}

/// The most static type known for `cache`: a `memref.cast` (e.g. from the
/// statically strided `sconv.bind` result to a dynamic block stride) keeps
/// the strides of its source.
MemRefType staticCacheType(Value cache) {
  auto type = cast<MemRefType>(cache.getType());
  while (auto castOp = cache.getDefiningOp<memref::CastOp>()) {
    cache = castOp.getSource();
    auto source = dyn_cast<MemRefType>(cache.getType());
    if (!source)
      break;
    type = source;
  }
  return type;
}

//===----------------------------------------------------------------------===//
// Stream operands: [T, H, w] or [T, H*w]
//===----------------------------------------------------------------------===//

struct StreamOperand {
  Value memref;
  int64_t width;
  bool aligned; ///< Chunk-start accesses are provably 16-byte aligned.

  StreamOperand(Value memref, int64_t width) : memref(memref), width(width) {
    auto type = cast<MemRefType>(memref.getType());
    aligned = rowsAligned(type) &&
              (type.getRank() == 3 || staticMultiple(width, kLanes));
  }

  SmallVector<Value> indices(OpBuilder &b, Location loc, Value token,
                             Value head, Value channel) const {
    if (cast<MemRefType>(memref.getType()).getRank() == 3)
      return {token, head, channel};
    return {token,
            add(b, loc, mul(b, loc, head, cIndex(b, loc, width)), channel)};
  }

  Value load(OpBuilder &b, Location loc, Value token, Value head, Value channel,
             int64_t lanes) const {
    return loadLanes(b, loc, memref, indices(b, loc, token, head, channel),
                     lanes, aligned && lanes > 1);
  }

  void store(OpBuilder &b, Location loc, Value value, Value token, Value head,
             Value channel) const {
    storeLanes(b, loc, value, memref, indices(b, loc, token, head, channel),
               aligned);
  }
};

//===----------------------------------------------------------------------===//
// The chunk loop
//===----------------------------------------------------------------------===//

/// Emits the body for chunk `chunk` of a stream of `width` channels: one
/// 8-lane call for full chunks; for the last chunk of a width that is not a
/// multiple of 8, a scalar loop over its channels (1-lane calls).
using LanesBody =
    function_ref<void(OpBuilder &, Location, Value channel, int64_t lanes)>;

void emitChunk(OpBuilder &b, Location loc, Value chunk, int64_t width,
               LanesBody body) {
  int64_t full = width / kLanes;
  int64_t tail = width % kLanes;
  auto scalarTail = [&](OpBuilder &b, Location loc) {
    scf::ForOp::create(b, loc, cIndex(b, loc, full * kLanes),
                       cIndex(b, loc, width), cIndex(b, loc, 1), ValueRange{},
                       [&](OpBuilder &b, Location loc, Value c, ValueRange) {
                         body(b, loc, c, 1);
                         scf::YieldOp::create(b, loc);
                       });
  };
  auto vectorChunk = [&](OpBuilder &b, Location loc) {
    Value c = mul(b, loc, chunk, cIndex(b, loc, kLanes));
    body(b, loc, c, kLanes);
  };
  if (tail == 0) {
    vectorChunk(b, loc);
    return;
  }
  if (full == 0) {
    scalarTail(b, loc);
    return;
  }
  Value isTail =
      cmp(b, loc, arith::CmpIPredicate::eq, chunk, cIndex(b, loc, full));
  scf::IfOp::create(
      b, loc, isTail,
      [&](OpBuilder &b, Location loc) {
        scalarTail(b, loc);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &b, Location loc) {
        vectorChunk(b, loc);
        scf::YieldOp::create(b, loc);
      });
}

int64_t numChunks(int64_t width) { return (width + kLanes - 1) / kLanes; }

/// scf.parallel (t, h) in [0, T) x [0, H) { outer(t, h); scf.parallel chunk
/// in [0, chunks) { inner(t, h, chunk) } }: the outer loop maps to GPU
/// blocks, the inner one to threads.
void emitNest(
    OpBuilder &b, Location loc, Value tokens, int64_t heads, int64_t width,
    function_ref<void(OpBuilder &, Location, Value, Value, Value chunk)>
        makeInner,
    function_ref<void(OpBuilder &, Location, Value, Value)> outer) {
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  scf::ParallelOp::create(
      b, loc, ValueRange{c0, c0}, ValueRange{tokens, cIndex(b, loc, heads)},
      ValueRange{c1, c1}, [&](OpBuilder &b, Location loc, ValueRange th) {
        outer(b, loc, th[0], th[1]);
        Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
        scf::ParallelOp::create(
            b, loc, ValueRange{c0},
            ValueRange{cIndex(b, loc, numChunks(width))}, ValueRange{c1},
            [&](OpBuilder &b, Location loc, ValueRange chunk) {
              makeInner(b, loc, th[0], th[1], chunk[0]);
            });
      });
}

//===----------------------------------------------------------------------===//
// Checked mode
//===----------------------------------------------------------------------===//

/// Reports an out-of-range id when `bad` holds: into the step's status
/// buffer when it has one (count, then the first report's details), else
/// through `cf.assert` with `message`.
void emitReport(OpBuilder &b, Location loc, Value bad, Value status,
                CheckKind kind, Value token, Value value, Value limit,
                StringRef message) {
  if (!status) {
    Value ok = arith::XOrIOp::create(
        b, loc, bad, arith::ConstantIntOp::create(b, loc, 1, 1));
    cf::AssertOp::create(b, loc, ok, message);
    return;
  }
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &b, Location loc) {
    Value old = memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                            cI64(b, loc, 1), status,
                                            ValueRange{cIndex(b, loc, 0)});
    Value first = cmp(b, loc, arith::CmpIPredicate::eq, old, cI64(b, loc, 0));
    scf::IfOp::create(b, loc, first, [&](OpBuilder &b, Location loc) {
      Value words[] = {cI64(b, loc, static_cast<int64_t>(kind)),
                       toI64(b, loc, token), toI64(b, loc, value),
                       toI64(b, loc, limit)};
      for (auto [i, word] : llvm::enumerate(words))
        memref::StoreOp::create(b, loc, word, status,
                                ValueRange{cIndex(b, loc, i + 1)});
      scf::YieldOp::create(b, loc);
    });
    scf::YieldOp::create(b, loc);
  });
}

/// True for the one (head 0, channel 0) lane that reports for a token.
Value isReporter(OpBuilder &b, Location loc, Value head, Value channel) {
  Value c0 = cIndex(b, loc, 0);
  return arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::eq, head, c0),
      cmp(b, loc, arith::CmpIPredicate::eq, channel, c0));
}

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
    if (cacheType.isDynamicDim(0))
      sizes.push_back(
          arith::DivUIOp::create(rewriter, loc, bytes,
                                 cIndex(rewriter, loc, op.getPageBytes()))
              .getResult());
    else
      sizes.push_back(rewriter.getIndexAttr(cacheType.getDimSize(0)));
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
// sconv.insert
//===----------------------------------------------------------------------===//

struct InsertLowering : OpRewritePattern<InsertOp> {
  InsertLowering(MLIRContext *context, SConvToLoopsOptions options)
      : OpRewritePattern(context), options(options) {}

  LogicalResult matchAndRewrite(InsertOp op,
                                PatternRewriter &rewriter) const override {
    auto step = op.getStep().getDefiningOp<StepOp>();
    if (!step)
      return rewriter.notifyMatchFailure(op, kNoStepMessage);
    Location loc = op.getLoc();
    inkling::Layout layout = op.getLayout().getDerived();
    inkling::StreamRange range = layout.range(toRuntime(op.getStream()));
    int64_t blockSize = layout.blockSize;
    StreamOperand x(op.getX(), range.width);
    Value cache = op.getCache();
    bool cacheAligned = rowsAligned(staticCacheType(cache)) &&
                        staticMultiple(range.offset, kLanes);
    Value slots = step.getSlotMapping();
    Value status = step.getStatus();
    bool checked = options.checked;

    Value tokens = memref::DimOp::create(rewriter, loc, op.getX(), 0);
    Value numBlocks = memref::DimOp::create(rewriter, loc, cache, 0);
    // The number of slots of the cache: a valid slot is below it.
    Value slotLimit =
        toI64(rewriter, loc,
              mul(rewriter, loc, numBlocks, cIndex(rewriter, loc, blockSize)));

    Value valid, bad, block, row;
    emitNest(
        rewriter, loc, tokens, layout.headsPerRank, range.width,
        [&](OpBuilder &b, Location loc, Value t, Value h, Value chunk) {
          if (checked)
            emitReport(
                b, loc,
                arith::AndIOp::create(b, loc, bad,
                                      isReporter(b, loc, h, chunk)),
                status, CheckKind::Slot, t,
                memref::LoadOp::create(b, loc, slots, ValueRange{t}), slotLimit,
                "sconv.insert (checked): a slot_mapping entry is below -1 or "
                "addresses a block at or beyond the cache's num_blocks");
          scf::IfOp::create(b, loc, valid, [&](OpBuilder &b, Location loc) {
            emitChunk(
                b, loc, chunk, range.width,
                [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                  Value v = x.load(b, loc, t, h, c, lanes);
                  Value col = add(b, loc, c, cIndex(b, loc, range.offset));
                  storeLanes(b, loc, v, cache, ValueRange{block, h, row, col},
                             cacheAligned && lanes > 1);
                });
            scf::YieldOp::create(b, loc);
          });
        },
        [&](OpBuilder &b, Location loc, Value t, Value h) {
          Value slot = memref::LoadOp::create(b, loc, slots, ValueRange{t});
          valid = cmp(b, loc, arith::CmpIPredicate::sge, slot, cI64(b, loc, 0));
          if (checked) {
            Value inRange =
                cmp(b, loc, arith::CmpIPredicate::slt, slot, slotLimit);
            bad = arith::OrIOp::create(
                b, loc,
                cmp(b, loc, arith::CmpIPredicate::slt, slot, cI64(b, loc, -1)),
                arith::AndIOp::create(
                    b, loc, valid,
                    arith::XOrIOp::create(
                        b, loc, inRange,
                        arith::ConstantIntOp::create(b, loc, 1, 1))));
            valid = arith::AndIOp::create(b, loc, valid, inRange);
          }
          Value index = toIndex(b, loc, slot);
          Value n = cIndex(b, loc, blockSize);
          block = arith::DivSIOp::create(b, loc, index, n);
          row = arith::RemSIOp::create(b, loc, index, n);
        });
    rewriter.eraseOp(op);
    return success();
  }

  SConvToLoopsOptions options;
};

//===----------------------------------------------------------------------===//
// sconv.conv
//===----------------------------------------------------------------------===//

struct ConvLowering : OpRewritePattern<ConvOp> {
  ConvLowering(MLIRContext *context, SConvToLoopsOptions options)
      : OpRewritePattern(context), options(options) {}

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    auto step = op.getStep().getDefiningOp<StepOp>();
    if (!step)
      return rewriter.notifyMatchFailure(op, kNoStepMessage);
    Location loc = op.getLoc();
    inkling::Layout layout = op.getLayout().getDerived();
    inkling::StreamRange range = layout.range(toRuntime(op.getStream()));
    const int64_t width = range.width;
    const int64_t kernel = layout.config.kernel;
    const int64_t blockSize = layout.blockSize;
    StreamOperand x(op.getX(), width);
    StreamOperand out(op.getOut(), width);
    Value cache = op.getCache();
    bool cacheAligned = rowsAligned(staticCacheType(cache)) &&
                        staticMultiple(range.offset, kLanes);
    Value bias = op.getBias();
    bool biasAligned =
        bias && rowsAligned(cast<MemRefType>(bias.getType())) &&
        staticMultiple(
            cast<MemRefType>(bias.getType()).getStridesAndOffset().second,
            kLanes) &&
        staticMultiple(width, kLanes);
    Value weights = op.getWeights();
    auto weightsType = cast<MemRefType>(weights.getType());
    // [H*w, W] row-major: the weights of 8 consecutive channels are 8*W
    // consecutive elements; load them at once and deinterleave per tap.
    // (8 channels start at element ch*W, a multiple of 8 past the offset.)
    bool weightsAligned =
        staticMultiple(weightsType.getStridesAndOffset().second, kLanes);
    Value qslBuf = step.getQueryStartLoc();
    Value numComputedBuf = step.getNumComputed();
    Value blockTable = step.getBlockTable();
    Value status = step.getStatus();
    bool checked = options.checked;
    bool residual = op.getResidual();
    bool silu = op.getActivation() == Activation::Silu;

    Value tokens = memref::DimOp::create(rewriter, loc, op.getX(), 0);
    Value batch = memref::DimOp::create(rewriter, loc, numComputedBuf, 0);
    Value numBlocks = memref::DimOp::create(rewriter, loc, cache, 0);
    Value tableWidth = memref::DimOp::create(rewriter, loc, blockTable, 1);
    Value flatWeights = memref::CollapseShapeOp::create(
        rewriter, loc, weights, ArrayRef<ReassociationIndices>{{0, 1}});

    // Per (t, h): the sequence b of t, its first token and num_computed, and
    // the position p of t.
    Value seq, seqStart, computed, position;
    auto outer = [&](OpBuilder &b, Location loc, Value t, Value) {
      // Largest b < B with qsl[b] <= t (binary search; empty sequences
      // resolve to the later, non-empty one).
      Type idx = b.getIndexType();
      auto loop = scf::WhileOp::create(
          b, loc, TypeRange{idx, idx}, ValueRange{cIndex(b, loc, 0), batch},
          [&](OpBuilder &b, Location loc, ValueRange lohi) {
            Value span = arith::SubIOp::create(b, loc, lohi[1], lohi[0]);
            Value more =
                cmp(b, loc, arith::CmpIPredicate::sgt, span, cIndex(b, loc, 1));
            scf::ConditionOp::create(b, loc, more, lohi);
          },
          [&](OpBuilder &b, Location loc, ValueRange lohi) {
            Value mid = arith::DivUIOp::create(
                b, loc, add(b, loc, lohi[0], lohi[1]), cIndex(b, loc, 2));
            Value start = toIndex(
                b, loc,
                memref::LoadOp::create(b, loc, qslBuf, ValueRange{mid}));
            Value le = cmp(b, loc, arith::CmpIPredicate::sle, start, t);
            Value lo = arith::SelectOp::create(b, loc, le, mid, lohi[0]);
            Value hi = arith::SelectOp::create(b, loc, le, lohi[1], mid);
            scf::YieldOp::create(b, loc, ValueRange{lo, hi});
          });
      seq = loop.getResult(0);
      seqStart = toIndex(
          b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{seq}));
      computed = toIndex(
          b, loc,
          memref::LoadOp::create(b, loc, numComputedBuf, ValueRange{seq}));
      position =
          add(b, loc, computed, arith::SubIOp::create(b, loc, t, seqStart));
    };

    // The history tap: cache[block_table[b][logical], h, row, offset + c].
    auto emitHistory = [&](OpBuilder &b, Location loc, Value t, Value h,
                           Value c, int64_t lanes, Value logical,
                           Value row) -> Value {
      Value col = add(b, loc, c, cIndex(b, loc, range.offset));
      auto loadTap = [&](OpBuilder &b, Location loc, Value physical) {
        Value v = loadLanes(b, loc, cache, ValueRange{physical, h, row, col},
                            lanes, cacheAligned && lanes > 1);
        return extToF32(b, loc, v, lanes);
      };
      if (!checked) {
        Value physical =
            toIndex(b, loc,
                    memref::LoadOp::create(b, loc, blockTable,
                                           ValueRange{seq, logical}));
        return loadTap(b, loc, physical);
      }
      // Checked: the logical block must be inside the block table, the
      // physical block inside the cache; otherwise report and read 0.
      Value inTable =
          cmp(b, loc, arith::CmpIPredicate::ult, logical, tableWidth);
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
      Value reporter = isReporter(b, loc, h, c);
      Value outside = arith::XOrIOp::create(
          b, loc, inTable, arith::ConstantIntOp::create(b, loc, 1, 1));
      emitReport(b, loc, arith::AndIOp::create(b, loc, outside, reporter),
                 status, CheckKind::LogicalBlock, t, logical, tableWidth,
                 "sconv.conv (checked): a history position's logical block "
                 "is beyond the block table's width");
      Value badId = arith::AndIOp::create(
          b, loc, inTable,
          arith::XOrIOp::create(b, loc, idOk,
                                arith::ConstantIntOp::create(b, loc, 1, 1)));
      emitReport(b, loc, arith::AndIOp::create(b, loc, badId, reporter), status,
                 CheckKind::BlockId, t, id, blocks,
                 "sconv.conv (checked): a block_table entry read for a "
                 "history tap is negative or not below the cache's "
                 "num_blocks");
      auto tap = scf::IfOp::create(
          b, loc, idOk,
          [&](OpBuilder &b, Location loc) {
            scf::YieldOp::create(b, loc, loadTap(b, loc, toIndex(b, loc, id)));
          },
          [&](OpBuilder &b, Location loc) {
            scf::YieldOp::create(b, loc, splatF32(b, loc, 0.0f, lanes));
          });
      return tap.getResult(0);
    };

    auto lanesBody = [&](OpBuilder &b, Location loc, Value t, Value h, Value c,
                         int64_t lanes) {
      Value channel = add(b, loc, mul(b, loc, h, cIndex(b, loc, width)), c);
      // acc = bias (or 0).
      Value acc = bias ? extToF32(b, loc,
                                  loadLanes(b, loc, bias, ValueRange{channel},
                                            lanes, biasAligned && lanes > 1),
                                  lanes)
                       : splatF32(b, loc, 0.0f, lanes);
      // The weights of these channels, per tap.
      SmallVector<Value> tapWeights;
      if (lanes == 1) {
        for (int64_t j = 0; j < kernel; ++j)
          tapWeights.push_back(extToF32(
              b, loc,
              memref::LoadOp::create(b, loc, weights,
                                     ValueRange{channel, cIndex(b, loc, j)}),
              1));
      } else {
        Value all =
            loadLanes(b, loc, flatWeights,
                      ValueRange{mul(b, loc, channel, cIndex(b, loc, kernel))},
                      lanes * kernel, weightsAligned);
        for (int64_t j = 0; j < kernel; ++j) {
          Value wj = all;
          if (kernel > 1) {
            SmallVector<int64_t> mask;
            for (int64_t l = 0; l < lanes; ++l)
              mask.push_back(l * kernel + j);
            wj = vector::ShuffleOp::create(b, loc, all, all, mask);
          }
          tapWeights.push_back(extToF32(b, loc, wj, lanes));
        }
      }
      Value xt = extToF32(b, loc, x.load(b, loc, t, h, c, lanes), lanes);
      for (int64_t j = 0; j < kernel; ++j) {
        Value tap;
        if (j == kernel - 1) {
          // q = p >= num_computed: the token's own input.
          tap = xt;
        } else {
          Value q = arith::SubIOp::create(b, loc, position,
                                          cIndex(b, loc, kernel - 1 - j));
          Value inStep = cmp(b, loc, arith::CmpIPredicate::sge, q, computed);
          auto ifStep = scf::IfOp::create(
              b, loc, inStep,
              [&](OpBuilder &b, Location loc) {
                Value token = add(b, loc, seqStart,
                                  arith::SubIOp::create(b, loc, q, computed));
                Value v =
                    extToF32(b, loc, x.load(b, loc, token, h, c, lanes), lanes);
                scf::YieldOp::create(b, loc, v);
              },
              [&](OpBuilder &b, Location loc) {
                Value negative = cmp(b, loc, arith::CmpIPredicate::slt, q,
                                     cIndex(b, loc, 0));
                auto ifZero = scf::IfOp::create(
                    b, loc, negative,
                    [&](OpBuilder &b, Location loc) {
                      scf::YieldOp::create(b, loc,
                                           splatF32(b, loc, 0.0f, lanes));
                    },
                    [&](OpBuilder &b, Location loc) {
                      Value n = cIndex(b, loc, blockSize);
                      Value logical = arith::DivUIOp::create(b, loc, q, n);
                      Value row = arith::RemUIOp::create(b, loc, q, n);
                      Value history =
                          emitHistory(b, loc, t, h, c, lanes, logical, row);
                      scf::YieldOp::create(b, loc, history);
                    });
                scf::YieldOp::create(b, loc, ifZero.getResult(0));
              });
          tap = ifStep.getResult(0);
        }
        acc = math::FmaOp::create(b, loc, tapWeights[j], tap, acc);
      }
      if (silu) {
        // a * 1 / (1 + exp(-a)), in f32.
        Value one = splatF32(b, loc, 1.0f, lanes);
        Value e =
            math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, acc));
        Value sigmoid = arith::DivFOp::create(
            b, loc, one, arith::AddFOp::create(b, loc, one, e));
        acc = arith::MulFOp::create(b, loc, acc, sigmoid);
      }
      if (residual)
        acc = arith::AddFOp::create(b, loc, acc, xt);
      Value result = arith::TruncFOp::create(
          b, loc, laneType(b.getBF16Type(), lanes), acc);
      out.store(b, loc, result, t, h, c);
    };

    emitNest(
        rewriter, loc, tokens, layout.headsPerRank, width,
        [&](OpBuilder &b, Location loc, Value t, Value h, Value chunk) {
          emitChunk(b, loc, chunk, width,
                    [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                      lanesBody(b, loc, t, h, c, lanes);
                    });
        },
        outer);
    rewriter.eraseOp(op);
    return success();
  }

  SConvToLoopsOptions options;
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct SConvLowerToLoopsPass
    : inkling::impl::SConvLowerToLoopsBase<SConvLowerToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    bool invalid = false;
    root->walk([&](Operation *op) {
      Value step;
      if (auto insert = dyn_cast<InsertOp>(op))
        step = insert.getStep();
      else if (auto conv = dyn_cast<ConvOp>(op))
        step = conv.getStep();
      else
        return;
      if (!step.getDefiningOp<StepOp>()) {
        op->emitOpError() << kNoStepMessage;
        invalid = true;
      }
    });
    if (invalid)
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    SConvToLoopsOptions options;
    options.checked = checked;
    populateSConvToLoopsPatterns(patterns, options);
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      return signalPassFailure();

    WalkResult left = root->walk([&](Operation *op) {
      if (isa<BindOp, InsertOp, ConvOp>(op)) {
        op->emitOpError() << "was not lowered by sconv-lower-to-loops";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void inkling::populateSConvToLoopsPatterns(RewritePatternSet &patterns,
                                           const SConvToLoopsOptions &options) {
  MLIRContext *context = patterns.getContext();
  patterns.add<BindLowering, EraseUnusedStep>(context);
  patterns.add<InsertLowering, ConvLowering>(context, options);
}
