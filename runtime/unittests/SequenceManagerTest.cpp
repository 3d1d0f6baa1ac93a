//===- SequenceManagerTest.cpp - Window allocation, steps, sharing --------===//

#include "TestEngine.h"

#include <gtest/gtest.h>

#include <limits>

#include <numeric>

using namespace inkling;
using namespace inkling::testing;

namespace {

std::vector<int32_t> iota(int64_t count, int32_t first = 1) {
  std::vector<int32_t> tokens(count);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<int32_t> logicals(const SequenceInfo &info) {
  std::vector<int32_t> result;
  for (const MappedBlock &block : info.blocks)
    result.push_back(block.logical);
  return result;
}

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
  ASSERT_EQ(engine.step({{id, 7}}), "");
  ASSERT_EQ(engine.decode(id, 5), "");
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
// Speculative decoding
//===----------------------------------------------------------------------===//

TEST(SequenceManagerTest, SpeculativeDecodingEveryAcceptanceLength) {
  for (int64_t drafts : {1, 2, 3, 5, 8}) {
    for (int64_t accepted = 1; accepted <= drafts + 1; ++accepted) {
      EngineOptions options;
      options.lookahead = drafts;
      TestEngine engine(options);
      SequenceId id = *engine.add(iota(11));
      ASSERT_EQ(engine.step({{id, 11}}), "");
      ASSERT_EQ(engine.step(
                    {{id, 1 + drafts, accepted, {7, 7, 7, 7, 7, 7, 7, 7}, 42}}),
                "")
          << drafts << " drafts, " << accepted << " accepted";
      SequenceInfo info = *engine.manager().sequenceInfo(id);
      EXPECT_EQ(info.numComputed, 11 + accepted);
      EXPECT_LE(static_cast<int64_t>(info.blocks.size()), 2);
      // The next steps read the accepted history: no copy, no recompute.
      ASSERT_EQ(engine.step({{id, 1 + drafts, 1, {}, 43}}), "");
      ASSERT_EQ(engine.decode(id, 6), "");
    }
  }
}

TEST(SequenceManagerTest, RejectingMoreThanTheLookaheadIsAnError) {
  EngineOptions options;
  options.lookahead = 2;
  TestEngine engine(options);
  SequenceId id = *engine.add(iota(9));
  ASSERT_EQ(engine.step({{id, 9}}), "");
  ASSERT_TRUE(engine.manager().schedule(id, 4).isOk());
  std::string before = engine.manager().debugString();
  Status status = engine.manager().commit(id, 1);
  EXPECT_EQ(status.code(), StatusCode::OutOfRange);
  EXPECT_NE(status.message().find("rejects 3"), std::string::npos);
  EXPECT_EQ(engine.manager().debugString(), before);
  // Within the lookahead it succeeds.
  int32_t tokens[] = {5, 6};
  EXPECT_TRUE(engine.manager().commit(id, 2, tokens, 2).isOk());
}

//===----------------------------------------------------------------------===//
// Fork and copy-on-write
//===----------------------------------------------------------------------===//

TEST(SequenceManagerTest, ForkSharesBlocksAndCopiesOnWrite) {
  TestEngine engine;
  SequenceId parent = *engine.add(iota(10));
  ASSERT_EQ(engine.step({{parent, 10}}), "");
  SequenceId child = *engine.fork(parent);
  SequenceInfo before = *engine.manager().sequenceInfo(parent);
  for (const MappedBlock &block : before.blocks)
    EXPECT_EQ(engine.manager().pool().refCount(block.physical), 2);
  EXPECT_EQ(engine.manager().sequenceInfo(child)->blocks.size(), 2u);
  // c = 11 after the prompt's sampled token? No: c = 10, block 2 holds
  // history 8, 9 and receives position 10: the writer copies it.
  int32_t shared = before.blocks[1].physical;
  ASSERT_TRUE(engine.manager().schedule(parent, 1).isOk());
  SequenceInfo scheduled = *engine.manager().sequenceInfo(parent);
  ASSERT_TRUE(scheduled.hasCopy);
  EXPECT_EQ(scheduled.copy.src, shared);
  EXPECT_NE(scheduled.copy.dst, shared);
  EXPECT_EQ(scheduled.blocks[1].physical, scheduled.copy.dst);
  ASSERT_TRUE(engine.manager().preempt(parent).isOk());
  EXPECT_EQ(engine.manager().pool().refCount(shared), 1) << "copy source freed";
  ASSERT_TRUE(engine.manager().resume(parent, engine.tokens(parent)).isOk());
  ASSERT_EQ(engine.step({{parent, 11}}), "");
  // Now fork again and run both branches in one step with different tokens.
  SequenceId sibling = *engine.fork(parent);
  ASSERT_EQ(engine.step({{parent, 1, -1, {}, 71}, {sibling, 1, -1, {}, 72}}),
            "");
  EXPECT_EQ(engine.lastInfo().numCopies, 2)
      << "both writers copy: the source stays referenced until commit";
  ASSERT_EQ(engine.step({{sibling, 1, -1, {}, 73}, {parent, 1, -1, {}, 74}}),
            "");
  EXPECT_EQ(engine.lastInfo().numCopies, 0);
  ASSERT_EQ(engine.decode(child, 3), "");
  ASSERT_EQ(engine.decode(sibling, 3), "");
  ASSERT_EQ(engine.decode(parent, 3), "");
}

TEST(SequenceManagerTest, ForkAtABlockBoundaryNeedsNoCopy) {
  TestEngine engine;
  SequenceId parent = *engine.add(iota(12));
  ASSERT_EQ(engine.step({{parent, 12}}), "");
  SequenceId child = *engine.fork(parent);
  ASSERT_EQ(engine.step({{parent, 1, -1, {}, 5}, {child, 1, -1, {}, 6}}), "");
  EXPECT_EQ(engine.lastInfo().numCopies, 0);
}

//===----------------------------------------------------------------------===//
// Prefix caching
//===----------------------------------------------------------------------===//

TEST(SequenceManagerTest, PrefixHitResumesWithOneBlock) {
  TestEngine engine;
  std::vector<int32_t> prompt = iota(16);
  SequenceId first = *engine.add(prompt);
  ASSERT_EQ(engine.step({{first, 16}}), "");
  ASSERT_TRUE(engine.manager().finish(first).isOk());

  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), {90, 91, 92});
  EXPECT_EQ(*engine.manager().longestCachedPrefix(longer.data(), 19, 100), 16);
  EXPECT_EQ(*engine.manager().longestCachedPrefix(longer.data(), 19, 15), 0)
      << "block 2 was never fully stored: only [13, 16) were";
  SequenceId second = *engine.add(longer, 16);
  SequenceInfo info = *engine.manager().sequenceInfo(second);
  EXPECT_EQ(info.numComputed, 16);
  ASSERT_EQ(info.blocks.size(), 1u);
  EXPECT_EQ(info.blocks[0].logical, 3);
  ASSERT_EQ(engine.step({{second, 3}}), "");
  ASSERT_EQ(engine.decode(second, 6), "");
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
  EngineOptions options;
  options.blockSize = 1;
  TestEngine engine(options);
  SequenceId id = *engine.add(iota(10));
  ASSERT_EQ(engine.step({{id, 10}}), "");
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{7, 8, 9}));
  ASSERT_EQ(engine.decode(id, 5), "");
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(id)),
            (std::vector<int32_t>{12, 13, 14}));
  // Speculative steps with rejections keep the history in the cache.
  EngineOptions spec = options;
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
  EngineOptions options;
  options.blockSize = 16;
  TestEngine engine(options);
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

