//===- SConvAttrs.h - sconv attributes and enums ----------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVATTRS_H
#define INKLING_DIALECT_SCONV_IR_SCONVATTRS_H

#include "inkling/Runtime/Layout.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"

#include "inkling/Dialect/SConv/IR/SConvEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "inkling/Dialect/SConv/IR/SConvAttrDefs.h.inc"

namespace inkling::sconv {
// The dialect's enum (ODS) and the runtime's (MLIR-free) are one order: a
// case added to either without the other fails here.
static_assert(static_cast<int>(Stream::K) ==
                      static_cast<int>(::inkling::Stream::K) &&
                  static_cast<int>(Stream::V) ==
                      static_cast<int>(::inkling::Stream::V) &&
                  static_cast<int>(Stream::Attn) ==
                      static_cast<int>(::inkling::Stream::Attn) &&
                  static_cast<int>(Stream::Mlp) ==
                      static_cast<int>(::inkling::Stream::Mlp),
              "sconv::Stream and inkling::Stream disagree");
static_assert(getMaxEnumValForStream() + 1 ==
                  static_cast<unsigned>(::inkling::kNumStreams),
              "sconv::Stream and inkling::Stream have other cases");

/// The runtime's stream for a dialect stream (same order, same names).
inline ::inkling::Stream toRuntime(Stream stream) {
  return static_cast<::inkling::Stream>(static_cast<int>(stream));
}
} // namespace inkling::sconv

#endif // INKLING_DIALECT_SCONV_IR_SCONVATTRS_H
