//===- Lowering.cpp - Shared pieces of the sconv loop lowering ------------===//
//
// The bodies of the shared helpers declared in IRHelpers.h, Lanes.h,
// Alignment.h, Nest.h and StepMetadata.h.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/IRHelpers.h"
#include "inkling/Conversion/SConvToLoops/Lanes.h"
#include "inkling/Conversion/SConvToLoops/Nest.h"
#include "inkling/Conversion/SConvToLoops/StepMetadata.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <tuple>

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

Value inkling::loops::cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value inkling::loops::cI64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

Value inkling::loops::toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value inkling::loops::toI64(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isInteger(64))
    return v;
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
}

Value inkling::loops::cmp(OpBuilder &b, Location loc, arith::CmpIPredicate pred,
                          Value lhs, Value rhs) {
  return arith::CmpIOp::create(b, loc, pred, lhs, rhs);
}

Type inkling::loops::laneType(Type element, int64_t lanes) {
  if (lanes == 1)
    return element;
  return VectorType::get({lanes}, element);
}

Value inkling::loops::splatF32(OpBuilder &b, Location loc, float value,
                               int64_t lanes) {
  Type type = laneType(b.getF32Type(), lanes);
  if (lanes == 1)
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(cast<ShapedType>(type),
                             b.getF32FloatAttr(value).getValue()));
}

Value inkling::loops::loadLanes(OpBuilder &b, Location loc, Value memref,
                                ValueRange indices, int64_t lanes,
                                llvm::MaybeAlign align) {
  if (lanes == 1)
    return memref::LoadOp::create(b, loc, memref, indices);
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  return vector::LoadOp::create(b, loc, VectorType::get({lanes}, element),
                                memref, indices,
                                /*nontemporal=*/false, align);
}

Operation *inkling::loops::storeLanes(OpBuilder &b, Location loc, Value value,
                                      Value memref, ValueRange indices,
                                      llvm::MaybeAlign align) {
  if (!isa<VectorType>(value.getType()))
    return memref::StoreOp::create(b, loc, value, memref, indices);
  return vector::StoreOp::create(b, loc, value, memref, indices,
                                 /*nontemporal=*/false, align);
}

int64_t inkling::loops::laneChannel(LaneOrder order, int64_t lanes, int64_t l) {
  if (order == LaneOrder::Natural)
    return l;
  int64_t half = lanes / 2;
  return l < half ? 2 * l : 2 * (l - half) + 1;
}

namespace {

/// A splat i32 vector constant of `lanes` lanes.
Value splatI32(OpBuilder &b, Location loc, uint32_t value, int64_t lanes) {
  auto type = VectorType::get({lanes}, b.getI32Type());
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getI32IntegerAttr(static_cast<int32_t>(value))));
}

/// Lanes [first, first + count) of `v`.
Value laneRange(OpBuilder &b, Location loc, Value v, int64_t first,
                int64_t count) {
  SmallVector<int64_t> mask;
  for (int64_t l = 0; l < count; ++l)
    mask.push_back(first + l);
  return vector::ShuffleOp::create(b, loc, v, v, mask);
}

/// The bits of f32 lanes `v` rounded to nearest even at bit 16 (the bf16 in
/// the high half; the low half is garbage), and whether each lane is a NaN:
/// the expansion of arith.truncf to bf16, before its shift.
std::pair<Value, Value> roundedWords(OpBuilder &b, Location loc, Value v,
                                     int64_t lanes) {
  auto words = VectorType::get({lanes}, b.getI32Type());
  Value bits = arith::BitcastOp::create(b, loc, words, v);
  Value lowestKept = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, splatI32(b, loc, 16, lanes)),
      splatI32(b, loc, 1, lanes));
  Value bias = arith::AddIOp::create(b, loc, lowestKept,
                                     splatI32(b, loc, 0x7fff, lanes));
  Value rounded = arith::AddIOp::create(b, loc, bits, bias);
  Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, v);
  return {rounded, nan};
}

} // namespace

std::pair<Value, Value>
inkling::loops::wordHalvesAsF32(OpBuilder &b, Location loc, Value words) {
  auto type = cast<VectorType>(words.getType());
  int64_t lanes = type.getNumElements();
  Type f32 = type.clone(b.getF32Type());
  Value low = arith::BitcastOp::create(
      b, loc, f32,
      arith::ShLIOp::create(b, loc, words, splatI32(b, loc, 16, lanes)));
  Value high = arith::BitcastOp::create(
      b, loc, f32,
      arith::AndIOp::create(b, loc, words,
                            splatI32(b, loc, 0xffff0000u, lanes)));
  return {low, high};
}

