//===- Compare.h - Bit-exact comparison of bf16 buffers ---------*- C++ -*-===//

#ifndef INKLING_UNITTESTS_HARNESS_COMPARE_H
#define INKLING_UNITTESTS_HARNESS_COMPARE_H

#include "inkling/Runtime/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace inkling::harness {

/// Bit-exact comparison (or within `ulps` bf16 steps when both are finite).
inline ::testing::AssertionResult sameBits(const uint16_t *expected,
                                           const uint16_t *actual, size_t count,
                                           int ulps, const std::string &what) {
  for (size_t i = 0; i < count; ++i) {
    if (expected[i] == actual[i])
      continue;
    float e = reference::bf16ToFloat(expected[i]),
          a = reference::bf16ToFloat(actual[i]);
    bool close =
        ulps > 0 && std::isfinite(e) && std::isfinite(a) &&
        std::abs(int(expected[i] & 0x7fff) - int(actual[i] & 0x7fff)) <= ulps &&
        ((expected[i] ^ actual[i]) & 0x8000) == 0;
    if (!close) {
      char text[96];
      std::snprintf(text, sizeof(text),
                    "expected 0x%04x (%g), found 0x%04x (%g)", expected[i], e,
                    actual[i], a);
      return ::testing::AssertionFailure()
             << what << ": element " << i << " " << text;
    }
  }
  return ::testing::AssertionSuccess();
}

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_COMPARE_H
