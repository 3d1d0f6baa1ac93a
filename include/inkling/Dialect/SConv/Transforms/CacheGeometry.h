//===- CacheGeometry.h - Another block size or cross-layer pages -*- C++
//-*-===//
//
// The engine chooses the cache's block size N (the page unifier may scale
// it) and whether several layers share a block's allocation; the IR's
// `sconv.bind` carries the model's default. The geometry an engine asks for
// is planned here (pure: a bind and two numbers in, the new layout, page
// and cache type out) and applied once, by the `sconv-set-cache-geometry`
// pass that the lowering pipelines run first when their `block-size` or
// `cross-layers` option is set. `LayerProgram` plans with the same function
// to give its signature the engine's geometry without touching the IR.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_DIALECT_SCONV_TRANSFORMS_CACHEGEOMETRY_H
#define INKLING_DIALECT_SCONV_TRANSFORMS_CACHEGEOMETRY_H

#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Support/LLVM.h"

#include <string>

namespace inkling::sconv {

/// A bind's cache geometry.
struct CacheGeometry {
  LayoutAttr layout;          ///< The bind's layout with the block size.
  int64_t pageBytes = 0;      ///< The bind's `page_bytes` (the block stride).
  int64_t layers = 1;         ///< Pages per block stride (cross-layer pages).
  mlir::MemRefType cacheType; ///< The bind's result type.
};

/// The geometry `bind` gets with block size `blockSize` (0: its layout's)
/// and `layers` pages side by side in a block stride (0: as the bind has;
/// 1: a page per block). A layer's page keeps its padding, and cross-layer
/// pages are padded to a multiple of 16 bytes (every layer's base stays
/// aligned; the runtime's cache plan pads them alike). Fails with a
/// message naming the value (a block size the layout cannot take, a layer
/// count outside [0, 2^20], a block stride that overflows).
mlir::FailureOr<CacheGeometry> planCacheGeometry(BindOp bind, int64_t blockSize,
                                                 int64_t layers,
                                                 std::string &error);

/// Gives `bind` the geometry: its attributes, and every use of its old
/// layout and cache type under `root`.
void applyCacheGeometry(mlir::Operation *root, BindOp bind,
                        const CacheGeometry &geometry);

} // namespace inkling::sconv

#endif // INKLING_DIALECT_SCONV_TRANSFORMS_CACHEGEOMETRY_H
