//===- SetCacheGeometry.cpp - Another block size or cross-layer pages ----===//
//
// planCacheGeometry / applyCacheGeometry (CacheGeometry.h) and the
// `sconv-set-cache-geometry` pass over them.
//
//===----------------------------------------------------------------------===//

#include "inkling/Dialect/SConv/Transforms/CacheGeometry.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Builders.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVSETCACHEGEOMETRY
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"
} // namespace inkling::sconv

using namespace mlir;
using namespace inkling;
using namespace inkling::sconv;

FailureOr<CacheGeometry> sconv::planCacheGeometry(BindOp bind,
                                                  int64_t blockSize,
                                                  int64_t layers,
                                                  std::string &error) {
  LayoutAttr oldLayout = bind.getLayout();
  inkling::Layout oldDerived = oldLayout.getDerived();
  if (blockSize == 0)
    blockSize = oldDerived.blockSize;
  LayoutConfig config = oldLayout.getConfig();
  config.blockSize = blockSize;
  StatusOr<Layout> derived = Layout::derive(config);
  if (blockSize < 1 || !derived) {
    error = "block size (" + std::to_string(blockSize) +
            ") is not valid for the layout: " +
            (derived ? std::string("block_size must be >= 1")
                     : derived.status().message());
    return failure();
  }
  if (layers < 0 || layers > (int64_t(1) << 20)) {
    error = "cross-layer page count (" + std::to_string(layers) +
            ") must be in [0, 2^20]";
    return failure();
  }
  CacheGeometry geometry;
  geometry.layout = oldLayout.withBlockSize(blockSize);
  // A layer's page keeps its padding; cross-layer pages put `layers` pages
  // side by side in one block stride (0: as many as the bind has).
  int64_t oldLayers = bind.getLayers().value_or(1);
  geometry.layers = layers == 0 ? oldLayers : layers;
  int64_t oldPage = static_cast<int64_t>(bind.getPageBytes()) / oldLayers;
  int64_t pageBytes = derived->pageBytes() + (oldPage - oldDerived.pageBytes());
  // Cross-layer: layer l's cache starts l pages into the allocation, and
  // the kernels' 16-byte accesses need every base aligned: the page is
  // padded to the alignment, as the runtime's cache plan pads it.
  if (geometry.layers > 1 && pageBytes % kBufferAlignment != 0)
    pageBytes += kBufferAlignment - pageBytes % kBufferAlignment;
  if (geometry.layers > 1 &&
      __builtin_mul_overflow(pageBytes, geometry.layers, &pageBytes)) {
    error = "cross-layer block stride overflows";
    return failure();
  }
  if (StatusOr<int64_t> stride = derived->blockStrideForPageBytes(pageBytes);
      !stride) {
    error = "block size (" + std::to_string(blockSize) +
            "): " + stride.status().message();
    return failure();
  }
  geometry.pageBytes = pageBytes;
  MemRefType oldType = bind.getCache().getType();
  geometry.cacheType = BindOp::getCacheType(geometry.layout, pageBytes);
  if (!oldType.isDynamicDim(0))
    geometry.cacheType = MemRefType::get(
        {oldType.getDimSize(0), geometry.cacheType.getDimSize(1),
         geometry.cacheType.getDimSize(2), geometry.cacheType.getDimSize(3)},
        geometry.cacheType.getElementType(), geometry.cacheType.getLayout());
  return geometry;
}

void sconv::applyCacheGeometry(Operation *root, BindOp bind,
                               const CacheGeometry &geometry) {
  LayoutAttr oldLayout = bind.getLayout();
  MemRefType oldType = bind.getCache().getType();
  // Every use of the layout and of the cache type follows the bind.
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](LayoutAttr attr) -> std::optional<Attribute> {
    if (attr == oldLayout)
      return geometry.layout;
    return std::nullopt;
  });
  replacer.addReplacement([&](MemRefType type) -> std::optional<Type> {
    if (type == oldType)
      return geometry.cacheType;
    return std::nullopt;
  });
  replacer.recursivelyReplaceElementsIn(root, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  Builder builder(bind.getContext());
  bind.setPageBytesAttr(builder.getI64IntegerAttr(geometry.pageBytes));
  if (geometry.layers > 1)
    bind.setLayersAttr(builder.getI64IntegerAttr(geometry.layers));
  else
    bind.removeLayersAttr();
}

namespace inkling::sconv {
namespace {

struct SConvSetCacheGeometryPass
    : public impl::SConvSetCacheGeometryBase<SConvSetCacheGeometryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (blockSize == 0 && layers == 0)
      return;
    SmallVector<BindOp> binds;
    getOperation()->walk([&](BindOp bind) { binds.push_back(bind); });
    for (BindOp bind : binds) {
      std::string error;
      FailureOr<CacheGeometry> geometry =
          planCacheGeometry(bind, blockSize, layers, error);
      if (failed(geometry)) {
        bind.emitOpError() << error;
        return signalPassFailure();
      }
      // The uses of one bind's cache live in the function that holds it.
      Operation *scope = bind->getParentOp();
      applyCacheGeometry(scope ? scope : bind.getOperation(), bind, *geometry);
    }
  }
};

} // namespace
} // namespace inkling::sconv
