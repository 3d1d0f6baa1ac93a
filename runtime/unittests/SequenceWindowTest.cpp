//===- SequenceWindowTest.cpp - Windows, steps, block sizes ---------------===//

#include "SequenceTestUtil.h"

#include <gtest/gtest.h>

using namespace inkling;
using namespace inkling::testing;

namespace {

TEST(SequenceManagerTest, CreateRejectsBadConfigs) {
  SequenceManagerConfig config;
  config.layout = testLayout(4);
  config.numBlocks = 1;
  EXPECT_EQ(SequenceManager::create(config).status().code(),
            StatusCode::InvalidArgument);
  config.numBlocks = 8;
  config.lookahead = -1;
  EXPECT_EQ(SequenceManager::create(config).status().code(),
            StatusCode::InvalidArgument);
  config.lookahead = 0;
  config.layout = testLayout(1);
  StatusOr<std::unique_ptr<SequenceManager>> noHistory =
      SequenceManager::create(config);
  ASSERT_FALSE(noHistory.isOk());
  EXPECT_NE(noHistory.status().message().find("kernel (1)"), std::string::npos);
  // A block size of 1 is fine (the kernel is what needs history); one
  // beyond the per-sequence tail buffer's bound is named.
  config.layout = testLayout(4, 1);
  EXPECT_TRUE(SequenceManager::create(config).isOk());
  config.layout = testLayout(4, 70000);
  StatusOr<std::unique_ptr<SequenceManager>> huge =
      SequenceManager::create(config);
  ASSERT_FALSE(huge.isOk());
  EXPECT_NE(huge.status().message().find("block size (70000)"),
            std::string::npos);
}

TEST(SequenceManagerTest, BlockBoundsFollowTheLookahead) {
  for (int64_t lookahead : {0, 1, 3, 4, 5, 9}) {
    SequenceManagerConfig config;
    config.layout = testLayout(4);
    config.numBlocks = 8;
    config.lookahead = lookahead;
    auto manager = std::move(*SequenceManager::create(config));
    int64_t ceilLW = (lookahead + 3) / 4;
    EXPECT_EQ(manager->maxBlocksBetweenSteps(), 2);
    EXPECT_LE(manager->maxBlocksPerSequence(), 4 + ceilLW) << lookahead;
  }
}

TEST(SequenceManagerTest, PrefillStoresOnlyTheLastWindow) {
  TestEngine engine;
  SequenceId id = *engine.add(iota(10));
  ASSERT_TRUE(engine.manager().schedule(id, 10).isOk());
  SequenceInfo info = *engine.manager().sequenceInfo(id);
  // W = 4: positions [7, 10) are stored, in logical blocks 1 and 2.
  EXPECT_EQ(info.storeFrom, 7);
  EXPECT_EQ(logicals(info), (std::vector<int32_t>{1, 2}));
  SequenceId ids[] = {id};
  StatusOr<StepInfo> step =
      engine.manager().buildStep(ids, 1, {2, 16}, engine.stepBuffers());
  ASSERT_TRUE(step.isOk()) << step.status().toString();
  EXPECT_EQ(step->numTokens, 10);
  EXPECT_EQ(step->numPaddedTokens, 16);
  const StepBufferSpec &spec = engine.spec();
  for (int t = 0; t < 7; ++t)
    EXPECT_EQ(spec.slotMapping[t], -1) << t;
  int32_t b1 = info.blocks[0].physical, b2 = info.blocks[1].physical;
  EXPECT_EQ(spec.slotMapping[7], b1 * 4 + 3);
  EXPECT_EQ(spec.slotMapping[8], b2 * 4 + 0);
  EXPECT_EQ(spec.slotMapping[9], b2 * 4 + 1);
  for (int t = 10; t < 16; ++t)
    EXPECT_EQ(spec.slotMapping[t], -1) << t;
  EXPECT_EQ(spec.queryStartLoc[0], 0);
  EXPECT_EQ(spec.queryStartLoc[1], 10);
  EXPECT_EQ(spec.queryStartLoc[2], 10) << "padding row is empty";
  EXPECT_EQ(spec.numComputed[0], 0);
  EXPECT_EQ(spec.numComputed[1], 0);
  EXPECT_EQ(checkBlockTable(engine.manager(), spec, {id}), "");
}

TEST(SequenceManagerTest, CommitReturnsBlocksLeavingTheWindowAtOnce) {
  TestEngine engine;
  SequenceId id = *engine.add(iota(10));
  ASSERT_EQ(engine.step({{id, 10}}), "");
  SequenceInfo info = *engine.manager().sequenceInfo(id);
  EXPECT_EQ(info.numComputed, 10);
  EXPECT_EQ(logicals(info), (std::vector<int32_t>{1, 2}));
  int32_t leaving = info.blocks[0].physical;
  ASSERT_TRUE(engine.manager().schedule(id, 1).isOk());
  EXPECT_EQ(engine.manager().pool().refCount(leaving), 1)
      << "the step at 10 reads history [7, 10) from block 1";
  ASSERT_TRUE(engine.manager().preempt(id).isOk());
  ASSERT_TRUE(engine.manager().resume(id, engine.tokens(id)).isOk());
  ASSERT_EQ(engine.step({{id, 10}}), "");
  leaving = engine.manager().sequenceInfo(id)->blocks[0].physical;
  // Committing position 10 makes c = 11: history [8, 11) is block 2 only.
  ASSERT_EQ(engine.decode(id, 1), "");
  info = *engine.manager().sequenceInfo(id);
  EXPECT_EQ(logicals(info), (std::vector<int32_t>{2}));
  EXPECT_EQ(engine.manager().pool().refCount(leaving), 0)
      << "freed at commit, not a step later";
  EXPECT_EQ(engine.manager().pool().numHeldBlocks(), 1);
}

TEST(SequenceManagerTest, DecodeNeverHoldsMoreThanTheBound) {
  for (int64_t kernel : {2, 3, 4, 5}) {
    EngineOptions options;
    options.kernel = kernel;
    TestEngine engine(options);
    SequenceId id = *engine.add(iota(3));
    ASSERT_EQ(engine.step({{id, 3}}), "");
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(engine.manager().schedule(id, 1).isOk());
      SequenceInfo during = *engine.manager().sequenceInfo(id);
      EXPECT_LE(static_cast<int64_t>(during.blocks.size()),
                engine.manager().maxBlocksPerSequence());
      ASSERT_TRUE(engine.manager().preempt(id).isOk());
      ASSERT_TRUE(engine.manager().resume(id, engine.tokens(id), 0).isOk());
      // Re-prefill the whole sequence, then decode one more token.
      ASSERT_EQ(
          engine.step({{id, static_cast<int64_t>(engine.tokens(id).size())}}),
          "");
      SequenceInfo between = *engine.manager().sequenceInfo(id);
      EXPECT_LE(static_cast<int64_t>(between.blocks.size()),
                engine.manager().maxBlocksBetweenSteps());
      ASSERT_EQ(engine.decode(id, 1), "");
    }
  }
}