Value inkling::loops::extToF32(OpBuilder &b, Location loc, Value v,
                               int64_t lanes, LaneOrder order) {
  if (order == LaneOrder::Natural || lanes == 1)
    return arith::ExtFOp::create(b, loc, laneType(b.getF32Type(), lanes), v);
  // Word i holds channels 2i (low half) and 2i + 1 (high half): a bf16 is
  // the high half of its f32.
  auto wordsType = VectorType::get({lanes / 2}, b.getI32Type());
  auto [even, odd] =
      wordHalvesAsF32(b, loc, vector::BitCastOp::create(b, loc, wordsType, v));
  SmallVector<int64_t> concat;
  for (int64_t l = 0; l < lanes; ++l)
    concat.push_back(l);
  return vector::ShuffleOp::create(b, loc, even, odd, concat);
}

Value inkling::loops::truncToBf16(OpBuilder &b, Location loc, Value v,
                                  int64_t lanes, LaneOrder order) {
  Type bf16 = laneType(b.getBF16Type(), lanes);
  if (order == LaneOrder::Natural || lanes == 1)
    return arith::TruncFOp::create(b, loc, bf16, v);
  int64_t half = lanes / 2;
  auto [evenRounded, evenNan] =
      roundedWords(b, loc, laneRange(b, loc, v, 0, half), half);
  auto [oddRounded, oddNan] =
      roundedWords(b, loc, laneRange(b, loc, v, half, half), half);
  // Even channels to the low halves, odd ones to the high halves; a NaN
  // becomes 0x7fc0, as in arith.truncf's expansion.
  Value low = arith::SelectOp::create(
      b, loc, evenNan, splatI32(b, loc, 0x7fc0, half),
      arith::ShRUIOp::create(b, loc, evenRounded, splatI32(b, loc, 16, half)));
  Value high = arith::SelectOp::create(
      b, loc, oddNan, splatI32(b, loc, 0x7fc00000u, half),
      arith::AndIOp::create(b, loc, oddRounded,
                            splatI32(b, loc, 0xffff0000u, half)));
  Value words = arith::OrIOp::create(b, loc, low, high);
  return vector::BitCastOp::create(b, loc, bf16, words);
}

int64_t inkling::loops::offsetMultiple(MemRefType type,
                                       ArrayRef<int64_t> indexMultiples,
                                       int64_t cap) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return 1;
  int64_t multiple = std::gcd(cap, offset);
  for (auto [stride, index] : llvm::zip_equal(strides, indexMultiples)) {
    int64_t term = ShapedType::isDynamic(stride) ? index : stride * index;
    multiple = std::gcd(multiple, term);
  }
  return multiple;
}

bool inkling::loops::lineAligned(MemRefType type,
                                 ArrayRef<int64_t> indexMultiples) {
  if (type.getElementTypeBitWidth() != 16)
    return false;
  return offsetMultiple(type, indexMultiples, kLineLanes) == kLineLanes;
}

llvm::MaybeAlign inkling::loops::accessAlign(MemRefType type,
                                             ArrayRef<int64_t> indexMultiples) {
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t bytes = offsetMultiple(type, indexMultiples) * elementBytes;
  if (bytes <= elementBytes)
    return llvm::MaybeAlign();
  return llvm::MaybeAlign(std::min<uint64_t>(kAlignBytes, bytes));
}

int64_t inkling::loops::flatIndexMultiple(int64_t width) {
  return std::gcd(kLanes, width);
}

MemRefType inkling::loops::staticCacheType(Value cache) {
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

void inkling::loops::emitIf(OpBuilder &b, Location loc, Value cond,
                            BodyFn thenBody) {
  scf::IfOp::create(b, loc, cond, [&](OpBuilder &b, Location loc) {
    thenBody(b, loc);
    scf::YieldOp::create(b, loc);
  });
}

void inkling::loops::emitIfElse(OpBuilder &b, Location loc, Value cond,
                                BodyFn thenBody, BodyFn elseBody) {
  scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &b, Location loc) {
        thenBody(b, loc);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &b, Location loc) {
        elseBody(b, loc);
        scf::YieldOp::create(b, loc);
      });
}

