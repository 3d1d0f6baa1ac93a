//===- TensorParallelTest.cpp - Rank layouts tile the unsharded one -------===//

#include "inkling/Runtime/TensorParallel.h"

#include "RealLayout.h"

#include <gtest/gtest.h>

using namespace inkling;

namespace {

LayoutConfig config(int64_t tp) {
  return inkling::testing::realLayoutConfig(0, tp);
}

TEST(TensorParallelTest, RanksOwnConsecutiveHeadsAndHiddenChunks) {
  std::vector<RankLayout> ranks = *rankLayouts(config(4));
  ASSERT_EQ(ranks.size(), 4u);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(ranks[r].rank, r);
    EXPECT_EQ(ranks[r].headBegin, 2 * r);
    EXPECT_EQ(ranks[r].headEnd, 2 * r + 2);
    EXPECT_EQ(ranks[r].hiddenBegin, 1024 * r);
    EXPECT_EQ(ranks[r].hiddenEnd, 1024 * (r + 1));
    EXPECT_EQ(ranks[r].layout.headsPerRank, 2);
    EXPECT_EQ(ranks[r].layout.headSize, 2048) << "D does not depend on tp";
  }
  EXPECT_TRUE(checkRankTiling(config(4), ranks).isOk());
}

TEST(TensorParallelTest, EveryValidTpTiles) {
  for (int64_t tp : {1, 2, 4, 8}) {
    StatusOr<std::vector<RankLayout>> ranks = rankLayouts(config(tp));
    ASSERT_TRUE(ranks.isOk()) << ranks.status().toString();
    Status status = checkRankTiling(config(1), *ranks);
    EXPECT_TRUE(status.isOk()) << tp << ": " << status.toString();
  }
}

TEST(TensorParallelTest, RankOutOfRangeAndBadTp) {
  EXPECT_EQ(rankLayout(config(4), 4).status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(rankLayout(config(4), -1).status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(rankLayouts(config(3)).status().code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(rankLayouts(config(16)).status().code(),
            StatusCode::InvalidArgument);
}

TEST(TensorParallelTest, BrokenTilingsAreReported) {
  std::vector<RankLayout> good = *rankLayouts(config(4));
  auto expectBroken = [&](std::vector<RankLayout> ranks,
                          const std::string &needle) {
    Status status = checkRankTiling(config(4), ranks);
    ASSERT_FALSE(status.isOk()) << needle;
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << status.message();
  };
  // Two ranks claim heads [2, 4): rank 2 shifted down, leaving [6, 8).
  std::vector<RankLayout> overlap = good;
  overlap[2].headBegin = 2;
  overlap[2].headEnd = 4;
  overlap[2].hiddenBegin = 1024;
  overlap[2].hiddenEnd = 2048;
  expectBroken(overlap, "overlap");
  // A missing rank leaves a gap.
  std::vector<RankLayout> missing = {good[0], good[1], good[3]};
  expectBroken(missing, "derived for tp 4, but there are 3 ranks");
  // A repeated rank id.
  std::vector<RankLayout> repeated = good;
  repeated[3].rank = 1;
  expectBroken(repeated, "repeated");
  // Hidden chunk not aligned with the heads.
  std::vector<RankLayout> misaligned = good;
  misaligned[1].hiddenBegin += 8;
  expectBroken(misaligned, "not the chunk of its heads");
  // Ranks derived for another model.
  std::vector<RankLayout> other = *rankLayouts(config(4));
  LayoutConfig wider = config(4);
  wider.headDim = 64;
  other[0] = *rankLayout(wider, 0);
  expectBroken(other, "other model sizes");
  // Ranges of the wrong size for the layout.
  std::vector<RankLayout> wrongSize = good;
  wrongSize[3].headEnd = 7;
  expectBroken(wrongSize, "its layout holds 2");
}

TEST(TensorParallelTest, GapIsNamed) {
  // Hand-made ranks with tp = 2 where rank 1 starts one head late: its
  // range size is still checked, so shift both ends and the hidden chunk.
  std::vector<RankLayout> ranks = *rankLayouts(config(2));
  ranks[0].headBegin = 0;
  ranks[0].headEnd = 4;
  ranks[1].headBegin = 5;
  ranks[1].headEnd = 9;
  ranks[1].hiddenBegin = 5 * 512;
  ranks[1].hiddenEnd = 9 * 512;
  Status status = checkRankTiling(config(2), ranks);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("heads [4, 5) belong to no rank"),
            std::string::npos)
      << status.message();
}

} // namespace
