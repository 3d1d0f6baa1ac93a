//===- SequenceInvariants.cpp - Invariant checks and state dumps ----------===//
//
// Introspection: the live ids, a sequence's snapshot, checkInvariants (the
// manager's cross-checks of pool, prefix cache and sequences) and the
// deterministic dump the tests compare around failing calls.
//
//===----------------------------------------------------------------------===//

#include "SequenceManagerInternal.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace inkling {

using namespace sequence_internal;

namespace {
// A key as 32 hex digits, high half first.
std::string hex(PrefixKey key) {
  char text[33];
  std::snprintf(text, sizeof(text), "%016" PRIx64 "%016" PRIx64, key.hi,
                key.lo);
  return text;
}
} // namespace

std::vector<SequenceId> SequenceManager::sequenceIds() const {
  std::vector<SequenceId> ids;
  for (size_t slot = 0; slot < seqs_.size(); ++slot)
    if (seqs_[slot].live())
      ids.push_back((static_cast<SequenceId>(seqs_[slot].generation) << 32) |
                    slot);
  return ids;
}

StatusOr<SequenceInfo> SequenceManager::sequenceInfo(SequenceId id) const {
  const Sequence *found = find(id);
  if (!found)
    return unknownSequence(id, "sequence info");
  const Sequence &seq = *found;
  SequenceInfo info;
  info.state = seq.state;
  info.numComputed = seq.numComputed;
  info.numTokens = seq.numTokens;
  info.numScheduled = seq.numScheduled;
  info.storeFrom = seq.storeFrom;
  info.validFrom = seq.validFrom;
  const MappedBlock *held = heldBlocks(seq);
  info.blocks.assign(held, held + seq.numHeld);
  info.snapshotBlocks = snapBlocks_[slotOf(seq)];
  info.hasCopy = seq.copySrc >= 0;
  if (info.hasCopy)
    info.copy = {seq.copySrc, seq.copyDst};
  info.pendingBlocks = pendingOf_[slotOf(seq)];
  for (const PendingRead &read : readsFrom_[slotOf(seq)])
    if (info.pendingWriters.empty() ||
        info.pendingWriters.back() != read.writer)
      info.pendingWriters.push_back(read.writer);
  return info;
}

Status SequenceManager::checkInvariants() const {
  if (Status status = pool_.checkInvariants(); !status)
    return status;
  std::vector<int64_t> references(pool_.numBlocks(), 0);
  int64_t live = 0, totalSnaps = 0;
  for (size_t slot = 0; slot < seqs_.size(); ++slot) {
    const Sequence &seq = seqs_[slot];
    if (!seq.live())
      continue;
    ++live;
    if (Status status = checkSequence(seq, references, totalSnaps); !status)
      return status;
  }
  if (live != numLive_)
    return internalError("live sequence count " + str(numLive_) +
                         " but found " + str(live));
  if (totalSnaps != numSnapshotBlocks_)
    return internalError("snapshot block count " + str(numSnapshotBlocks_) +
                         " but sequences hold " + str(totalSnaps));
  int64_t pending = std::count_if(pendingWriter_.begin(), pendingWriter_.end(),
                                  [](int32_t writer) { return writer >= 0; });
  if (pending != numPendingBlocks_)
    return internalError("pending block count " + str(numPendingBlocks_) +
                         " but " + str(pending) + " blocks are pending");
  for (int32_t block = 1; block < pool_.numBlocks(); ++block)
    if (references[block] != pool_.refCount(block))
      return internalError("block " + str(block) + " has reference count " +
                           str(pool_.refCount(block)) + " but " +
                           str(references[block]) + " holders");
  return checkCacheTags();
}

