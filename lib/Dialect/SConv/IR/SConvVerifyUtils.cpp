//===- SConvVerifyUtils.cpp - Operand checks against a layout -------------===//

#include "SConvVerifyUtils.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace inkling::sconv::detail {

namespace {

std::string formatDims(ArrayRef<int64_t> dims) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
  }
  return text + "]";
}

InFlightDiagnostic operandError(Operation *op, StringRef name) {
  return op->emitOpError() << "operand '" << name << "': ";
}

/// Checks that `type` is a ranked memref of `elementType`.
FailureOr<MemRefType> memrefOf(Operation *op, StringRef name, Type type,
                               Type elementType) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref) {
    operandError(op, name) << "expected a ranked memref of " << elementType
                           << ", found " << type;
    return failure();
  }
  if (memref.getElementType() != elementType) {
    operandError(op, name) << "expected element type " << elementType
                           << ", found " << memref.getElementType();
    return failure();
  }
  return memref;
}

/// Compares static dims (a dynamic expected dim matches anything; a dynamic
/// found dim matches nothing static).
bool dimsMatch(ArrayRef<int64_t> found, ArrayRef<int64_t> expected) {
  if (found.size() != expected.size())
    return false;
  for (auto [f, e] : llvm::zip(found, expected))
    if (!ShapedType::isDynamic(e) && f != e)
      return false;
  return true;
}

LogicalResult checkStrides(Operation *op, StringRef name, MemRefType type,
                           ArrayRef<int64_t> expected) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      !dimsMatch(strides, expected))
    return operandError(op, name)
           << "expected strides " << formatDims(expected) << ", found "
           << (strides.empty() ? std::string("a non-strided layout")
                               : formatDims(strides));
  return success();
}

LogicalResult checkShape(Operation *op, StringRef name, MemRefType type,
                         ArrayRef<int64_t> expected) {
  if (!dimsMatch(type.getShape(), expected))
    return operandError(op, name) << "expected shape " << formatDims(expected)
                                  << ", found " << formatDims(type.getShape());
  return success();
}

/// checkShape, then checkStrides.
LogicalResult checkDims(Operation *op, StringRef name, MemRefType type,
                        ArrayRef<int64_t> shape, ArrayRef<int64_t> strides) {
  if (failed(checkShape(op, name, type, shape)))
    return failure();
  return checkStrides(op, name, type, strides);
}

/// Calls `check` with `type` as a memref of the layout's element type (an
/// error otherwise) and the stream's H and w.
using StreamCheck = function_ref<LogicalResult(MemRefType memref, int64_t heads,
                                               int64_t width)>;
LogicalResult checkStreamMemRef(Operation *op, StringRef name, Type type,
                                LayoutAttr layout, Stream stream,
                                StreamCheck check) {
  FailureOr<MemRefType> memref = memrefOf(op, name, type, layout.getDtype());
  if (failed(memref))
    return failure();
  return check(*memref, layout.getHeadsPerRank(),
               layout.getStreamWidth(stream));
}

} // namespace

LogicalResult verifyCacheOperand(Operation *op, StringRef name, Type type,
                                 LayoutAttr layout) {
  FailureOr<MemRefType> memref = memrefOf(op, name, type, layout.getDtype());
  if (failed(memref))
    return failure();
  inkling::Layout derived = layout.getDerived();
  int64_t dyn = ShapedType::kDynamic;
  // The block size is the engine's choice, so a mismatch is the likely
  // error: say so rather than only print both shapes.
  if (memref->getRank() == 4 && memref->getDimSize(2) != derived.blockSize)
    return operandError(op, name)
           << "block size N (dim 2 = "
           << (memref->isDynamicDim(2) ? std::string("?")
                                       : std::to_string(memref->getDimSize(2)))
           << ") differs from the layout's block_size (" << derived.blockSize
           << ")";
  if (failed(checkDims(
          op, name, *memref,
          {dyn, derived.headsPerRank, derived.blockSize, derived.headSize},
          {dyn, derived.headStride(), derived.headSize, 1})))
    return failure();
  int64_t blockStride = memref->getStridesAndOffset().first[0];
  if (!ShapedType::isDynamic(blockStride) &&
      blockStride < derived.pageElements())
    return operandError(op, name)
           << "block stride " << blockStride
           << " is smaller than the page of H*N*D = " << derived.pageElements()
           << " elements";
  return success();
}

LogicalResult verifyStreamOperand(Operation *op, StringRef name, Type type,
                                  LayoutAttr layout, Stream stream) {
  int64_t dyn = ShapedType::kDynamic;
  return checkStreamMemRef(
      op, name, type, layout, stream,
      [&](MemRefType memref, int64_t heads, int64_t width) -> LogicalResult {
        if (memref.getRank() == 3)
          return checkDims(op, name, memref, {dyn, heads, width},
                           {dyn, width, 1});
        if (memref.getRank() == 2)
          return checkDims(op, name, memref, {dyn, heads * width}, {dyn, 1});
        return operandError(op, name)
               << "expected shape [T, " << heads << ", " << width << "] or [T, "
               << heads * width << "] for stream '" << stringifyStream(stream)
               << "', found " << formatDims(memref.getShape());
      });
}

