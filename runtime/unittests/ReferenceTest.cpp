//===- ReferenceTest.cpp - Sanity checks of the reference itself ----------===//

#include "inkling/Runtime/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <vector>

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

/// The row form: bias, SiLU and no residual, by hand (kernel 2, two channels).
TEST(Reference, ConvRowBiasSiluByHand) {
  const uint16_t tap0[] = {floatToBf16(1.0f), floatToBf16(-2.0f)};
  const uint16_t tap1[] = {floatToBf16(0.5f), floatToBf16(4.0f)};
  const uint16_t *taps[] = {tap0, tap1};
  const float weights[] = {2.0f, 1.0f, 4.0f, 0.25f}; // [W][row]
  const float bias[] = {-1.0f, 0.5f};
  float acc[2];
  uint16_t out[2];
  referenceConvRow(taps, 2, weights, bias, /*silu=*/true, nullptr, 2, acc, out);
  for (int e = 0; e < 2; ++e) {
    float pre = e == 0 ? -1.0f + 2 * 1 + 4 * 0.5f : 0.5f + 1 * -2 + 0.25f * 4;
    EXPECT_EQ(out[e], floatToBf16(pre / (1.0f + std::exp(-pre)))) << e;
  }
  // With the residual and no bias or SiLU: a plain sum, exact here.
  referenceConvRow(taps, 2, weights, nullptr, false, tap1, 2, acc, out);
  EXPECT_EQ(bf16ToFloat(out[0]), 2 * 1 + 4 * 0.5f + 0.5f);
  EXPECT_EQ(bf16ToFloat(out[1]), 1 * -2 + 0.25f * 4 + 4);
}
