//===- Lanes.h - A chunk's lanes: loads, stores, bf16 <-> f32 ----*- C++
//-*-===//
//
// The vector (or scalar) accesses of a chunk's channels and their
// conversions between bf16 and f32 lanes, in natural or even-odd order.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_LANES_H
#define INKLING_CONVERSION_SCONVTOLOOPS_LANES_H

#include "inkling/Conversion/SConvToLoops/IRHelpers.h"

#include "llvm/Support/Alignment.h"

#include <utility>

namespace inkling::loops {

using namespace mlir;

/// `f32` or `vector<lanes x f32>` (lanes == 1: scalar).
Type laneType(Type element, int64_t lanes);
/// `value` as f32, splat to `lanes` lanes (a scalar for 1).
Value splatF32(OpBuilder &b, Location loc, float value, int64_t lanes);

/// Loads `lanes` consecutive elements of the innermost dim (a scalar for 1),
/// claiming `align` (see accessAlign) for a vector.
Value loadLanes(OpBuilder &b, Location loc, Value memref, ValueRange indices,
                int64_t lanes, llvm::MaybeAlign align);
/// Stores `value` (a vector or a scalar) like loadLanes loads; returns the
/// store (a backend's strategy may mark it).
Operation *storeLanes(OpBuilder &b, Location loc, Value value, Value memref,
                      ValueRange indices, llvm::MaybeAlign align);
/// The order of a chunk's channels in its f32 lanes. Natural: lane l holds
/// channel l. EvenOdd: the even channels, then the odd ones (lane l < n/2
/// holds channel 2l, lane n/2 + l channel 2l + 1): the order in which a
/// bf16 vector widens to f32 and narrows back with shifts and masks of its
/// 32-bit words, without a lane-crossing shuffle. Every per-element op of
/// a conv is indifferent to it; only loads and stores see channels.
enum class LaneOrder { Natural, EvenOdd };

/// Lanes [first, first + count) of the vector `v`.
Value laneRange(OpBuilder &b, Location loc, Value v, int64_t first,
                int64_t count);

/// The channel that lane l of `lanes` holds in `order` (EvenOdd needs an
/// even lane count).
int64_t laneChannel(LaneOrder order, int64_t lanes, int64_t l);

/// The two bf16 in each 32-bit word of `words` (a vector of i32) as f32:
/// {low half << 16, high half & 0xffff0000}, the bits `extf` gives.
std::pair<Value, Value> wordHalvesAsF32(OpBuilder &b, Location loc,
                                        Value words);

/// `v` (bf16, scalar or `lanes` lanes) extended to f32, lanes in `order`.
Value extToF32(OpBuilder &b, Location loc, Value v, int64_t lanes,
               LaneOrder order = LaneOrder::Natural);

/// f32 lanes in `order` rounded to bf16 in channel order: arith.truncf for
/// Natural (expanded on the CPU to round to nearest even, a NaN to 0x7fc0);
/// for EvenOdd the same rounding written out on the 32-bit words, whose
/// halves then pack the even and the odd channels' bf16 with one or.
Value truncToBf16(OpBuilder &b, Location loc, Value v, int64_t lanes,
                  LaneOrder order = LaneOrder::Natural);

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_LANES_H
