//===- SequencePrefixTest.cpp - Prefix caching and policies ---------------===//

#include "SequenceTestUtil.h"

#include <gtest/gtest.h>

using namespace inkling;
using namespace inkling::testing;

namespace {

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
  EXPECT_EQ(longestHit(engine, longer, 100, 19), 16);
  EXPECT_EQ(longestHit(engine, longer, 15, 19), 0)
      << "block 2 was never fully stored: only [13, 16) were";
  SequenceId second = 0;
  ASSERT_EQ(addAtHit(engine, longer, 16, second), (std::vector<int32_t>{3}));
  ASSERT_EQ(engine.run(second, 3, 6), "");
}

TEST(SequenceManagerTest, PrefixHitTakesEveryHistoryBlockWhenNIsSmall) {
  // N = 2, W = 4: a resume at p reads [p-3, p), blocks p/2 - 2 and p/2 - 1.
  TestEngine engine(withBlockSize(2));
  std::vector<int32_t> prompt = iota(12);
  SequenceId first = *engine.add(prompt);
  ASSERT_EQ(engine.step({{first, 12}}), ""); // stores [9, 12)
  // Block 4 = [8, 10) holds only 9: not cacheable (8 was never stored).
  // Block 5 = [10, 12) is, but a resume at 12 also needs position 9.
  EXPECT_EQ(longestHit(engine, prompt, 12, 12), 0);
  ASSERT_EQ(engine.decode(first, 4), ""); // blocks 6 and 7 complete
  std::vector<int32_t> all = engine.tokens(first);
  ASSERT_TRUE(engine.manager().finish(first).isOk());
  // Resumes at 14 (blocks 5, 6) and 16 (blocks 6, 7) have every block.
  EXPECT_EQ(longestHit(engine, all, 99), 16);
  EXPECT_EQ(longestHit(engine, all, 15), 14);
  EXPECT_EQ(longestHit(engine, all, 13), 0);
  EXPECT_EQ(engine.manager().addSequence(all, 12).status().code(),
            StatusCode::NotFound);
  SequenceId second = 0;
  ASSERT_EQ(addAtHit(engine, all, 14, second), (std::vector<int32_t>{5, 6}));
  // The hit blocks are shared with the cache: the step reads them.
  ASSERT_EQ(engine.run(second, 3, 5), "");
}

TEST(SequenceManagerTest, PrefixHitAtNOneNeedsThreeBlocks) {
  TestEngine engine(withBlockSize(1));
  std::vector<int32_t> prompt = iota(8);
  SequenceId first = *engine.add(prompt);
  ASSERT_EQ(engine.step({{first, 8}}), ""); // stores [5, 8)
  std::vector<int32_t> all = engine.tokens(first);
  // Blocks 5, 6, 7 are cached: resumes at 8 (needs 5..7); 7 needs 4..6.
  EXPECT_EQ(longestHit(engine, all, 99, 8), 8);
  EXPECT_EQ(longestHit(engine, all, 7, 8), 0);
  ASSERT_TRUE(engine.manager().preempt(first).isOk());
  ASSERT_TRUE(engine.manager().resume(first, all, 8).isOk());
  EXPECT_EQ(logicals(*engine.manager().sequenceInfo(first)),
            (std::vector<int32_t>{5, 6, 7}));
  ASSERT_EQ(engine.decode(first, 3), "");
}

TEST(SequenceManagerTest, DecodedBlocksAreCachedAndEvictedLru) {
  EngineOptions options;
  options.numBlocks = 6;
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(5);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.run(id, 5, 8), "");
  std::vector<int32_t> all = engine.tokens(id);
  ASSERT_TRUE(engine.manager().finish(id).isOk());
  // Blocks ending at 8 and 12 were completed by decoding.
  EXPECT_EQ(longestHit(engine, all, 100), 12);
  EXPECT_EQ(longestHit(engine, all, 11), 8);
  // Fill the pool with an unrelated sequence: the oldest cached block goes.
  SequenceId other = *engine.add(iota(40, 1000));
  ASSERT_EQ(engine.run(other, 40, 12), "");
  EXPECT_EQ(longestHit(engine, all, 11), 0);
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
  ASSERT_EQ(engine.run(id, 7, 6), ""); // c = 13, block [8, 12) cached
  ASSERT_TRUE(engine.manager().preempt(id).isOk());
  EXPECT_EQ(engine.manager().pool().numHeldBlocks(), 0);
  const std::vector<int32_t> &tokens = engine.tokens(id);
  int64_t hit = longestHit(engine, tokens, 100);
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
  ASSERT_EQ(engine.run(id, 2, 4), "");
}

TEST(SequenceManagerTest, ChunkWithGapIsNotCachedBelowItsWindow) {
  // A block whose tail was skipped (slot -1) must not be registered.
  TestEngine engine;
  std::vector<int32_t> prompt = iota(14);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.step({{id, 14}}), ""); // stores [11, 14)
  EXPECT_EQ(longestHit(engine, prompt, 14, 14), 0);
  ASSERT_EQ(engine.decode(id, 2), ""); // completes block 3 = [12, 16)
  std::vector<int32_t> all = engine.tokens(id);
  EXPECT_EQ(longestHit(engine, all, 99), 16);
}

TEST(SequenceManagerTest, PrefixCachingOff) {
  EngineOptions options;
  options.prefixCaching = false;
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(16);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.step({{id, 16}}), "");
  EXPECT_EQ(longestHit(engine, prompt, 16, 16), 0);
  EXPECT_EQ(engine.manager().addSequence(prompt, 16).status().code(),
            StatusCode::FailedPrecondition);
}

//===----------------------------------------------------------------------===//
// Prefix policies (snapshots), cache points, extra keys
//===----------------------------------------------------------------------===//

EngineOptions policyOptions(PrefixPolicy policy) {
  EngineOptions options;
  options.prefixPolicy = policy;
  return options;
}

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
    int64_t hit = longestHit(engine, prompt, 30, 30);
    int64_t atTen = longestHit(engine, prompt, 10, 30);
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
    ASSERT_EQ(engine.run(second, 3, 5), "");
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

} // namespace