TEST(SequenceManagerTest, LongPromptHoldsTwoBlocksNotTheChunk) {
  EngineOptions options;
  options.numBlocks = 8; // a 32K prompt fits only because of the window
  options.numCols = 8192 + 64;
  options.maxTokens = 32768 + 8;
  options.maxRows = 2;
  TestEngine engine(options);
  SequenceId id = *engine.add(iota(32768));
  ASSERT_TRUE(engine.manager().schedule(id, 32768).isOk());
  SequenceInfo during = *engine.manager().sequenceInfo(id);
  EXPECT_EQ(during.blocks.size(), 1u) << "positions [32765, 32768)";
  EXPECT_EQ(engine.manager().pool().numHeldBlocks(), 1);
  ASSERT_TRUE(engine.manager().preempt(id).isOk());
  ASSERT_TRUE(engine.manager().resume(id, engine.tokens(id)).isOk());
  ASSERT_EQ(engine.step({{id, 32768}}), "");
  EXPECT_EQ(engine.spec().slotMapping[32764], -1);
  EXPECT_NE(engine.spec().slotMapping[32765], -1);
  ASSERT_EQ(engine.decode(id, 9), "");
  EXPECT_LE(engine.manager().pool().numHeldBlocks(), 2);
}

TEST(SequenceManagerTest, BlockTableColumnsAreCheckedAgainstM) {
  EngineOptions options;
  options.numCols = 4;
  TestEngine engine(options);
  SequenceId id = *engine.add(iota(40));
  ASSERT_TRUE(engine.manager().schedule(id, 40).isOk());
  std::string before = engine.manager().debugString();
  SequenceId ids[] = {id};
  StatusOr<StepInfo> step =
      engine.manager().buildStep(ids, 1, {}, engine.stepBuffers());
  ASSERT_FALSE(step.isOk());
  EXPECT_EQ(step.status().code(), StatusCode::OutOfRange);
  EXPECT_NE(step.status().message().find("column 9"), std::string::npos)
      << step.status().message();
  EXPECT_EQ(engine.manager().debugString(), before);
  EXPECT_EQ(engine.spec().slotMapping[0], -1) << "nothing written";
}