TEST(SequenceManagerTest, PrefixHitTakesEveryHistoryBlockWhenNIsSmall) {
  // N = 2, W = 4: a resume at p reads [p-3, p), blocks p/2 - 2 and p/2 - 1.
  EngineOptions options;
  options.blockSize = 2;
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(12);
  SequenceId first = *engine.add(prompt);
  ASSERT_EQ(engine.step({{first, 12}}), ""); // stores [9, 12)
  // Block 4 = [8, 10) holds only 9: not cacheable (8 was never stored).
  // Block 5 = [10, 12) is, but a resume at 12 also needs position 9.
  EXPECT_EQ(*engine.manager().longestCachedPrefix(prompt.data(), 12, 12), 0);
  ASSERT_EQ(engine.decode(first, 4), ""); // blocks 6 and 7 complete
  std::vector<int32_t> all = engine.tokens(first);
  ASSERT_TRUE(engine.manager().finish(first).isOk());
  // Resumes at 14 (blocks 5, 6) and 16 (blocks 6, 7) have every block.
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 99),
            16);
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 15),
            14);
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 13),
            0);
  EXPECT_EQ(engine.manager().addSequence(all, 12).status().code(),
            StatusCode::NotFound);
  SequenceId second = *engine.add(all, 14);
  SequenceInfo info = *engine.manager().sequenceInfo(second);
  EXPECT_EQ(info.numComputed, 14);
  EXPECT_EQ(logicals(info), (std::vector<int32_t>{5, 6}));
  // The hit blocks are shared with the cache: the step reads them.
  ASSERT_EQ(engine.step({{second, 3}}), "");
  ASSERT_EQ(engine.decode(second, 5), "");
}

