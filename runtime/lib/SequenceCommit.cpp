//===- SequenceCommit.cpp - Committing a step of a sequence ---------------===//
//
// commit and commitBatch: accepting k of a step's tokens (speculative
// rollback), registering completed blocks and snapshots in the prefix cache,
// and releasing what leaves the next step's history.
//
//===----------------------------------------------------------------------===//

#include "SequenceManagerInternal.h"

#include <algorithm>

namespace inkling {

using namespace sequence_internal;

void SequenceManager::registerCompleteBlocks(Sequence &seq,
                                             int64_t oldComputed) {
  int64_t c = seq.numComputed;
  // Block j is cached when its positions among the W-1 before its end,
  // [max(jN, (j+1)N - (W-1)), (j+1)N), hold accepted values (a resume at a
  // later boundary needs a suffix of that range) and (j+1)N <= c. Blocks
  // ending at or before oldComputed were considered by earlier commits.
  int64_t begin = std::max(blockOf(oldComputed), firstCacheableBlock(seq));
  int64_t endBlock = blockOf(c);
  const MappedBlock *held = heldBlocks(seq);
  // Held blocks are sorted by logical index: one merged walk.
  int32_t i = 0;
  for (int64_t j = begin; j < endBlock; ++j) {
    while (i < seq.numHeld && held[i].logical < j)
      ++i;
    if (i == seq.numHeld)
      break;
    if (held[i].logical != j)
      continue;
    int32_t block = held[i].physical;
    if (j < chainOf(seq).base)
      continue; // hash dropped (resumed without token ids): not cached
    const PrefixKey &hash = chainOf(seq).at(j);
    if (!pool_.hasCacheTag(block) && cache_.insert(hash, block)) {
      pool_.setCacheTagUnchecked(block, hash);
      if (collecting_) // registerPending
        collecting_->push_back(block);
    }
  }
}

void SequenceManager::releaseOutsideHistory(Sequence &seq, int64_t lo,
                                            int64_t hi) {
  MappedBlock *held = heldBlocks(seq);
  // The window is sorted: what leaves is a prefix (below the history) and
  // a suffix (blocks of rejected positions).
  int32_t first = 0, last = seq.numHeld;
  while (first < last && held[first].logical < lo)
    pool_.releaseUnchecked(held[first++].physical);
  while (last > first && held[last - 1].logical > hi)
    pool_.releaseUnchecked(held[--last].physical);
  if (first > 0)
    for (int32_t i = first; i < last; ++i)
      held[i - first] = held[i];
  seq.numHeld = last - first;
}

Status SequenceManager::commitBatch(const SequenceId *ids,
                                    const int64_t *numAccepted,
                                    const int64_t *tokenOffsets,
                                    const int32_t *tokens, int64_t count) {
  if (count < 0 || (count > 0 && (!ids || !numAccepted || !tokenOffsets)))
    return invalidArgument("batch of " + str(count) +
                           " sequences needs non-null id, accepted and "
                           "offset arrays");
  ++buildStamp_;
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = tokenOffsets[i], to = tokenOffsets[i + 1];
    if (from < 0 || to < from)
      return invalidArgument("token offsets [" + str(from) + ", " + str(to) +
                             ") of batch entry " + str(i) + " are not a range");
    if (to > from && !tokens)
      return invalidArgument("token array is null");
    StatusOr<Sequence *> entry = batchEntry(ids[i], i, "commit batch");
    if (!entry)
      return entry.status();
    Sequence *seq = *entry;
    if (Status status =
            checkCommit(*seq, ids[i], numAccepted[i],
                        tokens ? tokens + from : nullptr, to - from);
        !status)
      return status;
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = tokenOffsets[i], to = tokenOffsets[i + 1];
    if (Status status = commit(ids[i], numAccepted[i],
                               tokens ? tokens + from : nullptr, to - from);
        !status)
      return internalError("commit batch: validated entry " + str(i) +
                           " failed: " + status.toString());
  }
  return Status::ok();
}

