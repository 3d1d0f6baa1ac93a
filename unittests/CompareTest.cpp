//===- CompareTest.cpp - The JIT tests' bf16 compare ----------------------===//

#include "Harness/Compare.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <iterator>
#include <string>

using namespace inkling;

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
