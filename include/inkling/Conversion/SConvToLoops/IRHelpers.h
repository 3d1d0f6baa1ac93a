//===- IRHelpers.h - Small IR helpers of the loop lowering -------*- C++
//-*-===//
//
// Constants and one-line builders every nest of the loop lowering uses
// (integer add/sub/mul go through upstream's ArithBuilder), and the
// void scf.if of their branches.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_IRHELPERS_H
#define INKLING_CONVERSION_SCONVTOLOOPS_IRHELPERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace inkling::loops {

using namespace mlir;

/// Channels per vector access: 16 bytes of bf16.
constexpr int64_t kLanes = 8;
constexpr uint64_t kAlignBytes = 16;

/// An index constant.
Value cIndex(OpBuilder &b, Location loc, int64_t v);
/// An i64 constant.
Value cI64(OpBuilder &b, Location loc, int64_t v);
/// An integer as index.
Value toIndex(OpBuilder &b, Location loc, Value v);
/// An index or integer as i64 (sign-extended).
Value toI64(OpBuilder &b, Location loc, Value v);
/// arith.cmpi `pred` (ArithBuilder has only slt and sgt).
Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate pred, Value lhs,
          Value rhs);

/// The body of a branch or loop, at the builder's insertion point.
using BodyFn = function_ref<void(OpBuilder &, Location)>;

/// scf.if `cond` without results: `thenBody`, terminated by its yield.
void emitIf(OpBuilder &b, Location loc, Value cond, BodyFn thenBody);
/// scf.if `cond` without results: `thenBody`, else `elseBody`, each
/// terminated by its yield.
void emitIfElse(OpBuilder &b, Location loc, Value cond, BodyFn thenBody,
                BodyFn elseBody);
/// The value a branch computes at the builder's insertion point.
using ValueFn = function_ref<Value(OpBuilder &, Location)>;
/// scf.if `cond` of one result: `thenValue`, else `elseValue`, each yielded.
Value emitIfValue(OpBuilder &b, Location loc, Value cond, ValueFn thenValue,
                  ValueFn elseValue);

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_IRHELPERS_H