Status SequenceManager::commitError(const Sequence &seq, SequenceId id,
                                    int64_t numAccepted,
                                    const int32_t *newTokens,
                                    int64_t numNewTokens) const {
  if (seq.state != SequenceState::Scheduled)
    return failedPrecondition(seqName(id) + " has no scheduled step (it is " +
                              sequenceStateName(seq.state) + ")");
  int64_t n = seq.numScheduled;
  if (numAccepted < 0 || numAccepted > n)
    return outOfRange("cannot accept " + str(numAccepted) + " tokens of " +
                      seqName(id) + ": its step scheduled " + str(n));
  if (n - numAccepted > lookahead_)
    return outOfRange(
        "accepting " + str(numAccepted) + " of " + str(n) + " tokens of " +
        seqName(id) + " rejects " + str(n - numAccepted) +
        ", more than the lookahead (" + str(lookahead_) +
        "): the history of the next step would not be in the cache; raise "
        "the lookahead to the number of draft tokens, or preempt");
  if (numNewTokens < 0 || numNewTokens > kMaxPosition - seq.numTokens)
    return invalidArgument("cannot append " + str(numNewTokens) +
                           " tokens to " + seqName(id) + " with " +
                           str(seq.numTokens));
  if (numNewTokens > 0 && newTokens == nullptr)
    return invalidArgument("appending " + str(numNewTokens) +
                           " tokens with a null token pointer");
  if (seq.numTokens + numNewTokens <= seq.numComputed)
    return failedPrecondition(
        "commit: the first token of the step of " + seqName(id) +
        " (position " + str(seq.numComputed) +
        ") is unknown (scheduled ahead): append the sampled token of the "
        "previous step first");
  return invalidArgument(
      "accepting " + str(numAccepted) + " tokens of " + seqName(id) +
      " computes position " + str(seq.numComputed + numAccepted - 1) +
      ", but only " + str(seq.numTokens + numNewTokens) +
      " token ids are known: pass the accepted draft tokens");
}

Status SequenceManager::commit(SequenceId id, int64_t numAccepted,
                               const int32_t *newTokens, int64_t numNewTokens) {
  // Decode fast path: one token scheduled and accepted, at most the sampled
  // token appended, no pending copy. Everything else takes the general path.
  Sequence *seq = find(id);
  if (seq && seq->state == SequenceState::Scheduled && seq->numScheduled == 1 &&
      numAccepted == 1 && seq->copySrc < 0 && numPendingBlocks_ == 0 &&
      (numNewTokens == 0 || (numNewTokens == 1 && newTokens)) &&
      seq->numTokens < kMaxPosition &&
      seq->numComputed < seq->numTokens + numNewTokens) {
    int64_t oldComputed = seq->numComputed;
    int64_t computed = oldComputed + 1;
    if (numNewTokens == 1) {
      ++seq->numTokens;
      if (config_.enablePrefixCaching) {
        tailTokens(*seq)[seq->tailCount++] = newTokens[0];
        if (seq->tailCount == blockSize_)
          hashTail(*seq);
      }
    }
    seq->numComputed = computed;
    // Position c was stored (storeFrom == c): the valid range extends. A
    // block completes when c' crosses a block start: it is the block of c,
    // the last one held, resumable if its last W-1 positions are valid.
    if (config_.enablePrefixCaching &&
        blockOf(computed) != blockOf(oldComputed)) {
      const MappedBlock &done = heldBlocks(*seq)[seq->numHeld - 1];
      if (std::max<int64_t>(computed - blockSize_, computed - history_) >=
              seq->validFrom &&
          !pool_.hasCacheTagUnchecked(done.physical)) {
        // Usually the last hash (only the sampled token is known ahead).
        const HashChain &chain = chainOf(*seq);
        bool isLast = blockOf(seq->numTokens) == done.logical + 1;
        if (isLast || done.logical >= chain.base) {
          const PrefixKey &hash =
              isLast ? seq->lastHash : chain.at(done.logical);
          if (cache_.insert(hash, done.physical))
            pool_.setCacheTagUnchecked(done.physical, hash);
        }
      }
    }
    // The history moved by one position: at most its first block leaves.
    if (computed > history_) {
      MappedBlock *held = heldBlocks(*seq);
      if (held[0].logical < blockOf(computed - history_)) {
        pool_.releaseUnchecked(held[0].physical);
        for (int32_t i = 1; i < seq->numHeld; ++i)
          held[i - 1] = held[i];
        --seq->numHeld;
      }
    }
    seq->state = SequenceState::Idle;
    seq->numScheduled = 0;
    seq->storeFrom = 0;
    return Status::ok();
  }
  return commitGeneral(id, numAccepted, newTokens, numNewTokens);
}

Status SequenceManager::checkCommit(const Sequence &seq, SequenceId id,
                                    int64_t numAccepted,
                                    const int32_t *newTokens,
                                    int64_t numNewTokens) const {
  int64_t n = seq.numScheduled;
  // numAccepted is added only once it is known to be in [0, n]: a hostile
  // value must not overflow (found by the C API fuzzer;
  // fuzz/regressions/runtime/commit-accepted-overflow).
  if (seq.state != SequenceState::Scheduled || numAccepted < 0 ||
      numAccepted > n || n - numAccepted > lookahead_ || numNewTokens < 0 ||
      numNewTokens > kMaxPosition - seq.numTokens ||
      (numNewTokens > 0 && newTokens == nullptr) ||
      seq.numTokens + numNewTokens < seq.numComputed + numAccepted)
    return commitError(seq, id, numAccepted, newTokens, numNewTokens);
  return Status::ok();
}

