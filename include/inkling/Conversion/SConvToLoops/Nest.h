//===- Nest.h - Stream operands and the shared loop nest ---------*- C++
//-*-===//
//
// A stream operand ([T, H, w] or [T, H*w]), the chunk loop and the loop
// nest over (token, head) x (the concatenated 16-byte chunks of one or
// more streams) that the inserts and convs share.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_NEST_H
#define INKLING_CONVERSION_SCONVTOLOOPS_NEST_H

#include "inkling/Conversion/SConvToLoops/IRHelpers.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/Alignment.h"

namespace inkling::loops {

using namespace mlir;

struct StreamOperand {
  Value memref;
  int64_t width;
  /// What a chunk-start access may claim: [t, h, c] or [t, h*w + c] with c
  /// a multiple of kLanes.
  llvm::MaybeAlign align;
  /// Whether a kLineLanes access at a channel multiple of kLineLanes is
  /// line-aligned whenever the base is.
  bool lineAligned;

  StreamOperand(Value memref, int64_t width);

  SmallVector<Value> indices(OpBuilder &b, Location loc, Value token,
                             Value head, Value channel) const;
  Value load(OpBuilder &b, Location loc, Value token, Value head, Value channel,
             int64_t lanes) const;
  /// Returns the store (see storeLanes).
  Operation *store(OpBuilder &b, Location loc, Value value, Value token,
                   Value head, Value channel) const;
};

/// Emits the body for chunk `chunk` of a stream of `width` channels: one
/// 8-lane call for full chunks; for the last chunk of a width that is not a
/// multiple of 8, a scalar loop over its channels (1-lane calls).
using LanesBody =
    function_ref<void(OpBuilder &, Location, Value channel, int64_t lanes)>;

void emitChunk(OpBuilder &b, Location loc, Value chunk, int64_t width,
               LanesBody body);

int64_t numChunks(int64_t width);

/// The inner loop body of one stream (`part`) of a nest, for its chunk
/// `chunk` (counted from the stream's own first chunk).
using PartBody = function_ref<void(OpBuilder &, Location, Value token,
                                   Value head, unsigned part, Value chunk)>;

/// The loop nest of one op over one or more streams of widths `widths`:
///
///   scf.parallel (t, h) in [0, T) x [0, H) {
///     outer(t, h)
///     scf.parallel chunk in [0, sum of the streams' chunks) {
///       part i whose chunk range holds chunk: inner(t, h, i, chunk - start_i)
///   } }
///
/// The outer loop maps to GPU blocks, the inner one to threads. The streams'
/// chunks are concatenated in the order given (callers order the streams by
/// their offset in the head row), so consecutive inner iterations touch
/// consecutive 16-byte chunks of a packed row.
///
/// With `splitStreams` (a strategy's choice: LoopStrategy) the outer body
/// instead runs one inner scf.parallel per stream, in the same order: the same
/// chunks in the same sequence, without the per-chunk dispatch, so that each
/// inner loop is a plain strided copy or conv that LLVM vectorizes (still one
/// nest).
void emitNest(OpBuilder &b, Location loc, Value tokens, int64_t heads,
              ArrayRef<int64_t> widths, bool splitStreams, PartBody inner,
              function_ref<void(OpBuilder &, Location, Value, Value)> outer);

/// The order of `ranges` by offset in the head row.
SmallVector<unsigned> orderByOffset(ArrayRef<StreamRange> ranges);

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_NEST_H
