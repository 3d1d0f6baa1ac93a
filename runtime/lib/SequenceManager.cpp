//===- SequenceManager.cpp - Paged block tables of one sconv group --------===//
//
// Construction and the config's bounds, sequence slots, and the lifecycle
// calls that only move whole sequences: preempt, finish, fork, the prefix
// policy switch. Adding, appending and resuming (prefix hits) are in
// SequencePrefix.cpp, steps in SequenceSchedule.cpp, SequenceStep.cpp and
// SequenceCommit.cpp, checks and dumps in SequenceInvariants.cpp.
//
//===----------------------------------------------------------------------===//

#include "EnumName.h"
#include "SequenceManagerInternal.h"

#include <algorithm>
#include <limits>

namespace inkling {

using namespace sequence_internal;

namespace {
/// span(count): the blocks `count` consecutive positions span, at worst
/// alignment: ceil((count-1)/N) + 1 (0 for none).
int64_t spanBlocks(int64_t count, int64_t blockSize) {
  return count == 0 ? 0 : (count + blockSize - 2) / blockSize + 1;
}

Status checkPrefixPolicy(PrefixPolicy policy, int64_t snapshotEvery) {
  if (policy != PrefixPolicy::Window && policy != PrefixPolicy::Snapshots &&
      policy != PrefixPolicy::EveryBlock)
    return invalidArgument("prefix policy (" +
                           str(static_cast<int64_t>(policy)) +
                           ") is not one of window, snapshots, every-block");
  if (snapshotEvery < 1 || snapshotEvery > kMaxSnapshotEvery)
    return invalidArgument("snapshot interval S (" + str(snapshotEvery) +
                           " blocks) must be in [1, 2^20]");
  return Status::ok();
}
} // namespace

const char *sequenceStateName(SequenceState state) {
  static const char *const kNames[] = {"idle", "scheduled", "preempted"};
  return enumName(state, kNames);
}

const char *prefixPolicyName(PrefixPolicy policy) {
  static const char *const kNames[] = {"window", "snapshots", "every-block"};
  return enumName(policy, kNames);
}

StatusOr<PrefixPolicy> parsePrefixPolicy(const std::string &name) {
  for (PrefixPolicy policy : {PrefixPolicy::Window, PrefixPolicy::Snapshots,
                              PrefixPolicy::EveryBlock})
    if (name == prefixPolicyName(policy))
      return policy;
  return invalidArgument("prefix policy '" + name +
                         "' is not one of window, snapshots, every-block");
}

StatusOr<std::unique_ptr<SequenceManager>>
SequenceManager::create(const SequenceManagerConfig &config) {
  const Layout &layout = config.layout;
  if (layout.slidingWindow < 2 || layout.slidingWindow > 4096)
    return invalidArgument(
        "kernel (" + str(layout.slidingWindow) +
        ") must be in [2, 4096] for a conv-state cache: a kernel of 1 has no "
        "history to cache (derive the layout with Layout::derive)");
  if (layout.blockSize < 1 || layout.blockSize > 65536)
    return invalidArgument("block size (" + str(layout.blockSize) +
                           ") must be in [1, 65536] (derive the layout with "
                           "Layout::derive)");
  if (config.lookahead < 0 || config.lookahead > kMaxLookahead)
    return invalidArgument("lookahead (" + str(config.lookahead) +
                           ") must be in [0, 1024]");
  if (Status status =
          checkPrefixPolicy(config.prefixPolicy, config.snapshotEvery);
      !status)
    return status;
  StatusOr<BlockPool> pool = BlockPool::create(config.numBlocks);
  if (!pool)
    return pool.status();
  return std::unique_ptr<SequenceManager>(
      new SequenceManager(config, std::move(*pool)));
}

SequenceManager::SequenceManager(const SequenceManagerConfig &config,
                                 BlockPool pool)
    : config_(config), blockSize_(config.layout.blockSize),
      history_(config.layout.slidingWindow - 1), lookahead_(config.lookahead),
      defaultRoot_(chainRoot(config.prefixSeed)), pool_(std::move(pool)),
      cache_(pool_.numBlocks()), pendingWriter_(pool_.numBlocks(), -1) {
  static_assert(sizeof(Sequence) == 64, "the hot record is one cache line");
  maxHeld_ = maxBlocksPerSequence(config.layout, lookahead_);
  if ((blockSize_ & (blockSize_ - 1)) == 0)
    blockShift_ = __builtin_ctzll(static_cast<uint64_t>(blockSize_));
  else
    divMagic_ = std::numeric_limits<uint64_t>::max() / blockSize_ + 1;
  pool_.setEvictionListener(&cache_);
}

int64_t SequenceManager::maxSnapshotBlocks() const {
  if (config_.prefixPolicy == PrefixPolicy::Window)
    return 0;
  if (config_.prefixPolicy == PrefixPolicy::EveryBlock)
    return std::numeric_limits<int64_t>::max();
  // The window's bound plus a hit frontier of S boundaries of
  // ceil((W-1)/N) blocks each.
  return maxHeld_ +
         config_.snapshotEvery * ((history_ + blockSize_ - 1) / blockSize_);
}

StatusOr<Admission> SequenceManager::admission(int64_t numTokens,
                                               int64_t startPosition,
                                               int64_t watermarkBlocks) const {
  if (numTokens < 1 || numTokens > kMaxPosition)
    return invalidArgument("admission: prompt length (" + str(numTokens) +
                           ") must be in [1, 2^31)");
  if (startPosition < 0 || startPosition >= numTokens)
    return invalidArgument("admission: start position (" + str(startPosition) +
                           ") must be in [0, " + str(numTokens) +
                           "): the last token is always computed");
  if (watermarkBlocks < 0)
    return invalidArgument("admission: watermark (" + str(watermarkBlocks) +
                           " blocks) must be >= 0");
  Admission result;
  // A hit holds the blocks of its W-1 history positions (cached: they
  // leave the free queue); its first step stores at most W-1+L positions.
  int64_t hitBlocks = startPosition > 0 ? startPosition / blockSize_ -
                                              firstHistoryBlock(startPosition)
                                        : 0;
  int64_t stored = std::min(numTokens - startPosition, history_ + lookahead_);
  result.neededBlocks =
      std::min(maxHeld_, hitBlocks + spanBlocks(stored, blockSize_));
  for (const Sequence &seq : seqs_) {
    if (!seq.live() || seq.state == SequenceState::Preempted)
      continue;
    int64_t c = seq.numComputed;
    if (seq.state == SequenceState::Idle && c + 1 >= seq.numTokens) {
      // Decoding: a step of 1 + L tokens stores [c, c + 1 + L): the blocks
      // of that range it does not hold, plus a copy if the held one is
      // shared.
      int64_t first = blockOf(c), last = blockOf(c + lookahead_);
      const MappedBlock *held = heldBlocks(seq);
      bool overlap = seq.numHeld > 0 && held[seq.numHeld - 1].logical == first;
      bool copy =
          overlap && pool_.isSharedOrCached(held[seq.numHeld - 1].physical);
      result.reservedBlocks +=
          last - first + 1 - (overlap ? 1 : 0) + (copy ? 1 : 0);
    } else {
      // Prefilling (or mid-step): a chunk's window at worst.
      result.reservedBlocks += maxHeld_ - seq.numHeld;
    }
  }
  result.freeBlocks = pool_.numFreeBlocks();
  result.admit =
      result.freeBlocks - result.reservedBlocks - result.neededBlocks >=
      watermarkBlocks;
  return result;
}

int64_t SequenceManager::maxBlocksBetweenSteps() const {
  // The blocks W-1 consecutive positions can touch: ceil((W-2)/N) + 1.
  return spanBlocks(history_, blockSize_);
}

int64_t SequenceManager::maxBlocksPerSequence(const Layout &layout,
                                              int64_t lookahead) {
  // History blocks plus stored blocks (the overlap is not subtracted).
  int64_t history = layout.slidingWindow - 1;
  return spanBlocks(history, layout.blockSize) +
         spanBlocks(history + lookahead, layout.blockSize);
}

int64_t SequenceManager::firstHistoryBlock(int64_t position) const {
  return std::max<int64_t>(0, position - history_) / blockSize_;
}

int64_t SequenceManager::firstCacheableBlock(const Sequence &seq) const {
  // The least j with max(jN, (j+1)N - (W-1)) >= validFrom.
  int64_t v = seq.validFrom;
  int64_t ownBlock = (v + blockSize_ - 1) / blockSize_;
  int64_t byHistory = (v + history_ + blockSize_ - 1) / blockSize_ - 1;
  return std::max<int64_t>(0, std::min(ownBlock, byHistory));
}

Status SequenceManager::unknownSequence(SequenceId id,
                                        const char *operation) const {
  return notFound(std::string(operation) + ": unknown sequence id " + str(id) +
                  " (never added, or already finished)");
}

StatusOr<SequenceManager::Sequence *>
SequenceManager::batchEntry(SequenceId id, int64_t i, const char *operation) {
  Sequence *seq = find(id);
  if (!seq)
    return unknownSequence(id, operation);
  if (seq->buildStamp == buildStamp_)
    return invalidArgument(
        seqName(id) + " appears twice in the batch (again at " + str(i) + ")");
  seq->buildStamp = buildStamp_;
  return seq;
}

int32_t SequenceManager::newSlot() {
  int32_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
  } else {
    slot = static_cast<int32_t>(seqs_.size());
    seqs_.emplace_back();
    chains_.emplace_back();
    numSlots_ = seqs_.size();
    held_.resize(seqs_.size() * maxHeld_);
    tails_.resize(seqs_.size() * blockSize_);
    seeds_.resize(seqs_.size());
    hitFrom_.resize(seqs_.size());
    cachePoints_.emplace_back();
    snapRanges_.emplace_back();
    snapBlocks_.emplace_back();
    pendingOf_.emplace_back();
    pendingBuilt_.push_back(0);
    readersOf_.emplace_back();
    readsFrom_.emplace_back();
  }
  Sequence &seq = seqs_[slot];
  uint32_t generation =
      (seq.generation & ~Sequence::kFinished) % kMaxGeneration + 1;
  seq = Sequence();
  seq.generation = generation;
  seq.lastHash = seeds_[slot] = defaultRoot_;
  cachePoints_[slot].clear();
  hitFrom_[slot] = 0;
  pendingOf_[slot].clear();
  readersOf_[slot].clear();
  readsFrom_[slot].clear();
  chains_[slot].base = 0;
  chains_[slot].hashes.clear(); // keeps its capacity: sequences come and go
  ++numLive_;
  return slot;
}