Status SequenceManager::commitGeneral(SequenceId id, int64_t numAccepted,
                                      const int32_t *newTokens,
                                      int64_t numNewTokens) {
  Sequence *found = find(id);
  if (!found)
    return unknownSequence(id, "commit");
  Sequence &seq = *found;
  if (Status status =
          checkCommit(seq, id, numAccepted, newTokens, numNewTokens);
      !status)
    return status;
  int64_t oldComputed = seq.numComputed;
  int64_t computed = oldComputed + numAccepted;
  // Same-step hits: the step's pending entries are registered already and
  // every valid commit accepts their positions (registerPending). A reader
  // that commits ran a step built with (or after) its writers': what it
  // read was written, and it no longer depends on them.
  promotePending(seq);
  readsFrom_[slotOf(seq)].clear();

  if (numNewTokens == 1 && config_.enablePrefixCaching) { // decode
    ++seq.numTokens;
    tailTokens(seq)[seq.tailCount++] = newTokens[0];
    if (seq.tailCount == blockSize_)
      hashTail(seq);
  } else {
    appendTokensUnchecked(seq, newTokens, numNewTokens);
  }
  seq.numComputed = computed;
  if (!snapBlocks_[slotOf(seq)].empty()) {
    registerSnapshots(seq, seq.validFrom, oldComputed);
    releaseSnapshots(seq);
  }
  // [storeFrom, computed) now holds accepted values; a gap below storeFrom
  // (tokens of a long chunk got slot -1) restarts the valid range.
  if (seq.storeFrom != oldComputed)
    seq.validFrom = seq.storeFrom;
  // Block boundaries crossed: blocks completed (cache them), blocks left
  // behind by the history (free them) -- only then is there work.
  if (blockOf(computed) != blockOf(oldComputed) && config_.enablePrefixCaching)
    registerCompleteBlocks(seq, oldComputed);
  const MappedBlock *held = heldBlocks(seq);
  int64_t lo = computed > history_ ? blockOf(computed - history_) : 0;
  int64_t hi = computed > 0 ? blockOf(computed - 1) : -1;
  if (seq.numHeld > 0 &&
      (held[0].logical < lo || held[seq.numHeld - 1].logical > hi))
    releaseOutsideHistory(seq, lo, hi);
  if (seq.copySrc >= 0) {
    if (!INKLING_MUTANT("leak-copy-source"))
      pool_.releaseUnchecked(seq.copySrc);
    seq.copySrc = seq.copyDst = -1;
  }
  seq.state = SequenceState::Idle;
  seq.numScheduled = 0;
  seq.storeFrom = 0;
  return Status::ok();
}

void SequenceManager::registerSnapshots(Sequence &seq, int64_t oldValidFrom,
                                        int64_t oldComputed) {
  const HashChain &chain = chainOf(seq);
  const std::vector<MappedBlock> &blocks = snapBlocks_[slotOf(seq)];
  size_t i = 0;
  for (const SnapshotRange &range : snapRanges_[slotOf(seq)]) {
    // A range from c continues the held history, valid from validFrom.
    int64_t validFrom = range.from == oldComputed ? oldValidFrom : range.from;
    for (; i < blocks.size() && blocks[i].logical < range.to / blockSize_;
         ++i) {
      int64_t j = blocks[i].logical;
      // The block's own last W-1 positions hold accepted values (the rule
      // of registerCompleteBlocks), and its hash is known.
      if (std::max(j * blockSize_, (j + 1) * blockSize_ - history_) <
              validFrom ||
          (j + 1) * blockSize_ > seq.numComputed || j < chain.base ||
          j >= chain.end())
        continue;
      // Mutant: register the block under the next block's prefix.
      const PrefixKey &hash =
          INKLING_MUTANT("snapshot-next-hash") && j + 1 < chain.end()
              ? chain.at(j + 1)
              : chain.at(j);
      if (cache_.insert(hash, blocks[i].physical)) {
        pool_.setCacheTagUnchecked(blocks[i].physical, hash);
        if (collecting_) // registerPending
          collecting_->push_back(blocks[i].physical);
      }
    }
  }
}

void SequenceManager::releaseSnapshots(Sequence &seq) {
  std::vector<MappedBlock> &blocks = snapBlocks_[slotOf(seq)];
  // Registered blocks go to the evictable queue, the others are free.
  for (const MappedBlock &block : blocks)
    pool_.releaseUnchecked(block.physical);
  numSnapshotBlocks_ -= static_cast<int64_t>(blocks.size());
  blocks.clear();
  snapRanges_[slotOf(seq)].clear();
}

} // namespace inkling
