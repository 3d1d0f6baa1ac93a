//===- ReferenceTest.cpp - Sanity checks of the reference itself ----------===//

#include "Reference/Reference.h"
#include "Harness/Compare.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

using namespace inkling;
using namespace inkling::reference;

TEST(Reference, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(floatToBf16(1.0f + 0.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even.
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0.00390625f), 0x3f82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(floatToBf16(std::nextafter(1.0f + 0.00390625f, 2.0f)), 0x3f81);
  EXPECT_EQ(floatToBf16(-2.5f), 0xc020);
  EXPECT_EQ(bf16ToFloat(0xc020), -2.5f);
  // The largest finite float rounds to infinity; NaN stays NaN.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_TRUE(std::isnan(
      bf16ToFloat(floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(-std::nanf("")))));
}

/// Kernel 2, one head of width 1 (hidden 2, head_dim 1): hand-computed.
TEST(Reference, ConvTapsByHand) {
  LayoutConfig config;
  config.kvHeads = 1;
  config.headDim = 1;
  config.hidden = 1;
  config.kernel = 2;
  auto layout = Layout::derive(config);
  ASSERT_TRUE(layout.isOk());
  // Sequence 0 decodes at position 3 (history at 2 in block 5, row 0);
  // sequence 1 prefills positions 0 and 1.
  StepMetadata step;
  step.queryStartLoc = {0, 1, 3};
  step.numComputed = {3, 0};
  step.blockTableWidth = 2;
  step.blockTable = {0, 5, 0, 0};
  step.slotMapping = {-1, -1, -1};
  int64_t stride = layout->pageElements();
  std::vector<uint16_t> cache(6 * stride, 0xFFFF);
  cache[5 * stride + 0] = floatToBf16(10.0f); // k of position 2
  std::vector<uint16_t> x = {floatToBf16(1.0f), floatToBf16(2.0f),
                             floatToBf16(3.0f)};
  std::vector<uint16_t> w = {floatToBf16(0.5f), floatToBf16(2.0f)};
  std::vector<uint16_t> y(3, 0);
  ConvOptions options;
  referenceConv(*layout, Stream::K, {x.data(), 1}, w.data(), step,
                {cache.data(), stride, 6}, options, {y.data(), 1});
  EXPECT_EQ(bf16ToFloat(y[0]), 0.5f * 10 + 2 * 1 + 1);
  EXPECT_EQ(bf16ToFloat(y[1]), 0.5f * 0 + 2 * 2 + 2);
  EXPECT_EQ(bf16ToFloat(y[2]), 0.5f * 2 + 2 * 3 + 3);
}

// The JIT tests' compare (Harness/Compare.h) fires: any flipped bit fails
// it, the SiLU tolerance admits one ulp of the same sign and nothing more,
// and NaN payloads and signs count.
TEST(Compare, FlagsEveryDifferenceBeyondTheTolerance) {
  const uint16_t expected[] = {0x3f80, 0xbf80, 0x0000, 0x7fc0, 0x4000};
  uint16_t actual[5];
  std::copy(std::begin(expected), std::end(expected), actual);
  EXPECT_TRUE(harness::sameBits(expected, actual, 5, 0, "same"));
  for (int i = 0; i < 5; ++i) {
    for (int bit = 0; bit < 16; ++bit) {
      actual[i] ^= uint16_t(1u << bit);
      ::testing::AssertionResult r =
          harness::sameBits(expected, actual, 5, 0, "flipped");
      EXPECT_FALSE(r) << "element " << i << ", bit " << bit;
      EXPECT_NE(std::string(r.message())
                    .find("flipped: element " + std::to_string(i)),
                std::string::npos)
          << r.message();
      actual[i] ^= uint16_t(1u << bit);
    }
  }
  actual[0] = 0x3f81; // 1 ulp up
  EXPECT_TRUE(harness::sameBits(expected, actual, 5, 1, "1 ulp"));
  EXPECT_FALSE(harness::sameBits(expected, actual, 5, 0, "1 ulp, exact"));
  actual[0] = 0x3f82; // 2 ulps
  EXPECT_FALSE(harness::sameBits(expected, actual, 5, 1, "2 ulps"));
  actual[0] = 0x3f80;
  actual[2] = 0x8000; // -0 for +0: the sign counts
  EXPECT_FALSE(harness::sameBits(expected, actual, 5, 1, "sign"));
  actual[2] = 0x0000;
  actual[3] = 0x7fc1; // another NaN
  EXPECT_FALSE(harness::sameBits(expected, actual, 5, 1, "NaN"));
}
