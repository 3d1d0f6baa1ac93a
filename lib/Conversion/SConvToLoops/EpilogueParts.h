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

/// sconv.fused_conv_kv_write's (t, h) rows with their chunks across
/// `threads` (EpilogueThreads.cpp), from `conv`'s values.
void emitKvRowsAcrossThreads(OpBuilder &b, Location loc, ConvNestBuilder &conv,
                             sconv::FusedConvKvWriteOp op,
                             const RowThreads &threads);
/// sconv.fused_conv_add_norm's token rows: one block per token, its heads'
/// chunks across `threads`.
void emitTokenRowsAcrossThreads(OpBuilder &b, Location loc,
                                ConvNestBuilder &conv,
                                sconv::FusedConvAddNormOp op,
                                const RowThreads &threads);

} // namespace inkling::loops

#endif // INKLING_LIB_CONVERSION_SCONVTOLOOPS_EPILOGUEPARTS_H
