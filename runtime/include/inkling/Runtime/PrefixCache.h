//===- PrefixCache.h - Hash chain over blocks -> cached block ---*- C++ -*-===//
//
// Prefix caching for the sconv cache (docs/Design.md section 6). The key of
// logical block j of a token sequence is a 128-bit hash chain over whole
// token blocks:
//   key_j  = XXH3_128(key_{j-1} ++ tokens of block j),
//   key_-1 = XXH3_128(the request's extra keys, seed = the cache's seed),
// (key bytes: lo then hi, little-endian; token ids: their little-endian
// int32 bytes), so a key names the whole prefix [0, (j+1)N) and the request's
// extra keys, not just the block. Two different prefixes share a key only if
// XXH3-128 maps two different inputs to one value somewhere along their
// chains: a 128-bit collision (docs/runtime.md gives the odds). The map
// compares whole keys, so a hit is as good as the tokens behind it. (The
// window-only runtime keeps no tokens of cached blocks, so it cannot compare
// tokens instead.)
//
// Only the window is kept, so a sequence can resume at position p (a
// multiple of N) when the blocks holding the conv history of p, its last W-1
// positions, are cached: blocks [max(0, p-(W-1))/N, p/N), one block when
// N >= W-1, up to ceil((W-1)/N) when N is smaller.
//
// The map is open addressing with linear probing and backward-shift
// deletion: no allocation after construction, no tombstones. It holds at most
// one entry per pool block, and the table has at least twice as many slots;
// the slot is the key's low bits, a match compares all 128.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_PREFIXCACHE_H
#define INKLING_RUNTIME_PREFIXCACHE_H

#include "inkling/Runtime/BlockPool.h"
#include "inkling/Runtime/PrefixKey.h"

#include <cstdint>
#include <vector>

namespace inkling {

/// The seed of every chain root unless a cache is configured with another
/// (e.g. to keep models or adapters apart).
inline constexpr uint64_t kDefaultPrefixSeed = 0x696e6b6c696e6721ULL;

/// key_-1 of a request: XXH3_128 of its extra keys (cache salt, adapter id,
/// multimodal hashes; none is 0 bytes) seeded with the cache's `prefixSeed`.
PrefixKey chainRoot(uint64_t prefixSeed, const uint8_t *extraKeys = nullptr,
                    int64_t numExtraKeyBytes = 0);

/// key_j from key_{j-1} (`parent`) and block j's `count` token ids.
PrefixKey chainBlockHash(PrefixKey parent, const int32_t *tokens,
                         int64_t count);

/// Appends the keys of every whole block of `tokens` to `out`, continuing
/// the chain from `parent`.
void appendChainHashes(PrefixKey parent, const int32_t *tokens,
                       int64_t numTokens, int64_t blockSize,
                       std::vector<PrefixKey> &out);

/// key -> block. Evictions from the pool erase their entry.
class PrefixCache : public BlockEvictionListener {
public:
  /// Room for one entry per block of a pool of `numBlocks`.
  explicit PrefixCache(int32_t numBlocks);

  /// The block registered under `key`, or -1.
  int32_t find(PrefixKey key) const {
    for (uint64_t slot = key.lo & mask_;; slot = (slot + 1) & mask_) {
      const Entry &entry = entries_[slot];
      if (entry.block < 0)
        return -1;
      if (entry.key == key)
        return entry.block;
    }
  }
  /// Starts loading the slot of `key` (an insert or find follows soon).
  void prefetch(PrefixKey key) const {
    __builtin_prefetch(&entries_[key.lo & mask_]);
  }
  /// Registers `block` under `key`; false (and no change) when the key is
  /// already registered or the table is full.
  bool insert(PrefixKey key, int32_t block);
  /// Removes the entry of `key` if it maps to `block`.
  bool erase(PrefixKey key, int32_t block);
  void clear();

  int64_t size() const { return size_; }
  int64_t capacity() const { return maxEntries_; }

  void onEvict(int32_t block, PrefixKey tag) override { erase(tag, block); }

  /// Every (key, block) entry, sorted by key; for dumps and tests.
  std::vector<std::pair<PrefixKey, int32_t>> entries() const;

private:
  struct Entry {
    PrefixKey key;
    int32_t block = -1; // -1: empty slot
  };
  std::vector<Entry> entries_;
  uint64_t mask_ = 0;
  int64_t size_ = 0;
  int64_t maxEntries_ = 0;
};

} // namespace inkling

#endif // INKLING_RUNTIME_PREFIXCACHE_H
