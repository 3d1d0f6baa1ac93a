//===- Passes.h - Inkling conversion passes ---------------------*- C++ -*-===//

#ifndef INKLING_CONVERSION_PASSES_H
#define INKLING_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace inkling {

#define GEN_PASS_DECL
#include "inkling/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "inkling/Conversion/Passes.h.inc"

} // namespace inkling

#endif // INKLING_CONVERSION_PASSES_H
