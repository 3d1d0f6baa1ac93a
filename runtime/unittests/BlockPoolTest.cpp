//===- BlockPoolTest.cpp - Block pool: null block, LRU queue, refcounts ---===//

#include "inkling/Runtime/BlockPool.h"

#include <gtest/gtest.h>

#include <vector>

using namespace inkling;

namespace {

struct RecordingListener : BlockEvictionListener {
  std::vector<std::pair<int32_t, PrefixKey>> evicted;
  void onEvict(int32_t block, PrefixKey tag) override {
    evicted.emplace_back(block, tag);
  }
};

BlockPool makePool(int64_t numBlocks) {
  StatusOr<BlockPool> pool = BlockPool::create(numBlocks);
  EXPECT_TRUE(pool.isOk()) << pool.status().toString();
  return std::move(*pool);
}

TEST(BlockPoolTest, RejectsPoolsWithoutUsableBlocks) {
  for (int64_t bad : {int64_t(-1), int64_t(0), int64_t(1), int64_t(1) << 31}) {
    StatusOr<BlockPool> pool = BlockPool::create(bad);
    ASSERT_FALSE(pool.isOk());
    EXPECT_EQ(pool.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(pool.status().message().find(std::to_string(bad)),
              std::string::npos);
  }
}

TEST(BlockPoolTest, NeverHandsOutTheNullBlock) {
  BlockPool pool = makePool(5);
  EXPECT_EQ(pool.numUsableBlocks(), 4);
  EXPECT_EQ(pool.numFreeBlocks(), 4);
  std::vector<int32_t> blocks(4);
  ASSERT_TRUE(pool.allocate(4, blocks.data()).isOk());
  EXPECT_EQ(blocks, (std::vector<int32_t>{1, 2, 3, 4}));
  for (int32_t block : blocks)
    EXPECT_EQ(pool.refCount(block), 1);
  EXPECT_EQ(pool.numFreeBlocks(), 0);
  EXPECT_EQ(pool.refCount(kNullBlock), 0);
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(BlockPoolTest, OutOfBlocksLeavesThePoolUnchanged) {
  BlockPool pool = makePool(4);
  ASSERT_TRUE(pool.allocate().isOk());
  std::vector<int32_t> before = pool.freeQueue();
  int32_t out[3] = {-7, -7, -7};
  Status status = pool.allocate(3, out);
  EXPECT_EQ(status.code(), StatusCode::OutOfBlocks);
  EXPECT_NE(status.message().find("only 2"), std::string::npos)
      << status.message();
  EXPECT_EQ(pool.freeQueue(), before);
  EXPECT_EQ(out[0], -7);
  EXPECT_EQ(pool.numFreeBlocks(), 2);
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(BlockPoolTest, DoubleFreeIsAStatusAndChangesNothing) {
  BlockPool pool = makePool(4);
  int32_t block = *pool.allocate();
  ASSERT_TRUE(pool.release(block).isOk());
  std::vector<int32_t> before = pool.freeQueue();
  Status status = pool.release(block);
  EXPECT_EQ(status.code(), StatusCode::FailedPrecondition);
  EXPECT_NE(status.message().find("double free of block 1"), std::string::npos);
  EXPECT_EQ(pool.freeQueue(), before);
  EXPECT_EQ(pool.release(kNullBlock).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(pool.release(4).code(), StatusCode::OutOfRange);
  EXPECT_EQ(pool.release(-3).code(), StatusCode::OutOfRange);
  EXPECT_EQ(pool.retain(kNullBlock).code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(BlockPoolTest, ReferenceCountsKeepSharedBlocks) {
  BlockPool pool = makePool(3);
  int32_t block = *pool.allocate();
  ASSERT_TRUE(pool.retain(block).isOk());
  EXPECT_EQ(pool.refCount(block), 2);
  ASSERT_TRUE(pool.release(block).isOk());
  EXPECT_EQ(pool.numFreeBlocks(), 1);
  ASSERT_TRUE(pool.release(block).isOk());
  EXPECT_EQ(pool.numFreeBlocks(), 2);
  // A free block without a cached prefix cannot be revived.
  EXPECT_EQ(pool.retain(block).code(), StatusCode::FailedPrecondition);
}

TEST(BlockPoolTest, CachedBlocksAreEvictedLeastRecentlyFreedFirst) {
  BlockPool pool = makePool(5);
  RecordingListener listener;
  pool.setEvictionListener(&listener);
  std::vector<int32_t> blocks(4);
  ASSERT_TRUE(pool.allocate(4, blocks.data()).isOk());
  // Tags keep the whole 128-bit key: these two differ only in the high half.
  ASSERT_TRUE(pool.setCacheTag(1, {0x22, 0x11}).isOk());
  ASSERT_TRUE(pool.setCacheTag(2, {0x22, 0xbeef}).isOk());
  EXPECT_EQ(pool.cacheTag(1), (PrefixKey{0x22, 0x11}));
  // Free 2 (cached), 3 (plain), 1 (cached), 4 (plain).
  for (int32_t block : {2, 3, 1, 4})
    ASSERT_TRUE(pool.release(block).isOk());
  // Plain blocks first (most recent first), then cached ones in LRU order.
  EXPECT_EQ(pool.freeQueue(), (std::vector<int32_t>{4, 3, 2, 1}));
  EXPECT_TRUE(pool.hasCacheTag(2));
  EXPECT_EQ(*pool.allocate(), 4);
  EXPECT_EQ(*pool.allocate(), 3);
  EXPECT_TRUE(listener.evicted.empty());
  EXPECT_EQ(*pool.allocate(), 2);
  ASSERT_EQ(listener.evicted.size(), 1u);
  EXPECT_EQ(listener.evicted[0].first, 2);
  EXPECT_EQ(listener.evicted[0].second, (PrefixKey{0x22, 0xbeef}));
  EXPECT_FALSE(pool.hasCacheTag(2));
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(BlockPoolTest, PrefixHitRevivesAFreeCachedBlock) {
  BlockPool pool = makePool(4);
  int32_t block = *pool.allocate();
  ASSERT_TRUE(pool.setCacheTag(block, {7, 7}).isOk());
  ASSERT_TRUE(pool.release(block).isOk());
  EXPECT_EQ(pool.numFreeBlocks(), 3);
  ASSERT_TRUE(pool.retain(block).isOk());
  EXPECT_EQ(pool.refCount(block), 1);
  EXPECT_EQ(pool.numFreeBlocks(), 2);
  EXPECT_TRUE(pool.hasCacheTag(block));
  EXPECT_EQ(pool.freeQueue(), (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(BlockPoolTest, OnlyHeldBlocksCanBeTagged) {
  BlockPool pool = makePool(3);
  EXPECT_EQ(pool.setCacheTag(1, {5, 5}).code(), StatusCode::FailedPrecondition);
  EXPECT_EQ(pool.setCacheTag(0, {5, 5}).code(), StatusCode::InvalidArgument);
  EXPECT_FALSE(pool.hasCacheTag(1));
}

} // namespace
