//===- ModelCheckInvariants.cpp - Checks after every call -----------------===//
//
// What the model check verifies after every successful call: the
// sequences' windows and block bounds, slots, reference counts, history
// values, and the cached blocks' contents and keys.
//
//===----------------------------------------------------------------------===//

#include "ModelChecker.h"

namespace inkling::modelcheck {

std::string ModelChecker::checkAll() {
  const BlockPool &pool = manager_->pool();
  // Scratch buffers are members: the check runs after every operation.
  holders_.assign(pool.numBlocks(), 0);
  liveSlots_.clear();
  writtenSlots_.clear();
  pendingBlocks();
  for (size_t i = 0; i < seqs_.size(); ++i)
    if (std::string err = checkSequence(i); !err.empty())
      return err;
  std::vector<int64_t> &holders = holders_;
  std::vector<int64_t> &liveSlots = liveSlots_;
  std::vector<int64_t> &writtenSlots = writtenSlots_;
  std::sort(writtenSlots.begin(), writtenSlots.end());
  if (std::adjacent_find(writtenSlots.begin(), writtenSlots.end()) !=
      writtenSlots.end())
    return "two stored positions share a slot";
  // (A same-step reader's history is in its writer's pending blocks: the
  // step writes it before the reader's conv reads it.)
  for (int64_t slot : liveSlots)
    if (!pending_.count(static_cast<int32_t>(slot / n_)) &&
        std::binary_search(writtenSlots.begin(), writtenSlots.end(), slot))
      return "slot " + std::to_string(slot) +
             " is live history and written by a step";
  if (std::string err = checkCachedContents(); !err.empty())
    return err;
  if (config_.sameStepHits)
    if (Status status = manager_->checkInvariants(); !status)
      return "manager invariants: " + status.toString();
  int64_t distinct = 0;
  for (int32_t block = 1; block < pool.numBlocks(); ++block) {
    if (holders[block] != pool.refCount(block))
      return "block " + std::to_string(block) + " has reference count " +
             std::to_string(pool.refCount(block)) + " and " +
             std::to_string(holders[block]) + " holders";
    distinct += holders[block] > 0;
  }
  if (distinct + pool.numFreeBlocks() != pool.numUsableBlocks())
    return "held + free != capacity: a block leaked";
  if (distinct > pool.numUsableBlocks())
    return "capacity exceeded";
  return checkHitModel();
}

// Sequence i against the model: its state, window, block bounds, snapshot
// blocks and history values; its holders and slots are collected for
// checkAll.
std::string ModelChecker::checkSequence(size_t i) {
  const BlockPool &pool = manager_->pool();
  std::vector<int64_t> &holders = holders_;
  std::vector<int64_t> &liveSlots = liveSlots_;
  std::vector<int64_t> &writtenSlots = writtenSlots_;
  std::vector<int64_t> &positions = positions_;
  std::vector<int32_t> &logicals = logicals_;
  // The bounds of SequenceManager.h, from the model: span(m) blocks hold
  // m consecutive positions at worst alignment.
  auto span = [&](int64_t m) { return m == 0 ? 0 : (m + n_ - 2) / n_ + 1; };
  int64_t idleBound = span(history());
  int64_t stepBound = span(history()) + span(history() + config_.lookahead);
  ModelSeq &seq = seqs_[i];
  StatusOr<SequenceInfo> found = manager_->sequenceInfo(seq.id);
  if (!found)
    return "live sequence lost: " + found.status().toString();
  const SequenceInfo &info = *found;
  std::string name = "seq " + std::to_string(i); // short: no allocation
  const std::vector<uint64_t> &identities = seq.knownIdentities();
  SequenceState want = seq.state == State::Idle ? SequenceState::Idle
                       : seq.state == State::Scheduled
                           ? SequenceState::Scheduled
                           : SequenceState::Preempted;
  if (info.state != want || info.numComputed != seq.computed ||
      info.numTokens != static_cast<int64_t>(seq.tokens.size()) ||
      info.numScheduled != seq.scheduled)
    return name + " differs from the model";

  // The live window, from the model alone.
  int64_t c = seq.computed;
  positions.clear(); // history, then stored positions
  if (seq.state != State::Preempted)
    for (int64_t q = std::max<int64_t>(0, c - history()); q < c; ++q)
      positions.push_back(q);
  int64_t numHistory = positions.size();
  if (seq.state == State::Scheduled) {
    int64_t end = c + seq.scheduled;
    int64_t st = std::max(c, end - history() - config_.lookahead);
    // A snapshot next to the window extends it down (never up).
    if (config_.policy != PrefixPolicy::Window) {
      if (info.storeFrom < c || info.storeFrom > st)
        return name + " stores from " + std::to_string(info.storeFrom) +
               ", outside [c, st] = [" + std::to_string(c) + ", " +
               std::to_string(st) + "]";
      st = info.storeFrom;
    }
    for (int64_t q = st; q < end; ++q)
      positions.push_back(q);
  }
  // Snapshot blocks: only during a step, fresh, below the window,
  // within their bound; held once.
  if (!info.snapshotBlocks.empty()) {
    if (seq.state != State::Scheduled)
      return name + " holds snapshot blocks outside a step";
    // maxSnapshotBlocks(): the window's bound plus a hit frontier, and
    // beyond that cap the pinned boundaries (the cache points and the
    // resubmit boundary), ceil((W-1)/N) blocks each.
    int64_t snapBound =
        stepBound +
        (maxEvery_ + static_cast<int64_t>(seq.cachePoints.size()) + 1) *
            (span(history() + 1) - 1);
    if (config_.policy == PrefixPolicy::Snapshots && !everyBlockSeen_ &&
        static_cast<int64_t>(info.snapshotBlocks.size()) > snapBound)
      return name + " holds " + std::to_string(info.snapshotBlocks.size()) +
             " snapshot blocks, bound " + std::to_string(snapBound);
    ++snapshotChecks_;
    for (const MappedBlock &snap : info.snapshotBlocks) {
      if (snap.logical < c / n_ || snap.logical >= info.storeFrom / n_)
        return name + " snapshots logical block " +
               std::to_string(snap.logical) + " outside its prefill";
      if (!pool.isUsable(snap.physical) ||
          (pool.hasCacheTag(snap.physical) &&
           std::find(info.pendingBlocks.begin(), info.pendingBlocks.end(),
                     snap.physical) == info.pendingBlocks.end()))
        return name + " snapshots into an unusable or cached block";
      ++holders[snap.physical];
    }
  }
  logicals.clear();
  for (int64_t q : positions)
    if (logicals.empty() || logicals.back() != q / n_)
      logicals.push_back(static_cast<int32_t>(q / n_));
  std::sort(logicals.begin(), logicals.end());
  logicals.erase(std::unique(logicals.begin(), logicals.end()), logicals.end());
  if (logicals.size() != info.blocks.size())
    return name + " holds " + std::to_string(info.blocks.size()) +
           " blocks, its window spans " + std::to_string(logicals.size());
  for (size_t k = 0; k < logicals.size(); ++k)
    if (info.blocks[k].logical != logicals[k])
      return name + " maps the wrong logical blocks";
  int64_t held = info.blocks.size() + (info.hasCopy ? 1 : 0);
  int64_t bound = seq.state == State::Scheduled ? stepBound : idleBound;
  if (held > bound)
    return name + " holds " + std::to_string(held) + " blocks, bound " +
           std::to_string(bound);
  if (info.hasCopy && seq.state != State::Scheduled)
    return name + " has a copy outside a step";

  for (const MappedBlock &block : info.blocks) {
    if (!pool.isUsable(block.physical))
      return name + " maps an unusable block";
    ++holders[block.physical];
  }
  if (info.hasCopy)
    ++holders[info.copy.src];
  for (size_t k = 0; k < positions.size(); ++k) {
    int64_t q = positions[k];
    int32_t block = 0;
    for (const MappedBlock &mapped : info.blocks)
      if (mapped.logical == q / n_)
        block = mapped.physical;
    int64_t slot = int64_t(block) * n_ + q % n_;
    if (static_cast<int64_t>(k) < numHistory) {
      liveSlots.push_back(slot);
      // Idle: the history holds this sequence's own values (a same-step
      // reader's once its writer's step ran).
      if (seq.state == State::Idle && !readsUnwritten(seq) &&
          simulator_.value(slot) != identities[q])
        return name + " history position " + std::to_string(q) +
               " holds a wrong value in slot " + std::to_string(slot);
    } else if (q >= c) {
      writtenSlots.push_back(slot);
    }
  }
  return "";
}

std::string ModelChecker::checkCachedContents() {
  for (ModelSeq &seq : seqs_) {
    const std::vector<uint64_t> &identities = seq.knownIdentities();
    hashScratch_.clear();
    appendChainHashes(root_, seq.tokens.data(), seq.tokens.size(), n_,
                      hashScratch_);
    for (size_t j = 0; j < hashScratch_.size(); ++j) {
      named_.try_emplace(hashScratch_[j], identities.begin() + j * n_,
                         identities.begin() + (j + 1) * n_);
      keyOfPrefix_.try_emplace(identities[(j + 1) * n_ - 1], hashScratch_[j]);
    }
  }
  const BlockPool &pool = manager_->pool();
  for (int32_t block = 1; block < pool.numBlocks(); ++block) {
    if (!pool.hasCacheTag(block))
      continue;
    auto pending = pending_.find(block);
    if (pending != pending_.end() && !pending->second)
      continue; // its writer's step has not run yet
    PrefixKey tag = pool.cacheTag(block);
    auto it = named_.find(tag);
    if (it == named_.end())
      return "cached block " + std::to_string(block) +
             " has a tag that names no known prefix";
    for (int64_t k = std::max<int64_t>(0, n_ - history()); k < n_; ++k)
      if (simulator_.value(block * n_ + k) != it->second[k])
        return "cached block " + std::to_string(block) + " offset " +
               std::to_string(k) + " differs from what its key names";
    auto stored = keyOfPrefix_.find(simulator_.value(block * n_ + n_ - 1));
    if (stored == keyOfPrefix_.end() || stored->second != tag)
      return "cached block " + std::to_string(block) +
             " is tagged with a key other than its tokens' key";
    ++keyChecks_;
  }
  return "";
}

} // namespace inkling::modelcheck
