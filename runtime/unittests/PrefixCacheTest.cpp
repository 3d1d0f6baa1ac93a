//===- PrefixCacheTest.cpp - Key chain and the key -> block map -----------===//

#include "inkling/Runtime/PrefixCache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <xxhash.h>

using namespace inkling;

namespace {

PrefixKey key(uint64_t lo, uint64_t hi = 0) { return {lo, hi}; }

// What the chain hashes: key bytes (lo, hi) then the tokens, in one buffer.
PrefixKey referenceBlockKey(const PrefixKey &parent,
                            const std::vector<int32_t> &tokens) {
  std::vector<unsigned char> input(16 + 4 * tokens.size());
  std::memcpy(input.data(), &parent.lo, 8);
  std::memcpy(input.data() + 8, &parent.hi, 8);
  std::memcpy(input.data() + 16, tokens.data(), 4 * tokens.size());
  XXH128_hash_t hash = XXH3_128bits(input.data(), input.size());
  return {hash.low64, hash.high64};
}

TEST(PrefixCacheTest, RootIsXxh3_128OfTheExtraKeys) {
  XXH128_hash_t none = XXH3_128bits_withSeed(nullptr, 0, kDefaultPrefixSeed);
  EXPECT_EQ(chainRoot(kDefaultPrefixSeed), key(none.low64, none.high64));
  const uint8_t salt[] = {'s', 'a', 'l', 't'};
  XXH128_hash_t salted = XXH3_128bits_withSeed(salt, 4, kDefaultPrefixSeed);
  EXPECT_EQ(chainRoot(kDefaultPrefixSeed, salt, 4),
            key(salted.low64, salted.high64));
  EXPECT_NE(chainRoot(kDefaultPrefixSeed, salt, 4),
            chainRoot(kDefaultPrefixSeed));
}

TEST(PrefixCacheTest, ChainHashIsXxh3_128OfParentAndTokens) {
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  PrefixKey root = chainRoot(kDefaultPrefixSeed);
  PrefixKey first = referenceBlockKey(root, {1, 2, 3, 4});
  PrefixKey second = referenceBlockKey(first, {5, 6, 7, 8});
  EXPECT_EQ(chainBlockHash(root, tokens.data(), 4), first);
  std::vector<PrefixKey> chain;
  appendChainHashes(root, tokens.data(), 10, 4, chain);
  EXPECT_EQ(chain, (std::vector<PrefixKey>{first, second}));
}

TEST(PrefixCacheTest, LongBlocksStreamToTheSameKey) {
  // N > 252 tokens does not fit the one-shot buffer: XXH3's streaming API
  // must give the value of the concatenated input.
  for (int64_t n : {252, 253, 300, 4096}) {
    std::vector<int32_t> tokens(n);
    for (int64_t i = 0; i < n; ++i)
      tokens[i] = static_cast<int32_t>(i * 7919);
    PrefixKey parent = key(0x0123456789abcdefULL, 0xfedcba9876543210ULL);
    EXPECT_EQ(chainBlockHash(parent, tokens.data(), n),
              referenceBlockKey(parent, tokens))
        << n << " tokens";
  }
}

TEST(PrefixCacheTest, KeyNamesTheWholePrefix) {
  // Equal second blocks after different first blocks get different keys.
  std::vector<int32_t> a = {1, 1, 1, 1, 9, 9, 9, 9};
  std::vector<int32_t> b = {2, 2, 2, 2, 9, 9, 9, 9};
  std::vector<PrefixKey> ha, hb;
  appendChainHashes(chainRoot(kDefaultPrefixSeed), a.data(), 8, 4, ha);
  appendChainHashes(chainRoot(kDefaultPrefixSeed), b.data(), 8, 4, hb);
  EXPECT_NE(ha[1], hb[1]);
  // A different root (seed, extra keys) separates caches.
  std::vector<PrefixKey> other;
  appendChainHashes(chainRoot(kDefaultPrefixSeed + 1), a.data(), 8, 4, other);
  EXPECT_NE(ha[0], other[0]);
  // Both halves of the parent feed the next key.
  PrefixKey parent = ha[0];
  PrefixKey flippedHigh = key(parent.lo, parent.hi ^ 1);
  EXPECT_NE(chainBlockHash(parent, a.data() + 4, 4),
            chainBlockHash(flippedHigh, a.data() + 4, 4));
}

TEST(PrefixCacheTest, InsertFindErase) {
  PrefixCache cache(8);
  EXPECT_EQ(cache.find(key(42)), -1);
  EXPECT_TRUE(cache.insert(key(42), 3));
  EXPECT_FALSE(cache.insert(key(42), 4)) << "a key is registered once";
  EXPECT_EQ(cache.find(key(42)), 3);
  EXPECT_FALSE(cache.erase(key(42), 4)) << "erase only the block's own entry";
  EXPECT_TRUE(cache.erase(key(42), 3));
  EXPECT_EQ(cache.find(key(42)), -1);
  EXPECT_EQ(cache.size(), 0);
}

// Two prefixes whose keys agree in the low 64 bits (the slot bits, and all
// a 64-bit key would have compared) stay apart: no hit is false because of
// the lower half alone.
TEST(PrefixCacheTest, KeysEqualInTheLowHalfAreNotConfused) {
  PrefixCache cache(8);
  PrefixKey a = key(0x5555, 1), b = key(0x5555, 2);
  ASSERT_TRUE(cache.insert(a, 3));
  EXPECT_EQ(cache.find(b), -1) << "a lookup of b must not hit a's block";
  ASSERT_TRUE(cache.insert(b, 4)) << "b is a different key";
  EXPECT_EQ(cache.find(a), 3);
  EXPECT_EQ(cache.find(b), 4);
  EXPECT_FALSE(cache.erase(b, 3)) << "b's key does not name block 3";
  EXPECT_FALSE(cache.erase(key(0x5555, 3), 3));
  // Evicting a's block erases a only; b (later in the probe run) moves up.
  BlockEvictionListener &listener = cache;
  listener.onEvict(3, a);
  EXPECT_EQ(cache.find(a), -1);
  EXPECT_EQ(cache.find(b), 4);
  EXPECT_EQ(cache.size(), 1);
}

TEST(PrefixCacheTest, EvictionErasesTheEntry) {
  PrefixCache cache(8);
  ASSERT_TRUE(cache.insert(key(5), 2));
  BlockEvictionListener &listener = cache;
  listener.onEvict(2, key(5));
  EXPECT_EQ(cache.find(key(5)), -1);
}

TEST(PrefixCacheTest, FullTableRefusesInserts) {
  PrefixCache cache(3);
  EXPECT_TRUE(cache.insert(key(1), 1));
  EXPECT_TRUE(cache.insert(key(2), 2));
  EXPECT_TRUE(cache.insert(key(3), 3));
  EXPECT_FALSE(cache.insert(key(4), 1));
  EXPECT_EQ(cache.size(), 3);
}

// Colliding home slots exercise the backward-shift deletion; keys that
// differ only in the high half share their whole probe path.
TEST(PrefixCacheTest, RandomOperationsMatchAStdMap) {
  PrefixCache cache(64);
  std::map<PrefixKey, int32_t> model;
  std::mt19937_64 rng(1);
  for (int op = 0; op < 20000; ++op) {
    // Few distinct low bits: many probe-run collisions.
    PrefixKey hash = key((rng() % 48) * 128 + (rng() % 3), rng() % 2);
    int32_t block = static_cast<int32_t>(rng() % 64);
    if (rng() % 2) {
      bool fits = model.size() < 64 && !model.count(hash);
      EXPECT_EQ(cache.insert(hash, block), fits);
      if (fits)
        model[hash] = block;
    } else {
      auto it = model.find(hash);
      bool present = it != model.end() && it->second == block;
      EXPECT_EQ(cache.erase(hash, block), present);
      if (present)
        model.erase(it);
    }
    ASSERT_EQ(cache.size(), static_cast<int64_t>(model.size()));
    if (op % 97 == 0)
      for (auto [k, value] : model)
        ASSERT_EQ(cache.find(k), value);
  }
  std::vector<std::pair<PrefixKey, int32_t>> expected(model.begin(),
                                                      model.end());
  EXPECT_EQ(cache.entries(), expected);
}

} // namespace
