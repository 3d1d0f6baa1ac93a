//===- SequenceSnapshotTest.cpp - The snapshot interval S, observed -------===//
//
// Issue 32: the interval S of the snapshots policy at S = 1, 2, 3 on a
// prompt long enough to cross several S*N boundaries, with every hit
// position asserted; and the snapshots policy told from every-block by the
// snapshot blocks each holds during a step and the blocks each caches.
//
//===----------------------------------------------------------------------===//

#include "SequenceTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>

using namespace inkling;
using namespace inkling::testing;

namespace {

EngineOptions snapshotOptions(PrefixPolicy policy, int64_t every) {
  EngineOptions options; // W = N = 4: a boundary's history is one block
  options.prefixPolicy = policy;
  options.snapshotEvery = every;
  return options;
}

// The boundaries a 62-token prompt prefilled in chunks of 16 makes
// resumable (W = N = 4): each chunk's end (16, 32, 48: the window; 60: a
// snapshot, also the resubmit boundary floor(61/4)*4), the S*N grid, and
// N * 2^k below S*N.
struct IntervalCase {
  int64_t every;
  std::vector<int64_t> stored;
};

void PrintTo(const IntervalCase &param, std::ostream *os) {
  *os << "S = " << param.every;
}

class SnapshotIntervalTest : public ::testing::TestWithParam<IntervalCase> {};

TEST_P(SnapshotIntervalTest, HitsLieExactlyOnTheGrid) {
  const IntervalCase &param = GetParam();
  TestEngine engine(snapshotOptions(PrefixPolicy::Snapshots, param.every));
  std::vector<int32_t> prompt = iota(62);
  SequenceId id = *engine.add(prompt);
  for (int64_t chunk : {16, 16, 16, 14})
    ASSERT_EQ(engine.step({{id, chunk}}), "");
  ASSERT_TRUE(engine.manager().finish(id).isOk());
  // One cached block per stored boundary: the block before it.
  EXPECT_EQ(engine.manager().prefixCache().size(),
            static_cast<int64_t>(param.stored.size()));
  for (int64_t max = 0; max <= 62; ++max) {
    int64_t want = 0;
    for (int64_t b : param.stored)
      if (b <= max)
        want = std::max(want, b);
    EXPECT_EQ(longestHit(engine, prompt, max, 62), want)
        << "S = " << param.every << ", max length " << max;
  }
  // A resume at each stored boundary reads its own prefix's history.
  for (int64_t b : param.stored) {
    std::vector<int32_t> other(prompt.begin(), prompt.begin() + b);
    other.push_back(99);
    SequenceId again = *engine.add(other, b);
    ASSERT_EQ(engine.step({{again, 1}}), "") << "resume at " << b;
    ASSERT_TRUE(engine.manager().finish(again).isOk());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Intervals, SnapshotIntervalTest,
    ::testing::Values(
        // S = 1: every boundary is on the grid.
        IntervalCase{
            1, {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60}},
        // S = 2: the grid 8k, N * 2^k = 4 below it, the chunk ends.
        IntervalCase{2, {4, 8, 16, 24, 32, 40, 48, 56, 60}},
        // S = 3: the grid 12k, 4 and 8 below it, the chunk ends.
        IntervalCase{3, {4, 8, 12, 16, 24, 32, 36, 48, 60}}),
    [](const ::testing::TestParamInfo<IntervalCase> &info) {
      return "S" + std::to_string(info.param.every);
    });

TEST(SnapshotPolicyTest, SnapshotsHoldFewerBlocksThanEveryBlock) {
  // A 40-token chunk at S = 2 (W = N = 4). Every-block snapshots each
  // boundary below the window's (4, 8, ..., 36: blocks 0-8); snapshots
  // only 4, the grid 8, 16, 24, 32 and the resubmit boundary 36 (blocks
  // 0, 1, 3, 5, 7, 8).
  struct Case {
    PrefixPolicy policy;
    std::vector<int32_t> snapshotBlocks;
  };
  for (const Case &c :
       {Case{PrefixPolicy::EveryBlock, {0, 1, 2, 3, 4, 5, 6, 7, 8}},
        Case{PrefixPolicy::Snapshots, {0, 1, 3, 5, 7, 8}}}) {
    TestEngine engine(snapshotOptions(c.policy, 2));
    SequenceId id = *engine.add(iota(40));
    ASSERT_TRUE(engine.manager().schedule(id, 40).isOk());
    SequenceInfo info = *engine.manager().sequenceInfo(id);
    std::vector<int32_t> held;
    for (const MappedBlock &block : info.snapshotBlocks)
      held.push_back(block.logical);
    std::sort(held.begin(), held.end());
    EXPECT_EQ(held, c.snapshotBlocks) << prefixPolicyName(c.policy);
    EXPECT_EQ(engine.manager().numSnapshotBlocks(),
              static_cast<int64_t>(c.snapshotBlocks.size()));
    int32_t sampled = 7;
    ASSERT_TRUE(engine.manager().commit(id, 40, &sampled, 1).isOk());
    // Cached: the snapshot blocks and the window's block 9.
    EXPECT_EQ(engine.manager().prefixCache().size(),
              static_cast<int64_t>(c.snapshotBlocks.size()) + 1)
        << prefixPolicyName(c.policy);
    EXPECT_EQ(engine.manager().numSnapshotBlocks(), 0);
    ASSERT_TRUE(engine.manager().checkInvariants().isOk());
  }
}

} // namespace
