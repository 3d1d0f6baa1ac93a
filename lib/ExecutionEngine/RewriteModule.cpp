//===- RewriteModule.cpp - Edits of the layer function before compile -----===//
//
// LayerProgram::keepOnlyOp (replay one op) and
// LayerProgram::setCacheGeometry (another block size or cross-layer pages).
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Verifier.h"

using namespace inkling;
using namespace inkling::exec;

bool LayerProgram::keepOnlyOp(int64_t index, std::string &error) {
  Impl &impl = *impl_;
  int64_t count = static_cast<int64_t>(impl.sig.ops.size());
  if (index < 0 || index >= count) {
    error = "--replay=" + std::to_string(index) + ": @" + impl.sig.function +
            " has " + std::to_string(count) + " sconv ops (0.." +
            std::to_string(count - 1) + ")";
    return false;
  }
  int64_t i = 0;
  llvm::SmallVector<mlir::Operation *> erase;
  for (mlir::Operation &op : impl.func.getBody().front()) {
    if (!llvm::isa<sconv::InsertOp, sconv::ConvOp, sconv::InsertPackedOp,
                   sconv::FusedConvOp>(op))
      continue;
    if (i++ != index)
      erase.push_back(&op);
  }
  for (mlir::Operation *op : erase)
    op->erase();
  return true;
}

bool LayerProgram::setCacheGeometry(int64_t blockSize, int64_t layers,
                                    std::string &error) {
  Impl &impl = *impl_;
  sconv::BindOp bind;
  impl.func.walk([&](sconv::BindOp b) { bind = b; });
  if (!bind) {
    error = impl.path + ": @" + impl.sig.function + " has no sconv.bind";
    return false;
  }
  sconv::LayoutAttr oldLayout = bind.getLayout();
  inkling::Layout oldDerived = oldLayout.getDerived();
  if (blockSize == 0)
    blockSize = oldDerived.blockSize;
  LayoutConfig config = oldLayout.getConfig();
  config.blockSize = blockSize;
  StatusOr<Layout> derived = Layout::derive(config);
  if (blockSize < 1 || !derived) {
    error = "block size (" + std::to_string(blockSize) + ") is not valid for " +
            impl.path + "'s layout: " +
            (derived ? std::string("block_size must be >= 1")
                     : derived.status().message());
    return false;
  }
  if (layers < 0 || layers > (int64_t(1) << 20)) {
    error = "cross-layer page count (" + std::to_string(layers) +
            ") must be in [0, 2^20]";
    return false;
  }
  sconv::LayoutAttr newLayout = oldLayout.withBlockSize(blockSize);
  // A layer's page keeps its padding; cross-layer pages put `layers` pages
  // side by side in one block stride (0: as many as the IR's bind has).
  int64_t oldLayers = bind.getLayers().value_or(1);
  if (layers == 0)
    layers = oldLayers;
  int64_t oldPage = static_cast<int64_t>(bind.getPageBytes()) / oldLayers;
  int64_t pageBytes = derived->pageBytes() + (oldPage - oldDerived.pageBytes());
  if (layers > 1 && __builtin_mul_overflow(pageBytes, layers, &pageBytes)) {
    error = "cross-layer block stride overflows";
    return false;
  }
  if (StatusOr<int64_t> stride = derived->blockStrideForPageBytes(pageBytes);
      !stride) {
    error = "block size (" + std::to_string(blockSize) +
            "): " + stride.status().message();
    return false;
  }
  mlir::MemRefType oldType = bind.getCache().getType();
  mlir::MemRefType newType = sconv::BindOp::getCacheType(newLayout, pageBytes);
  if (!oldType.isDynamicDim(0))
    newType =
        mlir::MemRefType::get({oldType.getDimSize(0), newType.getDimSize(1),
                               newType.getDimSize(2), newType.getDimSize(3)},
                              newType.getElementType(), newType.getLayout());
  // Every use of the layout and of the cache type follows the bind.
  mlir::AttrTypeReplacer replacer;
  replacer.addReplacement(
      [&](sconv::LayoutAttr attr) -> std::optional<mlir::Attribute> {
        if (attr == oldLayout)
          return newLayout;
        return std::nullopt;
      });
  replacer.addReplacement(
      [&](mlir::MemRefType type) -> std::optional<mlir::Type> {
        if (type == oldType)
          return newType;
        return std::nullopt;
      });
  replacer.recursivelyReplaceElementsIn(impl.func, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  mlir::Builder builder(&impl.context());
  bind.setPageBytesAttr(builder.getI64IntegerAttr(pageBytes));
  if (layers > 1)
    bind.setLayersAttr(builder.getI64IntegerAttr(layers));
  else
    bind.removeLayersAttr();
  FirstError diag(impl.context());
  if (mlir::failed(mlir::verify(impl.func))) {
    error = impl.path + ": the IR at block size " + std::to_string(blockSize) +
            " does not verify: " + diag.message;
    return false;
  }
  return impl.analyze(error);
}

llvm::Error LayerProgram::keepOnlyOp(int64_t index) {
  std::string error;
  if (!keepOnlyOp(index, error))
    return llvm::createStringError(error);
  return llvm::Error::success();
}

llvm::Error LayerProgram::setCacheGeometry(int64_t blockSize, int64_t layers) {
  std::string error;
  if (!setCacheGeometry(blockSize, layers, error))
    return llvm::createStringError(error);
  return llvm::Error::success();
}
