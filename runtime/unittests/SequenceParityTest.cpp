//===- SequenceParityTest.cpp - The prefix-cache cases of vLLM's manager --===//
//
// Issue 30: the hits vLLM v1's KVCacheManager gives that the snapshots
// policy must give too: named cache points whatever the snapshot cap, a
// resubmitted identical prompt, and the EAGLE/MTP rule.
//
//===----------------------------------------------------------------------===//

#include "SequenceTestUtil.h"

#include <gtest/gtest.h>

using namespace inkling;
using namespace inkling::testing;

namespace {

EngineOptions longPromptOptions(int64_t blockSize = 0) {
  EngineOptions options;
  options.prefixPolicy = PrefixPolicy::Snapshots;
  options.blockSize = blockSize;
  options.numBlocks = 512;
  options.numCols = 512;
  options.maxTokens = 2048;
  return options;
}

// Adds `prompt` with its cache points and runs it as one prefill chunk.
SequenceId prefillOneChunk(TestEngine &engine,
                           const std::vector<int32_t> &prompt,
                           std::vector<int64_t> points = {}) {
  StatusOr<SequenceId> id = engine.manager().addSequence(
      prompt.data(), prompt.size(), 0, points.data(), points.size());
  EXPECT_TRUE(id.isOk()) << id.status().toString();
  engine.tokens(*id) = prompt;
  EXPECT_EQ(engine.step({{*id, static_cast<int64_t>(prompt.size())}}), "");
  return *id;
}

TEST(SequenceParityTest, CachePointSurvivesTheSnapshotCap) {
  // Issue 30's case: a 1201-token prompt prefilled in one chunk has 41
  // snapshot boundaries but a cap of maxSnapshotBlocks() = 12 blocks (W = N
  // = 4, lookahead 0, S = 8), so the lowest automatic ones are dropped; the
  // cache point 501 (a system prompt's end) is kept: boundary 500.
  TestEngine engine(longPromptOptions());
  std::vector<int32_t> prompt = iota(1201);
  SequenceId first = prefillOneChunk(engine, prompt, {501});
  ASSERT_TRUE(engine.manager().finish(first).isOk());
  EXPECT_EQ(engine.manager().maxSnapshotBlocks(), 12);
  // The next request shares the 501-token system prompt only.
  std::vector<int32_t> next = iota(501);
  std::vector<int32_t> suffix = iota(300, 5000);
  next.insert(next.end(), suffix.begin(), suffix.end());
  int64_t hit = longestHit(engine, next, 800);
  EXPECT_EQ(hit, 500);
  // Its resume reads the right history (the simulator checks every tap).
  SequenceId second = *engine.add(next, hit);
  ASSERT_EQ(engine.step({{second, 301}}), "");
  // The automatic snapshots stay capped: without the cache point the same
  // prompt keeps none below the highest 12 blocks' boundaries.
  TestEngine plain(longPromptOptions());
  ASSERT_TRUE(plain.manager().finish(prefillOneChunk(plain, prompt)).isOk());
  EXPECT_EQ(*plain.manager().longestCachedPrefix(next.data(), next.size(), 800),
            0);
}

TEST(SequenceParityTest, CachePointsAreStillDroppedWhenThePoolRunsShort) {
  // The cap does not apply to cache points, the free blocks do: a pool that
  // holds the window and nothing more schedules the chunk (no OutOfBlocks)
  // and caches no snapshot.
  EngineOptions options = longPromptOptions();
  options.numBlocks = 6; // null + the window's 4 + 1
  TestEngine engine(options);
  std::vector<int32_t> prompt = iota(200);
  int64_t points[] = {101, 150};
  SequenceId id =
      *engine.manager().addSequence(prompt.data(), 200, 0, points, 2);
  engine.tokens(id) = prompt;
  ASSERT_EQ(engine.step({{id, 200}}), "");
  std::vector<int32_t> next = iota(150);
  // One free block: the highest cache point's one history block fits.
  EXPECT_EQ(longestHit(engine, next, 150, 150), 148);
}

TEST(SequenceParityTest, ResubmittedPromptHitsLikeEveryBlock) {
  // An identical prompt of L tokens is looked up with at most L-1 tokens
  // (the engine computes the last one), so it resumes at floor((L-1)/N)*N:
  // 252 of 256 at N = 4, 1008 of 1024 at N = 16, as vLLM's every-block
  // cache; the snapshot grid alone gives 224 and 896.
  struct Case {
    int64_t blockSize, length, expected;
  };
  for (Case c : {Case{4, 256, 252}, Case{16, 1024, 1008}, Case{4, 250, 248},
                 Case{16, 1000, 992}}) {
    TestEngine engine(longPromptOptions(c.blockSize));
    std::vector<int32_t> prompt = iota(c.length);
    ASSERT_TRUE(
        engine.manager().finish(prefillOneChunk(engine, prompt)).isOk());
    int64_t hit = *engine.manager().longestCachedPrefix(prompt.data(), c.length,
                                                        c.length - 1);
    EXPECT_EQ(hit, c.expected) << "N " << c.blockSize << " L " << c.length;
    SequenceId again = *engine.add(prompt, hit);
    ASSERT_EQ(engine.step({{again, c.length - hit}}), "");
  }
}

TEST(SequenceParityTest, ResubmittedPromptAfterChunkedPrefill) {
  // The boundary is snapshotted by the chunk that reaches it (the last).
  TestEngine engine(longPromptOptions());
  std::vector<int32_t> prompt = iota(256);
  SequenceId id = *engine.add(prompt);
  ASSERT_EQ(engine.step({{id, 100}}), "");
  ASSERT_EQ(engine.step({{id, 156}}), "");
  EXPECT_EQ(longestHit(engine, prompt, 255, 256), 252);
}

TEST(SequenceParityTest, EagleDropsTheLastMatchedBlock) {
  // vLLM's SlidingWindowManager with use_eagle, restated: a hit needs
  // ceil((W-1)/N) + 1 contiguous cached blocks, searched from the right,
  // and drops the last one. W = N = 4 under the window policy: prompts of
  // 8, 16, 12 and 24 tokens of one prefix, each in one chunk, cache blocks
  // 1, 3, 2 and 5 of it: [-, 1, 2, 3, -, 5].
  TestEngine engine;
  std::vector<int32_t> prefix = iota(28);
  for (int64_t length : {8, 16, 12, 24}) {
    std::vector<int32_t> prompt(prefix.begin(), prefix.begin() + length);
    SequenceId id = *engine.add(prompt);
    ASSERT_EQ(engine.step({{id, length}}), "");
    ASSERT_TRUE(engine.manager().finish(id).isOk());
  }
  SequenceManager &m = engine.manager();
  // Plain rule: one block; the rightmost is block 5, a hit of 24.
  EXPECT_EQ(*m.longestCachedPrefix(prefix.data(), 28, 28), 24);
  EXPECT_EQ(*m.longestCachedPrefix(prefix.data(), 28, 23), 16);
  // EAGLE: two contiguous blocks, the rightmost are 2 and 3; drop 3: 12.
  // (Dropping a block off the plain hit would give 20, which block 4,
  // never cached, cannot serve.)
  m.setDropLastMatchedBlock(true);
  EXPECT_EQ(*m.longestCachedPrefix(prefix.data(), 28, 28), 12);
  EXPECT_EQ(*m.longestCachedPrefix(prefix.data(), 28, 23), 12);
  EXPECT_EQ(*m.longestCachedPrefix(prefix.data(), 28, 15), 8);
  EXPECT_EQ(*m.longestCachedPrefix(prefix.data(), 28, 11), 0);
  // The sequence-id lookup follows the same rule.
  std::vector<int32_t> prompt(prefix.begin(), prefix.begin() + 28);
  SequenceId id = *engine.add(prompt);
  EXPECT_EQ(*m.longestCachedPrefix(id, 28), 12);
  m.setDropLastMatchedBlock(false);
  EXPECT_EQ(*m.longestCachedPrefix(id, 28), 24);
  // An EAGLE hit is a plain hit: a sequence starts there.
  ASSERT_TRUE(m.finish(id).isOk());
  SequenceId resumed = *engine.add(prompt, 12);
  ASSERT_EQ(engine.step({{resumed, 16}}), "");
}

TEST(SequenceParityTest, EagleWithHistoryAcrossBlocks) {
  // N = 2 < W-1 = 3: a plain hit needs 2 blocks, EAGLE 3. A 12-token
  // prompt computed a token a step caches its blocks 0..5.
  TestEngine engine(withBlockSize(2));
  std::vector<int32_t> prompt = iota(12);
  SequenceId id = *engine.add(prompt);
  for (int i = 0; i < 12; ++i)
    ASSERT_EQ(engine.step({{id, 1}}), "");
  SequenceManager &m = engine.manager();
  EXPECT_EQ(*m.longestCachedPrefix(prompt.data(), 12, 11), 10);
  m.setDropLastMatchedBlock(true);
  EXPECT_EQ(*m.longestCachedPrefix(prompt.data(), 12, 11), 8);
  // vLLM with a run from block 0 shorter than needed: the run is the hit,
  // less its last block (2 blocks cached: 2 tokens).
  EXPECT_EQ(*m.longestCachedPrefix(prompt.data(), 12, 4), 2);
  EXPECT_EQ(*m.longestCachedPrefix(prompt.data(), 12, 3), 0);
}

TEST(SequenceParityTest, AdmissionKeepsTheWatermark) {
  // W = N = 4, lookahead 0: a sequence holds at most 4 blocks in a step, 2
  // between steps. A pool of 16 blocks (15 usable).
  EngineOptions options;
  options.numBlocks = 16;
  TestEngine engine(options);
  SequenceManager &m = engine.manager();
  StatusOr<Admission> empty = m.admission(100, 0, 1);
  ASSERT_TRUE(empty.isOk()) << empty.status().toString();
  EXPECT_TRUE(empty->admit);
  EXPECT_EQ(empty->neededBlocks, 2); // stores its last 3 positions
  EXPECT_EQ(empty->reservedBlocks, 0);
  EXPECT_EQ(empty->freeBlocks, 15);
  EXPECT_EQ(m.admission(1, 0, 0)->neededBlocks, 1);
  // A hit adds its history block (cached, so counted as free).
  EXPECT_EQ(m.admission(100, 40, 0)->neededBlocks, 3);
  // Each running sequence reserves what its next step may allocate. Three
  // decoding at c = 12 hold block 2 ([9, 12)) and need block 3 next.
  std::vector<SequenceId> decoding;
  for (int i = 0; i < 3; ++i) {
    decoding.push_back(*engine.add(iota(12, 100 * i)));
    ASSERT_EQ(engine.step({{decoding.back(), 12}}), "");
  }
  StatusOr<Admission> busy = m.admission(100, 0, 0);
  EXPECT_EQ(busy->freeBlocks, 15 - 3);
  EXPECT_EQ(busy->reservedBlocks, 3);
  EXPECT_TRUE(m.admission(100, 0, 7)->admit); // 12 - 3 - 2 = 7
  EXPECT_FALSE(m.admission(100, 0, 8)->admit);
  // A prefilling one reserves a chunk's window: 4 - its 2 held blocks.
  SequenceId prefill = *engine.add(iota(40, 900));
  ASSERT_EQ(engine.step({{prefill, 10}}), "");
  busy = m.admission(100, 0, 0);
  EXPECT_EQ(busy->freeBlocks, 15 - 3 - 2);
  EXPECT_EQ(busy->reservedBlocks, 3 + 2);
  // What the query admits at watermark 0 never runs a step out of blocks:
  // admit while it says so, then step everyone (decode and chunks).
  std::vector<SequenceId> all = decoding;
  all.push_back(prefill);
  while (m.admission(100, 0, 0)->admit) {
    all.push_back(*engine.add(iota(100, 2000 + 100 * int(all.size()))));
    ASSERT_LT(all.size(), 20u);
  }
  EXPECT_GT(all.size(), 4u);
  for (int i = 0; i < 8; ++i) {
    std::vector<StepPlan> step;
    for (SequenceId id : all) {
      SequenceInfo info = *m.sequenceInfo(id);
      step.push_back(
          {id, info.numComputed + 1 >= info.numTokens
                   ? 1
                   : std::min<int64_t>(10, info.numTokens - info.numComputed)});
    }
    ASSERT_EQ(engine.step(step), "") << "step " << i;
  }
  // A preempted sequence reserves nothing.
  int64_t reserved = m.admission(100, 0, 0)->reservedBlocks;
  int64_t held = m.sequenceInfo(decoding[0])->blocks.size();
  int64_t own = m.maxBlocksPerSequence() - held;
  ASSERT_TRUE(m.preempt(decoding[0]).isOk());
  EXPECT_LE(m.admission(100, 0, 0)->reservedBlocks, reserved);
  EXPECT_GE(m.admission(100, 0, 0)->reservedBlocks, reserved - own);
  // Bad inputs are named and change nothing.
  std::string before = m.debugString();
  EXPECT_NE(m.admission(0, 0, 0).status().message().find("prompt length (0)"),
            std::string::npos);
  EXPECT_NE(m.admission(8, 8, 0).status().message().find("start position (8)"),
            std::string::npos);
  EXPECT_NE(m.admission(8, 0, -1).status().message().find("watermark (-1"),
            std::string::npos);
  EXPECT_EQ(m.debugString(), before);
}

} // namespace
