//===- CachePlanTest.cpp - A model's cache plan against hand values -------===//

#include "inkling/Runtime/CachePlan.h"

#include "RealLayout.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

using namespace inkling;

namespace {

using Shape = std::vector<int64_t>;

/// The real layout (RealLayout.h): the page at N = 4 is 131072 bytes.
Layout inklingLayout(int64_t blockSize = 0) {
  return inkling::testing::realLayout(blockSize);
}

AttentionLayerSpec attention(int64_t blockSize, int64_t heads = 8,
                             bool throughStride = false) {
  AttentionLayerSpec spec;
  spec.blockSize = blockSize;
  spec.numKvHeads = heads;
  spec.headSize = 128;
  spec.dtypeBytes = 2;
  spec.readsThroughBlockStride = throughStride;
  return spec;
}

/// Two sconv layers and attention at block sizes 16 (page 65536) and 64
/// (page 262144, the largest): the sconv N scales 4 -> 8, attention 16 ->
/// 64; a block of the 4 layers is 4 * 262144 = 1 MiB.
CacheRegistry mixedModel() {
  CacheRegistry registry;
  EXPECT_TRUE(registry.addSconvLayer("layers.0.sconv", inklingLayout()));
  EXPECT_TRUE(registry.addAttentionLayer("layers.0.attn", attention(16)));
  EXPECT_TRUE(registry.addSconvLayer("layers.1.sconv", inklingLayout()));
  EXPECT_TRUE(registry.addAttentionLayer("layers.1.attn", attention(64)));
  return registry;
}

constexpr int64_t kMiB = 1 << 20;

TEST(CachePlanTest, MixedModelPerLayer) {
  CacheRegistry registry = mixedModel();
  // 64 MiB and a bit: 64 blocks, the remainder unused.
  StatusOr<CachePlan> plan =
      registry.plan(64 * kMiB + 1000, CacheLayoutKind::PerLayer);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->pageBytes, 262144);
  EXPECT_EQ(plan->bytesPerBlock, 4 * 262144);
  EXPECT_EQ(plan->numBlocks, 64);
  ASSERT_EQ(plan->tensors.size(), 4u);
  const char *names[] = {"layers.0.sconv", "layers.0.attn", "layers.1.sconv",
                         "layers.1.attn"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(plan->tensors[i].bytes, 64 * 262144);
    EXPECT_EQ(plan->tensors[i].sharedBy, std::vector<std::string>{names[i]});
    const LayerView &view = plan->layers[i];
    EXPECT_EQ(view.name, names[i]);
    EXPECT_EQ(view.tensor, i);
    EXPECT_EQ(view.byteOffset, 0);
    EXPECT_EQ(view.blockStrideBytes, 262144);
    EXPECT_EQ(view.elementBytes, 2);
    EXPECT_EQ(view.pageBytes, 262144);
  }
  EXPECT_EQ(plan->totalBytes(), 64 * kMiB);

  for (const char *name : {"layers.0.sconv", "layers.1.sconv"}) {
    const LayerView *s = plan->find(name);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->kind, CacheLayerKind::Sconv);
    EXPECT_EQ(s->adjustment, PageAdjustment::ScaledBlockSize);
    EXPECT_EQ(s->scale, 2);
    EXPECT_EQ(s->blockSize, 8);
    // [num_blocks, H, N, D], strides [stride, N*D, D, 1].
    EXPECT_EQ(s->shape, (Shape{64, 8, 8, 2048}));
    EXPECT_EQ(s->strides, (Shape{131072, 16384, 2048, 1}));
    ASSERT_TRUE(s->layout.has_value());
    EXPECT_EQ(s->layout->blockSize, 8);
    EXPECT_EQ(s->layout->slidingWindow, 4);
  }
  const LayerView *a16 = plan->find("layers.0.attn");
  EXPECT_EQ(a16->kind, CacheLayerKind::Attention);
  EXPECT_EQ(a16->adjustment, PageAdjustment::ScaledBlockSize);
  EXPECT_EQ(a16->scale, 4);
  EXPECT_EQ(a16->blockSize, 64);
  EXPECT_FALSE(a16->layout.has_value());
  // [num_blocks, K/V, block, heads, head], K then V inside a page.
  EXPECT_EQ(a16->shape, (Shape{64, 2, 64, 8, 128}));
  EXPECT_EQ(a16->strides, (Shape{131072, 65536, 1024, 128, 1}));
  const LayerView *a64 = plan->find("layers.1.attn");
  EXPECT_EQ(a64->adjustment, PageAdjustment::None);
  EXPECT_EQ(a64->blockSize, 64);
  EXPECT_EQ(a64->shape, (Shape{64, 2, 64, 8, 128}));
  EXPECT_EQ(a64->strides, (Shape{131072, 65536, 1024, 128, 1}));
  EXPECT_EQ(plan->find("layers.2.attn"), nullptr);
}

