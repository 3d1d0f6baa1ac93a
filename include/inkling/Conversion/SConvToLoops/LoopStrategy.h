//===- LoopStrategy.h - A backend's forms of the shared nests ---*- C++ -*-===//
//
// The hook through which a backend chooses the forms of the loop nests that
// `sconv-lower-to-loops` builds (IREE's split: the shared conversion emits
// the nest every backend needs; the CPU's forms live with the CPU, in
// lib/Target/CPU/CPULoopStrategy.cpp). Without a strategy the nests are the
// shared ones, which the GPU maps to blocks and threads.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_LOOPSTRATEGY_H
#define INKLING_CONVERSION_SCONVTOLOOPS_LOOPSTRATEGY_H

#include "inkling/Conversion/SConvToLoops/Lanes.h"

#include "mlir/IR/Builders.h"

namespace inkling {

namespace loops {
class ConvNestBuilder;
struct ConvPart;
struct KvEpilogue;
struct ConvRow;

/// Where tap j < W-1 of a (t, h) reads, when hoisted.
struct TapSource {
  /// x[token] when inStep; else cache[block, h, row] when history; else 0.
  mlir::Value inStep, token, history, block, row;
};
} // namespace loops

/// A (token, head) nest's taps chosen once per (token, head) instead of per
/// chunk: the hook points of the shared conv nest (unchecked convs only)
/// that a backend fills in (the CPU's: lib/Target/CPU/HoistedTaps.cpp).
class TapHoisting {
public:
  virtual ~TapHoisting();

  /// In the (t, h) prologue: where each tap j < W-1 of `row` reads.
  virtual llvm::SmallVector<loops::TapSource>
  tapSources(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
             mlir::Location loc, const loops::ConvRow &row) const = 0;
  /// In a chunk of channels c..: the f32 values of taps 0..W-2 from
  /// `row.taps`.
  virtual llvm::SmallVector<mlir::Value>
  hoistedTaps(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
              mlir::Location loc, const loops::ConvRow &row,
              const loops::ConvPart &part, mlir::Value c,
              int64_t lanes) const = 0;
  /// For an even kernel: the f32 weights per tap of `lanes` channels from
  /// `all` ([lanes x W] bf16, row-major), lanes in `order`.
  virtual llvm::SmallVector<mlir::Value>
  pairedTapWeights(const loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                   mlir::Location loc, mlir::Value all, int64_t lanes,
                   loops::LaneOrder order) const = 0;
};

/// The threads of a block as an epilogue's row reduction uses them (the
/// GPU's: lib/Target/GPU/RowThreads.cpp). With it, the fused epilogues
/// spread a row's chunks over the threads of the nest's inner
/// scf.parallel (EpilogueThreads.cpp): warp shuffles within a row,
/// workgroup memory and a barrier across a token's heads.
class RowThreads {
public:
  virtual ~RowThreads();

  /// The f32 `value` of the thread whose index in the inner loop is this
  /// thread's xor `offset`, among the first `width` (<= 32) threads of
  /// each warp (a butterfly step).
  virtual mlir::Value shuffleXor(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value value, int64_t offset,
                                 int64_t width) const = 0;
  /// The f32 `value` of lane `lane` (i32) of this thread's warp.
  virtual mlir::Value shuffleIdx(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value value, mlir::Value lane,
                                 int64_t width) const = 0;
  /// A block-wide buffer of `elements` f32 (workgroup memory), made in
  /// the inner loop's body.
  virtual mlir::Value blockBuffer(mlir::OpBuilder &b, mlir::Location loc,
                                  int64_t elements) const = 0;
  /// Waits for every thread of the block (a barrier).
  virtual void barrier(mlir::OpBuilder &b, mlir::Location loc) const = 0;
};

class LoopStrategy {
public:
  virtual ~LoopStrategy();

  /// The fused epilogues' rows across threads (null: one thread a row).
  virtual const RowThreads *rowThreads() const { return nullptr; }

  /// In a fused op's nest (insert_packed, fused_conv), run one inner loop
  /// per stream in row order instead of one loop over the concatenated
  /// chunks (see loops::emitNest).
  virtual bool splitStreams() const { return false; }

  /// In an unchecked conv's (token, head) nest, choose each tap's source
  /// once per (token, head) before the chunk loop (null: per chunk; see the
  /// `inkling-cpu-lower-to-loops` pass description).
  virtual const TapHoisting *tapHoisting() const { return nullptr; }

  /// Emits the nest of one conv (sconv.conv, sconv.fused_conv) at `b`'s
  /// insertion point, from the builder's pieces. The default: the shared
  /// (token, head) nest, `nest.emitTokenNest(b, loc)`.
  virtual void emitConvNest(loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                            mlir::Location loc) const;

  /// Emits the nest of an `sconv.fused_conv_kv_write` (conv `nest` and its
  /// epilogue) at `b`'s insertion point. The default: the shared (token,
  /// head) nest of `epilogue.row` (EpilogueLowering.cpp).
  virtual void emitKvWriteNest(loops::ConvNestBuilder &nest, mlir::OpBuilder &b,
                               mlir::Location loc,
                               const loops::KvEpilogue &epilogue) const;
};

} // namespace inkling

#endif // INKLING_CONVERSION_SCONVTOLOOPS_LOOPSTRATEGY_H
