//===- TripCount.cpp - Iterations of a loop nest, computed at run time ----===//

#include "TripCount.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

Value inkling::cpu::buildHasIterations(OpBuilder &b, Location loc,
                                       ValueRange lowerBounds,
                                       ValueRange upperBounds, ValueRange steps,
                                       int64_t threshold) {
  Type type = lowerBounds.front().getType();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
  };
  Value zero = constant(0);
  Value count = constant(1);
  for (auto [lb, ub, step] : llvm::zip(lowerBounds, upperBounds, steps)) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value empty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, ub, lb);
    Value trips = arith::CeilDivSIOp::create(b, loc, span, step);
    trips = arith::SelectOp::create(b, loc, empty, zero, trips);
    count = arith::MulIOp::create(b, loc, count, trips);
  }
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, count,
                               constant(threshold));
}