TEST(CachePlanTest, MixedModelCrossLayer) {
  CacheRegistry registry = mixedModel();
  StatusOr<CachePlan> plan =
      registry.plan(64 * kMiB + 1000, CacheLayoutKind::CrossLayer);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->numBlocks, 64);
  ASSERT_EQ(plan->tensors.size(), 1u);
  EXPECT_EQ(plan->tensors[0].bytes, 64 * kMiB);
  EXPECT_EQ(plan->tensors[0].sharedBy,
            (std::vector<std::string>{"layers.0.sconv", "layers.0.attn",
                                      "layers.1.sconv", "layers.1.attn"}));
  // One block = the 4 layers' pages: stride 1 MiB = 524288 elements,
  // layer i's page at byte i * 262144.
  for (int i = 0; i < 4; ++i) {
    const LayerView &view = plan->layers[i];
    EXPECT_EQ(view.tensor, 0);
    EXPECT_EQ(view.byteOffset, i * 262144);
    EXPECT_EQ(view.blockStrideBytes, kMiB);
    EXPECT_EQ(view.strides[0], 524288);
  }
  EXPECT_EQ(plan->layers[0].shape, (Shape{64, 8, 8, 2048}));
  EXPECT_EQ(plan->layers[0].strides, (Shape{524288, 16384, 2048, 1}));
  EXPECT_EQ(plan->layers[1].shape, (Shape{64, 2, 64, 8, 128}));
  EXPECT_EQ(plan->layers[1].strides, (Shape{524288, 65536, 1024, 128, 1}));
  // The last layer's last block ends inside the tensor.
  const LayerView &last = plan->layers[3];
  EXPECT_LE(last.byteOffset + (last.shape[0] - 1) * last.blockStrideBytes +
                last.pageBytes,
            plan->tensors[0].bytes);
}

TEST(CachePlanTest, PaddedPagesKeepTheirBlockSize) {
  // Attention at block 48 (page 196608) is the largest; the sconv page
  // 131072 does not divide it: padded, N stays 4, stride 196608 bytes.
  // Attention with 5 heads (page 40960, not a divisor) reads through the
  // block stride: padded as well.
  CacheRegistry registry;
  ASSERT_TRUE(registry.addSconvLayer("sconv", inklingLayout()));
  ASSERT_TRUE(registry.addAttentionLayer("big", attention(48)));
  ASSERT_TRUE(registry.addAttentionLayer("odd", attention(16, 5, true)));
  StatusOr<CachePlan> plan =
      registry.plan(3 * 196608 * 10 + 5, CacheLayoutKind::CrossLayer);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->pageBytes, 196608);
  EXPECT_EQ(plan->numBlocks, 10);
  const LayerView &s = plan->layers[0];
  EXPECT_EQ(s.adjustment, PageAdjustment::Padded);
  EXPECT_EQ(s.blockSize, 4);
  EXPECT_EQ(s.pageBytes, 131072);
  EXPECT_EQ(s.shape, (Shape{10, 8, 4, 2048}));
  EXPECT_EQ(s.strides, (Shape{3 * 98304, 8192, 2048, 1}));
  const LayerView &odd = plan->layers[2];
  EXPECT_EQ(odd.adjustment, PageAdjustment::Padded);
  EXPECT_EQ(odd.byteOffset, 2 * 196608);
  EXPECT_EQ(odd.pageBytes, 40960);
  EXPECT_EQ(odd.shape, (Shape{10, 2, 16, 5, 128}));
  EXPECT_EQ(odd.strides, (Shape{3 * 98304, 10240, 640, 128, 1}));
}

TEST(CachePlanTest, SconvPageFromTheBindIsPinned) {
  // An IR compiled for a padded page (the bind's page_bytes 196608): the
  // plan keeps it and never scales N.
  CacheRegistry registry;
  ASSERT_TRUE(registry.addSconvLayer("a", inklingLayout(), 196608));
  ASSERT_TRUE(registry.addSconvLayer("b", inklingLayout(), 196608));
  StatusOr<CachePlan> plan = registry.plan(8 * kMiB, CacheLayoutKind::PerLayer);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->pageBytes, 196608);
  EXPECT_EQ(plan->numBlocks, 8 * kMiB / (2 * 196608));
  EXPECT_EQ(plan->layers[1].adjustment, PageAdjustment::Padded);
  EXPECT_EQ(plan->layers[1].strides, (Shape{98304, 8192, 2048, 1}));
  // A bind page smaller than the layout's, or not whole elements: refused.
  EXPECT_FALSE(registry.addSconvLayer("c", inklingLayout(), 1000));
  CacheRegistry fresh;
  Status small = fresh.addSconvLayer("c", inklingLayout(), 1000);
  EXPECT_NE(small.message().find("'c'"), std::string::npos) << small.message();
  EXPECT_FALSE(fresh.addSconvLayer("c", inklingLayout(), 131073));
  EXPECT_EQ(fresh.numLayers(), 0);
}