StreamOperand::StreamOperand(Value memref, int64_t width)
    : memref(memref), width(width) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 3) {
    align = accessAlign(type, {1, 1, kLanes});
    lineAligned = loops::lineAligned(type, {1, 1, kLineLanes});
  } else {
    align = accessAlign(type, {1, flatIndexMultiple(width)});
    lineAligned = loops::lineAligned(type, {1, std::gcd(kLineLanes, width)});
  }
}

SmallVector<Value> StreamOperand::indices(OpBuilder &b, Location loc,
                                          Value token, Value head,
                                          Value channel) const {
  if (cast<MemRefType>(memref.getType()).getRank() == 3)
    return {token, head, channel};
  ArithBuilder ab(b, loc);
  return {token, ab.add(ab.mul(head, cIndex(b, loc, width)), channel)};
}

Value StreamOperand::load(OpBuilder &b, Location loc, Value token, Value head,
                          Value channel, int64_t lanes) const {
  return loadLanes(b, loc, memref, indices(b, loc, token, head, channel), lanes,
                   align);
}

Operation *StreamOperand::store(OpBuilder &b, Location loc, Value value,
                                Value token, Value head, Value channel) const {
  return storeLanes(b, loc, value, memref,
                    indices(b, loc, token, head, channel), align);
}

llvm::MaybeAlign inkling::loops::cacheAlign(MemRefType cacheType,
                                            int64_t offset) {
  return accessAlign(cacheType, {1, 1, 1, std::gcd(kLanes, offset)});
}

bool inkling::loops::cacheLineAligned(MemRefType cacheType, int64_t offset) {
  return lineAligned(cacheType, {1, 1, 1, std::gcd(kLineLanes, offset)});
}

void inkling::loops::emitChunk(OpBuilder &b, Location loc, Value chunk,
                               int64_t width, LanesBody body) {
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
    Value c = ArithBuilder(b, loc).mul(chunk, cIndex(b, loc, kLanes));
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
  emitIfElse(
      b, loc, isTail, [&](OpBuilder &b, Location loc) { scalarTail(b, loc); },
      [&](OpBuilder &b, Location loc) { vectorChunk(b, loc); });
}

int64_t inkling::loops::numChunks(int64_t width) {
  return (width + kLanes - 1) / kLanes;
}

/// Calls `body` for the part whose chunk range [starts[i], starts[i+1])
/// holds `chunk`: a chain of comparisons against the ranges' ends (none for
/// a single part), the part's chunk index relative to its first chunk.
static void dispatchChunk(OpBuilder &b, Location loc, Value token, Value head,
                          Value chunk, ArrayRef<int64_t> starts, unsigned part,
                          PartBody body) {
  unsigned parts = starts.size() - 1;
  auto call = [&](OpBuilder &b, Location loc) {
    Value local =
        starts[part] == 0
            ? chunk
            : ArithBuilder(b, loc).sub(chunk, cIndex(b, loc, starts[part]));
    body(b, loc, token, head, part, local);
  };
  if (part + 1 == parts) {
    call(b, loc);
    return;
  }
  Value inPart = cmp(b, loc, arith::CmpIPredicate::slt, chunk,
                     cIndex(b, loc, starts[part + 1]));
  emitIfElse(
      b, loc, inPart, [&](OpBuilder &b, Location loc) { call(b, loc); },
      [&](OpBuilder &b, Location loc) {
        dispatchChunk(b, loc, token, head, chunk, starts, part + 1, body);
      });
}

