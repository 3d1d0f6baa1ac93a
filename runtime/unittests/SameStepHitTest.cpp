//===- SameStepHitTest.cpp - Hits on blocks prefilled in the same step ----===//
//
// SequenceManagerConfig::sameStepHits against vLLM's behaviour restated
// (vLLM v1 registers a request's full blocks at allocation, so a request
// admitted later in the same step hits them), the ordering rule
// (StepInfo::orderedInsertsRequired, run through the kernel simulator both
// ways), the build refusal, and the writer dropping its step.
//
//===----------------------------------------------------------------------===//

#include "StepSimulator.h"
#include "TestEngine.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace inkling;
using namespace inkling::testing;

namespace {

constexpr int64_t kN = 4, kKernel = 4, kBlocks = 64;

std::vector<int32_t> tokensFrom(int32_t first, int64_t count) {
  std::vector<int32_t> tokens(count);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

/// vLLM's SlidingWindowManager.find_longest_cache_hit restated for a
/// window of 4 and blocks of 4 (one contiguous cached block is a hit):
/// the largest j+1 <= (L-1)/N whose block j is cached, times N. Blocks are
/// cached at allocation for the tokens scheduled, so after the writer's
/// allocation every full block of its prompt is cached; a block of the
/// reader is cached when its whole prefix equals the writer's.
int64_t vllmHit(const std::vector<int32_t> &writer,
                const std::vector<int32_t> &reader) {
  int64_t shared = 0;
  while (shared <
             static_cast<int64_t>(std::min(writer.size(), reader.size())) &&
         writer[shared] == reader[shared])
    ++shared;
  int64_t maxBlocks = (static_cast<int64_t>(reader.size()) - 1) / kN;
  int64_t cachedBlocks = std::min<int64_t>(shared / kN, writer.size() / kN);
  return std::min(maxBlocks, cachedBlocks) * kN;
}

struct Harness {
  explicit Harness(bool sameStepHits, int64_t lookahead = 0,
                   PrefixPolicy policy = PrefixPolicy::EveryBlock)
      : buffers(8, 32, 256, 8), simulator(kBlocks, kN, kKernel) {
    manager = makeManager(kKernel, kN, kBlocks, lookahead, policy, 8);
    manager->setSameStepHits(sameStepHits);
    step = std::make_unique<StepBuffers>(
        std::move(*manager->bindStepBuffers(buffers.spec)));
  }
  /// Builds `ids` (their step tokens in `tokens`) and runs the kernels in
  /// the order the step asks for; `forceUnordered` runs convs first.
  std::string run(const std::vector<SequenceId> &ids,
                  const std::vector<std::vector<int32_t>> &tokens,
                  StepInfo *out = nullptr, bool forceUnordered = false) {
    StatusOr<StepInfo> info =
        manager->buildStep(ids.data(), ids.size(), StepShape(), *step);
    if (!info)
      return "build: " + info.status().toString();
    if (out)
      *out = *info;
    StepInfo run = *info;
    if (forceUnordered)
      run.orderedInsertsRequired = false;
    std::vector<std::vector<uint64_t>> identities;
    for (const auto &all : tokens)
      identities.push_back(prefixIdentities(all));
    return simulator.run(buffers.spec, run, identities);
  }
  OwnedStepBuffers buffers;
  StepSimulator simulator;
  std::unique_ptr<SequenceManager> manager;
  std::unique_ptr<StepBuffers> step;
};

// Two requests with a 22-token common prefix are admitted in one step:
// A (30 tokens) first, then B (27 tokens), each prefilled whole.
std::vector<int32_t> promptA() {
  std::vector<int32_t> p = tokensFrom(0, 22), own = tokensFrom(100, 8);
  p.insert(p.end(), own.begin(), own.end());
  return p;
}
std::vector<int32_t> promptB() {
  std::vector<int32_t> p = tokensFrom(0, 22), own = tokensFrom(200, 5);
  p.insert(p.end(), own.begin(), own.end());
  return p;
}

TEST(SameStepHitTest, SecondRequestHitsTheFirstsBlocksAsVllm) {
  std::vector<int32_t> a = promptA(), b = promptB();
  ASSERT_EQ(vllmHit(a, b), 20); // blocks 0..4 of the common prefix
  Harness h(/*sameStepHits=*/true);
  SequenceManager &m = *h.manager;
  SequenceId writer = *m.addSequence(a);
  ASSERT_TRUE(m.schedule(writer, a.size()).isOk());
  EXPECT_GT(m.numPendingBlocks(), 0);
  int64_t hit = *m.longestCachedPrefix(b.data(), b.size(), b.size() - 1);
  EXPECT_EQ(hit, vllmHit(a, b)) << "the same hit vLLM gives, in tokens";
  SequenceId reader = *m.addSequence(b, hit);
  EXPECT_EQ(m.sequenceInfo(reader)->pendingWriters,
            std::vector<SequenceId>{writer});
  ASSERT_TRUE(m.schedule(reader, b.size() - hit).isOk());
  ASSERT_TRUE(m.checkInvariants().isOk()) << m.checkInvariants().toString();
  StepInfo info;
  // Inserts first: the reader's history [17, 20) holds what the writer
  // wrote this step.
  ASSERT_EQ(h.run({writer, reader}, {a, b}, &info), "");
  EXPECT_TRUE(info.orderedInsertsRequired);
  ASSERT_TRUE(
      m.commit(writer, a.size(), std::vector<int32_t>{7}.data(), 1).isOk());
  EXPECT_TRUE(m.sequenceInfo(writer)->pendingBlocks.empty()) << "promoted";
  EXPECT_TRUE(m.sequenceInfo(reader)->pendingWriters.empty());
  // The reader's own step has pending blocks (block 5, [20, 24)).
  EXPECT_EQ(m.numPendingBlocks(), 1);
  ASSERT_TRUE(
      m.commit(reader, b.size() - hit, std::vector<int32_t>{8}.data(), 1)
          .isOk());
  EXPECT_EQ(m.numPendingBlocks(), 0);
  ASSERT_TRUE(m.checkInvariants().isOk()) << m.checkInvariants().toString();
  // The next steps carry no same-step hit.
  ASSERT_TRUE(m.schedule(writer, 1).isOk());
  ASSERT_TRUE(m.schedule(reader, 1).isOk());
  a.push_back(7);
  b.push_back(8);
  ASSERT_EQ(h.run({writer, reader}, {a, b}, &info), "");
  EXPECT_FALSE(info.orderedInsertsRequired);
}

TEST(SameStepHitTest, ConvsBeforeInsertsReadWhatIsNotWrittenYet) {
  // The ordering rule is needed: the same step run with its convs first
  // (conv-insert and packed-inserts move inserts past convs) is refused
  // by the simulator.
  std::vector<int32_t> a = promptA(), b = promptB();
  Harness h(true);
  SequenceManager &m = *h.manager;
  SequenceId writer = *m.addSequence(a);
  ASSERT_TRUE(m.schedule(writer, a.size()).isOk());
  SequenceId reader = *m.addSequence(b, 20);
  ASSERT_TRUE(m.schedule(reader, b.size() - 20).isOk());
  EXPECT_NE(h.run({writer, reader}, {a, b}, nullptr, /*forceUnordered=*/true),
            "");
}

TEST(SameStepHitTest, WithoutTheOptionNothingHitsUntilTheCommit) {
  std::vector<int32_t> a = promptA(), b = promptB();
  Harness h(/*sameStepHits=*/false);
  SequenceManager &m = *h.manager;
  SequenceId writer = *m.addSequence(a);
  ASSERT_TRUE(m.schedule(writer, a.size()).isOk());
  EXPECT_EQ(m.numPendingBlocks(), 0);
  EXPECT_EQ(*m.longestCachedPrefix(b.data(), b.size(), b.size() - 1), 0);
  EXPECT_EQ(m.addSequence(b, 20).status().code(), StatusCode::NotFound);
  StepInfo info;
  ASSERT_EQ(h.run({writer}, {a}, &info), "");
  EXPECT_FALSE(info.orderedInsertsRequired);
  ASSERT_TRUE(
      m.commit(writer, a.size(), std::vector<int32_t>{7}.data(), 1).isOk());
  // A step later: the same hit.
  EXPECT_EQ(*m.longestCachedPrefix(b.data(), b.size(), b.size() - 1),
            vllmHit(a, b));
}

TEST(SameStepHitTest, OnlyBlocksEveryCommitAcceptsArePending) {
  // Lookahead 3: a commit may reject the step's last 3 tokens, so a
  // 16-token prompt's pending blocks end at or before 13 (blocks 0..2);
  // an identical prompt looked up with 15 tokens hits 12, as vLLM (15/4
  // blocks).
  std::vector<int32_t> a = tokensFrom(0, 16);
  Harness h(true, /*lookahead=*/3);
  SequenceManager &m = *h.manager;
  SequenceId writer = *m.addSequence(a);
  ASSERT_TRUE(m.schedule(writer, 16).isOk());
  EXPECT_EQ(*m.longestCachedPrefix(a.data(), 16, 15), 12);
  EXPECT_EQ(vllmHit(a, a), 12);
  // A commit rejecting 3 tokens still promotes every pending block.
  SequenceId reader = *m.addSequence(a, 12);
  ASSERT_TRUE(m.schedule(reader, 4).isOk());
  ASSERT_EQ(h.run({writer, reader}, {a, a}), "");
  ASSERT_TRUE(m.commit(writer, 13).isOk());
  EXPECT_TRUE(m.sequenceInfo(reader)->pendingWriters.empty());
  EXPECT_TRUE(m.takeInvalidatedReaders().empty());
  ASSERT_TRUE(m.checkInvariants().isOk()) << m.checkInvariants().toString();
}

TEST(SameStepHitTest, ReaderWithoutItsWriterIsRefused) {
  std::vector<int32_t> a = promptA(), b = promptB();
  Harness h(true);
  SequenceManager &m = *h.manager;
  SequenceId writer = *m.addSequence(a);
  ASSERT_TRUE(m.schedule(writer, a.size()).isOk());
  SequenceId reader = *m.addSequence(b, 20);
  ASSERT_TRUE(m.schedule(reader, b.size() - 20).isOk());
  std::string before = m.debugString();
  std::vector<int32_t> table = h.buffers.blockTable;
  StatusOr<StepInfo> info = m.buildStep(&reader, 1, StepShape(), *h.step);
  ASSERT_EQ(info.status().code(), StatusCode::FailedPrecondition);
  EXPECT_NE(info.status().message().find("same-step hit"), std::string::npos)
      << info.status().toString();
  EXPECT_EQ(m.debugString(), before);
  EXPECT_EQ(h.buffers.blockTable, table);
  // The writer built (and run) first, the reader may follow alone.
  ASSERT_EQ(h.run({writer}, {a}), "");
  StepInfo second;
  ASSERT_EQ(h.run({reader}, {b}, &second), "");
  EXPECT_FALSE(second.orderedInsertsRequired);
}

TEST(SameStepHitTest, DroppedWriterInvalidatesItsReaders) {
  std::vector<int32_t> a = promptA(), b = promptB();
  for (bool finish : {false, true}) {
    Harness h(true);
    SequenceManager &m = *h.manager;
    SequenceId writer = *m.addSequence(a);
    ASSERT_TRUE(m.schedule(writer, a.size()).isOk());
    SequenceId reader = *m.addSequence(b, 20);
    SequenceId child = *m.fork(reader); // a fork reads the same blocks
    ASSERT_TRUE(m.schedule(reader, b.size() - 20).isOk());
    // An unrelated sequence keeps what it has.
    SequenceId other = *m.addSequence(tokensFrom(500, 9));
    ASSERT_TRUE((finish ? m.finish(writer) : m.preempt(writer)).isOk());
    EXPECT_EQ(m.takeInvalidatedReaders(),
              (std::vector<SequenceId>{reader, child}));
    EXPECT_TRUE(m.takeInvalidatedReaders().empty());
    for (SequenceId id : {reader, child}) {
      EXPECT_EQ(m.sequenceInfo(id)->state, SequenceState::Preempted);
      EXPECT_TRUE(m.sequenceInfo(id)->pendingWriters.empty());
    }
    EXPECT_EQ(m.sequenceInfo(other)->state, SequenceState::Idle);
    EXPECT_EQ(m.numPendingBlocks(), 0);
    EXPECT_EQ(m.prefixCache().size(), 0) << "withdrawn, not cached";
    ASSERT_TRUE(m.checkInvariants().isOk()) << m.checkInvariants().toString();
    // The readers resume (nothing is cached now: from 0).
    EXPECT_EQ(*m.longestCachedPrefix(b.data(), b.size(), b.size() - 1), 0);
    ASSERT_TRUE(m.resume(reader, b, 0).isOk());
    ASSERT_TRUE(m.finish(child).isOk());
    ASSERT_TRUE(m.finish(other).isOk());
    ASSERT_TRUE(m.finish(reader).isOk());
    if (!finish)
      ASSERT_TRUE(m.finish(writer).isOk());
    EXPECT_EQ(m.pool().numHeldBlocks(), 0);
  }
}

TEST(SameStepHitTest, InvalidationCascadesThroughReadersThatWrite) {
  // C reads B's pending blocks, B reads A's: dropping A drops B's step,
  // which withdraws B's entries and preempts C.
  std::vector<int32_t> a = tokensFrom(0, 12), b = tokensFrom(0, 24),
                       c = tokensFrom(0, 30);
  Harness h(true);
  SequenceManager &m = *h.manager;
  SequenceId sa = *m.addSequence(a);
  ASSERT_TRUE(m.schedule(sa, 12).isOk());
  ASSERT_EQ(*m.longestCachedPrefix(b.data(), 24, 23), 12);
  SequenceId sb = *m.addSequence(b, 12);
  ASSERT_TRUE(m.schedule(sb, 12).isOk());
  ASSERT_EQ(*m.longestCachedPrefix(c.data(), 30, 29), 24);
  SequenceId sc = *m.addSequence(c, 24);
  ASSERT_TRUE(m.schedule(sc, 6).isOk());
  ASSERT_EQ(h.run({sa, sb, sc}, {a, b, c}), "");
  ASSERT_TRUE(m.preempt(sa).isOk());
  EXPECT_EQ(m.takeInvalidatedReaders(), (std::vector<SequenceId>{sb, sc}));
  EXPECT_EQ(m.numPendingBlocks(), 0);
  EXPECT_EQ(m.prefixCache().size(), 0);
  ASSERT_TRUE(m.checkInvariants().isOk()) << m.checkInvariants().toString();
}

} // namespace