/// kv_heads 1, head_dim 1, hidden 1, kernel 2: D = 4, a page of 8N bytes.
Layout tinyLayout(int64_t blockSize) {
  LayoutConfig config;
  config.kvHeads = 1;
  config.headDim = 1;
  config.hidden = 1;
  config.kernel = 2;
  config.blockSize = blockSize;
  return *Layout::derive(config);
}

TEST(CachePlanTest, CrossLayerPagesArePaddedToTheKernelsAlignment) {
  // N = 1 and 3: pages of 8 and 24 bytes. Side by side, layer 1 would start
  // at byte 8 or 24, not a 16-byte aligned base: the page pads to 16 / 32.
  for (auto [n, page, padded] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 8, 16},
        {3, 24, 32},
        {2, 16, 16}}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    CacheRegistry registry;
    for (const char *name :
         {"layers.0.sconv", "layers.1.sconv", "layers.2.sconv"})
      ASSERT_TRUE(registry.addSconvLayer(name, tinyLayout(n)));
    StatusOr<CachePlan> plan =
        registry.plan(3 * padded * 100, CacheLayoutKind::CrossLayer);
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    EXPECT_EQ(plan->pageBytes, padded);
    EXPECT_EQ(plan->bytesPerBlock, 3 * padded);
    EXPECT_EQ(plan->numBlocks, 100);
    for (int64_t l = 0; l < 3; ++l) {
      const LayerView &view = plan->layers[l];
      EXPECT_EQ(view.byteOffset, l * padded);
      EXPECT_EQ(view.byteOffset % kBufferAlignment, 0);
      EXPECT_EQ(view.pageBytes, page);
      EXPECT_EQ(view.adjustment,
                page == padded ? PageAdjustment::None : PageAdjustment::Padded);
      EXPECT_EQ(view.blockStrideBytes, 3 * padded);
      EXPECT_EQ(view.strides, (Shape{3 * padded / 2, 4 * n, 4, 1}));
      EXPECT_LE(view.byteOffset + 99 * view.blockStrideBytes + view.pageBytes,
                plan->tensors[0].bytes);
    }
    // Per layer, every view starts its own tensor: the page stays.
    CacheRegistry perLayer;
    ASSERT_TRUE(perLayer.addSconvLayer("a", tinyLayout(n)));
    StatusOr<CachePlan> own =
        perLayer.plan(page * 10, CacheLayoutKind::PerLayer);
    ASSERT_TRUE(own.isOk()) << own.status().toString();
    EXPECT_EQ(own->pageBytes, page);
  }
}

TEST(CachePlanTest, CrossLayerPagePinnedOffAlignmentIsRefusedAtPlanTime) {
  // An IR compiled for a 24-byte page (N = 3): padding would change its
  // block stride, so the plan refuses, naming the layer and the fix.
  CacheRegistry registry;
  ASSERT_TRUE(registry.addSconvLayer("a", tinyLayout(1), 24));
  ASSERT_TRUE(registry.addSconvLayer("b", tinyLayout(1), 24));
  StatusOr<CachePlan> plan =
      registry.plan(1 << 20, CacheLayoutKind::CrossLayer);
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().message(),
            "cross-layer pages: layer 'a' is compiled for a 24-byte page, so "
            "layer 1's page would start at byte 24, not a multiple of 16 (the "
            "kernels need every base 16-byte aligned): compile it for a page "
            "padded to a multiple of 16 bytes");
  EXPECT_FALSE(registry.planned());
  // Per layer it is fine; a pinned page of 32 bytes serves cross-layer.
  EXPECT_TRUE(registry.plan(1 << 20, CacheLayoutKind::PerLayer).isOk());
  CacheRegistry aligned;
  ASSERT_TRUE(aligned.addSconvLayer("a", tinyLayout(1), 32));
  ASSERT_TRUE(aligned.addSconvLayer("b", tinyLayout(1), 32));
  StatusOr<CachePlan> ok = aligned.plan(1 << 20, CacheLayoutKind::CrossLayer);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->layers[1].byteOffset, 32);
}

