//===- SConvOps.h - sconv operations ----------------------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVOPS_H
#define INKLING_DIALECT_SCONV_IR_SCONVOPS_H

#include "inkling/Dialect/SConv/IR/SConvAttrs.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvInterfaces.h"
#include "inkling/Dialect/SConv/IR/SConvTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define GET_OP_CLASSES
#include "inkling/Dialect/SConv/IR/SConvOps.h.inc"

#endif // INKLING_DIALECT_SCONV_IR_SCONVOPS_H
