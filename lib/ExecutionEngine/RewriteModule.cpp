//===- RewriteModule.cpp - Edits of the layer function before compile -----===//
//
// LayerProgram::keepOnlyOp (replay one op, with the epilogue ops that read
// its rows) and
// LayerProgram::setCacheGeometry (another block size or cross-layer pages:
// the signature's, and the lowering's options; the IR is not rewritten).
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "inkling/Dialect/SConv/Transforms/CacheGeometry.h"

#include "llvm/ADT/DenseSet.h"

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
  // The kept conv's rows, and what its epilogues (which run with it: the
  // same replay unit) make of them.
  llvm::DenseSet<mlir::Value> kept;
  auto keepIf = [&](mlir::Operation &op, mlir::Value rows, mlir::Value out) {
    if (!kept.contains(rows))
      erase.push_back(&op);
    else if (out)
      kept.insert(out);
  };
  for (mlir::Operation &op : impl.func.getBody().front()) {
    if (auto norm = llvm::dyn_cast<sconv::RmsNormOp>(op)) {
      keepIf(op, norm.getX(), norm.getOut());
      continue;
    }
    if (auto write = llvm::dyn_cast<sconv::KvWriteOp>(op)) {
      keepIf(op, write.getX(), {});
      continue;
    }
    if (auto add = llvm::dyn_cast<sconv::AddRmsNormOp>(op)) {
      keepIf(op, add.getY(), {});
      continue;
    }
    if (!llvm::isa<sconv::InsertOp, sconv::ConvOp, sconv::InsertPackedOp,
                   sconv::FusedConvOp, sconv::FusedConvKvWriteOp,
                   sconv::FusedConvAddNormOp>(op))
      continue;
    if (i++ != index)
      erase.push_back(&op);
    else if (auto conv = llvm::dyn_cast<sconv::ConvOp>(op))
      kept.insert(conv.getOut());
    else if (auto fused = llvm::dyn_cast<sconv::FusedConvOp>(op))
      kept.insert(fused.getOuts().begin(), fused.getOuts().end());
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
  // 0 keeps what an earlier call chose; the IR itself is never changed.
  if (blockSize == 0)
    blockSize = impl.geometryBlockSize;
  if (layers == 0)
    layers = impl.geometryLayers;
  mlir::FailureOr<sconv::CacheGeometry> geometry =
      sconv::planCacheGeometry(bind, blockSize, layers, error);
  if (mlir::failed(geometry)) {
    // Messages name the file (the pass's name the bind).
    const std::string layout = "for the layout";
    if (size_t at = error.find(layout); at != std::string::npos)
      error.replace(at, layout.size(), "for " + impl.path + "'s layout");
    return false;
  }
  // The signature in the new geometry; compile() hands the same numbers to
  // the pipeline (its block-size and cross-layers options).
  impl.geometryBlockSize = blockSize;
  impl.geometryLayers = layers;
  impl.sig.layout = geometry->layout.getDerived();
  impl.sig.pageBytes = geometry->pageBytes;
  impl.sig.crossLayers = geometry->layers;
  auto stride = impl.sig.layout.blockStrideForPageBytes(geometry->pageBytes);
  if (!stride) {
    error = stride.status().message();
    return false;
  }
  impl.sig.blockStride = *stride;
  return true;
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
