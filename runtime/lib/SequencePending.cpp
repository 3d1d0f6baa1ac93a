//===- SequencePending.cpp - Same-step hits: pending cache entries --------===//
//
// SequenceManagerConfig::sameStepHits (docs/runtime.md, "Same-step hits"):
// schedule registers the blocks a step fills as pending cache entries, a
// sequence added or resumed at them becomes their reader, the writer's
// commit promotes them, and a writer that drops its step withdraws them and
// preempts every reader. buildStep refuses a reader whose writer's step is
// neither in the build nor built before, and flags a step that holds both.
//
//===----------------------------------------------------------------------===//

#include "SequenceManagerInternal.h"

#include <algorithm>

namespace inkling {

using namespace sequence_internal;

void SequenceManager::registerPending(Sequence &seq) {
  if (!config_.sameStepHits || !config_.enablePrefixCaching)
    return;
  size_t slot = slotOf(seq);
  int64_t c = seq.numComputed;
  // Every valid commit accepts at least n - L tokens, so what a commit of
  // n - L registers is registered by every commit (registration is
  // monotone in the accepted count): pending entries are never rolled
  // back. Only blocks whose token ids are all known have a key.
  // (The mutant registers what a commit of every token would.)
  int64_t sure = INKLING_MUTANT("pending-past-lookahead")
                     ? seq.numScheduled
                     : std::max<int64_t>(0, seq.numScheduled - lookahead_);
  int64_t upTo = std::min<int64_t>(c + sure, chainOf(seq).end() * blockSize_);
  pendingBuilt_[slot] = 0;
  if (upTo <= c)
    return;
  // The registration of a commit of upTo - c tokens (commitGeneral's
  // order), with the tagged blocks collected.
  int32_t validFrom = seq.validFrom;
  std::vector<int32_t> &pending = pendingOf_[slot];
  collecting_ = &pending;
  seq.numComputed = static_cast<int32_t>(upTo);
  if (!snapBlocks_[slot].empty())
    registerSnapshots(seq, seq.validFrom, c);
  if (seq.storeFrom != c)
    seq.validFrom = seq.storeFrom;
  if (blockOf(upTo) != blockOf(c))
    registerCompleteBlocks(seq, c);
  seq.numComputed = static_cast<int32_t>(c);
  seq.validFrom = validFrom;
  collecting_ = nullptr;
  for (int32_t block : pending)
    pendingWriter_[block] = static_cast<int32_t>(slot);
  numPendingBlocks_ += static_cast<int64_t>(pending.size());
}

void SequenceManager::notePendingReads(Sequence &seq,
                                       const ResumeBlocks &blocks) {
  if (numPendingBlocks_ == 0)
    return;
  SequenceId self = idOf(seq);
  for (int32_t i = 0; i < blocks.count; ++i) {
    int32_t block = blocks.physical[i];
    int32_t writer = pendingWriter_[block];
    if (writer < 0)
      continue;
    std::vector<SequenceId> &readers = readersOf_[writer];
    if (readers.empty() || readers.back() != self)
      readers.push_back(self);
    readsFrom_[slotOf(seq)].push_back({idOf(seqs_[writer]), block});
  }
}

void SequenceManager::promotePending(Sequence &seq) {
  size_t slot = slotOf(seq);
  std::vector<int32_t> &pending = pendingOf_[slot];
  if (pending.empty())
    return;
  // The commit registered them already (they stay tagged): the readers'
  // blocks are now plain cached blocks.
  for (int32_t block : pending)
    pendingWriter_[block] = -1;
  numPendingBlocks_ -= static_cast<int64_t>(pending.size());
  pending.clear();
  SequenceId self = idOf(seq);
  for (SequenceId id : readersOf_[slot])
    if (Sequence *reader = find(id)) {
      std::vector<PendingRead> &reads = readsFrom_[slotOf(*reader)];
      reads.erase(std::remove_if(reads.begin(), reads.end(),
                                 [&](const PendingRead &read) {
                                   return read.writer == self;
                                 }),
                  reads.end());
    }
  readersOf_[slot].clear();
}

void SequenceManager::withdrawPending(Sequence &seq) {
  size_t slot = slotOf(seq);
  readsFrom_[slot].clear(); // a reader that drops its blocks reads nothing
  std::vector<int32_t> &pending = pendingOf_[slot];
  if (pending.empty())
    return;
  for (int32_t block : pending) {
    cache_.erase(pool_.cacheTag(block), block);
    pool_.clearCacheTag(block);
    pendingWriter_[block] = -1;
  }
  numPendingBlocks_ -= static_cast<int64_t>(pending.size());
  pending.clear();
  // Each reader that still reads from this step is preempted, which
  // withdraws its own pending entries in turn (a reader scheduled in the
  // same step may be a writer too).
  SequenceId self = idOf(seq);
  std::vector<SequenceId> readers = std::move(readersOf_[slot]);
  readersOf_[slot].clear();
  for (SequenceId id : readers) {
    Sequence *reader = find(id);
    if (!reader)
      continue;
    const std::vector<PendingRead> &reads = readsFrom_[slotOf(*reader)];
    if (std::none_of(reads.begin(), reads.end(), [&](const PendingRead &read) {
          return read.writer == self;
        }))
      continue;
    invalidated_.push_back(id);
    if (!INKLING_MUTANT("keep-invalid-readers")) // the mutant reports only
      preemptUnchecked(*reader);
  }
}

std::vector<SequenceId> SequenceManager::takeInvalidatedReaders() {
  std::vector<SequenceId> out = std::move(invalidated_);
  invalidated_.clear();
  return out;
}

Status SequenceManager::checkPendingReads(const SequenceId *ids,
                                          int64_t numSequences,
                                          bool &ordered) const {
  ordered = false;
  if (numPendingBlocks_ == 0)
    return Status::ok();
  for (int64_t b = 0; b < numSequences; ++b)
    for (const PendingRead &read : readsFrom_[slotOf(*batch_[b])]) {
      const Sequence *writer = find(read.writer);
      if (!writer)
        return internalError(seqName(ids[b]) + " reads from unknown writer " +
                             str(read.writer));
      if (writer->buildStamp == buildStamp_) {
        // Written in this step: inserts before convs (the mutant does not
        // say so).
        ordered = !INKLING_MUTANT("unflagged-same-step");
        continue;
      }
      if (!pendingBuilt_[slotOf(*writer)])
        return failedPrecondition(
            "build step: " + seqName(ids[b]) + " at row " + str(b) +
            " starts from block " + str(read.block) + ", which the step of " +
            seqName(read.writer) +
            " writes (a same-step hit), but that step is neither in this "
            "build nor built before: build them together (the step then "
            "runs every insert before every conv) or build the writer first");
    }
  return Status::ok();
}

Status SequenceManager::checkPending(const Sequence &seq,
                                     const std::string &name) const {
  size_t slot = slotOf(seq);
  auto holds = [&](const Sequence &owner, int32_t block) {
    const MappedBlock *blocks = heldBlocks(owner);
    for (int32_t i = 0; i < owner.numHeld; ++i)
      if (blocks[i].physical == block)
        return true;
    for (const MappedBlock &snap : snapBlocks_[slotOf(owner)])
      if (snap.physical == block)
        return true;
    return false;
  };
  for (int32_t block : pendingOf_[slot]) {
    if (seq.state != SequenceState::Scheduled)
      return internalError(name + " has pending block " + str(block) +
                           " outside a step");
    if (pendingWriter_[block] != static_cast<int32_t>(slot) ||
        !pool_.hasCacheTag(block) || !holds(seq, block))
      return internalError(name + " has pending block " + str(block) +
                           " that it does not hold tagged as its own");
  }
  for (const PendingRead &read : readsFrom_[slot]) {
    const Sequence *writer = find(read.writer);
    if (!writer || writer->state != SequenceState::Scheduled ||
        pendingWriter_[read.block] != static_cast<int32_t>(slotOf(*writer)))
      return internalError(name + " reads block " + str(read.block) +
                           " of a step that is not pending");
    if (!holds(seq, read.block))
      return internalError(name + " reads pending block " + str(read.block) +
                           " that it does not hold");
  }
  return Status::ok();
}

} // namespace inkling
