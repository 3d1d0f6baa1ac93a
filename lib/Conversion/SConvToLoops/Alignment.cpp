//===- Alignment.cpp - What the accesses may claim ------------------------===//
//
// The bodies of Alignment.h.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/Alignment.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

int64_t inkling::loops::offsetMultiple(MemRefType type,
                                       ArrayRef<int64_t> indexMultiples,
                                       int64_t cap) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return 1;
  int64_t multiple = std::gcd(cap, offset);
  for (auto [stride, index] : llvm::zip_equal(strides, indexMultiples)) {
    int64_t term = ShapedType::isDynamic(stride) ? index : stride * index;
    multiple = std::gcd(multiple, term);
  }
  return multiple;
}

bool inkling::loops::lineAligned(MemRefType type,
                                 ArrayRef<int64_t> indexMultiples) {
  if (type.getElementTypeBitWidth() != 16)
    return false;
  return offsetMultiple(type, indexMultiples, kLineLanes) == kLineLanes;
}

llvm::MaybeAlign inkling::loops::accessAlign(MemRefType type,
                                             ArrayRef<int64_t> indexMultiples) {
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t bytes = offsetMultiple(type, indexMultiples) * elementBytes;
  if (bytes <= elementBytes)
    return llvm::MaybeAlign();
  return llvm::MaybeAlign(std::min<uint64_t>(kAlignBytes, bytes));
}

int64_t inkling::loops::flatIndexMultiple(int64_t width) {
  return std::gcd(kLanes, width);
}

MemRefType inkling::loops::staticCacheType(Value cache) {
  auto type = cast<MemRefType>(cache.getType());
  while (auto castOp = cache.getDefiningOp<memref::CastOp>()) {
    cache = castOp.getSource();
    auto source = dyn_cast<MemRefType>(cache.getType());
    if (!source)
      break;
    type = source;
  }
  return type;
}

llvm::MaybeAlign inkling::loops::cacheAlign(MemRefType cacheType,
                                            int64_t offset) {
  return accessAlign(cacheType, {1, 1, 1, std::gcd(kLanes, offset)});
}

bool inkling::loops::cacheLineAligned(MemRefType cacheType, int64_t offset) {
  return lineAligned(cacheType, {1, 1, 1, std::gcd(kLineLanes, offset)});
}
