//===- WindowTraceTest.cpp - Blocks held on the 32K-prompt trace ----------===//
//
// The bounds of DESIGN section 6 on the benchmark's trace (8 sequences with
// 32768-token prompts, then decode): between steps at most 2 + ceil(L/W)
// blocks per sequence, during a step at most 2 more, whatever the prompt or
// chunk length; the allocate-the-whole-chunk baseline holds ceil(chunk/N)+1.
//
//===----------------------------------------------------------------------===//

#include "WindowTrace.h"

#include <gtest/gtest.h>

using namespace inkling;
using namespace inkling::trace;

namespace {

struct TraceCase {
  int64_t chunk;
  int64_t lookahead;
};

class WindowTraceTest : public ::testing::TestWithParam<TraceCase> {};

TEST_P(WindowTraceTest, PeakBlocksPerSequenceMatchTheBound) {
  TraceConfig config;
  config.chunk = GetParam().chunk;
  config.lookahead = GetParam().lookahead;
  config.decodeSteps = 24;
  StatusOr<TraceResult> result = runWindowTrace(config);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  int64_t n = 4, ceilLW = (config.lookahead + n - 1) / n;
  EXPECT_LE(result->peakPerSequenceBetween, 2 + ceilLW);
  EXPECT_LE(result->peakPerSequenceDuring, 2 + ceilLW + 2);
  EXPECT_LE(result->peakPoolBlocks, config.numSequences * (2 + ceilLW + 2));
  // The baseline holds every block of the chunk, plus the history's.
  EXPECT_GE(result->baselinePeakPerSequence, (config.chunk + n - 1) / n);
  EXPECT_LE(result->baselinePeakPerSequence,
            (config.chunk + config.lookahead + n - 1) / n + 2);
}

INSTANTIATE_TEST_SUITE_P(Chunks, WindowTraceTest,
                         ::testing::Values(TraceCase{32768, 0},
                                           TraceCase{2048, 0},
                                           TraceCase{2048, 3},
                                           TraceCase{32768, 8}),
                         [](const ::testing::TestParamInfo<TraceCase> &info) {
                           return "chunk" + std::to_string(info.param.chunk) +
                                  "_lookahead" +
                                  std::to_string(info.param.lookahead);
                         });

} // namespace
