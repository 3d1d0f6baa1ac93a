//===- Lowering.h - Shared pieces of the sconv loop lowering ----*- C++ -*-===//
//
// IR helpers, alignment facts, stream operands, the chunk loop, the loop
// nest over (token, head) x (the concatenated 16-byte chunks of one or more
// streams), and checked-mode reports: what the insert and conv lowerings
// (single-stream and fused) share; the bodies are in Lowering.cpp. Integer
// add/sub/mul go through upstream's ArithBuilder. Internal to
// lib/Conversion/SConvToLoops.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_CONVERSION_SCONVTOLOOPS_LOWERING_H
#define INKLING_LIB_CONVERSION_SCONVTOLOOPS_LOWERING_H

#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <string>
#include <utility>

namespace inkling::loops {

using namespace mlir;

/// Channels per vector access: 16 bytes of bf16.
constexpr int64_t kLanes = 8;
constexpr uint64_t kAlignBytes = 16;
/// Channels of a 64-byte cache line of bf16: the chunk of the CPU's
/// token-run nest.
constexpr int64_t kLineLanes = 32;

/// Kinds reported in the step's status buffer (see sconv.step).
enum class CheckKind : int64_t {
  Slot = 1,
  BlockId = 2,
  LogicalBlock = 3,
  /// A slot in range that is not block_table[b][p / N] * N + p % N.
  SlotNotTokens = 4,
  /// A token_seq entry that is not the sequence (below B) holding the token.
  TokenSeq = 5
};

constexpr const char *kNoStepMessage =
    "cannot be lowered: its step operand is not produced by a visible "
    "'sconv.step' op (e.g. it is a block argument); the lowering reads the "
    "step's metadata buffers from that op";

//===----------------------------------------------------------------------===//
// Small IR helpers
//===----------------------------------------------------------------------===//

/// An index constant.
Value cIndex(OpBuilder &b, Location loc, int64_t v);
/// An i64 constant.
Value cI64(OpBuilder &b, Location loc, int64_t v);
/// An integer as index.
Value toIndex(OpBuilder &b, Location loc, Value v);
/// An index or integer as i64 (sign-extended).
Value toI64(OpBuilder &b, Location loc, Value v);
/// arith.cmpi `pred` (ArithBuilder has only slt and sgt).
Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate pred, Value lhs,
          Value rhs);

/// `f32` or `vector<lanes x f32>` (lanes == 1: scalar).
Type laneType(Type element, int64_t lanes);
/// `value` as f32, splat to `lanes` lanes (a scalar for 1).
Value splatF32(OpBuilder &b, Location loc, float value, int64_t lanes);

/// Loads `lanes` consecutive elements of the innermost dim (a scalar for 1),
/// claiming `align` (see accessAlign) for a vector.
Value loadLanes(OpBuilder &b, Location loc, Value memref, ValueRange indices,
                int64_t lanes, llvm::MaybeAlign align);
/// Stores `value` (a vector or a scalar) like loadLanes loads; a
/// `lineAligned` store of kLineLanes lanes carries kLineAlignedAttrName.
void storeLanes(OpBuilder &b, Location loc, Value value, Value memref,
                ValueRange indices, llvm::MaybeAlign align,
                bool lineAligned = false);
/// The order of a chunk's channels in its f32 lanes. Natural: lane l holds
/// channel l. EvenOdd: the even channels, then the odd ones (lane l < n/2
/// holds channel 2l, lane n/2 + l channel 2l + 1): the order in which a
/// bf16 vector widens to f32 and narrows back with shifts and masks of its
/// 32-bit words, without a lane-crossing shuffle. Every per-element op of
/// a conv is indifferent to it; only loads and stores see channels.
enum class LaneOrder { Natural, EvenOdd };

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

//===----------------------------------------------------------------------===//
// Alignment facts
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Stream operands: [T, H, w] or [T, H*w]
//===----------------------------------------------------------------------===//

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
  void store(OpBuilder &b, Location loc, Value value, Value token, Value head,
             Value channel) const;
};

/// What a chunk-start access to the cache at column `offset + c` may claim.
llvm::MaybeAlign cacheAlign(MemRefType cacheType, int64_t offset);
/// Whether a kLineLanes access to the cache at column `offset + c`, c a
/// multiple of kLineLanes, is line-aligned whenever the base is.
bool cacheLineAligned(MemRefType cacheType, int64_t offset);

//===----------------------------------------------------------------------===//
// The chunk loop
//===----------------------------------------------------------------------===//

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
/// With `splitStreams` (the CPU's form) the outer body instead runs one
/// inner scf.parallel per stream, in the same order: the same chunks in the
/// same sequence, without the per-chunk dispatch, so that each inner loop is
/// a plain strided copy or conv that LLVM vectorizes (still one nest).
void emitNest(OpBuilder &b, Location loc, Value tokens, int64_t heads,
              ArrayRef<int64_t> widths, bool splitStreams, PartBody inner,
              function_ref<void(OpBuilder &, Location, Value, Value)> outer);