TEST(CachePlanTest, RefusesEmptyAndDuplicateNames) {
  CacheRegistry registry;
  ASSERT_TRUE(registry.addSconvLayer("layers.0.sconv", inklingLayout()));
  Status dup = registry.addSconvLayer("layers.0.sconv", inklingLayout());
  EXPECT_EQ(dup.code(), StatusCode::InvalidArgument);
  EXPECT_NE(dup.message().find("duplicate layer name 'layers.0.sconv'"),
            std::string::npos)
      << dup.message();
  Status dupAttention =
      registry.addAttentionLayer("layers.0.sconv", attention(16));
  EXPECT_NE(dupAttention.message().find("'layers.0.sconv'"), std::string::npos);
  Status empty = registry.addAttentionLayer("", attention(16));
  EXPECT_EQ(empty.code(), StatusCode::InvalidArgument);
  EXPECT_NE(empty.message().find("empty"), std::string::npos);
  Status badHeads = registry.addAttentionLayer("x", attention(16, 0));
  EXPECT_NE(badHeads.message().find("num_kv_heads (0)"), std::string::npos)
      << badHeads.message();
  EXPECT_EQ(registry.numLayers(), 1);
}

TEST(CachePlanTest, BudgetBelowTwoBlocksIsNamed) {
  CacheRegistry registry = mixedModel();
  // 2 blocks x 4 layers x 262144 = 2 MiB; one byte less is refused.
  StatusOr<CachePlan> plan =
      registry.plan(2 * kMiB - 1, CacheLayoutKind::PerLayer);
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(plan.status().message().find("2097151 bytes is below one block "
                                         "per layer plus the null block"),
            std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("= 2097152 bytes"), std::string::npos);
  EXPECT_FALSE(registry.planned());
  EXPECT_FALSE(registry.plan(0, CacheLayoutKind::CrossLayer).isOk());
  // State unchanged: still open for layers, and 2 MiB plans 2 blocks.
  EXPECT_TRUE(registry.addAttentionLayer("layers.2.attn", attention(64)));
  StatusOr<CachePlan> exact =
      registry.plan(5 * 262144 * 2, CacheLayoutKind::CrossLayer);
  ASSERT_TRUE(exact.isOk()) << exact.status().toString();
  EXPECT_EQ(exact->numBlocks, 2);
  CacheRegistry none;
  EXPECT_FALSE(none.plan(kMiB, CacheLayoutKind::PerLayer).isOk());
}

TEST(CachePlanTest, PagesThatNeitherScaleNorPadAreNamed) {
  CacheRegistry registry;
  ASSERT_TRUE(registry.addSconvLayer("sconv", inklingLayout()));
  // 3 heads: page 24576 does not divide 131072 and the backend does not
  // read through the block stride.
  ASSERT_TRUE(registry.addAttentionLayer("attn3", attention(16, 3)));
  StatusOr<CachePlan> plan =
      registry.plan(64 * kMiB, CacheLayoutKind::PerLayer);
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("'attn3'"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("cannot be padded"),
            std::string::npos);
  EXPECT_FALSE(registry.planned());
  EXPECT_EQ(registry.numLayers(), 2);
}

TEST(CachePlanTest, NoLayerAfterPlanning) {
  CacheRegistry registry = mixedModel();
  ASSERT_TRUE(registry.plan(64 * kMiB, CacheLayoutKind::PerLayer).isOk());
  EXPECT_TRUE(registry.planned());
  Status late = registry.addSconvLayer("layers.2.sconv", inklingLayout());
  EXPECT_EQ(late.code(), StatusCode::FailedPrecondition);
  EXPECT_NE(late.message().find("'layers.2.sconv'"), std::string::npos)
      << late.message();
  EXPECT_NE(late.message().find("already planned"), std::string::npos);
  EXPECT_EQ(registry.addAttentionLayer("layers.2.attn", attention(16)).code(),
            StatusCode::FailedPrecondition);
  EXPECT_EQ(registry.numLayers(), 4);
  // Planning again (another budget) still works.
  StatusOr<CachePlan> again =
      registry.plan(8 * kMiB, CacheLayoutKind::PerLayer);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->numBlocks, 8);
}

TEST(CachePlanTest, DescribeNamesEveryLayer) {
  CacheRegistry registry = mixedModel();
  StatusOr<CachePlan> plan =
      registry.plan(64 * kMiB, CacheLayoutKind::CrossLayer);
  ASSERT_TRUE(plan.isOk());
  std::string text = plan->describe();
  EXPECT_NE(text.find("cross-layer layout, budget 67108864 bytes"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("layers.0.attn (attention): tensor 0 at byte 262144, "
                      "shape [64, 2, 64, 8, 128], strides [524288, 65536, "
                      "1024, 128, 1] x 2 bytes; block size 64"),
            std::string::npos)
      << text;
}

} // namespace
