//===- JitFixture.h - What the JIT tests' fixtures share --------*- C++ -*-===//
//
// What the lowering's JIT tests (LowerToCPUTest, FusionTest) share on top of
// JitHarness.h: the per-process state of a layout under test, poisoned
// stream buffers with a row stride, and the random operands of a conv
// (input, weights, bias) drawn in one order, so that a seed gives the same
// data in every test.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_UNITTESTS_HARNESS_JITFIXTURE_H
#define INKLING_UNITTESTS_HARNESS_JITFIXTURE_H

#include "Harness/JitHarness.h"
#include "inkling/Runtime/Reference.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace inkling::harness {

/// 0xFFFF, a bf16 NaN: what outputs and cache bytes hold before a run, so
/// that a compare of the whole buffer sees any element written wrongly.
inline constexpr uint16_t kPoison = 0xFFFF;

/// A layout under test: derived from its config, with padding bytes added
/// to its page.
struct TestLayout {
  Layout layout;
  int64_t pageBytes = 0;
};

/// The state of test case `name` (a `State` derived from TestLayout), made
/// on first use and never destroyed: tearing a JIT down during static
/// destruction, after LLVM's own globals, crashes the process at exit.
/// `made` says whether this call made it. (ctest runs every test in its own
/// process: each compiles what it uses.)
template <typename State>
State &testCaseState(const std::string &name, const LayoutConfig &config,
                     int64_t pagePaddingBytes, bool &made) {
  static auto *states = new std::map<std::string, std::unique_ptr<State>>();
  auto &slot = (*states)[name];
  made = !slot;
  if (made) {
    auto derived = Layout::derive(config);
    EXPECT_TRUE(derived.isOk()) << name;
    slot = std::make_unique<State>();
    if (derived.isOk()) {
      slot->layout = *derived;
      slot->pageBytes = derived->pageBytes() + pagePaddingBytes;
    }
  }
  return *slot;
}

/// Fills `buffer` with random bf16 values in [-scale, scale].
inline void fillRandom(AlignedBuffer<uint16_t> &buffer, std::mt19937_64 &rng,
                       float scale) {
  for (size_t i = 0; i < buffer.size; ++i)
    buffer.data[i] = randomBf16(rng, scale);
}

/// Elements between tokens of a stream buffer: the row H*w, plus 24 of
/// filler when `strided` (rows of a wider buffer).
inline int64_t streamTokenStride(const Layout &layout, Stream stream,
                                 bool strided) {
  int64_t row = layout.headsPerRank * layout.range(stream).width;
  return strided ? row + 24 : row;
}

/// A stream buffer: T rows of `tokenStride` elements, the stream in each
/// row's first H*w elements (the rest is filler), all poisoned.
struct StreamData {
  StreamData(int64_t tokens, int64_t tokenStride)
      : tokenStride(tokenStride),
        buffer(std::max<int64_t>(1, tokens) * tokenStride, kPoison) {}
  int64_t tokenStride;
  AlignedBuffer<uint16_t> buffer;

  reference::ConstStreamBuffer view() const {
    return {buffer.data, tokenStride};
  }
  reference::StreamBuffer mutableView() { return {buffer.data, tokenStride}; }
  /// The descriptor of `tokens` rows of `stream` ([T, H, w], or [T, H*w]
  /// when `flat`), owned by `keep`.
  void *descriptor(const Layout &layout, Stream stream, bool flat,
                   int64_t tokens, std::vector<std::unique_ptr<char[]>> &keep) {
    return streamDescriptor(buffer.data, tokens, layout.headsPerRank,
                            layout.range(stream).width, tokenStride, flat,
                            keep);
  }
};

/// The random operands of one stream's conv, drawn in this order: the input
/// x (in [-4, 4]), the weights [H*w, W] and the bias [H*w] (in [-1, 1]).
struct ConvInputs {
  ConvInputs(std::mt19937_64 &rng, const Layout &layout, Stream stream,
             int64_t tokens, int64_t tokenStride)
      : channels(layout.headsPerRank * layout.range(stream).width),
        kernel(layout.config.kernel), x(tokens, tokenStride),
        weights(channels * kernel, 0), bias(channels, 0) {
    fillRandom(x.buffer, rng, 4.0f);
    fillRandom(weights, rng, 1.0f);
    fillRandom(bias, rng, 1.0f);
  }
  int64_t channels, kernel;
  StreamData x;
  AlignedBuffer<uint16_t> weights, bias;

  Mem2 weightsDescriptor() {
    return harness::descriptor<uint16_t, 2>(weights.data, {channels, kernel},
                                            {kernel, 1});
  }
  Mem1 biasDescriptor() {
    return harness::descriptor<uint16_t, 1>(bias.data, {channels}, {1});
  }
};

} // namespace inkling::harness

#endif // INKLING_UNITTESTS_HARNESS_JITFIXTURE_H