LogicalResult verifyWeightsOperand(Operation *op, StringRef name, Type type,
                                   LayoutAttr layout, Stream stream) {
  FailureOr<MemRefType> memref = memrefOf(op, name, type, layout.getDtype());
  if (failed(memref))
    return failure();
  int64_t channels = layout.getHeadsPerRank() * layout.getStreamWidth(stream);
  int64_t kernel = layout.getKernel();
  return checkDims(op, name, *memref, {channels, kernel}, {kernel, 1});
}

LogicalResult verifyMetadataOperand(Operation *op, StringRef name, Type type,
                                    unsigned rank, unsigned bitWidth) {
  auto memref = dyn_cast<MemRefType>(type);
  Type expectedElement = IntegerType::get(op->getContext(), bitWidth);
  if (!memref || memref.getElementType() != expectedElement ||
      memref.getRank() != rank) {
    std::string expected = "memref<";
    for (unsigned i = 0; i < rank; ++i)
      expected += "?x";
    expected += "i" + std::to_string(bitWidth) + ">";
    return operandError(op, name)
           << "expected a rank-" << rank << " memref of i" << bitWidth << " ("
           << expected << "), found " << type;
  }
  if (!memref.isLastDimUnitStride())
    return operandError(op, name)
           << "expected a unit innermost stride, found " << type;
  return success();
}

LogicalResult verifyStepCoversTokens(Operation *op, Value stepValue,
                                     int64_t tokens) {
  auto step = stepValue.getDefiningOp<StepOp>();
  if (!step || ShapedType::isDynamic(tokens))
    return success();
  int64_t slots = step.getSlotMapping().getType().getDimSize(0);
  if (!ShapedType::isDynamic(slots) && slots < tokens)
    return operandError(op, "slot_mapping")
           << "holds " << slots << " slots for " << tokens << " tokens";
  return verifyTokenSeqCoversTokens(op, stepValue, tokens);
}

LogicalResult verifyTokenSeqCoversTokens(Operation *op, Value stepValue,
                                         int64_t tokens) {
  auto step = stepValue.getDefiningOp<StepOp>();
  if (!step || ShapedType::isDynamic(tokens) || !step.getTokenSeq())
    return success();
  int64_t entries =
      cast<MemRefType>(step.getTokenSeq().getType()).getDimSize(0);
  if (!ShapedType::isDynamic(entries) && entries < tokens)
    return operandError(op, "token_seq")
           << "holds " << entries << " entries for " << tokens << " tokens";
  return success();
}

LogicalResult verifyKvCacheOperand(Operation *op, StringRef name, Type type,
                                   LayoutAttr layout, Stream stream) {
  int64_t dyn = ShapedType::kDynamic;
  return checkStreamMemRef(
      op, name, type, layout, stream,
      [&](MemRefType memref, int64_t heads, int64_t width) -> LogicalResult {
        if (memref.getRank() != 4 || memref.isDynamicDim(1) ||
            memref.getDimSize(1) < 1)
          return operandError(op, name)
                 << "expected the attention cache [num_blocks, block_size, "
                 << heads << ", " << width
                 << "] (NHD) with a static block size >= 1, found "
                 << formatDims(memref.getShape());
        int64_t blockSize = memref.getDimSize(1);
        if (failed(checkDims(op, name, memref, {dyn, blockSize, heads, width},
                             {dyn, heads * width, width, 1})))
          return failure();
        int64_t blockStride = memref.getStridesAndOffset().first[0];
        if (!ShapedType::isDynamic(blockStride) &&
            blockStride < blockSize * heads * width)
          return operandError(op, name)
                 << "block stride " << blockStride
                 << " is smaller than a block of block_size*H*w = "
                 << blockSize * heads * width << " elements";
        return success();
      });
}

LogicalResult verifyChannelsOperand(Operation *op, StringRef name, Type type,
                                    LayoutAttr layout, int64_t channels) {
  FailureOr<MemRefType> memref = memrefOf(op, name, type, layout.getDtype());
  if (failed(memref))
    return failure();
  return checkDims(op, name, *memref, {channels}, {1});
}

LogicalResult verifyNormWidth(Operation *op, LayoutAttr layout, Stream stream) {
  int64_t width = layout.getStreamWidth(stream);
  if (width % 8 != 0)
    return op->emitOpError()
           << "stream '" << stringifyStream(stream) << "': a normalized row of "
           << width
           << " channels is not whole 16-byte chunks (a multiple of 8)";
  return success();
}

} // namespace inkling::sconv::detail
