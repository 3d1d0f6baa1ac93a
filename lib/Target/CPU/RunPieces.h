//===- RunPieces.h - What the CPU's run nests share -------------*- C++ -*-===//
//
// The pieces the token-run nest of prefill (ConvTokenRuns.cpp) and the
// decode-run nest (ConvDecodeRuns.cpp) share: a chunk's weights and bias
// loaded once for the tokens of a run, the walk over a row's 64-byte lines
// then 16-byte chunks, the lane order and the line marks of the stores.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_TARGET_CPU_RUNPIECES_H
#define INKLING_LIB_TARGET_CPU_RUNPIECES_H

#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Target/CPU/LoopStrategy.h"

namespace inkling::cpu {

/// What every token of a run shares in one chunk of channels c.. of head
/// h: the lane order, the bias (acc's start) and the tap weights.
struct RunChunk {
  mlir::Value h, c;
  int64_t lanes;
  loops::LaneOrder order;
  mlir::Value bias;
  llvm::SmallVector<mlir::Value> tapWeights;
};

/// Even-odd lanes (the CPU's choice, evenOddLanes): no lane-crossing
/// shuffle between a row's bf16 and the f32 lanes of the fmas.
loops::LaneOrder runLaneOrder(const CPULoopOptions &options, int64_t lanes);

/// The bias and weights of channels c.. of head h of `part`, in the run
/// lane order.
RunChunk loadRunChunk(const loops::ConvNestBuilder &nest,
                      const CPULoopOptions &options, mlir::OpBuilder &b,
                      mlir::Location loc, const loops::ConvPart &part,
                      mlir::Value h, mlir::Value c, int64_t lanes);

/// Calls `body` for every chunk of a row of `width` channels: whole groups
/// of kLineLanes channels (a 64-byte line per token), then the rest by
/// 16-byte chunks (and a shorter last one).
void forEachLineChunk(mlir::OpBuilder &b, mlir::Location loc, int64_t width,
                      loops::LanesBody body);

/// The outer nest of the run forms: scf.parallel over (run of `runTokens`
/// tokens, head), calling `body` with the run's tokens [t0, t1) (t1 cut at
/// the step's end) and the head. Returns the nest.
mlir::scf::ParallelOp emitRunHeadNest(
    const loops::ConvNestBuilder &nest, mlir::OpBuilder &b, mlir::Location loc,
    int64_t runTokens,
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, mlir::Value t0,
                            mlir::Value t1, mlir::Value h)>
        body);

/// Token t's per-(t, h) values for a decode run, with its taps' sources
/// (CPUTapHoisting's, where the nest has not chosen them).
loops::ConvRow decodeRow(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                         mlir::Location loc, mlir::Value t, mlir::Value h);

/// Whether every one of `rows` is live with every tap a history row (the
/// usual decode run, whose taps then load unselected).
mlir::Value rowsFromCache(mlir::OpBuilder &b, mlir::Location loc,
                          llvm::ArrayRef<loops::ConvRow> rows);

/// The loads of a decode run in one chunk, when every one of `rows` is live
/// with every tap a history row (rowsFromCache): each token's x (bf16, as
/// stored) and its taps' cache rows (f32 in the chunk's lane order, oldest
/// first). Emitted before any store of the run: a slot row and the history
/// rows of a page lie D elements apart (4 KiB at the real layout) and alias
/// in the low 12 address bits, which made loads issued after the slot
/// stores wait (docs/fusion.md). The order is the fusion's own legality: a
/// conv reads the cache only below num_computed, an insert writes only at
/// or above it.
struct DecodeRunLoads {
  llvm::SmallVector<mlir::Value> xs;
  llvm::SmallVector<llvm::SmallVector<mlir::Value>> taps;
};
DecodeRunLoads loadDecodeRun(const loops::ConvNestBuilder &nest,
                             mlir::OpBuilder &b, mlir::Location loc,
                             const loops::ConvPart &part, const RunChunk &chunk,
                             llvm::ArrayRef<loops::ConvRow> rows);

/// x stored at its conv-cache slot, cache[slot.block, h, slot.row, col..]
/// (a masked slot stores nothing), a line store marked as markLine does.
void storeAtSlot(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                 mlir::Location loc, const loops::ConvPart &part,
                 const loops::SlotInfo &slot, mlir::Value h, mlir::Value col,
                 mlir::Value x);

/// `v` (f32, `lanes` lanes in `order`) rounded to bf16 in a decode nest:
/// truncToBf16's bits, by vcvtne2ps2bf16 where that is exact when the
/// target has avx512-bf16 (X86Bf16.h), each line's branch counted with
/// branch counters (X86RoundedLine, SoftwareRoundedLine).
mlir::Value roundDecodeLine(const loops::ConvNestBuilder &nest,
                            const CPULoopOptions &options, mlir::OpBuilder &b,
                            mlir::Location loc, mlir::Value v, int64_t lanes,
                            loops::LaneOrder order);

/// Marks a store of one 64-byte line that `aligned` proves line-aligned
/// whenever its memref's base is (kLineAlignedAttrName).
void markLine(mlir::Operation *store, bool aligned);

} // namespace inkling::cpu

#endif // INKLING_LIB_TARGET_CPU_RUNPIECES_H
