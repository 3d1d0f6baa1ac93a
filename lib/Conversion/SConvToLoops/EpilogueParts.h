//===- EpilogueParts.h - What the epilogue lowerings share ------*- C++ -*-===//
//
// The pieces of the epilogues' defined arithmetic (docs/Design.md section 4,
// "Epilogues") and of their nests that both forms use (beyond Epilogue.h's,
// which a backend's strategy sees too): the one-thread rows
// of EpilogueLowering.cpp and the rows across threads of
// EpilogueThreads.cpp (a strategy's RowThreads, the GPU's).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_CONVERSION_SCONVTOLOOPS_EPILOGUEPARTS_H
#define INKLING_LIB_CONVERSION_SCONVTOLOOPS_EPILOGUEPARTS_H

#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Conversion/SConvToLoops/Epilogue.h"
#include "inkling/Conversion/SConvToLoops/LoopStrategy.h"
#include "inkling/Conversion/SConvToLoops/StepMetadata.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include <functional>

namespace inkling::loops {

int64_t powerOfTwoAtLeast(int64_t n);

/// The halving tree of an 8-lane f32 vector: lanes l + 4, then l + 2, then
/// l + 1 added to lane l.
Value laneTree(OpBuilder &b, Location loc, Value v);

/// The pairwise tree of `values`, zeros up to a power of two.
Value pairwiseTree(OpBuilder &b, Location loc, ArrayRef<Value> values);

/// scf.parallel (t) in [0, tokens) { body(t) }.
void emitTokenNest(OpBuilder &b, Location loc, Value tokens,
                   function_ref<void(OpBuilder &, Location, Value)> body);

/// The strategy's RowThreads, or null.
inline const RowThreads *rowThreadsOf(const SConvToLoopsOptions &options) {
  return options.strategy ? options.strategy->rowThreads() : nullptr;
}

/// Where the rows of an epilogue across threads come from: a fused op's
/// conv (ConvNestBuilder's rows) or an unfused op's input buffer.
struct ThreadRowSource {
  /// The per-(t, h) work before the row's values (in every thread).
  std::function<void(OpBuilder &, Location, Value t, Value h)> begin;
  /// Once per row, in one thread (the conv's bad-slot report).
  std::function<void(OpBuilder &, Location)> report;
  /// Stream `stream`'s bf16 values at [t, h, c, c + lanes) of the row begun.
  std::function<Value(OpBuilder &, Location, sconv::Stream stream, Value c,
                      int64_t lanes)>
      value;
};

/// Where one stream's (t, h) rows go, and whether they are normed first.
struct ThreadRowStream {
  sconv::Stream stream;
  Value weight; ///< Null: stored as they are.
  /// The store of row (t, h), made in its thread before the row's chunks:
  /// it stores `value` (bf16, `lanes` lanes) at channel c of the stream's
  /// destination (a KV cache at t's attention slot, or a [T, H, w] buffer).
  using RowStore = std::function<void(OpBuilder &, Location, Value value,
                                      Value c, int64_t lanes)>;
  std::function<RowStore(OpBuilder &, Location, Value t, Value h)> destination;
};

/// The (t, h) rows of `streams` with their chunks across `threads`
/// (EpilogueThreads.cpp): sconv.fused_conv_kv_write's, and the unfused
/// sconv.rms_norm's.
void emitRowsAcrossThreads(OpBuilder &b, Location loc, Value tokens,
                           const inkling::Layout &layout, float epsilon,
                           ArrayRef<ThreadRowStream> streams,
                           const ThreadRowSource &source,
                           const RowThreads &threads);

/// What a hidden-row norm across threads writes (sconv.add_rms_norm's and
/// sconv.fused_conv_add_norm's): h = residual + y, and its norm.
struct TokenRowOutputs {
  sconv::Stream stream;
  Value residual, sum, out, weight;
  float epsilon;
};

/// The token rows of a hidden-row norm: one block per token, its heads'
/// chunks across `threads`, the values of `source`.
void emitTokenRowsAcrossThreads(OpBuilder &b, Location loc, Value tokens,
                                const inkling::Layout &layout,
                                const TokenRowOutputs &outputs,
                                const ThreadRowSource &source,
                                const RowThreads &threads);

/// The conv's rows as a ThreadRowSource (the fused ops): `row` holds the row
/// begun; it must outlive the source it gives.
struct ConvRowSource {
  explicit ConvRowSource(ConvNestBuilder &conv) : conv(conv) {}
  ThreadRowSource get() {
    return {
        [this](OpBuilder &b, Location loc, Value t, Value h) {
          row = conv.beginRow(b, loc, t, h);
        },
        [this](OpBuilder &b, Location loc) { conv.reportRowSlot(b, loc, row); },
        [this](OpBuilder &b, Location loc, sconv::Stream stream, Value c,
               int64_t lanes) {
          return conv.rowValue(b, loc, row, stream, c, lanes);
        }};
  }
  ConvNestBuilder &conv;
  ConvRow row;
};

} // namespace inkling::loops

#endif // INKLING_LIB_CONVERSION_SCONVTOLOOPS_EPILOGUEPARTS_H
