//===- SConvOps.cpp - sconv operations ------------------------------------===//

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "SConvVerifyUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace inkling::sconv;
using namespace inkling::sconv::detail;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `k`, `v`, `attn` or `mlp` as a bare keyword (`%cache[k]`).
static ParseResult parseStreamRef(OpAsmParser &parser, StreamAttr &stream) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Stream> value = symbolizeStream(keyword);
  if (!value)
    return parser.emitError(loc) << "expected a stream (k, v, attn or mlp), "
                                    "found '"
                                 << keyword << "'";
  stream = StreamAttr::get(parser.getContext(), *value);
  return success();
}

static void printStreamRef(OpAsmPrinter &printer, Operation *,
                           StreamAttr stream) {
  printer << stringifyStream(stream.getValue());
}

#define GET_OP_CLASSES
#include "inkling/Dialect/SConv/IR/SConvOps.cpp.inc"

//===----------------------------------------------------------------------===//
// BindOp
//===----------------------------------------------------------------------===//

MemRefType BindOp::getCacheType(LayoutAttr layout, int64_t pageBytes) {
  inkling::Layout derived = layout.getDerived();
  int64_t blockStride = pageBytes / derived.elementBytes;
  auto strides = derived.cacheStrides(blockStride);
  auto shape = derived.cacheShape(ShapedType::kDynamic);
  auto stridedLayout =
      StridedLayoutAttr::get(layout.getContext(), /*offset=*/0, strides);
  return MemRefType::get(shape, layout.getDtype(), stridedLayout);
}

void BindOp::build(OpBuilder &builder, OperationState &state, Value buffer,
                   LayoutAttr layout, int64_t pageBytes) {
  build(builder, state, getCacheType(layout, pageBytes), buffer, layout,
        builder.getI64IntegerAttr(pageBytes));
}

Value BindOp::getViewSource() { return getBuffer(); }

LogicalResult BindOp::verify() {
  auto bufferType = dyn_cast<MemRefType>(getBuffer().getType());
  Type i8 = IntegerType::get(getContext(), 8);
  if (!bufferType || bufferType.getRank() != 1 ||
      bufferType.getElementType() != i8 || !bufferType.getLayout().isIdentity())
    return emitOpError() << "operand 'buffer': expected a contiguous "
                            "memref<?xi8>, found "
                         << getBuffer().getType();
  inkling::StatusOr<int64_t> blockStride =
      getLayout().getDerived().blockStrideForPageBytes(getPageBytes());
  if (!blockStride.isOk())
    return emitOpError() << "attribute 'page_bytes': "
                         << blockStride.status().message();
  MemRefType expected = getCacheType(getLayout(), getPageBytes());
  MemRefType found = getCache().getType();
  int64_t bufferBytes = bufferType.getDimSize(0);
  int64_t foundBlocks = found.getRank() == 4 ? found.getDimSize(0) : 0;
  bool blocksMatch = ShapedType::isDynamic(foundBlocks) ||
                     (!ShapedType::isDynamic(bufferBytes) &&
                      foundBlocks == bufferBytes / getPageBytes());
  if (found.getRank() != 4 ||
      found.getShape().drop_front() != expected.getShape().drop_front() ||
      found.getElementType() != expected.getElementType() ||
      found.getLayout() != expected.getLayout() || !blocksMatch)
    return emitOpError() << "result 'cache': expected " << expected
                         << " (the block count may be static when the "
                            "buffer size is), found "
                         << found;
  return success();
}

//===----------------------------------------------------------------------===//
// StepOp
//===----------------------------------------------------------------------===//

LogicalResult StepOp::verify() {
  if (failed(verifyMetadataOperand(*this, "query_start_loc",
                                   getQueryStartLoc().getType(), 1, 32)) ||
      failed(verifyMetadataOperand(*this, "num_computed",
                                   getNumComputed().getType(), 1, 32)) ||
      failed(verifyMetadataOperand(*this, "block_table",
                                   getBlockTable().getType(), 2, 32)) ||
      failed(verifyMetadataOperand(*this, "slot_mapping",
                                   getSlotMapping().getType(), 1, 64)))
    return failure();
  int64_t qsl = getQueryStartLoc().getType().getDimSize(0);
  int64_t batch = getNumComputed().getType().getDimSize(0);
  int64_t rows = getBlockTable().getType().getDimSize(0);
  if (!ShapedType::isDynamic(qsl) && !ShapedType::isDynamic(batch) &&
      qsl != batch + 1)
    return emitOpError() << "operand 'query_start_loc': expected " << batch + 1
                         << " entries (B + 1 for B = " << batch
                         << " sequences in 'num_computed'), found " << qsl;
  if (!ShapedType::isDynamic(rows) && !ShapedType::isDynamic(batch) &&
      rows != batch)
    return emitOpError() << "operand 'block_table': expected " << batch
                         << " rows (one per sequence in 'num_computed'), found "
                         << rows;
  return success();
}

//===----------------------------------------------------------------------===//
// InsertOp
//===----------------------------------------------------------------------===//

LogicalResult InsertOp::verify() {
  if (failed(verifyCacheOperand(*this, "cache", getCache().getType(),
                                getLayout())) ||
      failed(verifyStreamOperand(*this, "x", getX().getType(), getLayout(),
                                 getStream())))
    return failure();
  return verifyStepCoversTokens(*this, getStep(),
                                getX().getType().getDimSize(0));
}

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::verify() {
  LayoutAttr layout = getLayout();
  Stream stream = getStream();
  if (failed(
          verifyCacheOperand(*this, "cache", getCache().getType(), layout)) ||
      failed(
          verifyStreamOperand(*this, "x", getX().getType(), layout, stream)) ||
      failed(verifyWeightsOperand(*this, "weights", getWeights().getType(),
                                  layout, stream)) ||
      (getBias() && failed(verifyBiasOperand(*this, "bias", getBias().getType(),
                                             layout, stream))) ||
      failed(verifyStreamOperand(*this, "out", getOut().getType(), layout,
                                 stream)))
    return failure();
  MemRefType xType = getX().getType();
  MemRefType outType = getOut().getType();
  if (outType.getShape() != xType.getShape())
    return emitOpError() << "operand 'out': expected the shape of 'x' ("
                         << xType << "), found " << outType;
  // Taps read other tokens' inputs: an in-place conv would read outputs.
  if (getOut() == getX())
    return emitOpError() << "operand 'out' must not be operand 'x': the conv "
                            "reads x of earlier tokens after writing out";
  return success();
}
