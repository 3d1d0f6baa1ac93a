//===- SequenceErrorTest.cpp - Errors change nothing ----------------------===//

#include "SequenceTestUtil.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

using namespace inkling;
using namespace inkling::testing;

namespace {

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
