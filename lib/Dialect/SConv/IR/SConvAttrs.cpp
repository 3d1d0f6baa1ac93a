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
                                        int64_t tp, int64_t blockSize,
                                        Type dtype) {
  inkling::LayoutConfig config;
  config.kvHeads = kvHeads;
  config.headDim = headDim;
  config.hidden = hidden;
  config.kernel = kernel;
  config.tp = tp;
  config.blockSize = blockSize;
  config.elementType = dtype ? typeSpelling(dtype) : "<null>";
  return config;
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t kvHeads, int64_t headDim,
                                 int64_t hidden, int64_t kernel, int64_t tp,
                                 int64_t blockSize, Type dtype) {
  inkling::StatusOr<inkling::Layout> layout = inkling::Layout::derive(
      makeConfig(kvHeads, headDim, hidden, kernel, tp, blockSize, dtype));
  if (!layout.isOk())
    return emitError() << "invalid sconv layout: " << layout.status().message();
  // The attribute stores the resolved N: 0 (the config's "default") is not
  // a block size.
  if (blockSize < 1)
    return emitError() << "invalid sconv layout: block_size must be >= 1, got "
                       << blockSize;
  return success();
}

inkling::LayoutConfig LayoutAttr::getConfig() const {
  return makeConfig(getKvHeads(), getHeadDim(), getHidden(), getKernel(),
                    getTp(), getBlockSize(), getDtype());
}

LayoutAttr LayoutAttr::withBlockSize(int64_t blockSize) const {
  inkling::LayoutConfig config = getConfig();
  config.blockSize = blockSize;
  if (blockSize < 1 || !inkling::Layout::derive(config).isOk())
    return {};
  return get(getContext(), getKvHeads(), getHeadDim(), getHidden(), getKernel(),
             getTp(), blockSize, getDtype());
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
  // Optional, in this order: block_size (default: the kernel), dtype
  // (default: bf16).
  Type dtype = BFloat16Type::get(ctx);
  int64_t blockSize = values[3];
  bool seenBlockSize = false, seenDtype = false;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef keyword;
    SMLoc keywordLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&keyword) || parser.parseEqual())
      return {};
    if (keyword == "block_size" && !seenBlockSize && !seenDtype) {
      seenBlockSize = true;
      if (parser.parseInteger(blockSize))
        return {};
    } else if (keyword == "dtype" && !seenDtype) {
      seenDtype = true;
      if (parser.parseType(dtype))
        return {};
    } else {
      parser.emitError(keywordLoc)
          << "expected 'block_size' or 'dtype' (once each, in that order), "
             "found '"
          << keyword << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<LayoutAttr>(loc, ctx, values[0], values[1],
                                       values[2], values[3], values[4],
                                       blockSize, dtype);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<kv_heads = " << getKvHeads() << ", head_dim = " << getHeadDim()
          << ", hidden = " << getHidden() << ", kernel = " << getKernel()
          << ", tp = " << getTp();
  if (getBlockSize() != getKernel())
    printer << ", block_size = " << getBlockSize();
  if (!getDtype().isBF16())
    printer << ", dtype = " << getDtype();
  printer << ">";
}
