//===- SequencePrefix.cpp - Tokens, key chains and prefix hits ------------===//
//
// A sequence's token ids and their key chain (PrefixCache.h), kept for the
// window only, and everything that starts a sequence at a prefix hit: adding,
// appending, the longest cached prefix, resuming.
//
//===----------------------------------------------------------------------===//

#include "SequenceManagerInternal.h"

#include <algorithm>

namespace inkling {

using namespace sequence_internal;

namespace {
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
  notePendingReads(seq, blocks);
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
  // With the EAGLE rule the run must also hold block j itself, and the hit
  // is jN: vLLM's "one more contiguous block, then drop the last".
  int64_t drop = config_.dropLastMatchedBlock ? 1 : 0;
  int64_t runStart = 0;
  for (int64_t j = 0; j < blocks; ++j) {
    hash = chainBlockHash(hash, tokens + j * blockSize_, blockSize_);
    if (cache_.find(hash) < 0) {
      runStart = j + 1;
      continue;
    }
    int64_t point = (j + 1 - drop) * blockSize_;
    // The mutant drops a block off the plain hit without asking for the
    // extra one.
    int64_t needs = INKLING_MUTANT("eagle-plain-minus-block")
                        ? (j + 1) * blockSize_
                        : point;
    if (point > 0 && runStart <= firstHistoryBlock(needs)) {
      best = point;
      if (INKLING_MUTANT("shortest-hit")) // the first hit, not the longest
        break;
    }
  }
  return best;
}

Status SequenceManager::longestCachedPrefixBatch(const int32_t *tokens,
                                                 const int64_t *tokenOffsets,
                                                 const int64_t *maxLengths,
                                                 int64_t count,
                                                 int64_t *out) const {
  if (count < 0 || (count > 0 && (!tokenOffsets || !maxLengths || !out)))
    return invalidArgument("lookup batch of " + str(count) +
                           " prompts needs non-null offset, max length and "
                           "output arrays");
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = tokenOffsets[i], to = tokenOffsets[i + 1];
    if (from < 0 || to < from)
      return invalidArgument("token offsets [" + str(from) + ", " + str(to) +
                             ") of lookup entry " + str(i) +
                             " are not a range");
    if (to > from && !tokens)
      return invalidArgument("token array is null");
    if (maxLengths[i] < 0)
      return invalidArgument("max length (" + str(maxLengths[i]) +
                             ") of lookup entry " + str(i) + " must be >= 0");
  }
  // Valid entries cannot fail: write as we go.
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = tokenOffsets[i];
    StatusOr<int64_t> hit =
        longestCachedPrefix(tokens ? tokens + from : nullptr,
                            tokenOffsets[i + 1] - from, maxLengths[i]);
    if (!hit)
      return internalError("lookup batch: validated entry " + str(i) +
                           " failed: " + hit.status().toString());
    out[i] = *hit;
  }
  return Status::ok();
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
  notePendingReads(seq, blocks);
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
  int64_t drop = config_.dropLastMatchedBlock ? 1 : 0; // the EAGLE rule
  int64_t last = std::min(maxLength / blockSize_, chain.end()) - 1;
  for (int64_t j = last; j >= chain.base; --j) {
    int64_t point = (j + 1 - drop) * blockSize_;
    if (point == 0)
      break;
    int64_t first = firstHistoryBlock(point);
    if (first < chain.base)
      break;
    int64_t k = j;
    while (k >= first && cache_.find(chain.at(k)) >= 0)
      --k;
    if (k < first)
      return point;
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
  notePendingReads(seq, blocks);
  return Status::ok();
}

} // namespace inkling
