//===- SequenceStep.cpp - Step metadata of a batch ------------------------===//
//
// buildStep: query_start_loc, num_computed, block-table rows, slot mapping
// and block copies of the scheduled sequences, into caller-owned buffers
// (docs/runtime.md, "Step metadata without O(M) work").
//
//===----------------------------------------------------------------------===//

#include "SequenceManagerInternal.h"

#include <algorithm>

namespace inkling {

using namespace sequence_internal;

// A step's padded row or token count into `padded`: 0 means `count`; below
// it, or above the buffers' `capacity`, is refused.
static Status paddedCount(int64_t requested, int64_t count, int64_t capacity,
                          const char *what, const std::string &smallerThan,
                          const char *needs, int64_t &padded) {
  padded = requested == 0 ? count : requested;
  if (padded < count)
    return invalidArgument(std::string("padded ") + what + " count (" +
                           str(requested) + ") is smaller than " + smallerThan);
  if (padded > capacity)
    return outOfRange("step needs " + str(padded) + needs + str(capacity));
  return Status::ok();
}

StatusOr<StepBuffers>
SequenceManager::bindStepBuffers(const StepBufferSpec &spec) const {
  return StepBuffers::bind(spec, maxHeld_, id_);
}

// The rows of a step: known, scheduled, not repeated, first token known,
// window within the table; their tokens and copies are counted, and
// batch_ holds them for the writes.
Status SequenceManager::checkStepRows(const SequenceId *ids,
                                      int64_t numSequences,
                                      const StepBufferSpec &spec,
                                      int64_t &numTokens, int64_t &numCopies) {
  ++buildStamp_;
  if (static_cast<int64_t>(batch_.size()) < numSequences)
    batch_.resize(numSequences);
  for (int64_t b = 0; b < numSequences; ++b) {
    Sequence *found = find(ids[b]);
    if (!found)
      return unknownSequence(ids[b], "build step");
    Sequence &seq = *found;
    if (seq.state != SequenceState::Scheduled)
      return failedPrecondition(seqName(ids[b]) + " at row " + str(b) +
                                " has no scheduled step (it is " +
                                sequenceStateName(seq.state) + ")");
    if (seq.buildStamp == buildStamp_)
      return invalidArgument(seqName(ids[b]) +
                             " appears twice in the batch (again at row " +
                             str(b) + ")");
    if (seq.numComputed >= seq.numTokens) // scheduled ahead, token pending
      return failedPrecondition(
          "build step: the first token of the step of " + seqName(ids[b]) +
          " (position " + str(seq.numComputed) +
          ") is unknown: append the sampled token of the previous step "
          "before building");
    seq.buildStamp = buildStamp_;
    batch_[b] = &seq;
    numTokens += seq.numScheduled;
    // The window's last block is the one of the step's last position.
    int64_t lastColumn = blockOf(seq.numComputed + seq.numScheduled - 1);
    if (lastColumn >= spec.numCols)
      return outOfRange(seqName(ids[b]) + " needs block table column " +
                        str(lastColumn) + ", but the table has " +
                        str(spec.numCols) + " columns");
    numCopies += seq.copySrc >= 0;
  }
  return Status::ok();
}

// slot_mapping of one row, from its first token: stored positions get
// their slot, the others -1. Runs once per row: kept in buildStep.
[[gnu::always_inline]] inline void
SequenceManager::writeSlots(const Sequence &seq, int64_t *slots) const {
  const MappedBlock *held = heldBlocks(seq);
  int64_t c = seq.numComputed, end = c + seq.numScheduled;
  if (seq.numScheduled == 1) { // decode: position c, in the last block
    const MappedBlock &last = held[seq.numHeld - 1];
    slots[0] = int64_t(last.physical) * blockSize_ +
               (c - int64_t(last.logical) * blockSize_);
  } else {
    // Tokens before storeFrom are not stored; the stored range's blocks
    // are the last entries of the window, in order.
    std::fill(slots, slots + (seq.storeFrom - c), int64_t(-1));
    // Snapshot ranges below the window, into their own blocks.
    const std::vector<MappedBlock> &snaps = snapBlocks_[slotOf(seq)];
    size_t k = 0;
    for (const SnapshotRange &range : snapRanges_[slotOf(seq)])
      for (int64_t q = range.from; q < range.to; ++q) {
        while (snaps[k].logical < blockOf(q))
          ++k;
        slots[q - c] = int64_t(snaps[k].physical) * blockSize_ +
                       (q - int64_t(snaps[k].logical) * blockSize_);
      }
    int64_t p = seq.storeFrom;
    int32_t i =
        seq.numHeld - 1 - static_cast<int32_t>(blockOf(end - 1) - blockOf(p));
    for (; p < end; ++i) {
      int64_t base = int64_t(held[i].logical) * blockSize_;
      int64_t slotBase = int64_t(held[i].physical) * blockSize_ - base;
      int64_t blockEnd = std::min(end, base + blockSize_);
      for (; p < blockEnd; ++p)
        slots[p - c] = slotBase + p;
    }
  }
}

StatusOr<StepInfo> SequenceManager::buildStep(const SequenceId *ids,
                                              int64_t numSequences,
                                              const StepShape &shape,
                                              StepBuffers &buffers) {
  const StepBufferSpec &spec = buffers.spec();
  // The buffers record what this manager wrote into them.
  // By id, not address: a manager created where a destroyed one lived
  // must refuse that one's buffers (their rows are sized for it).
  if (buffers.ownerId() != id_)
    return invalidArgument("step buffers were bound by another manager (or "
                           "by StepBuffers::bind), possibly one destroyed "
                           "since: bind them with this manager's "
                           "bindStepBuffers");
  if (numSequences < 0 || (numSequences > 0 && ids == nullptr))
    return invalidArgument("batch of " + str(numSequences) +
                           " sequences needs a non-null id array");
  int64_t numRows = 0, paddedTokens = 0;
  if (Status s = paddedCount(shape.numRows, numSequences, spec.maxRows, "row",
                             "the batch (" + str(numSequences) + " sequences)",
                             " rows, but the buffers have ", numRows);
      !s)
    return s;

  // Validate everything before writing anything.
  int64_t numTokens = 0, numCopies = 0;
  if (Status status =
          checkStepRows(ids, numSequences, spec, numTokens, numCopies);
      !status)
    return status;
  if (Status s = paddedCount(
          shape.numTokens, numTokens, spec.maxTokens, "token",
          "the step's " + str(numTokens) + " tokens",
          " slot_mapping entries, but the buffer has ", paddedTokens);
      !s)
    return s;
  if (numCopies > spec.maxCopies)
    return outOfRange("step has " + str(numCopies) +
                      " copy-on-write copies, but block_copies has room for " +
                      str(spec.maxCopies));
  bool ordered = false; // same-step hits
  if (Status status = checkPendingReads(ids, numSequences, ordered); !status)
    return status;
  if (numPendingBlocks_ > 0)
    for (int64_t b = 0; b < numSequences; ++b)
      if (!pendingOf_[slotOf(*batch_[b])].empty())
        pendingBuilt_[slotOf(*batch_[b])] = 1;

  int32_t *queryStartLoc = spec.queryStartLoc;
  int32_t *numComputed = spec.numComputed;
  int64_t token = 0, copy = 0;
  for (int64_t b = 0; b < numSequences; ++b) {
    const Sequence &seq = *batch_[b];
    const MappedBlock *held = heldBlocks(seq);
    int64_t c = seq.numComputed;
    queryStartLoc[b] = static_cast<int32_t>(token);
    numComputed[b] = static_cast<int32_t>(c);
    buffers.writeRow(b, held, seq.numHeld);
    // Snapshot blocks (below the window) in the row too: every stored slot
    // is then block_table[b][p / N] * N + p % N, which checked kernels
    // require; the convs never read them (they lie at or above c).
    const std::vector<MappedBlock> &snapshots = snapBlocks_[slotOf(seq)];
    buffers.writeExtras(b, held, seq.numHeld, snapshots.data(),
                        snapshots.size());

    writeSlots(seq, spec.slotMapping + token);
    if (spec.tokenSeq)
      std::fill_n(spec.tokenSeq + token, seq.numScheduled,
                  static_cast<int32_t>(b));
    token += seq.numScheduled;
    if (seq.copySrc >= 0) {
      spec.blockCopies[2 * copy] = seq.copySrc;
      spec.blockCopies[2 * copy + 1] = seq.copyDst;
      ++copy;
    }
  }
  if (spec.tokenSeq) // padding tokens: never read, but defined
    std::fill(spec.tokenSeq + numTokens, spec.tokenSeq + paddedTokens, 0);
  for (int64_t b = numSequences; b < numRows; ++b)
    numComputed[b] = 0;
  for (int64_t b = numSequences; b <= numRows; ++b)
    queryStartLoc[b] = static_cast<int32_t>(numTokens);
  buffers.clearRowsFrom(numSequences);
  buffers.finishStep(numSequences, numTokens);

  return StepInfo{numSequences, numRows,   numTokens,
                  paddedTokens, numCopies, ordered};
}

} // namespace inkling
