//===- Lanes.cpp - IR helpers and a chunk's lanes -------------------------===//
//
// The bodies of IRHelpers.h and Lanes.h.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/Lanes.h"
#include "inkling/Conversion/SConvToLoops/IRHelpers.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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

Value inkling::loops::emitIfValue(OpBuilder &b, Location loc, Value cond,
                                  ValueFn thenValue, ValueFn elseValue) {
  auto branch = scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(b, loc, thenValue(b, loc));
      },
      [&](OpBuilder &b, Location loc) {
        scf::YieldOp::create(b, loc, elseValue(b, loc));
      });
  return branch.getResult(0);
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

Value inkling::loops::laneRange(OpBuilder &b, Location loc, Value v,
                                int64_t first, int64_t count) {
  SmallVector<int64_t> mask;
  for (int64_t l = 0; l < count; ++l)
    mask.push_back(first + l);
  return vector::ShuffleOp::create(b, loc, v, v, mask);
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
