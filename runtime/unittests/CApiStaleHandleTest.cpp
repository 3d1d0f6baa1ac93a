//===- CApiStaleHandleTest.cpp - Handles outliving their manager ----------===//
//
// Step buffers know their manager by its id, not its address: a manager
// created where a destroyed one lived (the allocator reuses the block)
// must refuse the old one's buffers with a status, not write rows sized
// for itself into records sized for the old one (issue 28, item 3).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/StepBuffers.h"
#include "inkling/Runtime/inkling_runtime.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

/// kv_heads 2, head_dim 8, hidden 16, kernel `kernel`, block size `n`: a
/// small N and a long kernel make long windows (many blocks per row).
inkling_manager_t *createManager(int64_t kernel, int64_t n) {
  inkling_manager_config_t config{};
  config.layout.kv_heads = 2;
  config.layout.head_dim = 8;
  config.layout.hidden = 16;
  config.layout.kernel = kernel;
  config.layout.tp = 1;
  config.layout.block_size = n;
  config.num_blocks = 256;
  config.lookahead = 0;
  inkling_manager_t *manager = nullptr;
  char error[256] = "";
  EXPECT_EQ(inkling_manager_create(&config, &manager, error, sizeof error),
            INKLING_OK)
      << error;
  return manager;
}

TEST(CApiStaleHandleTest, BuffersOfADestroyedManagerAreRefused) {
  // The first manager: W = 2, N = 16, one block per row.
  inkling_manager_t *first = createManager(2, 16);
  ASSERT_NE(first, nullptr);
  inkling::HostStepBuffers host(4, 64, 64, 4);
  inkling_step_buffer_spec_t spec = host.cApiSpec();
  inkling_step_buffers_t *buffers = nullptr;
  ASSERT_EQ(inkling_step_buffers_create(first, &spec, &buffers), INKLING_OK);
  inkling_manager_destroy(first);

  // Managers of a long window (W = 8, N = 1: 7 + blocks per row) until one
  // lands where the first lived (the allocator reuses freed blocks of a
  // size at once; under ASan's quarantine it may not: the check holds
  // either way).
  std::vector<inkling_manager_t *> managers;
  inkling_manager_t *second = nullptr;
  for (int i = 0; i < 64 && !second; ++i) {
    inkling_manager_t *m = createManager(8, 1);
    ASSERT_NE(m, nullptr);
    if (m == first)
      second = m;
    else
      managers.push_back(m);
  }
  if (!second) {
    second = managers.back();
    managers.pop_back();
  }
  for (inkling_manager_t *m : managers)
    inkling_manager_destroy(m);

  std::vector<int32_t> prompt(40, 5);
  int64_t seq = -1;
  ASSERT_EQ(inkling_add_sequence(second, prompt.data(), prompt.size(), 0, &seq),
            INKLING_OK);
  ASSERT_EQ(inkling_schedule(second, seq, 40), INKLING_OK)
      << inkling_manager_last_error(second);
  inkling_step_info_t info{};
  EXPECT_EQ(inkling_build_step(second, buffers, &seq, 1, 0, 0, &info),
            INKLING_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(inkling_manager_last_error(second)),
            "step buffers were created for another manager (possibly one "
            "destroyed since)");
  // Nothing was written: the buffers keep what the first bind wrote.
  EXPECT_EQ(host.queryStartLoc[1], 0);
  EXPECT_EQ(host.slotMapping[0], -1);

  // The manager's own buffers work.
  inkling_step_buffers_t *own = nullptr;
  ASSERT_EQ(inkling_step_buffers_create(second, &spec, &own), INKLING_OK);
  EXPECT_EQ(inkling_build_step(second, own, &seq, 1, 0, 0, &info), INKLING_OK)
      << inkling_manager_last_error(second);
  EXPECT_EQ(info.num_tokens, 40);
  inkling_step_buffers_destroy(own);
  inkling_step_buffers_destroy(buffers);
  inkling_manager_destroy(second);
}

} // namespace
