//===- PrefixCache.cpp - Hash chain over token blocks -> cached block -----===//

#include "inkling/Runtime/PrefixCache.h"

#include <algorithm>

// Header-only mode of Debian's libxxhash: XXH3 inlines for 16-byte blocks.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace inkling {

uint64_t chainBlockHash(uint64_t parent, const int32_t *tokens, int64_t count) {
  return XXH3_64bits_withSeed(tokens, static_cast<size_t>(count) * 4, parent);
}

void appendChainHashes(uint64_t parent, const int32_t *tokens,
                       int64_t numTokens, int64_t blockSize,
                       std::vector<uint64_t> &out) {
  for (int64_t start = 0; start + blockSize <= numTokens; start += blockSize) {
    parent = chainBlockHash(parent, tokens + start, blockSize);
    out.push_back(parent);
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

bool PrefixCache::insert(uint64_t hash, int32_t block) {
  if (block < 0 || size_ >= maxEntries_)
    return false;
  uint64_t slot = hash & mask_;
  for (; entries_[slot].block >= 0; slot = (slot + 1) & mask_)
    if (entries_[slot].hash == hash)
      return false;
  entries_[slot] = Entry{hash, block};
  ++size_;
  return true;
}

bool PrefixCache::erase(uint64_t hash, int32_t block) {
  uint64_t slot = hash & mask_;
  for (;; slot = (slot + 1) & mask_) {
    if (entries_[slot].block < 0)
      return false;
    if (entries_[slot].hash == hash)
      break;
  }
  if (entries_[slot].block != block)
    return false;
  // Backward-shift deletion: move later entries of the probe run into the
  // hole when their home slot does not lie (cyclically) after the hole.
  uint64_t hole = slot;
  for (uint64_t next = (hole + 1) & mask_; entries_[next].block >= 0;
       next = (next + 1) & mask_) {
    uint64_t home = entries_[next].hash & mask_;
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

std::vector<std::pair<uint64_t, int32_t>> PrefixCache::entries() const {
  std::vector<std::pair<uint64_t, int32_t>> result;
  result.reserve(size_);
  for (const Entry &entry : entries_)
    if (entry.block >= 0)
      result.emplace_back(entry.hash, entry.block);
  std::sort(result.begin(), result.end());
  return result;
}

} // namespace inkling
