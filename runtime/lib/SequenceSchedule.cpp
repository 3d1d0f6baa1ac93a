//===- SequenceSchedule.cpp - Scheduling a step of a sequence -------------===//
//
// schedule, scheduleAhead and scheduleBatch: the blocks of a step's stored
// range, copy-on-write of a shared block, and the prefill's snapshots
// (docs/runtime.md, "Window-only allocation" and "Snapshots").
//
//===----------------------------------------------------------------------===//

#include "SequenceManagerInternal.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace inkling {

using namespace sequence_internal;

Status SequenceManager::scheduleError(const Sequence &seq, SequenceId id,
                                      int64_t numTokens) const {
  if (seq.state == SequenceState::Scheduled)
    return failedPrecondition(
        seqName(id) + " already has a scheduled step of " +
        str(seq.numScheduled) + " tokens; commit it first");
  if (seq.state == SequenceState::Preempted)
    return failedPrecondition(seqName(id) + " is preempted; resume it first");
  int64_t c = seq.numComputed;
  if (numTokens < 1)
    return invalidArgument("cannot schedule " + str(numTokens) +
                           " tokens for " + seqName(id) + ": need >= 1");
  if (numTokens > kMaxPosition - c)
    return outOfRange("scheduling " + str(numTokens) + " tokens at position " +
                      str(c) + " of " + seqName(id) +
                      " passes the position limit 2^31 - 1");
  return failedPrecondition(
      "the first token of the step (position " + str(c) + ") of " +
      seqName(id) + " is unknown: only " + str(seq.numTokens) +
      " token ids are known; append the sampled token first");
}

Status SequenceManager::schedule(SequenceId id, int64_t numTokens) {
  // Decode fast path: one token, stored into the block already holding
  // the history; nothing to allocate. Everything else takes the general
  // path (which validates and explains).
  Sequence *seq = find(id);
  if (seq && numTokens == 1 && seq->state == SequenceState::Idle &&
      seq->numComputed < seq->numTokens && !config_.sameStepHits) {
    // One token: the stored range is position c alone, in block c/N.
    int64_t block = blockOf(seq->numComputed);
    MappedBlock *held = heldBlocks(*seq);
    bool inLastBlock =
        seq->numHeld > 0 && held[seq->numHeld - 1].logical == block;
    if (inLastBlock &&
        !pool_.isSharedOrCached(held[seq->numHeld - 1].physical)) {
      // Written in place: nothing to allocate.
    } else if (!inLastBlock && pool_.numFreeBlocks() > 0 &&
               seq->numHeld < maxHeld_) {
      // c starts a block: one new block.
      held[seq->numHeld++] = {static_cast<int32_t>(block),
                              pool_.allocateUnchecked()};
    } else {
      return scheduleGeneral(id, numTokens); // copy-on-write, out of blocks
    }
    seq->state = SequenceState::Scheduled;
    seq->numScheduled = 1;
    seq->storeFrom = seq->numComputed;
    return Status::ok();
  }
  return scheduleGeneral(id, numTokens);
}

Status SequenceManager::scheduleAhead(SequenceId id, int64_t numTokens) {
  Sequence *seq = find(id);
  if (!seq)
    return unknownSequence(id, "schedule ahead");
  if (seq->state != SequenceState::Idle || seq->numComputed < seq->numTokens ||
      seq->numTokens >= kMaxPosition)
    return schedule(id, numTokens); // the first token is known (or an error)
  // The first token is pending: plan as if it were known. Scheduling reads
  // the token count only for this check; hashes are untouched.
  ++seq->numTokens;
  Status status = schedule(id, numTokens);
  --seq->numTokens;
  return status;
}

// Both helpers run on every general schedule: keep them in the caller.
[[gnu::always_inline]] inline SequenceManager::SchedulePlan
SequenceManager::planSchedule(const Sequence &seq, int64_t numTokens,
                              int64_t storeFrom) const {
  SchedulePlan plan;
  int64_t c = seq.numComputed, end = c + numTokens;
  plan.storeFrom =
      storeFrom >= 0
          ? storeFrom
          : std::max(c, end - history_ -
                            (INKLING_MUTANT("no-lookahead") ? 0 : lookahead_));
  plan.first = blockOf(plan.storeFrom);
  plan.last = blockOf(end - 1);
  const MappedBlock *held = heldBlocks(seq);
  // Only the block of c (when c%N != 0) can hold history and be written.
  plan.overlap = seq.numHeld > 0 && held[seq.numHeld - 1].logical == plan.first;
  plan.copyOnWrite = plan.overlap && !INKLING_MUTANT("no-copy-on-write") &&
                     pool_.isSharedOrCached(held[seq.numHeld - 1].physical);
  plan.newEntries = plan.last - plan.first + 1 - (plan.overlap ? 1 : 0);
  plan.needed = plan.newEntries + (plan.copyOnWrite ? 1 : 0);
  return plan;
}