void inkling::loops::emitNest(
    OpBuilder &b, Location loc, Value tokens, int64_t heads,
    ArrayRef<int64_t> widths, bool splitStreams, PartBody inner,
    function_ref<void(OpBuilder &, Location, Value, Value)> outer) {
  SmallVector<int64_t> starts = {0};
  for (int64_t width : widths)
    starts.push_back(starts.back() + numChunks(width));
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  scf::ParallelOp::create(
      b, loc, ValueRange{c0, c0}, ValueRange{tokens, cIndex(b, loc, heads)},
      ValueRange{c1, c1}, [&](OpBuilder &b, Location loc, ValueRange th) {
        outer(b, loc, th[0], th[1]);
        Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
        if (splitStreams && widths.size() > 1) {
          for (unsigned i = 0; i < widths.size(); ++i)
            scf::ParallelOp::create(
                b, loc, ValueRange{c0},
                ValueRange{cIndex(b, loc, numChunks(widths[i]))},
                ValueRange{c1},
                [&](OpBuilder &b, Location loc, ValueRange chunk) {
                  inner(b, loc, th[0], th[1], i, chunk[0]);
                });
          return;
        }
        scf::ParallelOp::create(
            b, loc, ValueRange{c0}, ValueRange{cIndex(b, loc, starts.back())},
            ValueRange{c1}, [&](OpBuilder &b, Location loc, ValueRange chunk) {
              dispatchChunk(b, loc, th[0], th[1], chunk[0], starts, 0, inner);
            });
      });
}

SmallVector<unsigned>
inkling::loops::orderByOffset(ArrayRef<StreamRange> ranges) {
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < ranges.size(); ++i)
    order.push_back(i);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return ranges[a].offset < ranges[b].offset;
  });
  return order;
}

void inkling::loops::emitReport(OpBuilder &b, Location loc, Value bad,
                                Value status, CheckKind kind, Value token,
                                Value value, Value limit, StringRef message) {
  if (!status) {
    Value ok = arith::XOrIOp::create(
        b, loc, bad, arith::ConstantIntOp::create(b, loc, 1, 1));
    cf::AssertOp::create(b, loc, ok, message);
    return;
  }
  emitIf(b, loc, bad, [&](OpBuilder &b, Location loc) {
    Value old = memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                            cI64(b, loc, 1), status,
                                            ValueRange{cIndex(b, loc, 0)});
    Value first = cmp(b, loc, arith::CmpIPredicate::eq, old, cI64(b, loc, 0));
    emitIf(b, loc, first, [&](OpBuilder &b, Location loc) {
      Value words[] = {cI64(b, loc, static_cast<int64_t>(kind)),
                       toI64(b, loc, token), toI64(b, loc, value),
                       toI64(b, loc, limit)};
      for (auto [i, word] : llvm::enumerate(words))
        memref::StoreOp::create(b, loc, word, status,
                                ValueRange{cIndex(b, loc, i + 1)});
    });
  });
}

Value inkling::loops::isReporter(OpBuilder &b, Location loc, Value head,
                                 Value channel) {
  Value c0 = cIndex(b, loc, 0);
  return arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::eq, head, c0),
      cmp(b, loc, arith::CmpIPredicate::eq, channel, c0));
}

std::pair<Value, Value> inkling::loops::emitBlockAndRow(OpBuilder &b,
                                                        Location loc, Value q,
                                                        int64_t blockSize) {
  if (llvm::isPowerOf2_64(blockSize)) {
    Value shift = cIndex(b, loc, llvm::Log2_64(blockSize));
    Value mask = cIndex(b, loc, blockSize - 1);
    return {arith::ShRUIOp::create(b, loc, q, shift),
            arith::AndIOp::create(b, loc, q, mask)};
  }
  Value n = cIndex(b, loc, blockSize);
  return {arith::DivUIOp::create(b, loc, q, n),
          arith::RemUIOp::create(b, loc, q, n)};
}

Value inkling::loops::emitSlotLimit(OpBuilder &b, Location loc, Value cache,
                                    int64_t blockSize) {
  Value numBlocks = memref::DimOp::create(b, loc, cache, 0);
  return toI64(b, loc,
               ArithBuilder(b, loc).mul(numBlocks, cIndex(b, loc, blockSize)));
}