TEST(SequenceManagerTest, PrefixHitAtNOneNeedsThreeBlocks) {
  EngineOptions options;
  options.blockSize = 1;
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(8);
  SequenceId first = *engine.add(prompt);
  ASSERT_EQ(engine.step({{first, 8}}), ""); // stores [5, 8)
  std::vector<int32_t> all = engine.tokens(first);
  // Blocks 5, 6, 7 are cached: resumes at 8 (needs 5..7); 7 needs 4..6.
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), 8, 99), 8);
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), 8, 7), 0);
  ASSERT_TRUE(engine.manager().preempt(first).isOk());
  ASSERT_TRUE(engine.manager().resume(first, all, 8).isOk());
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(first)),
            (std::vector<int32_t>{5, 6, 7}));
  ASSERT_EQ(engine.decode(first, 3), "");
}

TEST(SequenceManagerTest, ForkCopiesOnWriteAtAnyBlockSize) {
  for (int64_t n : {1, 3, 8}) {
    EngineOptions options;
    options.blockSize = n;
    TestEngine engine(options);
    SequenceId parent = *engine.add(iota(13));
    ASSERT_EQ(engine.step({{parent, 13}}), "") << n;
    SequenceId child = *engine.fork(parent);
    ASSERT_EQ(engine.step({{parent, 1}, {child, 1}}), "") << n;
    // 13 % N != 0 for N = 3 and 8: both write into the shared block.
    EXPECT_EQ(engine.lastInfo().numCopies, n == 1 ? 0 : 2) << n;
    ASSERT_EQ(engine.decode(child, 5), "") << n;
    ASSERT_EQ(engine.decode(parent, 5), "") << n;
  }
}

TEST(SequenceManagerTest, DecodedBlocksAreCachedAndEvictedLru) {
  EngineOptions options;
  options.numBlocks = 6;
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(5);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.step({{id, 5}}), "");
  ASSERT_EQ(engine.decode(id, 8), "");
  std::vector<int32_t> all = engine.tokens(id);
  ASSERT_TRUE(engine.manager().finish(id).isOk());
  // Blocks ending at 8 and 12 were completed by decoding.
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 100),
            12);
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 11),
            8);
  // Fill the pool with an unrelated sequence: the oldest cached block goes.
  SequenceId other = *engine.add(iota(40, 1000));
  ASSERT_EQ(engine.step({{other, 40}}), "");
  ASSERT_EQ(engine.decode(other, 12), "");
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 11),
            0);
  EXPECT_EQ(engine.manager().addSequence(all, 8).status().code(),
            StatusCode::NotFound);
}

// Async decode: every step is scheduled before its first token arrives.
// Blocks and slots do not depend on token ids, so the steps are the same;
// a block's hash completes when its last token arrives, and the block is a
// prefix hit once the step computing it commits, as with synchronous
// decoding.
TEST(SequenceManagerTest, AsyncDecodeCachesBlocksWhenTheirTokensArrive) {
  EngineOptions options;
  TestEngine engine(options);
  SequenceManager &m = engine.manager();
  std::vector<int32_t> tokens = iota(5);
  SequenceId id = *engine.add(tokens);
  ASSERT_TRUE(m.schedule(id, 5).isOk());
  SequenceId ids[] = {id};
  ASSERT_TRUE(m.buildStep(ids, 1, StepShape(), engine.stepBuffers()).isOk());
  ASSERT_TRUE(m.commit(id, 5).isOk()); // the sampled token comes later
  for (int32_t token = 100; token < 108; ++token) {
    ASSERT_TRUE(m.scheduleAhead(id, 1).isOk());
    int64_t c = m.sequenceInfo(id)->numComputed;
    // Scheduled without its token: the longest hit is the last whole
    // block below c (N = 4), computed and with every token known (block 0
    // is not resumable: the prefill stored only its last positions).
    EXPECT_EQ(*m.longestCachedPrefix(tokens.data(), tokens.size(), 100),
              c >= 8 ? c / 4 * 4 : 0)
        << c;
    ASSERT_TRUE(m.appendTokens(id, &token, 1).isOk());
    tokens.push_back(token);
    ASSERT_TRUE(m.buildStep(ids, 1, StepShape(), engine.stepBuffers()).isOk());
    ASSERT_TRUE(m.commit(id, 1).isOk());
  }
  // 13 positions computed: blocks [0, 4), [4, 8), [8, 12) complete.
  EXPECT_EQ(m.sequenceInfo(id)->numComputed, 13);
  EXPECT_EQ(*m.longestCachedPrefix(tokens.data(), tokens.size(), 100), 12);
  EXPECT_TRUE(m.checkInvariants().isOk());
}

