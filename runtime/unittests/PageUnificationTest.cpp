//===- PageUnificationTest.cpp - sconv and attention pages agree ----------===//

#include "inkling/Runtime/PageUnification.h"

#include "RealLayout.h"

#include <gtest/gtest.h>

using namespace inkling;

namespace {

Layout inklingLayout(int64_t tp = 1) {
  return inkling::testing::realLayout(0, tp);
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

// vLLM's unify_kv_cache_spec_page_size on the real layout (conv page
// 131072 bytes at N = 4) against attention pages of 8 KV heads of 128, bf16,
// K and V: 4096 bytes per token.

/// The layout the engine derives from a unified sconv spec.
Layout unifiedLayout(const UnifiedCacheSpec &spec, int64_t tp = 1) {
  LayoutConfig config = inklingLayout(tp).config;
  config.blockSize = spec.blockSize;
  return *Layout::derive(config);
}

TEST(PageUnificationTest, EqualPagesChangeNothing) {
  CacheSpec sconv = CacheSpec::sconv("sconv", inklingLayout());
  CacheSpec attention = *CacheSpec::attention("attn", 32, 8, 128, 2);
  ASSERT_EQ(attention.pageBytes, 131072);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, attention});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  EXPECT_EQ(unified->pageBytes, 131072);
  for (const UnifiedCacheSpec &spec : unified->specs) {
    EXPECT_EQ(spec.adjustment, PageAdjustment::None) << spec.name;
    EXPECT_EQ(spec.scale, 1);
  }
  EXPECT_EQ(unified->specs[0].blockSize, 4);
  EXPECT_EQ(unified->specs[1].blockSize, 32);
}

TEST(PageUnificationTest, SconvScalesItsBlockSizeWhenTheLargerPageIsAMultiple) {
  // Attention block 64: a 256 KiB page, twice the conv page: N = 4 -> 8, the
  // plan of vLLM's planner for this model.
  CacheSpec sconv = CacheSpec::sconv("sconv", inklingLayout());
  CacheSpec attention = *CacheSpec::attention("attn", 64, 8, 128, 2);
  ASSERT_EQ(attention.pageBytes, 262144);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, attention});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  EXPECT_EQ(unified->pageBytes, 262144);
  const UnifiedCacheSpec &s = unified->specs[0], &a = unified->specs[1];
  EXPECT_EQ(s.adjustment, PageAdjustment::ScaledBlockSize);
  EXPECT_EQ(s.scale, 2);
  EXPECT_EQ(s.blockSize, 8);
  EXPECT_EQ(s.pageBytes, 262144);
  EXPECT_EQ(s.blockStrideBytes, 262144);
  EXPECT_EQ(a.adjustment, PageAdjustment::None);
  EXPECT_EQ(a.blockSize, 64);
  // The layout at the scaled N has exactly the unified page: no padding.
  Layout scaled = unifiedLayout(s);
  EXPECT_EQ(scaled.blockSize, 8);
  EXPECT_EQ(scaled.pageBytes(), 262144);
  EXPECT_EQ(*scaled.blockStrideForPageBytes(s.blockStrideBytes),
            scaled.pageElements());

  // A 1 MiB attention page (block 256) gives N = 32 for W = 4, as vLLM's
  // AMD Inkling backend runs.
  CacheSpec large = *CacheSpec::attention("attn", 256, 8, 128, 2);
  StatusOr<UnifiedPages> amd = unifyPageSizes({sconv, large});
  ASSERT_TRUE(amd.isOk()) << amd.status().toString();
  EXPECT_EQ(amd->specs[0].blockSize, 32);
  EXPECT_EQ(amd->specs[0].scale, 8);
  EXPECT_EQ(unifiedLayout(amd->specs[0]).pageBytes(), 1 << 20);
}

TEST(PageUnificationTest, SconvIsPaddedWhenTheLargerPageIsNotAMultiple) {
  // Attention block 48: 196608 bytes, 1.5 conv pages: N stays 4, the block
  // stride becomes the larger page.
  CacheSpec sconv = CacheSpec::sconv("sconv", inklingLayout());
  CacheSpec attention = *CacheSpec::attention("attn", 48, 8, 128, 2);
  ASSERT_EQ(attention.pageBytes, 196608);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, attention});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  EXPECT_EQ(unified->pageBytes, 196608);
  const UnifiedCacheSpec &s = unified->specs[0];
  EXPECT_EQ(s.adjustment, PageAdjustment::Padded);
  EXPECT_EQ(s.blockSize, 4);
  EXPECT_EQ(s.pageBytes, 131072);
  EXPECT_EQ(s.blockStrideBytes, 196608);
  EXPECT_EQ(unified->specs[1].adjustment, PageAdjustment::None);
  // The layout agrees on the padded stride (in elements).
  EXPECT_EQ(*unifiedLayout(s).blockStrideForPageBytes(s.blockStrideBytes),
            98304);
}

TEST(PageUnificationTest, SconvAtTensorParallelScalesToo) {
  // tp = 4: the conv page shrinks to 32768 bytes and divides the 65536-byte
  // attention page: N doubles rather than padding half the page.
  CacheSpec sconv = CacheSpec::sconv("sconv.tp4", inklingLayout(4));
  EXPECT_EQ(sconv.pageBytes, 32768);
  CacheSpec attention = *CacheSpec::attention("attn", 64, 2, 128, 2);
  StatusOr<UnifiedPages> unified = unifyPageSizes({sconv, attention});
  ASSERT_TRUE(unified.isOk()) << unified.status().toString();
  const UnifiedCacheSpec &s = unified->specs[0];
  EXPECT_EQ(s.adjustment, PageAdjustment::ScaledBlockSize);
  EXPECT_EQ(s.blockSize, 8);
  EXPECT_EQ(unifiedLayout(s, 4).pageBytes(), 65536);
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
  // A pinned block size is padded even where the page divides.
  CacheSpec pinned = sconv;
  pinned.fixedBlockSize = true;
  CacheSpec twice = *CacheSpec::attention("twice", 8, 8, 128, 2, false, 2);
  ASSERT_EQ(twice.pageBytes, 32768);
  StatusOr<UnifiedPages> padded = unifyPageSizes({pinned, twice});
  ASSERT_TRUE(padded.isOk()) << padded.status().toString();
  EXPECT_EQ(padded->specs[0].adjustment, PageAdjustment::Padded);
  EXPECT_EQ(padded->specs[0].blockSize, 4);
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

TEST(PageUnificationTest, RefusesDuplicateAndEmptyNames) {
  CacheSpec sconv = CacheSpec::sconv("layers.0.sconv", inklingLayout());
  StatusOr<UnifiedPages> twice = unifyPageSizes({sconv, sconv});
  ASSERT_FALSE(twice.isOk());
  EXPECT_NE(twice.status().message().find(
                "duplicate cache spec name 'layers.0.sconv'"),
            std::string::npos)
      << twice.status().message();
  CacheSpec unnamed = *CacheSpec::attention("", 16, 8, 128, 2);
  StatusOr<UnifiedPages> empty = unifyPageSizes({sconv, unnamed});
  ASSERT_FALSE(empty.isOk());
  EXPECT_NE(empty.status().message().find("cache spec 1 needs a name"),
            std::string::npos)
      << empty.status().message();
}

} // namespace