void SequenceManager::planSnapshots(const Sequence &seq, int64_t numTokens,
                                    SchedulePlan &plan, SnapshotPlan &snap,
                                    int64_t budget) const {
  snap.ranges.clear();
  snap.blocks = 0;
  int64_t c = seq.numComputed;
  // Boundaries b in (c, top] whose history [b-(W-1), b) a later request can
  // resume from (the hash of block b/N-1 must be known: b <= numTokens).
  int64_t top = std::min<int64_t>(c + numTokens, seq.numTokens);
  top -= top % blockSize_;
  if (top <= c)
    return;
  // A boundary is stored as 2b, or 2b + 1 when it is pinned: named by the
  // engine (a cache point) or the one a resubmitted prompt resumes from.
  // The snapshot cap applies to the others only (docs/runtime.md).
  std::vector<int64_t> &bounds = boundScratch_;
  bounds.clear();
  // Mutants (the hit model must catch them): snapshots stored as
  // every-block, every other boundary of every-block, S ignored.
  if (config_.prefixPolicy == PrefixPolicy::EveryBlock ||
      INKLING_MUTANT("snapshots-as-every-block")) {
    int64_t step = INKLING_MUTANT("half-the-boundaries") ? 2 : 1;
    for (int64_t b = top; b > c; b -= step * blockSize_)
      bounds.push_back(2 * b);
  } else {
    bounds.push_back(2 * top); // the chunk's end
    int64_t every =
        (INKLING_MUTANT("snapshot-every-ignored") ? 8 : config_.snapshotEvery) *
        blockSize_;
    for (int64_t b = top - top % every; b > c; b -= every)
      bounds.push_back(2 * b);
    // Below S*N, boundaries at N * 2^k: a shared prompt shorter than S
    // blocks still gets a first hit (whose frontier then finds its end).
    for (int64_t b = blockSize_; b < every && b <= top; b *= 2)
      if (b > c)
        bounds.push_back(2 * b);
    // The hit frontier: a sequence that started at a hit h shares its
    // prompt beyond h with an earlier one, up to a point no one knows: it
    // snapshots every boundary in (h, h + S*N], so the next sharer resumes
    // where the shared part ends (boundaries already cached are skipped).
    // Only a hit at a grid point (below) starts a frontier: a hit
    // elsewhere came from a frontier or a cache point, at the shared end.
    int64_t hit = hitFrom_[slotOf(seq)];
    int64_t hitBlocks = hit / blockSize_;
    bool onGrid = hit % every == 0 || (hitBlocks & (hitBlocks - 1)) == 0;
    if (hit > 0 && onGrid)
      for (int64_t b = std::min(top, hit + every); b > std::max(c, hit);
           b -= blockSize_)
        bounds.push_back(2 * b);
    for (int32_t point : cachePoints_[slotOf(seq)]) {
      int64_t b = point - point % blockSize_;
      if (b > c && b <= top)
        bounds.push_back(2 * b + 1);
    }
    // A resubmitted identical prompt of L tokens is looked up with at most
    // L-1 tokens (the engine computes the last one): it resumes from
    // floor((L-1)/N)*N, one block below the chunk end when N divides L.
    int64_t resubmit = (seq.numTokens - 1) - (seq.numTokens - 1) % blockSize_;
    if (resubmit > c && resubmit <= top)
      bounds.push_back(2 * resubmit + 1);
    std::sort(bounds.begin(), bounds.end(), std::greater<int64_t>());
    // Descending, a pinned 2b + 1 comes before its 2b: keep the first.
    bounds.erase(
        std::unique(bounds.begin(), bounds.end(),
                    [](int64_t a, int64_t b) { return a / 2 == b / 2; }),
        bounds.end());
  }
  const HashChain &chain = chainOf(seq);
  int64_t storeFrom = plan.storeFrom;
  for (int64_t encoded : bounds) {
    int64_t b = encoded / 2;
    bool pinned = encoded % 2 != 0;
    int64_t firstBlock = firstHistoryBlock(b), lastBlock = b / blockSize_ - 1;
    if (b - history_ >= storeFrom)
      continue; // the window stores it
    if (firstBlock < chain.base || lastBlock >= chain.end())
      continue; // hashes dropped, or not known yet (tokens scheduled ahead
                // of their ids): cannot be registered
    int64_t cached = firstBlock;
    while (cached <= lastBlock && cache_.find(chain.at(cached)) >= 0)
      ++cached;
    if (cached > lastBlock)
      continue; // another sequence cached it already
    // Every block of the history must be registrable: its own last W-1
    // positions valid (see registerCompleteBlocks).
    int64_t lo = std::max<int64_t>(
        c, std::max<int64_t>(0, (firstBlock + 1) * blockSize_ - history_));
    if (lastBlock >= blockOf(storeFrom)) {
      storeFrom = lo; // shares the window's first block: extend the window
      continue;
    }
    if (c > 0 && blockOf(lo) <= blockOf(c - 1))
      continue; // would write the held block of c
    if (!snap.ranges.empty() && blockOf(snap.ranges.back().from) <= lastBlock) {
      snap.ranges.back().from = static_cast<int32_t>(lo); // shares a block
      snap.ranges.back().pinned |= pinned;
      continue;
    }
    snap.ranges.push_back(
        {static_cast<int32_t>(lo), static_cast<int32_t>(b), pinned});
  }
  if (storeFrom < plan.storeFrom) {
    SchedulePlan extended = planSchedule(seq, numTokens, storeFrom);
    // The window never outgrows the per-sequence bound (nor the free
    // blocks): else the snapshot is dropped.
    if (seq.numHeld + extended.newEntries + (extended.copyOnWrite ? 1 : 0) <=
            maxHeld_ &&
        extended.needed <= budget)
      plan = extended;
  }
  std::reverse(snap.ranges.begin(), snap.ranges.end());
  auto blocksOf = [&](const SnapshotRange &range) {
    return blockOf(range.to - 1) - blockOf(range.from) + 1;
  };
  int64_t automatic = 0; // blocks of the ranges the cap applies to
  for (const SnapshotRange &range : snap.ranges) {
    snap.blocks += blocksOf(range);
    automatic += range.pinned ? 0 : blocksOf(range);
  }
  // Snapshots are optional: when the free blocks run short, the lowest
  // automatic ones go first, then the lowest pinned ones, so they never turn
  // a schedule into OutOfBlocks. The snapshots policy also keeps a step's
  // automatic snapshot blocks within maxSnapshotBlocks(); pinned ones
  // (cache points, the resubmit boundary) are never dropped for the cap
  // (every-block stores what it must, like vLLM).
  int64_t cap = config_.prefixPolicy == PrefixPolicy::Snapshots
                    ? maxSnapshotBlocks()
                    : std::numeric_limits<int64_t>::max();
  for (bool dropPinned : {false, true})
    for (SnapshotRange &range : snap.ranges) {
      if (range.pinned != dropPinned || range.to == 0)
        continue;
      if (plan.needed + snap.blocks <= budget &&
          (dropPinned || automatic <= cap))
        break;
      snap.blocks -= blocksOf(range);
      automatic -= range.pinned ? 0 : blocksOf(range);
      range.to = 0; // dropped
    }
  snap.ranges.erase(
      std::remove_if(snap.ranges.begin(), snap.ranges.end(),
                     [](const SnapshotRange &range) { return range.to == 0; }),
      snap.ranges.end());
}

