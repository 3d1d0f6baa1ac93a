//===- Epilogue.h - A fused conv's epilogue, for a strategy's nest -*- C++
//-*-===//
//
// What `sconv.fused_conv_kv_write`'s lowering (EpilogueLowering.cpp) hands
// a backend's strategy that builds its own nest for it (LoopStrategy::
// emitKvWriteNest; the CPU's: lib/Target/CPU/EpilogueRuns.cpp), and the
// pieces of the epilogue that both build from: an attention KV row's store
// and the norm's inverse root (docs/Design.md section 4, "Epilogues").
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_EPILOGUE_H
#define INKLING_CONVERSION_SCONVTOLOOPS_EPILOGUE_H

#include "inkling/Conversion/SConvToLoops/Nest.h"

namespace inkling::loops {

/// Token t's row in an attention KV cache [num_blocks, block_size, H, w]:
/// stored when 0 <= slot < num_blocks * block_size.
struct KvRow {
  KvRow(OpBuilder &b, Location loc, Value kvCache, Value slots, Value t);

  /// Stores `value` (bf16 in channel order, `lanes` lanes) at [h, c..] of
  /// the row when it is stored; returns the store (in its scf.if).
  Operation *store(OpBuilder &b, Location loc, Value value, Value h, Value c,
                   int64_t lanes) const;
  /// The same store, without the check (where `stored` holds).
  Operation *storeAt(OpBuilder &b, Location loc, Value value, Value h, Value c,
                     int64_t lanes) const;

  Value kvCache, stored, block, row;
  llvm::MaybeAlign align;
  /// A kLineLanes store at a channel multiple of kLineLanes is line-aligned
  /// whenever the cache's base is.
  bool lineAligned;
};

/// 1 / sqrt(sum / count + eps), in f32 (sqrt, then a division), splat to
/// `lanes` lanes.
Value inverseRoot(OpBuilder &b, Location loc, Value sum, int64_t count,
                  float epsilon, int64_t lanes = kLanes);

/// `sconv.fused_conv_kv_write`'s epilogue as a strategy's nest sees it.
struct KvEpilogue {
  /// Per stream of the op, in the op's order: the stream, its KV cache and
  /// its norm weight (null: stored without a norm).
  ArrayRef<sconv::Stream> streams;
  ArrayRef<Value> kvCaches, normWeights;
  Value kvSlots;
  float epsilon;
  /// The shared body of one (t, h) row: the row's conv, its norms and its
  /// KV stores (what the shared (token, head) nest runs per pair).
  function_ref<void(OpBuilder &, Location, Value t, Value h)> row;
};

/// scf.parallel (t, h) in [0, tokens) x [0, heads) { body(t, h) }.
void emitRowNest(OpBuilder &b, Location loc, Value tokens, int64_t heads,
                 function_ref<void(OpBuilder &, Location, Value, Value)> body);

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_EPILOGUE_H