// The window of one live sequence (its blocks counted into `references`),
// its snapshot blocks (also counted into `totalSnaps`), the write rule and
// its key chain.
Status SequenceManager::checkSequence(const Sequence &seq,
                                      std::vector<int64_t> &references,
                                      int64_t &totalSnaps) const {
  size_t slot = slotOf(seq);
  std::string name = "sequence slot " + str(slot);
  const MappedBlock *held = heldBlocks(seq);
  int64_t c = seq.numComputed;
  if (seq.numHeld < 0 || seq.numHeld > maxHeld_)
    return internalError(name + " holds " + str(seq.numHeld) + " blocks");
  if (c > seq.numTokens && seq.state != SequenceState::Preempted)
    return internalError(name + " computed " + str(c) + " of " +
                         str(seq.numTokens) + " known tokens");
  if (seq.validFrom > std::max<int64_t>(0, c - history_))
    return internalError(name + ": history [" + str(c - history_) + ", " +
                         str(c) + ") is not all valid (valid from " +
                         str(seq.validFrom) + ")");
  // The expected window: the history blocks, plus the stored blocks of a
  // scheduled step.
  std::vector<int64_t> expected;
  if (seq.state != SequenceState::Preempted && c > 0)
    for (int64_t j = std::max<int64_t>(0, c - history_) / blockSize_;
         j <= (c - 1) / blockSize_; ++j)
      expected.push_back(j);
  if (seq.state == SequenceState::Scheduled) {
    int64_t end = c + seq.numScheduled;
    for (int64_t j = seq.storeFrom / blockSize_; j <= (end - 1) / blockSize_;
         ++j)
      if (expected.empty() || expected.back() < j)
        expected.push_back(j);
  }
  if (expected.size() != static_cast<size_t>(seq.numHeld))
    return internalError(name + " holds " + str(seq.numHeld) +
                         " blocks, its window needs " + str(expected.size()));
  for (int32_t i = 0; i < seq.numHeld; ++i) {
    if (held[i].logical != expected[i])
      return internalError(name + " maps logical block " +
                           str(held[i].logical) + ", expected " +
                           str(expected[i]));
    if (!pool_.isUsable(held[i].physical))
      return internalError(name + " maps logical block " +
                           str(held[i].logical) + " to block " +
                           str(held[i].physical));
    for (int32_t k = 0; k < i; ++k)
      if (held[k].physical == held[i].physical)
        return internalError(name + " maps two logical blocks to block " +
                             str(held[i].physical));
    ++references[held[i].physical];
  }
  if (seq.copySrc >= 0) {
    if (seq.state != SequenceState::Scheduled)
      return internalError(name + " has a copy outside a step");
    ++references[seq.copySrc];
  }
  if (Status status = checkSnapshots(seq, name, references, totalSnaps);
      !status)
    return status;
  if (Status status = checkPending(seq, name); !status)
    return status;
  if (seq.state == SequenceState::Scheduled) {
    for (int32_t i = 0; i < seq.numHeld; ++i) {
      if (held[i].logical < seq.storeFrom / blockSize_)
        continue;
      int32_t block = held[i].physical;
      // A pending block of this step is tagged, and its same-step readers
      // share it: they read it after the step's inserts.
      if (pendingWriter_[block] == static_cast<int32_t>(slot))
        continue;
      if (pool_.refCount(block) != 1 || pool_.hasCacheTag(block))
        return internalError(name + " writes into shared or cached block " +
                             str(block));
    }
  }
  const HashChain &chain = chainOf(seq);
  if (config_.enablePrefixCaching &&
      (chain.end() != seq.numTokens / blockSize_ ||
       seq.tailCount != seq.numTokens % blockSize_ ||
       (!chain.hashes.empty() && chain.hashes.back() != seq.lastHash)))
    return internalError(name + " has a hash chain out of step with its " +
                         str(seq.numTokens) + " tokens");
  return Status::ok();
}

// The snapshot blocks of a pending step: fresh (one reference, no tag),
// below the window, covering their ranges in order.
Status SequenceManager::checkSnapshots(const Sequence &seq,
                                       const std::string &name,
                                       std::vector<int64_t> &references,
                                       int64_t &totalSnaps) const {
  size_t slot = slotOf(seq);
  int64_t c = seq.numComputed;
  const std::vector<MappedBlock> &snaps = snapBlocks_[slot];
  if (!snaps.empty() && seq.state != SequenceState::Scheduled)
    return internalError(name + " holds snapshot blocks outside a step");
  int64_t expectedSnaps = 0;
  for (const SnapshotRange &range : snapRanges_[slot]) {
    if (range.from < c || range.to > seq.storeFrom || range.from >= range.to ||
        range.to % blockSize_ != 0)
      return internalError(name + " has snapshot range [" + str(range.from) +
                           ", " + str(range.to) + ") outside [" + str(c) +
                           ", " + str(seq.storeFrom) + ")");
    for (int64_t j = range.from / blockSize_; j < range.to / blockSize_;
         ++j, ++expectedSnaps)
      if (expectedSnaps >= static_cast<int64_t>(snaps.size()) ||
          snaps[expectedSnaps].logical != j)
        return internalError(name + " has no snapshot block for logical " +
                             str(j));
  }
  if (expectedSnaps != static_cast<int64_t>(snaps.size()))
    return internalError(name + " holds " + str(snaps.size()) +
                         " snapshot blocks, its ranges need " +
                         str(expectedSnaps));
  for (const MappedBlock &snap : snaps) {
    if (!pool_.isUsable(snap.physical))
      return internalError(name + " snapshots into block " +
                           str(snap.physical));
    if (pendingWriter_[snap.physical] != static_cast<int32_t>(slot) &&
        (pool_.refCount(snap.physical) != 1 ||
         pool_.hasCacheTag(snap.physical)))
      return internalError(name + " snapshots into shared or cached block " +
                           str(snap.physical));
    ++references[snap.physical];
    ++totalSnaps;
  }
  return Status::ok();
}