Status SequenceManager::setPrefixPolicy(PrefixPolicy policy,
                                        int64_t snapshotEvery) {
  if (Status status = checkPrefixPolicy(policy, snapshotEvery); !status)
    return status;
  config_.prefixPolicy = policy;
  config_.snapshotEvery = snapshotEvery;
  return Status::ok();
}

void SequenceManager::releaseAll(Sequence &seq) {
  // Same-step hits: a dropped step withdraws its pending entries (and
  // preempts their readers) before its blocks go back.
  withdrawPending(seq);
  releaseSnapshots(seq);
  const MappedBlock *held = heldBlocks(seq);
  for (int32_t i = 0; i < seq.numHeld; ++i)
    pool_.releaseUnchecked(held[i].physical);
  seq.numHeld = 0;
  if (seq.copySrc >= 0)
    pool_.releaseUnchecked(seq.copySrc);
  seq.copySrc = seq.copyDst = -1;
}

Status SequenceManager::preempt(SequenceId id) {
  Sequence *found = find(id);
  if (!found)
    return unknownSequence(id, "preempt");
  Sequence &seq = *found;
  if (seq.state == SequenceState::Preempted)
    return failedPrecondition(seqName(id) + " is already preempted");
  preemptUnchecked(seq);
  return Status::ok();
}

