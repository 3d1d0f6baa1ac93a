//===- SequenceForkTest.cpp - Speculative decoding, fork ------------------===//

#include "SequenceTestUtil.h"

#include <gtest/gtest.h>

using namespace inkling;
using namespace inkling::testing;

namespace {

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
  TestEngine engine(withBlockSize(0, 2));
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

} // namespace
