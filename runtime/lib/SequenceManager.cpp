//===- SequenceManager.cpp - Paged block tables of one sconv group --------===//

#include "inkling/Runtime/SequenceManager.h"

#include <algorithm>
#include <limits>
#include <sstream>

#ifdef INKLING_RUNTIME_MUTANTS
// Test builds only (runtime/unittests: the model check's mutation test): the
// bug INKLING_RUNTIME_MUTANT names, which the model check must catch. The
// library everyone links has none of this.
#include <cstdlib>
#include <cstring>
#define INKLING_MUTANT(name)                                                   \
  (std::getenv("INKLING_RUNTIME_MUTANT") &&                                    \
   std::strcmp(std::getenv("INKLING_RUNTIME_MUTANT"), name) == 0)
#else
#define INKLING_MUTANT(name) false
#endif

namespace inkling {

namespace {

/// Positions, token counts and step sizes stay below 2^31: num_computed and
/// query_start_loc are int32 in the step metadata.
constexpr int64_t kMaxPosition = std::numeric_limits<int32_t>::max();
/// Drafts per step are tens at most; the bound keeps the per-sequence block
/// window (4 + ceil(L/N) entries) small.
constexpr int64_t kMaxLookahead = 1024;
constexpr uint32_t kMaxGeneration = 0x7fffffff;

std::string str(int64_t value) { return std::to_string(value); }
std::string seqName(SequenceId id) { return "sequence " + str(id); }

Status failedPrecondition(std::string message) {
  return Status(StatusCode::FailedPrecondition, std::move(message));
}
Status outOfRange(std::string message) {
  return Status(StatusCode::OutOfRange, std::move(message));
}
Status internalError(std::string message) {
  return Status(StatusCode::Internal, std::move(message));
}

} // namespace

const char *sequenceStateName(SequenceState state) {
  switch (state) {
  case SequenceState::Idle:
    return "idle";
  case SequenceState::Scheduled:
    return "scheduled";
  case SequenceState::Preempted:
    return "preempted";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Construction and lookup
//===----------------------------------------------------------------------===//

StatusOr<std::unique_ptr<SequenceManager>>
SequenceManager::create(const SequenceManagerConfig &config) {
  const Layout &layout = config.layout;
  if (layout.blockSize < 2 || layout.blockSize > 4096)
    return invalidArgument(
        "kernel (" + str(layout.blockSize) +
        ") must be in [2, 4096] for a conv-state cache: a kernel of 1 has no "
        "history to cache (derive the layout with Layout::derive)");
  if (layout.slidingWindow != layout.blockSize)
    return invalidArgument("sliding window (" + str(layout.slidingWindow) +
                           ") must equal the block size (" +
                           str(layout.blockSize) + "): both are the kernel");
  if (config.lookahead < 0 || config.lookahead > kMaxLookahead)
    return invalidArgument("lookahead (" + str(config.lookahead) +
                           ") must be in [0, 1024]");
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
      pool_(std::move(pool)), cache_(pool_.numBlocks()) {
  static_assert(sizeof(Sequence) == 64, "the hot record is one cache line");
  // Blocks that a range of `count` positions can span, at worst alignment.
  auto spanned = [&](int64_t count) {
    return count == 0 ? 0 : (count + blockSize_ - 2) / blockSize_ + 1;
  };
  // History blocks plus stored blocks (the overlap is not subtracted).
  maxHeld_ = spanned(history_) + spanned(history_ + lookahead_);
  divMagic_ = std::numeric_limits<uint64_t>::max() / blockSize_ + 1;
  pool_.setEvictionListener(&cache_);
}

int64_t SequenceManager::maxBlocksBetweenSteps() const {
  return (history_ + blockSize_ - 2) / blockSize_ + 1;
}

Status SequenceManager::unknownSequence(SequenceId id,
                                        const char *operation) const {
  return Status(StatusCode::NotFound,
                std::string(operation) + ": unknown sequence id " + str(id) +
                    " (never added, or already finished)");
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
  }
  Sequence &seq = seqs_[slot];
  uint32_t generation =
      (seq.generation & ~Sequence::kFinished) % kMaxGeneration + 1;
  seq = Sequence();
  seq.generation = generation;
  seq.slot = static_cast<uint32_t>(slot);
  seq.lastHash = config_.prefixSeed;
  chains_[slot].base = 0;
  chains_[slot].hashes.clear(); // keeps its capacity: sequences come and go
  ++numLive_;
  return slot;
}

//===----------------------------------------------------------------------===//
// Tokens and prefix hits
//===----------------------------------------------------------------------===//

void SequenceManager::appendTokensUnchecked(Sequence &seq,
                                            const int32_t *tokens,
                                            int64_t count) {
  seq.numTokens += count;
  if (!config_.enablePrefixCaching)
    return;
  auto chain = [&](const int32_t *block) {
    pushHash(seq, chainBlockHash(seq.lastHash, block, blockSize_));
  };
  int32_t *tail = tailTokens(seq);
  int64_t i = 0;
  // Complete the partial block, then hash whole blocks in place.
  if (seq.tailCount > 0) {
    while (i < count && seq.tailCount < blockSize_)
      tail[seq.tailCount++] = tokens[i++];
    if (seq.tailCount < blockSize_)
      return;
    chain(tail);
    seq.tailCount = 0;
  }
  for (; i + blockSize_ <= count; i += blockSize_)
    chain(tokens + i);
  for (; i < count; ++i)
    tail[seq.tailCount++] = tokens[i];
}

void SequenceManager::pushHash(Sequence &seq, uint64_t hash) {
  seq.lastHash = hash;
  HashChain &chain = chainOf(seq);
  // Drop the hashes of blocks before c/N (in batches, so the vector stays
  // small while decoding).
  int64_t keepFrom = blockOf(seq.numComputed);
  if (keepFrom - chain.base >= 32) {
    chain.hashes.erase(chain.hashes.begin(),
                       chain.hashes.begin() + (keepFrom - chain.base));
    chain.base = keepFrom;
  }
  chain.hashes.push_back(hash);
}

void SequenceManager::hashTail(Sequence &seq) {
  pushHash(seq, chainBlockHash(seq.lastHash, tailTokens(seq), blockSize_));
  seq.tailCount = 0;
  // In decode the block's tokens are known a step before its positions are
  // computed and it is registered: load its map slot meanwhile.
  cache_.prefetch(seq.lastHash);
}

Status SequenceManager::checkStartPosition(const HashChain &chain,
                                           int64_t numTokens,
                                           int64_t startPosition,
                                           int32_t &block) const {
  block = -1;
  if (startPosition == 0)
    return Status::ok();
  if (startPosition < 0 || startPosition % blockSize_ != 0)
    return invalidArgument("start position (" + str(startPosition) +
                           ") must be 0 or a positive multiple of the block "
                           "size N (" +
                           str(blockSize_) + ")");
  if (startPosition > numTokens)
    return outOfRange("start position (" + str(startPosition) +
                      ") exceeds the " + str(numTokens) + " known tokens");
  if (!config_.enablePrefixCaching)
    return failedPrecondition("start position (" + str(startPosition) +
                              ") needs a prefix-cache hit, but prefix caching "
                              "is disabled");
  int64_t logical = startPosition / blockSize_ - 1;
  if (logical < chain.base)
    return Status(StatusCode::NotFound,
                  "the hash of logical block " + str(logical) +
                      " (prefix of length " + str(startPosition) +
                      ") is no longer kept; resume with the token ids");
  block = cache_.find(chain.at(logical));
  if (block < 0)
    return Status(StatusCode::NotFound,
                  "no cached block for the prefix of length " +
                      str(startPosition) + " (logical block " + str(logical) +
                      "); ask longestCachedPrefix for a valid start position");
  return Status::ok();
}

void SequenceManager::startAt(Sequence &seq, int64_t startPosition,
                              int32_t block) {
  seq.state = SequenceState::Idle;
  seq.numComputed = startPosition;
  seq.numScheduled = 0;
  seq.numHeld = 0;
  seq.validFrom = 0;
  if (block >= 0) {
    // The conv history of startPosition is the last W-1 positions, all in
    // this one block (N = W).
    pool_.retainUnchecked(block);
    heldBlocks(seq)[0] = {static_cast<int32_t>(startPosition / blockSize_ - 1),
                          block};
    seq.numHeld = 1;
    seq.validFrom = startPosition - history_;
  }
}

StatusOr<SequenceId> SequenceManager::addSequence(const int32_t *tokens,
                                                  int64_t numTokens,
                                                  int64_t startPosition) {
  if (numTokens < 0 || numTokens > kMaxPosition)
    return invalidArgument("prompt length (" + str(numTokens) +
                           ") must be in [0, 2^31)");
  if (numTokens > 0 && tokens == nullptr)
    return invalidArgument("prompt of " + str(numTokens) +
                           " tokens has a null token pointer");
  if (seqs_.size() - freeSlots_.size() >= kMaxGeneration)
    return outOfRange("too many live sequences");
  HashChain prefix;
  if (config_.enablePrefixCaching && startPosition > 0)
    appendChainHashes(config_.prefixSeed, tokens,
                      std::min(startPosition, numTokens), blockSize_,
                      prefix.hashes);
  int32_t block = -1;
  if (Status status =
          checkStartPosition(prefix, numTokens, startPosition, block);
      !status)
    return status;
  int32_t slot = newSlot();
  Sequence &seq = seqs_[slot];
  appendTokensUnchecked(seq, tokens, numTokens);
  startAt(seq, startPosition, block);
  return (static_cast<SequenceId>(seq.generation) << 32) | slot;
}

Status SequenceManager::appendTokens(SequenceId id, const int32_t *tokens,
                                     int64_t count) {
  Sequence *seq = find(id);
  if (!seq)
    return unknownSequence(id, "append tokens");
  if (count < 0 || count > kMaxPosition - seq->numTokens)
    return invalidArgument("cannot append " + str(count) + " tokens to " +
                           seqName(id) + " with " + str(seq->numTokens) +
                           ": counts must be >= 0 and totals < 2^31");
  if (count > 0 && tokens == nullptr)
    return invalidArgument("appending " + str(count) +
                           " tokens with a null token pointer");
  appendTokensUnchecked(*seq, tokens, count);
  return Status::ok();
}

StatusOr<int64_t>
SequenceManager::longestCachedPrefix(const int32_t *tokens, int64_t numTokens,
                                     int64_t maxLength) const {
  if (numTokens < 0 || (numTokens > 0 && tokens == nullptr))
    return invalidArgument("token count (" + str(numTokens) +
                           ") must be >= 0 with a non-null pointer");
  if (maxLength < 0)
    return invalidArgument("max length (" + str(maxLength) + ") must be >= 0");
  if (!config_.enablePrefixCaching)
    return int64_t(0);
  int64_t blocks = std::min(maxLength, numTokens) / blockSize_;
  uint64_t hash = config_.prefixSeed;
  int64_t best = 0;
  for (int64_t j = 0; j < blocks; ++j) {
    hash = chainBlockHash(hash, tokens + j * blockSize_, blockSize_);
    if (cache_.find(hash) >= 0)
      best = (j + 1) * blockSize_;
  }
  return best;
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

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
      seq->numComputed < seq->numTokens) {
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
SequenceManager::planSchedule(const Sequence &seq, int64_t numTokens) const {
  SchedulePlan plan;
  int64_t c = seq.numComputed, end = c + numTokens;
  plan.storeFrom = std::max(
      c, end - history_ - (INKLING_MUTANT("no-lookahead") ? 0 : lookahead_));
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

Status SequenceManager::scheduleGeneral(SequenceId id, int64_t numTokens) {
  Sequence *found = find(id);
  if (!found)
    return unknownSequence(id, "schedule");
  Sequence &seq = *found;
  SchedulePlan plan;
  if (Status status = checkSchedule(seq, id, numTokens, plan); !status)
    return status;
  if (plan.needed > pool_.numFreeBlocks())
    return Status(StatusCode::OutOfBlocks,
                  seqName(id) + " needs " + str(plan.needed) +
                      " blocks to store positions [" + str(plan.storeFrom) +
                      ", " + str(seq.numComputed + numTokens) + "), but only " +
                      str(pool_.numFreeBlocks()) + " are free");
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
  seq.state = SequenceState::Scheduled;
  seq.numScheduled = static_cast<int32_t>(numTokens);
  seq.storeFrom = static_cast<int32_t>(plan.storeFrom);
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
  for (int64_t i = 0; i < count; ++i) {
    Sequence *seq = find(ids[i]);
    if (!seq)
      return unknownSequence(ids[i], "schedule batch");
    if (seq->buildStamp == buildStamp_)
      return invalidArgument(seqName(ids[i]) +
                             " appears twice in the batch (again at " + str(i) +
                             ")");
    seq->buildStamp = buildStamp_;
    SchedulePlan plan;
    if (Status status = checkSchedule(*seq, ids[i], numTokens[i], plan);
        !status)
      return status;
    needed += plan.needed;
  }
  if (needed > pool_.numFreeBlocks())
    return Status(StatusCode::OutOfBlocks,
                  "the batch of " + str(count) + " sequences needs " +
                      str(needed) + " blocks, but only " +
                      str(pool_.numFreeBlocks()) +
                      " are free; nothing was scheduled");
  for (int64_t i = 0; i < count; ++i)
    if (Status status = schedule(ids[i], numTokens[i]); !status)
      return internalError("schedule batch: validated entry " + str(i) +
                           " failed: " + status.toString());
  return Status::ok();
}

void SequenceManager::registerCompleteBlocks(Sequence &seq,
                                             int64_t oldComputed) {
  int64_t c = seq.numComputed;
  // Block j can be resumed from when its last W-1 positions hold accepted
  // values: (j+1)N - (W-1) >= validFrom and (j+1)N <= c. Blocks ending at or
  // before oldComputed were considered by earlier commits.
  int64_t begin =
      std::max(blockOf(oldComputed),
               blockOf(seq.validFrom + history_ + blockSize_ - 1) - 1);
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
    uint64_t hash = chainOf(seq).at(j);
    if (!pool_.hasCacheTag(block) && cache_.insert(hash, block))
      pool_.setCacheTagUnchecked(block, hash);
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
    Sequence *seq = find(ids[i]);
    if (!seq)
      return unknownSequence(ids[i], "commit batch");
    if (seq->buildStamp == buildStamp_)
      return invalidArgument(seqName(ids[i]) +
                             " appears twice in the batch (again at " + str(i) +
                             ")");
    seq->buildStamp = buildStamp_;
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
      numAccepted == 1 && seq->copySrc < 0 &&
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
      if (computed - history_ >= seq->validFrom &&
          !pool_.hasCacheTagUnchecked(done.physical)) {
        // Usually the last hash (only the sampled token is known ahead).
        const HashChain &chain = chainOf(*seq);
        bool isLast = blockOf(seq->numTokens) == done.logical + 1;
        if (isLast || done.logical >= chain.base) {
          uint64_t hash = isLast ? seq->lastHash : chain.at(done.logical);
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

  if (numNewTokens == 1 && config_.enablePrefixCaching) { // decode
    ++seq.numTokens;
    tailTokens(seq)[seq.tailCount++] = newTokens[0];
    if (seq.tailCount == blockSize_)
      hashTail(seq);
  } else {
    appendTokensUnchecked(seq, newTokens, numNewTokens);
  }
  seq.numComputed = computed;
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

//===----------------------------------------------------------------------===//
// Preemption, resume, finish, fork
//===----------------------------------------------------------------------===//

void SequenceManager::releaseAll(Sequence &seq) {
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
  releaseAll(seq);
  seq.state = SequenceState::Preempted;
  seq.numComputed = seq.validFrom = seq.numScheduled = seq.storeFrom = 0;
  return Status::ok();
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

Status SequenceManager::resume(SequenceId id, int64_t startPosition) {
  StatusOr<Sequence *> found = preemptedSequence(id);
  if (!found)
    return found.status();
  Sequence &seq = **found;
  int32_t block = -1;
  if (Status status =
          checkStartPosition(chainOf(seq), seq.numTokens, startPosition, block);
      !status)
    return status;
  startAt(seq, startPosition, block);
  return Status::ok();
}

StatusOr<int64_t>
SequenceManager::longestCachedPrefix(SequenceId id, int64_t maxLength) const {
  const Sequence *seq = find(id);
  if (!seq)
    return unknownSequence(id, "longest cached prefix");
  if (maxLength < 0)
    return invalidArgument("max length (" + str(maxLength) + ") must be >= 0");
  if (!config_.enablePrefixCaching)
    return int64_t(0);
  const HashChain &chain = chainOf(*seq);
  int64_t last = std::min(maxLength / blockSize_, chain.end()) - 1;
  for (int64_t j = last; j >= chain.base; --j)
    if (cache_.find(chain.at(j)) >= 0)
      return (j + 1) * blockSize_;
  return int64_t(0);
}

Status SequenceManager::resume(SequenceId id, const int32_t *tokens,
                               int64_t numTokens, int64_t startPosition) {
  StatusOr<Sequence *> found = preemptedSequence(id);
  if (!found)
    return found.status();
  Sequence &seq = **found;
  if (numTokens != seq.numTokens)
    return invalidArgument("resuming " + seqName(id) + " needs its " +
                           str(seq.numTokens) + " known token ids, got " +
                           str(numTokens));
  HashChain rebuilt;
  if (config_.enablePrefixCaching) {
    if (numTokens > 0 && tokens == nullptr)
      return invalidArgument("resuming " + seqName(id) +
                             " with a null token pointer");
    appendChainHashes(config_.prefixSeed, tokens, numTokens, blockSize_,
                      rebuilt.hashes);
    // The last block hash names the whole prefix; the partial block is kept
    // as tokens: together they check every token id.
    int64_t whole = static_cast<int64_t>(rebuilt.hashes.size()) * blockSize_;
    uint64_t last =
        rebuilt.hashes.empty() ? config_.prefixSeed : rebuilt.hashes.back();
    if (last != seq.lastHash ||
        !std::equal(tokens + whole, tokens + numTokens, tailTokens(seq)))
      return invalidArgument("the token ids given to resume " + seqName(id) +
                             " are not the sequence's own");
  }
  int32_t block = -1;
  if (Status status =
          checkStartPosition(rebuilt, numTokens, startPosition, block);
      !status)
    return status;
  if (config_.enablePrefixCaching)
    chainOf(seq) = std::move(rebuilt);
  startAt(seq, startPosition, block);
  return Status::ok();
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
  freeSlots_.push_back(static_cast<int32_t>(&seq - seqs_.data()));
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
  return (static_cast<SequenceId>(child.generation) << 32) | slot;
}

//===----------------------------------------------------------------------===//
// Step metadata
//===----------------------------------------------------------------------===//

StatusOr<StepBuffers>
SequenceManager::bindStepBuffers(const StepBufferSpec &spec) const {
  return StepBuffers::bind(spec, maxHeld_, this);
}

StatusOr<StepInfo> SequenceManager::buildStep(const SequenceId *ids,
                                              int64_t numSequences,
                                              const StepShape &shape,
                                              StepBuffers &buffers) {
  const StepBufferSpec &spec = buffers.spec();
  // The buffers record what this manager wrote into them.
  if (buffers.owner() != this)
    return invalidArgument("step buffers were bound by another manager (or "
                           "by StepBuffers::bind): bind them with this "
                           "manager's bindStepBuffers");
  if (numSequences < 0 || (numSequences > 0 && ids == nullptr))
    return invalidArgument("batch of " + str(numSequences) +
                           " sequences needs a non-null id array");
  int64_t numRows = shape.numRows == 0 ? numSequences : shape.numRows;
  if (numRows < numSequences)
    return invalidArgument("padded row count (" + str(shape.numRows) +
                           ") is smaller than the batch (" + str(numSequences) +
                           " sequences)");
  if (numRows > spec.maxRows)
    return outOfRange("step needs " + str(numRows) +
                      " rows, but the buffers have " + str(spec.maxRows));

  // Validate everything before writing anything.
  ++buildStamp_;
  if (static_cast<int64_t>(batch_.size()) < numSequences)
    batch_.resize(numSequences);
  int64_t numTokens = 0, numCopies = 0;
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
  int64_t paddedTokens = shape.numTokens == 0 ? numTokens : shape.numTokens;
  if (paddedTokens < numTokens)
    return invalidArgument("padded token count (" + str(shape.numTokens) +
                           ") is smaller than the step's " + str(numTokens) +
                           " tokens");
  if (paddedTokens > spec.maxTokens)
    return outOfRange("step needs " + str(paddedTokens) +
                      " slot_mapping entries, but the buffer has " +
                      str(spec.maxTokens));
  if (numCopies > spec.maxCopies)
    return outOfRange("step has " + str(numCopies) +
                      " copy-on-write copies, but block_copies has room for " +
                      str(spec.maxCopies));

  int32_t *queryStartLoc = spec.queryStartLoc;
  int32_t *numComputed = spec.numComputed;
  int64_t token = 0, copy = 0;
  for (int64_t b = 0; b < numSequences; ++b) {
    const Sequence &seq = *batch_[b];
    const MappedBlock *held = heldBlocks(seq);
    int64_t c = seq.numComputed, end = c + seq.numScheduled;
    queryStartLoc[b] = static_cast<int32_t>(token);
    numComputed[b] = static_cast<int32_t>(c);
    buffers.writeRow(b, held, seq.numHeld);

    int64_t *slots = spec.slotMapping + token;
    if (seq.numScheduled == 1) { // decode: position c, in the last block
      const MappedBlock &last = held[seq.numHeld - 1];
      slots[0] = int64_t(last.physical) * blockSize_ +
                 (c - int64_t(last.logical) * blockSize_);
    } else {
      // Tokens before storeFrom are not stored; the stored range's blocks
      // are the last entries of the window, in order.
      std::fill(slots, slots + (seq.storeFrom - c), int64_t(-1));
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

  StepInfo info;
  info.numSequences = numSequences;
  info.numRows = numRows;
  info.numTokens = numTokens;
  info.numPaddedTokens = paddedTokens;
  info.numCopies = numCopies;
  return info;
}

//===----------------------------------------------------------------------===//
// Introspection
//===----------------------------------------------------------------------===//

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
  info.hasCopy = seq.copySrc >= 0;
  if (info.hasCopy)
    info.copy = {seq.copySrc, seq.copyDst};
  return info;
}

Status SequenceManager::checkInvariants() const {
  if (Status status = pool_.checkInvariants(); !status)
    return status;
  std::vector<int64_t> references(pool_.numBlocks(), 0);
  int64_t live = 0;
  for (size_t slot = 0; slot < seqs_.size(); ++slot) {
    const Sequence &seq = seqs_[slot];
    if (!seq.live())
      continue;
    ++live;
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
    if (seq.state == SequenceState::Scheduled) {
      for (int32_t i = 0; i < seq.numHeld; ++i) {
        if (held[i].logical < seq.storeFrom / blockSize_)
          continue;
        int32_t block = held[i].physical;
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
  }
  if (live != numLive_)
    return internalError("live sequence count " + str(numLive_) +
                         " but found " + str(live));
  for (int32_t block = 1; block < pool_.numBlocks(); ++block)
    if (references[block] != pool_.refCount(block))
      return internalError("block " + str(block) + " has reference count " +
                           str(pool_.refCount(block)) + " but " +
                           str(references[block]) + " holders");
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
      os << " tag=" << std::hex << pool_.cacheTag(block) << std::dec;
    os << ')';
  }
  os << "\ncache:";
  for (auto [hash, block] : cache_.entries())
    os << ' ' << std::hex << hash << std::dec << "->" << block;
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
    os << "] hashes=[" << chainOf(seq).base << ", " << chainOf(seq).end()
       << ")/" << std::hex << seq.lastHash << std::dec;
    os << " tail=[";
    for (int32_t i = 0; i < seq.tailCount; ++i)
      os << tailTokens(seq)[i] << ' ';
    os << "]\n";
  }
  os << "free slots=[";
  for (int32_t slot : freeSlots_)
    os << slot << ' ';
  os << "]\n";
  return os.str();
}

} // namespace inkling
