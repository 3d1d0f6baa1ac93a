//===- MapSConvNests.cpp - inkling-gpu-map-nests --------------------------===//
//
// Maps the lowered sconv loop nests (scf.parallel) to GPU blocks and
// threads.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace inkling::gpu {
#define GEN_PASS_DEF_MAPSCONVNESTSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// inkling-gpu-map-nests
//===----------------------------------------------------------------------===//

struct MapSConvNestsPass : impl::MapSConvNestsPassBase<MapSConvNestsPass> {

  /// Sets the mapping of `loop` to `level` (0 blocks, 1 threads, 2+
  /// sequential) and recurses into the scf.parallel ops of its body.
  LogicalResult map(scf::ParallelOp loop, int level) {
    using mlir::gpu::Processor;
    MLIRContext *context = loop.getContext();
    static const Processor blocks[] = {Processor::BlockX, Processor::BlockY,
                                       Processor::BlockZ};
    static const Processor threads[] = {Processor::ThreadX, Processor::ThreadY,
                                        Processor::ThreadZ};
    SmallVector<mlir::gpu::ParallelLoopDimMappingAttr> mapping;
    AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
    for (unsigned dim = 0; dim < loop.getNumLoops(); ++dim) {
      Processor processor = Processor::Sequential;
      if (level == 0 && dim < 3)
        processor = blocks[dim];
      else if (level == 1 && dim < 3)
        processor = threads[dim];
      mapping.push_back(mlir::gpu::ParallelLoopDimMappingAttr::get(
          context, processor, identity, identity));
    }
    if (failed(mlir::gpu::setMappingAttr(loop, mapping)))
      return loop.emitOpError("could not be mapped to the GPU");
    WalkResult result = loop.getBody()->walk([&](scf::ParallelOp inner) {
      if (inner->getParentOfType<scf::ParallelOp>() != loop)
        return WalkResult::skip();
      if (failed(map(inner, level + 1)))
        return WalkResult::interrupt();
      return WalkResult::skip();
    });
    return failure(result.wasInterrupted());
  }

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> roots;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        roots.push_back(loop);
    });
    for (scf::ParallelOp root : roots)
      if (failed(map(root, 0)))
        return signalPassFailure();
  }
};

} // namespace

} // namespace inkling::gpu
