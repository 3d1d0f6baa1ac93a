//===- PrefixCache.cpp - Hash chain over token blocks -> cached block -----===//

#include "inkling/Runtime/PrefixCache.h"

#include <algorithm>
#include <cstring>

// Header-only mode of Debian's libxxhash: XXH3 inlines for short blocks.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace inkling {

namespace {
PrefixKey toKey(XXH128_hash_t hash) { return {hash.low64, hash.high64}; }

/// The parent key as the chain hashes it: lo, then hi, little-endian (the
/// runtime, like the token ids it hashes, assumes a little-endian host).
void storeKey(PrefixKey key, unsigned char *out) {
  std::memcpy(out, &key.lo, 8);
  std::memcpy(out + 8, &key.hi, 8);
}

/// Inputs up to this size are gathered on the stack and hashed in one call
/// (XXH3's short-input paths); longer blocks (N > 252) stream, which XXH3
/// defines to give the same value.
constexpr size_t kOneShotBytes = 1024;
} // namespace

PrefixKey chainRoot(uint64_t prefixSeed, const uint8_t *extraKeys,
                    int64_t numExtraKeyBytes) {
  return toKey(XXH3_128bits_withSeed(
      extraKeys, static_cast<size_t>(numExtraKeyBytes), prefixSeed));
}

PrefixKey chainBlockHash(PrefixKey parent, const int32_t *tokens,
                         int64_t count) {
  size_t tokenBytes = static_cast<size_t>(count) * 4;
  if (16 + tokenBytes <= kOneShotBytes) {
    alignas(16) unsigned char input[kOneShotBytes];
    storeKey(parent, input);
    std::memcpy(input + 16, tokens, tokenBytes);
    return toKey(XXH3_128bits(input, 16 + tokenBytes));
  }
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  unsigned char head[16];
  storeKey(parent, head);
  XXH3_128bits_update(&state, head, sizeof(head));
  XXH3_128bits_update(&state, tokens, tokenBytes);
  return toKey(XXH3_128bits_digest(&state));
}

void appendChainHashes(PrefixKey parent, const int32_t *tokens,
                       int64_t numTokens, int64_t blockSize,
                       std::vector<PrefixKey> &out) {
  PrefixKey key = parent;
  for (int64_t start = 0; start + blockSize <= numTokens; start += blockSize) {
    key = chainBlockHash(key, tokens + start, blockSize);
    out.push_back(key);
  }
}

PrefixCache::PrefixCache(int32_t numBlocks) {
  maxEntries_ = std::max<int64_t>(numBlocks, 1);
  uint64_t slots = 2;
  while (slots < static_cast<uint64_t>(2 * maxEntries_))
    slots <<= 1;
  entries_.assign(slots, Entry());
  mask_ = slots - 1;
}

bool PrefixCache::insert(PrefixKey key, int32_t block) {
  if (block < 0 || size_ >= maxEntries_)
    return false;
  uint64_t slot = key.lo & mask_;
  for (; entries_[slot].block >= 0; slot = (slot + 1) & mask_)
    if (entries_[slot].key == key)
      return false;
  entries_[slot] = Entry{key, block};
  ++size_;
  return true;
}

bool PrefixCache::erase(PrefixKey key, int32_t block) {
  uint64_t slot = key.lo & mask_;
  for (;; slot = (slot + 1) & mask_) {
    if (entries_[slot].block < 0)
      return false;
    if (entries_[slot].key == key)
      break;
  }
  if (entries_[slot].block != block)
    return false;
  // Backward-shift deletion: move later entries of the probe run into the
  // hole when their home slot does not lie (cyclically) after the hole.
  uint64_t hole = slot;
  for (uint64_t next = (hole + 1) & mask_; entries_[next].block >= 0;
       next = (next + 1) & mask_) {
    uint64_t home = entries_[next].key.lo & mask_;
    bool homeInGap = ((next - home) & mask_) < ((next - hole) & mask_);
    if (homeInGap)
      continue;
    entries_[hole] = entries_[next];
    hole = next;
  }
  entries_[hole] = Entry();
  --size_;
  return true;
}

void PrefixCache::clear() {
  std::fill(entries_.begin(), entries_.end(), Entry());
  size_ = 0;
}

std::vector<std::pair<PrefixKey, int32_t>> PrefixCache::entries() const {
  std::vector<std::pair<PrefixKey, int32_t>> result;
  result.reserve(size_);
  for (const Entry &entry : entries_)
    if (entry.block >= 0)
      result.emplace_back(entry.key, entry.block);
  std::sort(result.begin(), result.end());
  return result;
}

} // namespace inkling
