//===- WindowTraceTest.cpp - Blocks held on the 32K-prompt trace ----------===//
//
// The bounds of SequenceManager.h on the benchmark's trace (8 sequences with
// 32768-token prompts, then decode), for block sizes N independent of the
// kernel W = 4: between steps at most span(W-1) = ceil((W-2)/N) + 1 blocks
// per sequence, during a step at most span(W-1) + span(W-1+L), whatever the
// prompt or chunk length; the allocate-the-whole-chunk baseline holds
// ceil(chunk/N)+1.
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
  int64_t blockSize = 4;
};

class WindowTraceTest : public ::testing::TestWithParam<TraceCase> {};

TEST_P(WindowTraceTest, PeakBlocksPerSequenceMatchTheBound) {
  TraceConfig config;
  config.chunk = GetParam().chunk;
  config.lookahead = GetParam().lookahead;
  config.blockSize = GetParam().blockSize;
  config.decodeSteps = 24;
  StatusOr<TraceResult> result = runWindowTrace(config);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  int64_t n = config.blockSize, w = 4;
  int64_t between = span(w - 1, n);
  int64_t during = between + span(w - 1 + config.lookahead, n);
  EXPECT_LE(result->peakPerSequenceBetween, between);
  EXPECT_LE(result->peakPerSequenceDuring, during);
  EXPECT_LE(result->peakPoolBlocks, config.numSequences * during);
  // Decoding 24 steps crosses block boundaries for N <= 24: the window then
  // reaches its between-steps bound (tight, not just an upper bound).
  if (n <= 24)
    EXPECT_EQ(result->peakPerSequenceBetween, between);
  // The baseline holds every block of the chunk, plus the history's.
  EXPECT_GE(result->baselinePeakPerSequence, (config.chunk + n - 1) / n);
  EXPECT_LE(result->baselinePeakPerSequence,
            (config.chunk + config.lookahead + n - 1) / n + 2);
}

INSTANTIATE_TEST_SUITE_P(
    Chunks, WindowTraceTest,
    ::testing::Values(TraceCase{32768, 0}, TraceCase{2048, 0},
                      TraceCase{2048, 3}, TraceCase{32768, 8},
                      TraceCase{2048, 3, 1}, TraceCase{2048, 3, 2},
                      TraceCase{2048, 3, 8}, TraceCase{2048, 3, 16},
                      TraceCase{2048, 3, 32}, TraceCase{32768, 8, 32}),
    [](const ::testing::TestParamInfo<TraceCase> &info) {
      return "chunk" + std::to_string(info.param.chunk) + "_lookahead" +
             std::to_string(info.param.lookahead) + "_n" +
             std::to_string(info.param.blockSize);
    });

} // namespace
