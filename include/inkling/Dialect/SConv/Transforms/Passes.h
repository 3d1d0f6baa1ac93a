//===- Passes.h - sconv passes ----------------------------------*- C++ -*-===//

#ifndef INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_H
#define INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace inkling::sconv {

#define GEN_PASS_DECL
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

} // namespace inkling::sconv

#endif // INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_H
