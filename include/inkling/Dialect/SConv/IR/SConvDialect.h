//===- SConvDialect.h - The sconv dialect -----------------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVDIALECT_H
#define INKLING_DIALECT_SCONV_IR_SCONVDIALECT_H

#include "mlir/IR/Dialect.h"

#include "inkling/Dialect/SConv/IR/SConvOpsDialect.h.inc"

#endif // INKLING_DIALECT_SCONV_IR_SCONVDIALECT_H