TEST(SequenceManagerTest, PreemptedSequenceResumesAtItsOwnCachedPrefix) {
  TestEngine engine;
  SequenceId id = *engine.add(iota(7));
  ASSERT_EQ(engine.step({{id, 7}}), "");
  ASSERT_EQ(engine.decode(id, 6), ""); // c = 13, block [8, 12) cached
  ASSERT_TRUE(engine.manager().preempt(id).isOk());
  EXPECT_EQ(engine.manager().pool().numHeldBlocks(), 0);
  const std::vector<int32_t> &tokens = engine.tokens(id);
  int64_t hit =
      *engine.manager().longestCachedPrefix(tokens.data(), tokens.size(), 100);
  EXPECT_EQ(hit, 12);
  // resume takes the engine's token ids (the runtime keeps only the
  // window's hashes) and checks that they are the sequence's own.
  std::vector<int32_t> wrong = tokens;
  wrong[2] += 1;
  EXPECT_EQ(engine.manager().resume(id, wrong, hit).code(),
            StatusCode::InvalidArgument);
  std::vector<int32_t> shorter(tokens.begin(), tokens.end() - 1);
  EXPECT_EQ(engine.manager().resume(id, shorter, hit).code(),
            StatusCode::InvalidArgument);
  std::vector<int32_t> wrongTail = tokens;
  wrongTail.back() += 1;
  EXPECT_EQ(engine.manager().resume(id, wrongTail, hit).code(),
            StatusCode::InvalidArgument);
  ASSERT_TRUE(engine.manager().resume(id, tokens, hit).isOk());
  EXPECT_EQ(engine.manager().sequenceInfo(id)->blocks.size(), 1u);
  ASSERT_EQ(engine.step({{id, 2}}), "");
  ASSERT_EQ(engine.decode(id, 4), "");
}

TEST(SequenceManagerTest, ChunkWithGapIsNotCachedBelowItsWindow) {
  // A block whose tail was skipped (slot -1) must not be registered.
  TestEngine engine;
  std::vector<int32_t> prompt = iota(14);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.step({{id, 14}}), ""); // stores [11, 14)
  EXPECT_EQ(*engine.manager().longestCachedPrefix(prompt.data(), 14, 14), 0);
  ASSERT_EQ(engine.decode(id, 2), ""); // completes block 3 = [12, 16)
  std::vector<int32_t> all = engine.tokens(id);
  EXPECT_EQ(*engine.manager().longestCachedPrefix(all.data(), all.size(), 99),
            16);
}

TEST(SequenceManagerTest, PrefixCachingOff) {
  EngineOptions options;
  options.prefixCaching = false;
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(16);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.step({{id, 16}}), "");
  EXPECT_EQ(*engine.manager().longestCachedPrefix(prompt.data(), 16, 16), 0);
  EXPECT_EQ(engine.manager().addSequence(prompt, 16).status().code(),
            StatusCode::FailedPrecondition);
}

//===----------------------------------------------------------------------===//
// Errors change nothing
//===----------------------------------------------------------------------===//

class ErrorTest : public ::testing::Test {
protected:
  void SetUp() override {
    EngineOptions options;
    options.numBlocks = 5;
    options.numCols = 8;
    options.maxTokens = 12;
    options.maxRows = 2;
    options.maxCopies = 0;
    engine = std::make_unique<TestEngine>(options);
    idle = *engine->add(iota(9));
    ASSERT_EQ(engine->step({{idle, 9}}), "");
    scheduled = *engine->add(iota(6, 50));
    ASSERT_TRUE(engine->manager().schedule(scheduled, 2).isOk());
  }

  /// Runs `call`, expects `code` and a message containing `needle`, and an
  /// unchanged state.
  void expectError(const std::function<Status()> &call, StatusCode code,
                   const std::string &needle) {
    std::string before = engine->manager().debugString();
    Status status = call();
    EXPECT_EQ(status.code(), code) << status.toString();
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << "message: " << status.message() << "\nmissing: " << needle;
    EXPECT_EQ(engine->manager().debugString(), before);
    EXPECT_TRUE(engine->manager().checkInvariants().isOk());
  }

  std::unique_ptr<TestEngine> engine;
  SequenceId idle = 0, scheduled = 0;
};