TEST(SequenceManagerTest, ChunkedPrefillReadsThePreviousChunk) {
  TestEngine engine;
  SequenceId id = *engine.add(iota(23));
  ASSERT_EQ(engine.step({{id, 6}}), "");
  ASSERT_EQ(engine.step({{id, 1}}), "");
  ASSERT_EQ(engine.step({{id, 9}}), "");
  ASSERT_EQ(engine.run(id, 7, 5), "");
}

TEST(SequenceManagerTest, BatchRowsMoveBetweenSequences) {
  TestEngine engine;
  SequenceId a = *engine.add(iota(13, 100));
  SequenceId b = *engine.add(iota(6, 200));
  SequenceId c = *engine.add(iota(9, 300));
  ASSERT_EQ(engine.step({{a, 13}, {b, 6}, {c, 9}}, {6, 40}), "");
  EXPECT_EQ(engine.lastInfo().numTokens, 28);
  ASSERT_EQ(engine.step({{c, 1}, {a, 1}}, {4, 8}), "");
  ASSERT_EQ(engine.step({{b, 1}}), "");
  ASSERT_EQ(engine.step({{a, 1}, {b, 1}, {c, 1}}), "");
  ASSERT_TRUE(engine.manager().finish(b).isOk());
  ASSERT_EQ(engine.step({{c, 1}, {a, 1}}, {3, 4}), "");
}

//===----------------------------------------------------------------------===//
// Block sizes independent of the kernel
//===----------------------------------------------------------------------===//

TEST(SequenceManagerTest, BlockBoundsFollowTheBlockSize) {
  // span(m) = ceil((m-1)/N) + 1 blocks hold m positions at worst alignment.
  struct Case {
    int64_t kernel, n, lookahead, between, during;
  };
  for (Case c : {Case{4, 1, 0, 3, 6}, Case{4, 1, 3, 3, 9}, Case{4, 2, 0, 2, 4},
                 Case{4, 3, 0, 2, 4}, Case{4, 8, 3, 2, 4}, Case{4, 32, 8, 2, 4},
                 Case{8, 3, 2, 3, 7}}) {
    SequenceManagerConfig config;
    config.layout = testLayout(c.kernel, c.n);
    config.numBlocks = 8;
    config.lookahead = c.lookahead;
    auto manager = std::move(*SequenceManager::create(config));
    EXPECT_EQ(manager->blockSize(), c.n);
    EXPECT_EQ(manager->maxBlocksBetweenSteps(), c.between)
        << "W " << c.kernel << " N " << c.n;
    EXPECT_EQ(manager->maxBlocksPerSequence(), c.during)
        << "W " << c.kernel << " N " << c.n << " L " << c.lookahead;
  }
}

TEST(SequenceManagerTest, SmallBlocksHoldTheWholeHistory) {
  // N = 1 < W-1 = 3: the history spans three blocks, every one of which is
  // read; decoding moves the window one block per token.
  TestEngine engine(withBlockSize(1));
  SequenceId id = *engine.add(iota(10));
  ASSERT_EQ(engine.step({{id, 10}}), "");
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{7, 8, 9}));
  ASSERT_EQ(engine.decode(id, 5), "");
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{12, 13, 14}));
  // Speculative steps with rejections keep the history in the cache.
  EngineOptions spec = withBlockSize(1);
  spec.lookahead = 2;
  TestEngine drafts(spec);
  SequenceId d = *drafts.add(iota(6));
  ASSERT_EQ(drafts.step({{d, 6}}), "");
  ASSERT_EQ(drafts.step({{d, 3, 1, {70, 71}}}), "");
  ASSERT_EQ(drafts.step({{d, 3, 2, {72, 73}}}), "");
  ASSERT_EQ(drafts.decode(d, 4), "");
}

TEST(SequenceManagerTest, LargeBlocksHoldOneOrTwoBlocks) {
  // N = 16 > W: the history of a decoding sequence sits in one block until
  // it straddles a boundary.
  TestEngine engine(withBlockSize(16));
  SequenceId id = *engine.add(iota(40));
  ASSERT_EQ(engine.step({{id, 40}}), ""); // stores [37, 40): block 2
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{2}));
  ASSERT_EQ(engine.decode(id, 9), ""); // c = 49: history [46, 49)
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{2, 3}));
  ASSERT_EQ(engine.decode(id, 2), ""); // c = 51: history [48, 51)
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{3}));
}

} // namespace
