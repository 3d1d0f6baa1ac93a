//===- SConvAttrs.cpp - sconv attributes ----------------------------------===//

#include "inkling/Dialect/SConv/IR/SConvAttrs.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace inkling::sconv;

#include "inkling/Dialect/SConv/IR/SConvEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "inkling/Dialect/SConv/IR/SConvAttrDefs.cpp.inc"

void SConvDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "inkling/Dialect/SConv/IR/SConvAttrDefs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// LayoutAttr
//===----------------------------------------------------------------------===//

static std::string typeSpelling(Type type) {
  std::string spelling;
  llvm::raw_string_ostream os(spelling);
  type.print(os);
  return spelling;
}

static inkling::LayoutConfig makeConfig(int64_t kvHeads, int64_t headDim,
                                        int64_t hidden, int64_t kernel,
                                        int64_t tp, Type dtype) {
  inkling::LayoutConfig config;
  config.kvHeads = kvHeads;
  config.headDim = headDim;
  config.hidden = hidden;
  config.kernel = kernel;
  config.tp = tp;
  config.elementType = dtype ? typeSpelling(dtype) : "<null>";
  return config;
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t kvHeads, int64_t headDim,
                                 int64_t hidden, int64_t kernel, int64_t tp,
                                 Type dtype) {
  inkling::StatusOr<inkling::Layout> layout = inkling::Layout::derive(
      makeConfig(kvHeads, headDim, hidden, kernel, tp, dtype));
  if (!layout.isOk())
    return emitError() << "invalid sconv layout: " << layout.status().message();
  return success();
}

inkling::LayoutConfig LayoutAttr::getConfig() const {
  return makeConfig(getKvHeads(), getHeadDim(), getHidden(), getKernel(),
                    getTp(), getDtype());
}

inkling::Layout LayoutAttr::getDerived() const {
  inkling::StatusOr<inkling::Layout> layout =
      inkling::Layout::derive(getConfig());
  // The verifier ran when the attribute was built.
  assert(layout.isOk() && "unverified sconv layout");
  return *layout;
}

inkling::StreamRange LayoutAttr::getRange(Stream stream) const {
  return getDerived().range(toRuntime(stream));
}

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  int64_t values[5];
  const char *names[5] = {"kv_heads", "head_dim", "hidden", "kernel", "tp"};
  if (parser.parseLess())
    return {};
  for (int i = 0; i < 5; ++i) {
    if (i > 0 && parser.parseComma())
      return {};
    if (parser.parseKeyword(names[i]) || parser.parseEqual() ||
        parser.parseInteger(values[i]))
      return {};
  }
  Type dtype = BFloat16Type::get(ctx);
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("dtype") || parser.parseEqual() ||
        parser.parseType(dtype))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<LayoutAttr>(loc, ctx, values[0], values[1],
                                       values[2], values[3], values[4], dtype);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<kv_heads = " << getKvHeads() << ", head_dim = " << getHeadDim()
          << ", hidden = " << getHidden() << ", kernel = " << getKernel()
          << ", tp = " << getTp();
  if (!getDtype().isBF16())
    printer << ", dtype = " << getDtype();
  printer << ">";
}
