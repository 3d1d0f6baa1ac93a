//===- StepMetadata.h - A token's sequence and slot; checked-mode reports *- C++
//-*-===//
//
// What a nest reads from the step's metadata buffers (a token's sequence,
// position and slot) and how checked mode reports a rejected id.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_CONVERSION_SCONVTOLOOPS_STEPMETADATA_H
#define INKLING_CONVERSION_SCONVTOLOOPS_STEPMETADATA_H

#include "inkling/Conversion/SConvToLoops/IRHelpers.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include <string>
#include <utility>

namespace inkling::loops {

using namespace mlir;

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

/// Reports an out-of-range id when `bad` holds: into the step's status
/// buffer when it has one (count, then the first report's details), else
/// through `cf.assert` with `message`.
void emitReport(OpBuilder &b, Location loc, Value bad, Value status,
                CheckKind kind, Value token, Value value, Value limit,
                StringRef message);

/// True for the one (head 0, channel 0) lane that reports for a token.
Value isReporter(OpBuilder &b, Location loc, Value head, Value channel);

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

} // namespace inkling::loops

#endif // INKLING_CONVERSION_SCONVTOLOOPS_STEPMETADATA_H