TEST_F(ErrorTest, FailingCallsLeaveTheStateUnchanged) {
  SequenceManager &m = engine->manager();
  SequenceId unknown = idle + 12345;
  int32_t token = 3;
  expectError([&] { return m.schedule(unknown, 1); }, StatusCode::NotFound,
              std::to_string(unknown));
  expectError([&] { return m.schedule(scheduled, 1); },
              StatusCode::FailedPrecondition, "already has a scheduled step");
  expectError([&] { return m.schedule(idle, 0); }, StatusCode::InvalidArgument,
              "schedule 0 tokens");
  expectError([&] { return m.schedule(idle, int64_t(1) << 31); },
              StatusCode::OutOfRange, "position limit");
  expectError([&] { return m.commit(idle, 1); }, StatusCode::FailedPrecondition,
              "no scheduled step");
  expectError([&] { return m.commit(scheduled, 3); }, StatusCode::OutOfRange,
              "cannot accept 3");
  expectError([&] { return m.commit(scheduled, -1); }, StatusCode::OutOfRange,
              "cannot accept -1");
  // Found by the C API fuzzer: the accepted count was added to num_computed
  // before its range check (signed overflow).
  expectError(
      [&] {
        return m.commit(scheduled, std::numeric_limits<int64_t>::max() - 1);
      },
      StatusCode::OutOfRange, "cannot accept 9223372036854775806");
  expectError(
      [&] { return m.commit(scheduled, std::numeric_limits<int64_t>::min()); },
      StatusCode::OutOfRange, "cannot accept");
  expectError([&] { return m.commit(scheduled, 2, nullptr, 2); },
              StatusCode::InvalidArgument, "null token pointer");
  expectError([&] { return m.appendTokens(idle, &token, -1); },
              StatusCode::InvalidArgument, "-1");
  expectError([&] { return m.resume(idle, engine->tokens(idle), 0); },
              StatusCode::FailedPrecondition, "not preempted");
  expectError([&] { return m.finish(unknown); }, StatusCode::NotFound,
              "unknown sequence id");
  expectError([&] { return m.fork(scheduled).status(); },
              StatusCode::FailedPrecondition, "cannot fork");
  expectError([&] { return m.addSequence(nullptr, 3).status(); },
              StatusCode::InvalidArgument, "null token pointer");
  expectError([&] { return m.addSequence(iota(8), 6).status(); },
              StatusCode::InvalidArgument, "start position (6)");
  expectError([&] { return m.addSequence(iota(8), 12).status(); },
              StatusCode::OutOfRange, "exceeds the 8 known tokens");
  expectError([&] { return m.addSequence(iota(8, 70), 8).status(); },
              StatusCode::NotFound, "no cached block");
  expectError([&] { return m.longestCachedPrefix(&token, 1, -2).status(); },
              StatusCode::InvalidArgument, "max length (-2)");
}

TEST_F(ErrorTest, OutOfBlocksChangesNothing) {
  SequenceManager &m = engine->manager();
  // 4 usable blocks: idle holds 2, scheduled holds 1 (positions [5, 8)? no:
  // [3, 8) minus... ) -- ask the pool rather than guess.
  int64_t free = m.pool().numFreeBlocks();
  SequenceId hungry = *engine->add(iota(12, 80));
  // 12 tokens store [9, 12): logical block 2 only; make it need 2 blocks.
  for (int64_t i = 0; i < free; ++i) {
    SequenceId filler = *engine->add(iota(4, 90 + int32_t(i)));
    ASSERT_TRUE(m.schedule(filler, 4).isOk());
  }
  ASSERT_EQ(m.pool().numFreeBlocks(), 0);
  expectError([&] { return m.schedule(hungry, 12); }, StatusCode::OutOfBlocks,
              "only 0 are free");
}

TEST_F(ErrorTest, BuildStepValidatesBeforeWriting) {
  SequenceManager &m = engine->manager();
  StepBuffers &buffers = engine->stepBuffers();
  auto build = [&](std::vector<SequenceId> ids, StepShape shape) {
    return [&m, &buffers, ids, shape] {
      return m.buildStep(ids.data(), ids.size(), shape, buffers).status();
    };
  };
  std::vector<int32_t> tableBefore(engine->spec().blockTable,
                                   engine->spec().blockTable + 16);
  expectError(build({idle}, {}), StatusCode::FailedPrecondition,
              "has no scheduled step");
  expectError(build({scheduled, scheduled}, {}), StatusCode::InvalidArgument,
              "appears twice");
  expectError(build({scheduled}, {1, 1}), StatusCode::InvalidArgument,
              "padded token count (1)");
  expectError(build({scheduled}, {1, 13}), StatusCode::OutOfRange,
              "13 slot_mapping entries");
  expectError(build({scheduled}, {3, 0}), StatusCode::OutOfRange, "3 rows");
  expectError(build({scheduled, idle + 99}, {}), StatusCode::NotFound,
              "unknown sequence id");
  EXPECT_EQ(std::vector<int32_t>(engine->spec().blockTable,
                                 engine->spec().blockTable + 16),
            tableBefore);
}

