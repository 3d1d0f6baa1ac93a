//===- SequenceManager.cpp - Paged block tables of one sconv group --------===//

#include "inkling/Runtime/SequenceManager.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
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

/// span(count): the blocks `count` consecutive positions span, at worst
/// alignment: ceil((count-1)/N) + 1 (0 for none).
int64_t spanBlocks(int64_t count, int64_t blockSize) {
  return count == 0 ? 0 : (count + blockSize - 2) / blockSize + 1;
}

std::string str(int64_t value) { return std::to_string(value); }
// A key as 32 hex digits, high half first.
std::string hex(PrefixKey key) {
  char text[33];
  std::snprintf(text, sizeof(text), "%016" PRIx64 "%016" PRIx64, key.hi,
                key.lo);
  return text;
}
std::string seqName(SequenceId id) { return "sequence " + str(id); }

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

const char *prefixPolicyName(PrefixPolicy policy) {
  switch (policy) {
  case PrefixPolicy::Window:
    return "window";
  case PrefixPolicy::Snapshots:
    return "snapshots";
  case PrefixPolicy::EveryBlock:
    return "every-block";
  }
  return "?";
}

StatusOr<PrefixPolicy> parsePrefixPolicy(const std::string &name) {
  for (PrefixPolicy policy : {PrefixPolicy::Window, PrefixPolicy::Snapshots,
                              PrefixPolicy::EveryBlock})
    if (name == prefixPolicyName(policy))
      return policy;
  return invalidArgument("prefix policy '" + name +
                         "' is not one of window, snapshots, every-block");
}

namespace {
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

Status checkExtraKeys(const uint8_t *keys, int64_t bytes) {
  if (bytes < 0 || bytes > kMaxExtraKeyBytes)
    return invalidArgument("extra keys of " + str(bytes) +
                           " bytes: must be in [0, 4096] bytes (hash larger "
                           "keys first)");
  if (bytes > 0 && keys == nullptr)
    return invalidArgument("extra keys of " + str(bytes) +
                           " bytes have a null pointer");
  return Status::ok();
}
} // namespace