void SequenceManager::preemptUnchecked(Sequence &seq) {
  releaseAll(seq);
  seq.state = SequenceState::Preempted;
  seq.numComputed = seq.validFrom = seq.numScheduled = seq.storeFrom = 0;
}

StatusOr<SequenceManager::Sequence *>
SequenceManager::preemptedSequence(SequenceId id) {
  Sequence *seq = find(id);
  if (!seq)
    return unknownSequence(id, "resume");
  if (seq->state != SequenceState::Preempted)
    return failedPrecondition(seqName(id) + " is not preempted (it is " +
                              sequenceStateName(seq->state) + ")");
  return seq;
}

Status SequenceManager::finish(SequenceId id) {
  Sequence *found = find(id);
  if (!found)
    return unknownSequence(id, "finish");
  Sequence &seq = *found;
  releaseAll(seq);
  seq.generation |= Sequence::kFinished;
  chainOf(seq).hashes.clear();
  chainOf(seq).base = 0;
  freeSlots_.push_back(static_cast<int32_t>(slotOf(seq)));
  --numLive_;
  return Status::ok();
}

StatusOr<SequenceId> SequenceManager::fork(SequenceId parentId) {
  Sequence *found = find(parentId);
  if (!found)
    return unknownSequence(parentId, "fork");
  if (found->state != SequenceState::Idle)
    return failedPrecondition("cannot fork " + seqName(parentId) + ": it is " +
                              sequenceStateName(found->state) +
                              ", forks need an idle sequence");
  if (seqs_.size() - freeSlots_.size() >= kMaxGeneration)
    return outOfRange("too many live sequences");
  size_t parentSlot = found - seqs_.data();
  int32_t slot = newSlot(); // may move seqs_ and held_
  const Sequence &parent = seqs_[parentSlot];
  Sequence &child = seqs_[slot];
  child.numComputed = parent.numComputed;
  child.numTokens = parent.numTokens;
  child.validFrom = parent.validFrom;
  chainOf(child) = chainOf(parent);
  seeds_[slot] = seeds_[parentSlot];
  cachePoints_[slot] = cachePoints_[parentSlot];
  hitFrom_[slot] = hitFrom_[parentSlot];
  child.lastHash = parent.lastHash;
  child.tailCount = parent.tailCount;
  std::copy_n(tailTokens(parent), parent.tailCount, tailTokens(child));
  child.numHeld = parent.numHeld;
  const MappedBlock *from = heldBlocks(parent);
  MappedBlock *to = heldBlocks(child);
  for (int32_t i = 0; i < parent.numHeld; ++i) {
    to[i] = from[i];
    pool_.retainUnchecked(from[i].physical);
  }
  // A child of a same-step reader reads the same pending blocks.
  SequenceId childId = (static_cast<SequenceId>(child.generation) << 32) | slot;
  readsFrom_[slot] = readsFrom_[parentSlot];
  for (const PendingRead &read : readsFrom_[slot])
    if (const Sequence *writer = find(read.writer)) {
      std::vector<SequenceId> &readers = readersOf_[slotOf(*writer)];
      if (readers.empty() || readers.back() != childId)
        readers.push_back(childId);
    }
  return childId;
}

} // namespace inkling
