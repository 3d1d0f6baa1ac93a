//===- PrefixCacheTest.cpp - Hash chain and the hash -> block map ---------===//

#include "inkling/Runtime/PrefixCache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include <xxhash.h>

using namespace inkling;

namespace {

TEST(PrefixCacheTest, ChainHashIsXxh3SeededWithTheParent) {
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  uint64_t first = XXH3_64bits_withSeed(tokens.data(), 16, kDefaultPrefixSeed);
  uint64_t second = XXH3_64bits_withSeed(tokens.data() + 4, 16, first);
  EXPECT_EQ(chainBlockHash(kDefaultPrefixSeed, tokens.data(), 4), first);
  std::vector<uint64_t> chain;
  appendChainHashes(kDefaultPrefixSeed, tokens.data(), 10, 4, chain);
  EXPECT_EQ(chain, (std::vector<uint64_t>{first, second}));
}

TEST(PrefixCacheTest, KeyNamesTheWholePrefix) {
  // Equal second blocks after different first blocks get different keys.
  std::vector<int32_t> a = {1, 1, 1, 1, 9, 9, 9, 9};
  std::vector<int32_t> b = {2, 2, 2, 2, 9, 9, 9, 9};
  std::vector<uint64_t> ha, hb;
  appendChainHashes(kDefaultPrefixSeed, a.data(), 8, 4, ha);
  appendChainHashes(kDefaultPrefixSeed, b.data(), 8, 4, hb);
  EXPECT_NE(ha[1], hb[1]);
  // A different root seed separates caches.
  std::vector<uint64_t> other;
  appendChainHashes(kDefaultPrefixSeed + 1, a.data(), 8, 4, other);
  EXPECT_NE(ha[0], other[0]);
}

TEST(PrefixCacheTest, InsertFindErase) {
  PrefixCache cache(8);
  EXPECT_EQ(cache.find(42), -1);
  EXPECT_TRUE(cache.insert(42, 3));
  EXPECT_FALSE(cache.insert(42, 4)) << "a hash is registered once";
  EXPECT_EQ(cache.find(42), 3);
  EXPECT_FALSE(cache.erase(42, 4)) << "erase only the block's own entry";
  EXPECT_TRUE(cache.erase(42, 3));
  EXPECT_EQ(cache.find(42), -1);
  EXPECT_EQ(cache.size(), 0);
}

TEST(PrefixCacheTest, EvictionErasesTheEntry) {
  PrefixCache cache(8);
  ASSERT_TRUE(cache.insert(5, 2));
  BlockEvictionListener &listener = cache;
  listener.onEvict(2, 5);
  EXPECT_EQ(cache.find(5), -1);
}

TEST(PrefixCacheTest, FullTableRefusesInserts) {
  PrefixCache cache(3);
  EXPECT_TRUE(cache.insert(1, 1));
  EXPECT_TRUE(cache.insert(2, 2));
  EXPECT_TRUE(cache.insert(3, 3));
  EXPECT_FALSE(cache.insert(4, 1));
  EXPECT_EQ(cache.size(), 3);
}

// Colliding home slots exercise the backward-shift deletion.
TEST(PrefixCacheTest, RandomOperationsMatchAStdMap) {
  PrefixCache cache(64);
  std::map<uint64_t, int32_t> model;
  std::mt19937_64 rng(1);
  for (int op = 0; op < 20000; ++op) {
    // Few distinct low bits: many probe-run collisions.
    uint64_t hash = (rng() % 48) * 128 + (rng() % 3);
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
      for (auto [key, value] : model)
        ASSERT_EQ(cache.find(key), value);
  }
  std::vector<std::pair<uint64_t, int32_t>> expected(model.begin(),
                                                     model.end());
  EXPECT_EQ(cache.entries(), expected);
}

} // namespace
