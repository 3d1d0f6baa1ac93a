//===- TripCount.h - Iterations of a loop nest, at run time ----*- C++ -*-===//
//
// What the CPU passes that decide per call (fork a team, stream the stores)
// compare against their thresholds. Internal to lib/Target/CPU.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_TARGET_CPU_TRIPCOUNT_H
#define INKLING_LIB_TARGET_CPU_TRIPCOUNT_H

#include "mlir/IR/Builders.h"

namespace inkling::cpu {

/// Builds `product over dims of trips(lb, ub, step) >= threshold` (an i1)
/// at the builder's insertion point, where trips = ceil((ub - lb) / step),
/// 0 for an empty dimension (ub <= lb). Bounds and steps are integers or
/// indices of one type, steps positive (as scf.parallel and omp.loop_nest
/// require).
mlir::Value buildHasIterations(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::ValueRange lowerBounds,
                               mlir::ValueRange upperBounds,
                               mlir::ValueRange steps, int64_t threshold);

} // namespace inkling::cpu

#endif // INKLING_LIB_TARGET_CPU_TRIPCOUNT_H
