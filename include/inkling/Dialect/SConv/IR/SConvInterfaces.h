//===- SConvInterfaces.h - sconv op interfaces ------------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVINTERFACES_H
#define INKLING_DIALECT_SCONV_IR_SCONVINTERFACES_H

#include "inkling/Dialect/SConv/IR/SConvAttrs.h"
#include "mlir/IR/OpDefinition.h"

#include "inkling/Dialect/SConv/IR/SConvInterfaces.h.inc"

#endif // INKLING_DIALECT_SCONV_IR_SCONVINTERFACES_H
