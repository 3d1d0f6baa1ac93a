//===- LayoutTest.cpp - Layout math against the reference's formulas ------===//

#include "inkling/Runtime/Layout.h"

#include <gtest/gtest.h>

using namespace inkling;

namespace {

LayoutConfig config(int64_t kvHeads, int64_t headDim, int64_t hidden,
                    int64_t kernel, int64_t tp) {
  return LayoutConfig{kvHeads, headDim, hidden, kernel, tp, "bf16"};
}

// The reference computes D as 1 << (raw - 1).bit_length(); restated here.
int64_t referenceHeadSize(int64_t raw) {
  int bits = 0;
  for (int64_t v = raw - 1; v > 0; v >>= 1)
    ++bits;
  return int64_t(1) << bits;
}

struct Case {
  int64_t kvHeads, headDim, hidden, kernel, tp;
};

class LayoutFormulaTest : public ::testing::TestWithParam<Case> {};

TEST_P(LayoutFormulaTest, MatchesReference) {
  Case p = GetParam();
  StatusOr<Layout> layout =
      Layout::derive(config(p.kvHeads, p.headDim, p.hidden, p.kernel, p.tp));
  ASSERT_TRUE(layout.isOk()) << layout.status().toString();
  int64_t hph = p.hidden / p.kvHeads;
  int64_t raw = 2 * p.headDim + 2 * hph;
  int64_t d = referenceHeadSize(raw);
  EXPECT_EQ(layout->headsPerRank, p.kvHeads / p.tp);
  EXPECT_EQ(layout->hiddenPerHead, hph);
  EXPECT_EQ(layout->rawWidth, raw);
  EXPECT_EQ(layout->headSize, d);
  EXPECT_EQ(layout->blockSize, p.kernel);
  EXPECT_EQ(layout->slidingWindow, p.kernel);
  EXPECT_EQ(layout->range(Stream::K).offset, 0);
  EXPECT_EQ(layout->range(Stream::K).width, p.headDim);
  EXPECT_EQ(layout->range(Stream::V).offset, p.headDim);
  EXPECT_EQ(layout->range(Stream::V).width, p.headDim);
  EXPECT_EQ(layout->range(Stream::Attn).offset, 2 * p.headDim);
  EXPECT_EQ(layout->range(Stream::Attn).width, hph);
  EXPECT_EQ(layout->range(Stream::Mlp).offset, 2 * p.headDim + hph);
  EXPECT_EQ(layout->range(Stream::Mlp).width, hph);
  EXPECT_EQ(layout->range(Stream::Mlp).end(), raw);
  EXPECT_EQ(layout->pageBytes(), (p.kvHeads / p.tp) * p.kernel * d * 2);
  auto shape = layout->cacheShape(-1);
  EXPECT_EQ(shape[1], p.kvHeads / p.tp);
  EXPECT_EQ(shape[2], p.kernel);
  EXPECT_EQ(shape[3], d);
  auto strides = layout->cacheStrides(layout->pageElements());
  EXPECT_EQ(strides[0], (p.kvHeads / p.tp) * p.kernel * d);
  EXPECT_EQ(strides[1], p.kernel * d);
  EXPECT_EQ(strides[2], d);
  EXPECT_EQ(strides[3], 1);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, LayoutFormulaTest,
    ::testing::Values(Case{8, 128, 4096, 4, 1}, Case{8, 128, 4096, 4, 2},
                      Case{8, 128, 4096, 4, 4}, Case{8, 128, 4096, 4, 8},
                      Case{4, 64, 1024, 3, 2}, Case{1, 1, 1, 1, 1},
                      Case{2, 8, 6, 2, 1}, Case{16, 96, 5120, 8, 4},
                      Case{6, 100, 600, 5, 3}),
    [](const ::testing::TestParamInfo<Case> &info) {
      const Case &c = info.param;
      return "kv" + std::to_string(c.kvHeads) + "_hd" +
             std::to_string(c.headDim) + "_hidden" + std::to_string(c.hidden) +
             "_k" + std::to_string(c.kernel) + "_tp" + std::to_string(c.tp);
    });

TEST(LayoutTest, RealModelValues) {
  StatusOr<Layout> layout = Layout::derive(config(8, 128, 4096, 4, 2));
  ASSERT_TRUE(layout.isOk());
  EXPECT_EQ(layout->headsPerRank, 4);
  EXPECT_EQ(layout->hiddenPerHead, 512);
  EXPECT_EQ(layout->rawWidth, 1280);
  EXPECT_EQ(layout->headSize, 2048);
  EXPECT_EQ(layout->pageBytes(), 4 * 4 * 2048 * 2);
}

TEST(LayoutTest, HeadSizeDoesNotDependOnTp) {
  for (int64_t tp : {1, 2, 4, 8}) {
    StatusOr<Layout> layout = Layout::derive(config(8, 128, 4096, 4, tp));
    ASSERT_TRUE(layout.isOk());
    EXPECT_EQ(layout->headSize, 2048) << "tp " << tp;
  }
}

TEST(LayoutTest, RawWidthPowerOfTwoIsKept) {
  StatusOr<Layout> layout = Layout::derive(config(2, 8, 16, 2, 1));
  ASSERT_TRUE(layout.isOk());
  EXPECT_EQ(layout->rawWidth, 32);
  EXPECT_EQ(layout->headSize, 32);
}

void expectError(const LayoutConfig &c, const std::string &needle) {
  StatusOr<Layout> layout = Layout::derive(c);
  ASSERT_FALSE(layout.isOk());
  EXPECT_EQ(layout.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(layout.status().message().find(needle), std::string::npos)
      << layout.status().message();
}

TEST(LayoutErrorTest, TpExceedsKvHeads) {
  expectError(config(8, 128, 4096, 4, 16), "tp (16) exceeds kv_heads (8)");
}

TEST(LayoutErrorTest, TpDoesNotDivideKvHeads) {
  expectError(config(6, 128, 4096 * 6 / 8, 4, 4),
              "kv_heads (6) is not divisible by tp (4)");
}

TEST(LayoutErrorTest, HiddenNotDivisibleByKvHeads) {
  expectError(config(8, 128, 4100, 4, 1),
              "hidden (4100) is not divisible by kv_heads (8)");
}

TEST(LayoutErrorTest, NonBf16) {
  LayoutConfig c = config(8, 128, 4096, 4, 1);
  c.elementType = "f16";
  expectError(c, "element type 'f16' is not supported");
}

TEST(LayoutErrorTest, EverySizeBelowOne) {
  expectError(config(0, 128, 4096, 4, 1), "kv_heads must be >= 1, got 0");
  expectError(config(8, 0, 4096, 4, 1), "head_dim must be >= 1, got 0");
  expectError(config(8, 128, -8, 4, 1), "hidden must be >= 1, got -8");
  expectError(config(8, 128, 4096, 0, 1), "kernel must be >= 1, got 0");
  expectError(config(8, 128, 4096, 4, 0), "tp must be >= 1, got 0");
}

TEST(LayoutErrorTest, Overflow) {
  expectError(config(1, int64_t(1) << 62, 1, 4, 1), "layout too large");
  expectError(config(1 << 20, 1 << 20, int64_t(1) << 40, 1 << 20, 1),
              "layout too large");
}

TEST(LayoutTest, PaddedPageGivesLargerBlockStride) {
  StatusOr<Layout> layout = Layout::derive(config(8, 128, 4096, 4, 1));
  ASSERT_TRUE(layout.isOk());
  StatusOr<int64_t> stride = layout->blockStrideForPageBytes(1 << 20);
  ASSERT_TRUE(stride.isOk());
  EXPECT_EQ(*stride, (1 << 20) / 2);
  EXPECT_FALSE(layout->blockStrideForPageBytes(1000).isOk());
  StatusOr<int64_t> odd = layout->blockStrideForPageBytes((1 << 20) + 1);
  ASSERT_FALSE(odd.isOk());
  EXPECT_NE(odd.status().message().find("not a multiple of the element size"),
            std::string::npos);
}

TEST(LayoutTest, BlockSizeIsIndependentOfTheKernel) {
  for (int64_t n : {1, 3, 4, 8, 16, 32}) {
    LayoutConfig c = config(8, 128, 4096, 4, 1);
    c.blockSize = n;
    StatusOr<Layout> layout = Layout::derive(c);
    ASSERT_TRUE(layout.isOk()) << layout.status().toString();
    EXPECT_EQ(layout->blockSize, n);
    EXPECT_EQ(layout->slidingWindow, 4) << "the window stays the kernel";
    EXPECT_EQ(layout->headSize, 2048) << "D does not depend on N";
    EXPECT_EQ(layout->pageBytes(), 8 * n * 2048 * 2);
    EXPECT_EQ(layout->headStride(), n * 2048);
    auto shape = layout->cacheShape(-1);
    EXPECT_EQ(shape[2], n);
  }
  // 0 asks for the default: the kernel.
  LayoutConfig c = config(8, 128, 4096, 4, 1);
  EXPECT_EQ(Layout::derive(c)->blockSize, 4);
  c.blockSize = -2;
  expectError(c, "block_size must be >= 1, got -2");
  c.blockSize = int64_t(1) << 30; // page 2^30 * 8 * 2048 * 2 > 2^40
  expectError(c, "block_size (1073741824) exceeds 2^40 bytes");
}

TEST(LayoutTest, BlocksInBufferCountWholePages) {
  StatusOr<Layout> layout = Layout::derive(config(8, 128, 4096, 4, 1));
  ASSERT_TRUE(layout.isOk());
  int64_t page = layout->pageBytes();
  EXPECT_EQ(layout->blocksInBuffer(10 * page, page), 10);
  EXPECT_EQ(layout->blocksInBuffer(10 * page + page - 1, page), 10);
  EXPECT_EQ(layout->blocksInBuffer(page - 1, page), 0);
  // Padded stride: a block needs its page, not its whole stride.
  EXPECT_EQ(layout->blocksInBuffer(4 * 3 * page, 3 * page), 4);
  EXPECT_EQ(layout->blocksInBuffer(3 * 3 * page + page, 3 * page), 4);
  // Cross-layer pages: layer l of 3 sees the allocation from l pages on and
  // still has every block.
  for (int64_t l = 0; l < 3; ++l)
    EXPECT_EQ(layout->blocksInBuffer(5 * 3 * page - l * page, 3 * page), 5)
        << l;
}

TEST(StreamTest, NamesRoundTrip) {
  for (Stream s : kAllStreams)
    EXPECT_EQ(parseStream(streamName(s)), s);
  EXPECT_FALSE(parseStream("q").has_value());
}

} // namespace
