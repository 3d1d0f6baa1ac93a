//===- StepBuffersTest.cpp - In-place block table and slot updates --------===//

#include "StepSimulator.h"

#include <gtest/gtest.h>

using namespace inkling;
using namespace inkling::testing;

namespace {

TEST(StepBuffersTest, BindValidatesAndInitializes) {
  OwnedStepBuffers owned(2, 5, 6, 1);
  StatusOr<StepBuffers> buffers = StepBuffers::bind(owned.spec, 4);
  ASSERT_TRUE(buffers.isOk()) << buffers.status().toString();
  for (int32_t entry : owned.blockTable)
    EXPECT_EQ(entry, kNullBlock);
  for (int64_t slot : owned.slotMapping)
    EXPECT_EQ(slot, -1);

  StepBufferSpec bad = owned.spec;
  bad.numCols = 0;
  EXPECT_EQ(StepBuffers::bind(bad, 4).status().code(),
            StatusCode::InvalidArgument);
  bad = owned.spec;
  bad.slotMapping = nullptr;
  EXPECT_EQ(StepBuffers::bind(bad, 4).status().code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(StepBuffers::bind(owned.spec, 0).status().code(),
            StatusCode::InvalidArgument);
}

TEST(StepBuffersTest, RowsKeepOnlyTheirWindow) {
  OwnedStepBuffers owned(3, 10, 8, 0);
  StepBuffers buffers = std::move(*StepBuffers::bind(owned.spec, 4));
  auto row = [&](int64_t r) {
    return std::vector<int32_t>(owned.blockTable.begin() + r * 10,
                                owned.blockTable.begin() + (r + 1) * 10);
  };
  MappedBlock first[] = {{2, 7}, {3, 8}};
  buffers.writeRow(0, first, 2);
  buffers.writeRow(1, first, 1);
  buffers.finishStep(2, 5);
  EXPECT_EQ(row(0), (std::vector<int32_t>{0, 0, 7, 8, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(row(1), (std::vector<int32_t>{0, 0, 7, 0, 0, 0, 0, 0, 0, 0}));
  // Row 0 slides its window; row 1 leaves the batch.
  MappedBlock second[] = {{3, 8}, {4, 1}, {9, 5}};
  buffers.writeRow(0, second, 3);
  buffers.clearRowsFrom(1);
  buffers.finishStep(1, 3);
  EXPECT_EQ(row(0), (std::vector<int32_t>{0, 0, 0, 8, 1, 0, 0, 0, 0, 5}));
  EXPECT_EQ(row(1), std::vector<int32_t>(10, 0));
  EXPECT_EQ(row(2), std::vector<int32_t>(10, 0));
}

TEST(StepBuffersTest, SlotsPastTheStepAreMinusOne) {
  OwnedStepBuffers owned(1, 4, 8, 0);
  StepBuffers buffers = std::move(*StepBuffers::bind(owned.spec, 4));
  for (int t = 0; t < 6; ++t)
    owned.slotMapping[t] = 40 + t;
  buffers.finishStep(1, 6);
  owned.slotMapping[0] = 9;
  buffers.finishStep(1, 2);
  EXPECT_EQ(owned.slotMapping,
            (std::vector<int64_t>{9, 41, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(buffers.lastNumTokens(), 2);
}

TEST(StepBuffersTest, ResetRestoresTheInvariant) {
  OwnedStepBuffers owned(1, 4, 4, 0);
  StepBuffers buffers = std::move(*StepBuffers::bind(owned.spec, 2));
  owned.blockTable[3] = 12;
  owned.slotMapping[2] = 5;
  buffers.reset();
  EXPECT_EQ(owned.blockTable, std::vector<int32_t>(4, 0));
  EXPECT_EQ(owned.slotMapping, std::vector<int64_t>(4, -1));
}

} // namespace