/// The order of `ranges` by offset in the head row.
SmallVector<unsigned> orderByOffset(ArrayRef<StreamRange> ranges);

//===----------------------------------------------------------------------===//
// Checked mode
//===----------------------------------------------------------------------===//

/// Reports an out-of-range id when `bad` holds: into the step's status
/// buffer when it has one (count, then the first report's details), else
/// through `cf.assert` with `message`.
void emitReport(OpBuilder &b, Location loc, Value bad, Value status,
                CheckKind kind, Value token, Value value, Value limit,
                StringRef message);

/// True for the one (head 0, channel 0) lane that reports for a token.
Value isReporter(OpBuilder &b, Location loc, Value head, Value channel);

//===----------------------------------------------------------------------===//
// The step's slot of a token (inserts)
//===----------------------------------------------------------------------===//

/// (q / N, q % N) of a non-negative index q (a position or a slot) for
/// any block size N: a shift and a mask when N is a power of two (the
/// common engine choices), else a division.
std::pair<Value, Value> emitBlockAndRow(OpBuilder &b, Location loc, Value q,
                                        int64_t blockSize);

/// The number of slots of the cache, as i64: a valid slot is below it.
Value emitSlotLimit(OpBuilder &b, Location loc, Value cache, int64_t blockSize);

/// The sequence b of token t (the largest b < B with qsl[b] <= t: a binary
/// search; empty sequences resolve to the later, non-empty one), its first
/// token, its num_computed and the position p of t.
struct SequenceInfo {
  Value seq, start, computed, position;
  /// Null: a real token (the search). Else whether t is live: a real token
  /// (t < qsl[B]) and, checked, one whose token_seq entry holds it; the
  /// other fields are 0 for a token that is not (see emitTokenSequence).
  Value live;
};

/// The SequenceInfo of a real token t by binary search over qsl (`live` null).
SequenceInfo emitSequence(OpBuilder &b, Location loc, Value qslBuf,
                          Value numComputedBuf, Value batch, Value t);

/// Where token t is stored: `valid` (slot >= 0, and in checked mode below
/// the limit and the token's own slot), `bad` (checked mode: slot < -1 or
/// beyond the cache), `notTokens` (checked mode: in range, but not
/// block_table[b][p / N] * N + p % N: it would overwrite a row that other
/// tokens or the convs read, and fused and unfused programs would
/// disagree), `expected` (that slot, -1 when p / N is beyond the table),
/// the cache block and row.
struct SlotInfo {
  Value slot, valid, bad, notTokens, expected, block, row;
};

/// `sequence` and `blockTable` are needed in checked mode only.
SlotInfo emitSlot(OpBuilder &b, Location loc, Value slots, Value token,
                  int64_t blockSize, bool checked, Value slotLimit,
                  const SequenceInfo *sequence = nullptr,
                  Value blockTable = {});

/// The step's real token count `qsl[B]`: tokens at or past it are padding
/// (see sconv.step). Loaded in the nest (per token), so that a GPU kernel
/// reads it itself rather than taking a host-computed value.
Value emitRealTokens(OpBuilder &b, Location loc, sconv::StepOp step);

/// Masks a padding token's slot: it writes nothing and is not reported,
/// whatever its slot_mapping entry holds.
void maskPaddingSlot(OpBuilder &b, Location loc, SlotInfo &info, Value isReal);

/// The sequence of token t for a nest, with `live` set: loaded only for a
/// real token (padding tokens read no metadata of a sequence), from the
/// step's token_seq when it has one (no search) and else by emitSequence.
/// Checked, a token_seq entry must name a sequence of the step holding t;
/// one that does not makes t not live and, where `reporter` is given, is
/// reported (kind 5; value: the entry, limit: B).
SequenceInfo emitTokenSequence(OpBuilder &b, Location loc, sconv::StepOp step,
                               Value batch, Value t, bool checked,
                               Value reporter, StringRef opName);

/// The message of a rejected slot for `op` (checked mode).
std::string slotMessage(Operation *op);

/// Reports a rejected slot of token t once (when `reporter`): out of range
/// (kind 1; limit: num_blocks * N) or not the token's own (kind 4; limit:
/// the expected slot).
void emitSlotReports(OpBuilder &b, Location loc, Operation *op,
                     const SlotInfo &slot, Value reporter, Value status,
                     Value token, Value slotLimit);

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// sconv.insert and sconv.insert_packed (InsertLowering.cpp).
void populateInsertLoweringPatterns(RewritePatternSet &patterns,
                                    const SConvToLoopsOptions &options);
/// sconv.conv and sconv.fused_conv (ConvLowering.cpp).
void populateConvLoweringPatterns(RewritePatternSet &patterns,
                                  const SConvToLoopsOptions &options);
/// sconv.rms_norm, sconv.kv_write and sconv.fused_conv_kv_write
/// (EpilogueLowering.cpp).
void populateEpilogueLoweringPatterns(RewritePatternSet &patterns,
                                      const SConvToLoopsOptions &options);

} // namespace inkling::loops

#endif // INKLING_LIB_CONVERSION_SCONVTOLOOPS_LOWERING_H