TEST(SequenceManagerTest, CopiesNeedRoomInTheCopyBuffer) {
  EngineOptions options;
  options.maxCopies = 0;
  TestEngine engine(options);
  SequenceId parent = *engine.add(iota(10));
  ASSERT_EQ(engine.step({{parent, 10}}), "");
  SequenceId child = *engine.fork(parent);
  (void)child;
  ASSERT_TRUE(engine.manager().schedule(parent, 1).isOk());
  SequenceId ids[] = {parent};
  StatusOr<StepInfo> step =
      engine.manager().buildStep(ids, 1, {}, engine.stepBuffers());
  EXPECT_EQ(step.status().code(), StatusCode::OutOfRange);
  EXPECT_NE(step.status().message().find("copy-on-write"), std::string::npos);
}

TEST(SequenceManagerTest, StepBuffersBelongToTheirManager) {
  TestEngine a, b;
  SequenceId id = *a.add(iota(3));
  ASSERT_TRUE(a.manager().schedule(id, 3).isOk());
  StatusOr<StepInfo> step =
      a.manager().buildStep(&id, 1, StepShape(), b.stepBuffers());
  EXPECT_EQ(step.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(step.status().message().find("another manager"), std::string::npos);
  OwnedStepBuffers owned(2, 8, 8, 0);
  StepBuffers unowned = std::move(*StepBuffers::bind(owned.spec, 8));
  EXPECT_EQ(a.manager().buildStep(&id, 1, StepShape(), unowned).status().code(),
            StatusCode::InvalidArgument);
}

TEST(SequenceManagerTest, FinishedIdsAreNeverReused) {
  TestEngine engine;
  SequenceId a = *engine.add(iota(3));
  ASSERT_TRUE(engine.manager().finish(a).isOk());
  SequenceId b = *engine.add(iota(3));
  EXPECT_NE(a, b);
  EXPECT_EQ(engine.manager().schedule(a, 1).code(), StatusCode::NotFound);
  EXPECT_TRUE(engine.manager().schedule(b, 3).isOk());
  // Finishing a scheduled sequence releases its step's blocks too.
  ASSERT_TRUE(engine.manager().finish(b).isOk());
  EXPECT_EQ(engine.manager().pool().numHeldBlocks(), 0);
  EXPECT_TRUE(engine.manager().checkInvariants().isOk());
}

} // namespace