[[gnu::always_inline]] inline Status
SequenceManager::checkSchedule(const Sequence &seq, SequenceId id,
                               int64_t numTokens, SchedulePlan &plan) const {
  int64_t c = seq.numComputed;
  if (seq.state != SequenceState::Idle || numTokens < 1 ||
      numTokens > kMaxPosition - c || c >= seq.numTokens)
    return scheduleError(seq, id, numTokens);
  plan = planSchedule(seq, numTokens);
  if (seq.numHeld + plan.newEntries > maxHeld_)
    return internalError(seqName(id) + " would hold " +
                         str(seq.numHeld + plan.newEntries) +
                         " blocks, more than the bound " + str(maxHeld_));
  return Status::ok();
}

Status SequenceManager::scheduleGeneral(SequenceId id, int64_t numTokens,
                                        int64_t reserve) {
  Sequence *found = find(id);
  if (!found)
    return unknownSequence(id, "schedule");
  Sequence &seq = *found;
  SchedulePlan plan;
  if (Status status = checkSchedule(seq, id, numTokens, plan); !status)
    return status;
  if (plan.needed > pool_.numFreeBlocks())
    return outOfBlocks(seqName(id) + " needs " + str(plan.needed) +
                       " blocks to store positions [" + str(plan.storeFrom) +
                       ", " + str(seq.numComputed + numTokens) +
                       "), but only " + str(pool_.numFreeBlocks()) +
                       " are free");
  snapScratch_.ranges.clear();
  snapScratch_.blocks = 0;
  if (config_.prefixPolicy != PrefixPolicy::Window &&
      config_.enablePrefixCaching && plan.storeFrom > seq.numComputed)
    planSnapshots(seq, numTokens, plan, snapScratch_,
                  pool_.numFreeBlocks() - reserve);
  MappedBlock *held = heldBlocks(seq);
  if (plan.copyOnWrite) {
    // Keep the reference on src until commit: the copy runs in the step.
    MappedBlock &shared = held[seq.numHeld - 1];
    seq.copySrc = shared.physical;
    seq.copyDst = pool_.allocateUnchecked();
    shared.physical = seq.copyDst;
  }
  for (int64_t j = plan.first + (plan.overlap ? 1 : 0); j <= plan.last; ++j)
    held[seq.numHeld++] = {static_cast<int32_t>(j), pool_.allocateUnchecked()};
  if (snapScratch_.blocks > 0) {
    std::vector<MappedBlock> &blocks = snapBlocks_[slotOf(seq)];
    blocks.clear();
    for (const SnapshotRange &range : snapScratch_.ranges)
      for (int64_t j = blockOf(range.from); j <= blockOf(range.to - 1); ++j)
        blocks.push_back({static_cast<int32_t>(j), pool_.allocateUnchecked()});
    snapRanges_[slotOf(seq)] = snapScratch_.ranges;
    numSnapshotBlocks_ += snapScratch_.blocks;
  }
  seq.state = SequenceState::Scheduled;
  seq.numScheduled = static_cast<int32_t>(numTokens);
  seq.storeFrom = static_cast<int32_t>(plan.storeFrom);
  registerPending(seq); // same-step hits
  return Status::ok();
}