SequenceInfo inkling::loops::emitSequence(OpBuilder &b, Location loc,
                                          Value qslBuf, Value numComputedBuf,
                                          Value batch, Value t) {
  Type idx = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{idx, idx}, ValueRange{cIndex(b, loc, 0), batch},
      [&](OpBuilder &b, Location loc, ValueRange lohi) {
        Value span = ArithBuilder(b, loc).sub(lohi[1], lohi[0]);
        Value more =
            cmp(b, loc, arith::CmpIPredicate::sgt, span, cIndex(b, loc, 1));
        scf::ConditionOp::create(b, loc, more, lohi);
      },
      [&](OpBuilder &b, Location loc, ValueRange lohi) {
        Value mid = arith::DivUIOp::create(
            b, loc, ArithBuilder(b, loc).add(lohi[0], lohi[1]),
            cIndex(b, loc, 2));
        Value start = toIndex(
            b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{mid}));
        Value le = cmp(b, loc, arith::CmpIPredicate::sle, start, t);
        Value lo = arith::SelectOp::create(b, loc, le, mid, lohi[0]);
        Value hi = arith::SelectOp::create(b, loc, le, lohi[1], mid);
        scf::YieldOp::create(b, loc, ValueRange{lo, hi});
      });
  SequenceInfo info;
  info.seq = loop.getResult(0);
  info.start = toIndex(
      b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{info.seq}));
  info.computed = toIndex(
      b, loc,
      memref::LoadOp::create(b, loc, numComputedBuf, ValueRange{info.seq}));
  ArithBuilder ab(b, loc);
  info.position = ab.add(info.computed, ab.sub(t, info.start));
  return info;
}

SlotInfo inkling::loops::emitSlot(OpBuilder &b, Location loc, Value slots,
                                  Value token, int64_t blockSize, bool checked,
                                  Value slotLimit, const SequenceInfo *sequence,
                                  Value blockTable) {
  SlotInfo info;
  info.slot = memref::LoadOp::create(b, loc, slots, ValueRange{token});
  Value slot = info.slot;
  info.valid = cmp(b, loc, arith::CmpIPredicate::sge, slot, cI64(b, loc, 0));
  Value n = cIndex(b, loc, blockSize);
  if (checked) {
    Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
    Value inRange = cmp(b, loc, arith::CmpIPredicate::slt, slot, slotLimit);
    info.bad = arith::OrIOp::create(
        b, loc, cmp(b, loc, arith::CmpIPredicate::slt, slot, cI64(b, loc, -1)),
        arith::AndIOp::create(b, loc, info.valid,
                              arith::XOrIOp::create(b, loc, inRange, yes)));
    info.valid = arith::AndIOp::create(b, loc, info.valid, inRange);
    // The token's own slot: block_table[b][p / N] * N + p % N.
    Value logical =
        arith::DivUIOp::create(b, loc, sequence->position, n).getResult();
    Value width = memref::DimOp::create(b, loc, blockTable, 1);
    Value inTable = cmp(b, loc, arith::CmpIPredicate::ult, logical, width);
    // A padding token reads no block table row.
    if (sequence->live)
      inTable = arith::AndIOp::create(b, loc, inTable, sequence->live);
    auto expected = scf::IfOp::create(
        b, loc, inTable,
        [&](OpBuilder &b, Location loc) {
          Value id =
              toI64(b, loc,
                    memref::LoadOp::create(b, loc, blockTable,
                                           ValueRange{sequence->seq, logical}));
          Value row = toI64(
              b, loc, arith::RemUIOp::create(b, loc, sequence->position, n));
          ArithBuilder ab(b, loc);
          scf::YieldOp::create(
              b, loc, ab.add(ab.mul(id, cI64(b, loc, blockSize)), row));
        },
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc, cI64(b, loc, -1));
        });
    info.expected = expected.getResult(0);
    Value own = cmp(b, loc, arith::CmpIPredicate::eq, slot, info.expected);
    info.notTokens = arith::AndIOp::create(
        b, loc, info.valid, arith::XOrIOp::create(b, loc, own, yes));
    info.valid = arith::AndIOp::create(b, loc, info.valid, own);
  }
  // Only used where valid (slot >= 0): unsigned division is exact there.
  std::tie(info.block, info.row) =
      emitBlockAndRow(b, loc, toIndex(b, loc, slot), blockSize);
  return info;
}

Value inkling::loops::emitRealTokens(OpBuilder &b, Location loc,
                                     sconv::StepOp step) {
  // qsl has B + 1 entries: its last one, without reading num_computed.
  Value qsl = step.getQueryStartLoc();
  Value last = arith::SubIOp::create(
      b, loc, memref::DimOp::create(b, loc, qsl, 0), cIndex(b, loc, 1));
  return toIndex(b, loc, memref::LoadOp::create(b, loc, qsl, ValueRange{last}));
}

void inkling::loops::maskPaddingSlot(OpBuilder &b, Location loc, SlotInfo &info,
                                     Value isReal) {
  info.valid = arith::AndIOp::create(b, loc, info.valid, isReal);
  if (info.bad)
    info.bad = arith::AndIOp::create(b, loc, info.bad, isReal);
  if (info.notTokens)
    info.notTokens = arith::AndIOp::create(b, loc, info.notTokens, isReal);
}

