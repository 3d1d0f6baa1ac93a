//===- SConvTypes.h - sconv types -------------------------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVTYPES_H
#define INKLING_DIALECT_SCONV_IR_SCONVTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "inkling/Dialect/SConv/IR/SConvOpsTypes.h.inc"

#endif // INKLING_DIALECT_SCONV_IR_SCONVTYPES_H
