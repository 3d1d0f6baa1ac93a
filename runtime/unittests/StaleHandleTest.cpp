//===- StaleHandleTest.cpp - Step buffers outliving their manager ---------===//
//
// The C++ side of CApiStaleHandleTest: a manager knows its step buffers by
// id (SequenceManager::id), so buffers bound by a destroyed manager are
// refused by one created at the same address.
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/SequenceManager.h"
#include "inkling/Runtime/StepBuffers.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace inkling {
namespace {

std::unique_ptr<SequenceManager> makeManager(int64_t kernel, int64_t n) {
  SequenceManagerConfig config;
  LayoutConfig layout;
  layout.kvHeads = 2;
  layout.headDim = 8;
  layout.hidden = 16;
  layout.kernel = kernel;
  layout.blockSize = n;
  config.layout = *Layout::derive(layout);
  config.numBlocks = 256;
  return std::move(*SequenceManager::create(config));
}

TEST(StaleHandleTest, IdsAreUniqueAndNeverZero) {
  uint64_t a = newOwnerId(), b = newOwnerId();
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_NE(makeManager(2, 16)->id(), makeManager(2, 16)->id());
}

TEST(StaleHandleTest, BuffersOfADestroyedManagerAreRefused) {
  HostStepBuffers host(4, 64, 64, 4);
  std::unique_ptr<SequenceManager> first = makeManager(2, 16);
  const void *address = first.get();
  StepBuffers buffers = *first->bindStepBuffers(host.spec);
  EXPECT_EQ(buffers.maxBlocksPerRow(), first->maxBlocksPerSequence());
  first.reset();

  // A manager with longer rows, at the first one's address if the
  // allocator gives it back (it does without ASan's quarantine).
  std::vector<std::unique_ptr<SequenceManager>> others;
  std::unique_ptr<SequenceManager> second;
  for (int i = 0; i < 64 && !second; ++i) {
    std::unique_ptr<SequenceManager> m = makeManager(8, 1);
    if (m.get() == address)
      second = std::move(m);
    else
      others.push_back(std::move(m));
  }
  if (!second) {
    second = std::move(others.back());
    others.pop_back();
  }
  others.clear();
  ASSERT_GT(second->maxBlocksPerSequence(), buffers.maxBlocksPerRow());

  std::vector<int32_t> prompt(40, 5);
  SequenceId seq = *second->addSequence(prompt.data(), prompt.size(), 0);
  ASSERT_TRUE(second->schedule(seq, 40).isOk());
  StatusOr<StepInfo> info = second->buildStep(&seq, 1, StepShape(), buffers);
  ASSERT_FALSE(info.isOk());
  EXPECT_EQ(info.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(info.status().message().find("bound by another manager"),
            std::string::npos)
      << info.status().message();
  EXPECT_EQ(host.slotMapping[0], -1); // nothing written

  // Unbound buffers (StepBuffers::bind without an owner) are refused too.
  StepBuffers unbound = *StepBuffers::bind(host.spec, 64);
  EXPECT_FALSE(second->buildStep(&seq, 1, StepShape(), unbound).isOk());
  StepBuffers own = *second->bindStepBuffers(host.spec);
  EXPECT_TRUE(second->buildStep(&seq, 1, StepShape(), own).isOk());
}

} // namespace
} // namespace inkling

namespace inkling {
namespace {

// A neighbour of the late alignment failure (issue 28, item 4): metadata
// the kernels would refuse at their first call is refused at bind.
TEST(StaleHandleTest, BindRefusesMisalignedMetadata) {
  HostStepBuffers host(4, 16, 16, 4);
  std::vector<int64_t> slots(17);
  StepBufferSpec spec = host.spec;
  spec.slotMapping =
      reinterpret_cast<int64_t *>(reinterpret_cast<char *>(slots.data()) + 4);
  StatusOr<StepBuffers> bound = StepBuffers::bind(spec, 4);
  ASSERT_FALSE(bound.isOk());
  EXPECT_EQ(bound.status().message(),
            "step buffer slot_mapping is not aligned to its 8-byte elements");
  EXPECT_TRUE(StepBuffers::bind(host.spec, 4).isOk());
}

} // namespace
} // namespace inkling