SequenceInfo inkling::loops::emitTokenSequence(OpBuilder &b, Location loc,
                                               sconv::StepOp step, Value batch,
                                               Value t, bool checked,
                                               Value reporter,
                                               StringRef opName) {
  Value qslBuf = step.getQueryStartLoc();
  Value numComputedBuf = step.getNumComputed();
  Value tokenSeqBuf = step.getTokenSeq();
  Value isReal =
      cmp(b, loc, arith::CmpIPredicate::slt, t, emitRealTokens(b, loc, step));
  auto meta = scf::IfOp::create(
      b, loc, isReal,
      [&](OpBuilder &b, Location loc) {
        Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
        if (!tokenSeqBuf) {
          SequenceInfo found =
              emitSequence(b, loc, qslBuf, numComputedBuf, batch, t);
          scf::YieldOp::create(
              b, loc, ValueRange{ok, found.seq, found.start, found.computed});
          return;
        }
        Value entry =
            memref::LoadOp::create(b, loc, tokenSeqBuf, ValueRange{t});
        Value s = toIndex(b, loc, entry), first;
        if (checked) {
          // The entry must name a sequence of the step holding t.
          Value inRange = cmp(b, loc, arith::CmpIPredicate::ult, s, batch);
          s = arith::SelectOp::create(b, loc, inRange, s, cIndex(b, loc, 0));
          first = toIndex(
              b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{s}));
          Value end = toIndex(
              b, loc,
              memref::LoadOp::create(
                  b, loc, qslBuf,
                  ValueRange{ArithBuilder(b, loc).add(s, cIndex(b, loc, 1))}));
          ok = arith::AndIOp::create(
              b, loc, inRange,
              arith::AndIOp::create(
                  b, loc, cmp(b, loc, arith::CmpIPredicate::sle, first, t),
                  cmp(b, loc, arith::CmpIPredicate::slt, t, end)));
          if (reporter) {
            Value bad = arith::XOrIOp::create(
                b, loc, ok, arith::ConstantIntOp::create(b, loc, 1, 1));
            emitReport(b, loc, arith::AndIOp::create(b, loc, bad, reporter),
                       step.getStatus(), CheckKind::TokenSeq, t, entry, batch,
                       (opName + " (checked): a token_seq entry is not the "
                                 "sequence (below B) whose tokens hold the "
                                 "token")
                           .str());
          }
        } else {
          first = toIndex(
              b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{s}));
        }
        Value done = toIndex(
            b, loc,
            memref::LoadOp::create(b, loc, numComputedBuf, ValueRange{s}));
        scf::YieldOp::create(b, loc, ValueRange{ok, s, first, done});
      },
      [&](OpBuilder &b, Location loc) {
        Value zero = cIndex(b, loc, 0);
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::ConstantIntOp::create(b, loc, 0, 1), zero, zero,
                       zero});
      });
  SequenceInfo info;
  info.live = meta.getResult(0);
  info.seq = meta.getResult(1);
  info.start = meta.getResult(2);
  info.computed = meta.getResult(3);
  ArithBuilder ab(b, loc);
  info.position = ab.add(info.computed, ab.sub(t, info.start));
  return info;
}

std::string inkling::loops::slotMessage(Operation *op) {
  return (op->getName().getStringRef() +
          " (checked): a slot_mapping entry is below -1 or addresses a block "
          "at or beyond the cache's num_blocks")
      .str();
}

void inkling::loops::emitSlotReports(OpBuilder &b, Location loc, Operation *op,
                                     const SlotInfo &slot, Value reporter,
                                     Value status, Value token,
                                     Value slotLimit) {
  emitReport(b, loc, arith::AndIOp::create(b, loc, slot.bad, reporter), status,
             CheckKind::Slot, token, slot.slot, slotLimit, slotMessage(op));
  emitReport(b, loc, arith::AndIOp::create(b, loc, slot.notTokens, reporter),
             status, CheckKind::SlotNotTokens, token, slot.slot, slot.expected,
             (op->getName().getStringRef() +
              " (checked): a slot_mapping entry is neither -1 nor the token's "
              "own slot block_table[b][p / N] * N + p % N")
                 .str());
}