Status SequenceManager::scheduleBatch(const SequenceId *ids,
                                      const int64_t *numTokens, int64_t count) {
  if (count < 0 || (count > 0 && (!ids || !numTokens)))
    return invalidArgument("batch of " + str(count) +
                           " sequences needs non-null id and count arrays");
  // Validate every entry and the blocks of the whole batch first; then no
  // schedule can fail (allocations only evict free blocks, which no plan
  // depends on).
  ++buildStamp_;
  int64_t needed = 0;
  batchNeeds_.clear();
  for (int64_t i = 0; i < count; ++i) {
    StatusOr<Sequence *> entry = batchEntry(ids[i], i, "schedule batch");
    if (!entry)
      return entry.status();
    Sequence *seq = *entry;
    SchedulePlan plan;
    if (Status status = checkSchedule(*seq, ids[i], numTokens[i], plan);
        !status)
      return status;
    needed += plan.needed;
    batchNeeds_.push_back(plan.needed);
  }
  if (needed > pool_.numFreeBlocks())
    return outOfBlocks("the batch of " + str(count) + " sequences needs " +
                       str(needed) + " blocks, but only " +
                       str(pool_.numFreeBlocks()) +
                       " are free; nothing was scheduled");
  // Snapshots take only blocks that later entries do not need.
  int64_t reserve = needed;
  for (int64_t i = 0; i < count; ++i)
    if (Status status = (reserve -= batchNeeds_[i], numTokens[i] == 1)
                            ? schedule(ids[i], 1)
                            : scheduleGeneral(ids[i], numTokens[i], reserve);
        !status)
      return internalError("schedule batch: validated entry " + str(i) +
                           " failed: " + status.toString());
  return Status::ok();
}

} // namespace inkling
