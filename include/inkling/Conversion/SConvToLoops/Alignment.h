//===- Alignment.h - What the loop lowering's accesses may claim -*- C++
//-*-===//
//
// Alignment facts proven from memref types (the contract: see the
// `sconv-lower-to-loops` pass description).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_ALIGNMENT_H
#define INKLING_CONVERSION_SCONVTOLOOPS_ALIGNMENT_H

#include "inkling/Conversion/SConvToLoops/IRHelpers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Alignment.h"

namespace inkling::loops {

using namespace mlir;

/// Channels of a 64-byte cache line of bf16: the chunk of the CPU's
/// token-run nest.
constexpr int64_t kLineLanes = 32;

/// The largest divisor of kLanes that every element offset
/// `offset + sum_k(i_k * stride_k)` of `type` provably has when index k is a
/// multiple of `indexMultiples[k]` (1: anything, 0: always 0). A dynamic
/// offset proves nothing; a dynamic stride keeps only its index's multiple.
int64_t offsetMultiple(MemRefType type, ArrayRef<int64_t> indexMultiples,
                       int64_t cap = kLanes);

/// Whether every such offset is a multiple of a 64-byte line (cap
/// kLineLanes elements of 2 bytes): a line access is then line-aligned
/// whenever the base is.
bool lineAligned(MemRefType type, ArrayRef<int64_t> indexMultiples);

/// The alignment a vector access to `type` at such indices may claim, under
/// the contract that the base (aligned pointer) of every memref operand is
/// 16-byte aligned (stated in the pass description; checked where buffers
/// enter a JIT-ed layer by LayerProgram::checkArguments, which inkling-run's
/// replay and CPU serving call; cuMemAlloc gives 256-byte aligned device
/// buffers). kAlignBytes only for offsets that are multiples of 8 elements;
/// else the proven power of two (4 or 8 bytes); none when only the
/// element's own alignment is known (the lowering's default: an unaligned
/// vector).
llvm::MaybeAlign accessAlign(MemRefType type, ArrayRef<int64_t> indexMultiples);

/// What an index `h * width + c` (c a multiple of kLanes) is a multiple of.
int64_t flatIndexMultiple(int64_t width);

/// The most static type known for `cache`: a `memref.cast` (e.g. from the
/// statically strided `sconv.bind` result to a dynamic block stride) keeps
/// the strides of its source.
MemRefType staticCacheType(Value cache);

/// What a chunk-start access to the cache at column `offset + c` may claim.
llvm::MaybeAlign cacheAlign(MemRefType cacheType, int64_t offset);
/// Whether a kLineLanes access to the cache at column `offset + c`, c a
/// multiple of kLineLanes, is line-aligned whenever the base is.
bool cacheLineAligned(MemRefType cacheType, int64_t offset);

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_ALIGNMENT_H