namespace {

TEST(SequenceManagerBatchTest, BatchesApplyEverythingOrNothing) {
  EngineOptions options;
  options.numBlocks = 7; // 6 usable
  TestEngine engine(options);
  SequenceManager &m = engine.manager();
  std::vector<SequenceId> ids;
  for (int32_t s = 0; s < 3; ++s)
    ids.push_back(*engine.add(iota(10, 100 * s)));
  // 10-token prompts store [7, 10): blocks 1 and 2 each, 6 in all.
  std::vector<int64_t> ten(3, 10);
  ASSERT_TRUE(m.scheduleBatch(ids.data(), ten.data(), 3).isOk());
  EXPECT_EQ(m.pool().numFreeBlocks(), 0);
  std::vector<int32_t> sampled = {1, 2, 3};
  std::vector<int64_t> offsets = {0, 1, 2, 3};
  ASSERT_TRUE(
      m.commitBatch(ids.data(), ten.data(), offsets.data(), sampled.data(), 3)
          .isOk());
  // The history [7, 10) keeps both blocks; decoding position 10 needs none,
  // a new 12-token prompt needs one.
  std::vector<int64_t> one(3, 1);
  EXPECT_EQ(m.pool().numFreeBlocks(), 0);
  SequenceId extra = *engine.add(iota(12, 900));
  std::vector<SequenceId> four = ids;
  four.push_back(extra);
  std::vector<int64_t> counts = {1, 1, 1, 12};
  std::string before = m.debugString();
  Status status = m.scheduleBatch(four.data(), counts.data(), 4);
  EXPECT_EQ(status.code(), StatusCode::OutOfBlocks) << status.toString();
  EXPECT_NE(status.message().find("nothing was scheduled"), std::string::npos);
  EXPECT_EQ(m.debugString(), before);
  // A repeated id, a bad count: nothing happens either.
  std::vector<SequenceId> repeated = {ids[0], ids[1], ids[0]};
  EXPECT_EQ(m.scheduleBatch(repeated.data(), one.data(), 3).code(),
            StatusCode::InvalidArgument);
  std::vector<int64_t> bad = {1, 0, 1};
  EXPECT_EQ(m.scheduleBatch(ids.data(), bad.data(), 3).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(m.debugString(), before);
  ASSERT_TRUE(m.scheduleBatch(ids.data(), one.data(), 3).isOk());
  // Commit: the last entry accepts too many; nothing is committed.
  std::vector<int64_t> accepted = {1, 1, 2};
  before = m.debugString();
  EXPECT_EQ(m.commitBatch(ids.data(), accepted.data(), offsets.data(),
                          sampled.data(), 3)
                .code(),
            StatusCode::OutOfRange);
  std::vector<int64_t> backwards = {0, 1, 0, 3};
  EXPECT_EQ(
      m.commitBatch(ids.data(), one.data(), backwards.data(), sampled.data(), 3)
          .code(),
      StatusCode::InvalidArgument);
  EXPECT_EQ(m.debugString(), before);
  ASSERT_TRUE(
      m.commitBatch(ids.data(), one.data(), offsets.data(), sampled.data(), 3)
          .isOk());
  EXPECT_TRUE(m.checkInvariants().isOk());
}

} // namespace

//===----------------------------------------------------------------------===//
// Prefix policies (snapshots), cache points, extra keys
//===----------------------------------------------------------------------===//

namespace {
EngineOptions policyOptions(PrefixPolicy policy) {
  EngineOptions options;
  options.prefixPolicy = policy;
  return options;
}
} // namespace

TEST(SequenceManagerTest, SnapshotsMakeTheChunkEndResumable) {
  // One 30-token chunk, W = N = 4: the window stores [27, 30), which holds
  // no block boundary's history; the snapshots policy also stores [25, 28)
  // (the chunk end's boundary 28) and the boundaries N * 2^k (4, 8, 16).
  std::vector<int32_t> prompt = iota(30);
  for (PrefixPolicy policy : {PrefixPolicy::Window, PrefixPolicy::Snapshots,
                              PrefixPolicy::EveryBlock}) {
    TestEngine engine(policyOptions(policy));
    SequenceId id = *engine.add(prompt);
    ASSERT_EQ(engine.step({{id, 30}}), "") << prefixPolicyName(policy);
    // Snapshot blocks are cached, not held: under every policy the
    // sequence holds its history [27, 30), blocks 6 and 7.
    EXPECT_EQ(engine.manager().pool().numHeldBlocks(), 2);
    EXPECT_EQ(engine.manager().numSnapshotBlocks(), 0);
    int64_t hit = *engine.manager().longestCachedPrefix(prompt.data(), 30, 30);
    int64_t atTen =
        *engine.manager().longestCachedPrefix(prompt.data(), 30, 10);
    if (policy == PrefixPolicy::Window) {
      EXPECT_EQ(hit, 0);
      continue;
    }
    EXPECT_EQ(hit, 28) << prefixPolicyName(policy);
    EXPECT_EQ(atTen, 8) << prefixPolicyName(policy);
    // A second request resumes there; the simulated kernels check that the
    // history it reads is its own prefix's.
    std::vector<int32_t> other = prompt;
    other.push_back(77);
    SequenceId second = *engine.add(other, hit);
    ASSERT_EQ(engine.step({{second, 3}}), "");
    ASSERT_EQ(engine.decode(second, 5), "");
  }
}

TEST(SequenceManagerTest, SnapshotBlocksDuringAStep) {
  // Every-block on a 64-token chunk: the blocks before each boundary's
  // history are snapshot blocks while the step runs, released at commit.
  TestEngine engine(policyOptions(PrefixPolicy::EveryBlock));
  SequenceId id = *engine.add(iota(64));
  ASSERT_TRUE(engine.manager().schedule(id, 64).isOk());
  SequenceInfo info = *engine.manager().sequenceInfo(id);
  // Boundaries 4..60 need blocks 0..14; 64's history is the window's.
  EXPECT_EQ(info.snapshotBlocks.size(), 15u);
  EXPECT_EQ(engine.manager().numSnapshotBlocks(), 15);
  ASSERT_TRUE(engine.manager().checkInvariants().isOk());
  int32_t sampled = 5;
  ASSERT_TRUE(engine.manager().commit(id, 64, &sampled, 1).isOk());
  EXPECT_EQ(engine.manager().numSnapshotBlocks(), 0);
  EXPECT_EQ(engine.manager().prefixCache().size(), 16);
  ASSERT_TRUE(engine.manager().checkInvariants().isOk());
}

TEST(SequenceManagerTest, CachePointsAndExtraKeys) {
  TestEngine engine(policyOptions(PrefixPolicy::Snapshots));
  SequenceManager &m = engine.manager();
  std::vector<int32_t> prompt = iota(60);
  const uint8_t salt[] = {1, 2, 3};
  const uint8_t pepper[] = {1, 2, 4};
  int64_t points[] = {41};
  StatusOr<SequenceId> id =
      m.addSequence(prompt.data(), 60, 0, points, 1, salt, sizeof salt);
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  ASSERT_TRUE(m.schedule(*id, 60).isOk());
  int32_t sampled = 9;
  ASSERT_TRUE(m.commit(*id, 60, &sampled, 1).isOk());
  ASSERT_TRUE(m.checkInvariants().isOk());
  // The cache point 41 snapshots boundary 40; only under the same keys.
  EXPECT_EQ(*m.longestCachedPrefix(prompt.data(), 60, 44, salt, sizeof salt),
            40);
  EXPECT_EQ(
      *m.longestCachedPrefix(prompt.data(), 60, 44, pepper, sizeof pepper), 0);
  EXPECT_EQ(*m.longestCachedPrefix(prompt.data(), 60, 44), 0);
  // A start under other keys is not a hit.
  EXPECT_EQ(
      m.addSequence(prompt.data(), 60, 40, nullptr, 0, pepper, sizeof pepper)
          .status()
          .code(),
      StatusCode::NotFound);
  StatusOr<SequenceId> again =
      m.addSequence(prompt.data(), 60, 40, nullptr, 0, salt, sizeof salt);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  ASSERT_TRUE(m.checkInvariants().isOk());
}

TEST(SequenceManagerTest, BadPrefixInputsAreNamedAndChangeNothing) {
  TestEngine engine(policyOptions(PrefixPolicy::Snapshots));
  SequenceManager &m = engine.manager();
  std::vector<int32_t> prompt = iota(20);
  ASSERT_TRUE(engine.add(prompt).isOk());
  std::string before = m.debugString();
  auto expectError = [&](const Status &status, StatusCode code,
                         const std::string &text) {
    EXPECT_EQ(status.code(), code) << status.toString();
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.toString();
    EXPECT_EQ(m.debugString(), before);
  };
  auto add = [&](std::vector<int64_t> points) {
    return m.addSequence(prompt.data(), 20, 0, points.data(), points.size())
        .status();
  };
  expectError(add({5, 3}), StatusCode::InvalidArgument, "cache point 1 (3)");
  expectError(add({5, 5}), StatusCode::InvalidArgument, "cache point 1 (5)");
  expectError(add({0}), StatusCode::OutOfRange, "cache point 0 (0)");
  expectError(add({21}), StatusCode::OutOfRange, "cache point 0 (21)");
  expectError(m.addSequence(prompt.data(), 20, 0, nullptr, 2).status(),
              StatusCode::InvalidArgument, "cache point count (2)");
  std::vector<uint8_t> keys(kMaxExtraKeyBytes + 1);
  expectError(
      m.addSequence(prompt.data(), 20, 0, nullptr, 0, keys.data(), keys.size())
          .status(),
      StatusCode::InvalidArgument, "extra keys of 4097 bytes");
  expectError(
      m.longestCachedPrefix(prompt.data(), 20, 20, keys.data(), keys.size())
          .status(),
      StatusCode::InvalidArgument, "extra keys of 4097 bytes");
  expectError(m.setPrefixPolicy(PrefixPolicy::Snapshots, 0),
              StatusCode::InvalidArgument, "snapshot interval S (0 blocks)");
  expectError(m.setPrefixPolicy(PrefixPolicy::Snapshots, kMaxSnapshotEvery + 1),
              StatusCode::InvalidArgument, "(1048577 blocks)");
  expectError(m.setPrefixPolicy(static_cast<PrefixPolicy>(7), 8),
              StatusCode::InvalidArgument, "prefix policy (7)");
  EXPECT_EQ(parsePrefixPolicy("lru").status().code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(*parsePrefixPolicy("every-block"), PrefixPolicy::EveryBlock);
  SequenceManagerConfig config;
  config.layout = testLayout(4);
  config.numBlocks = 8;
  config.snapshotEvery = -3;
  EXPECT_NE(SequenceManager::create(config).status().message().find("(-3"),
            std::string::npos);
}
