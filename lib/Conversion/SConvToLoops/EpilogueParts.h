//===- EpilogueParts.h - What the epilogue lowerings share ------*- C++ -*-===//
//
// The pieces of the epilogues' defined arithmetic (docs/Design.md section 4,
// "Epilogues") and of their nests that both forms use: the one-thread rows
// of EpilogueLowering.cpp and the rows across threads of
// EpilogueThreads.cpp (a strategy's RowThreads, the GPU's).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_CONVERSION_SCONVTOLOOPS_EPILOGUEPARTS_H
#define INKLING_LIB_CONVERSION_SCONVTOLOOPS_EPILOGUEPARTS_H

#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/ConvNest.h"
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

/// 1 / sqrt(sum / count + eps), in f32, splat to a chunk's lanes.
Value inverseRoot(OpBuilder &b, Location loc, Value sum, int64_t count,
                  float epsilon);

/// Token t's row in an attention KV cache [num_blocks, block_size, H, w]:
/// stored when 0 <= slot < num_blocks * block_size.
struct KvRow {
  KvRow(OpBuilder &b, Location loc, Value kvCache, Value slots, Value t)
      : kvCache(kvCache) {
    auto type = cast<MemRefType>(kvCache.getType());
    int64_t blockSize = type.getDimSize(1);
    align = accessAlign(type, {1, 1, 1, kLanes});
    Value slot = memref::LoadOp::create(b, loc, slots, ValueRange{t});
    Value limit = arith::MulIOp::create(
        b, loc, toI64(b, loc, memref::DimOp::create(b, loc, kvCache, 0)),
        cI64(b, loc, blockSize));
    stored = arith::AndIOp::create(
        b, loc, cmp(b, loc, arith::CmpIPredicate::sge, slot, cI64(b, loc, 0)),
        cmp(b, loc, arith::CmpIPredicate::slt, slot, limit));
    // Only used where stored holds (slot >= 0).
    std::tie(block, row) =
        emitBlockAndRow(b, loc, toIndex(b, loc, slot), blockSize);
  }

  void store(OpBuilder &b, Location loc, Value value, Value h, Value c,
             int64_t lanes) const {
    emitIf(b, loc, stored, [&](OpBuilder &b, Location loc) {
      storeLanes(b, loc, value, kvCache, ValueRange{block, row, h, c},
                 lanes == 1 ? llvm::MaybeAlign() : align);
    });
  }

  Value kvCache, stored, block, row;
  llvm::MaybeAlign align;
};
/// scf.parallel (t, h) in [0, tokens) x [0, heads) { body(t, h) }.
void emitRowNest(OpBuilder &b, Location loc, Value tokens, int64_t heads,
                 function_ref<void(OpBuilder &, Location, Value, Value)> body);

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