// Every tagged block is in the map under its whole key, and nothing else is.
Status SequenceManager::checkCacheTags() const {
  int64_t tagged = 0;
  for (int32_t block = 1; block < pool_.numBlocks(); ++block) {
    if (!pool_.hasCacheTag(block))
      continue;
    ++tagged;
    if (cache_.find(pool_.cacheTag(block)) != block)
      return internalError("cached block " + str(block) +
                           " is not in the prefix map under its tag");
  }
  if (tagged != cache_.size())
    return internalError("prefix map has " + str(cache_.size()) +
                         " entries, the pool " + str(tagged) +
                         " tagged blocks");
  return Status::ok();
}

std::string SequenceManager::debugString() const {
  std::ostringstream os;
  os << "pool free=" << pool_.numFreeBlocks() << " queue=[";
  for (int32_t block : pool_.freeQueue())
    os << block << ' ';
  os << "]\nblocks:";
  for (int32_t block = 1; block < pool_.numBlocks(); ++block) {
    if (pool_.refCount(block) == 0 && !pool_.hasCacheTag(block))
      continue;
    os << ' ' << block << "(rc=" << pool_.refCount(block);
    if (pool_.hasCacheTag(block))
      os << " tag=" << hex(pool_.cacheTag(block));
    os << ')';
  }
  os << "\ncache:";
  for (auto [hash, block] : cache_.entries())
    os << ' ' << hex(hash) << "->" << block;
  os << "\nsequences=" << numLive_ << '\n';
  for (size_t slot = 0; slot < seqs_.size(); ++slot) {
    const Sequence &seq = seqs_[slot];
    if (!seq.live())
      continue;
    os << "  slot " << slot << " gen " << seq.generation << ' '
       << sequenceStateName(seq.state) << " c=" << seq.numComputed
       << " tokens=" << seq.numTokens << " valid=" << seq.validFrom
       << " n=" << seq.numScheduled << " st=" << seq.storeFrom
       << " copy=" << seq.copySrc << "->" << seq.copyDst << " blocks=[";
    const MappedBlock *held = heldBlocks(seq);
    for (int32_t i = 0; i < seq.numHeld; ++i)
      os << held[i].logical << ':' << held[i].physical << ' ';
    os << "] snaps=[";
    for (const SnapshotRange &range : snapRanges_[slot])
      os << range.from << '-' << range.to << ' ';
    for (const MappedBlock &snap : snapBlocks_[slot])
      os << snap.logical << ':' << snap.physical << ' ';
    os << "] pending=[";
    for (int32_t block : pendingOf_[slot])
      os << block << ' ';
    os << "] built=" << int(pendingBuilt_[slot]) << " readers=[";
    for (SequenceId reader : readersOf_[slot])
      os << reader << ' ';
    os << "] reads=[";
    for (const PendingRead &read : readsFrom_[slot])
      os << read.writer << ':' << read.block << ' ';
    os << "] seed=" << hex(seeds_[slot]);
    os << " points=" << cachePoints_[slot].size();
    os << " hashes=[" << chainOf(seq).base << ", " << chainOf(seq).end() << ")/"
       << hex(seq.lastHash);
    os << " tail=[";
    for (int32_t i = 0; i < seq.tailCount; ++i)
      os << tailTokens(seq)[i] << ' ';
    os << "]\n";
  }
  os << "invalidated=[";
  for (SequenceId id : invalidated_)
    os << id << ' ';
  os << "]\nfree slots=[";
  for (int32_t slot : freeSlots_)
    os << slot << ' ';
  os << "]\n";
  return os.str();
}

} // namespace inkling
