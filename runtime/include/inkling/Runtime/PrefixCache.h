//===- PrefixCache.h - Hash chain over blocks -> cached block ---*- C++ -*-===//
//
// Prefix caching for the sconv cache (docs/Design.md section 6). The key of
// logical block j of a token sequence is a hash chain over whole token blocks:
//   hash_j = XXH3_64(tokens of block j, seed = hash_{j-1}),
//   hash_-1 = the cache's root seed,
// so a key names the whole prefix [0, (j+1)N), not just the block. Only the
// window is kept, so a sequence can resume at position p (a multiple of N)
// when the blocks holding the conv history of p, its last W-1 positions, are
// cached: blocks [max(0, p-(W-1))/N, p/N), one block when N >= W-1, up to
// ceil((W-1)/N) when N is smaller.
//
// The map is open addressing with linear probing and backward-shift
// deletion: no allocation after construction, no tombstones. It holds at most
// one entry per pool block, and the table has at least twice as many slots.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_PREFIXCACHE_H
#define INKLING_RUNTIME_PREFIXCACHE_H

#include "inkling/Runtime/BlockPool.h"

#include <cstdint>
#include <vector>

namespace inkling {

/// The root of every hash chain unless a cache is configured with another
/// (e.g. to keep models or adapters apart).
inline constexpr uint64_t kDefaultPrefixSeed = 0x696e6b6c696e6721ULL;

/// hash_j from hash_{j-1} (`parent`) and block j's token ids (hashed as
/// their little-endian int32 bytes).
uint64_t chainBlockHash(uint64_t parent, const int32_t *tokens, int64_t count);

/// Appends the hashes of every whole block of `tokens` to `out`, continuing
/// the chain from `parent`.
void appendChainHashes(uint64_t parent, const int32_t *tokens,
                       int64_t numTokens, int64_t blockSize,
                       std::vector<uint64_t> &out);

/// hash -> block. Evictions from the pool erase their entry.
class PrefixCache : public BlockEvictionListener {
public:
  /// Room for one entry per block of a pool of `numBlocks`.
  explicit PrefixCache(int32_t numBlocks);

  /// The block registered under `hash`, or -1.
  int32_t find(uint64_t hash) const {
    for (uint64_t slot = hash & mask_;; slot = (slot + 1) & mask_) {
      const Entry &entry = entries_[slot];
      if (entry.block < 0)
        return -1;
      if (entry.hash == hash)
        return entry.block;
    }
  }
  /// Starts loading the slot of `hash` (an insert or find follows soon).
  void prefetch(uint64_t hash) const {
    __builtin_prefetch(&entries_[hash & mask_]);
  }
  /// Registers `block` under `hash`; false (and no change) when the hash is
  /// already registered or the table is full.
  bool insert(uint64_t hash, int32_t block);
  /// Removes the entry of `hash` if it maps to `block`.
  bool erase(uint64_t hash, int32_t block);
  void clear();

  int64_t size() const { return size_; }
  int64_t capacity() const { return maxEntries_; }

  void onEvict(int32_t block, uint64_t tag) override { erase(tag, block); }

  /// Every (hash, block) entry, sorted by hash; for dumps and tests.
  std::vector<std::pair<uint64_t, int32_t>> entries() const;

private:
  struct Entry {
    uint64_t hash = 0;
    int32_t block = -1; // -1: empty slot
  };
  std::vector<Entry> entries_;
  uint64_t mask_ = 0;
  int64_t size_ = 0;
  int64_t maxEntries_ = 0;
};

} // namespace inkling

#endif // INKLING_RUNTIME_PREFIXCACHE_H