//===----------------------------------------------------------------------===//
// Construction and lookup
//===----------------------------------------------------------------------===//

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
      cache_(pool_.numBlocks()) {
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
  }
  Sequence &seq = seqs_[slot];
  uint32_t generation =
      (seq.generation & ~Sequence::kFinished) % kMaxGeneration + 1;
  seq = Sequence();
  seq.generation = generation;
  seq.lastHash = seeds_[slot] = defaultRoot_;
  cachePoints_[slot].clear();
  hitFrom_[slot] = 0;
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
  // The running key stays in registers (a 16-byte reload of what pushHash
  // just stored would stall on store forwarding).
  PrefixKey key = seq.lastHash;
  auto chain = [&](const int32_t *block) {
    key = chainBlockHash(key, block, blockSize_);
    pushHash(seq, key);
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

void SequenceManager::pushHash(Sequence &seq, PrefixKey hash) {
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
                                           ResumeBlocks &blocks) const {
  blocks.count = 0;
  blocks.physical.clear();
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
  // The conv history of startPosition is its last W-1 positions: the
  // blocks [firstHistoryBlock, p/N) (one when N >= W-1).
  int64_t last = startPosition / blockSize_ - 1;
  int64_t first = firstHistoryBlock(startPosition);
  if (first < chain.base)
    return notFound("the hash of logical block " + str(first) +
                    " (prefix of length " + str(startPosition) +
                    ") is no longer kept; resume with the token ids");
  blocks.first = first;
  for (int64_t logical = first; logical <= last; ++logical) {
    int32_t block = cache_.find(chain.at(logical));
    if (block < 0)
      return notFound("no cached block for the prefix of length " +
                      str(startPosition) + " (logical block " + str(logical) +
                      "); ask longestCachedPrefix for a valid start "
                      "position");
    blocks.physical.push_back(block);
    ++blocks.count;
  }
  return Status::ok();
}

void SequenceManager::startAt(Sequence &seq, int64_t startPosition,
                              const ResumeBlocks &blocks) {
  hitFrom_[slotOf(seq)] = static_cast<int32_t>(startPosition);
  seq.state = SequenceState::Idle;
  seq.numComputed = startPosition;
  seq.numScheduled = 0;
  seq.numHeld = 0;
  seq.validFrom = 0;
  // A hit holds the blocks of the W-1 positions before startPosition.
  for (int32_t i = 0; i < blocks.count; ++i) {
    pool_.retainUnchecked(blocks.physical[i]);
    heldBlocks(seq)[i] = {static_cast<int32_t>(blocks.first + i),
                          blocks.physical[i]};
  }
  seq.numHeld = blocks.count;
  if (blocks.count > 0)
    seq.validFrom = std::max<int64_t>(0, startPosition - history_);
}

StatusOr<SequenceId> SequenceManager::addSequence(const int32_t *tokens,
                                                  int64_t numTokens,
                                                  int64_t startPosition) {
  return addSequence(tokens, numTokens, startPosition, nullptr, 0);
}

StatusOr<SequenceId>
SequenceManager::addSequence(const int32_t *tokens, int64_t numTokens,
                             int64_t startPosition, const int64_t *cachePoints,
                             int64_t numCachePoints, const uint8_t *extraKeys,
                             int64_t numExtraKeyBytes) {
  if (numTokens < 0 || numTokens > kMaxPosition)
    return invalidArgument("prompt length (" + str(numTokens) +
                           ") must be in [0, 2^31)");
  if (numTokens > 0 && tokens == nullptr)
    return invalidArgument("prompt of " + str(numTokens) +
                           " tokens has a null token pointer");
  if (seqs_.size() - freeSlots_.size() >= kMaxGeneration)
    return outOfRange("too many live sequences");
  if (numCachePoints < 0 || (numCachePoints > 0 && cachePoints == nullptr))
    return invalidArgument("cache point count (" + str(numCachePoints) +
                           ") must be >= 0 with a non-null pointer");
  for (int64_t i = 0; i < numCachePoints; ++i) {
    int64_t point = cachePoints[i];
    if (point < 1 || point > numTokens)
      return outOfRange("cache point " + str(i) + " (" + str(point) +
                        ") must be in [1, " + str(numTokens) +
                        "], the prompt's positions");
    if (i > 0 && point <= cachePoints[i - 1])
      return invalidArgument("cache point " + str(i) + " (" + str(point) +
                             ") must be greater than the one before (" +
                             str(cachePoints[i - 1]) + "): sorted, no repeats");
  }
  if (Status status = checkExtraKeys(extraKeys, numExtraKeyBytes); !status)
    return status;
  PrefixKey seed = chainRoot(config_.prefixSeed, extraKeys, numExtraKeyBytes);
  HashChain prefix;
  if (config_.enablePrefixCaching && startPosition > 0)
    appendChainHashes(seed, tokens, std::min(startPosition, numTokens),
                      blockSize_, prefix.hashes);
  ResumeBlocks blocks;
  if (Status status =
          checkStartPosition(prefix, numTokens, startPosition, blocks);
      !status)
    return status;
  int32_t slot = newSlot();
  Sequence &seq = seqs_[slot];
  seeds_[slot] = seq.lastHash = seed;
  cachePoints_[slot].assign(cachePoints, cachePoints + numCachePoints);
  // The blocks before a hit are hashed already: continue the chain there.
  int64_t hashed = static_cast<int64_t>(prefix.hashes.size()) * blockSize_;
  if (hashed > 0) {
    chainOf(seq).hashes.assign(prefix.hashes.begin(), prefix.hashes.end());
    seq.lastHash = prefix.hashes.back();
    seq.numTokens = static_cast<int32_t>(hashed);
  }
  appendTokensUnchecked(seq, tokens + hashed, numTokens - hashed);
  startAt(seq, startPosition, blocks);
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
  return longestCachedPrefix(tokens, numTokens, maxLength, nullptr, 0);
}

StatusOr<int64_t> SequenceManager::longestCachedPrefix(
    const int32_t *tokens, int64_t numTokens, int64_t maxLength,
    const uint8_t *extraKeys, int64_t numExtraKeyBytes) const {
  if (Status status = checkExtraKeys(extraKeys, numExtraKeyBytes); !status)
    return status;
  if (numTokens < 0 || (numTokens > 0 && tokens == nullptr))
    return invalidArgument("token count (" + str(numTokens) +
                           ") must be >= 0 with a non-null pointer");
  if (maxLength < 0)
    return invalidArgument("max length (" + str(maxLength) + ") must be >= 0");
  if (!config_.enablePrefixCaching)
    return int64_t(0);
  int64_t blocks = std::min(maxLength, numTokens) / blockSize_;
  PrefixKey hash = chainRoot(config_.prefixSeed, extraKeys, numExtraKeyBytes);
  int64_t best = 0;
  // A resume at (j+1)N needs the blocks of its W-1 history positions: the
  // run of consecutive cached blocks ending at j must reach back to
  // firstHistoryBlock((j+1)N).
  int64_t runStart = 0;
  for (int64_t j = 0; j < blocks; ++j) {
    hash = chainBlockHash(hash, tokens + j * blockSize_, blockSize_);
    if (cache_.find(hash) < 0) {
      runStart = j + 1;
      continue;
    }
    if (runStart <= firstHistoryBlock((j + 1) * blockSize_))
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
  std::vector<int64_t> &bounds = boundScratch_;
  bounds.clear();
  if (config_.prefixPolicy == PrefixPolicy::EveryBlock) {
    for (int64_t b = top; b > c; b -= blockSize_)
      bounds.push_back(b);
  } else {
    bounds.push_back(top); // the chunk's end
    int64_t every = config_.snapshotEvery * blockSize_;
    for (int64_t b = top - top % every; b > c; b -= every)
      bounds.push_back(b);
    // Below S*N, boundaries at N * 2^k: a shared prompt shorter than S
    // blocks still gets a first hit (whose frontier then finds its end).
    for (int64_t b = blockSize_; b < every && b <= top; b *= 2)
      if (b > c)
        bounds.push_back(b);
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
        bounds.push_back(b);
    for (int32_t point : cachePoints_[slotOf(seq)]) {
      int64_t b = point - point % blockSize_;
      if (b > c && b <= top)
        bounds.push_back(b);
    }
    std::sort(bounds.begin(), bounds.end(), std::greater<int64_t>());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  }
  const HashChain &chain = chainOf(seq);
  int64_t storeFrom = plan.storeFrom;
  for (int64_t b : bounds) {
    int64_t firstBlock = firstHistoryBlock(b), lastBlock = b / blockSize_ - 1;
    if (b - history_ >= storeFrom)
      continue; // the window stores it
    if (firstBlock < chain.base)
      continue; // hashes dropped: cannot be registered
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
      continue;
    }
    snap.ranges.push_back({static_cast<int32_t>(lo), static_cast<int32_t>(b)});
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
  for (const SnapshotRange &range : snap.ranges)
    snap.blocks += blockOf(range.to - 1) - blockOf(range.from) + 1;
  // Snapshots are optional: when the free blocks run short, the lowest go
  // first, so they never turn a schedule into OutOfBlocks. The snapshots
  // policy also keeps a step's snapshot blocks within maxBlocksPerSequence()
  // (every-block stores what it must, like vLLM).
  int64_t cap = config_.prefixPolicy == PrefixPolicy::Snapshots
                    ? maxSnapshotBlocks()
                    : std::numeric_limits<int64_t>::max();
  size_t drop = 0;
  while (drop < snap.ranges.size() &&
         (plan.needed + snap.blocks > budget || snap.blocks > cap)) {
    const SnapshotRange &range = snap.ranges[drop++];
    snap.blocks -= blockOf(range.to - 1) - blockOf(range.from) + 1;
  }
  snap.ranges.erase(snap.ranges.begin(), snap.ranges.begin() + drop);
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

//===----------------------------------------------------------------------===//
// Preemption, resume, finish, fork
//===----------------------------------------------------------------------===//

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
      if (cache_.insert(hash, blocks[i].physical))
        pool_.setCacheTagUnchecked(blocks[i].physical, hash);
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

Status SequenceManager::setPrefixPolicy(PrefixPolicy policy,
                                        int64_t snapshotEvery) {
  if (Status status = checkPrefixPolicy(policy, snapshotEvery); !status)
    return status;
  config_.prefixPolicy = policy;
  config_.snapshotEvery = snapshotEvery;
  return Status::ok();
}

void SequenceManager::releaseAll(Sequence &seq) {
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
  ResumeBlocks blocks;
  if (Status status = checkStartPosition(chainOf(seq), seq.numTokens,
                                         startPosition, blocks);
      !status)
    return status;
  startAt(seq, startPosition, blocks);
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
  for (int64_t j = last; j >= chain.base; --j) {
    int64_t first = firstHistoryBlock((j + 1) * blockSize_);
    if (first < chain.base)
      break;
    int64_t k = j;
    while (k >= first && cache_.find(chain.at(k)) >= 0)
      --k;
    if (k < first)
      return (j + 1) * blockSize_;
  }
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
    appendChainHashes(seedOf(seq), tokens, numTokens, blockSize_,
                      rebuilt.hashes);
    // The last block hash names the whole prefix; the partial block is kept
    // as tokens: together they check every token id.
    int64_t whole = static_cast<int64_t>(rebuilt.hashes.size()) * blockSize_;
    PrefixKey last =
        rebuilt.hashes.empty() ? seedOf(seq) : rebuilt.hashes.back();
    if (last != seq.lastHash ||
        !std::equal(tokens + whole, tokens + numTokens, tailTokens(seq)))
      return invalidArgument("the token ids given to resume " + seqName(id) +
                             " are not the sequence's own");
  }
  ResumeBlocks blocks;
  if (Status status =
          checkStartPosition(rebuilt, numTokens, startPosition, blocks);
      !status)
    return status;
  if (config_.enablePrefixCaching)
    chainOf(seq) = std::move(rebuilt);
  startAt(seq, startPosition, blocks);
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
    // Snapshot blocks (below the window) in the row too: every stored slot
    // is then block_table[b][p / N] * N + p % N, which checked kernels
    // require; the convs never read them (they lie at or above c).
    const std::vector<MappedBlock> &snapshots = snapBlocks_[slotOf(seq)];
    buffers.writeExtras(b, held, seq.numHeld, snapshots.data(),
                        snapshots.size());

    int64_t *slots = spec.slotMapping + token;
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
  info.snapshotBlocks = snapBlocks_[slotOf(seq)];
  info.hasCopy = seq.copySrc >= 0;
  if (info.hasCopy)
    info.copy = {seq.copySrc, seq.copyDst};
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
    // Snapshot blocks: only during a step, fresh (one reference, no tag),
    // below the window, covering their ranges in order.
    const std::vector<MappedBlock> &snaps = snapBlocks_[slot];
    if (!snaps.empty() && seq.state != SequenceState::Scheduled)
      return internalError(name + " holds snapshot blocks outside a step");
    int64_t expectedSnaps = 0;
    for (const SnapshotRange &range : snapRanges_[slot]) {
      if (range.from < c || range.to > seq.storeFrom ||
          range.from >= range.to || range.to % blockSize_ != 0)
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
      if (pool_.refCount(snap.physical) != 1 ||
          pool_.hasCacheTag(snap.physical))
        return internalError(name + " snapshots into shared or cached block " +
                             str(snap.physical));
      ++references[snap.physical];
      ++totalSnaps;
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
  if (totalSnaps != numSnapshotBlocks_)
    return internalError("snapshot block count " + str(numSnapshotBlocks_) +
                         " but sequences hold " + str(totalSnaps));
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
    os << "] seed=" << hex(seeds_[slot]);
    os << " points=" << cachePoints_[slot].size();
    os << " hashes=[" << chainOf(seq).base << ", " << chainOf(seq).end() << ")/"
       << hex(seq.lastHash);
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
