//===- SConvDialect.cpp - The sconv dialect -------------------------------===//

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace inkling::sconv;

#include "inkling/Dialect/SConv/IR/SConvOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "inkling/Dialect/SConv/IR/SConvOpsTypes.cpp.inc"

namespace {
/// Prints layouts as `#layout`, `#layout1`, ... aliases so a decoder layer's
/// many ops stay readable.
struct SConvOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<LayoutAttr>(attr)) {
      os << "layout";
      return AliasResult::OverridableAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void SConvDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "inkling/Dialect/SConv/IR/SConvOps.cpp.inc"
      >();
  addInterfaces<SConvOpAsmInterface>();
}

void SConvDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "inkling/Dialect/SConv/IR/SConvOpsTypes.cpp.inc"
      >();
}
