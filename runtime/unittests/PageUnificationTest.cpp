//===- PageUnificationTest.cpp - sconv and attention pages agree ----------===//

#include "inkling/Runtime/PageUnification.h"

#include <gtest/gtest.h>

using namespace inkling;

namespace {

Layout inklingLayout(int64_t tp = 1) {
  LayoutConfig config;
  config.kvHeads = 8;
  config.headDim = 128;
  config.hidden = 4096;
  config.kernel = 4;
  config.tp = tp;
  return *Layout::derive(config);
}

TEST(PageUnificationTest, AttentionScalesItsBlockSizeToTheSconvPage) {
  // D = 2048: the sconv page is 8 * 4 * 2048 * 2 = 131072 bytes; attention
  // (block 16, 8 heads of 128, bf16, K and V) is 65536: block size doubles.
  CacheSpec sconv = CacheSpec::sconv("sconv", inklingLayout());
  EXPECT_EQ(sconv.pageBytes, 131072);
  CacheSpec attention = *CacheSpec::attention("attn", 16, 8, 128, 2);
  EXPECT_EQ(attention.pageBytes, 65536);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, attention});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  EXPECT_EQ(unified->pageBytes, 131072);
  const UnifiedCacheSpec &s = unified->specs[0], &a = unified->specs[1];
  EXPECT_EQ(s.adjustment, PageAdjustment::None);
  EXPECT_EQ(s.blockSize, 4);
  EXPECT_EQ(s.blockStrideBytes, 131072);
  EXPECT_EQ(a.adjustment, PageAdjustment::ScaledBlockSize);
  EXPECT_EQ(a.scale, 2);
  EXPECT_EQ(a.blockSize, 32);
  EXPECT_EQ(a.pageBytes, 131072);
  EXPECT_EQ(a.blockStrideBytes, 131072);
}

TEST(PageUnificationTest, SconvIsPaddedNotScaledWhenAttentionIsLarger) {
  // tp = 4: the sconv page shrinks to 32768 bytes; attention stays larger.
  CacheSpec sconv = CacheSpec::sconv("sconv.tp4", inklingLayout(4));
  EXPECT_EQ(sconv.pageBytes, 32768);
  CacheSpec attention = *CacheSpec::attention("attn", 64, 2, 128, 2);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, attention});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  EXPECT_EQ(unified->pageBytes, 65536);
  const UnifiedCacheSpec &s = unified->specs[0];
  EXPECT_EQ(s.adjustment, PageAdjustment::Padded);
  EXPECT_EQ(s.blockSize, 4) << "the kernel never scales";
  EXPECT_EQ(s.pageBytes, 32768);
  EXPECT_EQ(s.blockStrideBytes, 65536);
  // The layout agrees on the padded stride (in elements).
  EXPECT_EQ(*inklingLayout(4).blockStrideForPageBytes(s.blockStrideBytes),
            32768);
}

TEST(PageUnificationTest, PaddingWorksForANonDividingPage) {
  CacheSpec sconv = CacheSpec::sconv("sconv", inklingLayout(8)); // 16384
  CacheSpec attention = *CacheSpec::attention("attn", 3, 8, 128, 2, false, 2);
  ASSERT_EQ(attention.pageBytes, 12288);
  CacheSpec big = *CacheSpec::attention("big", 5, 8, 128, 2, false, 2);
  ASSERT_EQ(big.pageBytes, 20480);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, big});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  EXPECT_EQ(unified->specs[0].adjustment, PageAdjustment::Padded);
  EXPECT_EQ(unified->specs[0].blockStrideBytes, 20480);
}

TEST(PageUnificationTest, ErrorNamesBothSpecs) {
  CacheSpec sconv = CacheSpec::sconv("sconv", inklingLayout(8)); // 16384
  CacheSpec odd = *CacheSpec::attention("attn.odd", 3, 8, 128, 2);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, odd});
  ASSERT_FALSE(unified.isOk());
  EXPECT_EQ(unified.status().code(), StatusCode::InvalidArgument);
  const std::string &message = unified.status().message();
  EXPECT_NE(message.find("'attn.odd' (page 12288"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'sconv' (page 16384"), std::string::npos) << message;
  EXPECT_NE(message.find("does not divide"), std::string::npos) << message;
}

TEST(PageUnificationTest, FixedBlockSizeWithoutStrideIsAnError) {
  CacheSpec fixed;
  fixed.name = "fixed";
  fixed.blockSize = 4;
  fixed.pageBytes = 1024;
  fixed.fixedBlockSize = true;
  CacheSpec big = *CacheSpec::attention("big", 16, 1, 64, 2);
  StatusOr<UnifiedPages> unified = unifyPageSizes({fixed, big});
  ASSERT_FALSE(unified.isOk());
  EXPECT_NE(unified.status().message().find("block size is fixed"),
            std::string::npos);
}

TEST(PageUnificationTest, RejectsBadSpecs) {
  EXPECT_FALSE(unifyPageSizes({}).isOk());
  EXPECT_EQ(CacheSpec::attention("a", 0, 1, 1, 2).status().code(),
            StatusCode::InvalidArgument);
  CacheSpec empty;
  empty.name = "empty";
  EXPECT_EQ(unifyPageSizes({empty}).status().code(),
            StatusCode::InvalidArgument);
}

} // namespace
